/* SPDX-License-Identifier: MIT */
/*
 * graph_fork_join.c - cross-stream capture with events, the pattern of the CUDA runtime and
 * PyTorch: an event recorded in the capturing stream and waited on by a second stream forks
 * the capture into it; an event recorded there and waited on by the origin joins it back.
 * Checks the resulting diamond, the joined stream's capture status, that the graph computes
 * the right values, and the failures: a fork never joined (UNJOINED), ending the capture on
 * the joined stream (UNMATCHED), waiting on an event of another capture (MERGE) or on an
 * event recorded outside any capture (ISOLATION).  cuStreamUpdateCaptureDependencies resets
 * the origin's dependencies.
 */
#include "simtest.h"

#define N 512

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry fill(.param .u64 p, .param .u32 n, .param .f32 v)\n{\n ret;\n}\n"
    ".visible .entry scale(.param .u64 dst, .param .u64 src, .param .u32 n, .param .f32 k)\n"
    "{\n ret;\n}\n"
    ".visible .entry sum(.param .u64 dst, .param .u64 a, .param .u64 b, .param .u32 n)\n"
    "{\n ret;\n}\n";

SIM_KERNEL void fill(const sim_launch_t *l, void **params)
{
    float *p = *(float **)params[0];
    unsigned n = *(unsigned *)params[1];
    for (unsigned i = 0; i < n; i++)
        p[i] = *(float *)params[2] + (float)i;
    sim_kernel_access(p, n * sizeof(float), SIM_ACCESS_WRITE);
}

/* dst = k * src */
SIM_KERNEL void scale(const sim_launch_t *l, void **params)
{
    float *dst = *(float **)params[0];
    const float *src = *(const float **)params[1];
    unsigned n = *(unsigned *)params[2];
    for (unsigned i = 0; i < n; i++)
        dst[i] = *(float *)params[3] * src[i];
    sim_kernel_access(src, n * sizeof(float), SIM_ACCESS_READ);
    sim_kernel_access(dst, n * sizeof(float), SIM_ACCESS_WRITE);
}

/* dst = a + b */
SIM_KERNEL void sum(const sim_launch_t *l, void **params)
{
    float *dst = *(float **)params[0];
    const float *a = *(const float **)params[1], *b = *(const float **)params[2];
    unsigned n = *(unsigned *)params[3];
    for (unsigned i = 0; i < n; i++)
        dst[i] = a[i] + b[i];
    sim_kernel_access(a, n * sizeof(float), SIM_ACCESS_READ);
    sim_kernel_access(b, n * sizeof(float), SIM_ACCESS_READ);
    sim_kernel_access(dst, n * sizeof(float), SIM_ACCESS_WRITE);
}

static CUfunction f_fill, f_scale, f_sum;
static CUdeviceptr buf[4];      /* x, y = 2x, z = 3x, out = y + z */

static void launch_fill(CUstream s, float v)
{
    unsigned n = N;
    void *args[] = { &buf[0], &n, &v };
    CHECK_CU(cuLaunchKernel(f_fill, 1, 1, 1, 64, 1, 1, 0, s, args, NULL));
}

static void launch_scale(CUstream s, CUdeviceptr dst, float k)
{
    unsigned n = N;
    void *args[] = { &dst, &buf[0], &n, &k };
    CHECK_CU(cuLaunchKernel(f_scale, 1, 1, 1, 64, 1, 1, 0, s, args, NULL));
}

static void launch_sum(CUstream s)
{
    unsigned n = N;
    void *args[] = { &buf[3], &buf[1], &buf[2], &n };
    CHECK_CU(cuLaunchKernel(f_sum, 1, 1, 1, 64, 1, 1, 0, s, args, NULL));
}

static void expect_status(CUstream s, CUstreamCaptureStatus want)
{
    CUstreamCaptureStatus st;
    CHECK_CU(cuStreamIsCapturing(s, &st));
    EXPECT(st == want, "capture status %d, expected %d", (int)st, (int)want);
}

static CUgraph capture_diamond(CUstream s0, CUstream s1, CUevent fork, CUevent join)
{
    CUstreamCaptureStatus st;
    cuuint64_t id0, id1;
    CUgraph g;
    CHECK_CU(cuStreamBeginCapture(s0, CU_STREAM_CAPTURE_MODE_GLOBAL));
    launch_fill(s0, 1.0f);
    CHECK_CU(cuEventRecord(fork, s0));
    expect_status(s1, CU_STREAM_CAPTURE_STATUS_NONE);
    CHECK_CU(cuStreamWaitEvent(s1, fork, 0));
    expect_status(s1, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CHECK_CU(cuStreamGetCaptureInfo(s0, &st, &id0, NULL, NULL, NULL, NULL));
    CHECK_CU(cuStreamGetCaptureInfo(s1, &st, &id1, NULL, NULL, NULL, NULL));
    EXPECT(id0 == id1, "capture ids %llu and %llu", (unsigned long long)id0,
           (unsigned long long)id1);
    launch_scale(s1, buf[1], 2.0f);
    launch_scale(s0, buf[2], 3.0f);
    CHECK_CU(cuEventRecord(join, s1));
    CHECK_CU(cuStreamWaitEvent(s0, join, 0));
    launch_sum(s0);
    CHECK_CU(cuStreamEndCapture(s0, &g));
    expect_status(s0, CU_STREAM_CAPTURE_STATUS_NONE);
    expect_status(s1, CU_STREAM_CAPTURE_STATUS_NONE);
    return g;
}

static void check_diamond(CUgraph g)
{
    CUgraphNode nodes[4];
    size_t n = 4, nd;
    CHECK_CU(cuGraphGetNodes(g, nodes, &n));
    EXPECT(n == 4, "%zu nodes, expected 4", n);
    nd = 0;
    CHECK_CU(cuGraphNodeGetDependentNodes(nodes[0], NULL, NULL, &nd));
    EXPECT(nd == 2, "the fill has %zu dependents, expected 2", nd);
    nd = 0;
    CHECK_CU(cuGraphNodeGetDependencies(nodes[3], NULL, NULL, &nd));
    EXPECT(nd == 2, "the sum has %zu dependencies, expected 2", nd);
    nd = 0;
    CHECK_CU(cuGraphGetRootNodes(g, NULL, &nd));
    EXPECT(nd == 1, "%zu roots", nd);
}

static void run_diamond(CUgraph g, CUstream s)
{
    static float out[N];
    CUgraphExec exec;
    CHECK_CU(cuGraphInstantiate(&exec, g, 0));
    for (int iter = 0; iter < 2; iter++) {
        CHECK_CU(cuMemsetD32Async(buf[3], 0, N, s));
        CHECK_CU(cuGraphLaunch(exec, s));
        CHECK_CU(cuMemcpyDtoHAsync(out, buf[3], sizeof(out), s));
        CHECK_CU(cuStreamSynchronize(s));
        for (int i = 0; i < N; i++)
            EXPECT(out[i] == 5.0f * (1.0f + (float)i), "out[%d] = %f", i, out[i]);
    }
    CHECK_CU(cuGraphExecDestroy(exec));
}

/* Ending on the joined stream is refused, and invalidates the capture. */
static void unmatched(CUstream s0, CUstream s1, CUevent fork, CUevent join)
{
    CUgraph g;
    CHECK_CU(cuStreamBeginCapture(s0, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_CU(cuEventRecord(fork, s0));
    CHECK_CU(cuStreamWaitEvent(s1, fork, 0));
    launch_scale(s1, buf[1], 2.0f);
    CHECK_CU(cuEventRecord(join, s1));
    EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, cuStreamEndCapture(s1, &g));
    expect_status(s1, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamWaitEvent(s0, join, 0));
    EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s0, &g));
    expect_status(s1, CU_STREAM_CAPTURE_STATUS_NONE);
}

static void unjoined(CUstream s0, CUstream s1, CUevent fork)
{
    CUgraph g = (CUgraph)1;
    CHECK_CU(cuStreamBeginCapture(s0, CU_STREAM_CAPTURE_MODE_GLOBAL));
    launch_fill(s0, 0.0f);
    CHECK_CU(cuEventRecord(fork, s0));
    CHECK_CU(cuStreamWaitEvent(s1, fork, 0));
    launch_scale(s1, buf[1], 2.0f);
    EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_UNJOINED, cuStreamEndCapture(s0, &g));
    EXPECT(g == NULL, "graph %p after a failed capture", (void *)g);
    expect_status(s0, CU_STREAM_CAPTURE_STATUS_NONE);
    expect_status(s1, CU_STREAM_CAPTURE_STATUS_NONE);
}

static void merge_and_isolation(CUstream s0, CUstream s1, CUevent e)
{
    CUgraph g;
    CUevent outside;
    CHECK_CU(cuEventCreate(&outside, CU_EVENT_DISABLE_TIMING));
    CHECK_CU(cuStreamBeginCapture(s0, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_CU(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
    launch_fill(s0, 0.0f);
    CHECK_CU(cuEventRecord(e, s0));
    EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_MERGE, cuStreamWaitEvent(s1, e, 0));
    expect_status(s1, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    expect_status(s0, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s1, &g));
    CHECK_CU(cuStreamEndCapture(s0, &g));
    CHECK_CU(cuGraphDestroy(g));

    CHECK_CU(cuEventRecord(outside, s1));
    CHECK_CU(cuStreamBeginCapture(s0, CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_ISOLATION, cuStreamWaitEvent(s0, outside, 0));
    EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s0, &g));
    CHECK_CU(cuEventSynchronize(outside));
    CHECK_CU(cuEventDestroy(outside));
}

/* After a fork, the origin drops its dependencies: its next node is a root. */
static void update_dependencies(CUstream s0)
{
    CUgraph g;
    size_t n = 0;
    CHECK_CU(cuStreamBeginCapture(s0, CU_STREAM_CAPTURE_MODE_GLOBAL));
    launch_fill(s0, 0.0f);
    CHECK_CU(cuStreamUpdateCaptureDependencies(s0, NULL, NULL, 0,
                                               CU_STREAM_SET_CAPTURE_DEPENDENCIES));
    launch_scale(s0, buf[1], 2.0f);
    CHECK_CU(cuStreamEndCapture(s0, &g));
    CHECK_CU(cuGraphGetRootNodes(g, NULL, &n));
    EXPECT(n == 2, "%zu roots after resetting the dependencies, expected 2", n);
    CHECK_CU(cuGraphDestroy(g));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_STATE,
              cuStreamUpdateCaptureDependencies(s0, NULL, NULL, 0,
                                                CU_STREAM_ADD_CAPTURE_DEPENDENCIES));
}

int main(void)
{
    CUstream s0, s1, s2;
    CUevent fork, join;

    st_setup(0);
    f_fill = st_function(ptx, "fill");
    f_scale = st_function(ptx, "scale");
    f_sum = st_function(ptx, "sum");
    for (int i = 0; i < 4; i++)
        CHECK_CU(cuMemAlloc(&buf[i], N * sizeof(float)));
    CHECK_CU(cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
    CHECK_CU(cuEventCreate(&join, CU_EVENT_DISABLE_TIMING));

    CUgraph g = capture_diamond(s0, s1, fork, join);
    check_diamond(g);
    run_diamond(g, s2);
    CHECK_CU(cuGraphDestroy(g));

    unmatched(s0, s1, fork, join);
    unjoined(s0, s1, fork);
    merge_and_isolation(s0, s1, fork);
    update_dependencies(s0);
    CHECK_CU(cuEventDestroy(fork));
    CHECK_CU(cuEventDestroy(join));
    CHECK_CU(cuCtxSynchronize());
    return 0;
}
