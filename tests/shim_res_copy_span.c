/* SPDX-License-Identifier: MIT */
/*
 * shim_res_copy_span.c - a copy or memset whose range starts in one allocation and runs on
 * into the next one reaches both, and both must be made resident.
 *
 * The driver takes a copy's addresses as a range of the unified address space: nothing in
 * cuda.h ties a 1D, 2D or 3D copy or a memset to the allocation of its first byte, virtual
 * memory management exists to make several allocations one contiguous range, and the
 * simulator (like the shim's arena, one reservation per device) copies any range that is
 * mapped.  Two 2 MiB allocations A and B made one after the other are adjacent there, without
 * and with the shim (checked).  Under a 4 MiB GPU budget, A and B are filled by kernels, then
 * evicted by filling two more buffers, before each operation over A's second half and B's
 * first half: cuMemcpyDtoH, cuMemcpyHtoDAsync, cuMemcpyDtoD (source spanning),
 * cuMemsetD32, a 2D copy to the host and a 2D memset whose second row lies in B, and a 3D
 * copy to the host whose second slice does.  Each result is read back and checked.  When only
 * A was made resident, B's evicted chunk was read or written where evicted chunks are
 * unmapped (a fault), and reached without ordering where they are mapped.  The transcripts
 * must match without and with the shim, evicted chunks mapped and unmapped.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define MIB SH_MIB
#define BYTES (2 * SH_MIB)
#define HALF (SH_MIB / 4)           /* words in half an allocation */

typedef struct bufs {
    CUfunction fill;
    CUdeviceptr a, b, c, d;
    uint32_t *host;
} bufs_t;

/* A and B hold patterns 1 and 2, and are evicted by C and D (patterns 3 and 4). */
static void prepare(const bufs_t *x)
{
    CHECK_CU(sh_fill_async(x->fill, x->a, BYTES / 4, 1, NULL));
    CHECK_CU(sh_fill_async(x->fill, x->b, BYTES / 4, 2, NULL));
    CHECK_CU(sh_fill_async(x->fill, x->c, BYTES / 4, 3, NULL));
    CHECK_CU(sh_fill_async(x->fill, x->d, BYTES / 4, 4, NULL));
}

/* Word i of host from word `from` of pattern seed onwards, for n words. */
static void expect_run(const uint32_t *host, uint64_t n, uint32_t seed, uint64_t from,
                       const char *what)
{
    for (uint64_t i = 0; i < n; i++)
        EXPECT(host[i] == sh_pattern(seed, from + i), "%s: word %llu is 0x%08x, expected 0x%08x",
               what, (unsigned long long)i, host[i], sh_pattern(seed, from + i));
}

static void expect_value(const uint32_t *host, uint64_t n, uint32_t v, const char *what)
{
    for (uint64_t i = 0; i < n; i++)
        EXPECT(host[i] == v, "%s: word %llu is 0x%08x, expected 0x%08x", what,
               (unsigned long long)i, host[i], v);
}

/* After an operation that wrote A's second half and B's first half: A's first half and B's
 * second half kept patterns 1 and 2; the written halves go into x->host (A's, then B's). */
static void read_written(const bufs_t *x, const char *what)
{
    CHECK_CU(cuMemcpyDtoH(x->host, x->a, MIB));
    expect_run(x->host, HALF, 1, 0, what);
    CHECK_CU(cuMemcpyDtoH(x->host, x->b + MIB, MIB));
    expect_run(x->host, HALF, 2, HALF, what);
    CHECK_CU(cuMemcpyDtoH(x->host, x->a + MIB, BYTES));
}

static void span_dtoh(const bufs_t *x)
{
    prepare(x);
    CHECK_CU(cuMemcpyDtoH(x->host, x->a + MIB, BYTES));
    expect_run(x->host, HALF, 1, HALF, "cuMemcpyDtoH");
    expect_run(x->host + HALF, HALF, 2, 0, "cuMemcpyDtoH");
}

static void span_htod(const bufs_t *x)
{
    prepare(x);
    for (uint64_t i = 0; i < 2 * HALF; i++)
        x->host[i] = sh_pattern(5, i);
    CHECK_CU(cuMemcpyHtoDAsync(x->a + MIB, x->host, BYTES, NULL));
    CHECK_CU(cuCtxSynchronize());
    read_written(x, "cuMemcpyHtoDAsync");
    expect_run(x->host, 2 * HALF, 5, 0, "cuMemcpyHtoDAsync");
}

static void span_dtod(const bufs_t *x)
{
    prepare(x);
    CHECK_CU(cuMemcpyDtoD(x->c, x->a + MIB, BYTES));
    CHECK_CU(cuMemcpyDtoH(x->host, x->c, BYTES));
    expect_run(x->host, HALF, 1, HALF, "cuMemcpyDtoD");
    expect_run(x->host + HALF, HALF, 2, 0, "cuMemcpyDtoD");
}

static void span_memset(const bufs_t *x)
{
    prepare(x);
    CHECK_CU(cuMemsetD32(x->a + MIB, 0x5a5a5a5au, BYTES / 4));
    read_written(x, "cuMemsetD32");
    expect_value(x->host, 2 * HALF, 0x5a5a5a5au, "cuMemsetD32");
}

/* Two rows of 4 KiB a MiB apart from A's middle: the second row is B's first 4 KiB. */
static void span_2d(const bufs_t *x)
{
    CUDA_MEMCPY2D p = { .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = x->a + MIB,
                        .srcPitch = MIB, .dstMemoryType = CU_MEMORYTYPE_HOST,
                        .dstHost = x->host, .dstPitch = 4096, .WidthInBytes = 4096,
                        .Height = 2 };
    prepare(x);
    CHECK_CU(cuMemcpy2D(&p));
    expect_run(x->host, 1024, 1, HALF, "cuMemcpy2D");
    expect_run(x->host + 1024, 1024, 2, 0, "cuMemcpy2D");

    prepare(x);
    CHECK_CU(cuMemsetD2D32(x->a + MIB, MIB, 0x77777777u, 1024, 2));
    CHECK_CU(cuMemcpyDtoH(x->host, x->a + MIB, 4096));
    expect_value(x->host, 1024, 0x77777777u, "cuMemsetD2D32");
    CHECK_CU(cuMemcpyDtoH(x->host, x->b, 8192));
    expect_value(x->host, 1024, 0x77777777u, "cuMemsetD2D32");
    expect_run(x->host + 1024, 1024, 2, 1024, "cuMemsetD2D32");
}

/* Two slices of one 4 KiB row a MiB apart from A's middle: the second is B's first 4 KiB. */
static void span_3d(const bufs_t *x)
{
    CUDA_MEMCPY3D p = { .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = x->a + MIB,
                        .srcPitch = MIB, .srcHeight = 1, .dstMemoryType = CU_MEMORYTYPE_HOST,
                        .dstHost = x->host, .dstPitch = 4096, .dstHeight = 1,
                        .WidthInBytes = 4096, .Height = 1, .Depth = 2 };
    prepare(x);
    CHECK_CU(cuMemcpy3D(&p));
    expect_run(x->host, 1024, 1, HALF, "cuMemcpy3D");
    expect_run(x->host + 1024, 1024, 2, 0, "cuMemcpy3D");
}

static void scenario(void)
{
    bufs_t x;
    static void (*const ops[])(const bufs_t *) = { span_dtoh, span_htod, span_dtod,
                                                   span_memset, span_2d, span_3d };

    st_setup(0);
    x.fill = st_function(sh_res_ptx, "sh_fill");
    x.host = malloc(BYTES);
    EXPECT(x.host, "out of memory");
    CHECK_CU(cuMemAlloc(&x.a, BYTES));
    CHECK_CU(cuMemAlloc(&x.b, BYTES));
    CHECK_CU(cuMemAlloc(&x.c, BYTES));
    CHECK_CU(cuMemAlloc(&x.d, BYTES));
    EXPECT(x.b == x.a + BYTES, "B (0x%llx) does not follow A (0x%llx): nothing to test",
           (unsigned long long)x.b, (unsigned long long)x.a);
    printf("B follows A\n");
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        ops[i](&x);
        printf("operation %zu across A and B: right\n", i);
    }
    CHECK_CU(cuMemFree(x.a));
    CHECK_CU(cuMemFree(x.b));
    CHECK_CU(cuMemFree(x.c));
    CHECK_CU(cuMemFree(x.d));
    free(x.host);
}

static void run(const char *what, const char *host_vmm)
{
    sh_paged_same(what, host_vmm, NULL, NULL);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
