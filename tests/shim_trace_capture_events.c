/* SPDX-License-Identifier: MIT */
/*
 * shim_trace_capture_events.c - timing with CUDA events (CUPTI off) leaves stream captures
 * alone.
 *
 * Under libelixir.so recording a trace with ELIXIR_CUPTI=off, every operation of the profiled
 * iterations is timed by a pair of events, whose times are read back later (an event query,
 * when the next operation begins).  A stream capture in global mode forbids such a query from
 * any thread, and so does creating a stream or synchronising: each would invalidate the
 * capture.  The scenario (profiling from the start: ELIXIR_PROFILE_WARMUP=0, the simulator's
 * lazy executor so that timed work is still queued when the capture begins) launches tt_k1 on
 * X on a stream s, begins a global capture on another stream c, launches tt_k1 on Y into it
 * and tt_k1 on X on s beside it, and ends the capture: it must succeed.  The graph then runs
 * once, and X and Y hold what the launches added.  The trace must hold TIMING records from
 * events (the fallback was in use), and read back clean.
 */
#define TT_KERNELS
#include "shim_trace_test.h"

#define WORDS 16

static void scenario(void)
{
    CUdeviceptr x, y;
    CUstream s, c;
    CUgraph g;
    CUgraphExec ge;
    uint32_t host[WORDS];

    st_setup(0);
    CUfunction k1 = st_function(tt_ptx, "tt_k1");
    CHECK_CU(cuMemAlloc(&x, WORDS * 4));
    CHECK_CU(cuMemAlloc(&y, WORDS * 4));
    CHECK_CU(cuMemsetD32(x, 0, WORDS));
    CHECK_CU(cuMemsetD32(y, 0, WORDS));
    CHECK_CU(cuCtxSynchronize());           /* (the streams below do not wait for the memsets) */
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&c, CU_STREAM_NON_BLOCKING));
    CHECK_CU(tt_launch1(k1, s, x, WORDS));  /* timed; still queued (lazy executor) */
    CHECK_CU(cuStreamBeginCapture(c, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_CU(tt_launch1(k1, c, y, WORDS));  /* captured */
    CHECK_CU(tt_launch1(k1, s, x, WORDS));  /* beside the capture */
    CHECK_CU(cuStreamEndCapture(c, &g));
    CHECK_CU(cuGraphInstantiate(&ge, g, 0));
    CHECK_CU(cuGraphLaunch(ge, c));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuMemcpyDtoH(host, x, sizeof(host)));
    for (int i = 0; i < WORDS; i++)
        EXPECT(host[i] == 2, "X[%d] is %u, expected 2", i, host[i]);
    CHECK_CU(cuMemcpyDtoH(host, y, sizeof(host)));
    for (int i = 0; i < WORDS; i++)
        EXPECT(host[i] == 1, "Y[%d] is %u, expected 1 (the graph ran once)", i, host[i]);
    CHECK_CU(cuGraphExecDestroy(ge));
    CHECK_CU(cuGraphDestroy(g));
    printf("the capture held beside timed work; the graph ran once\n");
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "scenario") == 0) {
        scenario();
        return 0;
    }
    const char *path = tt_path("shim-trace-capture-events", 0);
    const char *env[] = { tt_env_trace(path, 0), "ELIXIR_CUPTI=off", "ELIXIR_PROFILE_WARMUP=0",
                          "ELIXIR_PROFILE_ITERATIONS=1000", "ELIXIR_SIM_EXEC=lazy", NULL };
    sh_run_t r = sh_run_ok("scenario", env);
    tt_trace_t t;

    printf("%s", r.out);
    tt_load(path, &t);
    tt_expect_clean(&t, path);
    size_t timed = 0;
    for (size_t i = 0; i < tt_count(&t, TRC_EV_TIMING); i++)
        timed += tt_nth(&t, TRC_EV_TIMING, i)->u.timing.source == TRC_TIMING_EVENTS;
    EXPECT(timed > 0, "no TIMING record from events: the fallback was not in use");
    printf("%zu operations timed with events\n", timed);
    tt_free(&t);
    sh_run_free(&r);
    return 0;
}
