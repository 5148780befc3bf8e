/* SPDX-License-Identifier: MIT */
/*
 * res_nccl.c - the buffers of NCCL operations: resident before the call, held until its use
 * is recorded.
 *
 * An NCCL call enqueues its work inside the library (or, in a group, at ncclGroupEnd), through
 * kernels whose arguments the shim may not be able to read.  So before the call every chunk
 * of its send and receive ranges is made usable by its device (brought into GPU memory as far
 * as the budget allows, or at all where evicted chunks are unmapped) and held: taken off the
 * LRU list so that nothing, the library's own launches included, evicts it.  After the call
 * (after the outermost ncclGroupEnd for a call inside a group) the operation becomes the last
 * use of those chunks on its stream, exactly as a launch's does, and the hold is released.
 * The device's lock is not held across the library's call, which launches through the shim.
 * A range of unknown size (an element type the shim does not know) holds its whole allocation.
 * On a capturing stream nothing is held: the work runs when its graph is launched, and graph
 * launches are fences (res_launch.c).
 *
 * The plan (ELIXIR_POLICY=plan, res_plan.c).  Each call is an operation of the iteration on
 * each device whose chunks it reaches, on its stream, in the order the host made the calls: a
 * call inside a group is an operation of its own, issued where it was called (its buffers are
 * held from there), though NCCL enqueues the group's work at its end.  It reads the chunks of
 * its send range and writes those of its receive range: overwrites them where the range
 * covers a chunk whole and the call writes its receive buffer on every rank (all but reduce
 * and gather, which write only the root's), reads and writes a chunk of both (in place) or of
 * a range of unknown size.  While the plan is followed, the call is matched against it, the
 * moves the plan puts before it are issued first, and its stream waits by events for the
 * prefetches of its chunks still in flight, as a launch's does; the host waits for no
 * migration the plan started, so no rank waits for another's transfers.  What is still away
 * is brought in as before, by the reactive engine.  The launches NCCL makes inside the call
 * are part of it: no operations of the plan of their own (they are still made resident as
 * every launch is).  Its device time comes from two timing events on its stream (res_plan_time.c),
 * one before the call (after its chunks were brought in), one after the call that enqueued
 * its work returned: the call itself, or a group's outermost ncclGroupEnd.  The calls of a
 * group on one stream run as one piece of work, whose time the last of them takes; the others
 * count 0.  A call on a non-blocking communicator (ncclInProgress) may enqueue its work after
 * it returns: it is not timed (res_nccl_untime), and its buffers stay held, their use not
 * recorded, until its communicator reports ncclSuccess (wrap_nccl.c).
 */
#include <pthread.h>
#include <stdlib.h>

#include "../policy/policy.h"
#include "res_int.h"
#include "res_ptime.h"

/* What one NCCL call holds on one device. */
typedef struct held_dev {
    res_dev_t *d;
    collect_t k;
} held_dev_t;

struct res_nccl {
    CUstream stream;
    CUcontext ctx;                  /* the stream's context, where NCCL enqueues the call (for
                                     * a default stream, its communicator's device's:
                                     * comm_ctx); made current around the shim's work for it */
    pthread_t thread;               /* the calling thread (whose per-thread stream it is) */
    int ndev;
    held_dev_t dev[2];              /* the devices owning the send and receive ranges */
};

SHIM_TLS int res_nccl_depth;

void res_nccl_library(int enter)
{
    res_nccl_depth += enter ? 1 : -1;
}

/* Does [p, p + bytes) meet [lo, hi)? */
static int meets(uint64_t p, uint64_t bytes, uint64_t lo, uint64_t hi)
{
    return p && p < hi && p + bytes > lo;
}

/* How call o reaches the chunk [lo, hi) of its arena (res_access_fn_t; see the top). */
static uint8_t access_of(const void *arg, uint64_t lo, uint64_t hi)
{
    const res_nccl_op_t *o = arg;
    uint64_t p = o->ptr[1], n = o->bytes[1];
    if ((o->ptr[0] && !o->bytes[0]) || (p && !n))
        return POL_RW;
    uint8_t a = meets(o->ptr[0], o->bytes[0], lo, hi) ? POL_READ : 0;
    if (meets(p, n, lo, hi))
        a = a ? POL_RW : o->recv_whole && p <= lo && p + n >= hi ? POL_OVERWRITE : POL_WRITE;
    return a ? a : POL_RW;
}

static uint32_t chunk_of(const res_dev_t *d, uint64_t off)
{
    return (uint32_t)(d->chunk_shift >= 0 ? off >> d->chunk_shift : off / d->chunk);
}

/* The chunks in use of [p, p + bytes) into k (bytes 0: of p's whole allocation). */
static void add_range(collect_t *k, uint64_t p, uint64_t bytes)
{
    const res_dev_t *d = k->d;
    uint64_t off = p - d->base;
    if (!bytes) {
        res_collect_ptr(k, p);
        return;
    }
    uint64_t end = bytes > d->size - off ? d->size : off + bytes;
    for (uint32_t ci = chunk_of(d, off), last = chunk_of(d, end - 1); ci <= last; ci++)
        if (d->chunks[ci].tier != TIER_NONE)
            res_collect_chunk(k, ci);
}

/* The entry of h for device d (added when new; not locked yet).  Its context is the stream's,
 * whose events it records (one thread may drive the ranks of several devices, whichever
 * context is current): for a default stream the communicator's device's (comm_ctx). */
static held_dev_t *entry_for(res_nccl_t *h, res_dev_t *d, CUcontext ctx)
{
    for (int i = 0; i < h->ndev; i++)
        if (h->dev[i].d == d)
            return &h->dev[i];
    held_dev_t *e = &h->dev[h->ndev++];
    e->d = d;
    e->k = (collect_t){ .d = d, .ctx = ctx, .cap = INLINE_IDS };
    return e;
}

/* Take the entries' locks in device order, so that two calls never wait on each other;
 * each entry gets a new serial. */
static void lock_all(res_nccl_t *h)
{
    if (h->ndev == 2 && h->dev[0].d->device > h->dev[1].d->device) {
        held_dev_t t = h->dev[0];
        h->dev[0] = h->dev[1];
        h->dev[1] = t;
    }
    for (int i = 0; i < h->ndev; i++) {
        res_dev_t *d = h->dev[i].d;
        h->dev[i].k.ids = h->dev[i].k.ids ? h->dev[i].k.ids : h->dev[i].k.inline_ids;
        shim_lock(&d->lock);
        if (d->cover_slot)
            res_use_cover_flush(d);
        h->dev[i].k.serial = ++d->serial ? d->serial : ++d->serial;
    }
}

static void unlock_all(res_nccl_t *h)
{
    for (int i = h->ndev; i-- > 0;)
        shim_unlock(&h->dev[i].d->lock);
}

/*
 * The context whose default stream NCCL enqueues a call on default stream s in (the NULL or
 * legacy stream, or the per-thread one), where it is not `cur`: NCCL makes its communicator's
 * device current first, so that one thread may drive the ranks of several devices on stream 0
 * while the last device it set stays current.  The device's arena context (the runtime's
 * primary context, as a runtime program's arena takes); NULL where s is a stream of its own
 * (its context is its own), the device is unknown or has no arena, or it is cur's.
 */
static CUcontext comm_ctx(CUstream s, int device, CUcontext cur)
{
    if ((s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD) || device < 0 ||
        device >= MAX_DEVICES || !res_dev_ready(&res_devs[device]))
        return NULL;
    res_dev_t *d = &res_devs[device];
    shim_lock(&d->lock);
    CUcontext ctx = d->ctx;
    shim_unlock(&d->lock);
    return ctx != cur ? ctx : NULL;
}

/* h's context made current where another is (1), or nothing to do (0).  A call parked
 * (ncclInProgress) may end on another thread, PyTorch's watchdog polling its communicator:
 * that thread's per-thread stream is not the call's, so the host waits for the context's
 * work (NCCL's included: it has enqueued the call by then) before its use is recorded. */
static int push(const res_nccl_t *h)
{
    CUcontext cur = NULL;
    int pushed = h->ctx && DRV(cuCtxGetCurrent)(&cur) == CUDA_SUCCESS && cur != h->ctx &&
                 DRV(cuCtxPushCurrent_v2)(h->ctx) == CUDA_SUCCESS;
    if (h->stream == CU_STREAM_PER_THREAD && !pthread_equal(h->thread, pthread_self()))
        DRVT(cuCtxSynchronize)();
    return pushed;
}

static void pop(int pushed)
{
    CUcontext popped;
    if (pushed)
        DRV(cuCtxPopCurrent_v2)(&popped);
}

res_nccl_t *res_nccl_begin(const res_nccl_op_t *op, CUstream s)
{
    const uint64_t *ptr = op->ptr, *bytes = op->bytes;
    res_dev_t *owner[2] = { NULL, NULL };
    res_nccl_t *h;
    if (res_stream_capturing(s, 0))
        return NULL;
    for (int i = 0; i < 2; i++)
        owner[i] = ptr[i] ? res_owner(ptr[i]) : NULL;
    if ((!owner[0] && !owner[1]) || !(h = calloc(1, sizeof(*h))))
        return NULL;
    CUcontext ctx = res_stream_ctx(s), dev_ctx = comm_ctx(s, op->device, ctx);
    h->stream = s;
    h->ctx = dev_ctx ? dev_ctx : ctx;
    h->thread = pthread_self();
    ctx = h->ctx;
    int pushed = push(h);
    for (int i = 0; i < 2; i++)
        if (owner[i])
            entry_for(h, owner[i], ctx);
    lock_all(h);
    for (int i = 0; i < 2; i++)
        if (owner[i])
            add_range(&entry_for(h, owner[i], ctx)->k, ptr[i], bytes[i]);
    for (int i = 0; i < h->ndev; i++) {
        held_dev_t *e = &h->dev[i];
        relax_t rx = relax_begin();
        if (SHIM_UNLIKELY(res_policy_plan))
            res_plan_nccl(e->d, &e->k, (uintptr_t)op->name, access_of, op, s);
        /* Not refused where it does not fit: the other ranks would wait for it forever.  Its
         * evictions wait for their victims' last uses without the lock (gap), as a launch's
         * do: such a use may be an earlier NCCL call that completes only once another rank's
         * thread, waiting for this lock, enqueues its part.  Not where the call reaches a
         * second device, whose lock is held too (lock_all). */
        res_reach(e->d, &e->k, !e->k.in_place, h->ndev == 1, "an NCCL call",
                  "it goes ahead, and faults where it reaches them");
        for (size_t j = 0; j < e->k.n; j++)
            res_hold(e->d, e->k.ids[j]);
        if (SHIM_UNLIKELY(e->k.timed))
            res_ptime_before(e->d, &e->k, s, 0);
        relax_end(rx);
    }
    unlock_all(h);
    pop(pushed);
    return h;
}

/* The end of h's time on each device (d locked): `how` as res_nccl_end's, or merged: its
 * work runs with a later call's of its group on its stream. */
static void time_end(held_dev_t *e, CUstream s, int how, int merged)
{
    if (!e->k.timed)
        return;
    if (merged || how == RES_NCCL_NOTHING)
        res_ptime_merged(e->d, &e->k);
    else
        res_ptime_after(e->d, &e->k, how == RES_NCCL_DONE ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY,
                        s, 0);
}

static void end(res_nccl_t *h, int how, int merged)
{
    int pushed = push(h);
    lock_all(h);
    for (int i = 0; i < h->ndev; i++) {
        held_dev_t *e = &h->dev[i];
        relax_t rx = relax_begin();
        time_end(e, h->stream, how, merged);
        if (how == RES_NCCL_PENDING)
            e->k.cover = 0;             /* (NCCL may enqueue its work later: no event now) */
        if (how != RES_NCCL_NOTHING)    /* (a failed call may have enqueued its work) */
            res_finish(e->d, &e->k, h->stream, 0);
        relax_end(rx);
        for (size_t j = 0; j < e->k.n; j++)
            res_unhold(e->d, e->k.ids[j]);
    }
    unlock_all(h);
    pop(pushed);
    for (int i = 0; i < h->ndev; i++)
        if (h->dev[i].k.ids != h->dev[i].k.inline_ids)
            free(h->dev[i].k.ids);
    free(h);
}

void res_nccl_untime(res_nccl_t *h)
{
    if (!h)
        return;
    int pushed = push(h);
    lock_all(h);
    for (int i = 0; i < h->ndev; i++) {
        relax_t rx = relax_begin();
        time_end(&h->dev[i], h->stream, RES_NCCL_PENDING, 0);   /* (clears k.timed) */
        relax_end(rx);
    }
    unlock_all(h);
    pop(pushed);
}

void res_nccl_end(res_nccl_t *h, int how)
{
    if (h)
        end(h, how, 0);
}

void res_nccl_group_end(res_nccl_t *const *h, size_t n, int how)
{
    for (size_t i = 0; i < n; i++) {
        int merged = 0;
        for (size_t j = i + 1; h[i] && j < n && !merged; j++)
            merged = h[j] && h[j]->stream == h[i]->stream && h[j]->ctx == h[i]->ctx;
        if (h[i])
            end(h[i], how, merged);
    }
}
