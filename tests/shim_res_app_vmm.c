/* SPDX-License-Identifier: MIT */
/*
 * shim_res_app_vmm.c - device memory the application creates itself with cuMemCreate is
 * charged to the GPU budget while it lives: arena chunks are evicted to make room for it, it
 * is never moved, and its release gives the room back.
 *
 * Under libelixir.so with an 18 MiB GPU budget (nine 2 MiB chunks), four 4 MiB arena buffers
 * and a small one fill the budget.  The application then creates 8 MiB of device memory, maps
 * it in a range of its own, sets access and fills it by a kernel: four arena chunks must have
 * been evicted to make room (at most five stay in device memory, counted chunk by chunk
 * through cuMemRetainAllocationHandle, whose extra references the shim counts) and
 * cuMemGetInfo's free memory drops by 8 MiB.  Kernels then
 * check every arena buffer, each bringing its chunks back by evicting other arena chunks,
 * never the application's memory, which stays device memory at its address.  A request for
 * 32 MiB, beyond the budget, still goes to the driver and succeeds (the driver has the last
 * word).  After unmapping and releasing, cuMemGetInfo reports the memory free again and all
 * nine arena chunks fit in device memory together; the statistics show the application's
 * memory (0 MiB now, 40 MiB at peak).  Data is checked throughout, and the race checker
 * finds nothing.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define BUFS 4
#define BUF (4 * SH_MIB)
#define WORDS (BUF / 4)
#define CHUNK (2 * SH_MIB)

static CUfunction fill, verify;
static CUdeviceptr buf[BUFS], bad;

/* Chunks of the arena (the buffers' and the one holding `bad`) in device memory. */
#define ARENA_CHUNKS_ON_DEVICE() sh_arena_chunks_on_device(bad, buf, BUFS, BUF, CHUNK)

/* The application's own 8 MiB: created, mapped, filled; arena chunks made room for it. */
static CUdeviceptr app_map(CUmemGenericAllocationHandle *h, size_t free0)
{
    CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                 .location = { CU_MEM_LOCATION_TYPE_DEVICE, 0 } };
    CUmemAccessDesc access = { .location = { CU_MEM_LOCATION_TYPE_DEVICE, 0 },
                               .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
    CUdeviceptr va;

    CHECK_CU(cuMemCreate(h, 2 * BUF, &prop, 0));
    int resident = ARENA_CHUNKS_ON_DEVICE();
    EXPECT(resident <= 5, "%d arena chunks in device memory beside 8 MiB of the application's "
           "in an 18 MiB budget", resident);
    EXPECT(sh_free_now() == free0 - 2 * BUF, "cuMemGetInfo free %zu after creating 8 MiB, %zu "
           "before", sh_free_now(), free0);
    CHECK_CU(cuMemAddressReserve(&va, 2 * BUF, 0, 0, 0));
    CHECK_CU(cuMemMap(va, 2 * BUF, 0, *h, 0));
    CHECK_CU(cuMemSetAccess(va, 2 * BUF, &access, 1));
    CHECK_CU(sh_fill_async(fill, va, 2 * WORDS, 50, NULL));
    printf("8 MiB created: %d arena chunks of 9 stay in device memory\n", resident);
    return va;
}

/* Arena buffers brought back one after the other while the application's memory stays. */
static void arena_beside(CUdeviceptr va)
{
    char what[48];
    for (uint32_t i = 0; i < BUFS; i++) {
        snprintf(what, sizeof(what), "arena buffer %u beside it", i);
        sh_expect_verified(verify, buf[i], WORDS, i, bad, what);
        EXPECT(ARENA_CHUNKS_ON_DEVICE() <= 5, "%d arena chunks in device memory after %s",
               ARENA_CHUNKS_ON_DEVICE(), what);
        EXPECT(sh_where(va) == 'G' && sh_where(va + BUF) == 'G',
               "the application's memory was moved");
    }
    static uint32_t host[2 * WORDS];
    CHECK_CU(cuMemcpyDtoH(host, va, sizeof(host)));
    sh_expect_pattern(host, 2 * WORDS, 50, "the application's memory");
}

static void scenario(void)
{
    CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                 .location = { CU_MEM_LOCATION_TYPE_DEVICE, 0 } };
    CUmemGenericAllocationHandle h, big;

    st_setup(0);
    fill = st_function(sh_res_ptx, "sh_fill");
    verify = st_function(sh_res_ptx, "sh_verify");
    sh_alloc_filled(fill, buf, BUFS, BUF, 0, NULL);
    CHECK_CU(cuMemAlloc(&bad, 4));
    size_t free0 = sh_free_now();
    CUdeviceptr va = app_map(&h, free0);
    arena_beside(va);
    CHECK_CU(cuMemCreate(&big, 32 * SH_MIB, &prop, 0));     /* beyond the budget */
    CHECK_CU(cuMemRelease(big));
    CHECK_CU(cuMemUnmap(va, 2 * BUF));
    CHECK_CU(cuMemRelease(h));
    CHECK_CU(cuMemAddressFree(va, 2 * BUF));
    EXPECT(sh_free_now() == free0, "cuMemGetInfo free %zu after the release, %zu before",
           sh_free_now(), free0);
    for (uint32_t i = 0; i < BUFS; i++)
        sh_expect_verified(verify, buf[i], WORDS, i, bad, "arena buffer after the release");
    EXPECT(ARENA_CHUNKS_ON_DEVICE() == 9, "only %d arena chunks of 9 in device memory after "
           "the release", ARENA_CHUNKS_ON_DEVICE());
    for (int i = 0; i < BUFS; i++)
        CHECK_CU(cuMemFree(buf[i]));
    CHECK_CU(cuMemFree(bad));
    printf("released: all 9 arena chunks fit again\n");
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_GPU_MEMORY=18M", "ELIXIR_STATS=1", NULL };

    sh_scenario_child(argc, argv, scenario);
    sh_run_t r = sh_run_ok("scenario", env);
    long long out = sh_stat(r.err, "migrations to host "), app = sh_stat(r.err, "VMM memory ");
    long long peak = sh_stat(r.err, "VMM memory 0 MiB (peak ");

    printf("%smigrations to host %lld; application memory %lld MiB now, %lld MiB at peak\n",
           r.out, out, app, peak);
    EXPECT(out >= 4, "%lld chunks evicted, expected at least 4 for 8 MiB:\n%s", out, r.err);
    EXPECT(app == 0 && peak == 40, "the statistics show %lld MiB of the application's memory "
           "now and %lld at peak, expected 0 and 40:\n%s", app, peak, r.err);
    sh_run_free(&r);
    return 0;
}
