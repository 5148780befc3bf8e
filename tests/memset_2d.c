/* SPDX-License-Identifier: MIT */
/*
 * memset_2d.c - cuMemsetD2D8/16/32 and their Async forms set Width elements in each of Height
 * rows of a pitched buffer and leave the bytes between the row's end and the pitch alone.  A
 * destination or pitch not aligned to the element size, or a pitch smaller than the row, is
 * CUDA_ERROR_INVALID_VALUE.
 */
#include <stdint.h>
#include <string.h>

#include "simtest.h"

#define W 100           /* bytes of a row of the allocation */
#define H 20

static unsigned char image[1024 * H];

/* Rows [0, rows) from byte `from` hold n repeats of v's `elem` bytes; the rest is 0x77. */
static void check(CUdeviceptr d, size_t pitch, size_t from, size_t n, size_t rows, unsigned elem,
                  uint32_t v, const char *what)
{
    CHECK_CU(cuMemcpyDtoH(image, d, pitch * H));
    for (size_t y = 0; y < H; y++)
        for (size_t x = 0; x < pitch; x++) {
            unsigned want = 0x77;
            if (y < rows && x >= from && x < from + n * elem) {
                unsigned char bytes[4];
                memcpy(bytes, &v, 4);
                want = bytes[(x - from) % elem];
            }
            unsigned got = image[y * pitch + x];
            EXPECT(got == want, "%s: row %zu byte %zu is 0x%x, expected 0x%x", what, y, x, got,
                   want);
        }
    CHECK_CU(cuMemsetD8(d, 0x77, pitch * H));
}

int main(void)
{
    CUdeviceptr d;
    size_t pitch;
    CUstream s;

    st_setup(0);
    CHECK_CU(cuMemAllocPitch(&d, &pitch, W, H, 4));
    EXPECT(pitch <= sizeof(image) / H, "pitch %zu", pitch);
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_DEFAULT));   /* ordered after the legacy memsets */
    CHECK_CU(cuMemsetD8(d, 0x77, pitch * H));

    CHECK_CU(cuMemsetD2D8(d + 1, pitch, 0x11, 50, H));
    check(d, pitch, 1, 50, H, 1, 0x11, "cuMemsetD2D8");
    CHECK_CU(cuMemsetD2D16(d + 2, pitch, 0x2233, 40, 7));
    check(d, pitch, 2, 40, 7, 2, 0x2233, "cuMemsetD2D16");
    CHECK_CU(cuMemsetD2D32(d, pitch, 0x44556677, W / 4, H));
    check(d, pitch, 0, W / 4, H, 4, 0x44556677, "cuMemsetD2D32");
    CHECK_CU(cuMemsetD2D8Async(d, pitch, 0x99, W, 3, s));
    CHECK_CU(cuMemsetD2D16Async(d + pitch * 3, pitch, 0x8888, 1, 1, s));
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuMemsetD2D32Async(d + pitch * 4, pitch, 0x99999999, W / 4, 1, s));
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuMemcpyDtoH(image, d, pitch * H));
    EXPECT(image[pitch * 3] == 0x88 && image[pitch * 3 + 1] == 0x88 && image[pitch * 3 + 2] == 0x77,
           "cuMemsetD2D16Async: row 3 starts 0x%x 0x%x 0x%x", image[pitch * 3],
           image[pitch * 3 + 1], image[pitch * 3 + 2]);
    EXPECT(image[pitch * 4 + W - 1] == 0x99 && image[pitch * 4 + W] == 0x77,
           "cuMemsetD2D32Async: row 4 bytes %d, %d are 0x%x 0x%x", W - 1, W,
           image[pitch * 4 + W - 1], image[pitch * 4 + W]);
    CHECK_CU(cuMemsetD8(d, 0x77, pitch * H));

    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD2D16(d + 1, pitch, 0, 4, 2));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD2D32(d + 2, pitch, 0, 4, 2));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD2D32(d, pitch - 2, 0, 4, 2));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD2D16Async(d, 101, 0, 4, 2, s));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemsetD2D8(d, 10, 0, 11, 2));
    CHECK_CU(cuCtxSynchronize());
    check(d, pitch, 0, 0, 0, 1, 0, "rejected memsets");

    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuMemFree(d));
    return 0;
}
