/* SPDX-License-Identifier: MIT */
/*
 * shim_res_pinned_budget.c - memory pinned beyond the GPU budget goes back once it is freed.
 *
 * Where evicted chunks are unmapped (ELIXIR_SIM_HOST_VMM=0), an operation the shim cannot see
 * into (here a graph launch) first maps every chunk back and pins it in GPU memory, which may
 * exceed the budget.  With a 4 MiB budget, four 2 MiB buffers are filled, a graph adds 0 to
 * one of them (all four chunks are then pinned in GPU memory: 8 MiB), and all four are
 * freed.  Four new buffers, filled by kernel, must then hold to the budget again: at most
 * two of their chunks in GPU memory (the freed chunks' memory must not stay as spares that
 * count as room), every buffer with its data.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define NBUF 4
#define BYTES (2 * SH_MIB)

static void scenario(void)
{
    CUdeviceptr buf[NBUF], bad;
    CUfunction fill, verify;

    sh_res_start(&fill, &verify, &bad);
    sh_alloc_filled(fill, buf, NBUF, BYTES, 40, NULL);
    CHECK_CU(cuCtxSynchronize());
    uint64_t words = BYTES / 4;
    uint32_t zero = 0;
    void *args[] = { &buf[1], &words, &zero };
    CUgraphExec g = st_kernel_graph(st_function(sh_res_ptx, "sh_add"), args);
    CHECK_CU(cuGraphLaunch(g, NULL));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuGraphExecDestroy(g));
    int pinned = sh_chunks_on_device(buf, NBUF, BYTES, BYTES);
    printf("after the graph: %d of %d chunks in GPU memory\n", pinned, NBUF);
    for (int i = 0; i < NBUF; i++)
        CHECK_CU(cuMemFree(buf[i]));
    sh_alloc_filled(fill, buf, NBUF, BYTES, 50, NULL);
    CHECK_CU(cuCtxSynchronize());
    int on = sh_chunks_on_device(buf, NBUF, BYTES, BYTES);
    EXPECT(on <= 2, "%d of the new buffers' chunks in GPU memory with a 4 MiB budget", on);
    printf("new buffers: %d of %d chunks in GPU memory\n", on, NBUF);
    sh_expect_filled_free(verify, buf, NBUF, BYTES, 50, bad);
    CHECK_CU(cuMemFree(bad));
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_SIM_HOST_VMM=0", "ELIXIR_GPU_MEMORY=4M",
                                       "ELIXIR_STATS=1", "ELIXIR_SIM_RACECHECK=fail", NULL };

    sh_scenario_child(argc, argv, scenario);
    sh_run_t r = sh_run_ok("scenario", env);
    EXPECT(strstr(r.out, "after the graph: 4 of 4"), "the graph launch did not pin every chunk "
           "(the scenario no longer tests what it should):\n%s", r.out);
    printf("%s", r.out);
    sh_run_free(&r);
    return 0;
}
