/* SPDX-License-Identifier: MIT */
/*
 * ctx_primary_reset.c - cuDevicePrimaryCtxReset, and cuDevicePrimaryCtxRelease of the last
 * reference, "destroy all allocations and reset all state on the primary context": the
 * streams and events created in it are destroyed (CUDA_ERROR_INVALID_HANDLE afterwards), its
 * cuMemAlloc and cuMemAllocHost memory is freed.  Virtual memory management memory belongs to
 * no context and stays.  The primary context itself stays the device's: retained again, its
 * handle works, with new streams and events.  Another context's resources are untouched.
 */
#include "simtest.h"

#define BIG (64u << 20)

/* Fill the primary context (current) with a stream, an event and memory; `reset` resets it;
 * check all of that is gone and the context works again once retained. */
static void check(void (*reset)(void), const char *how)
{
    CUcontext p, p2, other;
    CUstream s, os;
    CUevent e, oe;
    CUdeviceptr d, od, va;
    void *h;
    size_t gran;

    CHECK_CU(cuDevicePrimaryCtxRetain(&p, 0));
    CHECK_CU(cuCtxCreate(&other, NULL, 0, 0));
    CHECK_CU(cuStreamCreate(&os, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuEventCreate(&oe, 0));
    CHECK_CU(cuMemAlloc(&od, 4096));
    CHECK_CU(cuCtxSetCurrent(p));
    size_t before = st_free_mem();
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuEventCreate(&e, 0));
    CHECK_CU(cuMemAlloc(&d, BIG));
    CHECK_CU(cuMemAllocHost(&h, 1 << 20));
    CHECK_CU(cuMemsetD8Async(d, 1, BIG, s));
    CHECK_CU(cuEventRecord(e, s));

    CUmemGenericAllocationHandle mh;
    va = st_vmm_filled(&gran, &mh);

    reset();

    CHECK_CU(cuDevicePrimaryCtxRetain(&p2, 0));
    EXPECT(p2 == p, "%s: the primary context changed handle", how);
    CHECK_CU(cuCtxSetCurrent(p));
    EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamQuery(s));
    EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamSynchronize(s));
    EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventQuery(e));
    EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventRecord(e, NULL));
    EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuStreamDestroy(s));
    EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuEventDestroy(e));
    EXPECT(!st_pointer_known(d), "%s: cuMemAlloc memory still known", how);
    EXPECT(!st_pointer_known((CUdeviceptr)(uintptr_t)h), "%s: cuMemAllocHost memory still known",
           how);
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFree(d));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFreeHost(h));
    EXPECT(st_free_mem() >= before - gran, "%s: memory of the reset context still counted", how);

    unsigned word = 0;
    CHECK_CU(cuMemcpyDtoH(&word, va, 4));
    EXPECT(word == 0x5a5a5a5au, "%s: VMM memory lost with the reset: %#x", how, word);
    CHECK_CU(cuMemUnmap(va, gran));
    CHECK_CU(cuMemAddressFree(va, gran));
    CHECK_CU(cuMemRelease(mh));

    /* The context works again; the legacy default stream is still there. */
    CHECK_CU(cuStreamCreate(&s, 0));
    CHECK_CU(cuEventCreate(&e, 0));
    CHECK_CU(cuMemAlloc(&d, 4096));
    CHECK_CU(cuMemsetD8Async(d, 2, 4096, s));
    CHECK_CU(cuEventRecord(e, NULL));
    CHECK_CU(cuEventSynchronize(e));
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuMemFree(d));
    CHECK_CU(cuEventDestroy(e));
    CHECK_CU(cuStreamDestroy(s));

    /* The other context kept everything. */
    CHECK_CU(cuCtxSetCurrent(other));
    CHECK_CU(cuStreamQuery(os));
    CHECK_CU(cuEventRecord(oe, os));
    CHECK_CU(cuEventSynchronize(oe));
    CHECK_CU(cuMemFree(od));
    CHECK_CU(cuEventDestroy(oe));
    CHECK_CU(cuStreamDestroy(os));
    CHECK_CU(cuCtxDestroy(other));
    CHECK_CU(cuDevicePrimaryCtxRelease(0));
}

static void reset(void)
{
    CHECK_CU(cuDevicePrimaryCtxReset(0));
    CHECK_CU(cuDevicePrimaryCtxRelease(0));
}

static void release(void)
{
    CHECK_CU(cuDevicePrimaryCtxRelease(0));
}

int main(void)
{
    CHECK_CU(cuInit(0));
    check(reset, "cuDevicePrimaryCtxReset");
    check(release, "cuDevicePrimaryCtxRelease");
    return 0;
}
