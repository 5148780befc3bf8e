/* SPDX-License-Identifier: MIT */
/*
 * shim_res_budget_device.c - a GPU budget larger than what the device has free.
 *
 * The simulated device has 64 MiB.  A size beyond what it has free (1 GiB, 96 MiB; 48 MiB
 * once another process took 32 MiB) stops the program at its first allocation, naming the
 * option, the size and what is free.  A share of the device (100%) is held to what it has
 * free: with another process holding 32 MiB before the first allocation, the budget is the
 * 32 MiB left, and a job of 160 MiB (five 32 MiB buffers, filled and later checked by
 * kernels) runs by paging to host memory: every buffer keeps its data, the GPU peak stays
 * within those 32 MiB, and chunks were migrated both ways.  Without the hold the budget
 * allows chunks the device cannot back.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define MIB SH_MIB
#define NBUF 5
#define BUF_BYTES (32 * MIB)
#define TAKEN (32 * MIB)    /* by another process before the first allocation (TAKE=1) */

static void scenario(void)
{
    CUdeviceptr buf[NBUF], bad;
    CUfunction fill, verify;

    if (getenv("TAKE")) {
        st_setup(0);
        EXPECT(sim_other_process_memory(0, TAKEN) == 0, "sim_other_process_memory");
    }
    sh_res_start(&fill, &verify, &bad);
    sh_alloc_filled(fill, buf, NBUF, BUF_BYTES, 10, NULL);
    sh_expect_filled_free(verify, buf, NBUF, BUF_BYTES, 10, bad);
    CHECK_CU(cuMemFree(bad));
    printf("%d buffers of %llu MiB kept their data on a 64 MiB device\n", NBUF,
           (unsigned long long)(BUF_BYTES / MIB));
}

/* ELIXIR_GPU_MEMORY=value (another process holding TAKEN first where take): refused with
 * exit status 1, one report naming value, its size and the free memory (free, and as the
 * largest size accepted, most). */
static void refused(const char *value, const char *size, const char *free_b, const char *most,
                    int take)
{
    char var[64], want[256];
    snprintf(var, sizeof(var), "ELIXIR_GPU_MEMORY=%s", value);
    const char *env[] = { "ELIXIR_SIM_MEMORY=64M", var, "ELIXIR_HOST_MEMORY=512M",
                          take ? "TAKE=1" : NULL, NULL };
    sh_run_t r = sh_run("scenario", 1, env);

    snprintf(want, sizeof(want), "elixir: error: ELIXIR_GPU_MEMORY=\"%s\" asks device 0 for "
             "%s, more than the %s it has free: expected auto, a size of at most %s,", value,
             size, free_b, most);
    EXPECT(r.status == 1 && !strstr(r.out, "buffers"), "%s: exit %d (expected 1), output %s",
           var, r.status, r.out);
    EXPECT(sh_count(r.err, want) == 1 && strstr(r.err, "the program stops (exit status 1)"),
           "%s: expected one report \"%s...\":\n%s", var, want, r.err);
    printf("%s%s: the program stops\n", var, take ? " with 32 MiB taken" : "");
    sh_run_free(&r);
}

/* ELIXIR_GPU_MEMORY=100% with another process holding TAKEN: the budget is what is free. */
static void share_held(void)
{
    const char *env[] = { "ELIXIR_SIM_MEMORY=64M", "ELIXIR_GPU_MEMORY=100%",
                          "ELIXIR_HOST_MEMORY=512M", "ELIXIR_STATS=1", "TAKE=1", NULL };
    sh_run_t r = sh_run_ok("scenario", env);

    printf("ELIXIR_GPU_MEMORY=100%% with 32 MiB taken: %s", r.out);
    long long peak = sh_stat(r.err, "GPU peak "), budget = sh_stat(r.err, " MiB of ");
    EXPECT(peak > 0 && peak <= 32 && budget == 32,
           "GPU peak %lld MiB of a %lld MiB budget (expected 32) with 32 MiB of 64 free:\n%s",
           peak, budget, r.err);
    EXPECT(sh_stat(r.err, "migrations to host ") > 0 && sh_stat(r.err, "to GPU ") > 0,
           "no chunk was paged out and back:\n%s", r.err);
    sh_run_free(&r);
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    refused("1G", "1.0 GiB (1073741824 bytes)", "64.0 MiB (67108864 bytes)", "64M", 0);
    refused("96M", "96.0 MiB (100663296 bytes)", "64.0 MiB (67108864 bytes)", "64M", 0);
    refused("48M", "48.0 MiB (50331648 bytes)", "32.0 MiB (33554432 bytes)", "32M", 1);
    share_held();
    return 0;
}
