/* SPDX-License-Identifier: MIT */
/*
 * res_use.c - last uses of chunks, the events that cover them, and application streams.
 *
 * After a launch or copy, the operation becomes the last use of each chunk it touched.  That
 * use costs no driver call: it is the stream's operation count (tick), and an event is
 * recorded on the stream only when a migration, release or free must wait for the use
 * (stream order then puts the event after it; cover()).  Earlier uses on other streams that
 * may still run are joined, on the shim's join stream, into one event the chunk also keeps.
 * The per-thread default stream, which no other thread can record on later, and every stream
 * while a capture may be open, record an event at once instead.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "res_int.h"
#include "res_nvme.h"

/* ---------------------------------------------------------------- last-use events */

/*
 * An event of context ctx with one reference.  An event can be recorded only on a stream of
 * its own context, and the streams that reach an arena need not all be its context's (a
 * context made with cuCtxCreate on the same device, or a free issued while another device's
 * context is current), so every event keeps its context.  Those of the arena's context are
 * kept for reuse on d's free list; another context's are made for the one use, in that
 * context (pushed while the event is made when it is not current), and destroyed when the
 * last reference goes, so that no free event outlives a context the application destroys.
 */
static _Atomic uint64_t event_gens;     /* use_event_t.gen: events taken so far */

static use_event_t *event_get(res_dev_t *d, CUcontext ctx)
{
    use_event_t *e = ctx == d->ctx ? d->free_events : NULL;
    if (e) {
        d->free_events = e->next_free;
    } else {
        CUcontext cur = NULL, popped;
        int pushed = DRV(cuCtxGetCurrent)(&cur) == CUDA_SUCCESS && cur != ctx &&
                     DRV(cuCtxPushCurrent_v2)(ctx) == CUDA_SUCCESS;
        e = calloc(1, sizeof(*e));
        CUresult r = e ? DRV(cuEventCreate)(&e->ev, CU_EVENT_DISABLE_TIMING)
                       : CUDA_ERROR_OUT_OF_MEMORY;
        if (pushed)
            DRV(cuCtxPopCurrent_v2)(&popped);
        if (r != CUDA_SUCCESS) {
            free(e);
            return NULL;
        }
        e->ctx = ctx;
    }
    e->refs = 1;
    e->joined = 0;
    e->gen = atomic_fetch_add_explicit(&event_gens, 1, memory_order_relaxed) + 1;
    return e;
}

/* Drop one reference to e; the last one returns it to the free list (the arena context's)
 * or destroys it. */
static void event_put(res_dev_t *d, use_event_t *e)
{
    if (!e || --e->refs > 0)
        return;
    if (e->ctx == d->ctx) {
        e->next_free = d->free_events;
        d->free_events = e;
        return;
    }
    DRV(cuEventDestroy_v2)(e->ev);
    free(e);
}

static use_event_t *event_ref(use_event_t *e)
{
    if (e)
        e->refs++;
    return e;
}


int res_event_done(use_event_t *e)
{
    return DRVT(cuEventQuery)(e->ev) == CUDA_SUCCESS;
}

void res_event_put(res_dev_t *d, use_event_t *e)
{
    event_put(d, e);
}

use_event_t *res_event_ref(use_event_t *e)
{
    return event_ref(e);
}

void res_events_wait_unlocked(res_dev_t *d, use_event_t *const *ev, size_t n, double *blocked)
{
    double t0 = res_now_s();
    shim_unlock(&d->lock);
    for (size_t i = 0; i < n; i++)
        if (ev[i])
            DRVT(cuEventSynchronize)(ev[i]->ev);
    shim_lock(&d->lock);
    *blocked += res_now_s() - t0;
}

/* The host waits for e unless it is done; the time blocked is added to *blocked. */
void res_event_wait(use_event_t *e, double *blocked)
{
    if (!e || DRVT(cuEventQuery)(e->ev) == CUDA_SUCCESS)
        return;
    double t0 = res_now_s();
    DRVT(cuEventSynchronize)(e->ev);
    *blocked += res_now_s() - t0;
}

/* An event recorded now on st's stream; NULL when none could be, after the host waited for
 * the stream (or the context) instead. */
static use_event_t *record_slot(res_dev_t *d, const strm_t *st)
{
    /* The legacy stream is the current context's: make it the arena's for the record. */
    int legacy = !st->s || st->s == CU_STREAM_LEGACY;
    CUcontext popped;
    if (legacy && DRV(cuCtxPushCurrent_v2)(d->ctx) != CUDA_SUCCESS)
        legacy = 0;
    use_event_t *e = event_get(d, legacy ? d->ctx : st->ctx);
    if (!e || DRVT(cuEventRecord)(e->ev, st->s) != CUDA_SUCCESS) {
        event_put(d, e);
        if (DRVT(cuStreamSynchronize)(st->s) != CUDA_SUCCESS)
            DRVT(cuCtxSynchronize)();
        e = NULL;
    }
    if (legacy)
        DRV(cuCtxPopCurrent_v2)(&popped);
    return e;
}

/* Forget st's earlier events (its ev covers what they did, or it is done). */
static void ring_clear(res_dev_t *d, strm_t *st)
{
    for (uint32_t k = 0; k < st->nring; k++)
        event_put(d, st->ring[k].ev);
    st->nring = 0;
}

/*
 * An event that completes after every operation up to `tick` on stream slot i: the first of
 * the slot's kept events that covers that far (the ring, then the newest), else one recorded
 * now (stream order puts it after them), which then covers everything enqueued so far.  NULL
 * when there is nothing to wait for.  A slot is never capturing here: while res_captures may
 * be open nothing is left to cover.
 */
static use_event_t *cover(res_dev_t *d, unsigned i, uint64_t tick)
{
    strm_t *st = &d->streams[i];
    if (tick <= st->covered) {
        for (uint32_t k = 0; k < st->nring; k++)
            if (tick <= st->ring[k].covered)
                return st->ring[k].ev;  /* (recorded before ev: done sooner) */
        return st->ev;
    }
    use_event_t *e = record_slot(d, st);
    if (st->ev && e) {
        if (st->nring == COVER_RING) {
            event_put(d, st->ring[0].ev);
            memmove(st->ring, st->ring + 1, --st->nring * sizeof(st->ring[0]));
        }
        st->ring[st->nring].covered = st->covered;
        st->ring[st->nring++].ev = st->ev;
    } else {
        ring_clear(d, st);              /* (e NULL: the host waited for all of them) */
        event_put(d, st->ev);
    }
    st->ev = e;
    st->covered = st->tick;
    return e;
}

/* Forget a use (after it is known to be done, or when its chunk is released). */
void res_use_clear(res_dev_t *d, use_t *u)
{
    event_put(d, u->prior);
    memset(u, 0, sizeof(*u));
}

/* The host waits until use u is done; then it is forgotten. */
static void wait_use(res_dev_t *d, use_t *u, double *blocked)
{
    if (u->slot)
        res_event_wait(cover(d, u->slot - 1u, u->tick), blocked);
    res_event_wait(u->prior, blocked);
    res_use_clear(d, u);
}

/* The host waits until nothing in flight can use chunk c (its last use and the fence). */
void res_wait_idle(res_dev_t *d, chunk_t *c, double *blocked)
{
    if (SHIM_UNLIKELY(c->held && d->foreign_holds))
        res_foreign_wait(d, (uint32_t)(c - d->chunks), blocked);
    wait_use(d, &c->use, blocked);
    wait_use(d, &d->fence, blocked);
}

/* Is use u done (its events complete)?  Then it is forgotten.  Queries only, except that a
 * lazy use is covered by an event recorded now (where none can be, cover() waited). */
static int use_done(res_dev_t *d, use_t *u)
{
    use_event_t *e = u->slot ? cover(d, u->slot - 1u, u->tick) : NULL;
    if ((e && !res_event_done(e)) || (u->prior && !res_event_done(u->prior)))
        return 0;
    res_use_clear(d, u);
    return 1;
}

/* Is use u still the one saved in `was` (the same stream tick and the same prior uses)? */
static int use_same(const use_t *u, const use_t *was)
{
    return u->slot == was->slot && u->tick == was->tick && u->prior == was->prior;
}

int res_idle_now(res_dev_t *d, chunk_t *c)
{
    return !c->held && use_done(d, &c->use) && use_done(d, &d->fence);
}

use_saw_t res_use_saw(const use_t *u)
{
    return (use_saw_t){ *u, u->prior ? u->prior->gen : 0 };
}

/* use_same for a saved use, whose prior event may since have gone back to the free list and
 * now name another use (the pointer alone would call that use done). */
static int use_same_saw(const use_t *u, const use_saw_t *was)
{
    return use_same(u, &was->use) && (!u->prior || u->prior->gen == was->prior_gen);
}

/* Is u still `was`, or nothing since (was found done and forgotten)? */
static int use_since(const use_t *u, const use_saw_t *was)
{
    return use_same_saw(u, was) || (!u->slot && !u->prior);
}

int res_idle_since(res_dev_t *d, chunk_t *c, const use_saw_t *use, const use_saw_t *fence)
{
    if (c->held || !use_since(&c->use, use) || !use_since(&d->fence, fence))
        return 0;                       /* (used since: the copy may have missed its writes) */
    res_use_clear(d, &c->use);
    res_use_clear(d, &d->fence);
    return 1;
}

/* Make stream s wait for use u (no host wait); 0, or -1 when it cannot. */
static int stream_wait_use(res_dev_t *d, CUstream s, const use_t *u)
{
    use_event_t *e[2] = { u->slot ? cover(d, u->slot - 1u, u->tick) : NULL, u->prior };
    for (int i = 0; i < 2; i++)
        if (e[i] && !res_event_done(e[i]) &&
            DRVT(cuStreamWaitEvent)(s, e[i]->ev, 0) != CUDA_SUCCESS)
            return -1;
    return 0;
}

int res_stream_after_use(res_dev_t *d, CUstream s, chunk_t *c)
{
    if (c->held)
        return -1;
    return stream_wait_use(d, s, &c->use) < 0 || stream_wait_use(d, s, &d->fence) < 0 ? -1 : 0;
}

int res_idle_unlocked(res_dev_t *d, uint32_t ci, double *blocked)
{
    chunk_t *c = &d->chunks[ci];
    if (c->waiting)
        return 0;                       /* another thread waits for it: the caller waits locked */
    const chunk_t was = *c;
    const use_t *u = &was.use, f = d->fence;
    use_event_t *ev[4] = { u->slot ? event_ref(cover(d, u->slot - 1u, u->tick)) : NULL,
                           event_ref(u->prior),
                           f.slot ? event_ref(cover(d, f.slot - 1u, f.tick)) : NULL,
                           event_ref(f.prior) };
    int running = 0, r = 1;

    for (int i = 0; i < 4; i++)
        running |= ev[i] && !res_event_done(ev[i]);
    if (running) {
        res_hold(d, ci);
        c->waiting = 1;
        res_events_wait_unlocked(d, ev, 4, blocked);
        if (!c->waiting)
            r = -1;                     /* freed meanwhile (res_unback cleared the chunk) */
        else {
            c->waiting = 0;
            res_unhold(d, ci);
            if (c->tier != was.tier || c->pinned != was.pinned || c->held != was.held ||
                !use_same(&c->use, u) || !use_same(&d->fence, &f))
                r = -1;
        }
    }
    for (int i = 0; i < 4; i++)
        event_put(d, ev[i]);
    if (r < 0 || !running)
        return running ? r : 0;
    res_use_clear(d, &c->use);          /* both are done */
    res_use_clear(d, &d->fence);
    return 1;
}

/* ---------------------------------------------------------------- application streams */

/* Take a slot for stream s: a new one, or one of a destroyed stream whose work is done
 * (its ticks stay monotonic, so older uses of the slot read as covered); -1 when none. */
static int stream_take(res_dev_t *d, CUstream s, CUcontext ctx)
{
    unsigned i = d->nstreams;
    if (i == MAX_STREAMS)
        for (i = 0; i < MAX_STREAMS; i++)
            if (d->streams[i].live < 0 &&
                (!d->streams[i].ev || DRVT(cuEventQuery)(d->streams[i].ev->ev) == CUDA_SUCCESS))
                break;
    if (i == MAX_STREAMS)
        return -1;
    if (i == d->nstreams)
        d->nstreams++;
    strm_t *st = &d->streams[i];
    ring_clear(d, st);
    event_put(d, st->ev);
    st->ev = NULL;
    st->covered = st->tick;
    st->s = s;
    st->ctx = ctx;
    st->live = 1;
    return (int)i;
}

/*
 * The slot recording uses of stream s lazily, or -1 when s is recorded with an event at once:
 * the per-thread default stream (per_thread: the call's ABI makes NULL mean it), which another
 * thread cannot record on later; the legacy stream of a context other than the arena's; a
 * full table.
 */
static int stream_slot(res_dev_t *d, CUstream s, int per_thread, CUcontext ctx)
{
    if (s == CU_STREAM_PER_THREAD || (per_thread && !s))
        return -1;
    if ((!s || s == CU_STREAM_LEGACY) && ctx != d->ctx)
        return -1;
    strm_t *last = &d->streams[d->last_slot];
    if (last->live > 0 && last->s == s)
        return (int)d->last_slot;
    for (unsigned i = 0; i < d->nstreams; i++)
        if (d->streams[i].live > 0 && d->streams[i].s == s) {
            d->last_slot = i;
            return (int)i;
        }
    int i = stream_take(d, s, ctx);
    if (i >= 0)
        d->last_slot = (unsigned)i;
    return i;
}

/* Record an event for every use still uncovered on the device's streams (stream s only,
 * unless s is NULL and all is set), and mark s destroyed. */
static void cover_streams(res_dev_t *d, CUstream s, int all)
{
    for (unsigned i = 0; i < d->nstreams; i++) {
        strm_t *st = &d->streams[i];
        if (st->live <= 0 || (!all && st->s != s))
            continue;
        if (st->tick > st->covered)
            cover(d, i, st->tick);
        if (!all)
            st->live = -1;
    }
}

/* cover_streams() on every device set up. */
static void cover_all(CUstream s, int all)
{
    for (int i = 0; i < MAX_DEVICES; i++) {
        res_dev_t *d = &res_devs[i];
        if (atomic_load_explicit((_Atomic int *)&d->ready, memory_order_acquire) <= 0)
            continue;
        shim_lock(&d->lock);
        cover_streams(d, s, all);
        shim_unlock(&d->lock);
    }
}

void res_stream_destroy(CUstream s)
{
    res_stream_gone();
    if (s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD)
        cover_all(s, 0);
}

/* ---------------------------------------------------------------- the arena's context */

/*
 * The arena's own streams (copies and joins) and its reusable events are objects of the
 * context it was set up in, which the application may destroy (cuCtxDestroy) and then go on
 * in another context of the device; its memory is not (cuCtxDestroy does not free cuMemCreate
 * memory).  Left alone, every migration after that would fail, and pushing the destroyed
 * context again is undefined (the real driver corrupts its heap at the next pop).  So before
 * the driver destroys it, the arena gives up everything it has there (home_lost): the host
 * waits for the context's work (without d's lock, as the driver's destroy would), after which
 * every use recorded on its streams is done, the events of the context that uses, stream
 * slots and stream-ordered frees refer to are dropped (each waited for first, should one have
 * been recorded since), and its streams and free events are destroyed.  Another context of
 * the device that operations still use (a live stream slot's: those of a destroyed context are
 * retired with it, in every arena: ctx_lost) becomes the arena's at once, so that work no
 * operation of the device announces (a graph launched from another device, another device's
 * operation reaching the arena) still finds its chunks made resident.  Without one
 * the arena has no context (ctx NULL: no migration can be made, so nothing moves) until an
 * operation finds a context of its device current, which it adopts (res_home); meanwhile the
 * host pieces of evicted chunks are plain host memory (res_pieces_rehome).
 */

/* Forget u's earlier uses when they are an event of ctx (after the host waited for it). */
static void forget_event_of(res_dev_t *d, use_t *u, CUcontext ctx)
{
    if (u->prior && u->prior->ctx == ctx) {
        res_event_wait(u->prior, &d->blocked_s);
        event_put(d, u->prior);
        u->prior = NULL;
    }
}

/* Context ctx is about to be destroyed (d locked): d forgets the events of ctx that uses,
 * stream slots and stream-ordered frees refer to, and ctx's stream slots, each event waited
 * for first (the driver waits for the context's work too). */
static void ctx_lost(res_dev_t *d, CUcontext ctx)
{
    for (const deferred_t *f = d->deferred; f; f = f->next)
        if (f->ev && f->ev->ctx == ctx)
            res_event_wait(f->ev, &d->blocked_free_s);
    res_deferred_drain(d, 0);           /* frees waiting for the context's events go back */
    for (uint32_t i = 0, n = arena_chunk_count(d->arena); i < n; i++)
        forget_event_of(d, &d->chunks[i].use, ctx);
    forget_event_of(d, &d->fence, ctx);
    for (unsigned i = 0; i < d->nstreams; i++) {
        strm_t *st = &d->streams[i];
        if (st->ctx != ctx || st->live == 0)
            continue;
        res_event_wait(st->ev, &d->blocked_s);
        ring_clear(d, st);
        event_put(d, st->ev);           /* everything on the stream is done */
        st->ev = NULL;
        st->covered = st->tick;
        st->live = -1;
    }
}

/* d's streams made in ctx, current and a context of d's device, which becomes d's context
 * (d locked, d without one); 0, or -1 when they cannot be made. */
static int home_take(res_dev_t *d, CUcontext ctx)
{
    if (DRV(cuStreamCreate)(&d->stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
        d->stream = NULL;
        return -1;
    }
    if (DRV(cuStreamCreate)(&d->join, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
        DRV(cuStreamDestroy_v2)(d->stream);
        d->stream = d->join = NULL;
        return -1;
    }
    atomic_store_explicit((_Atomic(CUcontext) *)&d->ctx, ctx, memory_order_relaxed);
    res_nvme_home_taken(d);
    return 0;
}

/* d's context is about to be destroyed, and the host waited for its work (d locked): d gives
 * up its streams and events there, and takes the context of a live stream slot, if any. */
static void home_lost(res_dev_t *d)
{
    CUcontext ctx = d->ctx, popped;
    CUdevice dev;
    res_tags_own(d);                    /* (a release may leave ctx and its memory alive) */
    ctx_lost(d, ctx);
    res_flights_drain(d);
    res_nvme_home_lost(d, ctx);
    res_plan_drop(d);
    res_pieces_drop(d);
    while (d->free_events) {            /* (after those: their events come back here) */
        use_event_t *e = d->free_events;
        d->free_events = e->next_free;
        DRV(cuEventDestroy_v2)(e->ev);
        free(e);
    }
    if (d->out)
        DRV(cuStreamDestroy_v2)(d->out);
    d->out = NULL;
    DRV(cuStreamDestroy_v2)(d->stream);
    DRV(cuStreamDestroy_v2)(d->join);
    d->stream = d->join = NULL;
    atomic_store_explicit((_Atomic(CUcontext) *)&d->ctx, NULL, memory_order_relaxed);
    for (unsigned i = 0; i < d->nstreams && !d->ctx; i++) {
        CUcontext other = d->streams[i].ctx;
        if (d->streams[i].live <= 0 || !other || other == ctx ||
            DRV(cuCtxPushCurrent_v2)(other) != CUDA_SUCCESS)
            continue;
        if (DRV(cuCtxGetDevice)(&dev) == CUDA_SUCCESS && dev == d->device &&
            home_take(d, other) == 0)
            SHIM_INFO(RES, "device %d: the arena's context is destroyed; it now uses another "
                      "context of the device", d->device);
        DRV(cuCtxPopCurrent_v2)(&popped);
    }
    uint32_t lost = res_pieces_rehome(d, ctx);
    if (lost)
        SHIM_WARN(RES, "device %d: the arena's context goes with %u evicted chunks in its "
                  "pinned memory, and no memory could be had to move them to: their contents "
                  "are lost unless the context lives on (a primary context release that was "
                  "not the last)", d->device, lost);
}

/* d without a context adopts ctx, current and of d's device (d locked): stray pieces
 * (home_lost found no context to pin them in) move into its pinned memory.  0, or -1. */
static int home_adopt(res_dev_t *d, CUcontext ctx)
{
    if (d->ctx || home_take(d, ctx) < 0)
        return -1;
    SHIM_INFO(RES, "device %d: the arena's context was destroyed; it now uses the current one",
              d->device);
    res_pieces_rehome(d, NULL);
    return 0;
}

void res_home(res_dev_t *d, CUcontext ctx)
{
    shim_lock(&d->lock);
    home_adopt(d, ctx);
    shim_unlock(&d->lock);
}

/*
 * An operation found d with a context (or adopted one: res_home) before it took d's lock, but
 * another thread destroyed that context meanwhile (home_lost), perhaps while the lock was
 * dropped for a wait.  The thread's current context, when it is one of d's device, is alive
 * (the application uses it), so d adopts it for the migration about to be made.
 */
int res_home_current(res_dev_t *d)
{
    CUcontext cur = NULL;
    CUdevice dev;
    if (d->ctx)
        return 0;
    if (DRV(cuCtxGetCurrent)(&cur) != CUDA_SUCCESS || !cur ||
        DRV(cuCtxGetDevice)(&dev) != CUDA_SUCCESS || dev != d->device)
        return -1;
    return home_adopt(d, cur);
}

/* The allocations of ctx (about to be destroyed) in d go, with a context current for the
 * driver calls of the frees (d's own, pushed when the thread has none) (d locked). */
static void ctx_frees(res_dev_t *d, CUcontext ctx)
{
    CUcontext cur = NULL, popped;
    int pushed = DRV(cuCtxGetCurrent)(&cur) == CUDA_SUCCESS && !cur && d->ctx &&
                 DRV(cuCtxPushCurrent_v2)(d->ctx) == CUDA_SUCCESS;
    res_free_ctx(d, ctx);
    if (pushed)
        DRV(cuCtxPopCurrent_v2)(&popped);
}

/* A context is about to be destroyed or reset: the driver waits for its work, but the uses
 * recorded on its streams are covered first all the same (conservative: a destroyed stream's
 * handle may come back for a new stream).  Which streams are the context's is not known, so
 * every stream's uses are covered.  When `frees` (the context certainly goes), the memory
 * allocated in it goes first, while its streams and events still exist (res_free_ctx).  An
 * arena whose context it is gives it up (home_lost); the others forget its events and its
 * streams (ctx_lost). */
void res_ctx_destroy(CUcontext ctx, int frees)
{
    res_stream_gone();
    cover_all(NULL, 1);
    res_foreign_drain_all(1);           /* holds whose events the context may own */
    for (int i = 0; ctx && i < MAX_DEVICES; i++) {
        res_dev_t *d = &res_devs[i];
        if (atomic_load_explicit((_Atomic int *)&d->ready, memory_order_acquire) <= 0)
            continue;
        CUcontext cur = NULL, popped;
        relax_t rx = relax_begin();
        if (res_dev_ctx(d) == ctx) {
            int pushed = DRV(cuCtxGetCurrent)(&cur) == CUDA_SUCCESS && cur != ctx &&
                         DRV(cuCtxPushCurrent_v2)(ctx) == CUDA_SUCCESS;
            DRVT(cuCtxSynchronize)();
            if (pushed)
                DRV(cuCtxPopCurrent_v2)(&popped);
        }
        shim_lock(&d->lock);
        if (frees)
            ctx_frees(d, ctx);
        if (d->ctx == ctx)
            home_lost(d);
        else
            ctx_lost(d, ctx);
        shim_unlock(&d->lock);
        relax_end(rx);
    }
}

/* A primary context release turned out to have destroyed ctx (the driver tells only after
 * the fact): the memory allocated in it goes now in every arena.  What else of ctx the arenas
 * held went before the release (res_ctx_destroy, without `frees`), its allocations tagged
 * with it where it was an arena's own context (res_tags_own) and their host pieces moved out
 * of its pinned memory (res_pieces_rehome), so nothing left refers to the dead context. */
void res_ctx_freed(CUcontext ctx)
{
    for (int i = 0; ctx && i < MAX_DEVICES; i++) {
        res_dev_t *d = &res_devs[i];
        if (atomic_load_explicit((_Atomic int *)&d->ready, memory_order_acquire) <= 0)
            continue;
        shim_lock(&d->lock);
        relax_t rx = relax_begin();
        ctx_frees(d, ctx);
        relax_end(rx);
        shim_unlock(&d->lock);
    }
}

/* After code or a context went away: cached kernel layouts and devices are forgotten. */
void res_code_unload(void)
{
    atomic_fetch_add_explicit(&res_code_gen, 1, memory_order_acq_rel);
    res_stream_gone();
}

void res_stream_gone(void)
{
    atomic_fetch_add_explicit(&res_stream_gen, 1, memory_order_acq_rel);
}

/* Before a capture begins: from now on uses are recorded at once, and what is left to
 * cover is covered while no stream of ours can be capturing it. */
void res_capture_begin(void)
{
    atomic_fetch_add_explicit(&res_captures, 1, memory_order_acq_rel);
    cover_all(NULL, 1);
}

void res_capture_end(void)
{
    atomic_fetch_sub_explicit(&res_captures, 1, memory_order_acq_rel);
}

int res_capture_open(void)
{
    return atomic_load_explicit(&res_captures, memory_order_acquire) > 0;
}

/* An event recorded now on the operation's stream (which is not capturing; ctx its context),
 * or NULL. */
use_event_t *res_record(res_dev_t *d, CUstream s, int ptds, CUcontext ctx)
{
    use_event_t *e = ctx ? event_get(d, ctx) : NULL;
    if (e && (ptds ? DRVT(cuEventRecord_ptsz)(e->ev, s) : DRVT(cuEventRecord)(e->ev, s)) ==
                 CUDA_SUCCESS)
        return e;
    event_put(d, e);
    return NULL;
}

use_event_t *res_record_own(res_dev_t *d, CUstream s)
{
    use_event_t *e = res_record(d, s, 0, d->ctx);
    if (!e && DRVT(cuStreamSynchronize)(s) != CUDA_SUCCESS) {
        CUcontext popped;
        int pushed = d->ctx && DRV(cuCtxPushCurrent_v2)(d->ctx) == CUDA_SUCCESS;
        DRVT(cuCtxSynchronize)();       /* (d's context: s is one of its streams) */
        if (pushed)
            DRV(cuCtxPopCurrent_v2)(&popped);
    }
    return e;
}

CUcontext res_stream_ctx(CUstream s)
{
    CUcontext ctx = NULL;
    if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
        return DRV(cuCtxGetCurrent)(&ctx) == CUDA_SUCCESS ? ctx : NULL;
    return DRV(cuStreamGetCtx)(s, &ctx) == CUDA_SUCCESS ? ctx : NULL;
}

/* Make the join stream wait for o, unless o is done (once per operation k); if the join
 * stream cannot wait (or there is none: the arena has no context), the host does.  Returns 1
 * when the join stream waits for o. */
static int join_one(res_dev_t *d, collect_t *k, use_event_t *o, use_event_t *e)
{
    if (!o || o == e || o->joined == k->serial)
        return 0;
    o->joined = k->serial;
    if (DRVT(cuEventQuery)(o->ev) == CUDA_SUCCESS)
        return 0;                       /* done: nothing left of it to cover */
    if (d->join && DRVT(cuStreamWaitEvent)(d->join, o->ev, 0) == CUDA_SUCCESS)
        return 1;
    DRVT(cuEventSynchronize)(o->ev);
    return 0;
}

/* Does the operation's new use (lazy on stream slot `slot`, or an event when slot < 0)
 * replace what u holds, so that the two must be joined?  A lazy use on u's own stream
 * covers u's use by stream order. */
static int join_needed(const use_t *u, int slot)
{
    return slot < 0 ? u->slot || u->prior : u->slot && u->slot != slot + 1;
}

/* Join on the join stream what u holds (see join_needed); returns the waits enqueued. */
static int join_use(res_dev_t *d, collect_t *k, use_t *u, use_event_t *e)
{
    int n = 0;
    if (u->slot)
        n += join_one(d, k, cover(d, u->slot - 1u, u->tick), e);
    return n + join_one(d, k, u->prior, e);
}

/* An event on the join stream after the joined uses and e (when not NULL), as a new
 * reference; when that fails the host waits for the join stream and e is returned. */
static use_event_t *join_record(res_dev_t *d, use_event_t *e)
{
    use_event_t *j = event_get(d, d->ctx);
    if (j && (!e || DRVT(cuStreamWaitEvent)(d->join, e->ev, 0) == CUDA_SUCCESS) &&
        DRVT(cuEventRecord)(j->ev, d->join) == CUDA_SUCCESS)
        return j;
    event_put(d, j);
    DRVT(cuStreamSynchronize)(d->join);  /* no join event: wait here for what it covers */
    return event_ref(e);
}

/* After the operation: u's last use is the operation's (see res_finish); j covers what u held
 * when the two had to be joined (join_needed, evaluated before any use changes). */
static inline void use_set(res_dev_t *d, use_t *u, int slot, uint64_t tick, use_event_t *j)
{
    if (slot < 0 || join_needed(u, slot)) {
        event_put(d, u->prior);
        u->prior = event_ref(j);
    }
    u->slot = (uint16_t)(slot + 1);
    u->tick = tick;
}

/* Join what the operation's uses hold where its new use replaces it (see join_needed);
 * returns the waits enqueued on the join stream. */
static int join_op(res_dev_t *d, collect_t *k, int slot, use_event_t *e)
{
    int n = 0;
    for (size_t i = 0; i < k->n; i++) {
        use_t *u = &d->chunks[k->ids[i]].use;
        if (join_needed(u, slot))
            n += join_use(d, k, u, e);
    }
    if (k->unknown && join_needed(&d->fence, slot))
        n += join_use(d, k, &d->fence, e);
    return n;
}

/* The common case of res_finish: on stream slot `slot`, where no use of the operation's
 * chunks (nor the fence, when it reached unknown memory) has to be joined, each becomes the
 * slot's next tick.  Returns 0, having changed nothing, when some use needs a join. */
static int finish_on_slot(res_dev_t *d, const collect_t *k, int slot)
{
    for (size_t i = 0; i < k->n; i++)
        if (join_needed(&d->chunks[k->ids[i]].use, slot))
            return 0;
    if (k->unknown && join_needed(&d->fence, slot))
        return 0;
    res_use_tick(d, k->ids, k->n, k->unknown, slot);
    return 1;
}

/* res_finish where finish_on_slot does not do: an event recorded at once (slot < 0), or
 * uses that must be joined.  Where the driver records no event, the host waits for the
 * stream instead (under d's lock: only when the driver fails), so that the operation is done
 * and its chunks' recorded uses stay as they were. */
static SHIM_COLD void finish_joined(res_dev_t *d, collect_t *k, CUstream s, int ptds, int slot)
{
    use_event_t *e = slot < 0 ? res_record(d, s, ptds, k->ctx) : NULL;
    if (slot < 0 && !e) {
        if (DRVT(cuStreamSynchronize)(!s && ptds ? CU_STREAM_PER_THREAD : s) != CUDA_SUCCESS)
            DRVT(cuCtxSynchronize)();
        return;
    }
    int n = join_op(d, k, slot, e);
    use_event_t *j = n ? join_record(d, e) : event_ref(e);
    uint64_t tick = slot >= 0 ? ++d->streams[slot].tick : 0;
    for (size_t i = 0; i < k->n; i++) {
        use_set(d, &d->chunks[k->ids[i]].use, slot, tick, j);
        res_touch(d, k->ids[i]);
    }
    if (k->unknown)
        use_set(d, &d->fence, slot, tick, j);
    event_put(d, j);
    event_put(d, e);
}

/*
 * After the operation was enqueued on stream s: its chunks' (and, when it reached unknown
 * memory, the fence's) last use is now.  On a stream with a slot that is a tick, no event;
 * otherwise an event recorded at once.  A chunk used on several streams keeps its earlier
 * uses elsewhere in `prior`, joined on the join stream into one event, so that a migration
 * waits for all of them.
 */
void res_finish(res_dev_t *d, collect_t *k, CUstream s, int ptds)
{
    int lazy = atomic_load_explicit(&res_captures, memory_order_acquire) == 0;
    int slot = lazy ? stream_slot(d, s, ptds, k->ctx) : -1;
    if (slot < 0 || !finish_on_slot(d, k, slot))
        finish_joined(d, k, s, ptds, slot);
    if (SHIM_UNLIKELY(k->cover) && slot >= 0)
        res_use_cover_due(d, slot);
}

void res_use_cover_due(res_dev_t *d, int slot)
{
    if (d->cover_slot && d->cover_slot != (unsigned)slot + 1)
        res_use_cover_flush(d);         /* (another thread's, while the lock was dropped) */
    d->cover_slot = (unsigned)slot + 1;
}

void res_use_cover_flush(res_dev_t *d)
{
    unsigned i = d->cover_slot - 1;
    d->cover_slot = 0;
    if (i >= d->nstreams || d->streams[i].live <= 0 ||
        atomic_load_explicit(&res_captures, memory_order_acquire) != 0)
        return;                         /* (a capture open: every slot is covered) */
    if (d->streams[i].tick > d->streams[i].covered)
        cover(d, i, d->streams[i].tick);
}

