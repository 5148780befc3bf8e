/* SPDX-License-Identifier: MIT */
/*
 * mem_alloc_capacity.c - the default simulated device has 1 GiB, and cuMemAlloc enforces it:
 * a request beyond what is free fails with CUDA_ERROR_OUT_OF_MEMORY and changes nothing (the
 * free memory cuMemGetInfo reports, the existing allocations and their contents); a request
 * that fits exactly succeeds; freeing gives the memory back.  cuMemAllocPitch is held to the
 * same capacity.
 */
#include "memtest.h"

#define GIB (1ull << 30)

static size_t free_now(void)
{
    size_t free_bytes, total;
    CHECK_CU(cuMemGetInfo(&free_bytes, &total));
    EXPECT(total == GIB, "total memory: expected %llu, got %zu", GIB, total);
    return free_bytes;
}

int main(void)
{
    CUdeviceptr a, b, x;
    size_t pitch;

    st_setup(0);
    size_t before = free_now();
    EXPECT(before == GIB, "free memory of an unused device: expected %llu, got %zu", GIB, before);

    EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&x, GIB + 1));
    EXPECT(free_now() == before, "a failed allocation changed free memory to %zu", free_now());

    CHECK_CU(cuMemAlloc(&a, 768 * MT_MIB));
    EXPECT(free_now() == GIB - 768 * MT_MIB, "free after 768 MiB: %zu", free_now());
    CHECK_CU(cuMemsetD32(a, 0xa5a5a5a5u, MT_MIB / 4));

    /* Over what is left: refused, nothing changes. */
    x = 0;
    EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&x, 256 * MT_MIB + 1));
    EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&x, 512 * MT_MIB));
    EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemAllocPitch(&x, &pitch, 1 << 20, 512, 4));
    EXPECT(x == 0, "a failed allocation wrote a pointer 0x%llx", (unsigned long long)x);
    EXPECT(free_now() == 256 * MT_MIB, "free after refused allocations: %zu", free_now());
    mt_expect_words(a, MT_MIB / 4, 0xa5a5a5a5u);

    /* Exactly what is left: granted; then nothing more. */
    CHECK_CU(cuMemAlloc(&b, 256 * MT_MIB));
    EXPECT(free_now() == 0, "free after filling the device: %zu", free_now());
    EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&x, 1));

    CHECK_CU(cuMemFree(b));
    EXPECT(free_now() == 256 * MT_MIB, "free after releasing 256 MiB: %zu", free_now());
    CHECK_CU(cuMemFree(a));
    EXPECT(free_now() == GIB, "free after releasing everything: %zu", free_now());
    CHECK_CU(cuMemAlloc(&a, GIB));
    CHECK_CU(cuMemFree(a));
    return 0;
}
