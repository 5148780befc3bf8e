/* SPDX-License-Identifier: MIT */
/*
 * copy_batch.c - cuMemcpyBatchAsync moves every copy of a batch, through each of its four ABIs
 * (CUDA 12.8 and 13.0, default and per-thread stream, found with cuGetProcAddress_v2): device
 * to device, pinned and pageable host to device, device to pinned and pageable host, and host
 * to host, under three attribute groups (STREAM; ANY with the overlap hint; DURING_API_CALL).
 *
 * The host-side rules are those of cuMemcpyAsync: a pageable source is taken at the call,
 * copies into pageable memory and host-to-host copies are done when the call returns, and the
 * rest runs later, in stream order, reading a STREAM-ordered source when it runs.  A
 * DURING_API_CALL source is read at the call, so the program may overwrite it as soon as the
 * call returns.  A copy of size 0 does nothing.  The per-thread ABIs take stream 0 as the
 * per-thread stream; every ABI takes CU_STREAM_PER_THREAD.  A successful 12.8 call sets failIdx
 * to SIZE_MAX (no copy failed), as the real driver does.  The test re-executes itself with
 * ELIXIR_SIM_EXEC=lazy, so "has not run yet" is deterministic.
 */
#include <stdlib.h>

#include "copy_batch.h"
#include "simchild.h"

#define N 4096

enum { D_SRC, D_DST0, D_DST1, D_DST2, D_DST3, NDEV };
enum { P_SRC, P_SRC2, P_DST, NPIN };

static CUdeviceptr dev[NDEV];
static unsigned char *pin[NPIN];
static unsigned char page_src[N], page_dst[N], page_dst2[N], back[N];

static void fill(unsigned char *p, unsigned seed)
{
    for (size_t i = 0; i < N; i++)
        p[i] = (unsigned char)(i * 7 + seed);
}

static void expect_host(const unsigned char *p, unsigned seed, const char *abi, const char *what)
{
    for (size_t i = 0; i < N; i++)
        EXPECT(p[i] == (unsigned char)(i * 7 + seed), "%s: %s: byte %zu is 0x%x, expected 0x%x",
               abi, what, i, p[i], (unsigned char)(i * 7 + seed));
}

static void expect_dev(CUdeviceptr d, unsigned seed, const char *abi, const char *what)
{
    CHECK_CU(cuMemcpyDtoH(back, d, N));
    expect_host(back, seed, abi, what);
}

/* Copies that run in stream order, with the three attribute groups; checks what has happened
 * when the call returns and what has after synchronising. */
static void batch_async(const cb_abi_t *a, CUstream h, CUstream q, unsigned seed)
{
    CUdeviceptr dsts[] = { dev[D_DST0], dev[D_DST1], dev[D_DST2], cb_host(pin[P_DST]),
                           dev[D_DST3] };
    CUdeviceptr srcs[] = { dev[D_SRC], cb_host(pin[P_SRC]), cb_host(page_src), dev[D_SRC],
                           cb_host(pin[P_SRC2]) };
    size_t sizes[] = { N, N, N, N, N }, idxs[] = { 0, 2, 4 }, fail = 77;
    CUmemcpyAttributes attrs[] = { cb_attr(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM),
                                   cb_attr(CU_MEMCPY_SRC_ACCESS_ORDER_ANY),
                                   cb_attr(CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL) };
    attrs[1].flags = CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE;

    fill(pin[P_SRC], seed + 1);
    fill(page_src, seed + 2);
    fill(pin[P_SRC2], seed + 3);
    memset(pin[P_DST], 0, N);
    CHECK_CU(cb_copy(a, dsts, srcs, sizes, 5, attrs, idxs, 3, &fail, h));
    /* The 12.8 ABI's failIdx is SIZE_MAX on success (as the real driver writes it). */
    EXPECT(fail == (a->version == 12080 ? SIZE_MAX : 77), "%s: failIdx %zu after success",
           a->label, fail);
    for (size_t i = 0; i < N; i++)
        EXPECT(pin[P_DST][i] == 0, "%s: device to pinned copy done before it ran", a->label);
    fill(pin[P_SRC], seed + 4);     /* STREAM order: read when the copy runs */
    fill(page_src, seed + 5);       /* pageable: taken at the call */
    fill(pin[P_SRC2], seed + 6);    /* DURING_API_CALL: read at the call */
    EXPECT_CU(CUDA_ERROR_NOT_READY, cuStreamQuery(q));     /* (lets the lazy executor run) */
    CHECK_CU(cuStreamSynchronize(q));
    expect_dev(dev[D_DST0], seed, a->label, "device to device");
    expect_dev(dev[D_DST1], seed + 4, a->label, "pinned to device, STREAM order");
    expect_dev(dev[D_DST2], seed + 2, a->label, "pageable to device");
    expect_host(pin[P_DST], seed, a->label, "device to pinned");
    expect_dev(dev[D_DST3], seed + 3, a->label, "pinned to device, DURING_API_CALL");
}

/* Copies into pageable memory and host to host, and one of size 0: done when the call
 * returns. */
static void batch_into_pageable(const cb_abi_t *a, CUstream h, unsigned seed)
{
    CUdeviceptr dsts[] = { cb_host(page_dst), 0, cb_host(page_dst2) };
    CUdeviceptr srcs[] = { dev[D_SRC], 0, cb_host(pin[P_SRC]) };
    size_t sizes[] = { N, 0, N }, idxs[] = { 0 };
    CUmemcpyAttributes attr = cb_attr(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM);

    memset(page_dst, 0, N);
    memset(page_dst2, 0, N);
    fill(pin[P_SRC], seed + 7);
    CHECK_CU(cb_copy(a, dsts, srcs, sizes, 3, &attr, idxs, 1, NULL, h));
    expect_host(page_dst, seed, a->label, "device to pageable, at return");
    expect_host(page_dst2, seed + 7, a->label, "pinned to pageable, at return");
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_SIM_EXEC=lazy", NULL };
    CUstream s;

    st_reexec(argv, env);
    st_setup(0);
    cb_lookup();
    for (int i = 0; i < NDEV; i++)
        CHECK_CU(cuMemAlloc(&dev[i], N));
    for (int i = 0; i < NPIN; i++)
        CHECK_CU(cuMemHostAlloc((void **)&pin[i], N, 0));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

    for (int i = 0; i < CB_NABIS; i++) {
        const cb_abi_t *a = &cb_abis[i];
        unsigned seed = 16u * (unsigned)i + 3;
        fill(back, seed);
        CHECK_CU(cuMemcpyHtoD(dev[D_SRC], back, N));
        for (int d = D_DST0; d < NDEV; d++)
            CHECK_CU(cuMemsetD8(dev[d], 0, N));
        CHECK_CU(cuCtxSynchronize());
        /* Stream 0 is the per-thread stream for the per-thread ABIs. */
        if (a->per_thread)
            batch_async(a, NULL, CU_STREAM_PER_THREAD, seed);
        else
            batch_async(a, s, s, seed);
        batch_into_pageable(a, a->per_thread ? NULL : CU_STREAM_PER_THREAD, seed);
        printf("%s: %s: ok\n", a->label, a->sym);
    }

    CHECK_CU(cuStreamDestroy(s));
    for (int i = 0; i < NPIN; i++)
        CHECK_CU(cuMemFreeHost(pin[i]));
    for (int i = 0; i < NDEV; i++)
        CHECK_CU(cuMemFree(dev[i]));
    return 0;
}
