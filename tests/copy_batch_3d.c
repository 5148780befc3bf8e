/* SPDX-License-Identifier: MIT */
/*
 * copy_batch_3d.c - cuMemcpy3DBatchAsync with pointer operands, through each of its four ABIs
 * (CUDA 12.8 and 13.0, default and per-thread stream, found with cuGetProcAddress_v2).  One
 * batch of three boxes of W x H x D bytes:
 *   0. pageable host volume (row length SP, layer height SH) at (3, 1, 1) to a device volume
 *      (DP, DH) at (5, 2, 1), the operands' pointers at the boxes' first bytes;
 *   1. device volume (P2, H2) at (2, 1, 0) to a tightly packed device buffer (row length and
 *      layer height 0);
 *   2. the same device box to pinned host memory whose row length and layer height equal the
 *      extent's width and height (the smallest allowed).
 * Every byte of each destination is checked, the ones outside the boxes included, so a wrong
 * pitch, layer height or element count shows.  A successful 12.8 call sets failIdx to SIZE_MAX
 * (no copy failed), as the real driver does.
 */
#include "copy_batch.h"

#define W 48
#define H 5
#define D 3
#define SP 64           /* pageable source: row length, layer height, layers */
#define SH 7
#define SD 4
#define DP 80           /* device destination */
#define DH 8
#define DD 5
#define P2 100          /* device source */
#define H2 6
#define D2 4

static unsigned char src[SP * SH * SD], image[DP * DH * DD], src2[P2 * H2 * D2];
static unsigned char packed[W * H * D];

static unsigned char pattern(size_t x, size_t y, size_t z, unsigned seed)
{
    return (unsigned char)(x + y * 13 + z * 41 + seed);
}

static void fill(unsigned char *v, size_t pitch, size_t rows, size_t layers, unsigned seed)
{
    for (size_t z = 0; z < layers; z++)
        for (size_t y = 0; y < rows; y++)
            for (size_t x = 0; x < pitch; x++)
                v[(z * rows + y) * pitch + x] = pattern(x, y, z, seed);
}

/* A tightly packed W x H x D box must hold the source box at (x0, y0, z0). */
static void expect_packed(const unsigned char *p, size_t x0, size_t y0, size_t z0, unsigned seed,
                          const char *abi, const char *what)
{
    for (size_t z = 0; z < D; z++)
        for (size_t y = 0; y < H; y++)
            for (size_t x = 0; x < W; x++) {
                unsigned want = pattern(x + x0, y + y0, z + z0, seed);
                unsigned got = p[(z * H + y) * W + x];
                EXPECT(got == want, "%s: %s: layer %zu row %zu byte %zu is 0x%x, expected 0x%x",
                       abi, what, z, y, x, got, want);
            }
}

static CUDA_MEMCPY3D_BATCH_OP box(CUmemcpy3DOperand from, CUmemcpy3DOperand to,
                                  CUmemcpySrcAccessOrder order)
{
    CUDA_MEMCPY3D_BATCH_OP op;
    memset(&op, 0, sizeof(op));
    op.src = from;
    op.dst = to;
    op.extent.width = W;
    op.extent.height = H;
    op.extent.depth = D;
    op.srcAccessOrder = order;
    return op;
}

static void round_trip(const cb_abi_t *a, CUstream h, CUstream q, CUdeviceptr dimage,
                       CUdeviceptr dsrc2, CUdeviceptr dpacked, unsigned char *pinned,
                       unsigned seed)
{
    size_t fail = 77;

    fill(src, SP, SH, SD, seed);
    fill(src2, P2, H2, D2, seed + 100);
    CHECK_CU(cuMemcpyHtoD(dsrc2, src2, sizeof(src2)));
    CHECK_CU(cuMemsetD8(dimage, 0xee, sizeof(image)));
    CHECK_CU(cuMemsetD8(dpacked, 0xee, sizeof(packed)));
    memset(pinned, 0xee, sizeof(packed));
    CHECK_CU(cuCtxSynchronize());

    CUDA_MEMCPY3D_BATCH_OP ops[] = {
        box(cb_ptr(cb_host(src + (1 * SH + 1) * SP + 3), SP, SH),
            cb_ptr(dimage + (1 * DH + 2) * DP + 5, DP, DH), CU_MEMCPY_SRC_ACCESS_ORDER_STREAM),
        box(cb_ptr(dsrc2 + (0 * H2 + 1) * P2 + 2, P2, H2), cb_ptr(dpacked, 0, 0),
            CU_MEMCPY_SRC_ACCESS_ORDER_ANY),
        box(cb_ptr(dsrc2 + (0 * H2 + 1) * P2 + 2, P2, H2), cb_ptr(cb_host(pinned), W, H),
            CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL),
    };
    CHECK_CU(cb_copy3d(a, 3, ops, &fail, 0, h));
    /* The 12.8 ABI's failIdx is SIZE_MAX on success (as the real driver writes it). */
    EXPECT(fail == (a->version == 12080 ? SIZE_MAX : 77), "%s: failIdx %zu after success",
           a->label, fail);
    CHECK_CU(cuStreamSynchronize(q));

    CHECK_CU(cuMemcpyDtoH(image, dimage, sizeof(image)));
    for (size_t z = 0; z < DD; z++)
        for (size_t y = 0; y < DH; y++)
            for (size_t x = 0; x < DP; x++) {
                int in = z >= 1 && z < 1 + D && y >= 2 && y < 2 + H && x >= 5 && x < 5 + W;
                unsigned want = in ? pattern(x - 5 + 3, y - 2 + 1, z - 1 + 1, seed) : 0xee;
                unsigned got = image[(z * DH + y) * DP + x];
                EXPECT(got == want, "%s: pageable to device: layer %zu row %zu byte %zu is 0x%x, "
                       "expected 0x%x", a->label, z, y, x, got, want);
            }
    CHECK_CU(cuMemcpyDtoH(packed, dpacked, sizeof(packed)));
    expect_packed(packed, 2, 1, 0, seed + 100, a->label, "device to packed device");
    expect_packed(pinned, 2, 1, 0, seed + 100, a->label, "device to pinned");
}

int main(void)
{
    CUdeviceptr dimage, dsrc2, dpacked;
    unsigned char *pinned;
    CUstream s;

    st_setup(0);
    cb_lookup();
    CHECK_CU(cuMemAlloc(&dimage, sizeof(image)));
    CHECK_CU(cuMemAlloc(&dsrc2, sizeof(src2)));
    CHECK_CU(cuMemAlloc(&dpacked, sizeof(packed)));
    CHECK_CU(cuMemHostAlloc((void **)&pinned, sizeof(packed), 0));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

    for (int i = 0; i < CB_NABIS; i++) {
        const cb_abi_t *a = &cb_abis[i];
        if (a->per_thread)
            round_trip(a, NULL, CU_STREAM_PER_THREAD, dimage, dsrc2, dpacked, pinned, 9u * i);
        else
            round_trip(a, s, s, dimage, dsrc2, dpacked, pinned, 9u * i);
        printf("%s: %s: ok\n", a->label, a->sym3d);
    }

    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuMemFreeHost(pinned));
    CHECK_CU(cuMemFree(dpacked));
    CHECK_CU(cuMemFree(dsrc2));
    CHECK_CU(cuMemFree(dimage));
    return 0;
}
