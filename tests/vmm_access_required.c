/* SPDX-License-Identifier: MIT */
/*
 * vmm_access_required.c - "calling cuMemMap does not make the address accessible": until
 * cuMemSetAccess grants the device access, a kernel or a copy touching the mapping faults
 * with CUDA_ERROR_ILLEGAL_ADDRESS and the context stays in that sticky state.  Reserved
 * address space with nothing mapped faults the same way.  After cuMemSetAccess the same
 * kernel and copy work, and cuMemGetAccess reports the flags.  Each faulting program runs in
 * its own child process.
 */
#include "memtest.h"
#include "simchild.h"

enum { BY_KERNEL, BY_COPY, UNMAPPED };

static void touch_without_access(void *arg)
{
    int how = *(int *)arg;
    CUdeviceptr src, out;
    CUstream s;

    st_setup(0);
    mt_function("mt_fill");     /* load the kernels while the context is healthy */
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&src, MT_GRAN));
    CHECK_CU(cuMemAlloc(&out, 8));
    CUdeviceptr va = mt_reserve(2 * MT_GRAN);
    CUmemGenericAllocationHandle h = mt_create(MT_GRAN, CU_MEM_LOCATION_TYPE_DEVICE, 0);
    CHECK_CU(cuMemMap(va, MT_GRAN, 0, h, 0));
    CUdeviceptr target = how == UNMAPPED ? va + MT_GRAN : va;
    if (how == BY_COPY)
        CHECK_CU(cuMemcpyDtoDAsync(target, src, 4096, s));
    else
        CHECK_CU(mt_fill_async(target, 1024, 1, s));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuStreamSynchronize(s));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemsetD8(src, 0, 16));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, mt_count_async(src, 1, 0, out, s));
}

int main(void)
{
    static const char *const logged[] = { "illegal address", NULL };
    static const int hows[] = { BY_KERNEL, BY_COPY, UNMAPPED };
    unsigned long long flags;
    CUmemLocation loc = { CU_MEM_LOCATION_TYPE_DEVICE, 0 };
    st_child_t c;

    for (int i = 0; i < 3; i++) {
        st_run_child(touch_without_access, (void *)&hows[i], NULL, &c);
        st_child_expect(&c, 0, logged);
        st_child_free(&c);
    }

    /* With access granted, the same program works. */
    CUdeviceptr src;
    st_setup(0);
    CHECK_CU(cuMemAlloc(&src, MT_GRAN));
    CHECK_CU(cuMemsetD32(src, 0x77u, MT_GRAN / 4));
    CUdeviceptr va = mt_reserve(MT_GRAN);
    CUmemGenericAllocationHandle h = mt_create(MT_GRAN, CU_MEM_LOCATION_TYPE_DEVICE, 0);
    CHECK_CU(cuMemMap(va, MT_GRAN, 0, h, 0));
    CHECK_CU(cuMemGetAccess(&flags, &loc, va));
    EXPECT(flags == CU_MEM_ACCESS_FLAGS_PROT_NONE, "access before cuMemSetAccess: %llu", flags);
    mt_access(va, MT_GRAN, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    CHECK_CU(cuMemGetAccess(&flags, &loc, va + 12345));
    EXPECT(flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE, "access after cuMemSetAccess: %llu",
           flags);
    CHECK_CU(cuMemcpyDtoD(va, src, MT_GRAN));
    mt_expect_words(va, MT_GRAN / 4, 0x77u);
    CHECK_CU(mt_fill_async(va, 1024, 5, NULL));
    mt_expect_words(va, 1024, 5);
    CHECK_CU(cuMemUnmap(va, MT_GRAN));
    CHECK_CU(cuMemRelease(h));
    CHECK_CU(cuMemAddressFree(va, MT_GRAN));
    CHECK_CU(cuMemFree(src));
    return 0;
}
