/* SPDX-License-Identifier: MIT */
/*
 * shim_res_lazy_streams.c - uses recorded without an event are still waited for: a chunk used
 * on two streams, a stream destroyed with uses pending, the legacy stream, a graph fence.
 *
 * The shim records a launch's use of a chunk as the stream's operation count and records an
 * event only when a migration must wait for it.  Under libelixir.so with a 4 MiB GPU budget
 * (two chunks), every new 4 MiB buffer evicts the one before it, so each step below makes the
 * shim wait for uses it recorded lazily:
 *  1. A is filled on s1 and read on s2 (no order between the two reads and the eviction but
 *     the shim's), then B is allocated: A's eviction must wait for both streams;
 *  2. B is filled on s2, s2 is destroyed, C is allocated: B's eviction waits for a use on a
 *     stream that no longer exists;
 *  3. C is filled on the legacy stream, D is allocated;
 *  4. A (paged back in) is read by an explicit graph launched on s1 (a fence), E is allocated.
 * The race checker (fail mode) finds nothing and every buffer holds its pattern.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define BUF (4 * SH_MIB)
#define WORDS (BUF / 4)

static CUfunction fill, verify;
static CUdeviceptr bad;

/* sh_verify of p against seed on s, counting into bad word `slot`. */
static void verify_async(CUstream s, CUdeviceptr *p, uint32_t seed, int slot)
{
    static uint64_t n = WORDS;
    static uint64_t seeds[8];
    static CUdeviceptr outs[8];
    seeds[slot] = seed;
    outs[slot] = bad + 4 * (CUdeviceptr)slot;
    void *args[] = { p, &n, &seeds[slot], &outs[slot] };
    CHECK_CU(sh_launch(verify, s, args));
}

static CUgraphExec verify_graph(CUdeviceptr *p, uint32_t seed, int slot)
{
    static uint64_t n = WORDS, s;
    static CUdeviceptr out;
    s = seed;
    out = bad + 4 * (CUdeviceptr)slot;
    void *args[] = { p, &n, &s, &out };
    return st_kernel_graph(verify, args);
}

static void scenario(void)
{
    CUdeviceptr buf[5];
    CUstream s1, s2;
    uint32_t wrong[8];

    st_setup(0);
    fill = st_function(sh_res_ptx, "sh_fill");
    verify = st_function(sh_res_ptx, "sh_verify");
    CHECK_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&bad, sizeof(wrong)));
    CHECK_CU(cuMemsetD8(bad, 0xff, sizeof(wrong)));
    CHECK_CU(cuMemAlloc(&buf[0], BUF));
    CHECK_CU(sh_fill_async(fill, buf[0], WORDS, 1, s1));
    verify_async(s1, &buf[0], 1, 0);
    CHECK_CU(cuStreamSynchronize(s1));
    verify_async(s1, &buf[0], 1, 1);                /* 1: two streams read A */
    verify_async(s2, &buf[0], 1, 2);
    CHECK_CU(cuMemAlloc(&buf[1], BUF));
    CHECK_CU(sh_fill_async(fill, buf[1], WORDS, 2, s2));    /* 2: B's last use on s2 */
    CHECK_CU(cuStreamDestroy(s2));
    CHECK_CU(cuMemAlloc(&buf[2], BUF));
    CHECK_CU(sh_fill_async(fill, buf[2], WORDS, 3, NULL));  /* 3: the legacy stream */
    CHECK_CU(cuMemAlloc(&buf[3], BUF));
    CHECK_CU(sh_fill_async(fill, buf[3], WORDS, 4, s1));
    CUgraphExec ge = verify_graph(&buf[0], 1, 3);           /* 4: a fence on s1 */
    CHECK_CU(cuGraphLaunch(ge, s1));
    CHECK_CU(cuMemAlloc(&buf[4], BUF));
    CHECK_CU(sh_fill_async(fill, buf[4], WORDS, 5, s1));
    for (uint32_t i = 0; i < 5; i++)
        verify_async(s1, &buf[i], i + 1, 4);
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuMemcpyDtoH(wrong, bad, sizeof(wrong)));
    for (int i = 0; i < 5; i++)
        EXPECT(wrong[i] == 0, "check %d found %u wrong words (expected 0)", i, wrong[i]);
    CHECK_CU(cuGraphExecDestroy(ge));
    printf("lazily recorded uses on two streams, a destroyed stream, the legacy stream and a "
           "graph fence: waited for, results right\n");
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_GPU_MEMORY=4M", "ELIXIR_STATS=1", NULL };

    sh_scenario_child(argc, argv, scenario);
    sh_run_t r = sh_run_migrations(env);
    EXPECT(sh_stat(r.err, "migrations to host ") >= 4, "too few evictions:\n%s", r.err);
    sh_run_free(&r);
    return 0;
}
