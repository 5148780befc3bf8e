/* SPDX-License-Identifier: MIT */
/*
 * vmm_unmap_faults.c - after cuMemUnmap the address range is reserved but backed by nothing,
 * so a kernel that still uses the old pointer faults with CUDA_ERROR_ILLEGAL_ADDRESS and the
 * context stays in that sticky error.  Runs in a child process.
 */
#include "memtest.h"
#include "simchild.h"

static void use_after_unmap(void *unused)
{
    CUdeviceptr live;
    CUstream s;

    st_setup(0);
    mt_function("mt_fill");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&live, 4096));
    CUdeviceptr va = mt_reserve(MT_GRAN);
    CUmemGenericAllocationHandle h = mt_create(MT_GRAN, CU_MEM_LOCATION_TYPE_DEVICE, 0);
    mt_map_rw(va, MT_GRAN, h, 0);
    CHECK_CU(mt_fill_async(va, MT_GRAN / 4, 3, s));
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuMemUnmap(va, MT_GRAN));

    CHECK_CU(mt_fill_async(va, MT_GRAN / 4, 4, s));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuStreamSynchronize(s));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemsetD8(live, 0, 1));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, mt_fill_async(live, 1, 1, s));
}

int main(void)
{
    static const char *const logged[] = { "illegal address", "mt_fill", NULL };
    st_child_t c;

    st_run_child(use_after_unmap, NULL, NULL, &c);
    st_child_expect(&c, 0, logged);
    st_child_free(&c);
    return 0;
}
