/* SPDX-License-Identifier: MIT */
/*
 * stream_memop_errors.c - what the stream memory operations refuse, and where they fault.
 *
 * CUDA_ERROR_INVALID_VALUE for a NULL or misaligned address (4 bytes for the 32-bit forms, 8
 * for the 64-bit ones), an address the driver does not know (pageable host memory, freed
 * memory) and unknown flags; CUDA_ERROR_NOT_SUPPORTED for what the device attributes deny:
 * CU_STREAM_WAIT_VALUE_FLUSH (CAN_FLUSH_REMOTE_WRITES is 0), the v1 entry points
 * (CAN_USE_STREAM_MEM_OPS_V1 is 0) and CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER (documented as
 * not supported by the v2 API); CUDA_ERROR_INVALID_HANDLE for a destroyed stream.  On a
 * capturing stream a memory operation is CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and the
 * capture is invalidated.  An address in a reserved but unmapped range is accepted and the
 * operation faults when it runs (CUDA_ERROR_ILLEGAL_ADDRESS), in a child process.  A process
 * that exits with work held back by a wait nothing will satisfy exits (with a warning), as
 * a process does on a GPU, rather than hang.
 */
#include <stdlib.h>

#include "simchild.h"
#include "simtest.h"

typedef CUresult (*value32_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

static void fault_unmapped(void *unused)
{
    CUdeviceptr va;
    st_setup(0);
    CHECK_CU(cuMemAddressReserve(&va, 2 << 20, 0, 0, 0));
    CHECK_CU(cuStreamWriteValue32(NULL, va, 1, 0));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
}

/* A wait nothing will ever satisfy, and the process exits: it must not hang there. */
static void blocked_at_exit(void *unused)
{
    CUdeviceptr d;
    CUstream s;
    st_setup(0);
    CHECK_CU(cuMemAlloc(&d, 64));
    CHECK_CU(cuMemsetD32(d, 0, 16));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuStreamWaitValue32(s, d, 1, CU_STREAM_WAIT_VALUE_EQ));
    CHECK_CU(cuMemsetD32Async(d + 4, 1, 1, s));
    EXPECT_CU(CUDA_ERROR_NOT_READY, cuStreamQuery(s));
}

int main(void)
{
    if (!st_simulated()) {  /* what is checked here is the simulator's (see sim/memop.c) */
        printf("skip: checks the simulator's own faults, not a GPU driver's\n");
        return TEST_SKIP;
    }
    static const char *const faulted[] = { "illegal address", "cuStreamWriteValue", NULL };
    static const char *const dropped[] = { "blocked behind stream memory waits", NULL };
    st_child_t c;
    st_run_child(fault_unmapped, NULL, NULL, &c);
    st_child_expect(&c, 0, faulted);
    st_child_free(&c);
    st_run_child(blocked_at_exit, NULL, NULL, &c);
    st_child_expect(&c, 0, dropped);
    st_child_free(&c);

    CUstream s, gone, cap;
    CUdeviceptr d, freed;
    CUgraph g;
    int v = -1;

    st_setup(0);
    CHECK_CU(cuMemAlloc(&d, 64));
    CHECK_CU(cuMemAlloc(&freed, 64));
    CHECK_CU(cuMemFree(freed));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    unsigned *pageable = malloc(64);

    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamWaitValue32(s, 0, 0, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamWriteValue32(s, 0, 0, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamWaitValue32(s, d + 2, 0, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamWriteValue32(s, d + 1, 0, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamWaitValue64(s, d + 4, 0, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamWriteValue64(s, d + 4, 0, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamWriteValue32(s, (CUdeviceptr)pageable, 0, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamWaitValue32(s, freed, 0, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamWaitValue32(s, d, 0, 4));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamWaitValue64(s, d, 0, 0x10));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamWriteValue32(s, d, 0, 2));
    EXPECT_CU(CUDA_ERROR_NOT_SUPPORTED,
              cuStreamWaitValue32(s, d, 0, CU_STREAM_WAIT_VALUE_EQ | CU_STREAM_WAIT_VALUE_FLUSH));
    EXPECT_CU(CUDA_ERROR_NOT_SUPPORTED,
              cuStreamWriteValue64(s, d, 0, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER));
    CHECK_CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES, 0));
    EXPECT(v == 0, "CAN_FLUSH_REMOTE_WRITES: expected 0, got %d", v);
    CHECK_CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1, 0));
    EXPECT(v == 0, "CAN_USE_STREAM_MEM_OPS_V1: expected 0, got %d", v);
    value32_fn v1 = (value32_fn)dlsym(RTLD_DEFAULT, "cuStreamWriteValue32");
    EXPECT(v1 != NULL, "cuStreamWriteValue32 (v1) is exported");
    EXPECT_CU(CUDA_ERROR_NOT_SUPPORTED, v1(s, d, 1, 0));

    CHECK_CU(cuStreamCreate(&cap, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&gone, 0));
    CHECK_CU(cuStreamDestroy(gone));
    EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamWriteValue32(gone, d, 0, 0));

    CHECK_CU(cuStreamBeginCapture(cap, CU_STREAM_CAPTURE_MODE_RELAXED));
    EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuStreamWriteValue32(cap, d, 1, 0));
    EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(cap, &g));

    /* Nothing refused was enqueued: the word is still 0 after the valid calls' sync. */
    unsigned got = 1;
    CHECK_CU(cuMemsetD32(d, 0, 16));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuStreamWriteValue32(s, d + 4, 8, 0));
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuMemcpyDtoH(&got, d, 4));
    EXPECT(got == 0, "a refused write landed: %u", got);
    CHECK_CU(cuMemcpyDtoH(&got, d + 4, 4));
    EXPECT(got == 8, "the accepted write: expected 8, got %u", got);

    free(pageable);
    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuStreamDestroy(cap));
    CHECK_CU(cuMemFree(d));
    return 0;
}
