/* SPDX-License-Identifier: MIT */
/*
 * ctx_destroy_frees.c - destroying a context frees its resources: after cuCtxDestroy the
 * device memory (cuMemAlloc) and page-locked host memory (cuMemAllocHost, cuMemHostAlloc) it
 * allocated are gone - no longer counted by cuMemGetInfo, unknown to cuPointerGetAttribute,
 * CUDA_ERROR_INVALID_VALUE to free again.  Virtual memory management memory belongs to no
 * context: a cuMemCreate allocation mapped into a cuMemAddressReserve range while the
 * context was current stays mapped and usable from another context.
 */
#include <string.h>

#include "simtest.h"

#define BIG (64u << 20)

int main(void)
{
    CUcontext a, b;
    CUdeviceptr d, va;
    void *h1, *h2;
    size_t gran;

    CHECK_CU(cuInit(0));
    CHECK_CU(cuCtxCreate(&b, NULL, 0, 0));
    size_t before = st_free_mem();
    CHECK_CU(cuCtxCreate(&a, NULL, 0, 0));
    CHECK_CU(cuMemAlloc(&d, BIG));
    CHECK_CU(cuMemAllocHost(&h1, 1 << 20));
    CHECK_CU(cuMemHostAlloc(&h2, 1 << 20, CU_MEMHOSTALLOC_PORTABLE));
    EXPECT(st_free_mem() <= before - BIG, "cuMemAlloc not counted");

    CUmemGenericAllocationHandle mh;
    va = st_vmm_filled(&gran, &mh);

    CHECK_CU(cuCtxDestroy(a));
    CHECK_CU(cuCtxSetCurrent(b));
    EXPECT(st_free_mem() >= before - gran,
           "cuMemAlloc memory of a destroyed context still counted");
    EXPECT(!st_pointer_known(d), "cuMemAlloc memory of a destroyed context still known");
    EXPECT(!st_pointer_known((CUdeviceptr)(uintptr_t)h1), "cuMemAllocHost memory still known");
    EXPECT(!st_pointer_known((CUdeviceptr)(uintptr_t)h2),
           "portable cuMemHostAlloc memory still known");
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFree(d));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFreeHost(h1));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFreeHost(h2));

    /* VMM memory stays, mapped and accessible. */
    unsigned word = 0;
    CHECK_CU(cuMemcpyDtoH(&word, va + gran - 4, 4));
    EXPECT(word == 0x5a5a5a5au, "VMM memory lost with the context: %#x", word);
    CHECK_CU(cuMemUnmap(va, gran));
    CHECK_CU(cuMemAddressFree(va, gran));
    CHECK_CU(cuMemRelease(mh));
    CHECK_CU(cuCtxDestroy(b));
    return 0;
}
