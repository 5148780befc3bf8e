/* SPDX-License-Identifier: MIT */
/*
 * shim_res_pinned_back.c - the host budget comes down when other processes pin the machine's
 * memory, and back up when they let it go.
 *
 * Under libelixir.so with an 8 MiB GPU budget and a 32 MiB host budget, on a machine that pins
 * 64 MiB at most (ELIXIR_SIM_HOST_MEMORY), other processes pin all but 8 MiB of it
 * (sim_other_process_pinned).  The scenario allocates 2 MiB buffers, each filled by a
 * kernel, until one fails with CUDA_ERROR_OUT_OF_MEMORY; cuMemGetInfo's capacity (the budgets
 * together) is then below its 40 MiB.  The other processes let their memory go, and after a
 * pause (the shim looks at most every 100 ms) twelve more buffers fit (24 MiB: more than the
 * smaller budget leaves), capacity is 40 MiB again, the log said once that the host budget is
 * back up, and every buffer holds its data.  With host memory mapped and without.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define MAXBUF 32
#define MORE 12
#define BYTES (2 * SH_MIB)
#define CAPACITY (40 * SH_MIB)

static void scenario(void)
{
    CUdeviceptr buf[MAXBUF + MORE], bad;
    CUfunction fill, verify;
    CUresult r = CUDA_SUCCESS;
    uint64_t taken = 56 * SH_MIB;
    int n = 0;

    sh_res_start(&fill, &verify, &bad);
    EXPECT(sh_capacity() == CAPACITY, "capacity at the start: %zu MiB, want 40",
           sh_capacity() >> 20);
    while (taken && sim_other_process_pinned(taken) != 0)
        taken -= BYTES;
    EXPECT(taken >= 48 * SH_MIB, "other processes could pin only %llu MiB",
           (unsigned long long)(taken >> 20));
    for (; n < MAXBUF && (r = cuMemAlloc(&buf[n], BYTES)) == CUDA_SUCCESS; n++)
        CHECK_CU(sh_fill_async(fill, buf[n], BYTES / 4, 100 + (uint32_t)n, NULL));
    EXPECT(r == CUDA_ERROR_OUT_OF_MEMORY && n >= 4,
           "allocation %d returned %d; expected CUDA_ERROR_OUT_OF_MEMORY after at least 4", n,
           (int)r);
    EXPECT(sh_capacity() < CAPACITY, "capacity stayed %zu MiB", sh_capacity() >> 20);
    printf("with the machine's memory pinned by others, allocation %d failed with "
           "CUDA_ERROR_OUT_OF_MEMORY\n", n);
    EXPECT(sim_other_process_pinned(0) == 0, "the other processes letting their memory go");
    usleep(150 * 1000);                 /* past the shim's next look */
    sh_alloc_filled(fill, buf + n, MORE, BYTES, 100 + (uint32_t)n, NULL);
    n += MORE;
    EXPECT(sh_capacity() == CAPACITY, "capacity once the memory came back: %zu MiB, want 40",
           sh_capacity() >> 20);
    printf("once the others let go, %d more buffers fit\n", MORE);
    sh_expect_filled_free(verify, buf, n, BYTES, 100, bad);
    CHECK_CU(cuMemFree(bad));
}

static void run(const char *what, const char *host_vmm)
{
    const char *const env[] = { "ELIXIR_SIM_MEMORY=64M", "ELIXIR_GPU_MEMORY=8M",
                                "ELIXIR_HOST_MEMORY=32M", "ELIXIR_SIM_HOST_MEMORY=64M",
                                "ELIXIR_STATS=1", "ELIXIR_LOG=info",
                                "ELIXIR_SIM_RACECHECK=fail", host_vmm, NULL };
    sh_run_t shim = sh_run_ok("scenario", env);

    printf("%s:\n%s", what, shim.out);
    EXPECT(sh_count(shim.err, "no page-locked host memory left within the 32 MiB host "
                              "budget") == 1,
           "%s: the host budget's coming down was not reported once:\n%s", what, shim.err);
    EXPECT(sh_count(shim.err, "the host budget is back up to 32 MiB") == 1,
           "%s: the host budget's going back up was not reported once:\n%s", what, shim.err);
    long long gpu = sh_stat(shim.err, "GPU peak "), host = sh_stat(shim.err, "host peak ");
    EXPECT(gpu > 0 && gpu <= 8 && host > 8 && host <= 32,
           "%s: GPU peak %lld MiB (budget 8), host peak %lld MiB (budget 32):\n%s", what, gpu,
           host, shim.err);
    sh_run_free(&shim);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
