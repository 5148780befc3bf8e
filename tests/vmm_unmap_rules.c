/* SPDX-License-Identifier: MIT */
/*
 * vmm_unmap_rules.c - cuMemUnmap takes whole mappings only: "the range must be the entire
 * contiguous address range that was mapped".  Part of a mapping, a range running into
 * unmapped space, an unmapped range, a misaligned address, a size of zero or cuMemAlloc
 * memory are CUDA_ERROR_INVALID_VALUE and change nothing.  Several adjacent whole mappings
 * may go in one call.  Afterwards the range is an ordinary reservation again, mappable anew.
 */
#include "memtest.h"

int main(void)
{
    const size_t g = MT_GRAN;
    CUdeviceptr d;

    st_setup(0);
    CUdeviceptr va = mt_reserve(8 * g);
    CUmemGenericAllocationHandle h1 = mt_create(2 * g, CU_MEM_LOCATION_TYPE_DEVICE, 0);
    CUmemGenericAllocationHandle h2 = mt_create(g, CU_MEM_LOCATION_TYPE_HOST, 0);
    CUmemGenericAllocationHandle h3 = mt_create(2 * g, CU_MEM_LOCATION_TYPE_DEVICE, 0);
    CUmemGenericAllocationHandle h4 = mt_create(g, CU_MEM_LOCATION_TYPE_DEVICE, 0);
    /* [h1 h1][h2][h3 h3][ ][h4][ ] */
    mt_map_rw(va, 2 * g, h1, 0);
    mt_map_rw(va + 2 * g, g, h2, 0);
    mt_map_rw(va + 3 * g, 2 * g, h3, 0);
    mt_map_rw(va + 6 * g, g, h4, 0);
    CHECK_CU(cuMemsetD32(va, 0x5eu, 5 * g / 4));
    CHECK_CU(cuMemAlloc(&d, g));

    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(va, g));            /* first half of h1 */
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(va + g, g));        /* second half of h1 */
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(va, 4 * g));        /* h1 h2, half of h3 */
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(va + 3 * g, 3 * g));    /* h3 and a hole */
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(va + 5 * g, g));    /* the hole */
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(va + 3 * g, 4 * g));    /* h3, hole, h4 */
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(va + 4096, 2 * g));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(va, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(d, g));
    mt_expect_words(va, 5 * g / 4, 0x5eu);     /* nothing was unmapped */

    CHECK_CU(cuMemUnmap(va, 5 * g));       /* h1, h2 and h3: adjacent whole mappings */
    CHECK_CU(cuMemUnmap(va + 6 * g, g));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(va, 2 * g));        /* already unmapped */

    /* The address space is reserved again: map h3 where h1 and h2 were. */
    mt_map_rw(va + g, 2 * g, h3, 0);
    mt_expect_words(va + g, 2 * g / 4, 0x5eu);     /* h3 kept its contents */
    CHECK_CU(cuMemUnmap(va + g, 2 * g));
    CHECK_CU(cuMemRelease(h1));
    CHECK_CU(cuMemRelease(h2));
    CHECK_CU(cuMemRelease(h3));
    CHECK_CU(cuMemRelease(h4));
    CHECK_CU(cuMemAddressFree(va, 8 * g));
    CHECK_CU(cuMemFree(d));
    return 0;
}
