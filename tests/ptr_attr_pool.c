/* SPDX-License-Identifier: MIT */
/*
 * ptr_attr_pool.c - pointer attributes of stream-ordered allocations: device memory of the
 * pool's device, mapped, the allocation as range, and MEMPOOL_HANDLE naming the pool ("the
 * mempool handle for the allocation if it was allocated from a mempool, otherwise NULL" -
 * NULL for cuMemAlloc memory).  Once the free has run the address is unknown again.
 */
#include "memtest.h"

int main(void)
{
    CUmemoryPool pool, got;
    CUdeviceptr d, plain;
    CUstream s;
    unsigned type;
    int ordinal, mapped;
    CUdeviceptr start;

    st_setup(0);
    CHECK_CU(cuDeviceGetDefaultMemPool(&pool, 0));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAllocAsync(&d, 3 * MT_MIB, s));
    CHECK_CU(cuStreamSynchronize(s));

    CUpointer_attribute attrs[] = { CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                    CU_POINTER_ATTRIBUTE_MAPPED,
                                    CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                    CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE };
    void *data[] = { &type, &ordinal, &mapped, &start, &got };
    CHECK_CU(cuPointerGetAttributes(5, attrs, data, d + MT_MIB));
    EXPECT(type == CU_MEMORYTYPE_DEVICE && ordinal == 0 && mapped == 1 && start == d &&
           got == pool, "pool allocation: type %u ordinal %d mapped %d start 0x%llx pool %p",
           type, ordinal, mapped, (unsigned long long)start, (void *)got);

    CHECK_CU(cuMemAlloc(&plain, 4096));
    CHECK_CU(cuPointerGetAttribute(&got, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, plain));
    EXPECT(got == NULL, "cuMemAlloc memory claims pool %p", (void *)got);

    CHECK_CU(cuMemFreeAsync(d, s));
    CHECK_CU(cuStreamSynchronize(s));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
              cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d));
    CHECK_CU(cuMemFree(plain));
    CHECK_CU(cuStreamDestroy(s));
    return 0;
}
