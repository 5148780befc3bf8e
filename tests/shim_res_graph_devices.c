/* SPDX-License-Identifier: MIT */
/*
 * shim_res_graph_devices.c - a graph whose nodes run on two devices is a fence on both: while
 * it may run, nothing it may touch on either device moves.
 *
 * Two simulated devices, a 4 MiB GPU budget each (two 2 MiB chunks).  On device 1 buffer a1,
 * on device 0 buffer a0, each filled by kernel.  A graph is captured on device 0's stream s0:
 * a0 += 1 there, then s0 forks to device 1's stream s1 through an event (cuEventRecord on s0,
 * cuStreamWaitEvent on s1), a1 += 5 on s1, and s1 joins back into s0 through an event of
 * device 1.  The shim sees none of the graph's nodes when it is launched (on s0).
 * Round 1: the graph is launched while a1 is in device 1's GPU memory; then device 1 fills b1
 * and c1 on a stream of its own that the program does not order after the graph, so the
 * budget pages the least recently used chunk, a1, out: that migration must wait for the graph.
 * Round 2: the graph is launched again, now that a1 is paged out (unmapped where evicted chunks
 * are: ELIXIR_SIM_HOST_VMM=0), then device 1 fills d1, paging out again.  Where evicted chunks
 * are unmapped, each launch must map device 1's chunks back and pin them, as it does device
 * 0's (a1 at the first, what device 1 paged out since at the second).  At the end a0 holds
 * its pattern + 2, a1 its pattern + 10, b1, c1 and d1 their patterns; the transcript must be
 * the one without the shim, with evicted chunks mapped and unmapped, and the race checker
 * fails the run on any race (a migration copy or unmap beside the graph's kernel on device 1).
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define BYTES (2 * SH_MIB)
#define WORDS (BYTES / 4)

static void scenario(void)
{
    CUdeviceptr a0, a1, more[3];
    CUstream s0, s1, t1;

    CUcontext c1 = st_setup(1);
    CUfunction fill1 = st_function(sh_res_ptx, "sh_fill");
    CUfunction add1 = st_function(sh_res_ptx, "sh_add");
    CHECK_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&t1, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&a1, BYTES));
    CHECK_CU(sh_fill_async(fill1, a1, WORDS, 1, t1));
    CHECK_CU(cuStreamSynchronize(t1));

    CUcontext c0 = st_setup(0);
    CUfunction fill0 = st_function(sh_res_ptx, "sh_fill");
    CUfunction add0 = st_function(sh_res_ptx, "sh_add");
    CHECK_CU(cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&a0, BYTES));
    CHECK_CU(sh_fill_async(fill0, a0, WORDS, 2, s0));
    CHECK_CU(cuStreamSynchronize(s0));
    CUgraphExec ge = sh_capture_fork((sh_fork_side_t){ c0, s0, add0, a0, 1 },
                                     (sh_fork_side_t){ c1, s1, add1, a1, 5 }, WORDS);

    /* Round 1: a1 in GPU memory when the graph is launched; device 1 then pages it out. */
    CHECK_CU(cuGraphLaunch(ge, s0));
    CHECK_CU(cuCtxSetCurrent(c1));
    sh_alloc_filled(fill1, more, 2, BYTES, 3, t1);
    CHECK_CU(cuStreamSynchronize(t1));
    CHECK_CU(cuCtxSetCurrent(c0));
    CHECK_CU(cuStreamSynchronize(s0));
    printf("round 1: the graph ran while device 1 paged\n");

    /* Round 2: a1 paged out when the graph is launched; device 1 pages again. */
    CHECK_CU(cuGraphLaunch(ge, s0));
    CHECK_CU(cuCtxSetCurrent(c1));
    sh_alloc_filled(fill1, &more[2], 1, BYTES, 5, t1);
    CHECK_CU(cuStreamSynchronize(t1));
    CHECK_CU(cuCtxSetCurrent(c0));
    CHECK_CU(cuStreamSynchronize(s0));
    printf("round 2: the graph ran again\n");

    sh_expect_pattern_at("a0, added to by the graph's node on device 0", a0, BYTES, 2, 2);
    CHECK_CU(cuGraphExecDestroy(ge));
    CHECK_CU(cuStreamDestroy(s0));
    CHECK_CU(cuMemFree(a0));
    CHECK_CU(cuCtxSetCurrent(c1));
    sh_expect_pattern_at("a1, added to by the graph's node on device 1", a1, BYTES, 1, 10);
    for (int i = 0; i < 3; i++)
        sh_expect_pattern_at("a buffer filled on device 1", more[i], BYTES, 3 + (uint32_t)i, 0);
    for (int i = 0; i < 3; i++)
        CHECK_CU(cuMemFree(more[i]));
    CHECK_CU(cuMemFree(a1));
    CHECK_CU(cuStreamDestroy(s1));
    CHECK_CU(cuStreamDestroy(t1));
}

static void run(const char *what, const char *host_vmm)
{
    sh_run_t plain, shim;

    sh_run_two_devices(host_vmm, "ELIXIR_GPU_MEMORY=4M", &plain, &shim);
    int pins, fences, unmapped = strcmp(host_vmm, "ELIXIR_SIM_HOST_VMM=0") == 0;
    sh_pins(shim.err, 1, &pins, &fences);
    EXPECT(sh_migrations_out(shim.err, 1) >= (unmapped ? 1 : 2),
           "%s: device 1 did not page out:\n%s", what, shim.err);
    EXPECT(unmapped ? fences == 2 : pins == 0, "%s: %d chunks pinned on device 1 (fences %d), "
           "expected %s:\n%s", what, pins, fences,
           unmapped ? "by both graph launches" : "none", shim.err);
    sh_same_transcript(what, &plain, &shim);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
