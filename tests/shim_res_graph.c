/* SPDX-License-Identifier: MIT */
/*
 * shim_res_graph.c - a captured graph and an explicit graph over arena memory, launched while
 * a small GPU budget keeps paging their buffers in and out: the results are right and no
 * migration races with a graph.
 *
 * Under libelixir.so with a 4 MiB GPU budget (two chunks), three 4 MiB buffers A, B, C are
 * filled, so A and B are paged out when the capture starts.  On stream s, in global capture
 * mode, the kernels A += 1 and B += 2 are captured into G1 (the shim must neither break the
 * capture nor need the buffers resident: captured work runs only when the graph is
 * launched).  G1 is launched three times on s while kernels on a second stream read C, which
 * pages A and B out while a launch of G1 may still be using them.  Then an explicit graph G2
 * (one kernel node, C += 3) is launched twice on s while a kernel on the second stream, after
 * an event recorded behind G1's launches, adds 10 to A.  At the end A = pattern + 13,
 * B = pattern + 6, C = pattern + 6, and the race checker (ELIXIR_SIM_RACECHECK=fail) found
 * nothing.  The scenario orders A's adds itself: a migration of A must not be what does.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define BUF (4 * SH_MIB)
#define WORDS (BUF / 4)

static CUfunction fill, add, verify;

static void add_async(CUstream s, CUdeviceptr *p, uint32_t *v)
{
    static uint64_t n = WORDS;
    void *args[] = { p, &n, v };

    CHECK_CU(sh_launch(add, s, args));
}

/* G1: A += 1, B += 2, captured on s. */
static CUgraphExec capture(CUstream s, CUdeviceptr *a, CUdeviceptr *b)
{
    uint32_t one = 1, two = 2;
    CUgraph g;
    CUgraphExec ge;

    CHECK_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    add_async(s, a, &one);
    add_async(s, b, &two);
    CHECK_CU(cuStreamEndCapture(s, &g));
    CHECK_CU(cuGraphInstantiate(&ge, g, 0));
    CHECK_CU(cuGraphDestroy(g));
    return ge;
}

/* G2: one kernel node, C += 3. */
static CUgraphExec explicit_graph(CUdeviceptr *c)
{
    static uint64_t n = WORDS;
    static uint32_t three = 3;
    void *args[] = { c, &n, &three };

    return st_kernel_graph(add, args);
}

static void expect_buffer(CUdeviceptr p, uint32_t seed, uint32_t plus, const char *what)
{
    static uint32_t host[WORDS];

    CHECK_CU(cuMemcpyDtoH(host, p, BUF));
    for (uint64_t i = 0; i < WORDS; i++)
        EXPECT(host[i] == sh_pattern(seed, i) + plus, "%s: word %llu is 0x%08x, expected 0x%08x",
               what, (unsigned long long)i, host[i], sh_pattern(seed, i) + plus);
}

/* Three launches of G1 on s, each beside a kernel on s2 that reads C; then checks C. */
static void run_g1(CUgraphExec g1, CUstream s, CUstream s2, CUdeviceptr c, CUdeviceptr bad)
{
    uint32_t wrong[3];

    for (int i = 0; i < 3; i++) {
        CHECK_CU(cuGraphLaunch(g1, s));
        CHECK_CU(sh_verify_async(verify, c, WORDS, 3, bad + 4 * (CUdeviceptr)i, s2));
    }
    CHECK_CU(cuStreamSynchronize(s2));
    CHECK_CU(cuMemcpyDtoH(wrong, bad, sizeof(wrong)));
    EXPECT(wrong[0] == 0 && wrong[1] == 0 && wrong[2] == 0, "C read beside G1: %u %u %u wrong",
           wrong[0], wrong[1], wrong[2]);
}

/* Three 4 MiB buffers filled with patterns 1, 2, 3 (A and B end up paged out). */
static void alloc_filled(CUdeviceptr *buf, CUstream s)
{
    sh_alloc_filled(fill, buf, 3, BUF, 1, s);
    CHECK_CU(cuStreamSynchronize(s));
}

static void scenario(void)
{
    CUdeviceptr buf[3], bad;
    CUstream s, s2;
    uint32_t ten = 10;

    st_setup(0);
    fill = st_function(sh_res_ptx, "sh_fill");
    add = st_function(sh_res_ptx, "sh_add");
    verify = st_function(sh_res_ptx, "sh_verify");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&bad, 12));
    alloc_filled(buf, s);
    CUgraphExec g1 = capture(s, &buf[0], &buf[1]), g2 = explicit_graph(&buf[2]);
    run_g1(g1, s, s2, buf[2], bad);
    /* A's adds on s2 come after G1's on s, as the program orders them (an event), not as a
     * migration of A happens to: where evicted chunks are unmapped, the graph launches map
     * every chunk back and pin it, and nothing moves. */
    CUevent g1_done;
    CHECK_CU(cuEventCreate(&g1_done, CU_EVENT_DISABLE_TIMING));
    CHECK_CU(cuEventRecord(g1_done, s));
    CHECK_CU(cuGraphLaunch(g2, s));
    CHECK_CU(cuStreamWaitEvent(s2, g1_done, 0));
    add_async(s2, &buf[0], &ten);
    CHECK_CU(cuGraphLaunch(g2, s));
    CHECK_CU(cuCtxSynchronize());
    expect_buffer(buf[0], 1, 13, "A");
    expect_buffer(buf[1], 2, 6, "B");
    expect_buffer(buf[2], 3, 6, "C");
    CHECK_CU(cuGraphExecDestroy(g1));
    CHECK_CU(cuGraphExecDestroy(g2));
    CHECK_CU(cuEventDestroy(g1_done));
    printf("captured and explicit graphs over paged memory: results right\n");
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_GPU_MEMORY=4M", "ELIXIR_STATS=1", NULL };

    sh_scenario_child(argc, argv, scenario);
    sh_run_t r = sh_run_migrations(env);
    EXPECT(sh_stat(r.err, "launch graph ") == 5, "graph launches not counted:\n%s", r.err);
    EXPECT(sh_stat(r.err, "to GPU ") > 0, "nothing was paged back in:\n%s", r.err);
    sh_run_free(&r);
    return 0;
}
