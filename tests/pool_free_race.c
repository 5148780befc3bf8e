/* SPDX-License-Identifier: MIT */
/*
 * pool_free_race.c - a stream-ordered free is ordered only with what its stream (and the
 * events it waited for) orders: a kernel on another stream that used the memory, with no
 * event between it and the free, is a race the checker reports (exit status 66 with
 * ELIXIR_SIM_RACECHECK=fail, naming cuMemFreeAsync).  The same program with the free's stream
 * waiting on an event recorded after the kernel is correct.  cuMemFree of pool memory
 * "will not perform any implicit synchronization" either: freeing while the kernel is not
 * known to be done races; after waiting for its event it is fine.  Each case runs in a child.
 */
#include <time.h>

#include "memtest.h"
#include "simchild.h"

enum { ASYNC_UNORDERED, ASYNC_EVENT, FREE_UNORDERED, FREE_AFTER_SYNC };

/* Wait until a kernel ran, by a channel the race checker does not see. */
static void wait_for_kernel(void)
{
    struct timespec ms = { 0, 1000000 };
    for (int i = 0; i < 20000 && atomic_load(&mt_fill_runs) == 0; i++)
        nanosleep(&ms, NULL);
    EXPECT(atomic_load(&mt_fill_runs) == 1, "the kernel did not run");
}

static void free_after_other_stream(void *arg)
{
    int how = *(int *)arg;
    CUstream s1, s2;
    CUevent used;
    CUdeviceptr d;

    st_setup(0);
    CHECK_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuEventCreate(&used, CU_EVENT_DISABLE_TIMING));
    CHECK_CU(cuMemAllocAsync(&d, MT_MIB, s1));
    CHECK_CU(cuStreamSynchronize(s1));      /* the allocation is ready for any stream */
    CHECK_CU(mt_fill_async(d, MT_MIB / 4, 5, s2));
    CHECK_CU(cuEventRecord(used, s2));
    switch (how) {
    case ASYNC_UNORDERED:
        CHECK_CU(cuMemFreeAsync(d, s1));
        break;
    case ASYNC_EVENT:
        CHECK_CU(cuStreamWaitEvent(s1, used, 0));
        CHECK_CU(cuMemFreeAsync(d, s1));
        break;
    case FREE_UNORDERED:
        wait_for_kernel();
        CHECK_CU(cuMemFree(d));
        break;
    case FREE_AFTER_SYNC:
        CHECK_CU(cuEventSynchronize(used));
        CHECK_CU(cuMemFree(d));
        break;
    }
    CHECK_CU(cuCtxSynchronize());
}

static void run(int how, int status, const char *const *needles)
{
    static const char *const env[] = { "ELIXIR_SIM_RACECHECK=fail", "ELIXIR_SIM_EXEC=async",
                                       NULL };
    st_child_t c;
    st_run_child(free_after_other_stream, &how, env, &c);
    st_child_expect(&c, status, needles);
    st_child_free(&c);
}

int main(void)
{
    static const char *const async_race[] = { "race", "cuMemFreeAsync", "mt_fill", NULL };
    static const char *const free_race[] = { "race", "cuMemFree", "mt_fill", NULL };

    run(ASYNC_UNORDERED, 66, async_race);
    run(ASYNC_EVENT, 0, NULL);
    run(FREE_UNORDERED, 66, free_race);
    run(FREE_AFTER_SYNC, 0, NULL);
    return 0;
}
