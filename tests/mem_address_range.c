/* SPDX-License-Identifier: MIT */
/*
 * mem_address_range.c - cuMemGetAddressRange gives the base and size of the cuMemAlloc
 * allocation containing any address in it (both outputs optional); an address the driver
 * did not allocate, or one already freed, is CUDA_ERROR_NOT_FOUND.
 */
#include "memtest.h"

int main(void)
{
    CUdeviceptr a, b, base;
    size_t size;
    int local;

    st_setup(0);
    CHECK_CU(cuMemAlloc(&a, 10000));
    CHECK_CU(cuMemAlloc(&b, 3 * MT_MIB));
    const CUdeviceptr probes[] = { a, a + 1, a + 5000, a + 9999 };
    for (size_t i = 0; i < 4; i++) {
        base = 0;
        size = 0;
        CHECK_CU(cuMemGetAddressRange(&base, &size, probes[i]));
        EXPECT(base == a && size >= 10000, "range of 0x%llx: 0x%llx+%zu, allocation 0x%llx",
               (unsigned long long)probes[i], (unsigned long long)base, size,
               (unsigned long long)a);
    }
    CHECK_CU(cuMemGetAddressRange(&base, NULL, b + MT_MIB));
    EXPECT(base == b, "base of b: 0x%llx", (unsigned long long)base);
    CHECK_CU(cuMemGetAddressRange(NULL, &size, b + 3 * MT_MIB - 1));
    EXPECT(size >= 3 * MT_MIB, "size of b: %zu", size);

    EXPECT_CU(CUDA_ERROR_NOT_FOUND, cuMemGetAddressRange(&base, &size,
                                                         (CUdeviceptr)(uintptr_t)&local));
    CHECK_CU(cuMemFree(a));
    EXPECT_CU(CUDA_ERROR_NOT_FOUND, cuMemGetAddressRange(&base, &size, a));
    EXPECT_CU(CUDA_ERROR_NOT_FOUND, cuMemGetAddressRange(&base, &size, a + 100));
    CHECK_CU(cuMemFree(b));
    return 0;
}
