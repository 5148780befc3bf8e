/* SPDX-License-Identifier: MIT */
/*
 * shim_res_ctx_destroy_alone.c - the arena's context is destroyed while no other context of
 * the device lives, and what it leaves in the arena is used from a context made afterwards.
 *
 * Destroying a context frees the memory allocated in it (shim_res_ctx_destroy_frees), but not
 * its cuMemAllocAsync memory, which "is not associated with any CUDA context" (cuda.h,
 * cuCtxDestroy), and the arena keeps up to four empty slab chunks in use for the next small
 * allocations (arena.h).  Where evicted chunks are unmapped, their contents live in pinned
 * host memory of the arena's context, which the driver frees with that context; with no
 * other context to copy them into at that moment, they were lost, and the next copy-in read
 * freed memory.
 *
 * Under a 4 MiB GPU budget (two chunks), in context a: a small buffer is filled (its slab
 * chunk, evicted by what follows, stays in use once the buffer is freed), then three 2 MiB
 * buffers from cuMemAllocAsync are filled on a stream of a's, so that chunks are evicted.  a
 * is destroyed.  In a new context b, each stream-ordered buffer must hold its pattern, and a
 * new small buffer (in the slab chunk a left) is filled and checked.  The transcripts must
 * match without and with the shim, with evicted chunks mapped and unmapped.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define MID (2 * SH_MIB)
#define N 3
#define SMALL 1000u

static void scenario(void)
{
    CUcontext a, b;
    CUstream s;
    CUdeviceptr small, async[N];

    CHECK_CU(cuInit(0));
    CHECK_CU(cuCtxCreate(&a, NULL, 0, 0));
    CUfunction fill = st_function(sh_res_ptx, "sh_fill");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&small, SMALL));
    CHECK_CU(sh_fill_async(fill, small, SMALL / 4, 1, s));
    for (int i = 0; i < N; i++) {
        CHECK_CU(cuMemAllocAsync(&async[i], MID, s));
        CHECK_CU(sh_fill_async(fill, async[i], MID / 4, 10 + (uint32_t)i, s));
    }
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuMemFree(small));
    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuCtxDestroy(a));
    printf("context a destroyed\n");

    CHECK_CU(cuCtxCreate(&b, NULL, 0, 0));
    for (int i = 0; i < N; i++) {
        char what[64];

        snprintf(what, sizeof(what), "stream-ordered buffer %d", i);
        sh_expect_pattern_at(what, async[i], MID, 10 + (uint32_t)i, 0);
    }
    fill = st_function(sh_res_ptx, "sh_fill");
    CHECK_CU(cuMemAlloc(&small, SMALL));
    CHECK_CU(sh_fill_async(fill, small, SMALL / 4, 2, NULL));
    sh_expect_pattern_at("a small buffer made in b", small, SMALL / 4 * 4, 2, 0);
    CHECK_CU(cuMemFree(small));
    for (int i = 0; i < N; i++)
        CHECK_CU(cuMemFree(async[i]));
    CHECK_CU(cuCtxDestroy(b));
}

static void run(const char *what, const char *host_vmm)
{
    const char *plain_env[] = { "ELIXIR_SIM_RACECHECK=fail", host_vmm, NULL };
    const char *env[] = { "ELIXIR_SIM_RACECHECK=fail", "ELIXIR_GPU_MEMORY=4M",
                          "ELIXIR_STATS=1", host_vmm, NULL };
    sh_run_t plain = sh_run_plain_ok(plain_env), shim = sh_run_ok("scenario", env);
    long long out = sh_stat(shim.err, "migrations to host ");

    EXPECT(out > 0, "%s: no chunk was evicted:\n%s", what, shim.err);
    sh_same_transcript(what, &plain, &shim);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
