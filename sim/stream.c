/* SPDX-License-Identifier: MIT */
/*
 * stream.c - streams: creation, the legacy and per-thread default streams, queries,
 * synchronisation, stream waits on events, and host functions.
 *
 * Handle resolution follows the driver: NULL is the legacy default stream for the plain
 * entry points and the per-thread default stream for the _ptds/_ptsz ones; CU_STREAM_LEGACY
 * and CU_STREAM_PER_THREAD name them explicitly.  A stream lives until its handle is destroyed
 * and the last queued operation or event referring to it is gone.
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

typedef struct ptds_slot {
    CUcontext ctx;
    CUstream stream;
} ptds_slot_t;

static _Thread_local ptds_slot_t ptds_slots[8];
static _Atomic uint64_t next_stream_id = 1;

int sim_stream_blocking(const struct CUstream_st *s)
{
    return s->kind == SIM_STREAM_PTDS ||
           (s->kind == SIM_STREAM_USER && !(s->flags & CU_STREAM_NON_BLOCKING));
}

/*
 * Freed streams, most recent first (sim_lock): a new stream takes the last one freed, so
 * that, as with a driver whose handles are addresses of its own objects, a destroyed
 * stream's handle comes back for a later stream and a cache keyed by handles must notice.
 */
#define SPARE_STREAMS 16
static CUstream spare_streams[SPARE_STREAMS];
static unsigned nspare_streams;

static CUstream stream_new(CUcontext ctx, int kind, unsigned flags, int priority)
{
    CUstream s = NULL;
    pthread_mutex_lock(&sim_lock);
    if (nspare_streams > 0)
        s = spare_streams[--nspare_streams];
    pthread_mutex_unlock(&sim_lock);
    if (s)
        memset(s, 0, sizeof(*s));
    else if (!(s = calloc(1, sizeof(*s))))
        return NULL;
    s->magic = SIM_STREAM_MAGIC;
    s->kind = kind;
    s->ctx = ctx;
    s->flags = flags;
    s->priority = priority;
    s->id = atomic_fetch_add(&next_stream_id, 1);
    s->refs = 1;
    s->race_tid = sim_race_new_thread();
    pthread_mutex_lock(&sim_lock);
    s->ctx_next = ctx->streams;
    ctx->streams = s;
    pthread_mutex_unlock(&sim_lock);
    return s;
}

/* Drop one reference; the last one unlinks and frees the stream.  Under sim_lock. */
void sim_stream_unref_locked(CUstream s)
{
    if (--s->refs > 0 || s->kind == SIM_STREAM_LEGACY)
        return;
    for (CUstream *p = &s->ctx->streams; *p; p = &(*p)->ctx_next)
        if (*p == s) {
            *p = s->ctx_next;
            break;
        }
    sim_vc_unref(s->vc_done);
    sim_vc_unref(s->vc_exec);
    s->magic = 0;
    if (nspare_streams < SPARE_STREAMS)
        spare_streams[nspare_streams++] = s;
    else
        free(s);
}

static CUstream per_thread_stream(CUcontext ctx)
{
    for (size_t i = 0; i < SIM_ARRAY_LEN(ptds_slots); i++)
        if (ptds_slots[i].ctx == ctx)
            return ptds_slots[i].stream;
    for (size_t i = 0; i < SIM_ARRAY_LEN(ptds_slots); i++)
        if (!ptds_slots[i].ctx) {
            CUstream s = stream_new(ctx, SIM_STREAM_PTDS, 0, 0);
            if (s)
                ptds_slots[i] = (ptds_slot_t){ ctx, s };
            return s;
        }
    return NULL;
}

CUresult sim_stream_resolve(CUstream h, int ptds, CUstream *out)
{
    CUcontext ctx;
    CUresult r;

    if (h && h != CU_STREAM_LEGACY && h != CU_STREAM_PER_THREAD) {
        if (h->magic != SIM_STREAM_MAGIC || h->destroyed)
            return CUDA_ERROR_INVALID_HANDLE;
        r = sim_ctx_check(h->ctx);
        if (r == CUDA_SUCCESS)
            *out = h;
        return r;
    }
    r = sim_ctx_get(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    if (h == CU_STREAM_LEGACY || (!h && !ptds)) {
        *out = ctx->legacy;
        return CUDA_SUCCESS;
    }
    *out = per_thread_stream(ctx);
    return *out ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

uint64_t sim_stream_tail(CUstream s)
{
    pthread_mutex_lock(&sim_lock);
    uint64_t seq = s->enq_seq;
    pthread_mutex_unlock(&sim_lock);
    return seq;
}

CUresult sim_ctx_wait_idle(CUcontext ctx)
{
    enum { MAXW = 256 };
    CUstream list[MAXW];
    uint64_t seqs[MAXW];
    int n = 0;

    pthread_mutex_lock(&sim_lock);
    list[n] = ctx->legacy;
    seqs[n++] = ctx->legacy->enq_seq;
    for (CUstream s = ctx->streams; s && n < MAXW; s = s->ctx_next) {
        s->refs++;
        list[n] = s;
        seqs[n++] = s->enq_seq;
    }
    pthread_mutex_unlock(&sim_lock);
    if (n == MAXW)
        sim_wait_all();
    for (int i = 0; i < n; i++)
        sim_wait_seq(list[i], seqs[i], 1);
    pthread_mutex_lock(&sim_lock);
    for (int i = 1; i < n; i++)
        sim_stream_unref_locked(list[i]);
    pthread_mutex_unlock(&sim_lock);
    return sim_ctx_check(ctx);
}

/* ---------------------------------------------------------------- creation */

static CUresult create(CUstream *ph, unsigned flags, int priority)
{
    CUcontext ctx;
    CUresult r = sim_ctx_get(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    if (!ph || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_INVALID_VALUE;
    if (priority > 0)
        priority = 0;
    if (priority < -5)
        priority = -5;
    *ph = stream_new(ctx, SIM_STREAM_USER, flags, priority);
    return *ph ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

SIM_API CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    return create(phStream, Flags, 0);
}

SIM_API CUresult CUDAAPI cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags,
                                                    int priority)
{
    return create(phStream, flags, priority);
}

SIM_API CUresult CUDAAPI cuStreamDestroy_v2(CUstream h)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!h || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD ||
        h->magic != SIM_STREAM_MAGIC || h->destroyed || h->kind != SIM_STREAM_USER)
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&sim_lock);
    h->destroyed = 1;
    sim_stream_unref_locked(h);
    pthread_mutex_unlock(&sim_lock);
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuStreamDestroy(CUstream h)
{
    return cuStreamDestroy_v2(h);
}

/* ---------------------------------------------------------------- queries */

/* Stream h (ptds: the _ptsz ABI) of a query that answers in `out`: CUDA_SUCCESS with *s, or
 * the error: an invalid handle first, then a NULL out. */
static CUresult query_into(CUstream h, int ptds, const void *out, CUstream *s)
{
    CUresult r = sim_stream_resolve(h, ptds, s);
    if (r != CUDA_SUCCESS)
        return r;
    return out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult get_priority(CUstream h, int *priority, int ptds)
{
    CUstream s;
    CUresult r = query_into(h, ptds, priority, &s);
    if (r == CUDA_SUCCESS)
        *priority = s->priority;
    return r;
}

SIM_API CUresult CUDAAPI cuStreamGetPriority(CUstream h, int *p) { return get_priority(h, p, 0); }
SIM_API CUresult CUDAAPI cuStreamGetPriority_ptsz(CUstream h, int *p) { return get_priority(h, p, 1); }

static CUresult get_flags(CUstream h, unsigned *flags, int ptds)
{
    CUstream s;
    CUresult r = query_into(h, ptds, flags, &s);
    if (r == CUDA_SUCCESS)
        *flags = s->flags;
    return r;
}

SIM_API CUresult CUDAAPI cuStreamGetFlags(CUstream h, unsigned int *f) { return get_flags(h, f, 0); }
SIM_API CUresult CUDAAPI cuStreamGetFlags_ptsz(CUstream h, unsigned int *f) { return get_flags(h, f, 1); }

static CUresult get_id(CUstream h, unsigned long long *id, int ptds)
{
    CUstream s;
    CUresult r = query_into(h, ptds, id, &s);
    if (r == CUDA_SUCCESS)
        *id = s->kind == SIM_STREAM_LEGACY ? 0 : s->id;
    return r;
}

SIM_API CUresult CUDAAPI cuStreamGetId(CUstream h, unsigned long long *id) { return get_id(h, id, 0); }
SIM_API CUresult CUDAAPI cuStreamGetId_ptsz(CUstream h, unsigned long long *id) { return get_id(h, id, 1); }

static CUresult get_ctx(CUstream h, CUcontext *pctx, int ptds)
{
    CUstream s;
    CUresult r = query_into(h, ptds, pctx, &s);
    if (r == CUDA_SUCCESS)
        *pctx = s->ctx;
    return r;
}

SIM_API CUresult CUDAAPI cuStreamGetCtx(CUstream h, CUcontext *c) { return get_ctx(h, c, 0); }
SIM_API CUresult CUDAAPI cuStreamGetCtx_ptsz(CUstream h, CUcontext *c) { return get_ctx(h, c, 1); }

SIM_API CUresult CUDAAPI cuStreamGetCtx_v2(CUstream h, CUcontext *c, CUgreenCtx *g)
{
    if (g)
        *g = NULL;
    return get_ctx(h, c, 0);
}

SIM_API CUresult CUDAAPI cuStreamGetCtx_v2_ptsz(CUstream h, CUcontext *c, CUgreenCtx *g)
{
    if (g)
        *g = NULL;
    return get_ctx(h, c, 1);
}

static CUresult get_device(CUstream h, CUdevice *dev, int ptds)
{
    CUstream s;
    CUresult r = sim_stream_resolve(h, ptds, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (!dev)
        return CUDA_ERROR_INVALID_VALUE;
    *dev = s->ctx->device;
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuStreamGetDevice(CUstream h, CUdevice *d) { return get_device(h, d, 0); }
SIM_API CUresult CUDAAPI cuStreamGetDevice_ptsz(CUstream h, CUdevice *d) { return get_device(h, d, 1); }

/*
 * The host has seen work complete whose end time and race clock are *t and *vc (fields under
 * sim_lock, read here under it): the host is now after that work, in virtual time and for the
 * race checker.  Used for a stream or event found complete, since the driver documents a
 * successful query as equivalent to a synchronisation.
 */
void sim_host_after(const double *t, sim_vc_t *const *vc, int why)
{
    pthread_mutex_lock(&sim_lock);
    double end = *t;
    sim_vc_t *clock = sim_vc_ref(*vc);
    pthread_mutex_unlock(&sim_lock);
    sim_host_advance(end, why);
    sim_host_acquire(clock);
    sim_vc_unref(clock);
}

static CUresult query(CUstream h, int ptds)
{
    CUstream s;
    CUresult r = sim_stream_resolve(h, ptds, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = sim_capture_sync_check(s)) != CUDA_SUCCESS)
        return r;
    if (!sim_seq_done(s, sim_stream_tail(s)) || !sim_host_reached(&s->t_done))
        return CUDA_ERROR_NOT_READY;
    sim_host_after(&s->t_done, &s->vc_done, SIM_HOST_WAIT);
    return sim_ctx_check(s->ctx);
}

SIM_API CUresult CUDAAPI cuStreamQuery(CUstream h) { return query(h, 0); }
SIM_API CUresult CUDAAPI cuStreamQuery_ptsz(CUstream h) { return query(h, 1); }

static CUresult synchronize(CUstream h, int ptds)
{
    CUstream s;
    CUresult r = sim_stream_resolve(h, ptds, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = sim_capture_sync_check(s)) != CUDA_SUCCESS)
        return r;
    if (sim_on_executor())
        return CUDA_ERROR_NOT_PERMITTED;
    return sim_wait_seq(s, sim_stream_tail(s), 1);
}

SIM_API CUresult CUDAAPI cuStreamSynchronize(CUstream h) { return synchronize(h, 0); }
SIM_API CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream h) { return synchronize(h, 1); }

/* ---------------------------------------------------------------- waits and host work */

static CUresult wait_event(CUstream h, CUevent e, unsigned flags, int ptds)
{
    CUstream s;
    CUresult r = sim_stream_resolve(h, ptds, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (!e || e->magic != SIM_EVENT_MAGIC || e->destroyed)
        return CUDA_ERROR_INVALID_HANDLE;
    if (flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL)
        return CUDA_ERROR_INVALID_VALUE;
    sim_op_t *op = sim_op_new(SIM_OP_EVENT_WAIT);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&sim_lock);
    e->refs++;
    pthread_mutex_unlock(&sim_lock);
    op->u.event = e;
    return sim_submit(s, op, NULL);
}

SIM_API CUresult CUDAAPI cuStreamWaitEvent(CUstream h, CUevent e, unsigned int flags)
{
    return wait_event(h, e, flags, 0);
}

SIM_API CUresult CUDAAPI cuStreamWaitEvent_ptsz(CUstream h, CUevent e, unsigned int flags)
{
    return wait_event(h, e, flags, 1);
}

static CUresult host_work(CUstream h, CUhostFn fn, CUstreamCallback cb, void *data, int ptds)
{
    CUstream s;
    CUresult r = sim_stream_resolve(h, ptds, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (!fn && !cb)
        return CUDA_ERROR_INVALID_VALUE;
    sim_op_t *op = sim_op_new(SIM_OP_HOSTFN);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->u.host.fn = fn;
    op->u.host.cb = cb;
    op->u.host.data = data;
    op->u.host.handle = h;
    return sim_submit(s, op, NULL);
}

SIM_API CUresult CUDAAPI cuLaunchHostFunc(CUstream h, CUhostFn fn, void *data)
{
    return host_work(h, fn, NULL, data, 0);
}

SIM_API CUresult CUDAAPI cuLaunchHostFunc_ptsz(CUstream h, CUhostFn fn, void *data)
{
    return host_work(h, fn, NULL, data, 1);
}

SIM_API CUresult CUDAAPI cuStreamAddCallback(CUstream h, CUstreamCallback cb, void *data,
                                             unsigned int flags)
{
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    return host_work(h, NULL, cb, data, 0);
}

SIM_API CUresult CUDAAPI cuStreamAddCallback_ptsz(CUstream h, CUstreamCallback cb, void *data,
                                                  unsigned int flags)
{
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    return host_work(h, NULL, cb, data, 1);
}
