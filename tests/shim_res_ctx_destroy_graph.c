/* SPDX-License-Identifier: MIT */
/*
 * shim_res_ctx_destroy_graph.c - a context is destroyed while a graph of its own runs on its
 * stream over a buffer allocated in it and a stream-ordered buffer, under eviction pressure.
 *
 * A graph launch is a fence for residency: every chunk waits for it before it moves or is
 * freed.  Context a (the arena's) is made first; context b makes a 4 MiB buffer and a
 * stream-ordered 2 MiB one, fills them, and launches on its stream a graph of two slow
 * kernels adding 1 to each.  b is destroyed from a at once: the driver waits for the graph,
 * b's buffer goes with b, and its memory must not be handed out or moved before the graph is
 * done.  In a, under a 4 MiB GPU budget, new buffers are filled (evicting the stream-ordered
 * one and taking the freed room), then the stream-ordered buffer must hold its fill + 1 and
 * each new buffer its fill.  The transcripts must match without and with the shim, evicted
 * chunks mapped and unmapped, and no race may be reported.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define MID (2 * SH_MIB)
#define NEW 3

/* A graph of two slow kernels on stream s of the current context, adding 1 to the n words at
 * p and the m words at q; launched, and its executable graph destroyed. */
static void graph_launch(CUdeviceptr p, uint64_t n, CUdeviceptr q, uint64_t m, CUstream s)
{
    CUfunction slow = st_function(sh_res_ptx, "sh_slow_add");
    CUgraphExec ge;
    CUgraph g;

    CHECK_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_CU(sh_slow_add_async(slow, p, n, 40, s));
    CHECK_CU(sh_slow_add_async(slow, q, m, 40, s));
    CHECK_CU(cuStreamEndCapture(s, &g));
    CHECK_CU(cuGraphInstantiate(&ge, g, 0));
    CHECK_CU(cuGraphDestroy(g));
    CHECK_CU(cuGraphLaunch(ge, s));
    CHECK_CU(cuGraphExecDestroy(ge));
}

static void scenario(void)
{
    CUcontext a, b;
    CUstream s;
    CUdeviceptr big, async, fresh[NEW];

    CHECK_CU(cuInit(0));
    CHECK_CU(cuCtxCreate(&a, NULL, 0, 0));
    CUfunction fill = st_function(sh_res_ptx, "sh_fill");
    CHECK_CU(cuMemAlloc(&fresh[0], 1000));             /* the arena set up in a */
    CHECK_CU(cuMemFree(fresh[0]));

    CHECK_CU(cuCtxCreate(&b, NULL, 0, 0));
    CUfunction bfill = st_function(sh_res_ptx, "sh_fill");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&big, 2 * MID));
    CHECK_CU(cuMemAllocAsync(&async, MID, s));
    CHECK_CU(sh_fill_async(bfill, big, 2 * MID / 4, 1, s));
    CHECK_CU(sh_fill_async(bfill, async, MID / 4, 2, s));
    graph_launch(big, 2 * MID / 4, async, MID / 4, s);
    CHECK_CU(cuCtxSetCurrent(a));
    CHECK_CU(cuCtxDestroy(b));
    printf("b destroyed with its graph in flight; its buffer known %d\n",
           st_pointer_known(big));

    for (uint32_t i = 0; i < NEW; i++) {
        CHECK_CU(cuMemAlloc(&fresh[i], MID));
        CHECK_CU(sh_fill_async(fill, fresh[i], MID / 4, 10 + i, NULL));
    }
    sh_expect_pattern_at("the stream-ordered buffer", async, MID, 2, 1);
    for (uint32_t i = 0; i < NEW; i++) {
        char what[64];

        snprintf(what, sizeof(what), "new buffer %u", i);
        sh_expect_pattern_at(what, fresh[i], MID, 10 + i, 0);
        CHECK_CU(cuMemFree(fresh[i]));
    }
    CHECK_CU(cuMemFree(async));
    CHECK_CU(cuCtxDestroy(a));
}

static void run(const char *what, const char *host_vmm)
{
    sh_paged_same(what, host_vmm, NULL, NULL);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
