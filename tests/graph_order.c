/* SPDX-License-Identifier: MIT */
/*
 * graph_order.c - a launched graph is ordered like any other work of its stream: after what
 * the stream ran before (including event waits) and before what it runs after; successive
 * launches of one executable graph are ordered even on different streams; a graph launched
 * on the legacy stream synchronises with blocking streams.  Run with the race checker in fail
 * mode, any unordered access of the graph's work is a failure.  A graph launched into a
 * capturing stream is captured with it.
 */
#include "simtest.h"

#define N 4096

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry scale_add(.param .u64 p, .param .u32 n, .param .f32 k, .param .f32 c)\n"
    "{\n ret;\n}\n";

/* p = k * p + c */
SIM_KERNEL void scale_add(const sim_launch_t *l, void **params)
{
    float *p = *(float **)params[0];
    unsigned n = *(unsigned *)params[1];
    float k = *(float *)params[2], c = *(float *)params[3];
    for (unsigned i = 0; i < n; i++)
        p[i] = k * p[i] + c;
    sim_kernel_access(p, n * sizeof(float), SIM_ACCESS_READWRITE);
    sim_kernel_cost(0, 1e6);    /* long enough that ordering matters in virtual time */
}

static CUfunction f;
static CUdeviceptr d;
static float *host;             /* pinned */

static void launch(CUstream s, float k, float c)
{
    unsigned n = N;
    void *args[] = { &d, &n, &k, &c };
    CHECK_CU(cuLaunchKernel(f, 16, 1, 1, 256, 1, 1, 0, s, args, NULL));
}

/* A graph doing p = 2p + 1, then p = p + 3. */
static CUgraphExec make_exec(CUstream s)
{
    CUgraph g;
    CUgraphExec exec;
    CHECK_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    launch(s, 2.0f, 1.0f);
    launch(s, 1.0f, 3.0f);
    CHECK_CU(cuStreamEndCapture(s, &g));
    CHECK_CU(cuGraphInstantiate(&exec, g, 0));
    CHECK_CU(cuGraphDestroy(g));    /* the executable graph does not need it */
    return exec;
}

static void expect_all(float want, const char *what)
{
    for (int i = 0; i < N; i++)
        EXPECT(host[i] == want, "%s: p[%d] = %f, expected %f", what, i, host[i], want);
}

int main(void)
{
    CUstream a, b, cap;
    CUevent ev;
    CUgraph g;

    st_setup(0);
    f = st_function(ptx, "scale_add");
    CHECK_CU(cuMemAlloc(&d, N * sizeof(float)));
    CHECK_CU(cuMemAllocHost((void **)&host, N * sizeof(float)));
    CHECK_CU(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&cap, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    CUgraphExec exec = make_exec(cap);

    /* Within a stream: memset, graph, copy back. */
    CHECK_CU(cuMemsetD32Async(d, 0, N, a));
    CHECK_CU(cuGraphLaunch(exec, a));
    CHECK_CU(cuMemcpyDtoHAsync(host, d, N * sizeof(float), a));
    CHECK_CU(cuStreamSynchronize(a));
    expect_all(4.0f, "memset then graph");          /* 2*0+1+3 */

    /* The same executable graph on two streams without any user synchronisation. */
    CHECK_CU(cuGraphLaunch(exec, a));
    CHECK_CU(cuGraphLaunch(exec, b));
    CHECK_CU(cuMemcpyDtoHAsync(host, d, N * sizeof(float), b));
    CHECK_CU(cuStreamSynchronize(b));
    expect_all(28.0f, "two launches on two streams");  /* 4 -> 12 -> 28 */

    /* Across streams through an event: kernel on a, graph on b after it. */
    launch(a, 0.0f, 1.0f);
    CHECK_CU(cuEventRecord(ev, a));
    CHECK_CU(cuStreamWaitEvent(b, ev, 0));
    CHECK_CU(cuGraphLaunch(exec, b));
    CHECK_CU(cuMemcpyDtoHAsync(host, d, N * sizeof(float), b));
    CHECK_CU(cuStreamSynchronize(b));
    expect_all(6.0f, "event then graph");           /* 1 -> 6 */

    /* On the legacy stream, after work of a blocking stream (the per-thread one). */
    launch(CU_STREAM_PER_THREAD, 0.0f, 2.0f);
    CHECK_CU(cuGraphLaunch(exec, NULL));
    CHECK_CU(cuMemcpyDtoH(host, d, N * sizeof(float)));
    expect_all(8.0f, "legacy stream");              /* 2 -> 8 */

    /* A graph launched into a capture becomes part of the captured graph. */
    size_t n = 0;
    CHECK_CU(cuStreamBeginCapture(cap, CU_STREAM_CAPTURE_MODE_GLOBAL));
    launch(cap, 0.0f, 0.0f);
    CHECK_CU(cuGraphLaunch(exec, cap));
    CHECK_CU(cuStreamEndCapture(cap, &g));
    CHECK_CU(cuGraphGetNodes(g, NULL, &n));
    EXPECT(n == 3, "outer graph has %zu nodes, expected 3", n);
    CUgraphExec outer;
    CHECK_CU(cuGraphInstantiate(&outer, g, 0));
    CHECK_CU(cuGraphLaunch(outer, a));
    CHECK_CU(cuMemcpyDtoHAsync(host, d, N * sizeof(float), a));
    CHECK_CU(cuStreamSynchronize(a));
    expect_all(4.0f, "nested launch");              /* 0 -> 4 */

    CHECK_CU(cuGraphExecDestroy(outer));
    CHECK_CU(cuGraphDestroy(g));
    CHECK_CU(cuGraphExecDestroy(exec));
    CHECK_CU(cuEventDestroy(ev));
    CHECK_CU(cuMemFreeHost(host));
    return 0;
}
