/* SPDX-License-Identifier: MIT */
/*
 * res_plan_time.c - what the plan's cost model needs of the machine, measured in the profiled
 * iteration (res_plan.c): each operation's device time, and the host link's bandwidth each way.
 *
 * Device times.  Each operation the profile records is timed by two timing events of the
 * arena's context, recorded on the operation's own stream right before the driver call that
 * enqueues it (after everything the shim did for it: its migrations, the waits for moves in
 * flight, so that none of it counts) and right after it (res_ptime_before/_after, and the
 * fast launch path's res_ptime_fast/_fast_done); the operation's time is the elapsed time
 * between them.  Where the stream was idle when the first event was recorded, that includes
 * the host's time to enqueue the operation (a few microseconds; 1 us on the simulator).
 * Records on the application's streams add no synchronisation it did not have: an event
 * record waits for nothing and nothing waits for it but the shim's queries, and on the legacy
 * stream, whose operations synchronise with every blocking stream, the two records sit
 * directly before and after an operation of that stream, which synchronises the same way.
 * The per-thread default stream takes records as any blocking stream does (named as the
 * operation's hook named it: cuEventRecord_ptsz for a _ptsz/_ptds call).  An NCCL call's
 * second event follows the call that enqueued its work (res_nccl.c); of the calls of one
 * group on one stream, which run as one piece of work, the last takes the time and the
 * others count 0 (res_ptime_merged).
 * Not timed (dur_ns 0, counted in the plan's log line): operations of another context than
 * the arena's (their events would be that context's, which the application may destroy),
 * operations the driver refused, a copy during whose driver call (the device's lock dropped)
 * another thread began an operation on its stream, an NCCL call that may enqueue its work
 * after it returned (ncclInProgress), and operations past PTIME_MAX_OPS.  A captured
 * operation is never profiled.
 * An operation left untimed takes the mean time of the timed ones with its signature (the same
 * kernel or copy kind reaching as many chunks), when there are any.
 *
 * When the times are read.  The profiled iteration ends when the next begins (res_plan.c);
 * its last operations may still run then.  Planning waits for them without waiting: at each
 * iteration start the events are queried (cuEventQuery, oldest first, from where the last
 * query stopped), and planning is put off by an iteration while any is incomplete, at most
 * PTIME_DEFER_MAX times, after which the plan is made with the times that completed (the rest
 * count as untimed).  Waiting once (cuEventSynchronize) would be a host synchronisation the
 * program does not have, made under the device's lock or with the lock dropped in the middle
 * of an operation; a training loop's host seldom runs an iteration ahead of its GPU, so one
 * iteration's delay is the usual cost.  Every event is destroyed once read, or when the
 * profile is dropped (its context about to be destroyed).
 *
 * The host link.  The reactive engine's migrations in the profiled iteration are the shim's
 * own copies of whole chunks between the GPU and pinned (or VMM-mapped) host memory, the
 * path the plan's moves take, on the shim's stream, one at a time (the host waits for each).
 * Each is timed by two events around it on that stream, so its time is the link's alone;
 * their bytes over their time is each direction's rate (fixed costs per copy included) once
 * PTIME_LINK_MIN bytes were seen that way.  The application's own copies are not used: their
 * host memory may be pageable (staged by the driver, slower) and the shim cannot tell.  The
 * migrations never run both ways at once, so the duplex limit is not measured: it keeps its
 * default ratio to one direction (res_plan.c, machine).
 *
 * The NVMe link.  The reactive engine's NVMe reads and writes in the profiled iteration are
 * synchronous, whole chunks, one at a time (res_nvme.c); the same two events time each, on
 * the shim's stream with nothing of the shim's on it: one recorded just before the I/O is
 * issued (only when the stream is idle), one after it completed (waited for).  The stream is idle, so the events
 * complete as they are recorded and their distance is the I/O's time on the host's clock; on
 * the simulator the I/O is charged on its drive model, which moves the host clock the events
 * are recorded by, so the same code measures the model.  The clock the shim reads for its own
 * statistics (res_now_s, CLOCK_MONOTONIC) would not see that charge.  Bytes over time is each
 * direction's rate (the drive's latency per chunk included) once PTIME_LINK_MIN bytes were
 * timed that way; else the default (res_plan_nvme.c).
 */
#include <stdlib.h>
#include <string.h>

#include "../policy/policy.h"
#include "res_int.h"
#include "res_ptime.h"

#define PTIME_MAX_OPS (1u << 16)    /* operations timed per profile (2 events each) */
#define PTIME_DEFER_MAX 4           /* iterations planning waits for the events, at most */
#define PTIME_LINK_MIN (16ull << 20)    /* bytes of migrations a direction's rate needs */
#define EV_BATCH 64                 /* events made at once (one context switch) */

enum { T_NONE, T_BEGUN, T_DONE, T_MERGED };  /* T_MERGED: timed at 0 (res_ptime_merged) */

typedef struct ptime_op {
    CUevent a, b;
    CUstream s;                     /* its stream (as the hook named it: ptds) */
    uint8_t ptds, state;
} ptime_op_t;

struct res_ptime {
    uint32_t gen;                   /* profiles begun: a collect's mark names its profile */
    int on;                         /* a profile is being recorded */
    ptime_op_t *op;                 /* per profiled operation, by its index */
    size_t nop, cap;
    size_t scan;                    /* operations found complete by res_ptime_ready */
    uint32_t defer;                 /* iterations planning was put off */
    CUevent spare[EV_BATCH];
    uint32_t nspare;
    uint32_t fast;                  /* 1 + the fast launch whose second event is due */
    CUstream fast_s;
    CUevent la, lb;                 /* around one migration's copy */
    uint64_t link_bytes[2];         /* migrations' bytes and ns: [0] to the GPU, [1] from */
    double link_ns[2];
    uint64_t io_bytes[2];           /* NVMe I/O's bytes and ns: [0] reads, [1] writes */
    double io_ns[2];
};

_Atomic int res_ptime_fast_on;

/* ---------------------------------------------------------------- events */

/* cuEventElapsedTime, of a driver before 12.8 too (SHIM_DRIVER_CALL: cuda.h defines the
 * old name as the new one, which DRV would expand). */
static CUresult elapsed(float *ms, CUevent a, CUevent b)
{
    shim_pfn_cuEventElapsedTime_v2_t v2 = SHIM_DRIVER_CALL(cuEventElapsedTime_v2);
    shim_pfn_cuEventElapsedTime_t v1 = SHIM_DRIVER_CALL(cuEventElapsedTime);
    return v2 ? v2(ms, a, b) : v1 ? v1(ms, a, b) : CUDA_ERROR_NOT_SUPPORTED;
}

/* Make n timing events of d's context into ev; how many were made. */
static uint32_t events_make(res_dev_t *d, CUevent *ev, uint32_t n)
{
    CUcontext cur = NULL, popped;
    int pushed = DRV(cuCtxGetCurrent)(&cur) == CUDA_SUCCESS && cur != d->ctx &&
                 DRV(cuCtxPushCurrent_v2)(d->ctx) == CUDA_SUCCESS;
    uint32_t i = 0;
    while (i < n && DRV(cuEventCreate)(&ev[i], CU_EVENT_DEFAULT) == CUDA_SUCCESS)
        i++;
    if (pushed)
        DRV(cuCtxPopCurrent_v2)(&popped);
    return i;
}

/* A timing event of d's context, NULL when none can be made. */
static CUevent event_get(res_dev_t *d, res_ptime_t *t)
{
    if (!t->nspare)
        t->nspare = events_make(d, t->spare, EV_BATCH);
    return t->nspare ? t->spare[--t->nspare] : NULL;
}

static void event_destroy(CUevent *e)
{
    if (*e)
        DRV(cuEventDestroy_v2)(*e);
    *e = NULL;
}

static CUresult record(CUevent e, CUstream s, int ptds)
{
    return ptds ? DRVT(cuEventRecord_ptsz)(e, s) : DRVT(cuEventRecord)(e, s);
}

/* Every event of t destroyed; its operations forgotten. */
static void events_free(res_ptime_t *t)
{
    for (size_t i = 0; i < t->nop; i++) {
        event_destroy(&t->op[i].a);
        event_destroy(&t->op[i].b);
    }
    for (uint32_t i = 0; i < t->nspare; i++)
        DRV(cuEventDestroy_v2)(t->spare[i]);
    event_destroy(&t->la);
    event_destroy(&t->lb);
    t->nspare = 0;
    t->nop = t->scan = 0;
    if (t->fast)
        atomic_fetch_sub(&res_ptime_fast_on, 1);
    t->fast = 0;
}

/* ---------------------------------------------------------------- the profile */

void res_ptime_open(res_dev_t *d)
{
    res_ptime_t *t = d->ptime;
    if (!t && !(t = d->ptime = calloc(1, sizeof(*t))))
        return;
    events_free(t);
    t->gen++;
    t->on = 1;
    t->defer = 0;
    memset(t->link_bytes, 0, sizeof(t->link_bytes));
    memset(t->link_ns, 0, sizeof(t->link_ns));
    memset(t->io_bytes, 0, sizeof(t->io_bytes));
    memset(t->io_ns, 0, sizeof(t->io_ns));
    CUevent ev[2];
    uint32_t n = events_make(d, ev, 2);
    if (n == 2) {
        t->la = ev[0];
        t->lb = ev[1];
    } else if (n == 1) {
        DRV(cuEventDestroy_v2)(ev[0]);
    }
}

void res_ptime_close(res_dev_t *d)
{
    res_ptime_t *t = d->ptime;
    if (!t)
        return;
    events_free(t);
    t->on = 0;
    t->gen++;
}

void res_ptime_drop(res_dev_t *d)
{
    res_ptime_close(d);
    free(d->ptime ? d->ptime->op : NULL);
    free(d->ptime);
    d->ptime = NULL;
}

/* Room for operation i's entry; NULL when past the limit or out of memory. */
static ptime_op_t *entry(res_ptime_t *t, uint32_t i)
{
    if (i >= PTIME_MAX_OPS)
        return NULL;
    if (i >= t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap <= i)
            cap *= 2;
        ptime_op_t *n = realloc(t->op, cap * sizeof(*n));
        if (!n)
            return NULL;
        t->op = n;
        t->cap = cap;
    }
    for (; t->nop <= i; t->nop++)
        t->op[t->nop] = (ptime_op_t){ .state = T_NONE };
    return &t->op[i];
}

/* The first event of operation i, recorded on s now; 0, or -1 when it is not timed. */
static int begin(res_dev_t *d, res_ptime_t *t, uint32_t i, CUcontext ctx, CUstream s, int ptds)
{
    ptime_op_t *o;
    if (!t->on || ctx != d->ctx || !(o = entry(t, i)) || o->state != T_NONE)
        return -1;
    if (!(o->a = event_get(d, t)))
        return -1;
    if (record(o->a, s, ptds) != CUDA_SUCCESS) {
        event_destroy(&o->a);
        return -1;
    }
    o->s = s;
    o->ptds = (uint8_t)ptds;
    o->state = T_BEGUN;
    return 0;
}

/* The second event of operation i after the driver returned r for it. */
static void end(res_dev_t *d, res_ptime_t *t, uint32_t i, CUresult r, CUstream s, int ptds)
{
    ptime_op_t *o = i < t->nop ? &t->op[i] : NULL;
    if (!o || o->state != T_BEGUN)
        return;
    if (r == CUDA_SUCCESS && (o->b = event_get(d, t)) && record(o->b, s, ptds) == CUDA_SUCCESS) {
        o->state = T_DONE;
        return;
    }
    event_destroy(&o->a);
    event_destroy(&o->b);
    o->state = T_NONE;
}

void res_ptime_op(res_dev_t *d, collect_t *k, uint32_t i)
{
    res_ptime_t *t = d->ptime;
    k->timed = t && t->on ? i + 1 : 0;
    k->timed_gen = t ? t->gen : 0;
}

void res_ptime_before(res_dev_t *d, collect_t *k, CUstream s, int ptds)
{
    res_ptime_t *t = d->ptime;
    if (!t || k->timed_gen != t->gen || begin(d, t, k->timed - 1, k->ctx, s, ptds) < 0)
        k->timed = 0;
}

static int legacy(CUstream s, int ptds)
{
    return !ptds && (!s || s == CU_STREAM_LEGACY);
}

/* A copy with a host side drops the device's lock around the driver call: did an operation
 * of another thread begin meanwhile on its stream (or either on the legacy stream, which
 * waits for the others)?  Operation i's events would then hold that one's work too. */
static int shared(const res_ptime_t *t, uint32_t i)
{
    const ptime_op_t *o = &t->op[i];
    for (size_t j = (size_t)i + 1; o->state == T_BEGUN && j < t->nop; j++) {
        const ptime_op_t *p = &t->op[j];
        if (p->state != T_NONE && ((p->s == o->s && p->ptds == o->ptds) ||
                                   legacy(p->s, p->ptds) || legacy(o->s, o->ptds)))
            return 1;
    }
    return 0;
}

void res_ptime_after(res_dev_t *d, collect_t *k, CUresult r, CUstream s, int ptds)
{
    res_ptime_t *t = d->ptime;
    uint32_t i = k->timed - 1;
    k->timed = 0;
    if (!t || k->timed_gen != t->gen || i >= t->nop || t->op[i].state != T_BEGUN)
        return;                         /* (refused before it began: nothing to end) */
    if (shared(t, i))
        r = CUDA_ERROR_NOT_READY;       /* (not timed) */
    end(d, t, i, r, s, ptds);
}

void res_ptime_merged(res_dev_t *d, collect_t *k)
{
    res_ptime_t *t = d->ptime;
    uint32_t i = k->timed - 1;
    k->timed = 0;
    if (!t || k->timed_gen != t->gen || i >= t->nop || t->op[i].state != T_BEGUN)
        return;
    event_destroy(&t->op[i].a);
    t->op[i].state = T_MERGED;
}

void res_ptime_fast(res_dev_t *d, uint32_t i, CUcontext ctx, CUstream s)
{
    res_ptime_t *t = d->ptime;
    if (!t || begin(d, t, i, ctx, s, 0) < 0)
        return;
    if (!t->fast)
        atomic_fetch_add(&res_ptime_fast_on, 1);
    t->fast = i + 1;
    t->fast_s = s;
}

void res_plan_fast_done(shim_lock_t *fast, CUresult r)
{
    res_dev_t *d = (res_dev_t *)(void *)((char *)fast - offsetof(res_dev_t, lock));
    res_ptime_t *t = d->ptime;
    if (!t || !t->fast)
        return;
    end(d, t, t->fast - 1, r, t->fast_s, 0);
    t->fast = 0;
    atomic_fetch_sub(&res_ptime_fast_on, 1);
}

/* ---------------------------------------------------------------- planning */

int res_ptime_ready(res_dev_t *d)
{
    res_ptime_t *t = d->ptime;
    if (!t)
        return 1;
    t->on = 0;
    for (; t->scan < t->nop; t->scan++) {
        const ptime_op_t *o = &t->op[t->scan];
        if (o->state == T_NONE || o->state == T_MERGED)
            continue;
        if (o->state == T_BEGUN || DRVT(cuEventQuery)(o->b) == CUDA_ERROR_NOT_READY)
            return t->defer++ >= PTIME_DEFER_MAX;
    }
    return 1;
}

/* Signatures and the times of the timed operations that have them: an open-addressed table
 * whose size is a power of two over twice the operations. */
typedef struct sig_slot {
    uint64_t sig, sum, count;
} sig_slot_t;

static sig_slot_t *slot_of(sig_slot_t *tab, size_t size, uint64_t sig)
{
    size_t h = (size_t)((sig * 0x9E3779B97F4A7C15ull) >> 32) & (size - 1);
    while (tab[h].count && tab[h].sig != sig)
        h = (h + 1) & (size - 1);
    return &tab[h];
}

/* Untimed operations with the signature of some timed ones take the timed ones' mean time;
 * how many did. */
static uint64_t estimate(pol_op_t *ops, const uint64_t *sig, size_t nops, const uint8_t *timed)
{
    size_t size = 16;
    uint64_t n = 0;
    while (size < 2 * nops)
        size *= 2;
    sig_slot_t *tab = calloc(size, sizeof(*tab));
    if (!tab)
        return 0;
    for (size_t i = 0; i < nops; i++)
        if (timed[i]) {
            sig_slot_t *e = slot_of(tab, size, sig[i]);
            e->sig = sig[i];
            e->sum += ops[i].dur_ns;
            e->count++;
        }
    for (size_t i = 0; i < nops; i++) {
        const sig_slot_t *e = timed[i] ? NULL : slot_of(tab, size, sig[i]);
        if (e && e->count) {
            ops[i].dur_ns = e->sum / e->count;
            n++;
        }
    }
    free(tab);
    return n;
}

/* Operation i's time into *ns: 0, or -1 when it has none. */
static int time_of(const res_ptime_t *t, size_t i, uint64_t *ns)
{
    const ptime_op_t *o = i < t->nop ? &t->op[i] : NULL;
    float ms = 0;           /* (T_MERGED: 0) */
    if (!o || (o->state != T_MERGED &&
               (o->state != T_DONE || elapsed(&ms, o->a, o->b) != CUDA_SUCCESS || ms < 0)))
        return -1;
    *ns = (uint64_t)((double)ms * 1e6 + 0.5);
    return 0;
}

size_t res_ptime_times(res_dev_t *d, uint64_t *ns, uint8_t *timed, size_t nops)
{
    res_ptime_t *t = d->ptime;
    size_t n = 0;
    for (size_t i = 0; i < nops; i++) {
        timed[i] = t && time_of(t, i, &ns[i]) == 0;
        n += timed[i];
    }
    res_ptime_close(d);
    return n;
}

void res_ptime_fill(res_dev_t *d, pol_op_t *ops, const uint64_t *sig, size_t nops,
                    res_ptime_report_t *rep)
{
    res_ptime_t *t = d->ptime;
    uint8_t *timed = calloc(nops ? nops : 1, 1);
    memset(rep, 0, sizeof(*rep));
    for (size_t i = 0; t && timed && i < nops; i++) {
        timed[i] = time_of(t, i, &ops[i].dur_ns) == 0;
        rep->timed += timed[i];
    }
    for (size_t i = 0; timed && i < nops; i++)
        if (!timed[i])
            ops[i].away = 0;    /* (a time estimated is other operations': pol_op_t.away) */
    if (timed)
        rep->estimated = estimate(ops, sig, nops, timed);
    rep->untimed = nops - rep->timed - rep->estimated;
    free(timed);
    for (int dir = 0; t && dir < 2; dir++) {
        rep->link_bytes[dir] = t->link_bytes[dir];
        if (t->link_bytes[dir] >= PTIME_LINK_MIN && t->link_ns[dir] > 0)
            rep->link_gbs[dir] = (double)t->link_bytes[dir] / t->link_ns[dir];
        rep->nvme_bytes[dir] = t->io_bytes[dir];
        if (t->io_bytes[dir] >= PTIME_LINK_MIN && t->io_ns[dir] > 0)
            rep->nvme_gbs[dir] = (double)t->io_bytes[dir] / t->io_ns[dir];
    }
    res_ptime_close(d);
}

/* ---------------------------------------------------------------- the host link */

int res_ptime_link_begin(res_dev_t *d)
{
    res_ptime_t *t = d->ptime;
    return t && t->on && t->la && DRVT(cuEventRecord)(t->la, d->stream) == CUDA_SUCCESS;
}

CUresult res_ptime_link_wait(res_dev_t *d, int timed, CUresult r, int to_gpu)
{
    res_ptime_t *t = d->ptime;
    timed = timed && r == CUDA_SUCCESS && DRVT(cuEventRecord)(t->lb, d->stream) == CUDA_SUCCESS;
    if (r == CUDA_SUCCESS)
        r = DRVT(cuStreamSynchronize)(d->stream);
    float ms = 0;
    if (timed && r == CUDA_SUCCESS && elapsed(&ms, t->la, t->lb) == CUDA_SUCCESS && ms > 0) {
        t->link_bytes[!to_gpu] += d->chunk;
        t->link_ns[!to_gpu] += (double)ms * 1e6;
    }
    return r;
}

/* ---------------------------------------------------------------- the NVMe link */

int res_ptime_io_begin(res_dev_t *d)
{
    res_ptime_t *t = d->ptime;
    return t && t->on && d->stream && DRV(cuStreamQuery)(d->stream) == CUDA_SUCCESS &&
           res_ptime_link_begin(d);
}

void res_ptime_io_end(res_dev_t *d, int timed, int ok, int write)
{
    res_ptime_t *t = d->ptime;
    float ms = 0;
    if (!timed || DRVT(cuEventRecord)(t->lb, d->stream) != CUDA_SUCCESS ||
        DRVT(cuEventSynchronize)(t->lb) != CUDA_SUCCESS)
        return;
    if (ok && elapsed(&ms, t->la, t->lb) == CUDA_SUCCESS && ms > 0) {
        t->io_bytes[write != 0] += d->chunk;
        t->io_ns[write != 0] += (double)ms * 1e6;
    }
}
