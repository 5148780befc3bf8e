/* SPDX-License-Identifier: MIT */
/*
 * nccl_test.h - helpers for the tests that use NCCL (tests/nccl_*.c, shim_nccl_*.c,
 * conc_nccl_*.c), linked against the simulator's libnccl.so.2 stand-in: CUDA's nccl.h
 * included without its old-style prototypes tripping -Wstrict-prototypes, a checking macro
 * that prints NCCL's own description of an error, and ranks on their devices with a
 * stream and buffers each.
 */
#ifndef NCCL_TEST_H
#define NCCL_TEST_H

#include <string.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#include "simtest.h"

#define NT_MAX_RANKS 8

/* The call must return `want`; otherwise print both (and NCCL's last error) and exit 1. */
#define EXPECT_NCCL(want, call)                                                                \
    do {                                                                                       \
        ncclResult_t got_ = (call);                                                            \
        if (got_ != (want)) {                                                                  \
            fprintf(stderr, "%s:%d: %s\n  expected %d (%s), got %d (%s): %s\n", __FILE__,      \
                    __LINE__, #call, (int)(want), ncclGetErrorString(want), (int)got_,         \
                    ncclGetErrorString(got_), ncclGetLastError(NULL));                         \
            exit(1);                                                                           \
        }                                                                                      \
    } while (0)
#define CHECK_NCCL(call) EXPECT_NCCL(ncclSuccess, call)

/* `call` made for every rank r in [0, n) inside one group (one thread drives every rank, so
 * a collective outside a group could never complete); each must succeed. */
#define NT_EACH_RANK(r, n, call)                                                               \
    do {                                                                                       \
        CHECK_NCCL(ncclGroupStart());                                                          \
        for (int r = 0; r < (n); r++)                                                          \
            CHECK_NCCL(call);                                                                  \
        CHECK_NCCL(ncclGroupEnd());                                                            \
    } while (0)

/* One rank: its communicator, device context, stream and two device buffers. */
typedef struct nt_rank {
    ncclComm_t comm;
    CUcontext ctx;
    CUstream stream;
    CUdeviceptr a, b;
    size_t bytes;
} nt_rank_t;

/* Make rank r's context current. */
static inline void nt_use(const nt_rank_t *r)
{
    CHECK_CU(cuCtxSetCurrent(r->ctx));
}

/* Stream and two buffers of `bytes` on device `dev` for rank r (its comm set elsewhere). */
static inline void nt_rank_setup(nt_rank_t *r, int dev, size_t bytes)
{
    CHECK_CU(cuDevicePrimaryCtxRetain(&r->ctx, dev));
    nt_use(r);
    CHECK_CU(cuStreamCreate(&r->stream, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&r->a, bytes));
    CHECK_CU(cuMemAlloc(&r->b, bytes));
    r->bytes = bytes;
}

/* n ranks on devices 0..n-1 with one ncclCommInitAll. */
static inline void nt_ranks_all(nt_rank_t *rk, int n, size_t bytes)
{
    ncclComm_t comms[NT_MAX_RANKS];
    CHECK_CU(cuInit(0));
    CHECK_NCCL(ncclCommInitAll(comms, n, NULL));
    for (int i = 0; i < n; i++) {
        rk[i].comm = comms[i];
        nt_rank_setup(&rk[i], i, bytes);
    }
}

static inline void nt_ranks_free(nt_rank_t *rk, int n)
{
    for (int i = 0; i < n; i++) {
        nt_use(&rk[i]);
        CHECK_CU(cuStreamSynchronize(rk[i].stream));
        CHECK_NCCL(ncclCommDestroy(rk[i].comm));
        CHECK_CU(cuMemFree(rk[i].a));
        CHECK_CU(cuMemFree(rk[i].b));
        CHECK_CU(cuStreamDestroy(rk[i].stream));
    }
}

/* Copy host bytes to/from device memory of rank r, ordered with its stream. */
static inline void nt_put(const nt_rank_t *r, CUdeviceptr d, const void *host, size_t bytes)
{
    nt_use(r);
    CHECK_CU(cuMemcpyHtoDAsync(d, host, bytes, r->stream));
    CHECK_CU(cuStreamSynchronize(r->stream));
}

static inline void nt_get(const nt_rank_t *r, void *host, CUdeviceptr d, size_t bytes)
{
    nt_use(r);
    CHECK_CU(cuStreamSynchronize(r->stream));
    CHECK_CU(cuMemcpyDtoH(host, d, bytes));
}

#endif
