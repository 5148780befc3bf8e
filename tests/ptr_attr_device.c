/* SPDX-License-Identifier: MIT */
/*
 * ptr_attr_device.c - cuPointerGetAttribute(s) on cuMemAlloc memory, at its base and inside
 * it: device memory of the allocating context and its device, the pointer itself as device
 * pointer and no host pointer (CUDA_ERROR_INVALID_VALUE alone, NULL among several), the
 * allocation as range, mapped, not managed, no pool, and a buffer ID unique to the allocation
 * and never reused after a free.  cuPointerGetAttributes gives the same values in one call.
 */
#include "memtest.h"

static uint64_t attr_u64(CUpointer_attribute a, CUdeviceptr p)
{
    uint64_t v = 0;
    CHECK_CU(cuPointerGetAttribute(&v, a, p));
    return v;
}

static unsigned attr_u32(CUpointer_attribute a, CUdeviceptr p)
{
    unsigned v = 0;
    CHECK_CU(cuPointerGetAttribute(&v, a, p));
    return v;
}

static void check_one(CUcontext ctx, CUdeviceptr d, CUdeviceptr p, size_t bytes)
{
    CUcontext c = NULL;
    void *host = (void *)1;
    CHECK_CU(cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, p));
    EXPECT(c == ctx, "context %p, expected %p", (void *)c, (void *)ctx);
    EXPECT(attr_u32(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) == CU_MEMORYTYPE_DEVICE,
           "memory type %u", attr_u32(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p));
    EXPECT(attr_u64(CU_POINTER_ATTRIBUTE_DEVICE_POINTER, p) == p, "device pointer");
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
              cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, p));
    EXPECT((int)attr_u32(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p) == 0, "device ordinal %d",
           (int)attr_u32(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
    EXPECT(attr_u32(CU_POINTER_ATTRIBUTE_IS_MANAGED, p) == 0, "managed");
    EXPECT(attr_u32(CU_POINTER_ATTRIBUTE_MAPPED, p) == 1, "not mapped");
    EXPECT(attr_u64(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p) == d, "range start 0x%llx",
           (unsigned long long)attr_u64(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p));
    EXPECT(attr_u64(CU_POINTER_ATTRIBUTE_RANGE_SIZE, p) >= bytes, "range size %llu",
           (unsigned long long)attr_u64(CU_POINTER_ATTRIBUTE_RANGE_SIZE, p));
    EXPECT(attr_u64(CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p) == 0, "mempool handle");
    EXPECT(attr_u64(CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, p) ==
           CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE, "access flags");
}

int main(void)
{
    CUdeviceptr a, b;
    CUcontext ctx = st_setup(0);

    CHECK_CU(cuMemAlloc(&a, 100000));
    CHECK_CU(cuMemAlloc(&b, 4096));
    check_one(ctx, a, a, 100000);
    check_one(ctx, a, a + 4097, 100000);
    check_one(ctx, a, a + 99999, 100000);
    check_one(ctx, b, b, 4096);

    uint64_t ida = attr_u64(CU_POINTER_ATTRIBUTE_BUFFER_ID, a);
    uint64_t idb = attr_u64(CU_POINTER_ATTRIBUTE_BUFFER_ID, b);
    EXPECT(ida != idb, "two allocations share buffer ID %llu", (unsigned long long)ida);
    EXPECT(attr_u64(CU_POINTER_ATTRIBUTE_BUFFER_ID, a + 500) == ida, "buffer ID inside");

    /* All at once: the same values, and NULL for the host pointer. */
    CUpointer_attribute attrs[] = { CU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                    CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                    CU_POINTER_ATTRIBUTE_HOST_POINTER,
                                    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                    CU_POINTER_ATTRIBUTE_BUFFER_ID };
    CUcontext c = NULL;
    unsigned type = 0;
    CUdeviceptr dp = 0;
    void *hp = (void *)1;
    int ordinal = -1;
    unsigned long long id = 0;
    void *data[] = { &c, &type, &dp, &hp, &ordinal, &id };
    CHECK_CU(cuPointerGetAttributes(6, attrs, data, a + 8));
    EXPECT(c == ctx && type == CU_MEMORYTYPE_DEVICE && dp == a + 8 && hp == NULL &&
           ordinal == 0 && id == ida,
           "cuPointerGetAttributes: ctx %p type %u dptr 0x%llx host %p ordinal %d id %llu",
           (void *)c, type, (unsigned long long)dp, hp, ordinal, id);

    /* A new allocation never gets the ID of a freed one. */
    CHECK_CU(cuMemFree(a));
    CHECK_CU(cuMemAlloc(&a, 100000));
    uint64_t again = attr_u64(CU_POINTER_ATTRIBUTE_BUFFER_ID, a);
    EXPECT(again != ida && again != idb, "buffer ID %llu reused", (unsigned long long)again);
    CHECK_CU(cuMemFree(a));
    CHECK_CU(cuMemFree(b));
    return 0;
}
