/* SPDX-License-Identifier: MIT */
/*
 * graph_devices.c - a graph whose nodes belong to two devices runs each node in its own
 * context, wherever the graph is launched: cuda.h gives a kernel node "the context for the
 * kernel task to run in" and a memset or memcpy node the "context on which to run the node",
 * and a node captured from a stream belongs to that stream's context.
 *
 * On a two-device machine (ELIXIR_SIM_DEVICES=2; the test re-executes itself), with no peer
 * access enabled either way, so that a node run by the wrong device faults: p0 on device 0,
 * p1 (two halves) on device 1.  A graph captured on device 0's stream s0 fills p0 there, forks
 * to device 1's stream s1 through an event, sets p1's first half with a memset and fills its
 * second half with a kernel of device 1 on s1, and joins back through an event of device 1.
 * An explicit graph, built while device 0's context is current, holds a memset node with
 * device 1's context on p1's first half, then a kernel node (a CUkernel with device 1's
 * context in CUDA_KERNEL_NODE_PARAMS.ctx) filling its second half, then a memcpy node of
 * device 1's context copying the first half into p0.  Both graphs are launched on s0 with
 * device 0's context current, the explicit one then again on s1 at once: a launch is ordered
 * after the graph's previous launch even on a stream of another context, so the race checker
 * (ELIXIR_SIM_RACECHECK=fail, from the runner) finds the two launches' writes ordered.  Each
 * node finds its memory, and the words land where they should.
 */
#include "memtest.h"
#include "simchild.h"

#define WORDS 1024
#define HALF (WORDS * 4)

static CUlibrary lib;               /* the explicit graph's kernel */

/* The graph captured on s0 (context c0), forking to s1 (context c1). */
static CUgraphExec captured(CUcontext c0, CUcontext c1, CUstream s0, CUstream s1, CUdeviceptr p0,
                            CUdeviceptr p1)
{
    CUevent fork, join;
    CUgraph g;
    CUgraphExec ge;

    CHECK_CU(cuCtxSetCurrent(c1));
    CHECK_CU(cuEventCreate(&join, CU_EVENT_DISABLE_TIMING));
    CUfunction fill1 = mt_function("mt_fill");
    CHECK_CU(cuCtxSetCurrent(c0));
    CHECK_CU(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
    CHECK_CU(cuStreamBeginCapture(s0, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_CU(mt_fill_async(p0, WORDS, 0x10, s0));
    CHECK_CU(cuEventRecord(fork, s0));
    CHECK_CU(cuStreamWaitEvent(s1, fork, 0));
    CHECK_CU(cuMemsetD32Async(p1, 0x20, WORDS, s1));
    CUdeviceptr second = p1 + HALF;
    uint64_t words = WORDS;
    uint32_t v = 0x21;
    void *args[] = { &second, &words, &v };
    CHECK_CU(cuLaunchKernel(fill1, 1, 1, 1, 1, 1, 1, 0, s1, args, NULL));
    CHECK_CU(cuCtxSetCurrent(c1));
    CHECK_CU(cuEventRecord(join, s1));
    CHECK_CU(cuCtxSetCurrent(c0));
    CHECK_CU(cuStreamWaitEvent(s0, join, 0));
    CHECK_CU(cuStreamEndCapture(s0, &g));
    CHECK_CU(cuGraphInstantiate(&ge, g, 0));
    CHECK_CU(cuGraphDestroy(g));
    CHECK_CU(cuEventDestroy(fork));
    CHECK_CU(cuCtxSetCurrent(c1));
    CHECK_CU(cuEventDestroy(join));
    CHECK_CU(cuCtxSetCurrent(c0));
    return ge;
}

/* The explicit graph, built with c0 current: its nodes name c1. */
static CUgraphExec explicit_graph(CUcontext c1, CUdeviceptr p0, CUdeviceptr p1)
{
    static CUdeviceptr second;
    static uint64_t words = WORDS;
    static uint32_t v = 0x31;
    static void *args[] = { &second, &words, &v };
    CUkernel fill;
    CUgraph g;
    CUgraphNode set, k, copy;
    CUgraphExec ge;

    second = p1 + HALF;
    CHECK_CU(cuLibraryLoadData(&lib, mt_ptx, NULL, NULL, 0, NULL, NULL, 0));
    CHECK_CU(cuLibraryGetKernel(&fill, lib, "mt_fill"));
    CHECK_CU(cuGraphCreate(&g, 0));
    CUDA_MEMSET_NODE_PARAMS ms = { p1, 0, 0x30, 4, WORDS, 1 };
    CHECK_CU(cuGraphAddMemsetNode(&set, g, NULL, 0, &ms, c1));
    CUDA_KERNEL_NODE_PARAMS kp = { .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 1,
                                   .blockDimY = 1, .blockDimZ = 1, .kernelParams = args,
                                   .kern = fill, .ctx = c1 };
    CHECK_CU(cuGraphAddKernelNode(&k, g, &set, 1, &kp));
    CUDA_MEMCPY3D cp = { .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = p1,
                         .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = p0,
                         .WidthInBytes = HALF, .Height = 1, .Depth = 1 };
    CHECK_CU(cuGraphAddMemcpyNode(&copy, g, &k, 1, &cp, c1));
    CHECK_CU(cuGraphInstantiate(&ge, g, 0));
    CHECK_CU(cuGraphDestroy(g));
    return ge;
}

static void two_devices(void *unused)
{
    CUcontext c0 = st_setup(0), c1;
    CUdeviceptr p0, p1;
    CUstream s0, s1;

    (void)unused;
    CHECK_CU(cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&p0, HALF));
    CHECK_CU(cuDevicePrimaryCtxRetain(&c1, 1));
    CHECK_CU(cuCtxSetCurrent(c1));
    CHECK_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&p1, 2 * HALF));
    CHECK_CU(cuCtxSetCurrent(c0));

    CUgraphExec ge = captured(c0, c1, s0, s1, p0, p1);
    CHECK_CU(cuGraphLaunch(ge, s0));
    CHECK_CU(cuStreamSynchronize(s0));
    mt_expect_words(p0, WORDS, 0x10);
    mt_expect_words(p1, WORDS, 0x20);
    mt_expect_words(p1 + HALF, WORDS, 0x21);
    CHECK_CU(cuGraphExecDestroy(ge));

    ge = explicit_graph(c1, p0, p1);
    CHECK_CU(cuGraphLaunch(ge, s0));
    CHECK_CU(cuGraphLaunch(ge, s1));    /* after the first, wherever that ran */
    CHECK_CU(cuStreamSynchronize(s1));
    mt_expect_words(p0, WORDS, 0x30);
    mt_expect_words(p1 + HALF, WORDS, 0x31);
    CHECK_CU(cuGraphExecDestroy(ge));
    CHECK_CU(cuLibraryUnload(lib));

    CHECK_CU(cuCtxSetCurrent(c1));                      /* device 1 is well */
    CHECK_CU(cuCtxSynchronize());
    mt_expect_words(p1, WORDS, 0x30);
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_SIM_DEVICES=2", NULL };
    static const char *const none[] = { NULL };
    st_child_t c;

    (void)argc;
    st_reexec(argv, env);
    st_run_child(two_devices, NULL, NULL, &c);
    st_child_expect(&c, 0, none);
    st_child_free(&c);
    printf("graphs with nodes of two devices: each node ran in its own context\n");
    return 0;
}
