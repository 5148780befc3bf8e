/* SPDX-License-Identifier: MIT */
/*
 * shim_trace_fork.c - a forked child records nothing and leaves the parent's trace whole.
 *
 * The scenario (recording) launches tt_k1 three times, forks, and the child calls into the
 * driver through the shim (an allocation and a launch, whatever they return) and exits
 * normally, which runs the exit handlers it inherited.  The parent waits for it, launches
 * three more times and exits.  The trace must read cleanly to its END, hold the parent's
 * process only, and exactly six launches, each once: a child that flushed its copy of the
 * parent's buffers, wrote its own events or closed the file would show here.
 */
#define TT_KERNELS
#include "shim_trace_test.h"

static void scenario(void)
{
    CUdeviceptr p;
    CUfunction k1 = tt_k1_runs(&p, 3);

    fflush(NULL);
    pid_t child = fork();
    EXPECT(child >= 0, "fork: %s", strerror(errno));
    if (child == 0) {
        CUdeviceptr q = 0;
        CUresult a = cuMemAlloc(&q, 4096);
        CUresult l = tt_launch1(k1, NULL, p, 16);
        printf("child: cuMemAlloc %d, cuLaunchKernel %d\n", (int)a, (int)l);
        exit(0);
    }
    int st;
    EXPECT(waitpid(child, &st, 0) == child && WIFEXITED(st), "the child did not exit");
    for (int i = 0; i < 3; i++)
        CHECK_CU(tt_launch1(k1, NULL, p, 16));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuMemFree(p));
    printf("parent %d child %d\n", (int)getpid(), (int)child);
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
#ifdef __SANITIZE_ADDRESS__
    /* The forked child's exit runs LeakSanitizer's check, which locks the sanitizer's
     * allocator: a lock that another thread of the parent (the simulator's executor, the
     * trace writer) may have held at the fork, which GCC 12's runtime does not guard, so the
     * child can hang there.  Leak checking is off for the scenario's processes only. */
    setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
#endif
    tt_trace_t t;
    sh_run_t r = tt_record_scenario("fork", 0, &t);
    const char *line = strstr(r.out, "parent ");
    int parent = 0, child = 0;

    EXPECT(line && sscanf(line, "parent %d child %d", &parent, &child) == 2, "scenario said: %s",
           r.out);
    EXPECT(t.complete, "the trace has no END: its file was closed early or cut");
    EXPECT(tt_count(&t, TRC_EV_PROCESS) == 1 &&
               tt_nth(&t, TRC_EV_PROCESS, 0)->u.process.pid == (uint32_t)parent,
           "%zu PROCESS records; expected the parent's (%d) only", tt_count(&t, TRC_EV_PROCESS),
           parent);
    EXPECT(tt_count(&t, TRC_EV_LAUNCH) == 6, "%zu launches recorded, the parent made 6",
           tt_count(&t, TRC_EV_LAUNCH));
    for (size_t i = 0; i < 6; i++)
        for (size_t j = 0; j < i; j++)
            EXPECT(tt_nth(&t, TRC_EV_LAUNCH, i)->u.launch.id !=
                       tt_nth(&t, TRC_EV_LAUNCH, j)->u.launch.id,
                   "launches %zu and %zu have the same id: recorded twice", j, i);
    EXPECT(tt_count(&t, TRC_EV_ALLOC) == 1 && tt_count(&t, TRC_EV_FREE) == 1,
           "%zu allocations and %zu frees; the parent made one of each",
           tt_count(&t, TRC_EV_ALLOC), tt_count(&t, TRC_EV_FREE));
    printf("parent's trace whole: 6 launches, 1 process, complete (child %d recorded "
           "nothing)\n", child);
    tt_free(&t);
    sh_run_free(&r);
    return 0;
}
