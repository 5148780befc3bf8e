/* SPDX-License-Identifier: MIT */
/*
 * shim_trace_event_times.c - device times from CUDA events stay exact in a long profiling
 * window.
 *
 * With ELIXIR_CUPTI=off an operation's start is the elapsed time, a float of milliseconds,
 * from a reference event of its context.  A float holds 24 bits: measured from a reference an
 * hour old it is rounded to a quarter of a millisecond, so operations microseconds apart would
 * all seem to start at once.  The scenario (profiling from the start, for more iterations than
 * it makes) launches tt_k1 on a stream, then a kernel that the simulator's virtual clock
 * charges an hour, waits for it, and launches tt_k1 RUNS times back to back.  Each of those
 * RUNS launches must have its device times from events, start after the hour, last what its
 * events say (a few microseconds), and start where the one before it ended, within a
 * microsecond: the stream runs them one after the other.
 */
#define TT_KERNELS
#include "shim_trace_test.h"

#define RUNS 16
#define HOUR_S 3600.0

static const char long_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry et_hour()\n{\n ret;\n}\n";

/* An hour of the device's time (ELIXIR_SIM_TFLOPS=1: a TFLOP a second). */
SIM_KERNEL void et_hour(const sim_launch_t *l, void **params)
{
    (void)l, (void)params;
    sim_kernel_cost(HOUR_S * 1e12, 0);
}

static void scenario(void)
{
    CUdeviceptr x;
    CUstream s;

    st_setup(0);
    CUfunction k1 = st_function(tt_ptx, "tt_k1"), hour = st_function(long_ptx, "et_hour");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&x, 4096));
    CHECK_CU(tt_launch1(k1, s, x, 16));
    CHECK_CU(cuLaunchKernel(hour, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    CHECK_CU(cuStreamSynchronize(s));
    for (int i = 0; i < RUNS; i++)
        CHECK_CU(tt_launch1(k1, s, x, 16));
    CHECK_CU(cuStreamSynchronize(s));
    printf("%d launches after an hour\n", RUNS);
}

/* The TIMING record of operation op, or NULL. */
static const trc_timing_t *timing_of(const tt_trace_t *t, uint64_t op)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->ev[i].type == TRC_EV_TIMING && t->ev[i].u.timing.op == op)
            return &t->ev[i].u.timing;
    return NULL;
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    const char *path = tt_path("shim-trace-event-times", 0);
    const char *env[] = { tt_env_trace(path, 0), "ELIXIR_CUPTI=off", "ELIXIR_PROFILE_WARMUP=0",
                          "ELIXIR_PROFILE_ITERATIONS=1000", "ELIXIR_SIM_TFLOPS=1", NULL };
    sh_run_t r = sh_run_ok("scenario", env);
    tt_trace_t t;

    tt_load(path, &t);
    tt_expect_clean(&t, path);
    const trc_event_t *h = tt_launch_of(&t, "et_hour", 0);
    const trc_timing_t *ht = h ? timing_of(&t, h->u.launch.id) : NULL;
    EXPECT(ht && ht->source == TRC_TIMING_EVENTS, "the hour's launch has no times from events");
    EXPECT(ht->end - ht->start >= (uint64_t)(HOUR_S * 1e9 * 0.999),
           "the hour's launch lasted %llu ns", (unsigned long long)(ht->end - ht->start));
    uint64_t prev_end = 0;
    for (int i = 0; i < RUNS; i++) {
        const trc_event_t *l = tt_launch_of(&t, "tt_k1", (size_t)i + 1);
        const trc_timing_t *g = l ? timing_of(&t, l->u.launch.id) : NULL;
        EXPECT(g && g->source == TRC_TIMING_EVENTS, "launch %d after the hour has no times "
               "from events", i);
        uint64_t d = g->end - g->start;
        EXPECT(g->start >= ht->start + (uint64_t)(HOUR_S * 1e9 * 0.999) && d > 0 && d < 100000,
               "launch %d after the hour: %llu..%llu (the hour began at %llu)", i,
               (unsigned long long)g->start, (unsigned long long)g->end,
               (unsigned long long)ht->start);
        EXPECT(!prev_end || (g->start + 1000 >= prev_end && g->start <= prev_end + 1000),
               "launch %d after the hour starts at %llu, %+lld ns from the end of the one "
               "before it (%llu); its own duration %llu ns", i, (unsigned long long)g->start,
               (long long)(g->start - prev_end), (unsigned long long)prev_end,
               (unsigned long long)d);
        prev_end = g->end;
    }
    printf("%d launches an hour into the window, each starting where the last ended\n", RUNS);
    tt_free(&t);
    sh_run_free(&r);
    return 0;
}
