/* SPDX-License-Identifier: MIT */
/*
 * shim_trace_clock.c - on the simulator, a trace keeps the simulator's virtual clock all
 * through, also once CUPTI's (stand-in's) clock is retired after the profiled iterations.
 *
 * The scenario (recording, CUPTI as the simulator provides it, one warm-up and one profiled
 * iteration) runs eight iterations of three launches and a synchronisation, and sleeps
 * SLEEP_MS milliseconds of real time after each.  Host work is free in virtual time, so every
 * gap between the trace's ITERATION records must stay far below the sleep, before CUPTI was
 * retired and after, and the trace's time span with them; a clock that carried CUPTI's on in
 * real time would show each sleep.  The header must say the clock is virtual, and the log that
 * CUPTI timed the profiled iteration.
 */
#define TT_KERNELS
#include "shim_trace_test.h"

#include <time.h>

#define ITERATIONS 8
#define SLEEP_MS 60

static void scenario(void)
{
    CUdeviceptr p;
    CUfunction k1 = tt_k1_runs(&p, 0);

    for (int i = 0; i < ITERATIONS; i++) {
        for (int j = 0; j < 3; j++)
            CHECK_CU(tt_launch1(k1, NULL, p, 16));
        CHECK_CU(cuCtxSynchronize());
        struct timespec ts = { 0, SLEEP_MS * 1000000L };
        nanosleep(&ts, NULL);
    }
    CHECK_CU(cuMemFree(p));
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    const char *path = tt_path("clock", 0);
    const char *env[] = { tt_env_trace(path, 0), "ELIXIR_PROFILE_WARMUP=1",
                          "ELIXIR_PROFILE_ITERATIONS=1", "ELIXIR_LOG=info",
                          "ELIXIR_LOG_SUBSYS=INIT", NULL };
    sh_run_t r = sh_run_ok("scenario", env);
    tt_trace_t t;

    tt_load(path, &t);
    tt_expect_clean(&t, path);
    EXPECT(strstr(r.err, "device times from CUPTI") != NULL,
           "CUPTI did not time the profiled iteration:\n%s", r.err);
    EXPECT(trc_reader_header(t.reader)->flags & TRC_FLAG_VIRTUAL_TIME,
           "the trace's header does not say its clock is virtual");
    size_t n = tt_count(&t, TRC_EV_ITERATION);
    EXPECT(n >= ITERATIONS - 2, "%zu ITERATION records for %d iterations", n, ITERATIONS);
    uint64_t worst = 0, prev = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t at = tt_nth(&t, TRC_EV_ITERATION, i)->time;
        if (i && at - prev > worst)
            worst = at - prev;
        prev = at;
    }
    uint64_t first = t.ev[0].time, last = t.ev[t.n - 1].time;
    EXPECT(worst < SLEEP_MS * 1000000ull / 4 && last - first < SLEEP_MS * 1000000ull,
           "the trace's clock followed real time: the widest gap between iterations is %llu "
           "ns, the trace spans %llu ns, and the program slept %d ms after each iteration",
           (unsigned long long)worst, (unsigned long long)(last - first), SLEEP_MS);
    printf("%zu iterations, at most %llu ns apart in virtual time; the trace spans %llu ns\n",
           n, (unsigned long long)worst, (unsigned long long)(last - first));
    tt_free(&t);
    sh_run_free(&r);
    return 0;
}
