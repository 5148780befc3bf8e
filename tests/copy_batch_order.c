/* SPDX-License-Identifier: MIT */
/*
 * copy_batch_order.c - batched copies are stream work like any copy.
 *
 * Order: a kernel fills a buffer, cuMemcpyBatchAsync copies it (to device and pinned memory),
 * the kernel fills it again and cuMemcpy3DBatchAsync copies it: every copy sees the fill that
 * precedes it in the stream, and a batch on a second stream made to wait for an event after
 * the kernel sees the kernel's data.  The test re-executes itself with ELIXIR_SIM_EXEC=lazy,
 * so nothing has run when the batches are issued.
 *
 * Races, each in a child process under ELIXIR_SIM_RACECHECK=fail: a batch reading, on another
 * stream, what a kernel writes is reported (naming the copy and the kernel; exit status 66),
 * and is clean with an event between the streams.  A DURING_API_CALL or ANY source may be
 * read out of stream order (the simulator reads it at the call), so a batch that reads what a
 * kernel earlier in its own stream writes breaks that order's promise and is reported (naming
 * cuMemcpyBatchAsync); with STREAM order the same program is clean.
 *
 * Faults, as for cuMemcpyAsync: a source in freed device memory, or running past the end of an
 * allocation, is accepted and the copy faults when it runs (CUDA_ERROR_ILLEGAL_ADDRESS at the
 * next synchronisation, logged), whatever the access order; an unreadable pageable source is
 * CUDA_ERROR_INVALID_VALUE at the call (failIdx naming it) and the batch does nothing.
 */
#include <sys/mman.h>

#include "copy_batch.h"
#include "simchild.h"

#define WORDS 1024
#define BYTES (WORDS * 4)

static const char ptx[] =
    ST_PTX_HEADER
    ".visible .entry batch_fill(.param .u64 p, .param .u32 n, .param .u32 v)\n{\n ret;\n}\n";

/* batch_fill(p, n, v): the n words at p become v. */
SIM_KERNEL void batch_fill(const sim_launch_t *l, void **params)
{
    unsigned *p = *(unsigned **)params[0];
    unsigned n = *(unsigned *)params[1], v = *(unsigned *)params[2];
    for (unsigned i = 0; i < n; i++)
        p[i] = v;
    sim_kernel_access(p, n * 4, SIM_ACCESS_WRITE);
}

static CUfunction fill_fn;

static void fill(CUdeviceptr p, unsigned v, CUstream s)
{
    unsigned n = WORDS;
    void *args[] = { &p, &n, &v };
    CHECK_CU(cuLaunchKernel(fill_fn, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
}

static CUresult batch1(CUdeviceptr dst, CUdeviceptr src, size_t n, CUmemcpySrcAccessOrder order,
                       CUstream s)
{
    CUdeviceptr dsts[] = { dst }, srcs[] = { src };
    size_t sizes[] = { n }, idxs[] = { 0 };
    CUmemcpyAttributes attr = cb_attr(order);
    return cuMemcpyBatchAsync(dsts, srcs, sizes, 1, &attr, idxs, 1, s);
}

/* One 3D op copying n bytes as 4 layers of 1 row. */
static CUresult batch3(CUdeviceptr dst, CUdeviceptr src, size_t n, CUmemcpySrcAccessOrder order,
                       CUstream s)
{
    CUDA_MEMCPY3D_BATCH_OP op;
    memset(&op, 0, sizeof(op));
    op.src = cb_ptr(src, 0, 0);
    op.dst = cb_ptr(dst, 0, 0);
    op.extent.width = n / 4;
    op.extent.height = 1;
    op.extent.depth = 4;
    op.srcAccessOrder = order;
    return cuMemcpy3DBatchAsync(1, &op, 0, s);
}

static void setup(void)
{
    st_setup(0);
    fill_fn = st_function(ptx, "batch_fill");
}

static void expect_words(const unsigned *p, unsigned v, const char *what)
{
    for (unsigned i = 0; i < WORDS; i++)
        EXPECT(p[i] == v, "%s: word %u is 0x%x, expected 0x%x", what, i, p[i], v);
}

/* ------------------------------------------------------------ stream order */

static void in_stream_order(void)
{
    static unsigned back[WORDS];
    CUdeviceptr a, b, c, d;
    unsigned *pinned;
    CUstream s, s2;
    CUevent e;

    setup();
    CHECK_CU(cuMemAlloc(&a, BYTES));
    CHECK_CU(cuMemAlloc(&b, BYTES));
    CHECK_CU(cuMemAlloc(&c, BYTES));
    CHECK_CU(cuMemAlloc(&d, BYTES));
    CHECK_CU(cuMemHostAlloc((void **)&pinned, BYTES, 0));
    memset(pinned, 0, BYTES);
    CHECK_CU(cuMemsetD8(a, 0, BYTES));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));

    fill(a, 0x1111, s);
    CUdeviceptr dsts[] = { b, cb_host(pinned) }, srcs[] = { a, a };
    size_t sizes[] = { BYTES, BYTES }, idxs[] = { 0 };
    CUmemcpyAttributes attr = cb_attr(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM);
    CHECK_CU(cuMemcpyBatchAsync(dsts, srcs, sizes, 2, &attr, idxs, 1, s));
    fill(a, 0x2222, s);
    CHECK_CU(batch3(c, a, BYTES, CU_MEMCPY_SRC_ACCESS_ORDER_STREAM, s));
    CHECK_CU(cuEventRecord(e, s));
    CHECK_CU(cuStreamWaitEvent(s2, e, 0));
    CHECK_CU(batch1(d, a, BYTES, CU_MEMCPY_SRC_ACCESS_ORDER_STREAM, s2));
    CHECK_CU(cuStreamSynchronize(s2));
    CHECK_CU(cuStreamSynchronize(s));

    CHECK_CU(cuMemcpyDtoH(back, b, BYTES));
    expect_words(back, 0x1111, "cuMemcpyBatchAsync after the first fill, to device");
    expect_words(pinned, 0x1111, "cuMemcpyBatchAsync after the first fill, to pinned");
    CHECK_CU(cuMemcpyDtoH(back, c, BYTES));
    expect_words(back, 0x2222, "cuMemcpy3DBatchAsync after the second fill");
    CHECK_CU(cuMemcpyDtoH(back, d, BYTES));
    expect_words(back, 0x2222, "cuMemcpyBatchAsync on a stream waiting for an event");

    CHECK_CU(cuEventDestroy(e));
    CHECK_CU(cuStreamDestroy(s2));
    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuMemFreeHost(pinned));
    CHECK_CU(cuMemFree(d));
    CHECK_CU(cuMemFree(c));
    CHECK_CU(cuMemFree(b));
    CHECK_CU(cuMemFree(a));
}

/* ------------------------------------------------------------ races */

enum { OTHER_STREAM, OTHER_STREAM_EVENT, DURING_SAME_STREAM, ANY_SAME_STREAM,
       STREAM_SAME_STREAM };

static void race_program(void *arg)
{
    int how = *(int *)arg;
    CUdeviceptr a, b;
    CUstream s1, s2;
    CUevent e;

    setup();
    CHECK_CU(cuMemAlloc(&a, BYTES));
    CHECK_CU(cuMemAlloc(&b, BYTES));
    CHECK_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    fill(a, 7, s1);
    CHECK_CU(cuEventRecord(e, s1));
    if (how == OTHER_STREAM_EVENT)
        CHECK_CU(cuStreamWaitEvent(s2, e, 0));
    if (how == OTHER_STREAM || how == OTHER_STREAM_EVENT)
        CHECK_CU(batch3(b, a, BYTES, CU_MEMCPY_SRC_ACCESS_ORDER_STREAM, s2));
    else
        CHECK_CU(batch1(b, a, BYTES,
                        how == DURING_SAME_STREAM ? CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL
                        : how == ANY_SAME_STREAM  ? CU_MEMCPY_SRC_ACCESS_ORDER_ANY
                                                  : CU_MEMCPY_SRC_ACCESS_ORDER_STREAM, s1));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuEventDestroy(e));
    CHECK_CU(cuStreamDestroy(s1));
    CHECK_CU(cuStreamDestroy(s2));
    CHECK_CU(cuMemFree(a));
    CHECK_CU(cuMemFree(b));
}

static void races(void)
{
    static const char *const env[] = { "ELIXIR_SIM_RACECHECK=fail", NULL };
    static const char *const copy_kernel[] = { "race:", "memcpy", "batch_fill", NULL };
    static const char *const host_kernel[] = { "race:", "cuMemcpyBatchAsync", "batch_fill",
                                               NULL };
    static const struct {
        int how, status;
        const char *const *needles;
        const char *what;
    } runs[] = {
        { OTHER_STREAM, 66, copy_kernel, "batch on another stream" },
        { OTHER_STREAM_EVENT, 0, NULL, "batch on another stream after an event" },
        { DURING_SAME_STREAM, 66, host_kernel, "DURING_API_CALL after a kernel writing it" },
        { ANY_SAME_STREAM, 66, host_kernel, "ANY after a kernel writing it" },
        { STREAM_SAME_STREAM, 0, NULL, "STREAM order after a kernel writing it" },
    };
    st_child_t c;

    for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
        int how = runs[i].how;
        st_run_child(race_program, &how, env, &c);
        st_child_expect(&c, runs[i].status, runs[i].needles);
        if (!runs[i].status)
            EXPECT(!strstr(c.err, "race"), "%s: expected no race report, got:\n%s",
                   runs[i].what, c.err);
        st_child_free(&c);
    }
}

/* ------------------------------------------------------------ faults */

enum { BY_MEMCPY_ASYNC, BY_BATCH, BY_BATCH_DURING, BY_BATCH_3D, NBY };
enum { FREED, PAST_END };

typedef struct fault_case {
    int by, where;
} fault_case_t;

static void fault_program(void *arg)
{
    const fault_case_t *fc = arg;
    CUdeviceptr dst, src;
    CUstream s;
    size_t n = BYTES;

    setup();
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&dst, 2 * BYTES));
    CHECK_CU(cuMemAlloc(&src, BYTES));      /* the last allocation: nothing follows it */
    if (fc->where == FREED)
        CHECK_CU(cuMemFree(src));
    else
        n = 2 * BYTES;
    switch (fc->by) {
    case BY_MEMCPY_ASYNC: CHECK_CU(cuMemcpyAsync(dst, src, n, s)); break;
    case BY_BATCH: CHECK_CU(batch1(dst, src, n, CU_MEMCPY_SRC_ACCESS_ORDER_STREAM, s)); break;
    case BY_BATCH_DURING:
        CHECK_CU(batch1(dst, src, n, CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL, s));
        break;
    default: CHECK_CU(batch3(dst, src, n, CU_MEMCPY_SRC_ACCESS_ORDER_STREAM, s)); break;
    }
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuStreamSynchronize(s));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
}

static void faults(void)
{
    static const char *const logged[] = { "illegal address", "memcpy", NULL };
    st_child_t c;

    for (int by = 0; by < NBY; by++)
        for (int where = FREED; where <= PAST_END; where++) {
            fault_case_t fc = { by, where };
            st_run_child(fault_program, &fc, NULL, &c);
            st_child_expect(&c, 0, logged);
            st_child_free(&c);
        }
}

/* An unreadable pageable source: refused at the call, as by cuMemcpyAsync, and nothing done. */
static void unreadable_pageable(void)
{
    static unsigned back[WORDS], ok[WORDS];
    void *bad = mmap(NULL, BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CUdeviceptr d;
    CUstream s;
    size_t fail = 77;

    EXPECT(bad != MAP_FAILED, "mmap");
    for (unsigned i = 0; i < WORDS; i++)
        ok[i] = i + 1;
    cb_lookup();
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&d, 2 * BYTES));
    CHECK_CU(cuMemsetD8(d, 0, 2 * BYTES));
    CHECK_CU(cuCtxSynchronize());
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoDAsync(d, bad, BYTES, s));

    CUdeviceptr dsts[] = { d, d + BYTES }, srcs[] = { cb_host(ok), cb_host(bad) };
    size_t sizes[] = { BYTES, BYTES }, idxs[] = { 0 };
    CUmemcpyAttributes attr = cb_attr(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM);
    EXPECT(cb_abis[1].version == 12080, "the ABI table changed");
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
              cb_copy(&cb_abis[1], dsts, srcs, sizes, 2, &attr, idxs, 1, &fail, s));
    EXPECT(fail == 1, "failIdx %zu, expected 1 (the unreadable source)", fail);
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuMemcpyDtoH(back, d, BYTES));
    expect_words(back, 0, "the first copy of a refused batch");

    CHECK_CU(cuMemFree(d));
    CHECK_CU(cuStreamDestroy(s));
    munmap(bad, BYTES);
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_SIM_EXEC=lazy", NULL };

    st_reexec(argv, env);
    races();
    faults();
    in_stream_order();
    unreadable_pageable();
    printf("stream order, races, faults: ok\n");
    return 0;
}
