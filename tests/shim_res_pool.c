/* SPDX-License-Identifier: MIT */
/*
 * shim_res_pool.c - what the application's own memory pool takes from the device is charged
 * to the GPU budget: arena chunks are evicted to make room before the pool grows, and the
 * room comes back when the pool gives its memory back.
 *
 * Under libelixir.so with an 18 MiB GPU budget (nine 2 MiB chunks), four 4 MiB arena buffers
 * and a small one fill the budget.  The application creates a pool on device 0 and takes 8
 * MiB from it with cuMemAllocFromPoolAsync: four arena chunks must have been evicted first
 * (at most five stay in device memory, counted chunk by chunk through
 * cuMemRetainAllocationHandle), and cuMemGetInfo's free memory drops by 8 MiB.  A kernel
 * fills the pool memory, kernels check every arena buffer (each brought back by evicting
 * other arena chunks: still at most five in device memory), and the pool memory is checked.
 * Once it is freed in stream order and the stream synchronised, the pool holds nothing (the
 * simulator's pools keep no cache) and cuMemGetInfo reports the 8 MiB free again; a second
 * allocation from the pool, freed, and the pool destroyed leave it so.  The statistics show
 * the pools' memory at 0 MiB now and 8 MiB at peak; the race checker finds nothing.
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

/* 8 MiB from the pool beside the full arena; every buffer checked. */
static void pool_beside(CUmemoryPool pool, CUstream s, size_t free0)
{
    CUdeviceptr p;
    char what[48];

    CHECK_CU(cuMemAllocFromPoolAsync(&p, 2 * BUF, pool, s));
    int resident = ARENA_CHUNKS_ON_DEVICE();
    EXPECT(resident <= 5, "%d arena chunks in device memory beside 8 MiB of pool memory in an "
           "18 MiB budget", resident);
    EXPECT(sh_free_now() == free0 - 2 * BUF, "cuMemGetInfo free %zu with 8 MiB of pool memory, "
           "%zu before", sh_free_now(), free0);
    CHECK_CU(sh_fill_async(fill, p, 2 * WORDS, 40, s));
    CHECK_CU(cuStreamSynchronize(s));
    for (uint32_t i = 0; i < BUFS; i++) {
        snprintf(what, sizeof(what), "arena buffer %u beside the pool", i);
        sh_expect_verified(verify, buf[i], WORDS, i, bad, what);
        EXPECT(ARENA_CHUNKS_ON_DEVICE() <= 5, "%d arena chunks in device memory after %s",
               ARENA_CHUNKS_ON_DEVICE(), what);
    }
    sh_expect_verified(verify, p, 2 * WORDS, 40, bad, "the pool memory");
    CHECK_CU(cuMemFreeAsync(p, s));
    CHECK_CU(cuStreamSynchronize(s));
    EXPECT(sh_free_now() == free0, "cuMemGetInfo free %zu once the pool gave its memory back, "
           "%zu before", sh_free_now(), free0);
    printf("8 MiB from a pool: %d arena chunks of 9 stayed in device memory\n", resident);
}

static void scenario(void)
{
    CUmemPoolProps props = { .allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                             .location = { CU_MEM_LOCATION_TYPE_DEVICE, 0 } };
    CUmemoryPool pool;
    CUdeviceptr p;
    CUstream s;

    st_setup(0);
    fill = st_function(sh_res_ptx, "sh_fill");
    verify = st_function(sh_res_ptx, "sh_verify");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    sh_alloc_filled(fill, buf, BUFS, BUF, 0, NULL);
    CHECK_CU(cuMemAlloc(&bad, 4));
    size_t free0 = sh_free_now();
    CHECK_CU(cuMemPoolCreate(&pool, &props));
    pool_beside(pool, s, free0);
    CHECK_CU(cuMemAllocFromPoolAsync(&p, BUF, pool, s));
    EXPECT(sh_free_now() == free0 - BUF, "cuMemGetInfo free %zu with 4 MiB of pool memory, %zu "
           "before", sh_free_now(), free0);
    CHECK_CU(cuMemFreeAsync(p, s));
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuMemPoolDestroy(pool));
    EXPECT(sh_free_now() == free0, "cuMemGetInfo free %zu after the pool was destroyed, %zu "
           "before", sh_free_now(), free0);
    for (int i = 0; i < BUFS; i++)
        CHECK_CU(cuMemFree(buf[i]));
    CHECK_CU(cuMemFree(bad));
    CHECK_CU(cuStreamDestroy(s));
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_GPU_MEMORY=18M", "ELIXIR_STATS=1", NULL };

    sh_scenario_child(argc, argv, scenario);
    sh_run_t r = sh_run_ok("scenario", env);
    long long out = sh_stat(r.err, "migrations to host "), now = sh_stat(r.err, "pools ");
    long long peak = sh_stat(r.err, "pools 0 MiB (peak ");

    printf("%smigrations to host %lld; pools %lld MiB now, %lld MiB at peak\n", r.out, out, now,
           peak);
    EXPECT(out >= 4, "%lld chunks evicted, expected at least 4 for 8 MiB:\n%s", out, r.err);
    EXPECT(now == 0 && peak == 8, "the statistics show %lld MiB of pool memory now and %lld "
           "at peak, expected 0 and 8:\n%s", now, peak, r.err);
    sh_run_free(&r);
    return 0;
}
