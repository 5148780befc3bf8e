/* SPDX-License-Identifier: MIT */
/*
 * vmm_release_mapped.c - cuMemRelease of a handle that is still mapped does not free the
 * memory: "the memory allocation will be freed when all outstanding mappings to the memory
 * are unmapped".  The mapping keeps working with its contents and the device memory stays
 * charged; the last cuMemUnmap frees it.  With two mappings, both must go.  A released
 * handle is no handle any more: releasing it again, mapping it or asking its properties is
 * CUDA_ERROR_INVALID_VALUE and changes nothing, before and after its memory is gone (the
 * address sanitizer build checks that nothing freed is read); a handle retained from a
 * mapping (cuMemRetainAllocationHandle) is one more release to make.
 */
#include "memtest.h"

int main(void)
{
    st_setup(0);
    size_t used = mt_used();
    CUdeviceptr va = mt_reserve(2 * MT_GRAN), vb = mt_reserve(2 * MT_GRAN);
    CUmemGenericAllocationHandle h = mt_create(2 * MT_GRAN, CU_MEM_LOCATION_TYPE_DEVICE, 0);
    mt_map_rw(va, 2 * MT_GRAN, h, 0);
    mt_map_rw(vb, 2 * MT_GRAN, h, 0);
    CHECK_CU(mt_fill_async(va, 2 * MT_GRAN / 4, 0x600du, NULL));
    CHECK_CU(cuCtxSynchronize());

    CUmemGenericAllocationHandle again;
    CUmemAllocationProp prop;
    CHECK_CU(cuMemRetainAllocationHandle(&again, (void *)(uintptr_t)vb));
    EXPECT(again == h, "the retained handle is the created one");
    CHECK_CU(cuMemRelease(h));
    CHECK_CU(cuMemRelease(again));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemRelease(h));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemGetAllocationPropertiesFromHandle(&prop, h));
    CUdeviceptr vc = mt_reserve(2 * MT_GRAN);
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemMap(vc, 2 * MT_GRAN, 0, h, 0));
    EXPECT(mt_used() == used + 2 * MT_GRAN, "released but mapped: %zu in use", mt_used());
    mt_expect_words(va, 2 * MT_GRAN / 4, 0x600du);
    CHECK_CU(mt_fill_async(vb, 1024, 0x700du, NULL));
    mt_expect_words(va, 1024, 0x700du);

    CHECK_CU(cuMemUnmap(va, 2 * MT_GRAN));
    EXPECT(mt_used() == used + 2 * MT_GRAN, "one mapping left: %zu in use", mt_used());
    mt_expect_words(vb, 1024, 0x700du);
    CHECK_CU(cuMemUnmap(vb, 2 * MT_GRAN));
    EXPECT(mt_used() == used, "after the last unmap: %zu in use, %zu before", mt_used(), used);
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemRelease(h));
    CHECK_CU(cuMemAddressFree(vc, 2 * MT_GRAN));
    CHECK_CU(cuMemAddressFree(va, 2 * MT_GRAN));
    CHECK_CU(cuMemAddressFree(vb, 2 * MT_GRAN));
    return 0;
}
