/* SPDX-License-Identifier: MIT */
/*
 * memset_1d.c - cuMemsetD8/D16/D32 and their Async forms set exactly N elements of 1, 2 or 4
 * bytes from the destination on (bytes before and after are left alone); a destination not
 * aligned to the element size is CUDA_ERROR_INVALID_VALUE; N = 0 does nothing.
 */
#include <stdint.h>
#include <string.h>

#include "simtest.h"

#define SIZE 4096

static unsigned char image[SIZE];

/* Device bytes must be 0xcc except [from, from + n) which must repeat the `elem` bytes of v. */
static void check(CUdeviceptr d, size_t from, size_t n, unsigned elem, uint32_t v,
                  const char *what)
{
    CHECK_CU(cuMemcpyDtoH(image, d, SIZE));
    for (size_t i = 0; i < SIZE; i++) {
        unsigned want = 0xcc;
        if (i >= from && i < from + n) {
            unsigned char bytes[4];
            memcpy(bytes, &v, 4);
            want = bytes[(i - from) % elem];
        }
        EXPECT(image[i] == want, "%s: byte %zu is 0x%x, expected 0x%x", what, i, image[i], want);
    }
    CHECK_CU(cuMemsetD8(d, 0xcc, SIZE));
}

int main(void)
{
    CUdeviceptr d;
    CUstream s;

    st_setup(0);
    CHECK_CU(cuMemAlloc(&d, SIZE));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_DEFAULT));
    CHECK_CU(cuMemsetD8(d, 0xcc, SIZE));

    CHECK_CU(cuMemsetD8(d + 3, 0x5a, 101));
    check(d, 3, 101, 1, 0x5a, "cuMemsetD8 at an odd address");
    CHECK_CU(cuMemsetD16(d + 2, 0xbeef, 50));
    check(d, 2, 100, 2, 0xbeef, "cuMemsetD16");
    CHECK_CU(cuMemsetD32(d + 8, 0x01020304, 33));
    check(d, 8, 132, 4, 0x01020304, "cuMemsetD32");

    CHECK_CU(cuMemsetD8Async(d + 1, 0xa5, 7, s));
    CHECK_CU(cuStreamSynchronize(s));
    check(d, 1, 7, 1, 0xa5, "cuMemsetD8Async");
    CHECK_CU(cuMemsetD16Async(d + 4094 - 20, 0x1234, 10, s));
    CHECK_CU(cuStreamSynchronize(s));
    check(d, 4094 - 20, 20, 2, 0x1234, "cuMemsetD16Async");
    CHECK_CU(cuMemsetD32Async(d + SIZE - 16, 0xdeadbeef, 4, NULL));
    CHECK_CU(cuCtxSynchronize());
    check(d, SIZE - 16, 16, 4, 0xdeadbeef, "cuMemsetD32Async at the end");

    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD16(d + 1, 0xffff, 4));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD32(d + 2, 0xffffffff, 4));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD32Async(d + 6, 0xffffffff, 4, s));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD16Async(d + 3, 0xffff, 4, s));
    CHECK_CU(cuMemsetD32(d, 0xffffffff, 0));
    CHECK_CU(cuCtxSynchronize());
    check(d, 0, 0, 1, 0, "rejected and empty memsets");

    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuMemFree(d));
    return 0;
}
