/* SPDX-License-Identifier: MIT */
/*
 * vmm_create.c - cuMemCreate makes physical memory located on a device, on the host, or on
 * a host NUMA node (id 0 where there is one node), in multiples of the granularity; the
 * properties come back from cuMemGetAllocationPropertiesFromHandle; cuMemRelease frees it.
 * Sizes of zero or not a multiple of the granularity, non-zero flags, a type other than
 * pinned, HOST_NUMA_CURRENT as location and a handle type requested for HOST memory (which is
 * not IPC capable) are CUDA_ERROR_INVALID_VALUE; a device that does not exist is
 * CUDA_ERROR_INVALID_DEVICE.
 */
#include "memtest.h"

static void create_ok(CUmemLocationType type, int id, size_t size)
{
    CUmemGenericAllocationHandle h = mt_create(size, type, id);
    CUmemAllocationProp back;
    memset(&back, 0xff, sizeof(back));
    CHECK_CU(cuMemGetAllocationPropertiesFromHandle(&back, h));
    EXPECT(back.type == CU_MEM_ALLOCATION_TYPE_PINNED && back.location.type == type &&
           back.location.id == id, "properties came back as type %d location %d/%d",
           (int)back.type, (int)back.location.type, back.location.id);
    CHECK_CU(cuMemRelease(h));
}

static CUresult create(CUmemAllocationProp prop, size_t size, unsigned long long flags)
{
    CUmemGenericAllocationHandle h;
    CUresult r = cuMemCreate(&h, size, &prop, flags);
    if (r == CUDA_SUCCESS)
        cuMemRelease(h);
    return r;
}

int main(void)
{
    CUmemAllocationProp prop;

    st_setup(0);
    create_ok(CU_MEM_LOCATION_TYPE_DEVICE, 0, MT_GRAN);
    create_ok(CU_MEM_LOCATION_TYPE_DEVICE, 0, 5 * MT_GRAN);
    create_ok(CU_MEM_LOCATION_TYPE_HOST, 0, MT_GRAN);
    create_ok(CU_MEM_LOCATION_TYPE_HOST_NUMA, 0, 3 * MT_GRAN);

    prop = mt_prop(CU_MEM_LOCATION_TYPE_DEVICE, 0);
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, create(prop, 0, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, create(prop, MT_GRAN / 2, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, create(prop, MT_GRAN + 4096, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, create(prop, MT_GRAN, 1));
    prop = mt_prop(CU_MEM_LOCATION_TYPE_HOST, 0);
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, create(prop, 3 * MT_GRAN / 2, 0));
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, create(prop, MT_GRAN, 0));
    prop = mt_prop(CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT, 0);
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, create(prop, MT_GRAN, 0));
    prop = mt_prop(CU_MEM_LOCATION_TYPE_DEVICE, 0);
    prop.type = CU_MEM_ALLOCATION_TYPE_INVALID;
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, create(prop, MT_GRAN, 0));
    prop = mt_prop(CU_MEM_LOCATION_TYPE_DEVICE, 3);
    EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, create(prop, MT_GRAN, 0));

    /* Device memory may be created shareable through a file descriptor. */
    prop = mt_prop(CU_MEM_LOCATION_TYPE_DEVICE, 0);
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CHECK_CU(create(prop, MT_GRAN, 0));
    return 0;
}
