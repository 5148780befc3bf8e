/* SPDX-License-Identifier: MIT */
/*
 * race_host_sync.c - host synchronisation orders streams for the race checker: a write on one
 * non-blocking stream and a later write on another are a race unless the host waited for the
 * first in between - with cuStreamSynchronize, cuEventSynchronize, cuCtxSynchronize, or a
 * cuStreamQuery/cuEventQuery that returned CUDA_SUCCESS (which the driver documents as
 * equivalent to synchronising).  Each program runs in a child process under
 * ELIXIR_SIM_RACECHECK=fail.
 */
#include <string.h>

#include "simchild.h"
#include "simtest.h"

enum how { NONE, STREAM_SYNC, EVENT_SYNC, CTX_SYNC, STREAM_QUERY, EVENT_QUERY, NHOW };

static const char *const names[] = { "no synchronisation", "cuStreamSynchronize",
                                     "cuEventSynchronize", "cuCtxSynchronize", "cuStreamQuery",
                                     "cuEventQuery" };

static void program(void *arg)
{
    int how = *(const int *)arg;
    CUstream s1, s2;
    CUevent ev;
    CUdeviceptr d;
    CUresult r;

    st_setup(0);
    CHECK_CU(cuMemAlloc(&d, 4096));
    CHECK_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    CHECK_CU(cuMemsetD32Async(d, 1, 1024, s1));
    CHECK_CU(cuEventRecord(ev, s1));
    if (how == STREAM_SYNC)
        CHECK_CU(cuStreamSynchronize(s1));
    else if (how == EVENT_SYNC)
        CHECK_CU(cuEventSynchronize(ev));
    else if (how == CTX_SYNC)
        CHECK_CU(cuCtxSynchronize());
    else if (how == STREAM_QUERY)
        while ((r = cuStreamQuery(s1)) == CUDA_ERROR_NOT_READY)
            ;
    else if (how == EVENT_QUERY)
        while ((r = cuEventQuery(ev)) == CUDA_ERROR_NOT_READY)
            ;
    if (how == STREAM_QUERY || how == EVENT_QUERY)
        EXPECT_CU(CUDA_SUCCESS, r);
    CHECK_CU(cuMemsetD32Async(d, 2, 1024, s2));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuEventDestroy(ev));
    CHECK_CU(cuStreamDestroy(s1));
    CHECK_CU(cuStreamDestroy(s2));
    CHECK_CU(cuMemFree(d));
}

int main(void)
{
    static const char *const env[] = { "ELIXIR_SIM_RACECHECK=fail", NULL };
    static const char *const racy[] = { "race:", "memset", NULL };
    st_child_t c;

    for (int how = NONE; how < NHOW; how++) {
        st_run_child(program, &how, env, &c);
        if (how == NONE) {
            st_child_expect(&c, 66, racy);
        } else {
            st_child_expect(&c, 0, NULL);
            EXPECT(!strstr(c.err, "race"), "%s: expected no race report, got:\n%s", names[how],
                   c.err);
        }
        st_child_free(&c);
    }
    return 0;
}
