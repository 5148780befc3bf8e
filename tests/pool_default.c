/* SPDX-License-Identifier: MIT */
/*
 * pool_default.c - stream-ordered allocation from the default memory pool.  The device
 * supports memory pools; cuDeviceGetDefaultMemPool returns its pool, which is also the
 * current one (cuDeviceGetMemPool); cuMemAllocAsync returns device memory of that pool at
 * once, usable by work later in the same stream, charged to the device; cuMemFreeAsync
 * gives it back when the stream reaches it.  A size of zero, a NULL output or a pointer that
 * did not come from a pool are CUDA_ERROR_INVALID_VALUE.
 */
#include "memtest.h"

#define WORDS (1 << 18)

int main(void)
{
    CUmemoryPool pool, cur, of_ptr;
    CUdeviceptr d, x, plain;
    CUstream s;
    int supported;

    st_setup(0);
    CHECK_CU(cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 0));
    EXPECT(supported == 1, "MEMORY_POOLS_SUPPORTED is %d", supported);
    CHECK_CU(cuDeviceGetDefaultMemPool(&pool, 0));
    CHECK_CU(cuDeviceGetMemPool(&cur, 0));
    EXPECT(pool != NULL && cur == pool, "default pool %p, current pool %p", (void *)pool,
           (void *)cur);
    EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuDeviceGetDefaultMemPool(&cur, 3));

    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    size_t used = mt_used();
    CHECK_CU(cuMemAllocAsync(&d, WORDS * 4, s));
    EXPECT(d != 0 && d % 256 == 0, "cuMemAllocAsync returned 0x%llx", (unsigned long long)d);
    EXPECT(mt_used() >= used + WORDS * 4, "pool memory not charged: %zu in use", mt_used());
    CHECK_CU(cuPointerGetAttribute(&of_ptr, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, d));
    EXPECT(of_ptr == pool, "allocation from pool %p, expected %p", (void *)of_ptr, (void *)pool);

    CHECK_CU(mt_fill_async(d, WORDS, 0x9u, s));
    uint32_t *h = malloc(WORDS * 4);
    CHECK_CU(cuMemcpyDtoHAsync(h, d, WORDS * 4, s));
    CHECK_CU(cuMemFreeAsync(d, s));
    CHECK_CU(cuStreamSynchronize(s));
    for (int i = 0; i < WORDS; i++)
        EXPECT(h[i] == 9, "word %d: %u", i, h[i]);
    free(h);
    EXPECT(mt_used() == used, "after the free ran: %zu in use, %zu before", mt_used(), used);

    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAllocAsync(&x, 0, s));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAllocAsync(NULL, 4096, s));
    CHECK_CU(cuMemAlloc(&plain, 4096));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFreeAsync(plain, s));
    CHECK_CU(cuMemFree(plain));

    /* The legacy default stream works too. */
    CHECK_CU(cuMemAllocAsync(&d, 4096, NULL));
    CHECK_CU(cuMemsetD32Async(d, 1, 1024, NULL));
    CHECK_CU(cuMemFreeAsync(d, NULL));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuStreamDestroy(s));
    return 0;
}
