/* SPDX-License-Identifier: MIT */
/*
 * shim_res_span_pitch.c - a 2D or 3D copy or a 2D memset whose rows lie far apart, in
 * allocations with others between them, reaches only the chunks its rows touch.
 *
 * Six adjacent 2 MiB allocations (one after the other, without and with the shim: checked)
 * under a 4 MiB GPU budget, two chunks, on a device of 8 MiB.  Rows of 4 KiB a pitch of 10 MiB
 * apart start in the first and end in the last: between them lie four, which the operation
 * never touches.  A cuMemsetD2D32, a cuMemcpy2D to the host, a cuMemcpy2D from the host and
 * a cuMemcpy3D to the host (two slices of one row) each touch two chunks, after the buffers
 * were filled and so evicted.  The driver takes each of them, so the shim must not refuse one
 * for reaching more than the device holds (where evicted chunks are unmapped, what an
 * operation reaches must all be in GPU memory), and the results must be right: the
 * transcripts must match without and with the shim, evicted chunks mapped and unmapped.
 * The 2D and 3D copies are made again within one 12 MiB buffer, whose chunks between the
 * rows are not reached either.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define BYTES (2 * SH_MIB)
#define N 6
#define PITCH ((N - 1) * BYTES)
#define ROW 4096u
#define WORDS (ROW / 4)

static CUfunction fill;
static CUdeviceptr buf[N];

/* Every buffer holds pattern i + 1 and the last two filled evicted the first two. */
static void prepare(void)
{
    for (uint32_t i = 0; i < N; i++)
        CHECK_CU(sh_fill_async(fill, buf[i], BYTES / 4, i + 1, NULL));
    CHECK_CU(cuCtxSynchronize());
}

static void expect_value(const uint32_t *host, uint32_t n, uint32_t v, const char *what)
{
    for (uint32_t i = 0; i < n; i++)
        EXPECT(host[i] == v, "%s: word %u is 0x%08x, expected 0x%08x", what, i, host[i], v);
}

/* Word i of host is word from + i of pattern seed, for n words. */
static void expect_run(const uint32_t *host, uint32_t n, uint32_t seed, uint32_t from,
                       const char *what)
{
    for (uint32_t i = 0; i < n; i++)
        EXPECT(host[i] == sh_pattern(seed, from + i), "%s: word %u is 0x%08x, expected 0x%08x",
               what, i, host[i], sh_pattern(seed, from + i));
}

/* The first rows of A and D hold v; the rest of them, B and C kept their patterns. */
static void expect_rows(uint32_t v, const char *what)
{
    uint32_t host[2 * WORDS];

    CHECK_CU(cuMemcpyDtoH(host, buf[0], 2 * ROW));
    expect_value(host, WORDS, v, what);
    expect_run(host + WORDS, WORDS, 1, WORDS, what);
    CHECK_CU(cuMemcpyDtoH(host, buf[N - 1], 2 * ROW));
    expect_value(host, WORDS, v, what);
    expect_run(host + WORDS, WORDS, N, WORDS, what);
    for (uint32_t i = 1; i < N - 1; i++) {
        CHECK_CU(cuMemcpyDtoH(host, buf[i], ROW));
        sh_expect_pattern(host, WORDS, i + 1, what);
    }
}

/* The same copies within one buffer as large as the six, filled a chunk at a time (so
 * evicted in part): they reach the chunks of their rows, not the whole buffer. */
static void one_buffer(CUDA_MEMCPY2D *p, CUDA_MEMCPY3D *r, uint32_t *host)
{
    CUdeviceptr big;

    uint32_t *part = malloc(BYTES);

    EXPECT(part, "out of memory");
    CHECK_CU(cuMemAlloc(&big, N * BYTES));
    for (uint32_t j = 0; j < N; j++) {      /* (a kernel would reach more than the device) */
        for (uint32_t w = 0; w < BYTES / 4; w++)
            part[w] = sh_pattern(7, j * (BYTES / 4) + w);
        CHECK_CU(cuMemcpyHtoD(big + j * BYTES, part, BYTES));
    }
    free(part);
    p->srcDevice = r->srcDevice = big;
    CHECK_CU(cuMemcpy2D(p));
    expect_run(host, WORDS, 7, 0, "cuMemcpy2D within one buffer");
    expect_run(host + WORDS, WORDS, 7, PITCH / 4, "cuMemcpy2D within one buffer");
    memset(host, 0, 2 * ROW);
    CHECK_CU(cuMemcpy3D(r));
    expect_run(host, WORDS, 7, 0, "cuMemcpy3D within one buffer");
    expect_run(host + WORDS, WORDS, 7, PITCH / 4, "cuMemcpy3D within one buffer");
    printf("cuMemcpy2D and cuMemcpy3D within one buffer: right\n");
    CHECK_CU(cuMemFree(big));
}

static void scenario(void)
{
    static uint32_t host[2 * WORDS];

    st_setup(0);
    fill = st_function(sh_res_ptx, "sh_fill");
    for (int i = 0; i < N; i++) {
        CHECK_CU(cuMemAlloc(&buf[i], BYTES));
        EXPECT(!i || buf[i] == buf[i - 1] + BYTES, "buffer %d does not follow the one before",
               i);
    }
    printf("%d adjacent buffers\n", N);

    prepare();
    CHECK_CU(cuMemsetD2D32(buf[0], PITCH, 0x5a5a5a5au, WORDS, 2));
    expect_rows(0x5a5a5a5au, "cuMemsetD2D32");
    printf("cuMemsetD2D32 over the first and last: right\n");

    CUDA_MEMCPY2D p = { .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = buf[0],
                        .srcPitch = PITCH, .dstMemoryType = CU_MEMORYTYPE_HOST,
                        .dstHost = host, .dstPitch = ROW, .WidthInBytes = ROW, .Height = 2 };
    prepare();
    CHECK_CU(cuMemcpy2D(&p));
    sh_expect_pattern(host, WORDS, 1, "cuMemcpy2D to the host");
    sh_expect_pattern(host + WORDS, WORDS, N, "cuMemcpy2D to the host");
    printf("cuMemcpy2D from the first and last: right\n");

    CUDA_MEMCPY2D q = { .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = buf[0],
                        .dstPitch = PITCH, .srcMemoryType = CU_MEMORYTYPE_HOST,
                        .srcHost = host, .srcPitch = ROW, .WidthInBytes = ROW, .Height = 2 };
    for (uint32_t i = 0; i < 2 * WORDS; i++)
        host[i] = 0x11111111u;
    prepare();
    CHECK_CU(cuMemcpy2D(&q));
    expect_rows(0x11111111u, "cuMemcpy2D from the host");
    printf("cuMemcpy2D into the first and last: right\n");

    CUDA_MEMCPY3D r = { .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = buf[0],
                        .srcPitch = PITCH, .srcHeight = 1, .dstMemoryType = CU_MEMORYTYPE_HOST,
                        .dstHost = host, .dstPitch = ROW, .dstHeight = 1, .WidthInBytes = ROW,
                        .Height = 1, .Depth = 2 };
    prepare();
    CHECK_CU(cuMemcpy3D(&r));
    sh_expect_pattern(host, WORDS, 1, "cuMemcpy3D to the host");
    sh_expect_pattern(host + WORDS, WORDS, N, "cuMemcpy3D to the host");
    printf("cuMemcpy3D from the first and last: right\n");
    for (int i = 0; i < N; i++)
        CHECK_CU(cuMemFree(buf[i]));
    one_buffer(&p, &r, host);
}

static void run(const char *what, const char *host_vmm)
{
    sh_paged_same(what, host_vmm, "ELIXIR_SIM_MEMORY=8M", NULL);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
