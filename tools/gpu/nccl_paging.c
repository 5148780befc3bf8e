/* SPDX-License-Identifier: MIT */
/*
 * nccl_paging.c - NCCL collectives on memory that libelixir.so pages: the `nccl` check of
 * tools/gpu/check.sh.
 *
 * Usage: LD_PRELOAD=libelixir.so ELIXIR_GPU_MEMORY=<BUDGET>M nccl_paging BUDGET_MIB
 *
 * One rank on device 0 (ncclCommInitAll).  16 pairs of send and receive buffers, together
 * four times the GPU budget, so that most of them are out in host memory when a collective
 * needs them: the shim must bring in (or hold where they are) the buffers of each call before
 * NCCL's kernel runs, and keep them until it has.  Each pair is filled with its own pattern by
 * cuMemsetD32, then run through ncclAllReduce (sum), ncclBroadcast (in place), ncclAllGather
 * and ncclReduceScatter, alone and in groups (ncclGroupStart/End) of four pairs; with one rank
 * each leaves the receive buffer equal to the send buffer, which is read back after every
 * round.  No kernel of our own: this runs on a real GPU and NCCL and on the simulator and its
 * NCCL stand-in alike.  Prints what it did; exits 1 on the first thing that is wrong.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
/* nccl.h declares ncclGroupStart() and friends without (void). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#define MIB ((uint64_t)1 << 20)
#define NPAIR 16
#define GROUP 4

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "nccl_paging: %s: %s\n", what, detail);
    exit(1);
}

#define CK(call)                                                                            \
    do {                                                                                    \
        CUresult r_ = (call);                                                               \
        if (r_ != CUDA_SUCCESS) {                                                           \
            const char *s_ = NULL;                                                          \
            cuGetErrorName(r_, &s_);                                                        \
            die(#call, s_ ? s_ : "an unknown CUresult");                                    \
        }                                                                                   \
    } while (0)

#define NK(call)                                                                            \
    do {                                                                                    \
        ncclResult_t r_ = (call);                                                           \
        if (r_ != ncclSuccess)                                                              \
            die(#call, ncclGetErrorString(r_));                                             \
    } while (0)

typedef enum { ALLREDUCE, BROADCAST, ALLGATHER, REDUCESCATTER, NOPS } op_t;

static const char *const op_names[NOPS] = { "ncclAllReduce", "ncclBroadcast", "ncclAllGather",
                                            "ncclReduceScatter" };

static CUdeviceptr sendb[NPAIR], recvb[NPAIR];
static size_t words;
static uint32_t *host;

static uint32_t pattern(unsigned pair, unsigned round)
{
    return 0x3c000000u + round * 0x10000u + pair;
}

static void enqueue(op_t op, unsigned i, ncclComm_t comm, CUstream s)
{
    void *sb = (void *)(uintptr_t)sendb[i], *rb = (void *)(uintptr_t)recvb[i];

    switch (op) {
    case ALLREDUCE:
        NK(ncclAllReduce(sb, rb, words, ncclInt32, ncclSum, comm, s));
        break;
    case BROADCAST:             /* in place: the receive buffer first takes the pattern */
        CK(cuMemcpyDtoDAsync(recvb[i], sendb[i], words * 4, s));
        NK(ncclBroadcast(rb, rb, words, ncclInt32, 0, comm, s));
        break;
    case ALLGATHER:
        NK(ncclAllGather(sb, rb, words, ncclInt32, comm, s));
        break;
    case REDUCESCATTER:
        NK(ncclReduceScatter(sb, rb, words, ncclInt32, ncclSum, comm, s));
        break;
    default:
        break;
    }
}

/* One round of `op` over every pair, in groups of GROUP when `grouped`; then every receive
 * buffer must hold its pair's pattern. */
static void round_of(op_t op, int grouped, unsigned round, ncclComm_t comm, CUstream s)
{
    char what[96];

    for (unsigned i = 0; i < NPAIR; i++) {
        CK(cuMemsetD32Async(sendb[i], pattern(i, round), words, s));
        CK(cuMemsetD32Async(recvb[i], 0, words, s));
    }
    for (unsigned i = 0; i < NPAIR; i++) {
        if (grouped && i % GROUP == 0)
            NK(ncclGroupStart());
        enqueue(op, i, comm, s);
        if (grouped && i % GROUP == GROUP - 1)
            NK(ncclGroupEnd());
    }
    CK(cuStreamSynchronize(s));
    snprintf(what, sizeof(what), "%s%s", op_names[op], grouped ? " in groups" : "");
    for (unsigned i = 0; i < NPAIR; i++) {
        CK(cuMemcpyDtoH(host, recvb[i], words * 4));
        for (size_t w = 0; w < words; w++)
            if (host[w] != pattern(i, round)) {
                char detail[128];
                snprintf(detail, sizeof(detail), "pair %u, word %zu: 0x%08x, expected 0x%08x",
                         i, w, host[w], pattern(i, round));
                die(what, detail);
            }
    }
    printf("%s: %d pairs right\n", what, NPAIR);
}

int main(int argc, char **argv)
{
    if (argc != 2 || strtoull(argv[1], NULL, 10) < 8) {
        fprintf(stderr, "usage: LD_PRELOAD=libelixir.so ELIXIR_GPU_MEMORY=<BUDGET>M "
                "%s BUDGET_MIB (at least 8)\n", argv[0]);
        return 2;
    }
    uint64_t budget = strtoull(argv[1], NULL, 10) * MIB;
    size_t bytes = budget * 4 / (2 * NPAIR) / (2 * MIB) * (2 * MIB);
    CUdevice dev;
    CUcontext ctx;
    CUstream s;
    ncclComm_t comm;
    int devs[1] = { 0 };
    unsigned round = 0;

    words = bytes / 4;
    if (!(host = malloc(bytes)))
        die("malloc", "no host memory for a buffer");
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (unsigned i = 0; i < NPAIR; i++) {
        CK(cuMemAlloc(&sendb[i], bytes));
        CK(cuMemAlloc(&recvb[i], bytes));
    }
    NK(ncclCommInitAll(&comm, 1, devs));
    printf("%d pairs of %zu MiB buffers, %zu MiB in all, one rank\n", NPAIR,
           (size_t)(bytes / MIB), (size_t)(2 * NPAIR * bytes / MIB));
    for (int grouped = 0; grouped < 2; grouped++)
        for (op_t op = ALLREDUCE; op < NOPS; op++)
            round_of(op, grouped, round++, comm, s);
    NK(ncclCommDestroy(comm));
    for (unsigned i = 0; i < NPAIR; i++) {
        CK(cuMemFree(sendb[i]));
        CK(cuMemFree(recvb[i]));
    }
    CK(cuStreamDestroy(s));
    free(host);
    printf("every collective found its buffers\n");
    return 0;
}
