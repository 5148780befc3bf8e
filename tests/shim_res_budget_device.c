/* SPDX-License-Identifier: MIT */
/*
 * shim_res_budget_device.c - a GPU budget larger than the device pages instead of failing.
 *
 * The simulated device has 64 MiB; ELIXIR_GPU_MEMORY asks for 1 GiB (and a second run for
 * 96 MiB).  The shim must say so once, naming the option, and fall back to its default budget
 * (the device's free memory less a reserve), so that a job of 160 MiB (five 32 MiB buffers,
 * filled and later checked by kernels) runs by paging to host memory: every buffer keeps its
 * data, the GPU peak stays within the device, and chunks were migrated both ways.  Without
 * the fallback the budget allows chunks the device cannot back, and an allocation fails with
 * CUDA_ERROR_OUT_OF_MEMORY once the device is full.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define MIB SH_MIB
#define NBUF 5
#define BUF_BYTES (32 * MIB)

static void scenario(void)
{
    CUdeviceptr buf[NBUF], bad;
    CUfunction fill, verify;

    sh_res_start(&fill, &verify, &bad);
    sh_alloc_filled(fill, buf, NBUF, BUF_BYTES, 10, NULL);
    sh_expect_filled_free(verify, buf, NBUF, BUF_BYTES, 10, bad);
    CHECK_CU(cuMemFree(bad));
    printf("%d buffers of %llu MiB kept their data on a 64 MiB device\n", NBUF,
           (unsigned long long)(BUF_BYTES / MIB));
}

static void run(const char *gpu_memory)
{
    const char *env[] = { "ELIXIR_SIM_MEMORY=64M", gpu_memory, "ELIXIR_HOST_MEMORY=512M",
                          "ELIXIR_STATS=1", NULL };
    sh_run_t r = sh_run_ok("scenario", env);

    printf("%s: %s", gpu_memory, r.out);
    EXPECT(sh_count(r.err, "ELIXIR_GPU_MEMORY asks for") == 1,
           "%s: expected one report of the budget beyond the device:\n%s", gpu_memory, r.err);
    long long peak = sh_stat(r.err, "GPU peak "), budget = sh_stat(r.err, " MiB of ");
    EXPECT(peak > 0 && peak <= 64 && budget > 0 && budget <= 64,
           "%s: GPU peak %lld MiB of a %lld MiB budget on a 64 MiB device:\n%s", gpu_memory,
           peak, budget, r.err);
    EXPECT(sh_stat(r.err, "migrations to host ") > 0 && sh_stat(r.err, "to GPU ") > 0,
           "%s: no chunk was paged out and back:\n%s", gpu_memory, r.err);
    sh_run_free(&r);
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    run("ELIXIR_GPU_MEMORY=1G");
    run("ELIXIR_GPU_MEMORY=96M");
    return 0;
}
