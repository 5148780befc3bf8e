/* SPDX-License-Identifier: MIT */
/*
 * vmm_create_capacity.c - device-located cuMemCreate memory is device memory: it is charged
 * when created (before any mapping), shares the capacity with cuMemAlloc, fails with
 * CUDA_ERROR_OUT_OF_MEMORY beyond it without changing anything, and is given back by
 * cuMemRelease.  Host-located memory is not charged to the device.
 */
#include "memtest.h"

#define GIB (1ull << 30)

int main(void)
{
    CUmemGenericAllocationHandle a, b, h, x;
    CUmemAllocationProp prop = mt_prop(CU_MEM_LOCATION_TYPE_DEVICE, 0);
    CUdeviceptr d, y;

    st_setup(0);
    size_t used = mt_used();
    a = mt_create(256 * MT_MIB, CU_MEM_LOCATION_TYPE_DEVICE, 0);
    EXPECT(mt_used() == used + 256 * MT_MIB, "after creating 256 MiB: %zu in use", mt_used());
    h = mt_create(512 * MT_MIB, CU_MEM_LOCATION_TYPE_HOST, 0);
    EXPECT(mt_used() == used + 256 * MT_MIB, "host memory was charged: %zu in use", mt_used());

    CHECK_CU(cuMemAlloc(&d, 512 * MT_MIB));
    size_t left = GIB - mt_used();
    EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemCreate(&x, left + MT_GRAN, &prop, 0));
    EXPECT(GIB - mt_used() == left, "a refused cuMemCreate changed free memory");
    CHECK_CU(cuMemCreate(&b, left, &prop, 0));
    EXPECT(mt_used() == GIB, "the device should be full: %zu in use", mt_used());
    EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemCreate(&x, MT_GRAN, &prop, 0));
    EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&y, 4096));

    CHECK_CU(cuMemRelease(b));
    CHECK_CU(cuMemRelease(a));
    CHECK_CU(cuMemFree(d));
    CHECK_CU(cuMemRelease(h));
    EXPECT(mt_used() == used, "after releasing everything: %zu in use, %zu before", mt_used(),
           used);
    return 0;
}
