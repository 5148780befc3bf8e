/* SPDX-License-Identifier: MIT */
/*
 * nccl_int.h - what the files of the libnccl.so.2 stand-in share: communicators and the
 * cliques of ranks they form (comm.c), operations matched across ranks and enqueued
 * (coll.c), and the host kernels that move and reduce the data (kernels.c).
 *
 * The stand-in runs every rank in one process, each rank on its own simulated device (one
 * thread per rank, or one thread driving all ranks inside ncclGroupStart/ncclGroupEnd).
 * An operation is enqueued once every rank taking part has called it: each rank copies its
 * input into a pinned host staging area with a kernel on its own stream, waits (by event)
 * for the others' copies, and computes its output from the staging area with a second
 * kernel on its own stream.  Only public Driver API calls are made, so an interposed driver
 * (libelixir.so) sees the kernels and events exactly as it sees the application's.
 */
#ifndef SIM_NCCL_INT_H
#define SIM_NCCL_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
/* nccl.h declares ncclGroupStart() and friends without (void). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#include "simcuda.h"

#define NCCL_API __attribute__((visibility("default")))

/* The operations of a rank, matched with the other ranks' by kind and sequence number. */
typedef enum nccl_kind {
    NK_ALLREDUCE, NK_BROADCAST, NK_REDUCE, NK_ALLGATHER, NK_REDUCESCATTER, NK_ALLTOALL,
    NK_GATHER, NK_SCATTER, NK_SEND, NK_RECV
} nccl_kind_t;

typedef struct clique clique_t;

struct ncclComm {
    clique_t *q;
    int rank;
    CUdevice dev;
    CUcontext ctx;              /* the device's primary context (retained) or the caller's */
    int retained;               /* ctx is a retained primary context */
    CUmodule mod;               /* the stand-in's kernels, loaded in ctx */
    CUfunction put, get;
    int nonblocking;            /* made with config.blocking 0: calls answer ncclInProgress */
    char last_error[256];
};

/* One rank's part of an operation, as it called it. */
typedef struct nccl_part {
    ncclComm_t comm;
    nccl_kind_t kind;
    const void *send;
    void *recv;
    size_t count;
    ncclDataType_t type;
    ncclRedOp_t op;
    int root;                   /* root rank, or the peer of a send or receive; -1: none */
    CUstream stream;
} nccl_part_t;

/*
 * What one of the stand-in's kernels does, in pinned host memory beside the staging area:
 * the kernels take only its address, so the buffers they touch are not among their
 * arguments (as with NCCL's own kernels, whose work descriptors an interposed driver cannot
 * decode).  put copies bytes from src to dst; get computes rank's output of an operation of
 * `kind` into dst from nslots slots of `slot` bytes at staging.
 */
typedef struct nccl_work {
    uint64_t src, dst, bytes;
    uint64_t staging, slot, count;
    uint32_t kind, type, op, nslots, rank, root;
} nccl_work_t;

/*
 * An operation being matched across its ranks.  Each rank's part copies its input into its
 * slot of `staging` as soon as it is called (elixir_nccl_put, then the event mid[i]); once
 * every part is in, each rank's thread enqueues its output (elixir_nccl_get, after waiting
 * for every mid) and done[i].  The last part to finish hands staging and events to the
 * clique's retire list.
 */
typedef struct nccl_pending {
    int p2p;                    /* a send/receive pair: parts[0] sends, parts[1] receives */
    uint64_t seq;               /* the collective's number, or the pair's between src and dst */
    int src, dst;               /* p2p: sender and receiver ranks */
    int need, have;             /* parts expected and called */
    int refs;                   /* parts whose callers have not finished with it */
    int failed;                 /* given up: a part can never come (one-thread clique) */
    void *mem;                  /* pinned host memory: work[2 * need], then the staging */
    nccl_work_t *work;          /* per part: its put's at 2i, its get's at 2i + 1 */
    unsigned char *staging;     /* `slot` bytes per part */
    uint64_t slot;
    CUevent *mid, *done;        /* per part: after its put, after its last kernel (or NULL) */
    CUcontext *ctx;             /* per part: the context of its events */
    nccl_part_t *parts;         /* by rank (collectives) or [send, receive] */
    struct nccl_pending *next;
} nccl_pending_t;

/* What an operation leaves behind: its staging area and events, freed once all completed. */
typedef struct nccl_retired {
    void *mem;
    int n;
    CUevent *ev;                /* 2n: mid then done, NULL where none */
    CUcontext *ctx;             /* n */
    struct nccl_retired *next;
} nccl_retired_t;

struct clique {
    char id[NCCL_UNIQUE_ID_BYTES];
    int nranks, joined;
    int one_thread;             /* made by ncclCommInitAll: one thread drives every rank */
    ncclComm_t *comms;          /* by rank */
    uint64_t *coll_seq;         /* collectives each rank has called */
    uint64_t *send_seq, *recv_seq;  /* nranks x nranks: pairs called, by [src * n + dst] */
    nccl_pending_t *pending;    /* operations not yet complete */
    nccl_retired_t *retired;
    pthread_cond_t cond;        /* a part joined an operation */
    clique_t *next;
};

/* One lock for every clique: operations are rare next to what they move. */
extern pthread_mutex_t nccl_lock;

/* ---------------------------------------------------------------- comm.c */

/* Set comm's last error (ncclGetLastError) and the thread's, log it under NCCL_DEBUG, and
 * return r. */
ncclResult_t nccl_error(ncclComm_t comm, ncclResult_t r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A CUDA call's failure as NCCL reports it. */
ncclResult_t nccl_cuda_error(ncclComm_t comm, CUresult r, const char *what);
/* Is comm a live communicator of this library? */
int nccl_comm_valid(ncclComm_t comm);

/* ---------------------------------------------------------------- coll.c */

/* A rank's part of an operation (validated by the caller): enqueued at once, or queued
 * until ncclGroupEnd inside a group. */
ncclResult_t nccl_submit(const nccl_part_t *p);
/* Enqueue the calls of comm deferred by its non-blocking mode (each with the rest of its
 * group), in the order they were made; `drop`: forget them instead (an abort).  The first
 * error, or ncclSuccess. */
ncclResult_t nccl_deferred_run(ncclComm_t comm, int drop);
/* Free the retired staging areas of q whose events completed (all of them, waiting, when
 * `wait`); under nccl_lock. */
void nccl_clique_drain(clique_t *q, int wait);
/* Free what is left of q's operations (its last communicator is destroyed). */
void nccl_clique_forget(clique_t *q);
/* Bytes of one element of t, or 0 for a type the stand-in does not implement. */
size_t nccl_type_size(ncclDataType_t t);

/* ---------------------------------------------------------------- kernels.c */

/* The PTX of the stand-in's kernels, elixir_nccl_put(work) and elixir_nccl_get(work) (a
 * nccl_work_t), registered with the simulator by nccl_kernels_register. */
extern const char nccl_ptx[];
int nccl_kernels_register(void);

#endif
