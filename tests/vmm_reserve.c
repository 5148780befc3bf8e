/* SPDX-License-Identifier: MIT */
/*
 * vmm_reserve.c - cuMemAddressReserve and cuMemAddressFree.  A reservation is aligned to the
 * granularity by default and to any larger power-of-two alignment asked for; a smaller power
 * of two is satisfied by the default alignment.  The size must be a multiple of the host page
 * size (only whole granules of it can be mapped, though).  An alignment that is not a power
 * of two, a size of zero or not a multiple of the page size, an address hint that is not page
 * aligned, and non-zero flags are CUDA_ERROR_INVALID_VALUE.  Reservations overlap neither each
 * other nor cuMemAlloc memory, and use no device memory.  cuMemAddressFree needs the exact
 * base and size, once.
 */
#include "memtest.h"

#define N 6

int main(void)
{
    static const size_t aligns[N] = { 0, 4096, MT_GRAN, 4 * MT_GRAN, 64 * MT_MIB, 1ull << 30 };
    CUdeviceptr va[N], x, d;

    st_setup(0);
    size_t used = mt_used();
    CHECK_CU(cuMemAlloc(&d, 8 * MT_MIB));
    for (int i = 0; i < N; i++) {
        size_t want = aligns[i] > MT_GRAN ? aligns[i] : MT_GRAN;
        CHECK_CU(cuMemAddressReserve(&va[i], 3 * MT_GRAN, aligns[i], 0, 0));
        EXPECT(va[i] != 0 && va[i] % want == 0, "reservation with alignment %zu at 0x%llx",
               aligns[i], (unsigned long long)va[i]);
        EXPECT(va[i] + 3 * MT_GRAN <= d || d + 8 * MT_MIB <= va[i],
               "reservation overlaps cuMemAlloc memory");
        for (int j = 0; j < i; j++)
            EXPECT(va[i] + 3 * MT_GRAN <= va[j] || va[j] + 3 * MT_GRAN <= va[i],
                   "reservations %d and %d overlap", i, j);
    }
    EXPECT(mt_used() == used + 8 * MT_MIB, "reservations used device memory: %zu in use",
           mt_used());

    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAddressReserve(&x, MT_GRAN, 3 * MT_GRAN, 0, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAddressReserve(&x, 0, 0, 0, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAddressReserve(&x, MT_GRAN + 100, 0, 0, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAddressReserve(&x, MT_GRAN, 0, 12345, 0));

    /* A page-multiple size: the whole granules of it can be mapped. */
    CHECK_CU(cuMemAddressReserve(&x, MT_GRAN + 4096, 0, 0, 0));
    EXPECT(x % MT_GRAN == 0, "reservation at 0x%llx", (unsigned long long)x);
    CUmemGenericAllocationHandle h = mt_create(MT_GRAN, CU_MEM_LOCATION_TYPE_DEVICE, 0);
    mt_map_rw(x, MT_GRAN, h, 0);
    CHECK_CU(cuMemsetD8(x, 1, MT_GRAN));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuMemUnmap(x, MT_GRAN));
    CHECK_CU(cuMemRelease(h));
    CHECK_CU(cuMemAddressFree(x, MT_GRAN + 4096));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAddressReserve(&x, MT_GRAN, 0, 0, 1));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAddressReserve(NULL, MT_GRAN, 0, 0, 0));

    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(va[0], 2 * MT_GRAN));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(va[0] + MT_GRAN, 2 * MT_GRAN));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(d, 8 * MT_MIB));
    for (int i = 0; i < N; i++)
        CHECK_CU(cuMemAddressFree(va[i], 3 * MT_GRAN));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAddressFree(va[0], 3 * MT_GRAN));
    CHECK_CU(cuMemFree(d));
    return 0;
}
