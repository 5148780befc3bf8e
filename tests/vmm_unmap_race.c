/* SPDX-License-Identifier: MIT */
/*
 * vmm_unmap_race.c - unmapping memory that unfinished work may still use is a bug the
 * simulator always reports.  A cuMemUnmap the host issues while a kernel that used the range
 * is not known to have finished (it ran, but the host never synchronised with it) is a race
 * naming cuMemUnmap: with ELIXIR_SIM_RACECHECK=fail the process exits with status 66.  If the
 * kernel has not even run yet, it faults with CUDA_ERROR_ILLEGAL_ADDRESS when it does.  Waiting
 * for the kernel first - by event or by stream synchronisation - makes the same unmap correct.
 * Each case runs in a child process.
 */
#include <time.h>

#include "memtest.h"
#include "simchild.h"

enum { NO_SYNC, EVENT_SYNC, STREAM_SYNC, NOT_RUN_YET };

static void unmap_after_kernel(void *arg)
{
    int how = *(int *)arg;
    CUstream s;
    CUevent e;

    st_setup(0);
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    CUdeviceptr va = mt_reserve(MT_GRAN);
    CUmemGenericAllocationHandle h = mt_create(MT_GRAN, CU_MEM_LOCATION_TYPE_DEVICE, 0);
    mt_map_rw(va, MT_GRAN, h, 0);
    CHECK_CU(mt_fill_async(va, MT_GRAN / 4, 1, s));
    CHECK_CU(cuEventRecord(e, s));
    if (how == NO_SYNC) {
        /* Wait until the kernel has run, through a channel CUDA knows nothing about. */
        struct timespec ms = { 0, 1000000 };
        for (int i = 0; i < 20000 && atomic_load(&mt_fill_runs) == 0; i++)
            nanosleep(&ms, NULL);
        EXPECT(atomic_load(&mt_fill_runs) == 1, "the kernel did not run");
    } else if (how == EVENT_SYNC) {
        CHECK_CU(cuEventSynchronize(e));
    } else if (how == STREAM_SYNC) {
        CHECK_CU(cuStreamSynchronize(s));
    }
    CHECK_CU(cuMemUnmap(va, MT_GRAN));
    if (how == NOT_RUN_YET)
        EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuStreamSynchronize(s));
    else
        CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuMemRelease(h));
}

static void run(int how, const char *exec, int status, const char *const *needles)
{
    const char *const env[] = { "ELIXIR_SIM_RACECHECK=fail", exec, NULL };
    st_child_t c;
    st_run_child(unmap_after_kernel, &how, env, &c);
    st_child_expect(&c, status, needles);
    st_child_free(&c);
}

int main(void)
{
    static const char *const race[] = { "race", "cuMemUnmap", "mt_fill", NULL };
    static const char *const fault[] = { "illegal address", "mt_fill", NULL };

    run(NO_SYNC, "ELIXIR_SIM_EXEC=async", 66, race);
    run(EVENT_SYNC, "ELIXIR_SIM_EXEC=async", 0, NULL);
    run(STREAM_SYNC, "ELIXIR_SIM_EXEC=async", 0, NULL);
    run(EVENT_SYNC, "ELIXIR_SIM_EXEC=lazy", 0, NULL);
    /* Lazy execution: nothing runs before the host waits, so the kernel meets no memory. */
    run(NOT_RUN_YET, "ELIXIR_SIM_EXEC=lazy", 0, fault);
    return 0;
}
