/* SPDX-License-Identifier: MIT */
/*
 * shim_res_ipc.c - cuIpcGetMemHandle on arena memory: the allocation is pinned resident, the
 * driver's answer for virtual-memory-managed memory is passed on, and one warning names
 * ELIXIR_DISABLE.
 *
 * First, without the shim, what the simulator does, held to the driver's documentation:
 * legacy IPC exports the base of a cuMemAlloc allocation (CU_POINTER_ATTRIBUTE_
 * IS_LEGACY_CUDA_IPC_CAPABLE is 1 there); a pointer inside it, stream-ordered memory and VMM
 * mappings are CUDA_ERROR_INVALID_VALUE (the attribute is 0 for them).
 *
 * Then under libelixir.so with an 8 MiB GPU budget (four 2 MiB chunks), with host memory
 * mapped and without (ELIXIR_SIM_HOST_VMM=0): four 4 MiB buffers A-D are filled, which
 * evicts A.  cuIpcGetMemHandle(A) returns CUDA_ERROR_INVALID_VALUE, as the driver does for
 * VMM memory, twice; the pointer attribute reads 0; A is back in device memory; and while two
 * more buffers are filled and every buffer is checked by kernels, A is never evicted again
 * (each of its chunks is looked up after every step).  A's data is right, the log holds one
 * warning naming ELIXIR_DISABLE, and the statistics count A's two chunks pinned.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define BUFS 6
#define BUF (4 * SH_MIB)
#define WORDS (BUF / 4)

static CUfunction fill, verify;

static int legacy_ipc_capable(CUdeviceptr p)
{
    int v = -1;
    CHECK_CU(cuPointerGetAttribute(&v, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, p));
    return v;
}

static void expect_resident(CUdeviceptr a, const char *when)
{
    EXPECT(sh_where(a) == 'G' && sh_where(a + BUF - 4) == 'G', "%s: the exported buffer lives in "
           "'%c%c'", when, sh_where(a), sh_where(a + BUF - 4));
}

static void scenario(void)
{
    CUdeviceptr buf[BUFS], bad;
    CUipcMemHandle ipc;
    uint32_t wrong[BUFS];

    st_setup(0);
    fill = st_function(sh_res_ptx, "sh_fill");
    verify = st_function(sh_res_ptx, "sh_verify");
    sh_alloc_filled(fill, buf, 4, BUF, 0, NULL);
    EXPECT(sh_where(buf[0]) != 'G', "A was not evicted by the later buffers");
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuIpcGetMemHandle(&ipc, buf[0]));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuIpcGetMemHandle(&ipc, buf[0]));
    EXPECT(legacy_ipc_capable(buf[0]) == 0, "arena memory reads as legacy-IPC capable");
    expect_resident(buf[0], "after cuIpcGetMemHandle");
    for (uint32_t i = 4; i < BUFS; i++) {
        sh_alloc_filled(fill, &buf[i], 1, BUF, i, NULL);
        expect_resident(buf[0], "after filling another buffer");
    }
    CHECK_CU(cuMemAlloc(&bad, sizeof(wrong)));
    for (uint32_t i = BUFS; i-- > 0;) {
        CHECK_CU(sh_verify_async(verify, buf[i], WORDS, i, bad + 4 * i, NULL));
        expect_resident(buf[0], "after checking a buffer");
    }
    CHECK_CU(cuMemcpyDtoH(wrong, bad, sizeof(wrong)));
    for (int i = 0; i < BUFS; i++)
        EXPECT(wrong[i] == 0, "buffer %d: %u words wrong", i, wrong[i]);
    for (int i = 0; i < BUFS; i++)
        CHECK_CU(cuMemFree(buf[i]));
    CHECK_CU(cuMemFree(bad));
    printf("exported buffer pinned resident, data right\n");
}

/* Legacy IPC as the simulator implements it, without the shim. */
static void simulator_side(void)
{
    CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                 .location = { CU_MEM_LOCATION_TYPE_DEVICE, 0 } };
    CUmemAccessDesc access = { .location = { CU_MEM_LOCATION_TYPE_DEVICE, 0 },
                               .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
    CUmemGenericAllocationHandle h;
    CUdeviceptr dev, pool, va;
    CUipcMemHandle ipc, again;

    st_setup(0);
    CHECK_CU(cuMemAlloc(&dev, BUF));
    CHECK_CU(cuIpcGetMemHandle(&ipc, dev));
    CHECK_CU(cuIpcGetMemHandle(&again, dev));
    EXPECT(memcmp(&ipc, &again, sizeof(ipc)) == 0, "two handles of one allocation differ");
    EXPECT(legacy_ipc_capable(dev) == 1, "cuMemAlloc memory is not legacy-IPC capable");
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuIpcGetMemHandle(&ipc, dev + 256));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuIpcGetMemHandle(NULL, dev));
    CHECK_CU(cuMemAllocAsync(&pool, BUF, NULL));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuIpcGetMemHandle(&ipc, pool));
    EXPECT(legacy_ipc_capable(pool) == 0, "pool memory reads as legacy-IPC capable");
    CHECK_CU(cuMemCreate(&h, BUF, &prop, 0));
    CHECK_CU(cuMemAddressReserve(&va, BUF, 0, 0, 0));
    CHECK_CU(cuMemMap(va, BUF, 0, h, 0));
    CHECK_CU(cuMemSetAccess(va, BUF, &access, 1));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuIpcGetMemHandle(&ipc, va));
    EXPECT(legacy_ipc_capable(va) == 0, "VMM memory reads as legacy-IPC capable");
    CHECK_CU(cuMemUnmap(va, BUF));
    CHECK_CU(cuMemRelease(h));
    CHECK_CU(cuMemAddressFree(va, BUF));
    CHECK_CU(cuMemFreeAsync(pool, NULL));
    CHECK_CU(cuMemFree(dev));
    printf("simulator: legacy IPC takes cuMemAlloc memory only\n");
}

/* The scenario under the shim with `env`: exits 1 unless all the above holds. */
static void run(const char *const *env, const char *what)
{
    sh_run_t r = sh_run_ok("scenario", env);
    long long pinned = sh_stat(r.err, "chunks pinned 0 (total ");
    int warnings = sh_count(r.err, "cuIpcGetMemHandle(");

    printf("%s: %s", what, r.out);
    EXPECT(warnings == 1 && strstr(r.err, "ELIXIR_DISABLE=1"), "%d warnings about "
           "cuIpcGetMemHandle, expected one naming ELIXIR_DISABLE:\n%s", warnings, r.err);
    EXPECT(pinned == 2, "%lld chunks pinned, expected A's two:\n%s", pinned, r.err);
    sh_run_free(&r);
}

int main(int argc, char **argv)
{
    static const char *const mapped[] = { "ELIXIR_GPU_MEMORY=8M", "ELIXIR_STATS=1", NULL };
    static const char *const unmapped[] = { "ELIXIR_GPU_MEMORY=8M", "ELIXIR_STATS=1",
                                            "ELIXIR_SIM_HOST_VMM=0", NULL };

    sh_scenario_child(argc, argv, scenario);
    simulator_side();
    run(mapped, "host memory mapped");
    run(unmapped, "host memory not mapped");
    return 0;
}
