/* SPDX-License-Identifier: MIT */
/*
 * copy_3d.c - cuMemcpy3D and cuMemcpy3DAsync between host and device volumes with different
 * row pitches and slice heights, honouring X/Y/Z offsets on both sides and leaving everything
 * outside the copied box alone.  A slice height too small for the box is
 * CUDA_ERROR_INVALID_VALUE.
 */
#include <string.h>

#include "simtest.h"

#define W 64            /* box: bytes per row, rows, slices */
#define H 5
#define D 4
#define SP 80           /* host source: pitch, rows per slice, slices */
#define SH 6
#define SD 5
#define DP 128          /* device: pitch, rows per slice, slices */
#define DH 8
#define DD 6

static unsigned char src[SP * SH * SD];
static unsigned char image[DP * DH * DD];

static unsigned char pattern(size_t x, size_t y, size_t z)
{
    return (unsigned char)(x + y * 11 + z * 37 + 5);
}

static CUDA_MEMCPY3D box(void)
{
    CUDA_MEMCPY3D c;
    memset(&c, 0, sizeof(c));
    c.WidthInBytes = W;
    c.Height = H;
    c.Depth = D;
    return c;
}

int main(void)
{
    CUdeviceptr d;
    CUstream s;

    st_setup(0);
    for (size_t z = 0; z < SD; z++)
        for (size_t y = 0; y < SH; y++)
            for (size_t x = 0; x < SP; x++)
                src[(z * SH + y) * SP + x] = pattern(x, y, z);
    CHECK_CU(cuMemAlloc(&d, sizeof(image)));
    CHECK_CU(cuMemsetD8(d, 0xee, sizeof(image)));

    /* Host box at (2, 1, 1) to device (16, 1, 2). */
    CUDA_MEMCPY3D c = box();
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = src;
    c.srcPitch = SP;
    c.srcHeight = SH;
    c.srcXInBytes = 2;
    c.srcY = 1;
    c.srcZ = 1;
    c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.dstDevice = d;
    c.dstPitch = DP;
    c.dstHeight = DH;
    c.dstXInBytes = 16;
    c.dstY = 1;
    c.dstZ = 2;
    CHECK_CU(cuMemcpy3D(&c));
    CHECK_CU(cuMemcpyDtoH(image, d, sizeof(image)));
    for (size_t z = 0; z < DD; z++)
        for (size_t y = 0; y < DH; y++)
            for (size_t x = 0; x < DP; x++) {
                int in = z >= 2 && z < 2 + D && y >= 1 && y < 1 + H && x >= 16 && x < 16 + W;
                unsigned want = in ? pattern(x - 16 + 2, y - 1 + 1, z - 2 + 1) : 0xee;
                unsigned got = image[(z * DH + y) * DP + x];
                EXPECT(got == want, "HtoD 3D: slice %zu row %zu byte %zu is 0x%x, expected 0x%x",
                       z, y, x, got, want);
            }

    /* Device box back to a tightly packed host volume, asynchronously. */
    static unsigned char out[W * H * D];
    memset(out, 0, sizeof(out));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    c = box();
    c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = d;
    c.srcPitch = DP;
    c.srcHeight = DH;
    c.srcXInBytes = 16;
    c.srcY = 1;
    c.srcZ = 2;
    c.dstMemoryType = CU_MEMORYTYPE_HOST;
    c.dstHost = out;
    c.dstPitch = W;
    c.dstHeight = H;
    CHECK_CU(cuMemcpy3DAsync(&c, s));
    CHECK_CU(cuStreamSynchronize(s));
    for (size_t z = 0; z < D; z++)
        for (size_t y = 0; y < H; y++)
            for (size_t x = 0; x < W; x++) {
                unsigned want = pattern(x + 2, y + 1, z + 1), got = out[(z * H + y) * W + x];
                EXPECT(got == want, "DtoH 3D: slice %zu row %zu byte %zu is 0x%x, expected 0x%x",
                       z, y, x, got, want);
            }

    /* Slice height smaller than the box's rows. */
    c.dstHeight = H - 1;
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemcpy3D(&c));

    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuMemFree(d));
    return 0;
}
