/* SPDX-License-Identifier: MIT */
/*
 * mem_free_errors.c - cuMemFree takes only a pointer that cuMemAlloc returned: an interior
 * pointer, a pointer freed already, a host pointer or pinned host memory is
 * CUDA_ERROR_INVALID_VALUE, and such a failed call leaves the allocation intact.  No context
 * need be current: the allocation names its own (the real driver, 580, frees it then too).
 */
#include "memtest.h"

int main(void)
{
    CUdeviceptr d, e, f, base;
    void *pinned;
    int local;
    size_t size;

    CUcontext ctx = st_setup(0);
    CHECK_CU(cuMemAlloc(&d, 1 << 20));
    CHECK_CU(cuMemAlloc(&e, 4096));
    CHECK_CU(cuMemsetD32(d, 0x12345678u, (1 << 20) / 4));
    size_t used = mt_used();

    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFree(d + 256));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFree(d + (1 << 20) - 4));
    EXPECT(mt_used() == used, "a refused free changed the memory in use");
    mt_expect_words(d, (1 << 20) / 4, 0x12345678u);

    CHECK_CU(cuMemAllocHost(&pinned, 4096));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFree((CUdeviceptr)(uintptr_t)pinned));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFree((CUdeviceptr)(uintptr_t)&local));
    CHECK_CU(cuMemFreeHost(pinned));

    CHECK_CU(cuMemFree(d));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFree(d));
    /* The other allocation is untouched by all this. */
    CHECK_CU(cuMemsetD8(e, 1, 4096));
    CHECK_CU(cuMemFree(e));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFree(e));

    CHECK_CU(cuMemAlloc(&f, 4096));
    CHECK_CU(cuCtxSetCurrent(NULL));
    CHECK_CU(cuMemFree(f));
    CHECK_CU(cuCtxSetCurrent(ctx));
    EXPECT_CU(CUDA_ERROR_NOT_FOUND, cuMemGetAddressRange(&base, &size, f));
    CHECK_CU(cuCtxSynchronize());
    return 0;
}
