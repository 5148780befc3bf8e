/* SPDX-License-Identifier: MIT */
/*
 * shim_res_shared_chunk.c - small allocations sub-allocated from one chunk, used by kernels on
 * different streams, freed, reused and evicted while a neighbour is still in use.
 *
 * The shim gives small allocations slots of a shared 2 MiB chunk, so work on several streams
 * can use one chunk at once.  The driver's cuMemFree waits for work that may still use the
 * memory; the shim must too, and it must not migrate a chunk while any stream's kernel may
 * still touch it.  Under libelixir.so (8 MiB GPU budget), on three non-blocking streams:
 *  1. reuse beside a busy neighbour: a kernel on s1 keeps updating b while a, its neighbour,
 *     is freed and allocated again (the same slot), filled on s3 and checked;
 *  2. free after uses on two streams: a is filled on s2, then b on s1; a is freed at once (no
 *     synchronisation: cuMemFree must wait for both), its slot is allocated again and written
 *     by a synchronous copy;
 *  3. eviction after uses on two streams: c is filled on s1, then d on s2, and large
 *     allocations force the shared chunk out to host memory; then c and d are checked.
 * Every result must be exact and the race checker (ELIXIR_SIM_RACECHECK=fail) must find
 * nothing: a race means the shim freed, reused or copied memory that a kernel could still use.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define SMALL (64 * 1024)
#define WORDS (SMALL / 4)
#define BIG (4 * SH_MIB)
#define NBIG 4

static CUfunction fill, add;
static CUstream s1, s2, s3;

static int same_chunk(CUdeviceptr x, CUdeviceptr y)
{
    return x / (2 * SH_MIB) == y / (2 * SH_MIB);
}

/* Read `words` words at p and check them against sh_pattern(seed, i) + plus. */
static void expect_words(CUdeviceptr p, uint32_t seed, uint32_t plus, const char *what)
{
    static uint32_t host[WORDS];

    CHECK_CU(cuMemcpyDtoH(host, p, SMALL));
    for (uint64_t i = 0; i < WORDS; i++)
        EXPECT(host[i] == sh_pattern(seed, i) + plus, "%s: word %llu is 0x%08x, expected 0x%08x",
               what, (unsigned long long)i, host[i], sh_pattern(seed, i) + plus);
}

static void add_async(CUdeviceptr p, uint32_t v, CUstream s)
{
    uint64_t n = WORDS;
    void *args[] = { &p, &n, &v };

    CHECK_CU(sh_launch(add, s, args));
}

/* Phase 1: a is freed and reused while kernels on s1 keep using its neighbour b. */
static void reuse_beside_busy(void)
{
    CUdeviceptr a, b, a2;

    CHECK_CU(cuMemAlloc(&a, SMALL));
    CHECK_CU(cuMemAlloc(&b, SMALL));
    EXPECT(same_chunk(a, b), "a 0x%llx and b 0x%llx are not in one chunk",
           (unsigned long long)a, (unsigned long long)b);
    CHECK_CU(sh_fill_async(fill, a, WORDS, 1, s2));
    CHECK_CU(sh_fill_async(fill, b, WORDS, 2, s1));
    CHECK_CU(cuStreamSynchronize(s2));
    for (int i = 0; i < 8; i++)
        add_async(b, 1, s1);
    CHECK_CU(cuMemFree(a));
    CHECK_CU(cuMemAlloc(&a2, SMALL));
    EXPECT(a2 == a, "the freed slot 0x%llx was not reused (got 0x%llx)", (unsigned long long)a,
           (unsigned long long)a2);
    CHECK_CU(sh_fill_async(fill, a2, WORDS, 3, s3));
    for (int i = 0; i < 8; i++)
        add_async(b, 1, s1);
    CHECK_CU(cuStreamSynchronize(s3));
    expect_words(a2, 3, 0, "phase 1, reused slot");
    CHECK_CU(cuStreamSynchronize(s1));
    expect_words(b, 2, 16, "phase 1, busy neighbour");
    CHECK_CU(cuMemFree(a2));
    CHECK_CU(cuMemFree(b));
}

/* Phase 2: a is freed right after kernels on two streams used a and its neighbour. */
static void free_after_two_streams(void)
{
    static uint32_t host[WORDS];
    CUdeviceptr a, b, a2;

    CHECK_CU(cuMemAlloc(&a, SMALL));
    CHECK_CU(cuMemAlloc(&b, SMALL));
    EXPECT(same_chunk(a, b), "a and b are not in one chunk");
    CHECK_CU(sh_fill_async(fill, a, WORDS, 4, s2));
    CHECK_CU(sh_fill_async(fill, b, WORDS, 5, s1));
    CHECK_CU(cuMemFree(a));
    CHECK_CU(cuMemAlloc(&a2, SMALL));
    EXPECT(a2 == a, "the freed slot was not reused");
    for (uint64_t i = 0; i < WORDS; i++)
        host[i] = sh_pattern(6, i);
    CHECK_CU(cuMemcpyHtoD(a2, host, SMALL));
    expect_words(a2, 6, 0, "phase 2, reused slot");
    CHECK_CU(cuStreamSynchronize(s1));
    expect_words(b, 5, 0, "phase 2, neighbour");
    CHECK_CU(cuMemFree(a2));
    CHECK_CU(cuMemFree(b));
}

/* Phase 3: the shared chunk is evicted right after kernels on two streams used it. */
static void evict_after_two_streams(void)
{
    CUdeviceptr c, d, big[NBIG];

    CHECK_CU(cuMemAlloc(&c, SMALL));
    CHECK_CU(cuMemAlloc(&d, SMALL));
    EXPECT(same_chunk(c, d), "c and d are not in one chunk");
    CHECK_CU(sh_fill_async(fill, c, WORDS, 7, s1));
    CHECK_CU(sh_fill_async(fill, d, WORDS, 8, s2));
    for (int i = 0; i < NBIG; i++)
        CHECK_CU(cuMemAlloc(&big[i], BIG));
    CHECK_CU(cuCtxSynchronize());
    expect_words(c, 7, 0, "phase 3, c");
    expect_words(d, 8, 0, "phase 3, d");
    for (int i = 0; i < NBIG; i++)
        CHECK_CU(cuMemFree(big[i]));
    CHECK_CU(cuMemFree(c));
    CHECK_CU(cuMemFree(d));
}

static void scenario(const char *phase)
{
    st_setup(0);
    fill = st_function(sh_res_ptx, "sh_fill");
    add = st_function(sh_res_ptx, "sh_add");
    CHECK_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&s3, CU_STREAM_NON_BLOCKING));
    if (strcmp(phase, "1") == 0)
        reuse_beside_busy();
    else if (strcmp(phase, "2") == 0)
        free_after_two_streams();
    else
        evict_after_two_streams();
    printf("phase %s passed\n", phase);
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_GPU_MEMORY=8M", "ELIXIR_STATS=1", NULL };
    static const char *const phases[] = { "1", "2", "3" };

    if (argc > 1) {
        scenario(argv[1]);
        return 0;
    }
    /* One process per phase: a race is reported at exit, so each phase's verdict is its own. */
    for (int i = 0; i < 3; i++) {
        sh_run_t r = sh_run_ok(phases[i], env);
        printf("%s", r.out);
        if (i == 2)
            EXPECT(sh_stat(r.err, "migrations to host ") > 0, "phase 3 evicted nothing:\n%s",
                   r.err);
        sh_run_free(&r);
    }
    return 0;
}
