/* SPDX-License-Identifier: MIT */
/*
 * comm.c - communicators of the libnccl.so.2 stand-in: unique ids, initialisation, queries,
 * destruction and errors.
 *
 * A unique id names a clique of nranks communicators in this process; ncclCommInitRank joins
 * the clique its id names (creating it on first use) as the given rank, on the device of the
 * calling thread's current context (device 0's primary context when there is none), and
 * returns at once: the ranks meet at their first operation.  ncclCommInitAll makes a whole
 * clique at once, one communicator per listed device on its primary context, meant to be
 * driven by one thread inside groups.  Errors are returned as NCCL documents them and
 * described by ncclGetLastError; with NCCL_DEBUG set to WARN or INFO they are also printed.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nccl_int.h"

pthread_mutex_t nccl_lock = PTHREAD_MUTEX_INITIALIZER;

static clique_t *cliques;
static __thread char thread_error[256];
static const char id_magic[8] = "ELXNCCL";

/* ---------------------------------------------------------------- errors */

ncclResult_t nccl_error(ncclComm_t comm, ncclResult_t r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(thread_error, sizeof(thread_error), fmt, ap);
    va_end(ap);
    if (comm)
        snprintf(comm->last_error, sizeof(comm->last_error), "%s", thread_error);
    const char *debug = getenv("NCCL_DEBUG");
    if (debug && (!strcasecmp(debug, "WARN") || !strcasecmp(debug, "INFO") ||
                  !strcasecmp(debug, "TRACE")))
        fprintf(stderr, "sim-nccl: WARN %s\n", thread_error);
    return r;
}

ncclResult_t nccl_cuda_error(ncclComm_t comm, CUresult r, const char *what)
{
    const char *name = NULL;
    cuGetErrorName(r, &name);
    return nccl_error(comm, ncclUnhandledCudaError, "%s failed: %s (%d)", what,
                      name ? name : "unknown CUresult", (int)r);
}

NCCL_API const char *ncclGetErrorString(ncclResult_t r)
{
    switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=WARN for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=WARN for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
    }
}

NCCL_API const char *ncclGetLastError(ncclComm_t comm)
{
    return comm && nccl_comm_valid(comm) ? comm->last_error : thread_error;
}

NCCL_API ncclResult_t ncclGetVersion(int *version)
{
    if (!version)
        return nccl_error(NULL, ncclInvalidArgument, "ncclGetVersion: version is NULL");
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
}

/* ---------------------------------------------------------------- unique ids, cliques */

NCCL_API ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    static uint64_t counter;
    if (!id)
        return nccl_error(NULL, ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t words[4] = { (uint64_t)getpid(), (uint64_t)ts.tv_sec, (uint64_t)ts.tv_nsec, 0 };
    pthread_mutex_lock(&nccl_lock);
    words[3] = ++counter;
    pthread_mutex_unlock(&nccl_lock);
    memset(id, 0, sizeof(*id));
    memcpy(id->internal, id_magic, sizeof(id_magic));
    memcpy(id->internal + sizeof(id_magic), words, sizeof(words));
    return ncclSuccess;
}

int nccl_comm_valid(ncclComm_t comm)
{
    int ok = 0;
    pthread_mutex_lock(&nccl_lock);
    for (const clique_t *q = cliques; q && !ok; q = q->next)
        for (int r = 0; r < q->nranks && !ok; r++)
            ok = q->comms[r] == comm;
    pthread_mutex_unlock(&nccl_lock);
    return ok;
}

static void clique_free(clique_t *q)
{
    nccl_clique_forget(q);
    pthread_cond_destroy(&q->cond);
    free(q->comms);
    free(q->coll_seq);
    free(q->send_seq);
    free(q->recv_seq);
    free(q);
}

/* The clique named by id with nranks ranks, created when new; under nccl_lock. */
static clique_t *clique_get(const char *id, int nranks, ncclResult_t *r)
{
    clique_t *q = cliques;
    while (q && memcmp(q->id, id, NCCL_UNIQUE_ID_BYTES) != 0)
        q = q->next;
    if (q) {
        *r = q->nranks == nranks ? ncclSuccess : nccl_error(NULL, ncclInvalidUsage,
                 "ncclCommInitRank: nranks %d, but the ranks already joined with this unique "
                 "id said %d", nranks, q->nranks);
        return *r == ncclSuccess ? q : NULL;
    }
    size_t n = (size_t)nranks;
    q = calloc(1, sizeof(*q));
    if (!q || !(q->comms = calloc(n, sizeof(*q->comms))) ||
        !(q->coll_seq = calloc(n, sizeof(uint64_t))) ||
        !(q->send_seq = calloc(n * n, sizeof(uint64_t))) ||
        !(q->recv_seq = calloc(n * n, sizeof(uint64_t)))) {
        if (q)
            clique_free(q);
        *r = nccl_error(NULL, ncclSystemError, "out of host memory for a clique of %d ranks",
                        nranks);
        return NULL;
    }
    memcpy(q->id, id, NCCL_UNIQUE_ID_BYTES);
    q->nranks = nranks;
    pthread_cond_init(&q->cond, NULL);
    q->next = cliques;
    cliques = q;
    *r = ncclSuccess;
    return q;
}

/* ---------------------------------------------------------------- communicators */

/* Load the stand-in's kernels into comm->ctx. */
static ncclResult_t comm_load(ncclComm_t comm)
{
    CUresult r;
    if (nccl_kernels_register() != 0)
        return nccl_error(comm, ncclSystemError, "cannot register the stand-in's kernels");
    if ((r = cuCtxPushCurrent(comm->ctx)) != CUDA_SUCCESS)
        return nccl_cuda_error(comm, r, "cuCtxPushCurrent");
    r = cuModuleLoadData(&comm->mod, nccl_ptx);
    if (r == CUDA_SUCCESS)
        r = cuModuleGetFunction(&comm->put, comm->mod, "elixir_nccl_put");
    if (r == CUDA_SUCCESS)
        r = cuModuleGetFunction(&comm->get, comm->mod, "elixir_nccl_get");
    CUcontext popped;
    cuCtxPopCurrent(&popped);
    return r == CUDA_SUCCESS ? ncclSuccess : nccl_cuda_error(comm, r, "loading the kernels");
}

static void comm_release(ncclComm_t comm)
{
    if (comm->mod) {
        CUcontext popped;
        if (cuCtxPushCurrent(comm->ctx) == CUDA_SUCCESS) {
            cuModuleUnload(comm->mod);
            cuCtxPopCurrent(&popped);
        }
    }
    if (comm->retained)
        cuDevicePrimaryCtxRelease(comm->dev);
    free(comm);
}

/* A communicator on device dev (its primary context; the current one when ctx is set). */
static ncclResult_t comm_new(CUdevice dev, CUcontext ctx, ncclComm_t *out)
{
    CUresult r;
    ncclComm_t c = calloc(1, sizeof(*c));
    if (!c)
        return nccl_error(NULL, ncclSystemError, "out of host memory for a communicator");
    c->dev = dev;
    c->ctx = ctx;
    if (!ctx) {
        if ((r = cuDevicePrimaryCtxRetain(&c->ctx, dev)) != CUDA_SUCCESS) {
            free(c);
            return nccl_cuda_error(NULL, r, "cuDevicePrimaryCtxRetain");
        }
        c->retained = 1;
    }
    ncclResult_t nr = comm_load(c);
    if (nr != ncclSuccess) {
        comm_release(c);
        return nr;
    }
    *out = c;
    return ncclSuccess;
}

/* Join c to q as `rank`; under nccl_lock. */
static ncclResult_t clique_join(clique_t *q, ncclComm_t c, int rank)
{
    if (q->comms[rank])
        return nccl_error(NULL, ncclInvalidUsage, "rank %d of this unique id has joined already",
                          rank);
    c->q = q;
    c->rank = rank;
    q->comms[rank] = c;
    q->joined++;
    return ncclSuccess;
}

/* The calling thread's device and context: the current one, or device 0's primary. */
static ncclResult_t current_device(CUdevice *dev, CUcontext *ctx)
{
    CUresult r = cuInit(0);
    if (r == CUDA_SUCCESS)
        r = cuCtxGetCurrent(ctx);
    if (r == CUDA_SUCCESS && *ctx)
        r = cuCtxGetDevice(dev);
    else if (r == CUDA_SUCCESS)
        r = cuDeviceGet(dev, 0);
    return r == CUDA_SUCCESS ? ncclSuccess : nccl_cuda_error(NULL, r, "finding the device");
}

static ncclResult_t init_rank(ncclComm_t *out, int nranks, ncclUniqueId id, int rank)
{
    CUdevice dev;
    CUcontext ctx = NULL;
    ncclComm_t c;
    ncclResult_t r;
    if (!out)
        return nccl_error(NULL, ncclInvalidArgument, "ncclCommInitRank: comm is NULL");
    if (nranks < 1 || rank < 0 || rank >= nranks)
        return nccl_error(NULL, ncclInvalidArgument,
                          "ncclCommInitRank: rank %d of %d ranks (0 <= rank < nranks)", rank,
                          nranks);
    if (memcmp(id.internal, id_magic, sizeof(id_magic)) != 0)
        return nccl_error(NULL, ncclInvalidArgument,
                          "ncclCommInitRank: the unique id was not made by ncclGetUniqueId");
    if ((r = current_device(&dev, &ctx)) != ncclSuccess || (r = comm_new(dev, ctx, &c)))
        return r;
    pthread_mutex_lock(&nccl_lock);
    clique_t *q = clique_get(id.internal, nranks, &r);
    if (q)
        r = clique_join(q, c, rank);
    pthread_mutex_unlock(&nccl_lock);
    if (r != ncclSuccess)
        comm_release(c);
    else
        *out = c;
    return r;
}

NCCL_API ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    return init_rank(comm, nranks, id, rank);
}

/* Of the configuration only `blocking` is read: 0 makes the communicator non-blocking, its
 * operations answered ncclInProgress and enqueued when its state is polled (coll.c).  Its
 * creation itself completes at once (ncclSuccess), as NCCL may answer. */
NCCL_API ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id,
                                             int rank, ncclConfig_t *config)
{
    ncclResult_t r = init_rank(comm, nranks, id, rank);
    if (r == ncclSuccess && config && config->blocking == 0)
        (*comm)->nonblocking = 1;
    return r;
}

NCCL_API ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
    ncclUniqueId id;
    ncclResult_t r;
    int count = 0;
    if (!comms || ndev < 1)
        return nccl_error(NULL, ncclInvalidArgument,
                          "ncclCommInitAll: comms must not be NULL and ndev >= 1 (got %d)", ndev);
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&count) != CUDA_SUCCESS)
        return nccl_error(NULL, ncclUnhandledCudaError, "ncclCommInitAll: no CUDA driver");
    for (int i = 0; i < ndev; i++)
        if ((devlist ? devlist[i] : i) < 0 || (devlist ? devlist[i] : i) >= count)
            return nccl_error(NULL, ncclInvalidArgument,
                              "ncclCommInitAll: device %d of devlist: %d devices exist", i,
                              count);
    if ((r = ncclGetUniqueId(&id)) != ncclSuccess)
        return r;
    for (int i = 0; i < ndev; i++) {
        CUdevice dev;
        ncclComm_t c = NULL;
        if (cuDeviceGet(&dev, devlist ? devlist[i] : i) != CUDA_SUCCESS ||
            (r = comm_new(dev, NULL, &c)) != ncclSuccess) {
            while (i-- > 0)
                ncclCommDestroy(comms[i]);
            return r != ncclSuccess ? r : nccl_error(NULL, ncclUnhandledCudaError, "cuDeviceGet");
        }
        pthread_mutex_lock(&nccl_lock);
        clique_t *q = clique_get(id.internal, ndev, &r);
        if (q) {
            q->one_thread = 1;
            r = clique_join(q, c, i);
        }
        pthread_mutex_unlock(&nccl_lock);
        comms[i] = c;
    }
    return ncclSuccess;
}

/* ---------------------------------------------------------------- queries */

#define COMM_CHECK(comm, fn)                                                                   \
    do {                                                                                       \
        if (!(comm) || !nccl_comm_valid(comm))                                                 \
            return nccl_error(NULL, ncclInvalidArgument, fn ": comm is not a communicator");  \
    } while (0)

NCCL_API ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
    COMM_CHECK(comm, "ncclCommCount");
    if (!count)
        return nccl_error(comm, ncclInvalidArgument, "ncclCommCount: count is NULL");
    *count = comm->q->nranks;
    return ncclSuccess;
}

NCCL_API ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device)
{
    COMM_CHECK(comm, "ncclCommCuDevice");
    if (!device)
        return nccl_error(comm, ncclInvalidArgument, "ncclCommCuDevice: device is NULL");
    *device = (int)comm->dev;
    return ncclSuccess;
}

NCCL_API ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
    COMM_CHECK(comm, "ncclCommUserRank");
    if (!rank)
        return nccl_error(comm, ncclInvalidArgument, "ncclCommUserRank: rank is NULL");
    *rank = comm->rank;
    return ncclSuccess;
}

NCCL_API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *err)
{
    COMM_CHECK(comm, "ncclCommGetAsyncError");
    if (!err)
        return nccl_error(comm, ncclInvalidArgument, "ncclCommGetAsyncError: asyncError is NULL");
    *err = nccl_deferred_run(comm, 0);
    return ncclSuccess;
}

/* ---------------------------------------------------------------- teardown */

/* Every operation of comm's clique has been enqueued and is waited for: flush. */
NCCL_API ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
    COMM_CHECK(comm, "ncclCommFinalize");
    nccl_deferred_run(comm, 0);
    pthread_mutex_lock(&nccl_lock);
    nccl_clique_drain(comm->q, 1);
    pthread_mutex_unlock(&nccl_lock);
    return ncclSuccess;
}

NCCL_API ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    if (!comm)
        return ncclSuccess;                     /* NCCL accepts NULL */
    COMM_CHECK(comm, "ncclCommDestroy");
    nccl_deferred_run(comm, 0);
    pthread_mutex_lock(&nccl_lock);
    clique_t *q = comm->q;
    nccl_clique_drain(q, 1);
    q->comms[comm->rank] = NULL;
    if (--q->joined == 0) {
        for (clique_t **p = &cliques; *p; p = &(*p)->next)
            if (*p == q) {
                *p = q->next;
                break;
            }
        clique_free(q);
    }
    pthread_mutex_unlock(&nccl_lock);
    comm_release(comm);
    return ncclSuccess;
}

NCCL_API ncclResult_t ncclCommAbort(ncclComm_t comm)
{
    if (comm && nccl_comm_valid(comm))
        nccl_deferred_run(comm, 1);         /* (never enqueued) */
    return ncclCommDestroy(comm);
}
