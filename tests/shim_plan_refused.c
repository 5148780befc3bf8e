/* SPDX-License-Identifier: MIT */
/*
 * shim_plan_refused.c - an operation refused (CUDA_ERROR_OUT_OF_MEMORY) in an iteration that
 * the plan profiles is not timed, and the program goes on.
 *
 * The simulated device has 6 MiB (three 2 MiB chunks), the GPU budget is 4 MiB and evicted
 * chunks are unmapped (ELIXIR_SIM_HOST_VMM=0), so a kernel that adds a 4 MiB buffer B into
 * another, A, reaches more than the device holds and is refused.  Each iteration begins with
 * that kernel, then refills B, then synchronises; with ELIXIR_POLICY=plan the shim finds the
 * iteration and profiles it with the refused launch as its first operation (the profile's
 * timing was asked for it and never began: ending it read past the profile's table).  Every
 * refused launch returns CUDA_ERROR_OUT_OF_MEMORY, the run exits 0, the statistics count
 * every refusal, and B holds its last pattern.  Once more with a memset refused first (a copy
 * reaching more than the device holds).
 */
#define SH_RES_KERNELS
#define ST_KERNEL_ADD_INTO
#include "shim_test.h"

#define BUF (4 * SH_MIB)
#define WORDS (BUF / 4)
#define ITERS 12

static const char into_ptx[] = ST_PTX_HEADER ST_PTX_ADD_INTO;

static void scenario(void)
{
    int copy = getenv("REFUSED_COPY") && atoi(getenv("REFUSED_COPY"));
    CUfunction fill, verify, into;
    CUdeviceptr buf[2], bad;
    CUstream s;
    uint64_t n = WORDS;

    sh_res_start(&fill, &verify, &bad);
    into = st_function(into_ptx, "add_into");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    sh_alloc_filled(fill, buf, 2, BUF, 1, s);
    CHECK_CU(cuStreamSynchronize(s));
    for (int it = 0; it < ITERS; it++) {
        void *args[] = { &buf[0], &buf[1], &n };
        CUresult r = copy ? cuMemcpyDtoDAsync(buf[0], buf[1], BUF, s) : sh_launch(into, s, args);
        EXPECT(r == CUDA_ERROR_OUT_OF_MEMORY, "iteration %d: the %s returned %d, expected "
               "CUDA_ERROR_OUT_OF_MEMORY", it, copy ? "copy" : "launch", (int)r);
        CHECK_CU(sh_fill_async(fill, buf[1], WORDS, 10 + (uint32_t)it, s));
        CHECK_CU(cuStreamSynchronize(s));
    }
    sh_expect_verified(verify, buf[1], WORDS, 10 + ITERS - 1, bad, "B");
    sh_expect_verified(verify, buf[0], WORDS, 1, bad, "A");
    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuMemFree(buf[0]));
    CHECK_CU(cuMemFree(buf[1]));
    CHECK_CU(cuMemFree(bad));
    printf("%d refused, the data intact\n", ITERS);
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    for (int copy = 0; copy < 2; copy++) {
        const char *env[] = { "ELIXIR_SIM_HOST_VMM=0", "ELIXIR_SIM_MEMORY=6M",
                              "ELIXIR_GPU_MEMORY=4M", "ELIXIR_POLICY=plan", "ELIXIR_STATS=1",
                              copy ? "REFUSED_COPY=1" : "REFUSED_COPY=0", NULL };
        sh_run_t r = sh_run_ok("scenario", env);
        printf("%s: %s", copy ? "copy" : "launch", r.out);
        EXPECT(sh_stat(r.err, "operations refused (no room) ") == ITERS,
               "expected %d refused operations counted:\n%s", ITERS, r.err);
        EXPECT(strstr(r.err, "plan: ") != NULL, "no plan statistics:\n%s", r.err);
        sh_run_free(&r);
    }
    return 0;
}
