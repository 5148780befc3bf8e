/* SPDX-License-Identifier: MIT */
/*
 * vmm_granularity.c - cuMemGetAllocationGranularity reports 2 MiB, minimum and recommended,
 * for device-located, host-located and host-NUMA-located pinned allocations.  A NULL output
 * or property, an unknown option or allocation type are CUDA_ERROR_INVALID_VALUE; a device
 * that does not exist is CUDA_ERROR_INVALID_DEVICE.  CU_MEM_ALLOCATION_TYPE_INVALID is
 * answered as PINNED, as the driver (580, on an H100) answers it: the docs do not say.  The
 * device advertises the VMM support the shim relies on.
 */
#include "memtest.h"

int main(void)
{
    static const CUmemLocationType types[] = { CU_MEM_LOCATION_TYPE_DEVICE,
                                               CU_MEM_LOCATION_TYPE_HOST,
                                               CU_MEM_LOCATION_TYPE_HOST_NUMA };
    static const CUdevice_attribute supported[] = {
        CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
        CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
        CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED };
    size_t g;
    int v;

    st_setup(0);
    for (size_t i = 0; i < 3; i++) {
        CHECK_CU(cuDeviceGetAttribute(&v, supported[i], 0));
        EXPECT(v == 1, "device attribute %d is %d", (int)supported[i], v);
    }
    for (size_t i = 0; i < 3; i++) {
        CUmemAllocationProp prop = mt_prop(types[i], 0);
        g = 0;
        CHECK_CU(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
        EXPECT(g == MT_GRAN, "minimum granularity for location type %d: %zu", (int)types[i], g);
        g = 0;
        CHECK_CU(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
        EXPECT(g == MT_GRAN, "recommended granularity for location type %d: %zu", (int)types[i],
               g);
    }
    CUmemAllocationProp prop = mt_prop(CU_MEM_LOCATION_TYPE_DEVICE, 0);
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
              cuMemGetAllocationGranularity(NULL, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
              cuMemGetAllocationGranularity(&g, NULL, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
              cuMemGetAllocationGranularity(&g, &prop, (CUmemAllocationGranularity_flags)7));
    prop.type = CU_MEM_ALLOCATION_TYPE_INVALID;
    g = 0;
    CHECK_CU(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    EXPECT(g == MT_GRAN, "granularity for type INVALID: %zu", g);
    prop.type = (CUmemAllocationType)0x7;
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
              cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    prop = mt_prop(CU_MEM_LOCATION_TYPE_DEVICE, 5);
    EXPECT_CU(CUDA_ERROR_INVALID_DEVICE,
              cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    return 0;
}
