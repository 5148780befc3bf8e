/* SPDX-License-Identifier: MIT */
/*
 * shim_res_unmapped_oom.c - where evicted chunks are unmapped, an operation whose memory
 * cannot all be in GPU memory at once is refused with CUDA_ERROR_OUT_OF_MEMORY, and nothing
 * else changes: the data are intact and the context goes on working.
 *
 * The simulated device has 6 MiB (three 2 MiB chunks), the GPU budget is 4 MiB, and
 * ELIXIR_SIM_HOST_VMM=0 makes evicted chunks unmapped.  Two 4 MiB buffers A and B are filled
 * by kernels, so A is evicted.  A kernel that adds B into A reaches four chunks, and so do
 * cuMemcpyDtoD and cuMemcpyDtoDAsync of all of B into A: more than the device holds, beyond
 * the budget or not.  Each must return CUDA_ERROR_OUT_OF_MEMORY without being enqueued (a
 * launch that went ahead would fault on the unmapped chunk and leave the context unusable).
 * Then cuCtxSynchronize succeeds, and A and B still hold their patterns.  A copy reaches
 * only the bytes it names, so a copy of the first half of B into A (one chunk of each)
 * succeeds, and A's second half is left as it was.  A copy or memset of no bytes reaches
 * nothing, so it succeeds even on an 8 MiB buffer C, more than the device holds: copies from
 * B into C in every form (cuMemcpyDtoD, cuMemcpyDtoDAsync, cuMemcpy, cuMemcpy2D of no rows,
 * cuMemcpy3DAsync of no layers, cuMemcpyBatchAsync of one copy of size 0) and memsets of C
 * (cuMemsetD8 of no bytes, cuMemsetD2D8 of rows of no bytes).  The statistics count three
 * refused operations, and the log names the refusal.  The scenario runs a second time
 * recording a trace (the wrappers' traced path), and once where evicted chunks stay mapped:
 * there nothing is refused and the kernel and copies run, A ending as B's pattern.
 */
#define SH_RES_KERNELS
#define ST_KERNEL_ADD_INTO
#include "shim_test.h"

#define BUF (4 * SH_MIB)
#define WORDS (BUF / 4)

static const char into_ptx[] = ST_PTX_HEADER ST_PTX_ADD_INTO;

/* Copies of no bytes from b into a in each form, and memsets of no bytes of a, none of which
 * may be refused: they reach nothing, whatever their operands. */
static void zero_copies(CUdeviceptr a, CUdeviceptr b, CUstream s)
{
    CUDA_MEMCPY2D c2;
    CUDA_MEMCPY3D c3;
    CUdeviceptr dsts[] = { a }, srcs[] = { b };
    size_t sizes[] = { 0 }, idx = 0;
    CUmemcpyAttributes attr;

    memset(&c2, 0, sizeof(c2));
    c2.srcMemoryType = c2.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c2.srcDevice = b;
    c2.dstDevice = a;
    c2.srcPitch = c2.dstPitch = c2.WidthInBytes = BUF / 2;
    memset(&c3, 0, sizeof(c3));
    c3.srcMemoryType = c3.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c3.srcDevice = b;
    c3.dstDevice = a;
    c3.srcPitch = c3.dstPitch = c3.WidthInBytes = BUF / 2;
    c3.srcHeight = c3.dstHeight = c3.Height = 2;
    memset(&attr, 0, sizeof(attr));
    attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    CHECK_CU(cuMemcpyDtoD(a, b, 0));
    CHECK_CU(cuMemcpyDtoDAsync(a, b, 0, s));
    CHECK_CU(cuMemcpy(a, b, 0));
    CHECK_CU(cuMemcpy2D(&c2));
    CHECK_CU(cuMemcpy3DAsync(&c3, s));
    CHECK_CU(cuMemcpyBatchAsync(dsts, srcs, sizes, 1, &attr, &idx, 1, s));
    CHECK_CU(cuMemsetD8(a, 0x5a, 0));
    CHECK_CU(cuMemsetD2D8Async(a, BUF / 2, 0x5a, 0, 5, s));  /* rows 0 to 4: all of a */
    CHECK_CU(cuStreamSynchronize(s));
    printf("copies and memsets of no bytes done\n");
}

/* r is what an operation reaching more than the device holds returns: refused where evicted
 * chunks are unmapped, else done. */
static void expect_refused(CUresult r, int refused, const char *what)
{
    CUresult want = refused ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
    EXPECT(r == want, "%s returned %d, expected %d", what, (int)r, (int)want);
    printf("%s: %s\n", what, refused ? "refused" : "done");
}

static void scenario(void)
{
    int refused = getenv("OOM_REFUSED") && atoi(getenv("OOM_REFUSED"));
    CUfunction fill, verify, into;
    CUdeviceptr buf[2], bad, big;
    CUstream s;
    uint64_t n = WORDS;

    sh_res_start(&fill, &verify, &bad);
    into = st_function(into_ptx, "add_into");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    sh_alloc_filled(fill, buf, 2, BUF, 1, s);
    CHECK_CU(cuStreamSynchronize(s));
    if (refused)
        EXPECT(sh_where(buf[0]) == 'U', "A lives in '%c', expected it unmapped",
               sh_where(buf[0]));

    void *args[] = { &buf[0], &buf[1], &n };
    expect_refused(sh_launch(into, s, args), refused, "a kernel adding B into A");
    CHECK_CU(cuStreamSynchronize(s));   /* (s does not wait for the legacy stream's copy) */
    expect_refused(cuMemcpyDtoD(buf[0], buf[1], BUF), refused, "cuMemcpyDtoD of B into A");
    expect_refused(cuMemcpyDtoDAsync(buf[0], buf[1], BUF, s), refused,
                   "cuMemcpyDtoDAsync of B into A");
    CHECK_CU(cuCtxSynchronize());
    /* Refused: A as filled.  Done: A = A + B, then B twice over. */
    sh_expect_verified(verify, buf[0], WORDS, refused ? 1 : 2, bad, "A");
    sh_expect_verified(verify, buf[1], WORDS, 2, bad, "B");
    printf("data intact, the context usable\n");
    CHECK_CU(cuMemAlloc(&big, 2 * BUF));
    zero_copies(big, buf[1], s);
    CHECK_CU(cuMemFree(big));
    /* A copy reaches only the bytes it names: half of B into A reaches two chunks, which fit. */
    static uint32_t host[WORDS];
    CHECK_CU(cuMemcpyDtoD(buf[0], buf[1], BUF / 2));
    CHECK_CU(cuMemcpyDtoH(host, buf[0], BUF));
    for (uint64_t i = 0; i < WORDS; i++) {
        uint32_t want = sh_pattern(i < WORDS / 2 || !refused ? 2 : 1, i);
        EXPECT(host[i] == want, "A's word %llu is 0x%08x after half of B was copied in, "
               "expected 0x%08x", (unsigned long long)i, host[i], want);
    }
    printf("half of B copied into A\n");
    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuMemFree(buf[0]));
    CHECK_CU(cuMemFree(buf[1]));
    CHECK_CU(cuMemFree(bad));
}

/* The scenario under the shim with env added; refused: ELIXIR_SIM_HOST_VMM=0. */
static void run(int refused, const char *trace)
{
    const char *env[] = { refused ? "ELIXIR_SIM_HOST_VMM=0" : "ELIXIR_SIM_HOST_VMM=1",
                          refused ? "OOM_REFUSED=1" : "OOM_REFUSED=0",
                          "ELIXIR_SIM_MEMORY=6M", "ELIXIR_GPU_MEMORY=4M", "ELIXIR_STATS=1",
                          trace, NULL };
    sh_run_t r = sh_run_ok("scenario", env);

    printf("%s", r.out);
    EXPECT(sh_stat(r.err, "operations refused (no room) ") == (refused ? 3 : 0),
           "expected %d refused operations counted:\n%s", refused ? 3 : 0, r.err);
    EXPECT(sh_count(r.err, "refused with CUDA_ERROR_OUT_OF_MEMORY") == (refused ? 3 : 0),
           "expected %d refusals logged:\n%s", refused ? 3 : 0, r.err);
    if (refused)
        EXPECT(sh_stat(r.err, "migrations to host ") > 0, "nothing was evicted:\n%s", r.err);
    sh_run_free(&r);
}

int main(int argc, char **argv)
{
    char trace[64], env[96];

    sh_scenario_child(argc, argv, scenario);
    run(1, NULL);
    snprintf(trace, sizeof(trace), "/tmp/shim-res-unmapped-oom-%d.trace", (int)getpid());
    snprintf(env, sizeof(env), "ELIXIR_TRACE=%s", trace);
    unlink(trace);
    run(1, env);
    EXPECT(access(trace, F_OK) == 0, "no trace was written at %s", trace);
    unlink(trace);
    run(0, NULL);
    printf("refused where the memory cannot fit, done where it stays mapped\n");
    return 0;
}
