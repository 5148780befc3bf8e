/* SPDX-License-Identifier: MIT */
/*
 * trace_time.c - device times of the operations of the profiled iterations (TIMING events).
 *
 * Two sources, chosen once at start-up and named in the log with the reason:
 *   CUPTI: the tracer's CUPTI client (tracer/cupti.h) is enabled when the profiled iterations
 *     begin and disabled (which flushes it) when they end, so it costs nothing afterwards;
 *     the operation id is pushed as CUPTI's external correlation id around the driver call,
 *     and each activity record comes back to sink() on CUPTI's thread, which only records a
 *     TIMING event (no CUDA call there: DESIGN.md invariant 7).  CUPTI counts the records it
 *     drops (no buffer room) per context and stream, so each stream an operation is timed on
 *     is watched (its context and id looked up once per thread and stream); the drops are
 *     read when a context is about to go and when CUPTI is retired, said once in the log and
 *     recorded as a DROPPED event, since the operations that lost their times are not known.
 *   CUDA events, when CUPTI is off (ELIXIR_CUPTI=off), missing, or refused because another
 *     tool subscribed: an event before and one after each operation on its stream (not while
 *     the stream captures), taken from a pool of the operation's context (its stream's, which
 *     residency named, pushed while its events are made when it is not the current one: an
 *     event can be recorded only on a stream of its own context).  Pairs wait in a queue and
 *     are read, oldest first, whenever an operation is recorded and the pair's second event
 *     has completed (cuEventQuery: the application's streams are never waited for); whatever
 *     is left at exit, or of a context about to be destroyed, is waited for then (the driver
 *     waits for the context's work too), while the events still exist.  Times are elapsed
 *     times from a reference event recorded, per context, on a stream of our own that nothing
 *     else uses and waited for at once, so that its completion is "now" on the trace's clock.
 *     An elapsed time is a float of milliseconds (24 bits): an hour from its reference it is
 *     a quarter of a millisecond off.  So a context's reference is made again once it is
 *     REF_AGE_NS old, and each pair keeps the one it was recorded with until it is read.
 *   The shim's own moves: the copy of each move the plan issues (res_flight.c) is timed by a
 *     pair of events on its copy stream whatever the operations' source, since the moves run
 *     after the profiled iterations (and CUPTI's activity with them).  Residency issues them
 *     under its lock, where no reference may be made (making one waits): a context without a
 *     fresh one leaves that move untimed and asks for one, which the next poll makes.
 * The lock here guards the contexts' references and pools and the queue.  No call made under
 * it waits for the device (creating a stream, records and queries return at once); the host
 * waits (a reference event, the pairs left at exit or at a context's teardown) happen with it
 * released (DESIGN.md invariant 7).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trace_int.h"

#define POLL_MAX 8              /* pairs read per operation recorded */
/* A reference this old (on the trace's clock) is replaced for the pairs recorded from then
 * on: elapsed times from it stay under about 4 s, where a float of milliseconds is exact to
 * a quarter of a microsecond (the events' own resolution is about half of one), with room
 * for operations that start some seconds after they were issued. */
#define REF_AGE_NS 1000000000ull

enum { SRC_NONE, SRC_CUPTI, SRC_EVENTS };

typedef struct pair pair_t;

/* A reference event and its time on the trace's clock, shared by the pairs measured from
 * it (users, under the lock: those pairs, and its context while it is the current one). */
typedef struct mark {
    CUevent ev;
    uint64_t time;
    unsigned users;
} mark_t;

/* A context's stream for its references, its current reference, and the pool of its event
 * pairs (events belong to a context).  Never freed: a pair being made may still name one that
 * its context's teardown retired (shim_timing_ctx_gone). */
typedef struct ref {
    struct ref *next;
    CUcontext ctx;
    int dev;                        /* the context's device */
    CUstream stream;
    mark_t *mark;
    pair_t *spare;
} ref_t;

/* The two events around one operation, and the reference they are measured from. */
struct pair {
    pair_t *next;
    uint64_t op;
    ref_t *ref;
    mark_t *mark;
    CUevent a, b;
};

static struct {
    _Atomic int source;             /* SRC_*: changes while recording only when CUPTI refuses
                                     * its activity (shim_timing_window) */
    trc_cupti_t *cupti;             /* open while subscribed (its clock is the trace's) */
    int enabled;                    /* CUPTI activity on */
    _Atomic int closed;             /* CUPTI's clock given up (shim_timing_retire) */
    PFN_cuEventElapsedTime_v2000 elapsed;
    pthread_mutex_t lock;
    pair_t *head, **tail;           /* waiting for their second event */
    ref_t *refs, *gone;             /* by context; retired by a teardown */
    trace_clock_t base;             /* the trace's clock before CUPTI's (monotonic, virtual) */
    uint64_t closed_at, base_at;    /* CUPTI's last time, and the base clock's then */
    uint64_t dropped;               /* CUPTI's drops read before its retirement (under lock) */
    _Atomic unsigned streams_gen;   /* bumped by a stream's destruction: watch() memos stale */
} TM = { .lock = PTHREAD_MUTEX_INITIALIZER, .tail = &TM.head };

_Atomic unsigned shim_timing_pending;

#define PUSHED ((void *)&TM.cupti)  /* before()'s handle of a CUPTI-timed operation */

/* ---------------------------------------------------------------- CUPTI */

static void emit_timing(uint64_t op, int source, uint64_t start, uint64_t end, uint64_t now)
{
    trc_event_t ev = { .type = TRC_EV_TIMING, .time = now };
    ev.u.timing = (trc_timing_t){ .op = op, .source = (uint32_t)source, .start = start,
                                  .end = end >= start ? end : start };
    shim_trace_emit(&ev);
}

/* The streams of the thread's last CUPTI-timed operations whose drops are watched: a small
 * memo, so that the driver is asked for a stream's context and id once, not per operation. */
#define WATCH_MEMO 4

typedef struct watched {
    CUstream s;
    CUcontext ctx;                  /* a default stream's: the current context; else NULL */
    unsigned pt, gen;               /* named by a per-thread hook; TM.streams_gen then */
    int used;
} watched_t;

static SHIM_TLS watched_t watch_memo[WATCH_MEMO];
static SHIM_TLS unsigned watch_next;

/* Has stream s (pt: as a per-thread hook names it; ctx: see watched_t) been watched by this
 * thread since the last stream was destroyed? Marks it so when not. */
static int watch_memo_hit(CUstream s, unsigned pt, CUcontext ctx)
{
    unsigned gen = atomic_load_explicit(&TM.streams_gen, memory_order_relaxed);
    for (unsigned i = 0; i < WATCH_MEMO; i++) {
        watched_t *w = &watch_memo[i];
        if (w->used && w->s == s && w->ctx == ctx && w->pt == pt && w->gen == gen)
            return 1;
    }
    watch_memo[watch_next++ % WATCH_MEMO] = (watched_t){ s, ctx, pt, gen, 1 };
    return 0;
}

/* CUPTI's drop counts of stream s (as hook h names it) are read too: its context (the
 * current one for the legacy and per-thread streams) and its id. */
static void watch(CUstream s, shim_hook_t h)
{
    unsigned pt = shim_hook_per_thread[h];
    CUcontext cur = NULL, sc = NULL;
    unsigned long long id = 0;

    /* A default stream is the current context's: the same handle, another stream. */
    if ((!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) &&
        SHIM_DRIVER_CALL(cuCtxGetCurrent)(&cur) != CUDA_SUCCESS)
        return;
    if (watch_memo_hit(s, pt, cur))
        return;
    CUresult r = pt ? SHIM_DRIVER_CALL(cuStreamGetCtx_ptsz)(s, &sc)
                    : SHIM_DRIVER_CALL(cuStreamGetCtx)(s, &sc);
    if (r == CUDA_SUCCESS)
        r = pt ? SHIM_DRIVER_CALL(cuStreamGetId_ptsz)(s, &id)
               : SHIM_DRIVER_CALL(cuStreamGetId)(s, &id);
    if (r == CUDA_SUCCESS && sc)
        trc_cupti_watch(TM.cupti, sc, (uint32_t)id);
}

void shim_timing_stream_gone(void)
{
    atomic_fetch_add_explicit(&TM.streams_gen, 1, memory_order_relaxed);
}

/* CUPTI's drops until now kept (a context is about to go: its queues cannot be read after). */
static void read_drops(void)
{
    uint64_t n = trc_cupti_dropped(TM.cupti);
    pthread_mutex_lock(&TM.lock);
    TM.dropped += n;
    pthread_mutex_unlock(&TM.lock);
}

/* At CUPTI's retirement: its drops said once and recorded, when there were any. */
static void report_drops(uint64_t now)
{
    read_drops();
    pthread_mutex_lock(&TM.lock);
    uint64_t n = TM.dropped;
    TM.dropped = 0;
    pthread_mutex_unlock(&TM.lock);
    if (!n)
        return;
    SHIM_WARN(INIT, "trace: CUPTI dropped %llu activity records (no buffer room): some "
              "operations of the profiled iterations have no device times in the trace",
              (unsigned long long)n);
    trc_event_t ev = { .type = TRC_EV_DROPPED, .time = now };
    ev.u.dropped = (trc_dropped_t){ .source = TRC_TIMING_CUPTI, .count = n };
    shim_trace_emit(&ev);
}

/* CUPTI's thread: one completed kernel, copy or memset.  Records of work that was not ours
 * (no external id: the shim's own migrations) are dropped.  The record's time is the end. */
static void sink(void *ctx, uint64_t op, int kind, uint64_t start, uint64_t end)
{
    (void)ctx;
    (void)kind;
    if (op)
        emit_timing(op, TRC_TIMING_CUPTI, start, end, end);
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Once CUPTI is closed: its clock carried on by the base clock (the monotonic one on a GPU;
 * on the simulator, its virtual clock, which CUPTI's stand-in reports too). */
static uint64_t closed_clock(void)
{
    return TM.closed_at + (TM.base() - TM.base_at);
}

/* CUPTI's clock, until it is detached: a thread that read the trace's clock pointer just
 * before shim_timing_retire replaced it carries on with the base one instead. */
static uint64_t cupti_clock(void)
{
    if (atomic_load_explicit(&TM.closed, memory_order_acquire))
        return closed_clock();
    return trc_cupti_now(TM.cupti);
}

int shim_timing_open(PFN_cuEventElapsedTime_v2000 elapsed, trace_clock_t base,
                     trace_clock_t *clock)
{
    long mode = shim_opt_int(SHIM_OPT_CUPTI);
    char why[256] = "";

    *clock = NULL;
    TM.elapsed = elapsed;
    TM.base = base ? base : mono_ns;
    TM.source = elapsed ? SRC_EVENTS : SRC_NONE;
    if (mode == SHIM_CUPTI_OFF) {
        SHIM_INFO(INIT, "trace: device times from CUDA events (ELIXIR_CUPTI=off)");
        return 0;
    }
    const char *lib = mode == SHIM_CUPTI_PATH ? shim_opt_str(SHIM_OPT_CUPTI) : NULL;
    trc_cupti_buffer_size((size_t)shim_opt_int(SHIM_OPT_CUPTI_BUFFER));
    int rc = trc_cupti_open(lib, sink, NULL, &TM.cupti, why, sizeof(why));
    if (rc == 0) {
        TM.source = SRC_CUPTI;
        SHIM_INFO(INIT, "trace: device times from CUPTI%s%s", why[0] ? ": " : "", why);
        *clock = cupti_clock;
        return 0;
    }
    TM.cupti = NULL;
    if (lib && rc == -ENOENT) {
        /* A library named by the user that is not there, or is no CUPTI: bad configuration,
         * not a reason to time the profile some other way than asked. */
        shim_log_fatal("ELIXIR_CUPTI=%s: %s; expected auto, off, or the path of a libcupti "
                       "shared library; the program stops (exit status %d)", lib,
                       why[0] ? why : strerror(-rc), SHIM_EXIT_CONFIG);
        return -1;
    }
    SHIM_WARN(INIT, "trace: device times from CUDA events, not CUPTI: %s",
              why[0] ? why : rc == -EBUSY ? "another tool is subscribed" : strerror(-rc));
    if (!elapsed)
        SHIM_WARN(INIT, "trace: the driver has no cuEventElapsedTime: no device times");
    return 0;
}

void shim_timing_window(int open)
{
    if (TM.source != SRC_CUPTI || TM.enabled == open)
        return;
    int rc = trc_cupti_enable(TM.cupti, open);
    if (rc == 0) {
        TM.enabled = open;
    } else if (!open) {
        SHIM_WARN(INIT, "trace: CUPTI activity cannot be turned off: %s", strerror(-rc));
    } else {
        /* Subscribed, but the activity is refused (another tool collects it): CUDA events
         * time the window instead; CUPTI stays open for the trace's clock. */
        TM.source = TM.elapsed ? SRC_EVENTS : SRC_NONE;
        SHIM_WARN(INIT, "trace: device times from CUDA events, not CUPTI: its activity "
                  "cannot be turned on (%s)", strerror(-rc));
    }
}

/* ---------------------------------------------------------------- CUDA events */

/* Does stream s (as hook h names it) capture, or cannot tell?  Nothing is recorded then. */
static int capturing(CUstream s, shim_hook_t h)
{
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    shim_pfn_cuStreamIsCapturing_t is = SHIM_DRIVER_CALL(cuStreamIsCapturing);
    shim_pfn_cuStreamIsCapturing_ptsz_t is_pt = SHIM_DRIVER_CALL(cuStreamIsCapturing_ptsz);
    CUresult r = shim_hook_per_thread[h] && is_pt ? is_pt(s, &st)
                 : is                             ? is(s, &st)
                                                  : CUDA_ERROR_NOT_FOUND;
    return r != CUDA_SUCCESS || st != CU_STREAM_CAPTURE_STATUS_NONE;
}

static CUresult record(CUevent e, CUstream s, shim_hook_t h)
{
    return shim_hook_per_thread[h] ? SHIM_DRIVER_CALL(cuEventRecord_ptsz)(e, s)
                                   : SHIM_DRIVER_CALL(cuEventRecord)(e, s);
}

/* A new reference on stream (the current context's), waited for at once (no lock held: it
 * waits for its own event), with one user: its context.  NULL when none can be made. */
static mark_t *mark_new(CUstream stream)
{
    mark_t *m = calloc(1, sizeof(*m));

    if (!m)
        return NULL;
    if (SHIM_DRIVER_CALL(cuEventCreate)(&m->ev, CU_EVENT_DEFAULT) == CUDA_SUCCESS &&
        SHIM_DRIVER_CALL(cuEventRecord)(m->ev, stream) == CUDA_SUCCESS &&
        SHIM_DRIVER_CALL(cuEventSynchronize)(m->ev) == CUDA_SUCCESS) {
        m->time = shim_trace_now();
        m->users = 1;
        return m;
    }
    if (m->ev)
        SHIM_DRIVER_CALL(cuEventDestroy_v2)(m->ev);
    free(m);
    return NULL;
}

/* One user of m less (the lock held): m when that was the last, for mark_free; else NULL. */
static mark_t *mark_drop(mark_t *m)
{
    return m && --m->users == 0 ? m : NULL;
}

static void mark_free(mark_t *m)
{
    if (!m)
        return;
    SHIM_DRIVER_CALL(cuEventDestroy_v2)(m->ev);
    free(m);
}

/* Is m young enough to measure new pairs from? (The lock held.) */
static int mark_fresh(const mark_t *m)
{
    return m && shim_trace_now() - m->time < REF_AGE_NS;
}

/* The reference state of context ctx (the current one), added with a stream of its own when
 * it has none (the lock held; creating a stream does not wait for the device); NULL when none
 * can be. */
static ref_t *ref_of(CUcontext ctx)
{
    ref_t *r;
    CUdevice d;

    for (r = TM.refs; r; r = r->next)
        if (r->ctx == ctx)
            return r;
    if (!(r = calloc(1, sizeof(*r))))
        return NULL;
    r->ctx = ctx;
    r->dev = SHIM_DRIVER_CALL(cuCtxGetDevice)(&d) == CUDA_SUCCESS ? (int)d : -1;
    if (SHIM_DRIVER_CALL(cuStreamCreate)(&r->stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
        free(r);
        return NULL;
    }
    r->next = TM.refs;
    TM.refs = r;
    return r;
}

/* The reference state of context ctx (the current one), with a use of a fresh reference in
 * *mark (made when the context has none, or only an old one); NULL when none can be had. */
static ref_t *ref_current(CUcontext ctx, mark_t **mark)
{
    pthread_mutex_lock(&TM.lock);
    ref_t *r = ref_of(ctx);
    int fresh = r && mark_fresh(r->mark);
    if (fresh)
        (*mark = r->mark)->users++;
    pthread_mutex_unlock(&TM.lock);
    if (!r || fresh)
        return r;
    mark_t *m = mark_new(r->stream), *stale = m;
    if (!m)
        return NULL;
    pthread_mutex_lock(&TM.lock);
    if (!mark_fresh(r->mark)) {         /* else another thread made one meanwhile: keep it */
        stale = mark_drop(r->mark);
        r->mark = m;
    }
    (*mark = r->mark)->users++;
    pthread_mutex_unlock(&TM.lock);
    mark_free(stale);
    return r;
}

/* A pair for the context of ref (the current one), measured from mark (whose use it takes
 * over): from the context's pool or new; NULL when none (the use of mark is dropped). */
static pair_t *pair_get(ref_t *ref, mark_t *mark)
{
    pthread_mutex_lock(&TM.lock);
    pair_t *p = ref->spare;
    if (p)
        ref->spare = p->next;
    pthread_mutex_unlock(&TM.lock);
    if (!p) {
        p = calloc(1, sizeof(*p));
        if (!p || SHIM_DRIVER_CALL(cuEventCreate)(&p->a, CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
            SHIM_DRIVER_CALL(cuEventCreate)(&p->b, CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
            if (p && p->a)
                SHIM_DRIVER_CALL(cuEventDestroy_v2)(p->a);
            free(p);
            pthread_mutex_lock(&TM.lock);
            mark = mark_drop(mark);
            pthread_mutex_unlock(&TM.lock);
            mark_free(mark);
            return NULL;
        }
    }
    p->ref = ref;
    p->mark = mark;
    return p;
}

/* Back to its context's pool, its reference's use dropped. */
static void pair_put(pair_t *p)
{
    pthread_mutex_lock(&TM.lock);
    mark_t *stale = mark_drop(p->mark);
    p->mark = NULL;
    p->next = p->ref->spare;
    p->ref->spare = p;
    pthread_mutex_unlock(&TM.lock);
    mark_free(stale);
}

/* Pair p, both its events recorded, queued for the poll that reads its times. */
static void pair_queue(pair_t *p)
{
    p->next = NULL;
    pthread_mutex_lock(&TM.lock);
    *TM.tail = p;
    TM.tail = &p->next;
    atomic_fetch_add(&shim_timing_pending, 1);
    pthread_mutex_unlock(&TM.lock);
}

static void pair_destroy(pair_t *p)
{
    SHIM_DRIVER_CALL(cuEventDestroy_v2)(p->a);
    SHIM_DRIVER_CALL(cuEventDestroy_v2)(p->b);
    free(p);
}

/* A pair of context ctx, the first event recorded on s (ctx current); NULL when none. */
static pair_t *pair_begin(uint64_t op, CUcontext ctx, CUstream s, shim_hook_t h)
{
    mark_t *mark = NULL;
    ref_t *ref = ref_current(ctx, &mark);
    pair_t *p = ref ? pair_get(ref, mark) : NULL;

    if (!p)
        return NULL;
    p->op = op;
    if (record(p->a, s, h) != CUDA_SUCCESS) {
        pair_put(p);
        return NULL;
    }
    return p;
}

void *shim_timing_before(uint64_t op, CUstream s, shim_hook_t h, CUcontext ctx)
{
    CUcontext cur = NULL, popped;

    if (TM.source == SRC_CUPTI) {
        watch(s, h);
        trc_cupti_push(TM.cupti, op);
        return PUSHED;
    }
    /* Not while a capture may be open anywhere: making a context's reference creates a stream
     * and synchronises, which a capture in global mode forbids (it would be invalidated). */
    if (TM.source != SRC_EVENTS || res_capture_open() || capturing(s, h) ||
        SHIM_DRIVER_CALL(cuCtxGetCurrent)(&cur) != CUDA_SUCCESS)
        return NULL;
    if (!ctx || ctx == cur)
        return cur ? pair_begin(op, cur, s, h) : NULL;
    /* Work on another context's stream: its events are that context's, made with it current. */
    if (SHIM_DRIVER_CALL(cuCtxPushCurrent_v2)(ctx) != CUDA_SUCCESS)
        return NULL;
    pair_t *p = pair_begin(op, ctx, s, h);
    SHIM_DRIVER_CALL(cuCtxPopCurrent_v2)(&popped);
    return p;
}

void shim_timing_after(void *handle, CUresult r, CUstream s, shim_hook_t h)
{
    pair_t *p = handle;

    if (handle == PUSHED) {
        trc_cupti_pop(TM.cupti);
        return;
    }
    if (r != CUDA_SUCCESS || record(p->b, s, h) != CUDA_SUCCESS) {
        pair_put(p);
        return;
    }
    pair_queue(p);
}

/* ---------------------------------------------------------------- the shim's own moves */

/* A context that a move found without a fresh reference: the next poll makes one. */
static _Atomic(CUcontext) want_ref;

void *shim_timing_move_before(uint64_t id, CUcontext ctx, CUstream s)
{
    CUcontext cur = NULL, popped, none = NULL;
    ref_t *r;

    if (!TM.elapsed || !ctx || res_capture_open())
        return NULL;
    pthread_mutex_lock(&TM.lock);
    for (r = TM.refs; r && r->ctx != ctx; r = r->next)
        ;
    mark_t *mark = r && mark_fresh(r->mark) ? r->mark : NULL;
    if (mark)
        mark->users++;
    pthread_mutex_unlock(&TM.lock);
    if (!mark) {                        /* (made outside residency's lock: it waits) */
        if (atomic_compare_exchange_strong(&want_ref, &none, ctx))
            atomic_fetch_add(&shim_timing_pending, 1);
        return NULL;
    }
    int push = SHIM_DRIVER_CALL(cuCtxGetCurrent)(&cur) == CUDA_SUCCESS && cur != ctx;
    if (push && SHIM_DRIVER_CALL(cuCtxPushCurrent_v2)(ctx) != CUDA_SUCCESS) {
        pthread_mutex_lock(&TM.lock);
        mark = mark_drop(mark);
        pthread_mutex_unlock(&TM.lock);
        mark_free(mark);
        return NULL;
    }
    pair_t *p = pair_get(r, mark);      /* (its events are the context's) */
    if (p) {
        p->op = id;
        if (SHIM_DRIVER_CALL(cuEventRecord)(p->a, s) != CUDA_SUCCESS) {
            pair_put(p);
            p = NULL;
        }
    }
    if (push)
        SHIM_DRIVER_CALL(cuCtxPopCurrent_v2)(&popped);
    return p;
}

void shim_timing_move_after(void *handle, CUresult r, CUstream s)
{
    pair_t *p = handle;

    if (r != CUDA_SUCCESS || SHIM_DRIVER_CALL(cuEventRecord)(p->b, s) != CUDA_SUCCESS) {
        pair_put(p);
        return;
    }
    pair_queue(p);
}

/* A reference for the context a move asked one for (no lock held: it waits for its event). */
static void want_served(void)
{
    CUcontext ctx = atomic_exchange(&want_ref, NULL), cur = NULL, popped;
    mark_t *mark = NULL;

    if (!ctx)
        return;
    atomic_fetch_sub(&shim_timing_pending, 1);
    int push = SHIM_DRIVER_CALL(cuCtxGetCurrent)(&cur) == CUDA_SUCCESS && cur != ctx;
    if (push && SHIM_DRIVER_CALL(cuCtxPushCurrent_v2)(ctx) != CUDA_SUCCESS)
        return;
    if (ref_current(ctx, &mark) && mark) {
        pthread_mutex_lock(&TM.lock);
        mark = mark_drop(mark);         /* (the context keeps its own use) */
        pthread_mutex_unlock(&TM.lock);
        mark_free(mark);
    }
    if (push)
        SHIM_DRIVER_CALL(cuCtxPopCurrent_v2)(&popped);
}

/* The TIMING event of a pair whose events have both completed (no lock needed). */
static void pair_emit(const pair_t *p)
{
    float a = 0, d = 0;

    if (TM.elapsed(&a, p->mark->ev, p->a) != CUDA_SUCCESS ||
        TM.elapsed(&d, p->a, p->b) != CUDA_SUCCESS || a < 0 || d < 0)
        return;
    uint64_t start = p->mark->time + (uint64_t)((double)a * 1e6);
    emit_timing(p->op, TRC_TIMING_EVENTS, start, start + (uint64_t)((double)d * 1e6),
                shim_trace_now());
}

/* Takes the oldest pair off the queue if its second event is done (or failed: dropped);
 * NULL when the queue is empty or its head still runs.  *ok: it completed. */
static pair_t *take_done(int *ok)
{
    pthread_mutex_lock(&TM.lock);
    pair_t *p = TM.head;
    CUresult r = p ? SHIM_DRIVER_CALL(cuEventQuery)(p->b) : CUDA_ERROR_NOT_READY;
    if (p && r != CUDA_ERROR_NOT_READY) {
        TM.head = p->next;
        if (!TM.head)
            TM.tail = &TM.head;
        atomic_fetch_sub(&shim_timing_pending, 1);
    } else {
        p = NULL;
    }
    pthread_mutex_unlock(&TM.lock);
    *ok = r == CUDA_SUCCESS;
    return p;
}

void shim_timing_poll(void)
{
    int ok;

    /* An event query while a capture may be open could invalidate it (global mode forbids
     * it); the pairs wait until no capture is. */
    if (!atomic_load_explicit(&shim_timing_pending, memory_order_relaxed) || res_capture_open())
        return;
    want_served();
    for (int i = 0; i < POLL_MAX; i++) {
        pair_t *p = take_done(&ok);
        if (!p)
            return;
        if (ok)
            pair_emit(p);
        pair_put(p);
    }
}

static void destroy_list(pair_t *p)
{
    while (p) {
        pair_t *next = p->next;
        pair_destroy(p);
        p = next;
    }
}

/* At exit: every pair left, waited for (no lock held), then the pools.  Events of a context
 * the application has destroyed fail to synchronise: their times are lost. */
static void drain_events(void)
{
    pthread_mutex_lock(&TM.lock);
    pair_t *list = TM.head;
    TM.head = NULL;
    TM.tail = &TM.head;
    atomic_store(&shim_timing_pending, 0);
    pthread_mutex_unlock(&TM.lock);
    while (list) {
        pair_t *p = list;
        list = p->next;
        if (SHIM_DRIVER_CALL(cuEventSynchronize)(p->b) == CUDA_SUCCESS)
            pair_emit(p);
        pair_put(p);                    /* destroyed with the pools below */
    }
    for (ref_t *r = TM.refs; r; r = r->next) {
        destroy_list(r->spare);
        r->spare = NULL;
    }
}

/* Takes the references of the contexts about to go (ctx, or else every context of device
 * dev) off the list, and their pairs off the queue, in order, into *pairs (the lock held). */
static ref_t *take_dying(CUcontext ctx, int dev, pair_t **pairs)
{
    ref_t *dying = NULL;

    for (ref_t **rp = &TM.refs; *rp;) {
        ref_t *r = *rp;
        if (ctx ? r->ctx != ctx : r->dev != dev) {
            rp = &r->next;
            continue;
        }
        *rp = r->next;
        r->next = dying;
        dying = r;
    }
    for (pair_t **qp = &TM.head; dying && *qp;) {
        pair_t *p = *qp;
        ref_t *r = dying;
        while (r && r != p->ref)
            r = r->next;
        if (!r) {
            qp = &p->next;
            continue;
        }
        *qp = p->next;
        p->next = NULL;
        *pairs = p;
        pairs = &p->next;
        atomic_fetch_sub(&shim_timing_pending, 1);
    }
    for (TM.tail = &TM.head; *TM.tail; TM.tail = &(*TM.tail)->next)
        ;
    return dying;
}

void shim_timing_ctx_gone(CUcontext ctx, int dev)
{
    pair_t *pairs = NULL;
    CUcontext want = ctx;

    /* A reference wanted for it (for any, when only its device is known) is wanted no more. */
    if (ctx ? atomic_compare_exchange_strong(&want_ref, &want, NULL)
            : atomic_exchange(&want_ref, NULL) != NULL)
        atomic_fetch_sub(&shim_timing_pending, 1);

    if (TM.source == SRC_CUPTI) {
        /* The context's queues of dropped records are read while it exists: what was dropped
         * is known once the records made so far are delivered. */
        trc_cupti_flush(TM.cupti);
        read_drops();
    }

    pthread_mutex_lock(&TM.lock);
    ref_t *dying = take_dying(ctx, dev, &pairs);
    pthread_mutex_unlock(&TM.lock);
    while (pairs) {                 /* (the driver waits for the context's work too) */
        pair_t *p = pairs;
        pairs = p->next;
        if (SHIM_DRIVER_CALL(cuEventSynchronize)(p->b) == CUDA_SUCCESS)
            pair_emit(p);
        pair_put(p);
    }
    while (dying) {
        ref_t *r = dying;
        dying = r->next;
        pthread_mutex_lock(&TM.lock);
        pair_t *spare = r->spare;
        mark_t *stale = mark_drop(r->mark);
        r->spare = NULL;
        r->mark = NULL;
        r->next = TM.gone;
        TM.gone = r;
        pthread_mutex_unlock(&TM.lock);
        destroy_list(spare);
        mark_free(stale);
        SHIM_DRIVER_CALL(cuStreamDestroy_v2)(r->stream);
    }
}

trace_clock_t shim_timing_retire(void)
{
    if (!TM.cupti || TM.closed)
        return NULL;
    shim_timing_window(0);
    trc_cupti_flush(TM.cupti);
    TM.closed_at = trc_cupti_now(TM.cupti);
    TM.base_at = TM.base();
    atomic_store_explicit(&TM.closed, 1, memory_order_release);
    if (TM.source == SRC_CUPTI)
        TM.source = SRC_NONE;
    trc_cupti_detach(TM.cupti);
    report_drops(TM.closed_at);
    return closed_clock;
}

trace_clock_t shim_timing_stop(void)
{
    drain_events();
    trace_clock_t after = shim_timing_retire();
    if (TM.cupti)
        trc_cupti_close(TM.cupti);
    TM.cupti = NULL;
    return after;
}

void shim_timing_after_fork(void)
{
    /* The child has no CUPTI subscription and no events of its own: it times nothing. */
    TM.source = SRC_NONE;
    TM.cupti = NULL;
    TM.enabled = 0;
    TM.dropped = 0;
    TM.head = NULL;
    TM.tail = &TM.head;
    atomic_store(&shim_timing_pending, 0);
    atomic_store(&want_ref, NULL);
    TM.refs = TM.gone = NULL;
    pthread_mutex_init(&TM.lock, NULL);
}
