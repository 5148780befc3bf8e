/* SPDX-License-Identifier: MIT */
/*
 * event_query.c - cuEventQuery and cuEventElapsedTime before and after completion.
 *
 * An event never recorded is complete (CUDA_SUCCESS).  Once recorded behind work that has not
 * run, cuEventQuery and cuEventElapsedTime return CUDA_ERROR_NOT_READY; after
 * cuEventSynchronize both succeed.  The test re-executes itself with ELIXIR_SIM_EXEC=lazy so
 * that queued work deterministically waits for the host.
 */
#include "simchild.h"
#include "simtest.h"

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_SIM_EXEC=lazy", NULL };
    CUevent a, b;
    CUstream s;
    CUdeviceptr d;
    float ms;

    st_reexec(argv, env);
    st_setup(0);
    CHECK_CU(cuMemAlloc(&d, 1 << 20));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuEventCreate(&a, CU_EVENT_DEFAULT));
    CHECK_CU(cuEventCreate(&b, CU_EVENT_DEFAULT));
    EXPECT_CU(CUDA_SUCCESS, cuEventQuery(a));

    /* (A query that finds work pending lets the lazy executor start, so each batch of work
     * is queried once.) */
    CHECK_CU(cuEventRecord(a, s));
    CHECK_CU(cuMemsetD8Async(d, 1, 1 << 20, s));
    CHECK_CU(cuEventRecord(b, s));
    EXPECT_CU(CUDA_ERROR_NOT_READY, cuEventElapsedTime(&ms, a, b));
    CHECK_CU(cuEventSynchronize(b));
    CHECK_CU(cuMemsetD8Async(d, 1, 1 << 20, s));
    CHECK_CU(cuEventRecord(b, s));
    EXPECT_CU(CUDA_ERROR_NOT_READY, cuEventQuery(b));
    CHECK_CU(cuEventSynchronize(b));
    EXPECT_CU(CUDA_SUCCESS, cuEventQuery(a));
    EXPECT_CU(CUDA_SUCCESS, cuEventQuery(b));
    CHECK_CU(cuEventElapsedTime(&ms, a, b));
    /* Two 1 MiB memsets at 2000 GB/s, plus per-call host time. */
    EXPECT(ms > 0.001f && ms < 0.02f, "two memsets of 1 MiB: expected about 0.001 ms, got %f",
           ms);

    /* Re-recording makes the event incomplete again until the new record runs. */
    CHECK_CU(cuMemsetD8Async(d, 2, 1 << 20, s));
    CHECK_CU(cuEventRecord(a, s));
    EXPECT_CU(CUDA_ERROR_NOT_READY, cuEventQuery(a));
    CHECK_CU(cuStreamSynchronize(s));
    EXPECT_CU(CUDA_SUCCESS, cuEventQuery(a));

    CHECK_CU(cuEventDestroy(a));
    CHECK_CU(cuEventDestroy(b));
    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuMemFree(d));
    return 0;
}
