/* SPDX-License-Identifier: MIT */
/*
 * shim_res_oom.c - an allocation beyond every budget returns CUDA_ERROR_OUT_OF_MEMORY and
 * changes nothing else.
 *
 * Under libelixir.so with a 4 MiB GPU budget and an 8 MiB host budget (12 MiB, six chunks, in
 * all), the scenario fills two 4 MiB buffers by kernel, then asks for 8 MiB with cuMemAlloc,
 * cuMemAllocPitch and cuMemAllocAsync, and for 1 TiB: each must fail with
 * CUDA_ERROR_OUT_OF_MEMORY without evicting anything for a request that cannot fit (the
 * shim's trace of evictions, ELIXIR_LOG=trace, shows none between the scenario's markers),
 * and afterwards cuMemGetInfo reports what it reported before, both buffers hold their data
 * (by copy and after a kernel updates them), and smaller allocations still succeed up to the
 * capacity exactly (2 MiB, then two small ones sharing the last chunk); one more chunk fails,
 * and succeeds again once a buffer is freed.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define MIB SH_MIB
#define BUF_WORDS (4 * MIB / 4)

static CUfunction fill, add;

static void expect_info(size_t want_free, size_t want_total, const char *when)
{
    size_t free_b = 0, total = 0;

    CHECK_CU(cuMemGetInfo(&free_b, &total));
    EXPECT(free_b == want_free && total == want_total,
           "%s: cuMemGetInfo free %zu, total %zu; expected %zu, %zu", when, free_b, total,
           want_free, want_total);
}

/* Buffer p holds sh_pattern(seed, i) + plus in every word. */
static void expect_buffer(CUdeviceptr p, uint32_t seed, uint32_t plus, const char *what)
{
    static uint32_t host[BUF_WORDS];

    CHECK_CU(cuMemcpyDtoH(host, p, sizeof(host)));
    for (uint64_t i = 0; i < BUF_WORDS; i++)
        EXPECT(host[i] == sh_pattern(seed, i) + plus, "%s: word %llu is 0x%08x, expected 0x%08x",
               what, (unsigned long long)i, host[i], sh_pattern(seed, i) + plus);
}

/* Every way of allocating 8 MiB more fails, and nothing changes. */
static void overflow(CUdeviceptr a, CUdeviceptr b)
{
    CUdeviceptr c = 0;
    size_t pitch = 0, free_b, total;
    CUstream s;

    CHECK_CU(cuMemGetInfo(&free_b, &total));
    EXPECT(total == 12 * MIB && free_b == 4 * MIB, "cuMemGetInfo free %zu, total %zu with "
           "8 MiB allocated of 4 + 8 MiB of budgets", free_b, total);
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    fprintf(stderr, "failures begin\n");
    EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&c, 8 * MIB));
    EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemAllocPitch(&c, &pitch, 4096, 2048, 4));
    EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemAllocAsync(&c, 8 * MIB, s));
    EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&c, 1ull << 40));
    fprintf(stderr, "failures end\n");
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuStreamDestroy(s));
    expect_info(free_b, total, "after the failed allocations");
    expect_buffer(a, 1, 0, "a after the failures");
    expect_buffer(b, 2, 0, "b after the failures");
}

/* Buffers a and b take 8 MiB; the remaining 4 MiB can be allocated, no more. */
static void fill_up(CUdeviceptr a, CUdeviceptr b)
{
    CUdeviceptr c, small[2], more;
    uint64_t n = BUF_WORDS;
    uint32_t one = 1;
    void *args_a[] = { &a, &n, &one }, *args_b[] = { &b, &n, &one };

    CHECK_CU(sh_launch(add, NULL, args_a));
    CHECK_CU(sh_launch(add, NULL, args_b));
    expect_buffer(a, 1, 1, "a updated after the failures");
    expect_buffer(b, 2, 1, "b updated after the failures");
    CHECK_CU(cuMemAlloc(&c, 2 * MIB));
    CHECK_CU(cuMemAlloc(&small[0], 4096));
    CHECK_CU(cuMemAlloc(&small[1], 4096));
    CHECK_CU(cuMemsetD8(small[1], 7, 4096));
    expect_info(0, 12 * MIB, "at capacity");
    EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&more, 2 * MIB));
    expect_info(0, 12 * MIB, "at capacity, after a failure");
    CHECK_CU(cuMemFree(c));
    CHECK_CU(cuMemAlloc(&more, 2 * MIB));
    CHECK_CU(sh_fill_async(fill, more, 2 * MIB / 4, 9, NULL));
    CHECK_CU(cuCtxSynchronize());
    expect_buffer(a, 1, 1, "a at capacity");
    expect_buffer(b, 2, 1, "b at capacity");
    CHECK_CU(cuMemFree(more));
    CHECK_CU(cuMemFree(small[0]));
    CHECK_CU(cuMemFree(small[1]));
}

static void scenario(void)
{
    CUdeviceptr a, b;

    st_setup(0);
    fill = st_function(sh_res_ptx, "sh_fill");
    add = st_function(sh_res_ptx, "sh_add");
    expect_info(12 * MIB, 12 * MIB, "at start");
    CHECK_CU(cuMemAlloc(&a, 4 * MIB));
    CHECK_CU(sh_fill_async(fill, a, BUF_WORDS, 1, NULL));
    CHECK_CU(cuMemAlloc(&b, 4 * MIB));
    CHECK_CU(sh_fill_async(fill, b, BUF_WORDS, 2, NULL));
    overflow(a, b);
    fill_up(a, b);
    CHECK_CU(cuMemFree(a));
    CHECK_CU(cuMemFree(b));
    printf("out of memory beyond 4 + 8 MiB, nothing else changed\n");
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_GPU_MEMORY=4M", "ELIXIR_HOST_MEMORY=8M",
                                       "ELIXIR_STATS=1", "ELIXIR_LOG=trace",
                                       "ELIXIR_LOG_SUBSYS=RES", NULL };

    sh_scenario_child(argc, argv, scenario);
    sh_run_t r = sh_run_ok("scenario", env);
    const char *begin = strstr(r.err, "failures begin\n"), *end = strstr(r.err, "failures end\n");
    int evicted = 0;

    EXPECT(begin && end && sh_count(r.err, "evicted chunk") > 0,
           "no markers, or no trace of evictions:\n%s", r.err);
    for (const char *p = begin; (p = strstr(p, "evicted chunk")) && p < end; p++)
        evicted++;
    EXPECT(evicted == 0, "%d chunks evicted for allocations that cannot fit:\n%s", evicted,
           r.err);
    printf("%s", r.out);
    EXPECT(sh_stat(r.err, "GPU peak ") <= 4 && sh_stat(r.err, "host peak ") <= 8,
           "a budget was exceeded:\n%s", r.err);
    sh_run_free(&r);
    return 0;
}
