/* SPDX-License-Identifier: MIT */
/*
 * shim_res_lru.c - eviction takes the least recently used chunk, and never one that the
 * launch being prepared needs, with host memory mapped and without it.
 *
 * Under libelixir.so with an 8 MiB GPU budget (four 2 MiB chunks), four one-chunk buffers
 * B0-B3 are filled by kernels in that order, then used again in the order B2, B0, B3, B1, so
 * that the least recently used is B2, then B0, B3, B1.  Allocating B4 must evict B2, and B5
 * then B0 (recency order now B3, B1, B4, B5).  A kernel on B2 and B4 brings B2 back and must
 * evict B3 (order B1, B5, B2, B4).  A kernel on B1, B0 and B3 brings B0 and B3 back: the least
 * recently used chunk, B1, is its own, so B5 and then B2 go.  Where each buffer lives is read
 * from the simulator after every step (cuMemRetainAllocationHandle on the address: device
 * memory, host memory, or nothing mapped), and all data is checked at the end by kernels.
 * The scenario runs twice: with host VMM (evicted chunks stay mapped in host memory) and with
 * ELIXIR_SIM_HOST_VMM=0 (evicted chunks are unmapped).
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define BUFS 6
#define BUF (2 * SH_MIB)
#define WORDS (BUF / 4)

static CUfunction fill, verify, reader;
static CUdeviceptr buf[BUFS];
static char out_tier;   /* how an evicted chunk looks: 'H' mapped host memory, 'U' unmapped */

/* The tiers of the first n buffers must read `want` ('h' standing for the evicted tier). */
static void expect_tiers(int n, const char *want, const char *when)
{
    char got[BUFS + 1] = { 0 }, exp[BUFS + 1] = { 0 };

    for (int i = 0; i < n; i++) {
        got[i] = sh_where(buf[i]);
        exp[i] = want[i] == 'h' ? out_tier : want[i];
    }
    EXPECT(strcmp(got, exp) == 0, "%s: buffers B0-B%d live in %s, expected %s", when, n - 1,
           got, exp);
    printf("%-34s %s\n", when, got);
}

/* lru_read(a, b, c, n): reads n words at a, b and c (c may be 0); changes nothing. */
static const char lru_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry lru_read(.param .u64 a, .param .u64 b, .param .u64 c, .param .u64 n)"
    "\n{\n ret;\n}\n";

SIM_KERNEL void lru_read(const sim_launch_t *l, void **params)
{
    uint64_t n = *(uint64_t *)params[3];

    for (int i = 0; i < 3; i++) {
        const uint32_t *p = *(const uint32_t **)params[i];
        if (p)
            sim_kernel_access(p, n * 4, SIM_ACCESS_READ);
    }
}

/* A kernel that uses a, b and c (0: none). */
static void use(CUdeviceptr a, CUdeviceptr b, CUdeviceptr c)
{
    uint64_t n = WORDS;
    void *args[] = { &a, &b, &c, &n };

    CHECK_CU(sh_launch(reader, NULL, args));
}

/* Every buffer holds its pattern, checked by kernels (a copy needs nothing else here). */
static void check_all(void)
{
    uint32_t wrong[BUFS];
    CUdeviceptr bad;

    CHECK_CU(cuMemAlloc(&bad, sizeof(wrong)));
    for (uint32_t i = 0; i < BUFS; i++)
        CHECK_CU(sh_verify_async(verify, buf[i], WORDS, i, bad + 4 * i, NULL));
    CHECK_CU(cuMemcpyDtoH(wrong, bad, sizeof(wrong)));
    for (int i = 0; i < BUFS; i++)
        EXPECT(wrong[i] == 0, "B%d: %u words wrong", i, wrong[i]);
    CHECK_CU(cuMemFree(bad));
}

static void scenario(char tier)
{
    out_tier = tier;
    st_setup(0);
    fill = st_function(sh_res_ptx, "sh_fill");
    verify = st_function(sh_res_ptx, "sh_verify");
    reader = st_function(lru_ptx, "lru_read");
    sh_alloc_filled(fill, buf, 4, BUF, 0, NULL);
    expect_tiers(4, "GGGG", "B0-B3 filled");
    use(buf[2], 0, 0);
    use(buf[0], 0, 0);
    use(buf[3], 0, 0);
    use(buf[1], 0, 0);
    CHECK_CU(cuMemAlloc(&buf[4], BUF));
    expect_tiers(5, "GGhGG", "B4 allocated: B2 evicted");
    CHECK_CU(sh_fill_async(fill, buf[4], WORDS, 4, NULL));
    CHECK_CU(cuMemAlloc(&buf[5], BUF));
    CHECK_CU(sh_fill_async(fill, buf[5], WORDS, 5, NULL));
    expect_tiers(6, "hGhGGG", "B5 allocated: B0 evicted");
    use(buf[2], buf[4], 0);
    expect_tiers(6, "hGGhGG", "a kernel on B2, B4: B3 evicted");
    use(buf[1], buf[0], buf[3]);
    expect_tiers(6, "GGhGGh", "a kernel on B1, B0, B3: B5, B2 out");
    check_all();
    for (int i = 0; i < BUFS; i++)
        CHECK_CU(cuMemFree(buf[i]));
}

int main(int argc, char **argv)
{
    static const char *const mapped[] = { "ELIXIR_GPU_MEMORY=8M", NULL };
    static const char *const unmapped[] = { "ELIXIR_GPU_MEMORY=8M", "ELIXIR_SIM_HOST_VMM=0",
                                            NULL };

    if (argc > 1 && strcmp(argv[1], "mapped") == 0) {
        scenario('H');
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "unmapped") == 0) {
        scenario('U');
        return 0;
    }
    sh_run_t r = sh_run_ok("mapped", mapped);
    printf("host memory mapped:\n%s", r.out);
    sh_run_free(&r);
    r = sh_run_ok("unmapped", unmapped);
    printf("host memory not mapped (ELIXIR_SIM_HOST_VMM=0):\n%s", r.out);
    sh_run_free(&r);
    return 0;
}
