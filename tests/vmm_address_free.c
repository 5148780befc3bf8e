/* SPDX-License-Identifier: MIT */
/*
 * vmm_address_free.c - cuMemAddressFree refuses a reservation that still has mappings in it
 * (CUDA_ERROR_INVALID_VALUE, and the mapping keeps working); once everything is unmapped it
 * frees the range, which can then no longer be mapped.
 */
#include "memtest.h"

int main(void)
{
    st_setup(0);
    CUdeviceptr va = mt_reserve(4 * MT_GRAN);
    CUmemGenericAllocationHandle h = mt_create(MT_GRAN, CU_MEM_LOCATION_TYPE_DEVICE, 0);
    mt_map_rw(va + 2 * MT_GRAN, MT_GRAN, h, 0);
    CHECK_CU(cuMemsetD32(va + 2 * MT_GRAN, 9, MT_GRAN / 4));

    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(va, 4 * MT_GRAN));
    mt_expect_words(va + 2 * MT_GRAN, MT_GRAN / 4, 9);

    CHECK_CU(cuMemUnmap(va + 2 * MT_GRAN, MT_GRAN));
    CHECK_CU(cuMemAddressFree(va, 4 * MT_GRAN));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemMap(va, MT_GRAN, 0, h, 0));
    CHECK_CU(cuMemRelease(h));
    return 0;
}
