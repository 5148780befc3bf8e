/* SPDX-License-Identifier: MIT */
/*
 * ptr_attr_host.c - cuPointerGetAttribute(s) on pinned host memory (cuMemHostAlloc) and on
 * registered memory (cuMemHostRegister): host memory of the allocating context, host and
 * device pointer both equal to the address (unified addressing), the device it was allocated
 * against, the allocation as range.  Once freed or unregistered the address is unknown again.
 */
#include "memtest.h"

static void check_host(CUcontext ctx, void *base, void *p, size_t bytes)
{
    CUpointer_attribute attrs[] = {
        CU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
        CU_POINTER_ATTRIBUTE_DEVICE_POINTER, CU_POINTER_ATTRIBUTE_HOST_POINTER,
        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        CU_POINTER_ATTRIBUTE_RANGE_SIZE, CU_POINTER_ATTRIBUTE_IS_MANAGED };
    CUcontext c = NULL;
    unsigned type = 0;
    CUdeviceptr dp = 0, start = 0;
    void *hp = NULL;
    int ordinal = -1, managed = -1;
    size_t size = 0;
    void *data[] = { &c, &type, &dp, &hp, &ordinal, &start, &size, &managed };
    CUdeviceptr ptr = (CUdeviceptr)(uintptr_t)p;

    CHECK_CU(cuPointerGetAttributes(8, attrs, data, ptr));
    EXPECT(c == ctx, "context %p, expected %p", (void *)c, (void *)ctx);
    EXPECT(type == CU_MEMORYTYPE_HOST, "memory type %u", type);
    EXPECT(dp == ptr && hp == p, "device pointer 0x%llx, host pointer %p for %p",
           (unsigned long long)dp, hp, p);
    EXPECT(ordinal == 0 && managed == 0, "ordinal %d, managed %d", ordinal, managed);
    EXPECT(start == (CUdeviceptr)(uintptr_t)base && size >= bytes, "range 0x%llx+%zu",
           (unsigned long long)start, size);

    unsigned t1 = 0;
    void *h1 = NULL;
    CHECK_CU(cuPointerGetAttribute(&t1, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr));
    CHECK_CU(cuPointerGetAttribute(&h1, CU_POINTER_ATTRIBUTE_HOST_POINTER, ptr));
    EXPECT(t1 == CU_MEMORYTYPE_HOST && h1 == p, "single queries: type %u host %p", t1, h1);
}

int main(void)
{
    void *pinned, *held;
    unsigned char *reg;
    unsigned type;
    CUcontext ctx = st_setup(0);

    CHECK_CU(cuMemHostAlloc(&pinned, 50000, CU_MEMHOSTALLOC_DEVICEMAP));
    check_host(ctx, pinned, pinned, 50000);
    check_host(ctx, pinned, (char *)pinned + 49999, 50000);
    CHECK_CU(cuMemAllocHost(&held, 4096));
    check_host(ctx, held, (char *)held + 1, 4096);

    EXPECT(posix_memalign((void **)&reg, 4096, 8192) == 0, "posix_memalign");
    CHECK_CU(cuMemHostRegister(reg, 8192, 0));
    check_host(ctx, reg, reg + 100, 8192);
    CHECK_CU(cuMemHostUnregister(reg));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
              cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                    (CUdeviceptr)(uintptr_t)reg));
    CHECK_CU(cuMemFreeHost(pinned));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
              cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                    (CUdeviceptr)(uintptr_t)pinned));
    CHECK_CU(cuMemFreeHost(held));
    free(reg);
    return 0;
}
