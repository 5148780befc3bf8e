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

    st_setup(0);
    CUfunction k1 = st_function(tt_ptx, "tt_k1");
    CHECK_CU(cuMemAlloc(&p, 4096));
    for (int i = 0; i < 10; i++)
        CHECK_CU(tt_launch1(k1, NULL, p, 16));
    CHECK_CU(cuCtxSynchronize());
    fflush(NULL);
    sleep(1);
    raise(SIGKILL);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "scenario") == 0) {
        scenario();
        return 0;
    }
    const char *path = tt_path("kill", 0);
    const char *env[] = { tt_env_trace(path, 0), NULL };
    sh_run_t r = sh_run("scenario", 1, env);
    tt_trace_t t;

    EXPECT(r.status == 128 + SIGKILL, "the scenario exited %d, expected SIGKILL:\n%s", r.status,
           r.err);
    tt_load(path, &t);
    tt_expect_clean(&t, path);
    EXPECT(!t.complete, "a killed program's trace has an END record");
    EXPECT(tt_count(&t, TRC_EV_PROCESS) == 1 && tt_count(&t, TRC_EV_LAUNCH) == 10,
           "%zu PROCESS records and %zu launches; expected 1 and 10",
           tt_count(&t, TRC_EV_PROCESS), tt_count(&t, TRC_EV_LAUNCH));
    printf("killed: trace readable, %zu events, no END\n", t.n);
    tt_free(&t);
    unlink(path);
    sh_run_free(&r);
    return 0;
}
