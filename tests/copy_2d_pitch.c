/* SPDX-License-Identifier: MIT */
/*
 * copy_2d_pitch.c - pitched allocations and 2D copies.
 *
 * cuMemAllocPitch returns a pitch of at least the row width, aligned as the device's texture
 * pitch alignment asks, and rejects element sizes other than 4, 8 and 16.  cuMemcpy2D copies a
 * rectangle between host and device rows of different pitches, honouring the X (bytes) and Y
 * offsets on both sides, and leaves the bytes outside the rectangle alone; the same holds
 * device to device, back to the host, through unified addressing and asynchronously.  A width
 * larger than a pitch is CUDA_ERROR_INVALID_VALUE.
 */
#include <string.h>

#include "simtest.h"

#define W 300           /* bytes per row of the pitched allocation */
#define H 37
#define HP 320          /* host source pitch */
#define CW 200          /* copied rectangle */
#define CH 30

static unsigned char src[HP * H];
static unsigned char dev_image[1024 * H];

static unsigned char pattern(size_t x, size_t y)
{
    return (unsigned char)(x * 3 + y * 7 + 1);
}

static CUDA_MEMCPY2D rect(void)
{
    CUDA_MEMCPY2D c;
    memset(&c, 0, sizeof(c));
    c.WidthInBytes = CW;
    c.Height = CH;
    return c;
}

/* The pitched buffer must hold the host source's rectangle at (dx, dy), `fill` elsewhere. */
static void check_device(CUdeviceptr d, size_t pitch, size_t dx, size_t dy, unsigned fill,
                         const char *what)
{
    CHECK_CU(cuMemcpyDtoH(dev_image, d, pitch * H));
    for (size_t y = 0; y < H; y++)
        for (size_t x = 0; x < pitch; x++) {
            int in = y >= dy && y < dy + CH && x >= dx && x < dx + CW;
            unsigned want = in ? pattern(x - dx + 4, y - dy + 1) : fill;
            unsigned got = dev_image[y * pitch + x];
            EXPECT(got == want, "%s: row %zu byte %zu is 0x%x, expected 0x%x", what, y, x, got,
                   want);
        }
}

int main(void)
{
    CUdeviceptr d, d2, junk;
    size_t pitch, pitch2, junk_pitch;
    int align;
    CUstream s;

    st_setup(0);
    for (size_t y = 0; y < H; y++)
        for (size_t x = 0; x < HP; x++)
            src[y * HP + x] = pattern(x, y);

    CHECK_CU(cuMemAllocPitch(&d, &pitch, W, H, 4));
    CHECK_CU(cuDeviceGetAttribute(&align, CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, 0));
    EXPECT(pitch >= W && pitch % (size_t)align == 0 && pitch <= sizeof(dev_image) / H,
           "pitch %zu for width %d (alignment %d)", pitch, W, align);
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAllocPitch(&junk, &junk_pitch, W, H, 3));
    CHECK_CU(cuMemsetD8(d, 0xee, pitch * H));

    /* Host rectangle at (4, 1) to device (8, 2). */
    CUDA_MEMCPY2D c = rect();
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = src;
    c.srcPitch = HP;
    c.srcXInBytes = 4;
    c.srcY = 1;
    c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.dstDevice = d;
    c.dstPitch = pitch;
    c.dstXInBytes = 8;
    c.dstY = 2;
    CHECK_CU(cuMemcpy2D(&c));
    check_device(d, pitch, 8, 2, 0xee, "HtoD 2D");

    /* Device to device, into another pitched buffer at (0, 5), asynchronously. */
    CHECK_CU(cuMemAllocPitch(&d2, &pitch2, W, H, 16));
    CHECK_CU(cuMemsetD8(d2, 0, pitch2 * H));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_DEFAULT));
    c = rect();
    c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = d;
    c.srcPitch = pitch;
    c.srcXInBytes = 8;
    c.srcY = 2;
    c.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
    c.dstDevice = d2;
    c.dstPitch = pitch2;
    c.dstY = 5;
    CHECK_CU(cuMemcpy2DAsync(&c, s));
    CHECK_CU(cuStreamSynchronize(s));
    check_device(d2, pitch2, 0, 5, 0, "DtoD 2D async");

    /* Back to a host buffer of pitch 256, rectangle at (16, 3). */
    static unsigned char out[256 * H];
    memset(out, 0x5a, sizeof(out));
    c = rect();
    c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = d2;
    c.srcPitch = pitch2;
    c.srcY = 5;
    c.dstMemoryType = CU_MEMORYTYPE_HOST;
    c.dstHost = out;
    c.dstPitch = 256;
    c.dstXInBytes = 16;
    c.dstY = 3;
    CHECK_CU(cuMemcpy2D(&c));
    for (size_t y = 0; y < H; y++)
        for (size_t x = 0; x < 256; x++) {
            int in = y >= 3 && y < 3 + CH && x >= 16 && x < 16 + CW;
            unsigned want = in ? pattern(x - 16 + 4, y - 3 + 1) : 0x5a;
            EXPECT(out[y * 256 + x] == want, "DtoH 2D: row %zu byte %zu is 0x%x, expected 0x%x",
                   y, x, out[y * 256 + x], want);
        }

    /* A row wider than a pitch. */
    c.WidthInBytes = 257;
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemcpy2D(&c));

    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuMemFree(d));
    CHECK_CU(cuMemFree(d2));
    return 0;
}
