/* SPDX-License-Identifier: MIT */
/*
 * mem_host_alloc.c - pinned host memory: cuMemHostAlloc with each documented flag and
 * cuMemAllocHost return host-usable memory that asynchronous copies use directly, that does
 * not count against device memory, and whose flags cuMemHostGetFlags passes back (for any
 * address inside it).  Unknown flags and a size of zero are CUDA_ERROR_INVALID_VALUE.
 * cuMemFreeHost takes exactly the returned pointer, once.
 */
#include "memtest.h"

static const unsigned flag_sets[] = {
    0, CU_MEMHOSTALLOC_PORTABLE, CU_MEMHOSTALLOC_DEVICEMAP, CU_MEMHOSTALLOC_WRITECOMBINED,
    CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED,
};
#define NSETS (sizeof(flag_sets) / sizeof(flag_sets[0]))
#define N 100000

int main(void)
{
    void *p[NSETS], *q, *x;
    unsigned flags;
    CUdeviceptr d;
    CUstream s;

    st_setup(0);
    size_t used = mt_used();
    for (size_t i = 0; i < NSETS; i++) {
        CHECK_CU(cuMemHostAlloc(&p[i], N, flag_sets[i]));
        memset(p[i], (int)i, N);    /* the host can use it at once */
        CHECK_CU(cuMemHostGetFlags(&flags, p[i]));
        EXPECT((flags & flag_sets[i]) == flag_sets[i], "flags 0x%x came back as 0x%x",
               flag_sets[i], flags);
        CHECK_CU(cuMemHostGetFlags(&flags, (char *)p[i] + N - 1));
        EXPECT((flags & flag_sets[i]) == flag_sets[i], "flags of the last byte: 0x%x", flags);
    }
    CHECK_CU(cuMemAllocHost(&q, N));
    EXPECT(mt_used() == used, "pinned host memory counted as device memory: %zu -> %zu", used,
           mt_used());
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemHostAlloc(&x, N, 0x100));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemHostAlloc(&x, 0, 0));

    /* Pinned to device and back, asynchronously. */
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&d, N));
    for (int i = 0; i < N; i++)
        ((unsigned char *)q)[i] = (unsigned char)(i * 31);
    CHECK_CU(cuMemcpyHtoDAsync(d, q, N, s));
    CHECK_CU(cuMemcpyDtoHAsync(p[0], d, N, s));
    CHECK_CU(cuStreamSynchronize(s));
    EXPECT(memcmp(p[0], q, N) == 0, "pinned -> device -> pinned round trip differs");

    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFreeHost((char *)q + 4096));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFreeHost((void *)(uintptr_t)d));
    CHECK_CU(cuMemFreeHost(q));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFreeHost(q));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemHostGetFlags(&flags, q));
    for (size_t i = 0; i < NSETS; i++)
        CHECK_CU(cuMemFreeHost(p[i]));
    CHECK_CU(cuMemFree(d));
    CHECK_CU(cuStreamDestroy(s));
    return 0;
}
