/* SPDX-License-Identifier: MIT */
/*
 * shim_res_others_take.c - another process takes the rest of the device while the job runs.
 *
 * Under libelixir.so with all of a 32 MiB device as the GPU budget, four 4 MiB buffers are
 * filled by kernels; then another process takes every byte of the device still free
 * (sim_other_process_memory).  Four more buffers are allocated and filled, and the first four
 * checked by kernel, which brings them back: the driver refuses chunks the budget still
 * allows, and the shim must bring its budget down to what it holds (saying so once) and page
 * within it, with every buffer keeping its data and no call failing.  Freeing buffers and
 * allocating again works within the smaller budget.  When the other process gives its memory
 * back, the budget goes back up once memory is short again (the shim looks at most every
 * 100 ms): after a pause and rounds of checking every buffer (which page them),
 * cuMemGetInfo's total is the whole device plus the host budget again, the log said so, and
 * every buffer still holds its data.  With host memory mapped and without.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define NBUF 4
#define BYTES (4 * SH_MIB)
#define ROUNDS 2            /* of checking every buffer, after the memory came back */
#define CAPACITY (96 * SH_MIB)  /* the 32 MiB device and the 64 MiB host budget */

static void scenario(void)
{
    CUdeviceptr first[NBUF], second[NBUF], bad;
    CUfunction fill, verify;
    uint64_t taken = 32 * SH_MIB;
    size_t total;

    sh_res_start(&fill, &verify, &bad);
    EXPECT((total = sh_capacity()) == CAPACITY, "cuMemGetInfo's total %zu MiB, want %llu",
           total >> 20, CAPACITY >> 20);
    sh_alloc_filled(fill, first, NBUF, BYTES, 10, NULL);
    CHECK_CU(cuCtxSynchronize());
    while (taken && sim_other_process_memory(0, taken) != 0)
        taken -= SH_MIB;
    EXPECT(taken > 0, "another process could take nothing: the shim holds the whole device");
    printf("another process took what was free\n");
    sh_alloc_filled(fill, second, NBUF, BYTES, 20, NULL);
    sh_expect_filled_free(verify, first, NBUF, BYTES, 10, bad);
    sh_alloc_filled(fill, first, NBUF, BYTES, 30, NULL);
    for (int i = 0; i < NBUF; i++)
        sh_expect_verified(verify, second[i], BYTES / 4, 20 + (uint32_t)i, bad, "second");
    printf("the second buffers hold their patterns\n");
    EXPECT((total = sh_capacity()) < CAPACITY, "cuMemGetInfo's total stayed %zu MiB",
           total >> 20);
    EXPECT(sim_other_process_memory(0, 0) == 0, "the other process giving its memory back");
    usleep(150 * 1000);   /* past the shim's next look (REGROW_MS) */
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < NBUF; i++) {
            sh_expect_verified(verify, first[i], BYTES / 4, 30 + (uint32_t)i, bad, "first");
            sh_expect_verified(verify, second[i], BYTES / 4, 20 + (uint32_t)i, bad, "second");
        }
    EXPECT((total = sh_capacity()) == CAPACITY, "after the other process left, cuMemGetInfo's "
           "total is %zu MiB, want %llu", total >> 20, CAPACITY >> 20);
    printf("the budget came back up\n");
    sh_expect_filled_free(verify, first, NBUF, BYTES, 30, bad);
    sh_expect_filled_free(verify, second, NBUF, BYTES, 20, bad);
    CHECK_CU(cuMemFree(bad));
}

static void run(const char *what, const char *host_vmm)
{
    const char *const env[] = { "ELIXIR_SIM_MEMORY=32M", "ELIXIR_GPU_MEMORY=100%",
                                "ELIXIR_HOST_MEMORY=64M", "ELIXIR_STATS=1",
                                "ELIXIR_SIM_RACECHECK=fail", "ELIXIR_LOG=info", host_vmm, NULL };
    sh_run_t shim = sh_run_ok("scenario", env);

    printf("%s:\n%s", what, shim.out);
    EXPECT(sh_count(shim.err, "no GPU memory left within the 32 MiB budget") == 1 &&
               strstr(shim.err, "the budget is now "),
           "%s: the budget's coming down was not reported once:\n%s", what, shim.err);
    EXPECT(sh_count(shim.err, "GPU memory is free again; the budget is back up to 32 MiB") == 1,
           "%s: the budget's going back up was not reported once:\n%s", what, shim.err);
    EXPECT(sh_stat(shim.err, "migrations to host ") > 0 && sh_stat(shim.err, "to GPU ") > 0,
           "%s: nothing was paged out and back:\n%s", what, shim.err);
    sh_run_free(&shim);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
