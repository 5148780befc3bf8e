/* SPDX-License-Identifier: MIT */
/*
 * vmm_address_range.c - on VMM memory cuMemGetAddressRange reports the mapping that holds
 * the address ("to retrieve the size of the mapped region, see cuMemGetAddressRange"), not
 * the whole reservation; a reserved address with nothing mapped is CUDA_ERROR_NOT_FOUND.
 */
#include "memtest.h"

int main(void)
{
    CUdeviceptr base;
    size_t size;

    st_setup(0);
    CUdeviceptr va = mt_reserve(8 * MT_GRAN);
    CUmemGenericAllocationHandle h1 = mt_create(2 * MT_GRAN, CU_MEM_LOCATION_TYPE_DEVICE, 0);
    CUmemGenericAllocationHandle h2 = mt_create(3 * MT_GRAN, CU_MEM_LOCATION_TYPE_DEVICE, 0);
    mt_map_rw(va, 2 * MT_GRAN, h1, 0);
    mt_map_rw(va + 4 * MT_GRAN, 3 * MT_GRAN, h2, 0);

    CHECK_CU(cuMemGetAddressRange(&base, &size, va + MT_GRAN + 5));
    EXPECT(base == va && size == 2 * MT_GRAN, "first mapping: 0x%llx+%zu, expected 0x%llx+%llu",
           (unsigned long long)base, size, (unsigned long long)va, 2 * MT_GRAN);
    CHECK_CU(cuMemGetAddressRange(&base, &size, va + 7 * MT_GRAN - 1));
    EXPECT(base == va + 4 * MT_GRAN && size == 3 * MT_GRAN, "second mapping: 0x%llx+%zu",
           (unsigned long long)base, size);
    EXPECT_CU(CUDA_ERROR_NOT_FOUND, cuMemGetAddressRange(&base, &size, va + 3 * MT_GRAN));
    EXPECT_CU(CUDA_ERROR_NOT_FOUND, cuMemGetAddressRange(&base, &size, va + 7 * MT_GRAN));

    CHECK_CU(cuMemUnmap(va, 2 * MT_GRAN));
    CHECK_CU(cuMemUnmap(va + 4 * MT_GRAN, 3 * MT_GRAN));
    EXPECT_CU(CUDA_ERROR_NOT_FOUND, cuMemGetAddressRange(&base, &size, va));
    CHECK_CU(cuMemRelease(h1));
    CHECK_CU(cuMemRelease(h2));
    CHECK_CU(cuMemAddressFree(va, 8 * MT_GRAN));
    return 0;
}
