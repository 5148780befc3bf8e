/* SPDX-License-Identifier: MIT */
/*
 * vmm_access_read_only.c - CU_MEM_ACCESS_FLAGS_PROT_READ lets a device read a mapping but not
 * write it: a reading kernel works, a writing kernel faults with CUDA_ERROR_ILLEGAL_ADDRESS
 * (in a child process).  cuMemGetAccess and the ACCESS_FLAGS pointer attribute report read
 * access; granting read-write later makes writes work.  Access descriptors with unknown
 * flags or devices, HOST_NUMA access to memory not created HOST_NUMA, and ranges that are not
 * whole mappings are rejected.
 */
#include "memtest.h"
#include "simchild.h"

#define WORDS (MT_GRAN / 4)

static CUdeviceptr setup_read_only(CUdeviceptr *out)
{
    CUdeviceptr va = mt_reserve(MT_GRAN);
    CUmemGenericAllocationHandle h = mt_create(MT_GRAN, CU_MEM_LOCATION_TYPE_DEVICE, 0);
    mt_map_rw(va, MT_GRAN, h, 0);
    CHECK_CU(mt_fill_async(va, WORDS, 0x42u, NULL));
    CHECK_CU(cuCtxSynchronize());
    mt_access(va, MT_GRAN, 0, CU_MEM_ACCESS_FLAGS_PROT_READ);
    CHECK_CU(cuMemAlloc(out, 8));
    return va;
}

static void write_read_only(void *unused)
{
    CUdeviceptr out;
    st_setup(0);
    CUdeviceptr va = setup_read_only(&out);
    CHECK_CU(mt_fill_async(va, WORDS, 0x43u, NULL));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
}

int main(void)
{
    static const char *const logged[] = { "illegal address", "mt_fill", NULL };
    CUmemLocation loc = { CU_MEM_LOCATION_TYPE_DEVICE, 0 };
    unsigned long long flags, attr;
    uint64_t hits;
    CUdeviceptr out;
    st_child_t c;

    st_run_child(write_read_only, NULL, NULL, &c);
    st_child_expect(&c, 0, logged);
    st_child_free(&c);

    st_setup(0);
    CUdeviceptr va = setup_read_only(&out);
    CHECK_CU(cuMemGetAccess(&flags, &loc, va));
    EXPECT(flags == CU_MEM_ACCESS_FLAGS_PROT_READ, "cuMemGetAccess: %llu", flags);
    CHECK_CU(cuPointerGetAttribute(&attr, CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, va));
    EXPECT(attr == CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READ, "ACCESS_FLAGS attribute: %llu", attr);
    CHECK_CU(mt_count_async(va, WORDS, 0x42u, out, NULL));
    CHECK_CU(cuMemcpyDtoH(&hits, out, sizeof(hits)));
    EXPECT(hits == WORDS, "read-only kernel saw %llu of %llu words", (unsigned long long)hits,
           (unsigned long long)WORDS);

    CUmemAccessDesc bad = mt_desc(0, (CUmemAccess_flags)2);
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemSetAccess(va, MT_GRAN, &bad, 1));
    bad = mt_desc(7, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    EXPECT_CU(CUDA_ERROR_INVALID_DEVICE, cuMemSetAccess(va, MT_GRAN, &bad, 1));
    bad = mt_desc(0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemSetAccess(va, MT_GRAN / 2, &bad, 1));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemSetAccess(va, MT_GRAN, &bad, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemSetAccess(out, 4096, &bad, 1));
    /* "Users cannot specify HOST_NUMA accessibility for allocations created on with other
     * location types": this one is device memory. */
    bad.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemSetAccess(va, MT_GRAN, &bad, 1));

    mt_access(va, MT_GRAN, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    CHECK_CU(mt_fill_async(va, WORDS, 0x44u, NULL));
    mt_expect_words(va, WORDS, 0x44u);
    CHECK_CU(cuMemFree(out));
    return 0;
}
