/* SPDX-License-Identifier: MIT */
/*
 * stream_memop_order.c - a stream memory wait released by a write submitted after it.
 *
 * Stream A waits for a flag that stream B writes, B's write submitted after A's wait and
 * after work queued behind the wait: the program must not deadlock (eager and lazy executor),
 * A's later work must run after B's write and see what B wrote before it, and the race
 * checker must see that ordering (the same program without the wait is reported).  What
 * depends on the blocked stream waits too: an event recorded behind the wait (even when the
 * event is recorded again elsewhere before the wait is released) and the legacy stream's
 * implicit ordering.  Each program runs in a child process, in both executor modes.
 */
#include <string.h>

#include "simchild.h"
#include "simtest.h"

enum { WAIT_ON_FLAG = 1, EVENT_AFTER = 2, RERECORD = 4, LEGACY = 8 };

static void program(void *arg)
{
    int mode = (int)(intptr_t)arg;
    CUstream a, b, c, d;
    CUevent ev;
    CUdeviceptr flag, data, out;
    unsigned got = 0;

    st_setup(0);
    CHECK_CU(cuMemAlloc(&flag, 64));
    CHECK_CU(cuMemAlloc(&data, 64));
    CHECK_CU(cuMemAlloc(&out, 64));
    CHECK_CU(cuMemsetD32(flag, 0, 16));
    CHECK_CU(cuMemsetD32(data, 0, 16));
    CHECK_CU(cuMemsetD32(out, 0, 16));
    CHECK_CU(cuCtxSynchronize());       /* the non-blocking streams do not wait for these */
    CHECK_CU(cuStreamCreate(&a, (mode & LEGACY) ? 0 : CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&c, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&d, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));

    if (mode & WAIT_ON_FLAG)
        CHECK_CU(cuStreamWaitValue32(a, flag, 1, CU_STREAM_WAIT_VALUE_GEQ));
    if (mode & LEGACY) {
        /* A's write, then the legacy stream's, which must come after it. */
        CHECK_CU(cuMemsetD32Async(out, 1, 1, a));
        CHECK_CU(cuMemsetD32Async(out, 2, 1, NULL));
    } else if (mode & EVENT_AFTER) {
        CHECK_CU(cuEventRecord(ev, a));
        CHECK_CU(cuStreamWaitEvent(c, ev, 0));
        if (mode & RERECORD)
            CHECK_CU(cuEventRecord(ev, d));
        CHECK_CU(cuMemcpyDtoDAsync(out, data, 4, c));
    } else {
        CHECK_CU(cuMemcpyDtoDAsync(out, data, 4, a));
    }
    CHECK_CU(cuMemsetD32Async(data, 7, 1, b));
    CHECK_CU(cuStreamWriteValue32(b, flag, 1, 0));

    CHECK_CU(cuStreamSynchronize((mode & EVENT_AFTER) ? c : a));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuMemcpyDtoH(&got, out, 4));
    unsigned want = (mode & LEGACY) ? 2 : 7;
    if (mode & WAIT_ON_FLAG)
        EXPECT(got == want, "after the wait: expected %u, got %u", want, got);
    CHECK_CU(cuEventDestroy(ev));
    CHECK_CU(cuStreamDestroy(a));
    CHECK_CU(cuStreamDestroy(b));
    CHECK_CU(cuStreamDestroy(c));
    CHECK_CU(cuStreamDestroy(d));
}

static void run(int mode, const char *exec, int racy)
{
    const char *env[] = { "ELIXIR_SIM_RACECHECK=fail", exec, NULL };
    static const char *const race[] = { "race:", NULL };
    st_child_t c;

    st_run_child(program, (void *)(intptr_t)mode, env, &c);
    if (racy) {
        st_child_expect(&c, 66, race);
    } else {
        st_child_expect(&c, 0, NULL);
        EXPECT(!strstr(c.err, "race"), "mode %d (%s): expected no report, got:\n%s", mode,
               exec, c.err);
    }
    st_child_free(&c);
}

int main(void)
{
    static const char *const execs[] = { "ELIXIR_SIM_EXEC=async", "ELIXIR_SIM_EXEC=lazy" };
    for (int i = 0; i < 2; i++) {
        run(0, execs[i], 1);                            /* no wait: B's memset races A's copy */
        run(WAIT_ON_FLAG, execs[i], 0);
        run(WAIT_ON_FLAG | EVENT_AFTER, execs[i], 0);
        run(WAIT_ON_FLAG | EVENT_AFTER | RERECORD, execs[i], 0);
        run(WAIT_ON_FLAG | LEGACY, execs[i], 0);
    }
    return 0;
}
