/* SPDX-License-Identifier: MIT */
/*
 * event.c - events: records, queries, host synchronisation and elapsed virtual time.
 *
 * A record is an operation on its stream; when the executor reaches it the event takes the
 * stream's virtual time and race clock.  The event remembers only its latest record, as in
 * CUDA: a wait or query refers to the record most recently submitted.
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

/*
 * Freed events, most recent first (sim_lock): as with streams, a new event takes the last one
 * freed, and the memory of a freed event stays readable (its magic cleared), so that a stale
 * handle - one destroyed, or invalidated by a primary context reset - is an error.
 */
#define SPARE_EVENTS 16
static CUevent spare_events[SPARE_EVENTS];
static unsigned nspare_events;

/* Drop a reference; the last one frees the event.  Under sim_lock. */
void sim_event_unref_locked(struct CUevent_st *e)
{
    if (--e->refs > 0)
        return;
    *e->ctx_prevp = e->ctx_next;        /* (a program may hold many events: no list walk) */
    if (e->ctx_next)
        e->ctx_next->ctx_prevp = e->ctx_prevp;
    if (e->stream)
        sim_stream_unref_locked(e->stream);
    sim_vc_unref(e->vc);
    e->magic = 0;
    if (nspare_events < SPARE_EVENTS)
        spare_events[nspare_events++] = e;
    else
        free(e);
}

static int valid(CUevent e)
{
    return e && e->magic == SIM_EVENT_MAGIC && !e->destroyed;
}

SIM_API CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int flags)
{
    CUcontext ctx;
    CUresult r = sim_ctx_get(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    unsigned ok = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
    if (!phEvent || (flags & ~ok) ||
        ((flags & CU_EVENT_INTERPROCESS) && !(flags & CU_EVENT_DISABLE_TIMING)))
        return CUDA_ERROR_INVALID_VALUE;
    CUevent e = NULL;
    pthread_mutex_lock(&sim_lock);
    if (nspare_events > 0)
        e = spare_events[--nspare_events];
    pthread_mutex_unlock(&sim_lock);
    if (e)
        memset(e, 0, sizeof(*e));
    else if (!(e = calloc(1, sizeof(*e))))
        return CUDA_ERROR_OUT_OF_MEMORY;
    e->magic = SIM_EVENT_MAGIC;
    e->ctx = ctx;
    e->flags = flags;
    e->refs = 1;
    pthread_mutex_lock(&sim_lock);
    e->ctx_next = ctx->events;
    if (e->ctx_next)
        e->ctx_next->ctx_prevp = &e->ctx_next;
    e->ctx_prevp = &ctx->events;
    ctx->events = e;
    pthread_mutex_unlock(&sim_lock);
    *phEvent = e;
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuEventDestroy_v2(CUevent e)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!valid(e))
        return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&sim_lock);
    e->destroyed = 1;
    sim_event_unref_locked(e);
    pthread_mutex_unlock(&sim_lock);
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuEventDestroy(CUevent e)
{
    return cuEventDestroy_v2(e);
}

static _Atomic unsigned record_fails;      /* sim_event_record_fail: records still to fail */
static _Atomic int record_fail_result;

SIM_API unsigned sim_event_record_fail(unsigned n, int result)
{
    atomic_store(&record_fail_result, result);
    return atomic_exchange(&record_fails, n);
}

/* An armed failure taken (one less armed), or CUDA_SUCCESS. */
static CUresult record_failure(void)
{
    unsigned n = atomic_load(&record_fails);
    while (n && !atomic_compare_exchange_weak(&record_fails, &n, n - 1))
        ;
    return n ? (CUresult)atomic_load(&record_fail_result) : CUDA_SUCCESS;
}

static CUresult record(CUevent e, CUstream h, unsigned flags, int ptds)
{
    CUstream s;
    CUresult r = sim_stream_resolve(h, ptds, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (!valid(e))
        return CUDA_ERROR_INVALID_HANDLE;
    if (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL)
        return CUDA_ERROR_INVALID_VALUE;
    if (e->ctx != s->ctx)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((r = record_failure()) != CUDA_SUCCESS)
        return r;
    sim_op_t *op = sim_op_new(SIM_OP_EVENT_RECORD);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&sim_lock);
    e->refs++;
    pthread_mutex_unlock(&sim_lock);
    op->u.event = e;
    return sim_submit(s, op, NULL);   /* points the event at this record */
}

SIM_API CUresult CUDAAPI cuEventRecord(CUevent e, CUstream s) { return record(e, s, 0, 0); }
SIM_API CUresult CUDAAPI cuEventRecord_ptsz(CUevent e, CUstream s) { return record(e, s, 0, 1); }

SIM_API CUresult CUDAAPI cuEventRecordWithFlags(CUevent e, CUstream s, unsigned int flags)
{
    return record(e, s, flags, 0);
}

SIM_API CUresult CUDAAPI cuEventRecordWithFlags_ptsz(CUevent e, CUstream s, unsigned int flags)
{
    return record(e, s, flags, 1);
}

/* Where the event's latest record is: *s NULL when never recorded. */
static void latest(CUevent e, CUstream *s, uint64_t *seq)
{
    pthread_mutex_lock(&sim_lock);
    *s = e->stream;
    *seq = e->seq;
    if (*s)
        (*s)->refs++;
    pthread_mutex_unlock(&sim_lock);
}

/* The latest record of e was made in a stream capture that has since ended: there is no
 * record to query or wait for.  cuda.h is silent; the real driver (580) answered
 * CUDA_ERROR_INVALID_VALUE after a capture that was invalidated, until the event was recorded
 * again; a capture that ended normally is assumed to leave the event the same way. */
static int recorded_in_ended_capture(CUevent e)
{
    pthread_mutex_lock(&sim_lock);
    int ended = e->capture_ended;
    pthread_mutex_unlock(&sim_lock);
    return ended;
}

static void release_stream(CUstream s)
{
    pthread_mutex_lock(&sim_lock);
    sim_stream_unref_locked(s);
    pthread_mutex_unlock(&sim_lock);
}

SIM_API CUresult CUDAAPI cuEventQuery(CUevent e)
{
    CUstream s;
    uint64_t seq;
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!valid(e))
        return CUDA_ERROR_INVALID_HANDLE;
    if ((r = sim_capture_event_check(e, "cuEventQuery")) != CUDA_SUCCESS)
        return r;
    if (recorded_in_ended_capture(e))
        return CUDA_ERROR_INVALID_VALUE;
    latest(e, &s, &seq);
    if (!s)
        return CUDA_SUCCESS;
    int done = sim_seq_done(s, seq);
    release_stream(s);
    if (!done || !sim_host_reached(&e->t))
        return CUDA_ERROR_NOT_READY;
    sim_host_after(&e->t, &e->vc, SIM_HOST_WAIT); /* counts as cuEventSynchronize */
    return sim_ctx_check(e->ctx);
}

SIM_API CUresult CUDAAPI cuEventSynchronize(CUevent e)
{
    CUstream s;
    uint64_t seq;
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!valid(e))
        return CUDA_ERROR_INVALID_HANDLE;
    if (sim_on_executor())
        return CUDA_ERROR_NOT_PERMITTED;
    if ((r = sim_capture_event_check(e, "cuEventSynchronize")) != CUDA_SUCCESS)
        return r;
    if (recorded_in_ended_capture(e))
        return CUDA_ERROR_INVALID_VALUE;
    latest(e, &s, &seq);
    if (!s)
        return CUDA_SUCCESS;
    r = sim_wait_seq(s, seq, 0);
    release_stream(s);
    sim_host_after(&e->t, &e->vc, SIM_HOST_WAIT);
    return r;
}

/* Both events recorded and complete (as cuEventQuery says: the host's clock has reached
 * them), their virtual times, or the error to return. */
static CUresult times(CUevent a, CUevent b, double *ta, double *tb)
{
    CUevent ev[2] = { a, b };
    double *out[2] = { ta, tb };
    for (int i = 0; i < 2; i++) {
        CUstream s;
        uint64_t seq;
        if (!valid(ev[i]) || (ev[i]->flags & CU_EVENT_DISABLE_TIMING))
            return CUDA_ERROR_INVALID_HANDLE;
        latest(ev[i], &s, &seq);
        if (!s)
            return CUDA_ERROR_INVALID_HANDLE;
        int done = sim_seq_done(s, seq);
        release_stream(s);
        if (!done || !sim_host_reached(&ev[i]->t))
            return CUDA_ERROR_NOT_READY;
        pthread_mutex_lock(&sim_lock);
        *out[i] = ev[i]->t;
        pthread_mutex_unlock(&sim_lock);
    }
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuEventElapsedTime_v2(float *ms, CUevent start, CUevent end)
{
    double t0, t1;
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!ms)
        return CUDA_ERROR_INVALID_VALUE;
    r = times(start, end, &t0, &t1);
    if (r == CUDA_SUCCESS)
        *ms = (float)((t1 - t0) / 1e6);
    return r;
}

SIM_API CUresult CUDAAPI cuEventElapsedTime(float *ms, CUevent start, CUevent end)
{
    return cuEventElapsedTime_v2(ms, start, end);
}
