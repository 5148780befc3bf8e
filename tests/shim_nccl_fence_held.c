/* SPDX-License-Identifier: MIT */
/*
 * shim_nccl_fence_held.c - where evicted chunks are unmapped, an operation the shim cannot
 * see into pins every chunk in use for good (DESIGN.md invariant 2), those held by another
 * operation at that moment included.
 *
 * Two ranks (ncclCommInitAll, two simulated devices), an 8 MiB GPU budget each (four 2 MiB
 * chunks), evicted chunks unmapped (ELIXIR_SIM_HOST_VMM=0).  On each device X is filled.  A
 * group all-reduces X (the shim holds X until the group ends); inside the group, device 0
 * launches a graph (an operation the shim cannot see into: everything on device 0 is pinned,
 * X held meanwhile).  After the group, device 0 fills four more buffers, the whole budget: X,
 * the least recently used, must not be evicted (pinned), while device 1's X, which saw no
 * such operation, may be.  Every buffer's contents are checked; the race checker must find
 * nothing, and the transcript must be the one without the shim.
 */
#define SH_RES_KERNELS
#include "nccl_test.h"
#include "shim_test.h"

#define N 2
#define BUF (2 * SH_MIB)
#define WORDS (BUF / 4)
#define MORE 4

static nt_rank_t rk[N];

static void scenario(void)
{
    CUdeviceptr x[N], more[MORE], bad;
    CUfunction fill[N], verify;
    CUstream g;
    CUgraph graph;
    CUgraphExec exec;

    nt_ranks_all(rk, N, 4096);
    for (int r = 0; r < N; r++) {
        nt_use(&rk[r]);
        fill[r] = st_function(sh_res_ptx, "sh_fill");
        CHECK_CU(cuMemAlloc(&x[r], BUF));
        CHECK_CU(sh_fill_async(fill[r], x[r], WORDS, 1 + (uint32_t)r, rk[r].stream));
        CHECK_CU(cuStreamSynchronize(rk[r].stream));
    }
    nt_use(&rk[0]);
    CHECK_CU(cuMemAlloc(&bad, 4));
    CHECK_CU(cuStreamCreate(&g, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamBeginCapture(g, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_CU(sh_fill_async(fill[0], bad, 1, 9, g));
    CHECK_CU(cuStreamEndCapture(g, &graph));
    CHECK_CU(cuGraphInstantiate(&exec, graph, 0));

    CHECK_NCCL(ncclGroupStart());
    for (int r = 0; r < N; r++)
        CHECK_NCCL(ncclAllReduce((void *)x[r], (void *)x[r], 16, ncclInt32, ncclMax,
                                 rk[r].comm, rk[r].stream));
    CHECK_CU(cuGraphLaunch(exec, g));       /* device 0's context is current */
    CHECK_NCCL(ncclGroupEnd());
    for (int r = 0; r < N; r++) {
        nt_use(&rk[r]);
        CHECK_CU(cuCtxSynchronize());
    }
    printf("x all-reduced in a group while a graph ran on device 0\n");

    nt_use(&rk[0]);
    for (int i = 0; i < MORE; i++) {
        CHECK_CU(cuMemAlloc(&more[i], BUF));
        CHECK_CU(sh_fill_async(fill[0], more[i], WORDS, 10 + (uint32_t)i, rk[0].stream));
    }
    CHECK_CU(cuStreamSynchronize(rk[0].stream));
    sh_expect_where(x[0], 1, "device 0's x, held when the graph pinned everything");
    verify = st_function(sh_res_ptx, "sh_verify");
    for (int i = 0; i < MORE; i++)
        sh_expect_verified(verify, more[i], WORDS, 10 + (uint32_t)i, bad, "a later buffer");
    /* x: its first 16 words are the maximum over the ranks (rank 1's), the rest its own. */
    static uint32_t host[WORDS];
    for (int r = 0; r < N; r++) {
        nt_use(&rk[r]);
        CHECK_CU(cuMemcpyDtoH(host, x[r], BUF));
        for (uint64_t k = 0; k < WORDS; k++) {
            uint32_t own = sh_pattern(1 + (uint32_t)r, k), other = sh_pattern(2 - (uint32_t)r, k);
            uint32_t want = k < 16 ? ((int32_t)own > (int32_t)other ? own : other) : own;
            EXPECT(host[k] == want, "rank %d x word %llu: %u, want %u", r,
                   (unsigned long long)k, host[k], want);
        }
    }
    printf("every buffer holds what it should\n");
    nt_use(&rk[0]);
    CHECK_CU(cuGraphExecDestroy(exec));
    CHECK_CU(cuGraphDestroy(graph));
    CHECK_CU(cuStreamDestroy(g));
    for (int i = 0; i < MORE; i++)
        CHECK_CU(cuMemFree(more[i]));
    CHECK_CU(cuMemFree(bad));
    for (int r = 0; r < N; r++) {
        nt_use(&rk[r]);
        CHECK_CU(cuMemFree(x[r]));
    }
    nt_ranks_free(rk, N);
}

int main(int argc, char **argv)
{
    sh_run_t plain, shim;
    sh_scenario_child(argc, argv, scenario);
    sh_run_two_devices("ELIXIR_SIM_HOST_VMM=0", "ELIXIR_GPU_MEMORY=8M", &plain, &shim);
    sh_same_transcript("a graph while x was held", &plain, &shim);
    return 0;
}
