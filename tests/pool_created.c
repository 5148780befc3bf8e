/* SPDX-License-Identifier: MIT */
/*
 * pool_created.c - a pool made with cuMemPoolCreate (pinned, located on device 0):
 * cuMemAllocFromPoolAsync allocates from it (the MEMPOOL_HANDLE pointer attribute names it),
 * its usage attributes count that allocation and not the default pool's, the memory is
 * charged to its device.  cuDeviceSetMemPool makes it the pool cuMemAllocAsync uses.  Bad
 * properties, a NULL pool and destroying the default pool are CUDA_ERROR_INVALID_VALUE.
 */
#include "memtest.h"

static cuuint64_t used_of(CUmemoryPool p)
{
    cuuint64_t v = 99;
    CHECK_CU(cuMemPoolGetAttribute(p, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v));
    return v;
}

int main(void)
{
    CUmemPoolProps props;
    CUmemoryPool pool, def, bad, of_ptr;
    CUdeviceptr a, b, x;
    CUstream s;

    st_setup(0);
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    memset(&props, 0, sizeof(props));
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    CHECK_CU(cuMemPoolCreate(&pool, &props));
    CHECK_CU(cuDeviceGetDefaultMemPool(&def, 0));
    EXPECT(pool != def, "a created pool is the default pool");

    size_t used = mt_used();
    CHECK_CU(cuMemAllocFromPoolAsync(&a, 4 * MT_MIB, pool, s));
    CHECK_CU(cuPointerGetAttribute(&of_ptr, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, a));
    EXPECT(of_ptr == pool, "allocation of pool %p says pool %p", (void *)pool, (void *)of_ptr);
    EXPECT(used_of(pool) == 4 * MT_MIB, "pool in use: %llu", (unsigned long long)used_of(pool));
    EXPECT(used_of(def) == 0, "default pool in use: %llu", (unsigned long long)used_of(def));
    EXPECT(mt_used() == used + 4 * MT_MIB, "device memory in use: %zu", mt_used());
    CHECK_CU(cuMemsetD32Async(a, 3, MT_MIB, s));
    CHECK_CU(cuStreamSynchronize(s));
    mt_expect_words(a, MT_MIB, 3);

    /* The created pool as the device's current pool. */
    CHECK_CU(cuDeviceSetMemPool(0, pool));
    CHECK_CU(cuMemAllocAsync(&b, MT_MIB, s));
    CHECK_CU(cuPointerGetAttribute(&of_ptr, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, b));
    EXPECT(of_ptr == pool, "cuMemAllocAsync used pool %p, the current pool is %p",
           (void *)of_ptr, (void *)pool);
    CHECK_CU(cuDeviceSetMemPool(0, def));

    CHECK_CU(cuMemFreeAsync(a, s));
    CHECK_CU(cuMemFreeAsync(b, s));
    CHECK_CU(cuStreamSynchronize(s));
    EXPECT(used_of(pool) == 0, "pool in use after the frees: %llu",
           (unsigned long long)used_of(pool));
    EXPECT(mt_used() == used, "device memory in use after the frees: %zu", mt_used());

    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAllocFromPoolAsync(&x, 4096, NULL, s));
    props.allocType = CU_MEM_ALLOCATION_TYPE_INVALID;
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemPoolCreate(&bad, &props));
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.id = 9;
    EXPECT(cuMemPoolCreate(&bad, &props) != CUDA_SUCCESS, "a pool on device 9");
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemPoolDestroy(def));
    CHECK_CU(cuMemPoolDestroy(pool));
    CHECK_CU(cuStreamDestroy(s));
    return 0;
}
