/* SPDX-License-Identifier: MIT */
/*
 * event_disable_timing.c - events created with CU_EVENT_DISABLE_TIMING record, synchronise,
 * query and order streams like any event, but cuEventElapsedTime on them returns
 * CUDA_ERROR_INVALID_HANDLE; so does a timing event that was never recorded.  Invalid
 * creation flags are rejected.
 */
#include "simtest.h"

int main(void)
{
    CUevent timed, untimed, unrecorded;
    CUstream s;
    float ms = 0;

    st_setup(0);
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuEventCreate(&timed, CU_EVENT_DEFAULT));
    CHECK_CU(cuEventCreate(&untimed, CU_EVENT_DISABLE_TIMING));
    CHECK_CU(cuEventCreate(&unrecorded, CU_EVENT_DEFAULT));

    CHECK_CU(cuEventRecord(timed, s));
    CHECK_CU(cuEventRecord(untimed, s));
    CHECK_CU(cuStreamWaitEvent(NULL, untimed, 0));
    CHECK_CU(cuEventSynchronize(untimed));
    EXPECT_CU(CUDA_SUCCESS, cuEventQuery(untimed));
    CHECK_CU(cuEventSynchronize(timed));

    EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventElapsedTime(&ms, timed, untimed));
    EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventElapsedTime(&ms, untimed, timed));
    EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventElapsedTime(&ms, untimed, untimed));
    EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventElapsedTime(&ms, timed, unrecorded));
    EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventElapsedTime(&ms, unrecorded, timed));
    CHECK_CU(cuEventElapsedTime(&ms, timed, timed));

    CUevent bad;
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuEventCreate(&bad, 0x40));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuEventCreate(&bad, CU_EVENT_INTERPROCESS));

    CHECK_CU(cuEventDestroy(timed));
    CHECK_CU(cuEventDestroy(untimed));
    CHECK_CU(cuEventDestroy(unrecorded));
    CHECK_CU(cuStreamDestroy(s));
    return 0;
}
