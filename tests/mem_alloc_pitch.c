/* SPDX-License-Identifier: MIT */
/*
 * mem_alloc_pitch.c - cuMemAllocPitch pads each row: the pitch is at least the requested
 * width, a multiple of the device's texture pitch alignment, the allocation 256-byte aligned
 * and at least pitch * height bytes; a 2D copy through it with that pitch round-trips.  The
 * element size may only be 4, 8 or 16.
 */
#include "memtest.h"

#define W 1000
#define H 37

int main(void)
{
    static unsigned char in[H][W], out[H][W];
    CUdeviceptr d, base, x;
    size_t pitch, size, p;
    int align;

    st_setup(0);
    CHECK_CU(cuDeviceGetAttribute(&align, CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, 0));
    CHECK_CU(cuMemAllocPitch(&d, &pitch, W, H, 4));
    EXPECT(pitch >= W, "pitch %zu for a width of %d", pitch, W);
    EXPECT(align > 0 && pitch % (size_t)align == 0, "pitch %zu is not a multiple of %d", pitch,
           align);
    EXPECT(d % 256 == 0, "pitched allocation at 0x%llx", (unsigned long long)d);
    CHECK_CU(cuMemGetAddressRange(&base, &size, d));
    EXPECT(base == d && size >= pitch * H, "range 0x%llx+%zu for %zu x %d",
           (unsigned long long)base, size, pitch, H);

    for (int y = 0; y < H; y++)
        for (int i = 0; i < W; i++)
            in[y][i] = (unsigned char)(y * 7 + i);
    CUDA_MEMCPY2D c;
    memset(&c, 0, sizeof(c));
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = in;
    c.srcPitch = W;
    c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c.dstDevice = d;
    c.dstPitch = pitch;
    c.WidthInBytes = W;
    c.Height = H;
    CHECK_CU(cuMemcpy2D(&c));
    memset(&c, 0, sizeof(c));
    c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = d;
    c.srcPitch = pitch;
    c.dstMemoryType = CU_MEMORYTYPE_HOST;
    c.dstHost = out;
    c.dstPitch = W;
    c.WidthInBytes = W;
    c.Height = H;
    CHECK_CU(cuMemcpy2D(&c));
    EXPECT(memcmp(in, out, sizeof(in)) == 0, "2D round trip through pitch %zu differs", pitch);

    /* Row y of the allocation starts at d + y * pitch. */
    unsigned char b;
    CHECK_CU(cuMemcpyDtoH(&b, d + 5 * pitch + 3, 1));
    EXPECT(b == in[5][3], "element (5, 3): expected %u, got %u", in[5][3], b);

    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAllocPitch(&x, &p, W, H, 3));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAllocPitch(&x, &p, W, H, 32));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemAllocPitch(&x, NULL, W, H, 4));
    CHECK_CU(cuMemAllocPitch(&x, &p, 1, 1, 16));
    EXPECT(p >= 1 && p % (size_t)align == 0, "pitch %zu for one byte", p);
    CHECK_CU(cuMemFree(x));
    CHECK_CU(cuMemFree(d));
    return 0;
}
