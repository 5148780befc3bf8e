/* SPDX-License-Identifier: MIT */
/*
 * shim_res_graph_lost_home.c - a graph launch is a fence on a device whose arena lost its
 * context: where evicted chunks are unmapped, the device's chunks still come back for it.
 *
 * Two simulated devices, a 4 MiB GPU budget each (two 2 MiB chunks).  Device 1's arena is set
 * up in context `home` (cuCtxCreate), which later goes; buffer a1 is allocated in a second
 * context c1 of device 1, and a0 on device 0.  A graph captured on device 0's stream forks to
 * a stream of c1 (a0 += 1 on device 0, a1 += 5 on device 1).  It is launched once; device 1
 * then pages a1 out.  `home` is destroyed, and the graph is launched again from device 0, no
 * operation of device 1 coming in between: its node on device 1 reaches a1, which the launch
 * must bring back (where evicted chunks are unmapped: ELIXIR_SIM_HOST_VMM=0) although the
 * arena has no context of its own at that moment.  The transcript must be the one without the
 * shim, with evicted chunks mapped and unmapped.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define BYTES (2 * SH_MIB)
#define WORDS (BYTES / 4)

static void scenario(void)
{
    CUcontext home, c1;
    CUdeviceptr a0, a1, h, more[2];
    CUstream s0, s1;

    CHECK_CU(cuInit(0));
    CHECK_CU(cuCtxCreate(&home, NULL, 0, 1));
    CHECK_CU(cuMemAlloc(&h, 4096));             /* device 1's arena is set up in `home` */
    CHECK_CU(cuMemFree(h));
    CHECK_CU(cuCtxCreate(&c1, NULL, 0, 1));
    CUfunction fill1 = st_function(sh_res_ptx, "sh_fill");
    CUfunction add1 = st_function(sh_res_ptx, "sh_add");
    CHECK_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&a1, BYTES));
    CHECK_CU(sh_fill_async(fill1, a1, WORDS, 1, s1));
    CHECK_CU(cuStreamSynchronize(s1));

    CUcontext c0 = st_setup(0);
    CUfunction fill0 = st_function(sh_res_ptx, "sh_fill");
    CUfunction add0 = st_function(sh_res_ptx, "sh_add");
    CHECK_CU(cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&a0, BYTES));
    CHECK_CU(sh_fill_async(fill0, a0, WORDS, 2, s0));
    CHECK_CU(cuStreamSynchronize(s0));
    CUgraphExec ge = sh_capture_fork((sh_fork_side_t){ c0, s0, add0, a0, 1 },
                                     (sh_fork_side_t){ c1, s1, add1, a1, 5 }, WORDS);

    CHECK_CU(cuCtxSetCurrent(c1));
    sh_alloc_filled(fill1, more, 2, BYTES, 3, s1);  /* a1 paged out */
    CHECK_CU(cuStreamSynchronize(s1));
    CHECK_CU(cuCtxSetCurrent(c0));
    CHECK_CU(cuCtxDestroy(home));
    printf("device 1 paged; the arena's context is destroyed\n");

    CHECK_CU(cuGraphLaunch(ge, s0));
    CHECK_CU(cuStreamSynchronize(s0));
    printf("the graph ran\n");

    sh_expect_pattern_at("a0", a0, BYTES, 2, 1);
    CHECK_CU(cuGraphExecDestroy(ge));
    CHECK_CU(cuCtxSetCurrent(c1));
    sh_expect_pattern_at("a1", a1, BYTES, 1, 5);
    for (int i = 0; i < 2; i++)
        sh_expect_pattern_at("a buffer filled on device 1", more[i], BYTES, 3 + (uint32_t)i, 0);
}

static void run(const char *what, const char *host_vmm)
{
    sh_run_t plain, shim;

    sh_run_two_devices(host_vmm, "ELIXIR_GPU_MEMORY=4M", &plain, &shim);
    sh_same_transcript(what, &plain, &shim);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
