/* SPDX-License-Identifier: MIT */
/*
 * shim_res_peer.c - copies issued from one device's context that reach another device's
 * arena.
 *
 * Two simulated devices, a 4 MiB GPU budget each.  On device 1, buffers a, b and c (2 MiB
 * each, filled by kernel) leave a on the host.  Then, with device 0's context current:
 * cuMemcpyPeer from a (evicted) into x on device 0, cuMemcpyDtoH from b (a unified-address
 * copy of device 1's memory), and cuMemcpyPeerAsync from x into c on a stream of device 0;
 * a cuMemcpy2D from b (rows of 64 KiB, starting one row in) into y on device 0, and a
 * cuMemcpy3DPeer from y into g on device 1 (structured copies, whose operands are in their
 * descriptors); a cuMemcpyBatchAsync gathering halves of a and b into z on device 0, and a
 * cuMemcpy3DBatchAsync of z into h on device 1 (batches).
 * Back on device 1 every buffer holds what it should, and a new buffer still pages the others
 * out (nothing stayed held).  The transcript must equal the one without the shim, with
 * evicted chunks mapped (host VMM) and unmapped (ELIXIR_SIM_HOST_VMM=0), and with the race
 * checker failing the run on any race.  Under the shim, device 0's access to device 1's
 * memory, granted for each copy, is taken back after it, and no chunk was pinned by them; a
 * peer copy captured into a graph (from x into e1 on device 1) pins the chunk it reaches
 * instead, as other captured work does, and the graph's run writes e1.  The graph runs last,
 * when device 1 has nothing else in use: its launch is a fence on device 1 too, which where
 * evicted chunks are unmapped pins whatever device 1 has in use.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define MIB SH_MIB
#define BYTES (2 * MIB)
#define WORDS (BYTES / 4)

static uint32_t host[WORDS];

/* Buffer p (on the current context's device or not) holds sh_pattern(seed, .). */
static void expect_holds(CUdeviceptr p, uint32_t seed, const char *what)
{
    CHECK_CU(cuMemcpyDtoH(host, p, BYTES));
    sh_expect_pattern(host, WORDS, seed, what);
    printf("%s holds pattern %u\n", what, seed);
}

#define ROW (64 * 1024)
#define ROWS (BYTES / ROW - 1)

/* The words of sh_pattern(seed, .) from row 1 of a buffer, at the start of host[] (what a
 * structured copy of rows 1.. moved to row 0): an exit naming `what` when any differs. */
static void expect_rows(CUdeviceptr p, uint32_t seed, const char *what)
{
    CHECK_CU(cuMemcpyDtoH(host, p, (size_t)ROWS * ROW));
    for (uint64_t i = 0; i < (uint64_t)ROWS * ROW / 4; i++)
        EXPECT(host[i] == sh_pattern(seed, i + ROW / 4), "%s: word %llu is 0x%08x", what,
               (unsigned long long)i, host[i]);
    printf("%s holds rows 1.. of pattern %u\n", what, seed);
}

/* A 2D copy of rows 1.. of src into dst from row 0, both device memory. */
static void copy_2d(CUdeviceptr dst, CUdeviceptr src)
{
    CUDA_MEMCPY2D p = { .srcY = 1, .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = src,
                        .srcPitch = ROW, .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                        .dstDevice = dst, .dstPitch = ROW, .WidthInBytes = ROW,
                        .Height = ROWS };
    CHECK_CU(cuMemcpy2D(&p));
}

/* A 3D peer copy of the first ROWS rows of src (context cs) into dst (context cd). */
static void copy_3d_peer(CUdeviceptr dst, CUcontext cd, CUdeviceptr src, CUcontext cs)
{
    CUDA_MEMCPY3D_PEER p = { .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = src,
                             .srcContext = cs, .srcPitch = ROW, .srcHeight = ROWS,
                             .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = dst,
                             .dstContext = cd, .dstPitch = ROW, .dstHeight = ROWS,
                             .WidthInBytes = ROW, .Height = ROWS, .Depth = 1 };
    CHECK_CU(cuMemcpy3DPeer(&p));
}

/* On stream s: a cuMemcpyBatchAsync gathering a's first half and b's second half into z,
 * then a cuMemcpy3DBatchAsync of z into h. */
static void batches(CUstream s, CUdeviceptr z, CUdeviceptr h, CUdeviceptr a, CUdeviceptr b)
{
    CUdeviceptr dsts[2] = { z, z + BYTES / 2 }, srcs[2] = { a, b + BYTES / 2 };
    size_t sizes[2] = { BYTES / 2, BYTES / 2 }, first = 0;
    CUmemcpyAttributes attr = { .srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM };
    CUDA_MEMCPY3D_BATCH_OP op = { .src.type = CU_MEMCPY_OPERAND_TYPE_POINTER,
                                  .dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER,
                                  .extent = { BYTES, 1, 1 },
                                  .srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM };

    op.src.op.ptr.ptr = z;
    op.dst.op.ptr.ptr = h;
    CHECK_CU(cuMemcpyBatchAsync(dsts, srcs, sizes, 2, &attr, &first, 1, s));
    CHECK_CU(cuMemcpy3DBatchAsync(1, &op, 0, s));
    CHECK_CU(cuStreamSynchronize(s));
}

/* p holds a's first half (pattern 1) and b's second half (pattern 2), as batches() left z. */
static void expect_gathered(CUdeviceptr p, const char *what)
{
    CHECK_CU(cuMemcpyDtoH(host, p, BYTES));
    for (uint64_t i = 0; i < WORDS; i++)
        EXPECT(host[i] == sh_pattern(i < WORDS / 2 ? 1 : 2, i), "%s: word %llu is 0x%08x",
               what, (unsigned long long)i, host[i]);
    printf("%s holds halves of patterns 1 and 2\n", what);
}

/* A peer copy from x into e1 (device 1) captured on s, run later as a graph. */
static void captured_copy(CUstream s, CUdeviceptr e1, CUdeviceptr x, CUcontext c1, CUcontext c0)
{
    CUgraph g;
    CUgraphExec ge;

    CHECK_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_CU(cuMemcpyPeerAsync(e1, c1, x, c0, BYTES, s));
    CHECK_CU(cuStreamEndCapture(s, &g));
    CHECK_CU(cuGraphInstantiate(&ge, g, 0));
    CHECK_CU(cuGraphLaunch(ge, s));
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuGraphExecDestroy(ge));
    CHECK_CU(cuGraphDestroy(g));
}

static void scenario(void)
{
    CUdeviceptr a, b, c, e, e1, g, h, x, y, z;
    CUstream s;

    CUcontext c1 = st_setup(1);
    CUfunction fill = st_function(sh_res_ptx, "sh_fill");
    CHECK_CU(cuMemAlloc(&a, BYTES));
    CHECK_CU(sh_fill_async(fill, a, WORDS, 1, NULL));
    CHECK_CU(cuMemAlloc(&b, BYTES));
    CHECK_CU(sh_fill_async(fill, b, WORDS, 2, NULL));
    CHECK_CU(cuMemAlloc(&c, BYTES));
    CHECK_CU(sh_fill_async(fill, c, WORDS, 3, NULL));
    CHECK_CU(cuMemAlloc(&e1, BYTES));
    CHECK_CU(cuMemAlloc(&g, BYTES));
    CHECK_CU(cuMemAlloc(&h, BYTES));
    CHECK_CU(cuCtxSynchronize());

    CUcontext c0 = st_setup(0);
    CHECK_CU(cuMemAlloc(&x, BYTES));
    CHECK_CU(cuMemcpyPeer(x, c0, a, c1, BYTES));
    expect_holds(x, 1, "x on device 0, copied from a on device 1");
    expect_holds(b, 2, "b on device 1, read from device 0");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemcpyPeerAsync(c, c1, x, c0, BYTES, s));
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuMemAlloc(&y, BYTES));
    copy_2d(y, b);
    expect_rows(y, 2, "y on device 0, a 2D copy from b on device 1");
    copy_3d_peer(g, c1, y, c0);
    CHECK_CU(cuMemAlloc(&z, BYTES));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    batches(s, z, h, a, b);
    CHECK_CU(cuStreamDestroy(s));
    expect_gathered(z, "z on device 0, gathered from a and b on device 1 by a batch");
    sh_expect_no_access(h, 0, "h");
    sh_expect_no_access(a, 0, "a");
    sh_expect_no_access(b, 0, "b");
    sh_expect_no_access(c, 0, "c");
    sh_expect_no_access(g, 0, "g");

    CHECK_CU(cuCtxSetCurrent(c1));
    expect_holds(c, 1, "c on device 1, copied from x on device 0");
    CHECK_CU(cuMemAlloc(&e, BYTES));
    CHECK_CU(sh_fill_async(fill, e, WORDS, 5, NULL));
    expect_holds(e, 5, "e, a new buffer on device 1");
    expect_holds(a, 1, "a afterwards");
    expect_holds(b, 2, "b afterwards");
    expect_rows(g, 2, "g on device 1, a 3D peer copy from y on device 0");
    expect_gathered(h, "h on device 1, a 3D batch's copy of z on device 0");
    CHECK_CU(cuMemFree(h));
    CHECK_CU(cuMemFree(g));
    CHECK_CU(cuMemFree(a));
    CHECK_CU(cuMemFree(b));
    CHECK_CU(cuMemFree(c));
    CHECK_CU(cuMemFree(e));

    /* Last, with only e1 left in use on device 1 and x on device 0: a graph launch is a fence
     * on every device, which where evicted chunks are unmapped pins all they have in use. */
    CHECK_CU(cuCtxSetCurrent(c0));
    CHECK_CU(cuMemFree(y));
    CHECK_CU(cuMemFree(z));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    captured_copy(s, e1, x, c1, c0);
    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuCtxSetCurrent(c1));
    expect_holds(e1, 1, "e1 on device 1, written by a captured copy from device 0");
    CHECK_CU(cuMemFree(e1));
    CHECK_CU(cuCtxSetCurrent(c0));
    CHECK_CU(cuMemFree(x));
}

static void run(const char *what, const char *host_vmm)
{
    sh_run_t plain, shim;

    sh_run_two_devices(host_vmm, "ELIXIR_GPU_MEMORY=4M", &plain, &shim);

    EXPECT(sh_migrations_out(shim.err, 1) >= 2, "%s: device 1 did not page out (a, then for e):"
           "\n%s", what, shim.err);
    int pins[2], fences[2];
    for (int dev = 0; dev < 2; dev++)
        sh_pins(shim.err, dev, &pins[dev], &fences[dev]);
    /* Device 0 pins only for the graph launch, a fence, where evicted chunks are unmapped. */
    EXPECT(pins[0] == fences[0] && pins[1] == 1 && fences[1] == 0,
           "%s: pins %d (fences %d) on device 0, %d (fences %d) on device 1; expected only "
           "fences' on device 0 and e1's on device 1:\n%s", what, pins[0], fences[0], pins[1],
           fences[1], shim.err);
    sh_same_transcript(what, &plain, &shim);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
