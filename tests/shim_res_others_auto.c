/* SPDX-License-Identifier: MIT */
/*
 * shim_res_others_auto.c - the automatic GPU budget comes down when another process takes the
 * device, and back up when it lets go, leaving the reserve as the default did.
 *
 * Under libelixir.so with the default GPU budget on a 32 MiB device (less free than the
 * reserve, so the budget is half the free memory: 16 MiB) and a 64 MiB host budget, another
 * process takes all but 8 MiB of what is still free right after the shim set up
 * (sim_other_process_memory; where evicted chunks are unmapped, each launch's chunks must fit
 * in GPU memory).  Four 4 MiB buffers are then filled by kernels: the driver refuses chunks
 * the budget allows, the budget comes down (reported once) and the buffers page within it.
 * Then the other process lets go of part, leaving 16 MiB free: after a pause (the shim looks
 * at most every 100 ms) and two rounds of checking the buffers (which pages them), the budget
 * is partly back up, to half of what the shim holds and the free memory together, as the
 * default was set: not all of it, and not creeping further with each look.  When the other process
 * lets go of the rest, the budget is back up to 16 MiB, not to the whole free device:
 * cuMemGetInfo's total is the 80 MiB it started with, the log said each step, and every
 * buffer holds its data.  With host memory mapped and without.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define NBUF 4
#define BYTES (4 * SH_MIB)
#define ROUNDS 2
#define CAPACITY (80 * SH_MIB)  /* half of the 32 MiB device, and the 64 MiB host budget */
#define LEFT (8 * SH_MIB)       /* what the other process leaves: a launch's chunks must fit */
#define FREED (16 * SH_MIB)     /* free again after it lets go of part */
#define PART (12 * SH_MIB)      /* the budget then: half of the 10 MiB held and FREED, in chunks */

/* Other processes take all of the device's free memory but `left`; returns what they hold. */
static uint64_t take_all_but(uint64_t left)
{
    uint64_t taken = 32 * SH_MIB;
    while (taken && sim_other_process_memory(0, taken) != 0)
        taken -= SH_MIB;
    EXPECT(taken > left && sim_other_process_memory(0, taken - left) == 0,
           "another process could take only %llu MiB", (unsigned long long)(taken >> 20));
    return taken - left;
}

/* Two rounds of checking every buffer (which pages them), after the shim's next look. */
static void page_all(CUfunction verify, const CUdeviceptr *buf, CUdeviceptr bad)
{
    usleep(150 * 1000);
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < NBUF; i++)
            sh_expect_verified(verify, buf[i], BYTES / 4, 10 + (uint32_t)i, bad, "buffer");
}

static void scenario(void)
{
    CUdeviceptr buf[NBUF], bad;
    CUfunction fill, verify;
    size_t total, low, part;

    sh_res_start(&fill, &verify, &bad);
    EXPECT((total = sh_capacity()) == CAPACITY, "cuMemGetInfo's total %zu MiB, want %llu",
           total >> 20, CAPACITY >> 20);
    uint64_t held = take_all_but(LEFT);
    sh_alloc_filled(fill, buf, NBUF, BYTES, 10, NULL);
    page_all(verify, buf, bad);
    EXPECT((low = sh_capacity()) < CAPACITY, "cuMemGetInfo's total stayed %zu MiB", low >> 20);
    printf("another process took %llu MiB: the budget came down, the buffers hold their "
           "patterns\n", (unsigned long long)(held >> 20));
    take_all_but(FREED);
    page_all(verify, buf, bad);
    page_all(verify, buf, bad);         /* a second look finds the same */
    EXPECT((part = sh_capacity()) == CAPACITY - 16 * SH_MIB + PART, "with %llu MiB free again, "
           "cuMemGetInfo's total is %zu MiB: want %llu (a budget of half of what the shim "
           "could hold, as the default was set; the lowest was %zu)", FREED >> 20, part >> 20,
           (CAPACITY - 16 * SH_MIB + PART) >> 20, low >> 20);
    printf("with %llu MiB free again, the budget went part of the way back up\n", FREED >> 20);
    EXPECT(sim_other_process_memory(0, 0) == 0, "the other process letting go");
    page_all(verify, buf, bad);
    EXPECT((total = sh_capacity()) == CAPACITY, "after the other process left, cuMemGetInfo's "
           "total is %zu MiB, want %llu", total >> 20, CAPACITY >> 20);
    printf("the budget came back up to where it started\n");
    sh_expect_filled_free(verify, buf, NBUF, BYTES, 10, bad);
    CHECK_CU(cuMemFree(bad));
}

static void run(const char *what, const char *host_vmm)
{
    const char *const env[] = { "ELIXIR_SIM_MEMORY=32M", "ELIXIR_HOST_MEMORY=64M",
                                "ELIXIR_STATS=1", "ELIXIR_SIM_RACECHECK=fail", "ELIXIR_LOG=info",
                                host_vmm, NULL };
    sh_run_t shim = sh_run_ok("scenario", env);

    printf("%s:\n%s", what, shim.out);
    EXPECT(sh_count(shim.err, "no GPU memory left within the 16 MiB budget") == 1,
           "%s: the budget's coming down was not reported once:\n%s", what, shim.err);
    EXPECT(sh_count(shim.err, "GPU memory is free again; the budget is back up to ") == 2 &&
               sh_count(shim.err, "back up to 16 MiB") == 1,
           "%s: the budget's going back up, part of the way and then all of it, was not "
           "reported:\n%s", what, shim.err);
    sh_run_free(&shim);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
