/* SPDX-License-Identifier: MIT */
/*
 * vmm_map_rules.c - cuMemMap maps physical memory at offset 0 (the only offset allowed),
 * with address and size multiples of the granularity, no larger than the allocation, onto
 * reserved address space that is not mapped yet; everything else is CUDA_ERROR_INVALID_VALUE:
 * a non-zero offset, a misaligned address or size, a size of zero or beyond the allocation,
 * a range that is already (even partly) mapped, a range outside any reservation or running
 * past its end, cuMemAlloc memory, non-zero flags.  A mapping may cover part of an
 * allocation, and a failed cuMemMap leaves the reservation as it was.
 */
#include "memtest.h"

int main(void)
{
    CUdeviceptr va, other, d;
    int local;

    st_setup(0);
    CUmemGenericAllocationHandle h = mt_create(2 * MT_GRAN, CU_MEM_LOCATION_TYPE_DEVICE, 0);
    CUmemGenericAllocationHandle small = mt_create(MT_GRAN, CU_MEM_LOCATION_TYPE_DEVICE, 0);
    va = mt_reserve(8 * MT_GRAN);
    other = mt_reserve(2 * MT_GRAN);
    CHECK_CU(cuMemAlloc(&d, 2 * MT_GRAN));

    /* A non-zero offset "currently must be zero": the real driver (580) calls it unsupported,
     * even where the offset and size would also run past the allocation. */
    EXPECT_CU(CUDA_ERROR_NOT_SUPPORTED, cuMemMap(va, 2 * MT_GRAN, MT_GRAN, h, 0));
    EXPECT_CU(CUDA_ERROR_NOT_SUPPORTED, cuMemMap(va, MT_GRAN, MT_GRAN, h, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemMap(va + 4096, MT_GRAN, 0, h, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemMap(va + MT_GRAN / 2, MT_GRAN, 0, h, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemMap(va, MT_GRAN + 4096, 0, h, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemMap(va, 0, 0, h, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemMap(va, 4 * MT_GRAN, 0, h, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemMap(va, 2 * MT_GRAN, 0, h, 1));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemMap(va + 7 * MT_GRAN, 2 * MT_GRAN, 0, h, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemMap(d, 2 * MT_GRAN, 0, h, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
              cuMemMap((CUdeviceptr)(uintptr_t)&local & ~(CUdeviceptr)(MT_GRAN - 1), MT_GRAN, 0,
                       h, 0));

    /* Part of an allocation, then the rest of the reservation around it. */
    CHECK_CU(cuMemMap(va + 2 * MT_GRAN, MT_GRAN, 0, h, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemMap(va + 2 * MT_GRAN, MT_GRAN, 0, small, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemMap(va + MT_GRAN, 2 * MT_GRAN, 0, h, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemMap(va, 8 * MT_GRAN, 0, h, 0));
    CHECK_CU(cuMemMap(va + MT_GRAN, MT_GRAN, 0, small, 0));
    CHECK_CU(cuMemMap(va + 3 * MT_GRAN, 2 * MT_GRAN, 0, h, 0));
    CHECK_CU(cuMemMap(other, 2 * MT_GRAN, 0, h, 0));

    /* Mapped memory works once access is granted. */
    mt_access(va + MT_GRAN, 4 * MT_GRAN, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    CHECK_CU(cuMemsetD32(va + MT_GRAN, 0x01020304u, 4 * MT_GRAN / 4));
    mt_expect_words(va + MT_GRAN, 4 * MT_GRAN / 4, 0x01020304u);

    CHECK_CU(cuMemUnmap(va + MT_GRAN, MT_GRAN));
    CHECK_CU(cuMemUnmap(va + 2 * MT_GRAN, MT_GRAN));
    CHECK_CU(cuMemUnmap(va + 3 * MT_GRAN, 2 * MT_GRAN));
    CHECK_CU(cuMemUnmap(other, 2 * MT_GRAN));
    CHECK_CU(cuMemRelease(h));
    CHECK_CU(cuMemRelease(small));
    CHECK_CU(cuMemAddressFree(va, 8 * MT_GRAN));
    CHECK_CU(cuMemAddressFree(other, 2 * MT_GRAN));
    CHECK_CU(cuMemFree(d));
    return 0;
}
