/* SPDX-License-Identifier: MIT */
/*
 * pool_attributes.c - memory pool attributes of the default pool.  USED_MEM_CURRENT follows
 * the memory in use by the application: it grows with each allocation and drops once a free
 * has run (checked after synchronising with its stream); USED_MEM_HIGH keeps the peak until it
 * is reset, which is only allowed to zero.  The reuse policies are enabled by default and settable; the
 * release threshold defaults to 0 and is settable.  Unknown attributes are
 * CUDA_ERROR_INVALID_VALUE.
 */
#include "memtest.h"

static cuuint64_t get64(CUmemoryPool p, CUmemPool_attribute a)
{
    cuuint64_t v = 99;
    CHECK_CU(cuMemPoolGetAttribute(p, a, &v));
    return v;
}

int main(void)
{
    static const CUmemPool_attribute reuse[] = {
        CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC,
        CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES };
    CUmemoryPool pool;
    CUdeviceptr a, b;
    CUstream s;
    int on;

    st_setup(0);
    CHECK_CU(cuDeviceGetDefaultMemPool(&pool, 0));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < 3; i++) {
        CHECK_CU(cuMemPoolGetAttribute(pool, reuse[i], &on));
        EXPECT(on == 1, "reuse attribute %d defaults to %d", (int)reuse[i], on);
        on = 0;
        CHECK_CU(cuMemPoolSetAttribute(pool, reuse[i], &on));
        CHECK_CU(cuMemPoolGetAttribute(pool, reuse[i], &on));
        EXPECT(on == 0, "reuse attribute %d did not switch off", (int)reuse[i]);
    }
    EXPECT(get64(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) == 0, "release threshold default");
    cuuint64_t v = 64 * MT_MIB;
    CHECK_CU(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v));
    EXPECT(get64(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) == 64 * MT_MIB, "release threshold");

    EXPECT(get64(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 0, "in use before allocating");
    CHECK_CU(cuMemAllocAsync(&a, 8 * MT_MIB, s));
    CHECK_CU(cuMemAllocAsync(&b, 2 * MT_MIB, s));
    EXPECT(get64(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 10 * MT_MIB, "in use: %llu",
           (unsigned long long)get64(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT));
    CHECK_CU(cuMemFreeAsync(a, s));
    CHECK_CU(cuStreamSynchronize(s));
    EXPECT(get64(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 2 * MT_MIB, "after a free: %llu",
           (unsigned long long)get64(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT));
    EXPECT(get64(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH) == 10 * MT_MIB, "high watermark %llu",
           (unsigned long long)get64(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH));
    EXPECT(get64(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) >= 2 * MT_MIB, "reserved memory");

    v = 5;
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
              cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &v));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
              cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v));
    CHECK_CU(cuMemFreeAsync(b, s));
    CHECK_CU(cuStreamSynchronize(s));
    v = 0;
    CHECK_CU(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &v));
    EXPECT(get64(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH) == 0, "high watermark after reset: %llu",
           (unsigned long long)get64(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH));
    EXPECT(get64(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 0, "in use at the end");
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
              cuMemPoolGetAttribute(pool, (CUmemPool_attribute)99, &v));
    CHECK_CU(cuStreamDestroy(s));
    return 0;
}
