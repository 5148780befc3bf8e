/* SPDX-License-Identifier: MIT */
/*
 * vmm_map_alias.c - one physical allocation may be mapped at several virtual addresses, and
 * they alias: what a kernel writes through one address is read through the other, because
 * the memory is the same.  (cuMemMap maps the allocation, not a copy of it.)
 */
#include "memtest.h"

int main(void)
{
    CUdeviceptr a, b, out;
    uint64_t hits;

    st_setup(0);
    CUmemGenericAllocationHandle h = mt_create(MT_GRAN, CU_MEM_LOCATION_TYPE_DEVICE, 0);
    a = mt_reserve(MT_GRAN);
    b = mt_reserve(MT_GRAN);
    mt_map_rw(a, MT_GRAN, h, 0);
    mt_map_rw(b, MT_GRAN, h, 0);
    CHECK_CU(cuMemAlloc(&out, sizeof(hits)));

    CHECK_CU(mt_fill_async(a, MT_GRAN / 4, 0xa11a5u, NULL));
    CHECK_CU(mt_count_async(b, MT_GRAN / 4, 0xa11a5u, out, NULL));
    CHECK_CU(cuMemcpyDtoH(&hits, out, sizeof(hits)));
    EXPECT(hits == MT_GRAN / 4, "words read through the alias: %llu of %llu",
           (unsigned long long)hits, MT_GRAN / 4);
    mt_expect_words(b, 16, 0xa11a5u);

    CHECK_CU(cuMemUnmap(a, MT_GRAN));
    mt_expect_words(b, 16, 0xa11a5u);   /* the other mapping keeps the memory */
    CHECK_CU(cuMemUnmap(b, MT_GRAN));
    CHECK_CU(cuMemRelease(h));
    CHECK_CU(cuMemAddressFree(a, MT_GRAN));
    CHECK_CU(cuMemAddressFree(b, MT_GRAN));
    CHECK_CU(cuMemFree(out));
    return 0;
}
