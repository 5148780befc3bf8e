/* SPDX-License-Identifier: MIT */
/*
 * shim_trace_kill.c - a traced program killed with SIGKILL leaves a readable trace.
 *
 * The scenario (recording) launches tt_k1 ten times, synchronises, waits a second (five of
 * the recorder's flush intervals, so its buffer reaches the file) and kills itself with
 * SIGKILL: no exit handler runs.  The trace must read without error up to its last record,
 * say it is not complete (no END), and hold the process and the ten launches.
 */
#define TT_KERNELS
#include "shim_trace_test.h"

#include <signal.h>

static void scenario(void)
{
    CUdeviceptr p;

    tt_k1_runs(&p, 10);
    fflush(NULL);
    sleep(1);
    raise(SIGKILL);
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    tt_trace_t t;
    sh_run_t r = tt_record_scenario("kill", 128 + SIGKILL, &t);

    EXPECT(!t.complete, "a killed program's trace has an END record");
    EXPECT(tt_count(&t, TRC_EV_PROCESS) == 1 && tt_count(&t, TRC_EV_LAUNCH) == 10,
           "%zu PROCESS records and %zu launches; expected 1 and 10",
           tt_count(&t, TRC_EV_PROCESS), tt_count(&t, TRC_EV_LAUNCH));
    printf("killed: trace readable, %zu events, no END\n", t.n);
    tt_free(&t);
    sh_run_free(&r);
    return 0;
}
