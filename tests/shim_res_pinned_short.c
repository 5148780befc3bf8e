/* SPDX-License-Identifier: MIT */
/*
 * shim_res_pinned_short.c - when the system pins less host memory than the host budget
 * allows, the budget comes down instead of work failing or the GPU budget giving way.
 *
 * Under libelixir.so with an 8 MiB GPU budget and a 64 MiB host budget on a machine that pins
 * 16 MiB at most (ELIXIR_SIM_HOST_MEMORY), the scenario allocates 2 MiB buffers, each filled
 * by a kernel, until an allocation fails.  It must fail with CUDA_ERROR_OUT_OF_MEMORY once the
 * pinned memory is used up (not before six buffers are in), with the log saying once that
 * the driver has no page-locked memory left within the host budget, and cuMemGetInfo's
 * capacity (the budgets together) must come down from 72 MiB to what can be had (24 MiB at
 * most).  Every
 * buffer keeps its data (checked by kernels, which bring evicted ones back), a freed buffer's
 * room serves the next allocation, and the GPU budget holds throughout: where evicted chunks
 * are unmapped, a chunk that must come back trades places with one in GPU memory through the
 * swap piece, which must exist before the system runs out.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define MAXBUF 32
#define BYTES (2 * SH_MIB)

static void scenario(void)
{
    CUdeviceptr buf[MAXBUF], bad;
    CUfunction fill, verify;
    CUresult r = CUDA_SUCCESS;
    int n = 0;

    sh_res_start(&fill, &verify, &bad);
    size_t before = sh_capacity();
    EXPECT(before == 72 * SH_MIB, "capacity at the start: %zu bytes, expected 72 MiB", before);
    for (; n < MAXBUF && (r = cuMemAlloc(&buf[n], BYTES)) == CUDA_SUCCESS; n++)
        CHECK_CU(sh_fill_async(fill, buf[n], BYTES / 4, 100 + (uint32_t)n, NULL));
    EXPECT(r == CUDA_ERROR_OUT_OF_MEMORY && n >= 6,
           "allocation %d returned %d; expected CUDA_ERROR_OUT_OF_MEMORY after at least 6", n,
           (int)r);
    size_t after = sh_capacity();
    EXPECT(after <= 24 * SH_MIB, "capacity once the system pins no more: %zu bytes (8 MiB of "
           "GPU budget and 16 MiB that can be pinned)", after);
    for (int i = 0; i < n; i++)
        sh_expect_verified(verify, buf[i], BYTES / 4, 100 + (uint32_t)i, bad, "buffer");
    printf("the allocation after the pinned memory ran out failed with "
           "CUDA_ERROR_OUT_OF_MEMORY; the buffers before it hold their patterns\n");
    CHECK_CU(cuMemFree(buf[0]));
    CHECK_CU(cuMemAlloc(&buf[0], BYTES));
    CHECK_CU(sh_fill_async(fill, buf[0], BYTES / 4, 200, NULL));
    sh_expect_verified(verify, buf[0], BYTES / 4, 200, bad, "the new buffer");
    for (int i = 1; i < n; i++)
        sh_expect_verified(verify, buf[i], BYTES / 4, 100 + (uint32_t)i, bad, "buffer");
    printf("a freed buffer's room served the next allocation; all hold their patterns\n");
    for (int i = 0; i < n; i++)
        CHECK_CU(cuMemFree(buf[i]));
    CHECK_CU(cuMemFree(bad));
}

static void run(const char *what, const char *host_vmm)
{
    const char *const env[] = { "ELIXIR_SIM_MEMORY=64M", "ELIXIR_GPU_MEMORY=8M",
                                "ELIXIR_HOST_MEMORY=64M", "ELIXIR_SIM_HOST_MEMORY=16M",
                                "ELIXIR_STATS=1", "ELIXIR_SIM_RACECHECK=fail", host_vmm, NULL };
    sh_run_t shim = sh_run_ok("scenario", env);

    printf("%s:\n%s", what, shim.out);
    EXPECT(sh_count(shim.err, "no page-locked host memory left within the 64 MiB host "
                              "budget") == 1,
           "%s: the host budget's coming down was not reported once:\n%s", what, shim.err);
    long long gpu = sh_stat(shim.err, "GPU peak "), host = sh_stat(shim.err, "host peak ");
    EXPECT(gpu > 0 && gpu <= 8 && host > 0 && host <= 16,
           "%s: GPU peak %lld MiB (budget 8), host peak %lld MiB (16 can be pinned):\n%s", what,
           gpu, host, shim.err);
    sh_run_free(&shim);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
