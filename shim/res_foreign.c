/* SPDX-License-Identifier: MIT */
/*
 * res_foreign.c - operands in another device's arena: a peer copy's, a kernel's peer pointer,
 * a stream memory operation's word.  Their allocations are taken on their own device (made
 * addressable, held, access granted) before the operation is enqueued and released once an
 * event behind it completes.
 */
#include <stdlib.h>

#include "res_int.h"

/*
 * A launch or copy issued on device d may reach memory in another device's arena: a peer
 * copy, or a kernel dereferencing a peer pointer.  Each arena is mapped for its own device
 * only, so such an operand's allocation is taken on its own device before the operation is
 * enqueued: made addressable (brought back where evicted chunks are unmapped), held where it
 * is (pinned for good when the stream captures), and d is given access to it.  After the
 * operation is enqueued an event is recorded behind it on its stream, and each device keeps
 * the holds on its chunks with that event (foreign_hold_t): a held chunk is neither evicted
 * nor moved, and whatever must wait for it (a free, memory running short, peer access taken
 * back) waits for the event and releases the hold, taking d's access back unless another
 * operation of d still holds the chunk or a captured one pinned it (counted per device and
 * chunk: res_dev_t.grants), or the application enabled peer access (res_peers).  No thread
 * ever holds two devices' locks: the operation is collected under d's lock, which is dropped
 * while the others are taken, and collected again.
 */
typedef struct foreign {
    int dev;                    /* the device the operation was issued on */
    CUcontext ctx;              /* its context (its stream's) */
    int pinned;                 /* captured: pinned for good, access left granted */
    int memop;                  /* a stream memory operation's (res_memop_begin) */
    uint32_t count;
    struct {
        res_dev_t *o;
        uint32_t first, n;
    } op[];
} foreign_t;

/* Grant (or take back) device `dev` access to chunks [first, +n) of o's arena. */
static CUresult peer_access(res_dev_t *o, uint32_t first, uint32_t n, int dev, int on)
{
    CUmemAccessDesc a = { .location = { CU_MEM_LOCATION_TYPE_DEVICE, dev },
                          .flags = on ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                                      : CU_MEM_ACCESS_FLAGS_PROT_NONE };
    return DRVT(cuMemSetAccess)(arena_chunk_addr(o->arena, first), (size_t)n * o->chunk, &a, 1);
}

/* Has f taken the allocation of p (in o's arena) already? */
static int foreign_has(const foreign_t *f, const res_dev_t *o, uint64_t p)
{
    uint32_t ci = (uint32_t)((p - o->base) / o->chunk);
    for (uint32_t i = 0; i < f->count; i++)
        if (f->op[i].o == o && ci - f->op[i].first < f->op[i].n)
            return 1;
    return 0;
}

/* Device dev's counts of operations holding o's chunks (o locked; res_dev_t.grants),
 * allocated at its first; NULL when they could not be: then dev's access is taken back only
 * where nothing holds or pins a chunk, which may leave it granted, never take it too soon. */
static uint32_t *grants_of(res_dev_t *o, int dev)
{
    if (o->grants[dev] || (o->grants_lost >> dev & 1))
        return o->grants[dev];
    o->grants[dev] = calloc(arena_chunk_count(o->arena), sizeof(uint32_t));
    if (!o->grants[dev]) {
        o->grants_lost |= 1u << dev;
        SHIM_WARN(RES, "out of memory: device %d's access to device %d's memory may stay "
                  "granted after the operations that needed it", dev, o->device);
    }
    return o->grants[dev];
}

/* Take the allocation of p, in o's arena, for f (see above): under o's lock, with o's context
 * current for any migration; `word`: only the chunk holding p (a stream memory operation's
 * word, res_memop_begin).  A p in no chunk in use is left to the driver.  Where o is f's own
 * device its access is never touched. */
static void foreign_take(foreign_t *f, res_dev_t *o, uint64_t p, int word)
{
    CUcontext popped;
    int pushed = DRV(cuCtxPushCurrent_v2)(res_dev_ctx(o)) == CUDA_SUCCESS;
    shim_lock(&o->lock);
    res_foreign_drain(o, 0);        /* earlier operations' holds, where they are done */
    uint32_t ci = (uint32_t)((p - o->base) / o->chunk);
    const chunk_t *c = &o->chunks[ci];
    if (c->tier != TIER_NONE) {
        uint32_t first = c->span_n > 1 && !word ? c->span_first : ci;
        uint32_t n = c->span_n > 1 && !word ? c->span_n : 1;
        int own = o->device == f->dev;
        uint32_t *g = own ? NULL : grants_of(o, f->dev);
        for (uint32_t i = first; i < first + n; i++) {
            res_map_back(o, i);
            if (f->pinned)
                res_pin(o, i);
            else
                res_hold(o, i);
            if (g && g[i] != RES_GRANT_FOR_GOOD)
                g[i] = f->pinned ? RES_GRANT_FOR_GOOD : g[i] + 1;
        }
        if (!own && peer_access(o, first, n, f->dev, 1) != CUDA_SUCCESS)
            SHIM_WARN(RES, "device %d cannot be given access to device %d's memory at 0x%llx: "
                      "the operation will fail", f->dev, o->device, (unsigned long long)p);
        f->op[f->count].o = o;
        f->op[f->count].first = first;
        f->op[f->count].n = n;
        f->count++;
    }
    shim_unlock(&o->lock);
    if (pushed)
        DRV(cuCtxPopCurrent_v2)(&popped);
}

/* The event recorded behind a foreign operation, shared by the holds it left on every
 * device; the last release destroys it. */
typedef struct foreign_ev {
    CUevent ev;
    _Atomic int refs;
} foreign_ev_t;

/* A foreign operation's hold on chunks [first, +n) of a device's arena (on its list, under
 * its lock), released once the operation's event completes. */
typedef struct foreign_hold {
    struct foreign_hold *next;
    foreign_ev_t *ev;
    int dev;                    /* the device given access for the operation */
    int memop;                  /* a stream memory operation's: may wait for a later call */
    uint32_t first, n;
} foreign_hold_t;

/* Holds on every device's lists: while there are none, a host synchronisation does not look. */
static _Atomic unsigned foreign_pending;

static void foreign_ev_put(foreign_ev_t *e)
{
    if (atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) == 1) {
        DRV(cuEventDestroy_v2)(e->ev);
        free(e);
    }
}

/* An event recorded now on stream s (ptds: the _ptsz ABI) in context ctx, or NULL. */
static foreign_ev_t *foreign_ev_record(CUcontext ctx, CUstream s, int ptds)
{
    CUcontext cur = NULL, popped;
    foreign_ev_t *e = malloc(sizeof(*e));
    if (!e)
        return NULL;
    int pushed = DRV(cuCtxGetCurrent)(&cur) == CUDA_SUCCESS && cur != ctx &&
                 DRV(cuCtxPushCurrent_v2)(ctx) == CUDA_SUCCESS;
    CUresult r = DRV(cuEventCreate)(&e->ev, CU_EVENT_DISABLE_TIMING);
    if (r == CUDA_SUCCESS) {
        r = ptds ? DRVT(cuEventRecord_ptsz)(e->ev, s) : DRVT(cuEventRecord)(e->ev, s);
        if (r != CUDA_SUCCESS)
            DRV(cuEventDestroy_v2)(e->ev);
    }
    if (pushed)
        DRV(cuCtxPopCurrent_v2)(&popped);
    if (r != CUDA_SUCCESS) {
        free(e);
        return NULL;
    }
    atomic_init(&e->refs, 1);
    return e;
}

/* Release chunks [first, first + n) of o (o locked) held for device dev's operation: dev's
 * access is taken back from those that no other operation of dev holds and that no captured
 * one pinned (its graph may run at any time), unless the application enabled peer access. */
static void foreign_unhold(res_dev_t *o, uint32_t first, uint32_t n, int dev)
{
    uint32_t *g = o->grants[dev];
    int keep = atomic_load(&res_peers[o->device]) >> dev & 1;
    uint32_t run = 0;

    if (dev == o->device) {         /* a stream memory operation's own device */
        for (uint32_t ci = first; ci < first + n; ci++)
            res_unhold(o, ci);
        return;
    }
    for (uint32_t ci = first; ci <= first + n; ci++) {
        if (ci < first + n) {
            res_unhold(o, ci);
            if (g && g[ci] != RES_GRANT_FOR_GOOD && g[ci] != 0)
                g[ci]--;
            if (!keep && !res_granted(o, dev, ci)) {
                run++;
                continue;
            }
        }
        if (run)
            peer_access(o, ci - run, run, dev, 0);
        run = 0;
    }
}

/* Release the holds on o's list (o locked) whose operations are done, or with `wait` after
 * waiting for them, or only those on chunk `ci` (UINT32_MAX: any); returns how many.  A stream
 * memory operation's hold is waited for only on its chunk (that chunk is being freed): its
 * wait may be released only by a call another thread is yet to make, which takes o's lock,
 * so making room by waiting for it under the lock could wait for ever. */
static int foreign_release(res_dev_t *o, int wait, uint32_t ci, double *blocked)
{
    int n = 0;
    if (!o->foreign_holds)
        return 0;
    relax_t rx = relax_begin();
    for (foreign_hold_t **p = &o->foreign_holds, *h; (h = *p) != NULL;) {
        if (ci != UINT32_MAX && ci - h->first >= h->n) {
            p = &h->next;
            continue;
        }
        CUresult q = DRVT(cuEventQuery)(h->ev->ev);
        if (q == CUDA_ERROR_NOT_READY) {
            if (!wait || (h->memop && ci == UINT32_MAX)) {
                p = &h->next;
                continue;
            }
            double t0 = res_now_s();
            DRVT(cuEventSynchronize)(h->ev->ev);
            if (blocked)
                *blocked += res_now_s() - t0;
        }
        *p = h->next;
        foreign_unhold(o, h->first, h->n, h->dev);
        foreign_ev_put(h->ev);
        free(h);
        atomic_fetch_sub_explicit(&foreign_pending, 1, memory_order_relaxed);
        n++;
    }
    relax_end(rx);
    return n;
}

int res_foreign_drain(res_dev_t *d, int wait)
{
    return foreign_release(d, wait, UINT32_MAX, &d->blocked_s) > 0;
}

void res_foreign_wait(res_dev_t *d, uint32_t ci, double *blocked)
{
    foreign_release(d, 1, ci, blocked);
}

int res_memop_wait_unlocked(res_dev_t *d, uint32_t first, uint32_t n, double *blocked)
{
    enum { MAXEV = 16 };
    foreign_ev_t *ev[MAXEV];
    uint32_t k = 0;
    for (foreign_hold_t *h = d->foreign_holds; h && k < MAXEV; h = h->next)
        if (h->memop && h->first < first + n && first < h->first + h->n &&
            DRVT(cuEventQuery)(h->ev->ev) == CUDA_ERROR_NOT_READY) {
            atomic_fetch_add_explicit(&h->ev->refs, 1, memory_order_relaxed);
            ev[k++] = h->ev;
        }
    if (!k)
        return 0;
    double t0 = res_now_s();
    shim_unlock(&d->lock);
    for (uint32_t i = 0; i < k; i++) {
        DRVT(cuEventSynchronize)(ev[i]->ev);
        foreign_ev_put(ev[i]);
    }
    shim_lock(&d->lock);
    *blocked += res_now_s() - t0;
    return 1;
}

void res_foreign_drain_all(int wait)
{
    for (int i = 0; i < MAX_DEVICES; i++) {
        res_dev_t *d = &res_devs[i];
        if (atomic_load_explicit((_Atomic int *)&d->ready, memory_order_acquire) <= 0)
            continue;
        shim_lock(&d->lock);
        res_foreign_drain(d, wait);
        shim_unlock(&d->lock);
    }
}

void res_host_synced(void)
{
    if (atomic_load_explicit(&foreign_pending, memory_order_relaxed) != 0)
        res_foreign_drain_all(0);
}

/* After the operation was issued on stream s (ptds: the _ptsz ABI) and the driver returned
 * r: a captured one keeps what it took for good.  Otherwise its holds stay, each device
 * keeping them with an event recorded behind the operation (see above), released at once
 * when the driver refused the operation.  Without an event the host waits for the stream and
 * they are released now. */
void res_foreign_end(void *held, CUstream s, int ptds, CUresult r)
{
    foreign_t *f = held;
    foreign_ev_t *e = NULL;
    if (f->pinned) {
        free(f);
        return;
    }
    if (r == CUDA_SUCCESS && !(e = foreign_ev_record(f->ctx, s, ptds)))
        DRVT(cuStreamSynchronize)(!s && ptds ? CU_STREAM_PER_THREAD : s);
    for (uint32_t i = 0; i < f->count; i++) {
        res_dev_t *o = f->op[i].o;
        foreign_hold_t *h = e ? malloc(sizeof(*h)) : NULL;
        shim_lock(&o->lock);
        if (h) {
            atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
            *h = (foreign_hold_t){ o->foreign_holds, e, f->dev, f->memop, f->op[i].first,
                                   f->op[i].n };
            o->foreign_holds = h;
            atomic_fetch_add_explicit(&foreign_pending, 1, memory_order_relaxed);
        } else {
            if (e) {                /* out of memory: this device waits for the event now */
                relax_t rx = relax_begin();
                DRVT(cuEventSynchronize)(e->ev);
                relax_end(rx);
            }
            foreign_unhold(o, f->op[i].first, f->op[i].n, f->dev);
        }
        shim_unlock(&o->lock);
    }
    if (e)
        foreign_ev_put(e);
    free(f);
}


void *res_foreign_take(res_dev_t *d, CUcontext ctx, const uint64_t *w, uint32_t n, int memop,
                       int pinned)
{
    foreign_t *f = NULL;
    for (uint32_t i = 0; i < n; i++) {
        res_dev_t *o = res_owner(w[i]);
        if (!o || (o == d && !memop) || (f && foreign_has(f, o, w[i])))
            continue;
        if (!f) {
            if (!(f = malloc(sizeof(*f) + n * sizeof(f->op[0])))) {
                if (memop)
                    SHIM_WARN(RES, "out of memory: a stream memory operation on device %d may "
                              "reach memory being paged", d->device);
                else
                    SHIM_WARN(RES, "out of memory: an operation on device %d may fault on "
                              "another device's memory", d->device);
                return NULL;
            }
            *f = (foreign_t){ .dev = d->device, .ctx = ctx, .memop = memop, .pinned = pinned };
        }
        foreign_take(f, o, w[i], memop);
    }
    if (f && !f->count) {
        free(f);
        f = NULL;
    }
    return f;
}
