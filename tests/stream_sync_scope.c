/* SPDX-License-Identifier: MIT */
/*
 * stream_sync_scope.c - a host wait covers what it waits for, not the work other streams
 * queued after it: with ELIXIR_SIM_EXEC=lazy (set by re-executing), a copy into pinned memory
 * on one stream, submitted after a memset on another, has not run when the host synchronised
 * the memset's stream (cuStreamSynchronize, cuEventSynchronize, cuStreamQuery, cuEventQuery
 * polled to success), so the pinned memory still holds what it held; once the copy's own
 * stream is synchronised it holds the copy's bytes.  Work queued before what is waited for
 * runs first (the executor runs work in submission order, which is always legal).  A poll of
 * a stream held by a stream memory wait that a later write on another stream releases ends:
 * the work after the wait runs once that write has.
 */
#include <string.h>

#include "simchild.h"
#include "simtest.h"

#define N (64 * 1024)

enum how { STREAM_SYNC, EVENT_SYNC, STREAM_QUERY, EVENT_QUERY, NHOW };

static const char *const names[] = { "cuStreamSynchronize", "cuEventSynchronize",
                                     "cuStreamQuery", "cuEventQuery" };

static void wait_for(int how, CUstream s, CUevent e)
{
    CUresult r;
    switch (how) {
    case STREAM_SYNC: CHECK_CU(cuStreamSynchronize(s)); break;
    case EVENT_SYNC: CHECK_CU(cuEventSynchronize(e)); break;
    case STREAM_QUERY:
        while ((r = cuStreamQuery(s)) == CUDA_ERROR_NOT_READY)
            ;
        EXPECT_CU(CUDA_SUCCESS, r);
        break;
    default:
        while ((r = cuEventQuery(e)) == CUDA_ERROR_NOT_READY)
            ;
        EXPECT_CU(CUDA_SUCCESS, r);
    }
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_SIM_EXEC=lazy", NULL };
    unsigned char *pinned;
    CUdeviceptr src, other1, other2;
    CUstream s1, s2;
    CUevent e;

    st_reexec(argv, env);
    st_setup(0);
    CHECK_CU(cuMemAllocHost((void **)&pinned, N));
    CHECK_CU(cuMemAlloc(&src, N));
    CHECK_CU(cuMemAlloc(&other1, N));
    CHECK_CU(cuMemAlloc(&other2, N));
    CHECK_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    CHECK_CU(cuMemsetD8(src, 0x5a, N));
    CHECK_CU(cuCtxSynchronize());

    for (int how = 0; how < NHOW; how++) {
        memset(pinned, 0x11, N);
        /* before: runs first, whatever the host waits for */
        CHECK_CU(cuMemsetD8Async(other2, (unsigned char)how, N, s2));
        CHECK_CU(cuMemsetD8Async(other1, 0x22, N, s1));
        CHECK_CU(cuEventRecord(e, s1));
        CHECK_CU(cuMemcpyDtoHAsync(pinned, src, N, s2));
        wait_for(how, s1, e);
        EXPECT(pinned[0] == 0x11 && pinned[N - 1] == 0x11, "%s of another stream: the copy "
               "queued after it ran (bytes 0x%02x, 0x%02x; expected 0x11)", names[how],
               pinned[0], pinned[N - 1]);
        CHECK_CU(cuStreamSynchronize(s2));
        EXPECT(pinned[0] == 0x5a && pinned[N - 1] == 0x5a, "%s, then the copy's stream: bytes "
               "0x%02x, 0x%02x, expected 0x5a", names[how], pinned[0], pinned[N - 1]);
    }

    /* s1 waits for a flag that a write on s2, submitted after, sets; the host polls s1. */
    CUdeviceptr flag;
    CHECK_CU(cuMemAlloc(&flag, 4));
    CHECK_CU(cuMemsetD32(flag, 0, 1));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuStreamWaitValue32(s1, flag, 1, CU_STREAM_WAIT_VALUE_EQ));
    CHECK_CU(cuMemsetD8Async(other1, 0x33, N, s1));
    CHECK_CU(cuStreamWriteValue32(s2, flag, 1, 0));
    CUresult r;
    while ((r = cuStreamQuery(s1)) == CUDA_ERROR_NOT_READY)
        ;
    EXPECT_CU(CUDA_SUCCESS, r);
    CHECK_CU(cuMemFree(flag));

    CHECK_CU(cuEventDestroy(e));
    CHECK_CU(cuStreamDestroy(s1));
    CHECK_CU(cuStreamDestroy(s2));
    CHECK_CU(cuMemFree(src));
    CHECK_CU(cuMemFree(other1));
    CHECK_CU(cuMemFree(other2));
    CHECK_CU(cuMemFreeHost(pinned));
    return 0;
}
