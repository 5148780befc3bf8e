/* SPDX-License-Identifier: MIT */
/*
 * ptr_attr_no_context.c - CU_POINTER_ATTRIBUTE_DEVICE_POINTER is the address "through which
 * ptr may be accessed by kernels running in the current CUcontext", and "if there is no
 * current CUcontext then CUDA_ERROR_INVALID_CONTEXT is returned" (cuda.h): so it is for
 * cuMemAlloc memory and for pinned host memory, while the attributes that describe the
 * allocation itself (its memory type, device ordinal and context) are still answered.  With
 * the context current again the device pointer is the address itself.
 */
#include "memtest.h"

int main(void)
{
    CUcontext ctx = st_setup(0), popped, c = NULL;
    CUdeviceptr d, dp = 1;
    void *h;
    unsigned type = 0;
    int ordinal = -1;

    CHECK_CU(cuMemAlloc(&d, 4096));
    CHECK_CU(cuMemHostAlloc(&h, 4096, 0));
    CHECK_CU(cuCtxPopCurrent(&popped));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT,
              cuPointerGetAttribute(&dp, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, d));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT,
              cuPointerGetAttribute(&dp, CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                    (CUdeviceptr)(uintptr_t)h));
    EXPECT(dp == 1, "the device pointer was written: 0x%llx", (unsigned long long)dp);
    CHECK_CU(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d));
    CHECK_CU(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, d));
    CHECK_CU(cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, d));
    EXPECT(type == CU_MEMORYTYPE_DEVICE && ordinal == 0 && c == ctx,
           "with no context current: type %u, ordinal %d, context %p (expected %p)", type,
           ordinal, (void *)c, (void *)ctx);

    CHECK_CU(cuCtxPushCurrent(ctx));
    CHECK_CU(cuPointerGetAttribute(&dp, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, d + 8));
    EXPECT(dp == d + 8, "device pointer 0x%llx, expected 0x%llx", (unsigned long long)dp,
           (unsigned long long)(d + 8));
    CHECK_CU(cuMemFreeHost(h));
    CHECK_CU(cuMemFree(d));
    return 0;
}
