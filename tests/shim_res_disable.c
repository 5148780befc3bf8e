/* SPDX-License-Identifier: MIT */
/*
 * shim_res_disable.c - with ELIXIR_DISABLE=1 allocations come from the driver: no arena, no
 * budget, the device's own memory information.
 *
 * The scenario prints cuMemGetInfo, allocates 8 MiB and 4 KiB, prints cuMemGetInfo again and,
 * for both allocations, what the driver says about the memory behind them (whether it is
 * legacy-IPC capable, the mapping's base and size, the range cuMemGetAddressRange gives), then
 * asks for more than the device holds.  The test runs it without the shim and with the shim
 * preloaded but disabled (with a 4 MiB GPU budget and statistics asked for, which must be
 * ignored): the transcripts must be the same - device figures, cuMemAlloc memory of its own
 * size rather than 2 MiB chunks of a reserved arena, CUDA_ERROR_OUT_OF_MEMORY beyond the
 * device - and the disabled shim must report no arena.  A third run with the shim enabled
 * must differ, which shows the scenario tells arena memory from the driver's.
 */
#include "shim_test.h"
#include "simtest.h"

#define MIB (1ull << 20)

static void describe(const char *what, CUdeviceptr p)
{
    int ipc = -1;
    unsigned long long map_base = 0;
    size_t map_size = 0, size = 0;
    CUdeviceptr base = 0;

    CHECK_CU(cuPointerGetAttribute(&ipc, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, p));
    CHECK_CU(cuPointerGetAttribute(&map_base, CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, p));
    CHECK_CU(cuPointerGetAttribute(&map_size, CU_POINTER_ATTRIBUTE_MAPPING_SIZE, p));
    CHECK_CU(cuMemGetAddressRange(&base, &size, p));
    printf("%s: legacy IPC %d, mapping +%lld size %zu, range +%lld size %zu\n", what, ipc,
           (long long)(map_base - p), map_size, (long long)(base - p), size);
}

static void scenario(void)
{
    CUdeviceptr a, b, huge;
    size_t free_b, total;

    st_setup(0);
    CHECK_CU(cuMemGetInfo(&free_b, &total));
    printf("memory info: free %zu, total %zu\n", free_b, total);
    CHECK_CU(cuMemAlloc(&a, 8 * MIB));
    CHECK_CU(cuMemAlloc(&b, 4096));
    CHECK_CU(cuMemGetInfo(&free_b, &total));
    printf("memory info: free %zu, total %zu\n", free_b, total);
    describe("8 MiB", a);
    describe("4 KiB", b);
    CUresult r = cuMemAlloc(&huge, total + MIB);
    printf("total + 1 MiB: %s\n", st_err(r));
    if (r == CUDA_SUCCESS)
        CHECK_CU(cuMemFree(huge));
    CHECK_CU(cuMemFree(b));
    CHECK_CU(cuMemFree(a));
}

int main(int argc, char **argv)
{
    static const char *const off[] = { "ELIXIR_DISABLE=1", "ELIXIR_GPU_MEMORY=4M",
                                       "ELIXIR_STATS=1", NULL };
    static const char *const on[] = { "ELIXIR_GPU_MEMORY=4M", "ELIXIR_HOST_MEMORY=64M",
                                      "ELIXIR_STATS=1", NULL };
    sh_run_t plain, disabled, enabled;

    sh_scenario_child(argc, argv, scenario);
    plain = sh_run("scenario", 0, NULL);
    EXPECT(plain.status == 0, "the scenario without the shim exited %d:\n%s", plain.status,
           plain.err);
    disabled = sh_run_ok("scenario", off);
    enabled = sh_run_ok("scenario", on);
    EXPECT(strcmp(plain.out, disabled.out) == 0, "transcripts differ:\nwithout the shim:\n%s\n"
           "with ELIXIR_DISABLE=1:\n%s", plain.out, disabled.out);
    EXPECT(strstr(plain.out, "4 KiB: legacy IPC 1, mapping +0 size 4096") &&
               strstr(plain.out, "total + 1 MiB: CUDA_ERROR_OUT_OF_MEMORY"),
           "unexpected driver answers:\n%s", plain.out);
    EXPECT(!strstr(disabled.err, "device 0:"), "the disabled shim set up an arena:\n%s",
           disabled.err);
    EXPECT(strcmp(plain.out, enabled.out) != 0 && strstr(enabled.err, "device 0:"),
           "the enabled shim answered as the driver:\n%s\n%s", enabled.out, enabled.err);
    printf("%s", disabled.out);
    sh_run_free(&plain);
    sh_run_free(&disabled);
    sh_run_free(&enabled);
    return 0;
}
