/* SPDX-License-Identifier: MIT */
/*
 * mem_alloc_align.c - cuMemAlloc returns memory "suitably aligned for any kind of variable":
 * at least 256-byte aligned whatever the size, each allocation disjoint from the others and
 * usable over its whole length.  A size of zero is CUDA_ERROR_INVALID_VALUE, a call before
 * cuInit is CUDA_ERROR_NOT_INITIALIZED and one without a current context
 * CUDA_ERROR_INVALID_CONTEXT.
 */
#include "memtest.h"

static const size_t sizes[] = { 1, 3, 255, 256, 257, 1000, 4095, 4096, 4097, 65537, 1 << 20 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

int main(void)
{
    CUdeviceptr d[NSIZES], x;
    CUcontext ctx;
    CUdevice dev;

    EXPECT_CU(CUDA_ERROR_NOT_INITIALIZED, cuMemAlloc(&x, 256));
    CHECK_CU(cuInit(0));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuMemAlloc(&x, 256));
    CHECK_CU(cuDeviceGet(&dev, 0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK_CU(cuCtxSetCurrent(ctx));

    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAlloc(&x, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAlloc(NULL, 256));

    for (size_t i = 0; i < NSIZES; i++) {
        CHECK_CU(cuMemAlloc(&d[i], sizes[i]));
        EXPECT(d[i] % 256 == 0, "cuMemAlloc(%zu) returned 0x%llx, not 256-byte aligned",
               sizes[i], (unsigned long long)d[i]);
        for (size_t j = 0; j < i; j++)
            EXPECT(d[i] + sizes[i] <= d[j] || d[j] + sizes[j] <= d[i],
                   "allocations of %zu and %zu bytes overlap", sizes[i], sizes[j]);
    }
    /* Every byte of every allocation can be written and read back. */
    for (size_t i = 0; i < NSIZES; i++)
        CHECK_CU(cuMemsetD8(d[i], (unsigned char)(i + 1), sizes[i]));
    for (size_t i = 0; i < NSIZES; i++) {
        unsigned char *h = malloc(sizes[i]);
        EXPECT(h != NULL, "out of host memory");
        CHECK_CU(cuMemcpyDtoH(h, d[i], sizes[i]));
        for (size_t k = 0; k < sizes[i]; k++)
            EXPECT(h[k] == (unsigned char)(i + 1), "byte %zu of the %zu-byte allocation: %u", k,
                   sizes[i], h[k]);
        free(h);
    }
    for (size_t i = 0; i < NSIZES; i++)
        CHECK_CU(cuMemFree(d[i]));
    CHECK_CU(cuDevicePrimaryCtxRelease(dev));
    return 0;
}
