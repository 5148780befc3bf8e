/* SPDX-License-Identifier: MIT */
/*
 * stream_query.c - cuStreamQuery reports CUDA_ERROR_NOT_READY while work submitted to the
 * stream has not completed and CUDA_SUCCESS once it has (an empty stream is complete).
 *
 * The test re-executes itself with ELIXIR_SIM_EXEC=lazy, where queued work runs only when the
 * host waits, so "not yet run" is deterministic for the first query after a submission (a query
 * that finds work pending lets it start, so each batch is queried once).
 */
#include <time.h>

#include "simchild.h"
#include "simtest.h"

/* Query until the stream reports completion; the work must complete without a sync. */
static void query_until_done(CUstream s)
{
    struct timespec ms = { 0, 1000000 };
    CUresult r = CUDA_ERROR_NOT_READY;
    for (int i = 0; i < 10000 && r == CUDA_ERROR_NOT_READY; i++) {
        r = cuStreamQuery(s);
        if (r == CUDA_ERROR_NOT_READY)
            nanosleep(&ms, NULL);
    }
    EXPECT_CU(CUDA_SUCCESS, r);
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_SIM_EXEC=lazy", NULL };
    CUstream s;
    CUdeviceptr d;
    unsigned v;

    st_reexec(argv, env);
    st_setup(0);
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&d, 1 << 20));
    EXPECT_CU(CUDA_SUCCESS, cuStreamQuery(s));
    EXPECT_CU(CUDA_SUCCESS, cuStreamQuery(NULL));

    CHECK_CU(cuMemsetD32Async(d, 7, (1 << 20) / 4, s));
    EXPECT_CU(CUDA_ERROR_NOT_READY, cuStreamQuery(s));
    EXPECT_CU(CUDA_SUCCESS, cuStreamQuery(NULL));   /* a non-blocking stream's work is not its */
    CHECK_CU(cuStreamSynchronize(s));
    EXPECT_CU(CUDA_SUCCESS, cuStreamQuery(s));

    CHECK_CU(cuMemsetD32Async(d, 9, (1 << 20) / 4, s));
    EXPECT_CU(CUDA_ERROR_NOT_READY, cuStreamQuery(s));
    query_until_done(s);
    CHECK_CU(cuMemcpyDtoH(&v, d + 4096, sizeof(v)));
    EXPECT(v == 9, "after the queried memset: expected 9, got %u", v);

    /* The legacy stream too. */
    CHECK_CU(cuMemsetD32Async(d, 11, 16, NULL));
    EXPECT_CU(CUDA_ERROR_NOT_READY, cuStreamQuery(NULL));
    CHECK_CU(cuCtxSynchronize());
    EXPECT_CU(CUDA_SUCCESS, cuStreamQuery(NULL));
    CHECK_CU(cuMemsetD32Async(d, 12, 16, NULL));
    EXPECT_CU(CUDA_ERROR_NOT_READY, cuStreamQuery(CU_STREAM_LEGACY));
    CHECK_CU(cuCtxSynchronize());
    EXPECT_CU(CUDA_SUCCESS, cuStreamQuery(CU_STREAM_LEGACY));

    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuMemFree(d));
    return 0;
}
