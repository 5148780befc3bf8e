/* SPDX-License-Identifier: MIT */
/*
 * shim_res_fast_launch.c - the shim's fast path for launches gives way whenever the general
 * path has something to do.
 *
 * sh_verify's parameters are all 8-byte words, so its launches are candidates for the fast
 * path (res_launch.c, fast_collect), which records a use as one tick of the device's last
 * stream and moves nothing.  Under libelixir.so with a 4 MiB GPU budget (two chunks, one of
 * them the small allocations' slab), each buffer below is one chunk, and:
 *  1. A is filled and read on s1 and, after a memset that makes s2 the stream the fast path
 *     expects, read on s2, the two reads unordered: A's last use is on s1, so the read on s2
 *     must take the general path, which joins the two uses.  B is allocated and filled, which
 *     evicts A while both reads may be in flight: the eviction must wait for both (the race
 *     checker, in fail mode, sees the order the shim gives it and nothing else);
 *  2. A, now on the host, is read on s2 again, after a memset on s2 (A's last use and the
 *     expected stream agree): the fast path must give way to the general one, which brings A
 *     back, evicting B;
 *  3. a read whose pointer arguments name A twice, A's middle, a host address and an address
 *     past B that no allocation holds, all in one launch, on the stream it expects.
 * Every read finds the pattern, and A and B each went to the host at least once.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define BUF (2 * SH_MIB)
#define WORDS (BUF / 4)

static void scenario(void)
{
    CUdeviceptr a, b, bad, mark;
    CUstream s1, s2;
    uint32_t wrong[4];

    st_setup(0);
    CUfunction fill = st_function(sh_res_ptx, "sh_fill");
    CUfunction verify = st_function(sh_res_ptx, "sh_verify");
    CHECK_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&bad, sizeof(wrong)));
    CHECK_CU(cuMemAlloc(&mark, 4));
    CHECK_CU(cuMemsetD8(bad, 0xff, sizeof(wrong)));

    CHECK_CU(cuMemAlloc(&a, BUF));                                  /* 1 */
    CHECK_CU(sh_fill_async(fill, a, WORDS, 1, s1));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(sh_verify_async(verify, a, WORDS, 1, bad, s1));
    CHECK_CU(cuMemsetD32Async(mark, 0, 1, s2));
    CHECK_CU(sh_verify_async(verify, a, WORDS, 1, bad + 12, s2));
    CHECK_CU(cuMemAlloc(&b, BUF));
    CHECK_CU(sh_fill_async(fill, b, WORDS, 2, s1));
    EXPECT(sh_where(a) == 'H', "A was not evicted by B (where: %c)", sh_where(a));

    CHECK_CU(cuMemsetD32Async(mark, 0, 1, s2));                    /* 2 */
    CHECK_CU(sh_verify_async(verify, a, WORDS, 1, bad + 4, s2));
    CHECK_CU(cuStreamSynchronize(s2));
    EXPECT(sh_where(a) == 'G' && sh_where(b) == 'H', "A was not brought back over B (%c, %c)",
           sh_where(a), sh_where(b));

    uint64_t words = WORDS / 2, seed = 1;                          /* 3 */
    CUdeviceptr out = bad + 8, mid = a + BUF / 2, host = (CUdeviceptr)(uintptr_t)&words;
    CUdeviceptr unused = b + 64 * BUF;
    void *args[] = { &a, &words, &seed, &out, &a, &mid, &host, &unused };
    static const char multi_ptx[] =
        ".version 8.0\n.target sm_90\n.address_size 64\n"
        ".visible .entry sh_verify(.param .u64 p, .param .u64 n, .param .u64 seed, .param .u64 "
        "bad, .param .u64 q, .param .u64 r, .param .u64 s, .param .u64 t)\n{\n ret;\n}\n";
    CUfunction verify_many = st_function(multi_ptx, "sh_verify");
    CHECK_CU(sh_launch(verify_many, s2, args));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuMemcpyDtoH(wrong, bad, sizeof(wrong)));
    static const char *const reads[] = { "read of A on s1", "read of A paged in",
                                         "read with many arguments", "read of A on s2" };
    for (int i = 0; i < 4; i++)
        EXPECT(wrong[i] == 0, "%s: %u wrong words (expected 0)", reads[i], wrong[i]);
    sh_expect_verified(verify, b, WORDS, 2, bad, "B");
    printf("launches the fast path could take: joined across streams, paged in, many "
           "arguments; results right\n");
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_GPU_MEMORY=4M", "ELIXIR_STATS=1", NULL };

    sh_scenario_child(argc, argv, scenario);
    sh_run_t r = sh_run_migrations(env);
    EXPECT(sh_stat(r.err, "migrations to host ") >= 2, "too few evictions:\n%s", r.err);
    sh_run_free(&r);
    return 0;
}
