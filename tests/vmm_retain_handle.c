/* SPDX-License-Identifier: MIT */
/*
 * vmm_retain_handle.c - cuMemRetainAllocationHandle, given any address inside a mapping (not
 * only its start), returns the very handle that was mapped there, whose properties
 * cuMemGetAllocationPropertiesFromHandle passes back; each retain needs its own cuMemRelease,
 * and the memory lives until the last release and the last unmap.  An address that is not
 * mapped (reserved only, or not VMM memory) is CUDA_ERROR_INVALID_VALUE.
 */
#include "memtest.h"

int main(void)
{
    CUmemGenericAllocationHandle got;
    CUmemAllocationProp prop;
    CUdeviceptr d;

    st_setup(0);
    size_t used = mt_used();
    CUdeviceptr va = mt_reserve(6 * MT_GRAN);
    CUmemGenericAllocationHandle h1 = mt_create(2 * MT_GRAN, CU_MEM_LOCATION_TYPE_DEVICE, 0);
    CUmemGenericAllocationHandle h2 = mt_create(2 * MT_GRAN, CU_MEM_LOCATION_TYPE_HOST, 0);
    mt_map_rw(va, 2 * MT_GRAN, h1, 0);
    mt_map_rw(va + 2 * MT_GRAN, 2 * MT_GRAN, h2, 0);
    CHECK_CU(cuMemsetD32(va, 0x3u, 4 * MT_GRAN / 4));
    CHECK_CU(cuCtxSynchronize());   /* asynchronous: it must be done before any unmap */

    const CUdeviceptr in_h1[] = { va, va + 1, va + MT_GRAN + 123, va + 2 * MT_GRAN - 1 };
    for (int i = 0; i < 4; i++) {
        CHECK_CU(cuMemRetainAllocationHandle(&got, (void *)(uintptr_t)in_h1[i]));
        EXPECT(got == h1, "handle at va+0x%llx: 0x%llx, mapped 0x%llx",
               (unsigned long long)(in_h1[i] - va), (unsigned long long)got,
               (unsigned long long)h1);
    }
    CHECK_CU(cuMemRetainAllocationHandle(&got, (void *)(uintptr_t)(va + 3 * MT_GRAN)));
    EXPECT(got == h2, "handle of the second mapping: 0x%llx, mapped 0x%llx",
           (unsigned long long)got, (unsigned long long)h2);
    CHECK_CU(cuMemGetAllocationPropertiesFromHandle(&prop, got));
    EXPECT(prop.location.type == CU_MEM_LOCATION_TYPE_HOST, "location type %d",
           (int)prop.location.type);
    CHECK_CU(cuMemGetAllocationPropertiesFromHandle(&prop, h1));
    EXPECT(prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE && prop.location.id == 0,
           "location %d/%d", (int)prop.location.type, prop.location.id);

    EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
              cuMemRetainAllocationHandle(&got, (void *)(uintptr_t)(va + 4 * MT_GRAN)));
    CHECK_CU(cuMemAlloc(&d, 4096));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemRetainAllocationHandle(&got, (void *)(uintptr_t)d));

    /* Five references to h1 (create + 4 retains): four releases keep it alive. */
    for (int i = 0; i < 4; i++)
        CHECK_CU(cuMemRelease(h1));
    CHECK_CU(cuMemUnmap(va, 2 * MT_GRAN));
    EXPECT(mt_used() == used + 4096 + 2 * MT_GRAN, "h1 still referenced: %zu in use", mt_used());
    mt_map_rw(va + 4 * MT_GRAN, 2 * MT_GRAN, h1, 0);
    mt_expect_words(va + 4 * MT_GRAN, 2 * MT_GRAN / 4, 0x3u);
    CHECK_CU(cuMemRelease(h1));
    CHECK_CU(cuMemUnmap(va + 4 * MT_GRAN, 2 * MT_GRAN));
    EXPECT(mt_used() == used + 4096, "h1 gone: %zu in use", mt_used());

    CHECK_CU(cuMemRelease(h2));     /* the retained reference */
    CHECK_CU(cuMemRelease(h2));
    mt_expect_words(va + 2 * MT_GRAN, 1024, 0x3u);
    CHECK_CU(cuMemUnmap(va + 2 * MT_GRAN, 2 * MT_GRAN));
    CHECK_CU(cuMemAddressFree(va, 6 * MT_GRAN));
    CHECK_CU(cuMemFree(d));
    return 0;
}
