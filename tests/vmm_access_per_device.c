/* SPDX-License-Identifier: MIT */
/*
 * vmm_access_per_device.c - cuMemSetAccess grants access per device.  On a two-device
 * machine (ELIXIR_SIM_DEVICES=2; the test re-executes itself), memory of device 0 mapped with
 * access for device 1 only is used by kernels and copies on device 1, while a kernel on
 * device 0 faults with CUDA_ERROR_ILLEGAL_ADDRESS: device 0's context is then lost for good,
 * device 1's context carries on.  Granting device 0 as well makes it work on both.
 */
#include "memtest.h"
#include "simchild.h"

#define WORDS (MT_GRAN / 4)

static CUmemAccess_flags access_of(int device, CUdeviceptr p)
{
    unsigned long long flags = 99;
    CUmemLocation loc = { CU_MEM_LOCATION_TYPE_DEVICE, device };
    CHECK_CU(cuMemGetAccess(&flags, &loc, p));
    return (CUmemAccess_flags)flags;
}

static void device1_only(void *unused)
{
    CUcontext c0 = st_setup(0), c1;
    CHECK_CU(cuDevicePrimaryCtxRetain(&c1, 1));
    mt_function("mt_fill");
    CHECK_CU(cuCtxSetCurrent(c1));
    mt_function("mt_fill");

    CUmemGenericAllocationHandle h = mt_create(MT_GRAN, CU_MEM_LOCATION_TYPE_DEVICE, 0);
    CUdeviceptr va = mt_reserve(MT_GRAN);
    CHECK_CU(cuMemMap(va, MT_GRAN, 0, h, 0));
    mt_access(va, MT_GRAN, 1, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    EXPECT(access_of(0, va) == CU_MEM_ACCESS_FLAGS_PROT_NONE, "device 0 has access");
    EXPECT(access_of(1, va) == CU_MEM_ACCESS_FLAGS_PROT_READWRITE, "device 1 has no access");

    CHECK_CU(mt_fill_async(va, WORDS, 0x1u, NULL));     /* device 1: fine */
    CHECK_CU(cuCtxSynchronize());
    mt_expect_words(va, WORDS, 0x1u);

    CHECK_CU(cuCtxSetCurrent(c0));
    CHECK_CU(mt_fill_async(va, WORDS, 0x0u, NULL));     /* device 0: faults */
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, mt_fill_async(va, 1, 0, NULL));

    CHECK_CU(cuCtxSetCurrent(c1));                      /* device 1 is unaffected */
    CHECK_CU(cuCtxSynchronize());
    mt_expect_words(va, WORDS, 0x1u);
    CHECK_CU(mt_fill_async(va, WORDS, 0x2u, NULL));
    CHECK_CU(cuCtxSynchronize());
    mt_expect_words(va, WORDS, 0x2u);
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_SIM_DEVICES=2", NULL };
    static const char *const logged[] = { "illegal address", "device 0", NULL };
    st_child_t c;

    st_reexec(argv, env);
    st_run_child(device1_only, NULL, NULL, &c);
    st_child_expect(&c, 0, logged);
    st_child_free(&c);

    /* Both devices granted: both may use it. */
    CUcontext c0 = st_setup(0), c1;
    CHECK_CU(cuDevicePrimaryCtxRetain(&c1, 1));
    CUmemGenericAllocationHandle h = mt_create(MT_GRAN, CU_MEM_LOCATION_TYPE_DEVICE, 0);
    CUdeviceptr va = mt_reserve(MT_GRAN);
    CHECK_CU(cuMemMap(va, MT_GRAN, 0, h, 0));
    CUmemAccessDesc both[2] = { mt_desc(0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE),
                                mt_desc(1, CU_MEM_ACCESS_FLAGS_PROT_READWRITE) };
    CHECK_CU(cuMemSetAccess(va, MT_GRAN, both, 2));
    CHECK_CU(mt_fill_async(va, WORDS, 0x10u, NULL));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuCtxSetCurrent(c1));
    mt_expect_words(va, WORDS, 0x10u);
    CHECK_CU(mt_fill_async(va, WORDS, 0x11u, NULL));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuCtxSetCurrent(c0));
    mt_expect_words(va, WORDS, 0x11u);
    CHECK_CU(cuMemUnmap(va, MT_GRAN));
    CHECK_CU(cuMemRelease(h));
    CHECK_CU(cuMemAddressFree(va, MT_GRAN));
    return 0;
}
