/* SPDX-License-Identifier: MIT */
/*
 * coll.c - operations of the libnccl.so.2 stand-in: collectives, send/receive pairs, groups.
 *
 * A rank's call is checked, then matched with the other ranks' calls of the same operation:
 * collectives by their number on each rank (the k-th collective of every rank is one
 * operation), sends and receives by their number between the two ranks.  Its input goes into
 * the operation's staging area at once (see nccl_int.h); the call then waits until every
 * part has been called and enqueues its output.  Inside ncclGroupStart/ncclGroupEnd the
 * parts are kept until the outermost ncclGroupEnd, which puts them all in before waiting for
 * any, so one thread can drive every rank.  A clique made by ncclCommInitAll has no other
 * threads to wait for: an operation still missing parts there fails with ncclInvalidUsage.
 * Mismatched parts (kind, count, type, operator, root) fail with ncclInvalidUsage as well.
 */
#include <stdlib.h>
#include <string.h>

#include "nccl_int.h"

static __thread int group_depth;
static __thread nccl_part_t *group_parts;
static __thread size_t group_n, group_cap;

static const char *const kind_names[] = {
    [NK_ALLREDUCE] = "ncclAllReduce", [NK_BROADCAST] = "ncclBroadcast",
    [NK_REDUCE] = "ncclReduce", [NK_ALLGATHER] = "ncclAllGather",
    [NK_REDUCESCATTER] = "ncclReduceScatter", [NK_ALLTOALL] = "ncclAlltoAll",
    [NK_GATHER] = "ncclGather", [NK_SCATTER] = "ncclScatter", [NK_SEND] = "ncclSend",
    [NK_RECV] = "ncclRecv",
};

size_t nccl_type_size(ncclDataType_t t)
{
    switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
    }
}

/* ---------------------------------------------------------------- geometry */

static int is_p2p(nccl_kind_t k)
{
    return k == NK_SEND || k == NK_RECV;
}

/* Bytes of one slot of the staging area: the largest input of any part. */
static uint64_t slot_bytes(const nccl_part_t *p, int nranks)
{
    uint64_t b = p->count * nccl_type_size(p->type);
    int whole = p->kind == NK_REDUCESCATTER || p->kind == NK_ALLTOALL || p->kind == NK_SCATTER;
    return whole ? b * (uint64_t)nranks : b;
}

/* Bytes part p (index i of its operation) puts into its slot. */
static uint64_t part_input(const nccl_part_t *p, int i, int nranks)
{
    if (p->kind == NK_RECV || ((p->kind == NK_BROADCAST || p->kind == NK_SCATTER) && i != p->root))
        return 0;
    return slot_bytes(p, nranks);
}

static int part_output(const nccl_part_t *p, int i)
{
    return p->kind != NK_SEND && ((p->kind != NK_REDUCE && p->kind != NK_GATHER) || i == p->root);
}

/* ---------------------------------------------------------------- matching */

/* The counter that numbers p's operation among its kind between its ranks. */
static uint64_t *seq_of(clique_t *q, const nccl_part_t *p)
{
    int n = q->nranks, me = p->comm->rank;
    if (p->kind == NK_SEND)
        return &q->send_seq[me * n + p->root];
    if (p->kind == NK_RECV)
        return &q->recv_seq[p->root * n + me];
    return &q->coll_seq[me];
}

/* Does p agree with part o, already in the same operation? */
static int parts_agree(const nccl_part_t *p, const nccl_part_t *o)
{
    if (is_p2p(p->kind))
        return p->kind != o->kind && p->count == o->count && p->type == o->type;
    return p->kind == o->kind && p->count == o->count && p->type == o->type &&
           p->op == o->op && p->root == o->root;
}

static void pending_free(nccl_pending_t *o)
{
    free(o->parts);
    free(o->mid);
    free(o->done);
    free(o->ctx);
    free(o);
}

/* A new operation for part p, numbered seq, with its staging area. */
static nccl_pending_t *pending_new(clique_t *q, const nccl_part_t *p, uint64_t seq,
                                   ncclResult_t *r)
{
    int need = is_p2p(p->kind) ? 2 : q->nranks;
    uint64_t slot = slot_bytes(p, q->nranks);
    nccl_pending_t *o = calloc(1, sizeof(*o));
    if (!o || !(o->parts = calloc((size_t)need, sizeof(*o->parts))) ||
        !(o->mid = calloc((size_t)need, sizeof(CUevent))) ||
        !(o->done = calloc((size_t)need, sizeof(CUevent))) ||
        !(o->ctx = calloc((size_t)need, sizeof(CUcontext)))) {
        if (o)
            pending_free(o);
        *r = nccl_error(p->comm, ncclSystemError, "out of host memory for an operation");
        return NULL;
    }
    CUcontext popped;
    CUresult cr = cuCtxPushCurrent(p->comm->ctx);
    if (cr == CUDA_SUCCESS) {
        uint64_t head = (2 * (uint64_t)need * sizeof(nccl_work_t) + 255) & ~255ull;
        cr = cuMemHostAlloc(&o->mem, head + slot * (is_p2p(p->kind) ? 1 : (uint64_t)need),
                            CU_MEMHOSTALLOC_PORTABLE);
        o->work = o->mem;
        o->staging = (unsigned char *)o->mem + head;
        cuCtxPopCurrent(&popped);
    }
    if (cr != CUDA_SUCCESS) {
        pending_free(o);
        *r = nccl_cuda_error(p->comm, cr, "cuMemHostAlloc of the staging area");
        return NULL;
    }
    o->p2p = is_p2p(p->kind);
    o->seq = seq;
    o->src = p->kind == NK_SEND ? p->comm->rank : p->kind == NK_RECV ? p->root : -1;
    o->dst = p->kind == NK_SEND ? p->root : p->kind == NK_RECV ? p->comm->rank : -1;
    o->need = need;
    o->slot = slot;
    o->next = q->pending;
    q->pending = o;
    return o;
}

/* The operation p belongs to (made when p is its first part), and p's index in it. */
static nccl_pending_t *match(clique_t *q, const nccl_part_t *p, int *index, ncclResult_t *r)
{
    uint64_t *seq = seq_of(q, p);
    int src = p->kind == NK_SEND ? p->comm->rank : p->kind == NK_RECV ? p->root : -1;
    int dst = p->kind == NK_SEND ? p->root : p->kind == NK_RECV ? p->comm->rank : -1;
    nccl_pending_t *o = q->pending;
    while (o && !(o->p2p == is_p2p(p->kind) && o->seq == *seq && o->src == src && o->dst == dst))
        o = o->next;
    *index = p->kind == NK_SEND ? 0 : p->kind == NK_RECV ? 1 : p->comm->rank;
    if (o) {
        const nccl_part_t *other = o->parts[0].comm ? &o->parts[0] : NULL;
        for (int i = 0; !other && i < o->need; i++)
            other = o->parts[i].comm ? &o->parts[i] : NULL;
        if (o->parts[*index].comm || !other || !parts_agree(p, other)) {
            *r = nccl_error(p->comm, ncclInvalidUsage,
                            "%s on rank %d does not match %s of rank %d (operation %llu between "
                            "them: kind, count, datatype, operator and root must agree)",
                            kind_names[p->kind], p->comm->rank,
                            other ? kind_names[other->kind] : "?",
                            other ? other->comm->rank : -1, (unsigned long long)*seq);
            return NULL;
        }
    } else if (!(o = pending_new(q, p, *seq, r))) {
        return NULL;
    }
    ++*seq;
    o->parts[*index] = *p;
    o->have++;
    o->refs++;
    return o;
}

static void unlink_pending(clique_t *q, nccl_pending_t *o)
{
    for (nccl_pending_t **pp = &q->pending; *pp; pp = &(*pp)->next)
        if (*pp == o) {
            *pp = o->next;
            return;
        }
}

/* ---------------------------------------------------------------- enqueueing */

static CUresult event_new(CUevent *ev)
{
    return cuEventCreate(ev, CU_EVENT_DISABLE_TIMING);
}

/* Part i's input into its slot, then mid[i]; in the part's context. */
static CUresult part_put(nccl_pending_t *o, int i, int nranks)
{
    const nccl_part_t *p = &o->parts[i];
    uint64_t in = part_input(p, i, nranks);
    if (!in)
        return CUDA_SUCCESS;
    nccl_work_t *w = &o->work[2 * i];
    *w = (nccl_work_t){ .src = (uintptr_t)p->send, .bytes = in,
                        .dst = (uintptr_t)(o->staging + (o->p2p ? 0 : (uint64_t)i * o->slot)) };
    void *args[] = { &w };
    CUresult r = event_new(&o->mid[i]);
    if (r == CUDA_SUCCESS)
        r = cuLaunchKernel(p->comm->put, 1, 1, 1, 1, 1, 1, 0, p->stream, args, NULL);
    if (r == CUDA_SUCCESS)
        r = cuEventRecord(o->mid[i], p->stream);
    return r;
}

/* Part i's output, once every input is in: wait for the others' puts, compute, done[i]. */
static CUresult part_get(nccl_pending_t *o, int i, int nranks)
{
    const nccl_part_t *p = &o->parts[i];
    CUresult r = CUDA_SUCCESS;
    for (int j = 0; j < o->need && r == CUDA_SUCCESS; j++)
        if (j != i && o->mid[j])
            r = cuStreamWaitEvent(p->stream, o->mid[j], 0);
    if (r == CUDA_SUCCESS && part_output(p, i)) {
        nccl_work_t *w = &o->work[2 * i + 1];
        *w = (nccl_work_t){ .staging = (uintptr_t)o->staging, .slot = o->slot,
                            .dst = (uintptr_t)p->recv, .count = p->count, .kind = p->kind,
                            .type = (uint32_t)p->type, .op = (uint32_t)p->op,
                            .nslots = o->p2p ? 1 : (uint32_t)nranks, .rank = (uint32_t)i,
                            .root = o->p2p ? 0 : (uint32_t)p->root };
        void *args[] = { &w };
        r = cuLaunchKernel(p->comm->get, 1, 1, 1, 1, 1, 1, 0, p->stream, args, NULL);
    }
    if (r == CUDA_SUCCESS && (r = event_new(&o->done[i])) == CUDA_SUCCESS)
        r = cuEventRecord(o->done[i], p->stream);
    return r;
}

/* Run step(o, i) in part i's context; errors as NCCL reports them. */
static ncclResult_t in_context(nccl_pending_t *o, int i, int nranks,
                               CUresult (*step)(nccl_pending_t *, int, int), const char *what)
{
    CUcontext popped;
    CUresult r = cuCtxPushCurrent(o->parts[i].comm->ctx);
    if (r != CUDA_SUCCESS)
        return nccl_cuda_error(o->parts[i].comm, r, "cuCtxPushCurrent");
    o->ctx[i] = o->parts[i].comm->ctx;
    r = step(o, i, nranks);
    cuCtxPopCurrent(&popped);
    return r == CUDA_SUCCESS ? ncclSuccess : nccl_cuda_error(o->parts[i].comm, r, what);
}

/* ---------------------------------------------------------------- retiring */

/* A part's caller is done with o: the last one retires its staging area and events. */
static void release(clique_t *q, nccl_pending_t *o)
{
    if (--o->refs > 0)
        return;
    nccl_retired_t *t = calloc(1, sizeof(*t));
    CUevent *ev = calloc(2 * (size_t)o->need, sizeof(*ev));
    if (!t || !ev) {                    /* cannot keep track: wait for the events now */
        for (int i = 0; i < o->need; i++) {
            if (o->mid[i])
                cuEventSynchronize(o->mid[i]);
            if (o->done[i])
                cuEventSynchronize(o->done[i]);
        }
        free(t);
        free(ev);
        cuMemFreeHost(o->mem);
        pending_free(o);
        return;
    }
    memcpy(ev, o->mid, (size_t)o->need * sizeof(*ev));
    memcpy(ev + o->need, o->done, (size_t)o->need * sizeof(*ev));
    *t = (nccl_retired_t){ .mem = o->mem, .n = o->need, .ev = ev, .ctx = o->ctx };
    o->ctx = NULL;
    t->next = q->retired;
    q->retired = t;
    pending_free(o);
}

static int retired_done(const nccl_retired_t *t, int wait)
{
    for (int i = 0; i < 2 * t->n; i++)
        if (t->ev[i] && (wait ? cuEventSynchronize(t->ev[i]) : cuEventQuery(t->ev[i])) ==
                            CUDA_ERROR_NOT_READY)
            return 0;
    return 1;
}

static void retired_free(nccl_retired_t *t)
{
    CUcontext popped;
    for (int i = 0; i < 2 * t->n; i++)
        if (t->ev[i] && cuCtxPushCurrent(t->ctx[i % t->n]) == CUDA_SUCCESS) {
            cuEventDestroy(t->ev[i]);
            cuCtxPopCurrent(&popped);
        }
    cuMemFreeHost(t->mem);
    free(t->ev);
    free(t->ctx);
    free(t);
}

void nccl_clique_drain(clique_t *q, int wait)
{
    for (nccl_retired_t **pp = &q->retired; *pp;) {
        nccl_retired_t *t = *pp;
        if (retired_done(t, wait)) {
            *pp = t->next;
            retired_free(t);
        } else {
            pp = &t->next;
        }
    }
}

void nccl_clique_forget(clique_t *q)
{
    nccl_clique_drain(q, 1);
    while (q->pending) {
        nccl_pending_t *o = q->pending;
        q->pending = o->next;
        o->refs = 1;
        release(q, o);
    }
    nccl_clique_drain(q, 1);
}

/* ---------------------------------------------------------------- submitting */

/* o is missing parts that no other thread will bring (a one-thread clique): give it up,
 * saying so unless `quiet` (an earlier error of the same call is the one to describe). */
static ncclResult_t give_up(clique_t *q, nccl_pending_t *o, const nccl_part_t *p, int quiet)
{
    int missing = 0;
    while (missing < o->need && o->parts[missing].comm)
        missing++;
    if (!o->failed) {
        o->failed = 1;
        unlink_pending(q, o);
        for (int i = 0; i < o->need; i++)
            if (o->parts[i].comm)
                --*seq_of(q, &o->parts[i]);
    }
    if (quiet)
        return ncclInvalidUsage;
    return nccl_error(p->comm, ncclInvalidUsage,
                      "%s: %s %d has not called it, and communicators made by ncclCommInitAll "
                      "are driven by one thread: call it on every communicator between "
                      "ncclGroupStart and ncclGroupEnd", kind_names[p->kind],
                      o->p2p ? "the peer of rank" : "rank",
                      o->p2p ? p->comm->rank : (missing < o->need ? missing : -1));
}

/* Wait (under nccl_lock) until o has all its parts, then enqueue part i's output. */
static ncclResult_t finish(clique_t *q, nccl_pending_t *o, int i, int quiet)
{
    const nccl_part_t *p = &o->parts[i];
    while (o->have < o->need && !o->failed && !q->one_thread)
        pthread_cond_wait(&q->cond, &nccl_lock);
    if (o->failed || o->have < o->need)
        return give_up(q, o, p, quiet);
    return in_context(o, i, q->nranks, part_get, kind_names[p->kind]);
}

/* Put parts in (their inputs enqueued at once), then finish each: one rank's call, or a
 * whole group's. */
static ncclResult_t submit(const nccl_part_t *parts, size_t n)
{
    nccl_pending_t **ops = calloc(n ? n : 1, sizeof(*ops));
    int *idx = calloc(n ? n : 1, sizeof(*idx));
    ncclResult_t r = ncclSuccess, r2;
    size_t in = 0;
    if (!ops || !idx) {
        free(ops);
        free(idx);
        return nccl_error(parts[0].comm, ncclSystemError, "out of host memory");
    }
    pthread_mutex_lock(&nccl_lock);
    for (; in < n && r == ncclSuccess; in++) {
        clique_t *q = parts[in].comm->q;
        nccl_clique_drain(q, 0);
        if (!(ops[in] = match(q, &parts[in], &idx[in], &r)))
            break;
        r = in_context(ops[in], idx[in], q->nranks, part_put, kind_names[parts[in].kind]);
        if (ops[in]->have == ops[in]->need)
            unlink_pending(q, ops[in]);
        pthread_cond_broadcast(&q->cond);
    }
    for (size_t k = 0; k < n; k++) {
        if (!ops[k])
            continue;
        clique_t *q = parts[k].comm->q;
        if ((r2 = finish(q, ops[k], idx[k], r != ncclSuccess)) != ncclSuccess && r == ncclSuccess)
            r = r2;
        release(q, ops[k]);
    }
    pthread_mutex_unlock(&nccl_lock);
    free(ops);
    free(idx);
    return r;
}

/*
 * Non-blocking communicators: a call on one outside a group, or a group with a call on one,
 * is kept, not enqueued, and answered ncclInProgress; it is enqueued, whole, at the first poll
 * of one of its communicators (ncclCommGetAsyncError), or its finalize or destroy, and an
 * abort drops it.  So its work reaches the stream after the call returned, as NCCL's may.
 */
typedef struct deferred {
    nccl_part_t *parts;
    size_t n;
    struct deferred *next;
} deferred_t;

static pthread_mutex_t deferred_lock = PTHREAD_MUTEX_INITIALIZER;
static deferred_t *deferred_head, **deferred_tail = &deferred_head;

static int any_nonblocking(const nccl_part_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i].comm->nonblocking)
            return 1;
    return 0;
}

static ncclResult_t defer(const nccl_part_t *p, size_t n)
{
    deferred_t *d = malloc(sizeof(*d));
    nccl_part_t *parts = d ? malloc(n * sizeof(*parts)) : NULL;
    if (!parts) {
        free(d);
        return nccl_error(p[0].comm, ncclSystemError, "out of host memory for a call");
    }
    memcpy(parts, p, n * sizeof(*parts));
    *d = (deferred_t){ parts, n, NULL };
    pthread_mutex_lock(&deferred_lock);
    *deferred_tail = d;
    deferred_tail = &d->next;
    pthread_mutex_unlock(&deferred_lock);
    return ncclInProgress;
}

static int has_comm(const deferred_t *d, ncclComm_t comm)
{
    for (size_t i = 0; i < d->n; i++)
        if (d->parts[i].comm == comm)
            return 1;
    return 0;
}

/* The first kept call with a part of comm, taken off the list, or NULL. */
static deferred_t *deferred_take(ncclComm_t comm)
{
    pthread_mutex_lock(&deferred_lock);
    deferred_t **at = &deferred_head;
    while (*at && !has_comm(*at, comm))
        at = &(*at)->next;
    deferred_t *d = *at;
    if (d) {
        *at = d->next;
        if (!*at)
            deferred_tail = at;
    }
    pthread_mutex_unlock(&deferred_lock);
    return d;
}

ncclResult_t nccl_deferred_run(ncclComm_t comm, int drop)
{
    ncclResult_t r = ncclSuccess, r2;
    deferred_t *d;
    while ((d = deferred_take(comm))) {
        if (!drop && (r2 = submit(d->parts, d->n)) != ncclSuccess && r == ncclSuccess)
            r = r2;
        free(d->parts);
        free(d);
    }
    return r;
}

ncclResult_t nccl_submit(const nccl_part_t *p)
{
    if (group_depth == 0)
        return p->comm->nonblocking ? defer(p, 1) : submit(p, 1);
    if (group_n == group_cap) {
        size_t cap = group_cap ? 2 * group_cap : 16;
        nccl_part_t *parts = realloc(group_parts, cap * sizeof(*parts));
        if (!parts)
            return nccl_error(p->comm, ncclSystemError, "out of host memory for a group");
        group_parts = parts;
        group_cap = cap;
    }
    group_parts[group_n++] = *p;
    return ncclSuccess;
}

NCCL_API ncclResult_t ncclGroupStart(void)
{
    group_depth++;
    return ncclSuccess;
}

NCCL_API ncclResult_t ncclGroupEnd(void)
{
    if (group_depth == 0)
        return nccl_error(NULL, ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
    if (--group_depth > 0 || group_n == 0)
        return ncclSuccess;
    size_t n = group_n;
    group_n = 0;
    return any_nonblocking(group_parts, n) ? defer(group_parts, n) : submit(group_parts, n);
}

/* Ends the group as ncclGroupEnd does, NCCL's way: the depth goes down first, and only the
 * outermost end looks at simInfo.  With simInfo NULL it is ncclGroupEnd.  Otherwise the group
 * is dropped, not enqueued (a simulation), and simInfo, which must have been set up with
 * NCCL_SIM_INFO_INITIALIZER (its magic number is checked, ncclInvalidArgument if not), gets
 * an estimated time of 0: the stand-in models no time. */
NCCL_API ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *simInfo)
{
    const ncclSimInfo_t init = NCCL_SIM_INFO_INITIALIZER;
    if (!simInfo)
        return ncclGroupEnd();
    if (group_depth == 0)
        return nccl_error(NULL, ncclInvalidUsage,
                          "ncclGroupSimulateEnd without ncclGroupStart");
    if (--group_depth > 0)
        return ncclSuccess;
    group_n = 0;
    if (simInfo->magic != init.magic)
        return nccl_error(NULL, ncclInvalidArgument, "ncclGroupSimulateEnd: simInfo is not "
                          "set up with NCCL_SIM_INFO_INITIALIZER (the group is dropped)");
    simInfo->estimatedTime = 0;
    return ncclSuccess;
}

/* ---------------------------------------------------------------- the operations */

/* Check a call and submit it; count 0 is a no-op. */
static ncclResult_t call(nccl_part_t p)
{
    const char *fn = kind_names[p.kind];
    if (!p.comm || !nccl_comm_valid(p.comm))
        return nccl_error(NULL, ncclInvalidArgument, "%s: comm is not a communicator", fn);
    int n = p.comm->q->nranks, reduces = p.kind == NK_ALLREDUCE || p.kind == NK_REDUCE ||
                                         p.kind == NK_REDUCESCATTER;
    if ((unsigned)p.type >= (unsigned)ncclNumTypes || !nccl_type_size(p.type))
        return nccl_error(p.comm, ncclInvalidArgument,
                          "%s: datatype %d: the simulator's NCCL implements ncclInt8, ncclUint8, "
                          "ncclInt32, ncclUint32, ncclInt64, ncclUint64, ncclFloat16, "
                          "ncclFloat32, ncclFloat64 and ncclBfloat16", fn, (int)p.type);
    if (reduces && ((int)p.op < 0 || (int)p.op >= (int)ncclNumOps))
        return nccl_error(p.comm, ncclInvalidArgument,
                          "%s: operator %d: accepted are ncclSum, ncclProd, ncclMax, ncclMin and "
                          "ncclAvg", fn, (int)p.op);
    int rooted = p.kind == NK_BROADCAST || p.kind == NK_REDUCE || p.kind == NK_GATHER ||
                 p.kind == NK_SCATTER || is_p2p(p.kind);
    if (rooted && (p.root < 0 || p.root >= n))
        return nccl_error(p.comm, ncclInvalidArgument, "%s: %s %d: the communicator has %d ranks",
                          fn, is_p2p(p.kind) ? "peer" : "root", p.root, n);
    if (p.count == 0)
        return ncclSuccess;
    int needs_send = part_input(&p, p.comm->rank, n) != 0;
    int needs_recv = part_output(&p, p.comm->rank);
    if ((needs_send && !p.send) || (needs_recv && !p.recv))
        return nccl_error(p.comm, ncclInvalidArgument, "%s: %s is NULL", fn,
                          needs_send && !p.send ? "sendbuff" : "recvbuff");
    return nccl_submit(&p);
}

NCCL_API ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                                    ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                    cudaStream_t stream)
{
    return call((nccl_part_t){ comm, NK_ALLREDUCE, sendbuff, recvbuff, count, datatype, op, -1,
                               stream });
}

NCCL_API ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                                    ncclDataType_t datatype, int root, ncclComm_t comm,
                                    cudaStream_t stream)
{
    return call((nccl_part_t){ comm, NK_BROADCAST, sendbuff, recvbuff, count, datatype, ncclSum,
                               root, stream });
}

NCCL_API ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root,
                                ncclComm_t comm, cudaStream_t stream)
{
    return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

NCCL_API ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
                                 ncclDataType_t datatype, ncclRedOp_t op, int root,
                                 ncclComm_t comm, cudaStream_t stream)
{
    return call((nccl_part_t){ comm, NK_REDUCE, sendbuff, recvbuff, count, datatype, op, root,
                               stream });
}

NCCL_API ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                                    ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
    return call((nccl_part_t){ comm, NK_ALLGATHER, sendbuff, recvbuff, sendcount, datatype,
                               ncclSum, -1, stream });
}

NCCL_API ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                        ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                        cudaStream_t stream)
{
    return call((nccl_part_t){ comm, NK_REDUCESCATTER, sendbuff, recvbuff, recvcount, datatype,
                               op, -1, stream });
}

NCCL_API ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
                                   ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
    return call((nccl_part_t){ comm, NK_ALLTOALL, sendbuff, recvbuff, count, datatype, ncclSum,
                               -1, stream });
}

NCCL_API ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count,
                                 ncclDataType_t datatype, int root, ncclComm_t comm,
                                 cudaStream_t stream)
{
    return call((nccl_part_t){ comm, NK_GATHER, sendbuff, recvbuff, count, datatype, ncclSum,
                               root, stream });
}

NCCL_API ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count,
                                  ncclDataType_t datatype, int root, ncclComm_t comm,
                                  cudaStream_t stream)
{
    return call((nccl_part_t){ comm, NK_SCATTER, sendbuff, recvbuff, count, datatype, ncclSum,
                               root, stream });
}

NCCL_API ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype,
                               int peer, ncclComm_t comm, cudaStream_t stream)
{
    return call((nccl_part_t){ comm, NK_SEND, sendbuff, NULL, count, datatype, ncclSum, peer,
                               stream });
}

NCCL_API ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
                               ncclComm_t comm, cudaStream_t stream)
{
    return call((nccl_part_t){ comm, NK_RECV, NULL, recvbuff, count, datatype, ncclSum, peer,
                               stream });
}
