/* SPDX-License-Identifier: MIT */
/*
 * exec.c - the executor: one FIFO of operations for the whole process, run by one thread.
 *
 * Running operations in submission order is always legal: every dependency CUDA defines
 * (stream order, event waits, the legacy stream) points from an earlier submission to a later
 * one.  So the FIFO needs no dependency tracking to be correct, with one exception: a stream
 * memory wait may be satisfied by later work, so an unsatisfied one is set aside with what
 * depends on it (blocked waits, exec_aside.c).  Otherwise dependencies matter only for the virtual
 * clock and the race checker, which the executor computes as it goes:
 *   start = max(host time at submission, stream's last end, waited events, legacy-stream
 *               ordering, the engine's next free time);  end = start + modelled duration.
 * Work is asynchronous: the submitting thread returns at once, so a program that forgets to
 * synchronise can read stale data.  With ELIXIR_SIM_EXEC=lazy the executor runs only while a
 * host thread waits, which makes such bugs deterministic.
 *
 * A profiling library may attach an activity observer (simcuda.h): sim_submit lets it tag
 * kernels, copies and memsets on the submitting thread, and the executor reports each tagged
 * operation's virtual start and end once it has run, before anyone can see it complete.
 */
#include <errno.h>
#include <sched.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec_int.h"

/* A pause while spinning: polite to a hyperthread sibling. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static sim_op_t *q_head, *q_tail;
static _Atomic int q_nonempty;          /* q_head != NULL, readable without the lock */
static uint64_t q_submitted, q_done;    /* operation numbers, under sim_lock */
static uint64_t flush_target;           /* lazy mode: run up to this op number */
static int exec_sleeping;
/* Under sim_lock: the executor has nothing to run but waits whose condition does not hold;
 * cleared by each submission and flush, since new work may be what satisfies them. */
static int stuck;
static int done_waiters;                /* host threads blocked on cv_done */
static pthread_cond_t cv_work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t cv_done = PTHREAD_COND_INITIALIZER;
static pthread_t exec_thread;
_Thread_local int exec_on_executor;

double exec_t_max;                      /* latest end of any executed op, under sim_lock */
exec_stats_t exec_stats;

int sim_on_executor(void)
{
    return exec_on_executor;
}

/* ---------------------------------------------------------------- operations */

/*
 * Operations are recycled through a free list: they are allocated by host threads and
 * released by the executor, a pattern that costs malloc dearly.
 */
static sim_op_t *op_cache;
static unsigned op_cache_n;

/* Each submitting thread takes cached ops in bulk, so that allocating one costs no lock;
 * a thread's leftovers go back to the shared cache when it exits. */
static _Thread_local sim_op_t *my_ops;
static pthread_key_t my_ops_key;
static pthread_once_t my_ops_once = PTHREAD_ONCE_INIT;

static void my_ops_return(void *unused)
{
    pthread_mutex_lock(&sim_lock);
    while (my_ops) {
        sim_op_t *op = my_ops;
        my_ops = op->next;
        op->next = op_cache;
        op_cache = op;
        op_cache_n++;
    }
    pthread_mutex_unlock(&sim_lock);
}

static void my_ops_key_create(void)
{
    pthread_key_create(&my_ops_key, my_ops_return);
}

sim_op_t *sim_op_new(int kind)
{
    if (!my_ops) {
        pthread_once(&my_ops_once, my_ops_key_create);
        pthread_mutex_lock(&sim_lock);
        my_ops = op_cache;
        op_cache = NULL;
        op_cache_n = 0;
        pthread_mutex_unlock(&sim_lock);
        if (my_ops)
            pthread_setspecific(my_ops_key, &my_ops);
    }
    sim_op_t *op = my_ops;
    if (op) {
        my_ops = op->next;
        memset(op, 0, sizeof(*op));
    } else {
        op = calloc(1, sizeof(*op));
    }
    if (op)
        op->kind = kind;
    return op;
}

/* Return a finished op's memory to the cache.  Under sim_lock. */
static void op_recycle_locked(sim_op_t *op)
{
    if (op_cache_n >= 4096) {
        free(op);
        return;
    }
    op->next = op_cache;
    op_cache = op;
    op_cache_n++;
}

static void op_free_payload(sim_op_t *op)
{
    if (op->kind == SIM_OP_KERNEL) {
        free(op->u.kernel.params);
        free(op->u.kernel.args);
    } else if (op->kind == SIM_OP_COPY) {
        free(op->u.copy.staging);
    } else if (op->kind == SIM_OP_WAIT_VALUE) {
        sim_vc_unref(op->u.memop.src_vc);
    } else if (op->kind == SIM_OP_EVENT_WAIT) {
        sim_vc_unref(op->u.snap_vc);
    }
}

void sim_op_discard(sim_op_t *op)
{
    if (!op)
        return;
    op_free_payload(op);
    if ((op->kind == SIM_OP_EVENT_RECORD || op->kind == SIM_OP_EVENT_WAIT) && op->u.event) {
        pthread_mutex_lock(&sim_lock);
        sim_event_unref_locked(op->u.event);
        pthread_mutex_unlock(&sim_lock);
    }
    sim_vc_unref(op->host_vc);
    free(op);
}

CUresult sim_submit(CUstream s, sim_op_t *op, uint64_t *seq)
{
    CUresult res;
    if (seq)
        *seq = 0;
    if (atomic_load_explicit(&sim_captures, memory_order_relaxed) && sim_capture_op(s, op, &res))
        return res;
    const sim_activity_ops_t *act = atomic_load_explicit(&exec_act_ops, memory_order_acquire);
    if (__builtin_expect(act != NULL, 0))
        exec_activity_submit(act, op);
    sim_vc_t *vc = sim_host_vc();
    pthread_mutex_lock(&sim_lock);
    op->stream = s;
    s->refs++;
    op->seq = ++s->enq_seq;
    if (seq)
        *seq = op->seq;
    op->opno = ++q_submitted;
    stuck = 0;
    op->t_submit = exec_host_clock;
    op->host_vc = vc;
    exec_host_clock += sim_cfg.model.api_us * 1000.0;
    exec_stats.host_ns[SIM_HOST_SUBMIT] += sim_cfg.model.api_us * 1000.0;
    exec_host_clock_publish();
    if (op->kind == SIM_OP_EVENT_RECORD) {
        /* The event now refers to this record: its stream and position. */
        struct CUevent_st *e = op->u.event;
        if (e->stream != s) {
            s->refs++;
            if (e->stream)
                sim_stream_unref_locked(e->stream);
            e->stream = s;
        }
        e->seq = op->seq;
        e->rec_opno = op->opno;
        e->capture_ended = 0;
    } else if (op->kind == SIM_OP_EVENT_WAIT && op->u.event->stream) {
        /* The record it waits for is the event's latest (the executor needs to know which:
         * a wait set aside may run after a later record). */
        struct CUevent_st *e = op->u.event;
        op->u.wait_stream = e->stream;
        e->stream->refs++;
        op->u.wait_seq = e->seq;
        op->u.wait_opno = e->rec_opno;
    }
    if (q_tail)
        q_tail->next = op;
    else
        q_head = op;
    q_tail = op;
    atomic_store_explicit(&q_nonempty, 1, memory_order_release);
    if (exec_sleeping && !sim_cfg.lazy)
        pthread_cond_signal(&cv_work);
    pthread_mutex_unlock(&sim_lock);
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- virtual time and races */

static uint32_t sink_tid;               /* joins every executed op, for sim_wait_all */

static double dmax(double a, double b)
{
    return a > b ? a : b;
}

/* Order op after what the legacy stream semantics require; returns the earliest start. */
static double order_legacy(CUstream s, double t0)
{
    CUcontext ctx = s->ctx;
    if (s->kind == SIM_STREAM_LEGACY) {
        pthread_mutex_lock(&sim_lock);
        for (CUstream x = ctx->streams; x; x = x->ctx_next)
            if (sim_stream_blocking(x)) {
                t0 = dmax(t0, x->t_end);
                if (exec_race)
                    sim_race_acquire(exec_race, s->race_tid, x->vc_exec);
            }
        pthread_mutex_unlock(&sim_lock);
    } else if (sim_stream_blocking(s)) {
        t0 = dmax(t0, ctx->legacy->t_end);
        if (exec_race)
            sim_race_acquire(exec_race, s->race_tid, ctx->legacy->vc_exec);
    }
    return t0;
}

static int engine_of(const sim_op_t *op)
{
    switch (op->kind) {
    case SIM_OP_KERNEL:
    case SIM_OP_MEMSET: return SIM_ENG_COMPUTE;
    case SIM_OP_COPY: return op->u.copy.engine;
    default: return -1;
    }
}

/* The ns the kernel that just ran spent on the host link: the bytes of host memory it
 * declared touching (sim_kernel_access), read over the link's host-to-device direction and
 * written over the other, each at its bandwidth. */
static double host_link_ns(const sim_model_t *m)
{
    double rd = 0, wr = 0;
    for (size_t i = 0; i < exec_cur.nacc; i++) {
        double b = (double)sim_host_bytes(exec_cur.acc[i].addr, exec_cur.acc[i].len);
        rd += exec_cur.acc[i].mode & SIM_ACCESS_READ ? b : 0;
        wr += exec_cur.acc[i].mode & SIM_ACCESS_WRITE ? b : 0;
    }
    return dmax(rd / m->h2d_gbps, wr / m->d2h_gbps);
}

/* Modelled duration of op in ns, and the bytes it moved; a kernel's device time is counted
 * (exec_stats), apart where its host memory set it. */
static double duration(const sim_op_t *op, uint64_t *bytes)
{
    const sim_model_t *m = &sim_cfg.model;
    *bytes = 0;
    if (op->kind == SIM_OP_KERNEL) {
        double compute = exec_cur.flops / (m->tflops * 1e3);
        double memory = exec_cur.bytes / m->hbm_gbps, link = host_link_ns(m);
        double ns = m->launch_us * 1000.0 + dmax(dmax(compute, memory), link);
        exec_stats.kernel_ns += ns;
        if (link > dmax(compute, memory)) {
            exec_stats.kernel_link_ns += ns;
            exec_stats.kernels_link++;
        }
        return ns;
    }
    if (op->kind == SIM_OP_COPY) {
        const sim_copy_t *c = &op->u.copy;
        *bytes = (uint64_t)c->width * c->height * c->depth;
        return c->gbps > 0 ? (double)*bytes / c->gbps : 0;
    }
    if (op->kind == SIM_OP_MEMSET) {
        const sim_memset_t *ms = &op->u.memset;
        *bytes = (uint64_t)ms->width * ms->elem * ms->height;
        return (double)*bytes / m->hbm_gbps;
    }
    return 0;
}

/*
 * One access of [addr, +len) by tid.  Bytes of VMM mappings are checked as the physical
 * memory they reach (sim_vmm_phys_pieces), so that a copy through one mapping and a kernel
 * through another mapping of the same memory race as they would on a device; the address
 * itself is then only read, a use of the mapping that an unsynchronised cuMemUnmap (a host
 * write of it) races with.  Other bytes are checked by their address.
 */
#define RACE_PIECES 64

void sim_race_data(uint32_t tid, uint64_t addr, uint64_t len, int write,
                   const sim_race_who_t *who)
{
    sim_phys_piece_t pc[RACE_PIECES];
    uint64_t at = addr, end = addr + len;
    size_t n = sim_vmm_phys_pieces(addr, len, pc, RACE_PIECES);
    sim_race_access(exec_race, tid, addr, len, n ? 0 : write, who);
    while (n) {                         /* (in windows of RACE_PIECES mappings) */
        for (size_t i = 0; i < n; i++) {
            sim_race_access(exec_race, tid, pc[i].key, pc[i].len, write, who);
            at += pc[i].len;
        }
        n = at < end ? sim_vmm_phys_pieces(at, end - at, pc, RACE_PIECES) : 0;
    }
}

/* Report the accesses of a strided region: per row when few rows, else its whole span. */
static void race_rows(uint32_t tid, uint64_t base, size_t width, size_t height, size_t depth,
                      size_t pitch, size_t rows_per_slice, int write, const sim_race_who_t *who)
{
    if (width == 0 || height == 0 || depth == 0)
        return;
    if (height * depth > 16 || pitch == width) {
        uint64_t last = base + ((depth - 1) * rows_per_slice + (height - 1)) * pitch + width;
        sim_race_data(tid, base, last - base, write, who);
        return;
    }
    for (size_t z = 0; z < depth; z++)
        for (size_t y = 0; y < height; y++)
            sim_race_data(tid, base + (z * rows_per_slice + y) * pitch, width, write, who);
}

/* Without declared accesses, each pointer argument stands for its whole allocation. */
static void race_kernel_args(const sim_op_t *op, uint32_t tid, const sim_race_who_t *who)
{
    const sim_kernel_op_t *k = &op->u.kernel;
    for (size_t off = 0; off + 8 <= k->args_size; off += 8) {
        uint64_t v;
        sim_ptr_info_t info;
        memcpy(&v, k->args + off, 8);
        if (v >= 4096 && sim_ptr_info(v, &info) == 0 && info.mapped)
            sim_race_data(tid, info.base, info.size, 1, who);
    }
}

static void race_op(const sim_op_t *op, uint32_t tid)
{
    sim_race_who_t who = { exec_op_name(op), op->opno, (uint32_t)op->stream->id };
    switch (op->kind) {
    case SIM_OP_KERNEL:
        if (!exec_cur.nacc)
            race_kernel_args(op, tid, &who);
        for (size_t i = 0; i < exec_cur.nacc; i++) {
            if (exec_cur.acc[i].mode & SIM_ACCESS_READ)
                sim_race_data(tid, exec_cur.acc[i].addr, exec_cur.acc[i].len, 0, &who);
            if (exec_cur.acc[i].mode & SIM_ACCESS_WRITE)
                sim_race_data(tid, exec_cur.acc[i].addr, exec_cur.acc[i].len, 1, &who);
        }
        break;
    case SIM_OP_COPY: {
        const sim_copy_t *c = &op->u.copy;
        if (!c->staging)
            race_rows(tid, c->src, c->width, c->height, c->depth, c->spitch, c->sheight, 0, &who);
        race_rows(tid, c->dst, c->width, c->height, c->depth, c->dpitch, c->dheight, 1, &who);
        break;
    }
    case SIM_OP_MEMSET: {
        const sim_memset_t *m = &op->u.memset;
        race_rows(tid, m->dst, m->width * m->elem, m->height, 1, m->pitch, m->height, 1, &who);
        break;
    }
    case SIM_OP_FREE:
        sim_race_access(exec_race, tid, op->u.free.base, op->u.free.size, 1, &who);
        break;
    case SIM_OP_WRITE_VALUE:
        sim_race_data(tid, op->u.memop.addr, op->u.memop.size, 1, &who);
        break;
    case SIM_OP_WAIT_VALUE:
        /* Not an access: a wait polls a word that other work is meant to store concurrently
         * (the next round's write of a flag is unordered with this round's wait, by design).
         * What it synchronises with is acquired instead (memop_wait_order). */
        break;
    default:
        break;
    }
}

/*
 * Record op executed: later waits (even in the same batch) see its time and clock.  The event
 * holds the newest record run (one set aside may run after a later one), and a wait set aside
 * for this very record takes its own copy.
 */
static void event_recorded(const sim_op_t *op, double t, sim_vc_t *vc)
{
    struct CUevent_st *e = op->u.event;
    sim_vc_t *prev = NULL;
    pthread_mutex_lock(&sim_lock);
    if (op->opno > e->exec_opno) {
        prev = e->vc;
        e->t = t;
        e->vc = sim_vc_ref(vc);
        e->recorded = 1;
        e->exec_opno = op->opno;
    }
    pthread_mutex_unlock(&sim_lock);
    sim_vc_unref(prev);
    for (sim_op_t *w = aside_head; w; w = w->next)
        if (w->kind == SIM_OP_EVENT_WAIT && w->u.event == e && w->u.wait_opno == op->opno)
            aside_snap(w, t, vc);
}

/* An event wait: after its record (the copy taken while it was set aside, if any). */
static double event_wait_order(const sim_op_t *op, double t0)
{
    const struct CUevent_st *e = op->u.event;
    double t = e->t;
    const sim_vc_t *vc = e->vc;
    if (op->u.snap) {
        t = op->u.snap_t;
        vc = op->u.snap_vc;
    } else if (!op->u.wait_stream || !e->recorded) {
        return t0;
    }
    if (exec_race)
        sim_race_acquire(exec_race, op->stream->race_tid, vc);
    return dmax(t0, t);
}

/*
 * A satisfied stream memory wait: after what wrote the value it saw, as an event wait is after
 * its record.  A stream write (the v2 API's, always with its memory barrier) orders all its
 * stream's work before it; a value the host stored orders what the host had done by the time
 * the wait ran (the checker cannot tell which of the host's stores it was).  Under
 * exec_race_lock.
 */
static double memop_wait_order(const sim_op_t *op, double t0)
{
    const sim_memop_t *m = &op->u.memop;
    if (exec_race && m->src == SIM_MEMOP_SRC_WRITER)
        sim_race_acquire(exec_race, op->stream->race_tid, m->src_vc);
    else if (exec_race && m->src == SIM_MEMOP_SRC_HOST)
        sim_race_acquire(exec_race, op->stream->race_tid, exec_host_snap);
    return dmax(t0, m->src_t);
}

/*
 * Charge op to the virtual clock and the race checker.  Returns its end time, its start in
 * *t_start and, with the race checker on, the stream's clock after it (*vc, one reference).
 */
static double account(sim_op_t *op, int err, sim_vc_t **vc, double *t_start)
{
    CUstream s = op->stream;
    sim_device_t *d = &sim_devs[sim_op_ctx(op)->device];
    uint64_t bytes = 0;

    if (exec_race) {
        pthread_mutex_lock(&exec_race_lock);
        sim_race_tick(exec_race, s->race_tid);
        sim_race_acquire(exec_race, s->race_tid, op->host_vc);
    }
    double t0 = order_legacy(s, dmax(op->t_submit, s->t_end));
    if (op->kind == SIM_OP_EVENT_WAIT)
        t0 = event_wait_order(op, t0);
    else if (op->kind == SIM_OP_WAIT_VALUE && !err)
        t0 = memop_wait_order(op, t0);
    double start = t0, end = t0, dur = err ? 0 : duration(op, &bytes);
    int eng = engine_of(op);
    if ((eng == SIM_ENG_H2D || eng == SIM_ENG_D2H) && !err) {
        /* both directions of the device's host link, within its duplex figure (link.c);
         * later operations were submitted no earlier than this one (t_submit), but for
         * those set aside behind a stream memory wait, which start later anyway */
        start = dmax(t0, d->engine_free[eng]);
        end = sim_link_transfer(&d->pcie, eng == SIM_ENG_D2H, start, op->t_submit,
                                (double)bytes, op->u.copy.gbps, &start);
        d->engine_free[eng] = end;
        exec_stats.bytes[eng] += bytes;
    } else if (eng >= 0 && !err) {
        start = dmax(t0, d->engine_free[eng]);
        end = start + dur;
        d->engine_free[eng] = end;
        exec_stats.bytes[eng] += bytes;
    }
    if (exec_race) {
        if (!err)
            race_op(op, s->race_tid);
        *vc = sim_race_release(exec_race, s->race_tid);
        sim_race_acquire(exec_race, sink_tid, *vc);
        pthread_mutex_unlock(&exec_race_lock);
        sim_vc_unref(s->vc_exec);
        s->vc_exec = sim_vc_ref(*vc);
    }
    if (op->kind == SIM_OP_EVENT_RECORD)
        event_recorded(op, end, *vc);
    if (!err)
        aside_note_write(op, end, *vc);
    if (op->kind == SIM_OP_FREE)
        sim_free_device(op->u.free.base, SIM_RANGE_POOL);
    s->t_end = end;
    *t_start = start;
    return end;
}

/* After sim_wait_all: the host happens after every executed operation. */
void sim_exec_acquire_all(void)
{
    if (!exec_race)
        return;
    pthread_mutex_lock(&exec_race_lock);
    sim_vc_t *all = sim_race_release(exec_race, sink_tid);
    pthread_mutex_unlock(&exec_race_lock);
    sim_host_acquire(all);
    sim_vc_unref(all);
}

/* Take the next runnable op; NULL when the executor should sleep.  Under sim_lock. */
static sim_op_t *next_op(void)
{
    if (!q_head)
        return NULL;
    if (sim_cfg.lazy && q_head->opno > flush_target)
        return NULL;
    sim_op_t *op = q_head;
    q_head = op->next;
    if (!q_head) {
        q_tail = NULL;
        atomic_store_explicit(&q_nonempty, 0, memory_order_relaxed);
    }
    return op;
}

/* Publish that op is done (under sim_lock); returns the stream clock it replaced. */
static sim_vc_t *complete_locked(sim_op_t *op, double t_end, sim_vc_t *vc)
{
    CUstream s = op->stream;
    s->done_seq = op->seq;
    s->t_done = t_end;
    sim_vc_t *old = s->vc_done;
    s->vc_done = vc;
    if (t_end > exec_t_max)
        exec_t_max = t_end;
    if (op->kind == SIM_OP_EVENT_WAIT && op->u.wait_stream)
        sim_stream_unref_locked(op->u.wait_stream);
    if (op->kind == SIM_OP_EVENT_RECORD || op->kind == SIM_OP_EVENT_WAIT)
        sim_event_unref_locked(op->u.event);
    sim_stream_unref_locked(s);
    op_recycle_locked(op);
    return old;
}

/*
 * Before sleeping, watch the queue for a few microseconds with the lock released: a program
 * that launches in a loop then never pays for waking the executor.  Under sim_lock; returns
 * 1 when work arrived.
 */
static int spin_for_work(void)
{
    if (sim_cfg.lazy)
        return 0;
    pthread_mutex_unlock(&sim_lock);
    int found = 0;
    for (int i = 0; i < 4096 && !found; i++) {
        found = atomic_load_explicit(&q_nonempty, memory_order_acquire);
        if (!found && (i & 63) == 63)
            sched_yield();      /* lets a submitter sharing this CPU run */
        else if (!found)
            cpu_relax();
    }
    pthread_mutex_lock(&sim_lock);
    return q_head != NULL;
}

/* Operations run per batch: one lock round trip to take them and one to publish them. */
#define BATCH 32

typedef struct done_rec {
    sim_op_t *op;
    double t_end;
    sim_vc_t *vc;
} done_rec_t;

/*
 * Take up to BATCH ops: first what the ops set aside no longer wait for, then from the FIFO.
 * A host function always runs alone, after what preceded it is published, so it can never
 * wait for work that is done but not yet visible; a stream memory wait is looked at only at
 * the front of a batch, once all before it has run, and set aside (with what depends on it)
 * while its condition does not hold.  Under sim_lock (aside_wait_ready drops it for a while).
 */
static int take_batch(done_rec_t *b)
{
    sim_op_t *from_aside[BATCH];
    int n = 0, stopped = 0;
    if (aside_head && aside_dirty) {
        n = aside_take(from_aside, BATCH, &stopped);
        for (int i = 0; i < n; i++)
            b[i].op = from_aside[i];
        if (stopped)
            return n;
    }
    while (n < BATCH && q_head) {
        if ((q_head->kind == SIM_OP_HOSTFN || q_head->kind == SIM_OP_WAIT_VALUE) && n > 0)
            break;
        sim_op_t *op = next_op();
        if (!op)
            break;
        if (aside_head && aside_depends(op)) {
            aside_append(op);
            continue;
        }
        if (op->kind == SIM_OP_WAIT_VALUE && !aside_wait_ready(op)) {
            aside_append(op);
            continue;
        }
        b[n++].op = op;
        if (op->kind == SIM_OP_HOSTFN)
            break;
    }
    return n;
}

/* Every operation up to q_done has completed: all but those still set aside or queued. */
static void done_update_locked(void)
{
    uint64_t next = aside_head ? aside_head->opno : UINT64_MAX;
    if (q_head && q_head->opno < next)
        next = q_head->opno;
    q_done = next == UINT64_MAX ? q_submitted : next - 1;
}

static void run_batch(done_rec_t *b, int n)
{
    for (int i = 0; i < n; i++) {
        sim_op_t *op = b[i].op;
        exec_stats.ops[op->kind]++;
        int err = exec_run(op);
        double start;
        b[i].vc = NULL;
        b[i].t_end = account(op, err, &b[i].vc, &start);
        if (__builtin_expect(op->act != NULL, 0) && !err)
            exec_activity_complete(op, start, b[i].t_end);
        op_free_payload(op);
        sim_vc_unref(op->host_vc);
    }
}

static void *executor_main(void *unused)
{
    done_rec_t batch[BATCH];
    sim_vc_t *old[BATCH];

    exec_on_executor = 1;
    pthread_mutex_lock(&sim_lock);
    for (;;) {
        int n = take_batch(batch);
        if (!n && !aside_head && spin_for_work())
            continue;
        if (!n && aside_head) {
            /* Waits blocked: the host may store what they wait for; look again soon, without
             * spinning meanwhile (a submission wakes the executor at once). */
            stuck = !q_head || (sim_cfg.lazy && q_head->opno > flush_target);
            if (stuck && q_head && done_waiters) {
                /* Lazy: a host thread waits for work a wait holds back, and only work
                 * submitted after what it flushed (another thread's) can release it. */
                flush_target = q_submitted;
                stuck = 0;
                continue;
            }
            if (stuck && done_waiters)
                pthread_cond_broadcast(&cv_done);
            exec_sleeping = 1;
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += AWAIT_POLL_US * 1000L;
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&cv_work, &sim_lock, &until);
            exec_sleeping = 0;
            aside_dirty = 1;
            continue;
        }
        if (!n) {
            exec_sleeping = 1;
            pthread_cond_wait(&cv_work, &sim_lock);
            exec_sleeping = 0;
            continue;
        }
        stuck = 0;
        pthread_mutex_unlock(&sim_lock);
        run_batch(batch, n);
        pthread_mutex_lock(&sim_lock);
        for (int i = 0; i < n; i++)
            old[i] = complete_locked(batch[i].op, batch[i].t_end, batch[i].vc);
        done_update_locked();
        aside_dirty = aside_head != NULL;   /* what ran may have stored what a wait wants */
        if (done_waiters)
            pthread_cond_broadcast(&cv_done);
        pthread_mutex_unlock(&sim_lock);
        for (int i = 0; i < n; i++)
            sim_vc_unref(old[i]);
        pthread_mutex_lock(&sim_lock);
    }
    return NULL;
}

/* ---------------------------------------------------------------- waiting */

static void wait_done(void)
{
    done_waiters++;
    pthread_cond_wait(&cv_done, &sim_lock);
    done_waiters--;
}

/* Make the executor run at least up to op number `opno` (lazy mode). Under sim_lock. */
static void flush_locked(uint64_t opno)
{
    if (opno > flush_target) {
        flush_target = opno;
        stuck = 0;
    }
    if (exec_sleeping)
        pthread_cond_signal(&cv_work);
}

/* The operation number up to which the executor must run for stream s to complete its
 * operation seq (lazy mode): that operation's, while it is queued; once the executor took it,
 * nothing more, unless work is set aside behind a stream memory wait, which work submitted
 * later may release: then everything (as for a poll, which executor_main's release for
 * blocked waiters does not see).  Work submitted after it stays queued otherwise, so a host
 * that waits for one stream and reads what another stream's later work writes reads stale
 * data, as it may on a GPU.  Under sim_lock. */
static uint64_t flush_for(CUstream s, uint64_t seq)
{
    if (!sim_cfg.lazy)
        return q_submitted;
    for (const sim_op_t *op = q_head; op; op = op->next)
        if (op->stream == s && op->seq >= seq)
            return op->seq == seq ? op->opno : aside_head ? q_submitted : 0;
    return aside_head ? q_submitted : 0;
}

CUresult sim_wait_seq(CUstream s, uint64_t seq, int acquire)
{
    pthread_mutex_lock(&sim_lock);
    flush_locked(flush_for(s, seq));
    while (s->done_seq < seq)
        wait_done();
    double t = s->t_done;
    sim_vc_t *vc = acquire ? sim_vc_ref(s->vc_done) : NULL;
    pthread_mutex_unlock(&sim_lock);
    if (acquire)
        sim_host_advance(t, SIM_HOST_WAIT);
    sim_host_acquire(vc);
    sim_vc_unref(vc);
    return (CUresult)atomic_load(&s->ctx->sticky);
}

/* Wait for everything submitted so far; at exit (`at_exit`), only until the executor is stuck
 * on waits that nothing queued can satisfy. */
static void wait_all(int at_exit)
{
    pthread_mutex_lock(&sim_lock);
    uint64_t target = q_submitted;
    flush_locked(target);
    while (q_done < target && !(at_exit && stuck))
        wait_done();
    double t = exec_t_max;
    int blocked = q_done < target;
    pthread_mutex_unlock(&sim_lock);
    if (blocked)
        SIM_WARN("exit with work blocked behind stream memory waits whose condition never "
                 "held; it is dropped");
    sim_host_advance(t, SIM_HOST_WAIT);
    sim_exec_acquire_all();
}

void sim_wait_all(void)
{
    wait_all(0);
}

/* Poll: has stream s completed operation seq?  Nudges the executor in lazy mode. */
int sim_seq_done(CUstream s, uint64_t seq)
{
    pthread_mutex_lock(&sim_lock);
    int done = s->done_seq >= seq;
    if (!done)
        flush_locked(flush_for(s, seq));
    pthread_mutex_unlock(&sim_lock);
    return done;
}

/* ---------------------------------------------------------------- start and exit */

static void race_report(void *ctx, const char *detail)
{
    SIM_WARN("%s", detail);
}

static void at_exit(void)
{
    if (!sim_initialized)
        return;
    if (!exec_on_executor)
        wait_all(1);
    uint64_t races = exec_race ? sim_race_count(exec_race) : 0;
    if (sim_cfg.stats)
        sim_exec_stats();
    if (races && sim_cfg.racecheck == SIM_RACE_FAIL) {
        SIM_ERR("%llu race(s) found; exiting with status 66 (ELIXIR_SIM_RACECHECK=fail)",
                (unsigned long long)races);
        fflush(NULL);
        _exit(66);
    }
}

void sim_exec_start(void)
{
    if (sim_cfg.racecheck != SIM_RACE_OFF) {
        exec_race = sim_race_new(race_report, NULL);
        if (exec_race) {
            sim_race_set_namer(exec_race, sim_vmm_name_bytes);
            exec_host_tid = sim_race_thread(exec_race);
            sink_tid = sim_race_thread(exec_race);
            exec_host_snap = sim_race_release(exec_race, exec_host_tid);
        }
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_create(&exec_thread, &attr, executor_main, NULL);
    pthread_attr_destroy(&attr);
    atexit(at_exit);
}

void sim_exec_stats(void)
{
    static const char *const kinds[] = { "", "kernels", "copies", "memsets", "host functions",
                                         "event records", "event waits", "async frees",
                                         "value waits", "value writes", "nops" };
    static const char *const engines[] = { "compute", "h2d", "d2h", "peer" };

    fprintf(stderr, "elixir-sim stats: virtual time %.3f ms, host clock %.3f ms\n",
            exec_t_max / 1e6, exec_host_clock / 1e6);
    fprintf(stderr, "elixir-sim stats:   host clock moved by waits %.3f ms, charged calls %.3f "
            "ms, submissions %.3f ms, queries not yet complete %.3f ms (%llu), drive waits "
            "%.3f ms\n", exec_stats.host_ns[SIM_HOST_WAIT] / 1e6,
            exec_stats.host_ns[SIM_HOST_CALL] / 1e6, exec_stats.host_ns[SIM_HOST_SUBMIT] / 1e6, exec_stats.host_ns[SIM_HOST_POLL] / 1e6,
            (unsigned long long)exec_stats.polls_early, exec_stats.host_ns[SIM_HOST_IO] / 1e6);
    for (int k = 1; k <= SIM_OP_NOP; k++)
        if (exec_stats.ops[k])
            fprintf(stderr, "elixir-sim stats:   %-15s %llu\n", kinds[k],
                    (unsigned long long)exec_stats.ops[k]);
    fprintf(stderr, "elixir-sim stats:   kernel time %.3f ms (%llu launches held to the host "
            "link's rate by host memory: %.3f ms)\n", exec_stats.kernel_ns / 1e6,
            (unsigned long long)exec_stats.kernels_link, exec_stats.kernel_link_ns / 1e6);
    for (int e = 0; e < SIM_ENG_COUNT; e++)
        fprintf(stderr, "elixir-sim stats:   bytes %-9s %llu\n", engines[e],
                (unsigned long long)exec_stats.bytes[e]);
    sim_vmm_calls_t v;
    sim_vmm_calls(&v);
    fprintf(stderr, "elixir-sim stats:   VMM calls: create %llu, map %llu, set access %llu, "
            "unmap %llu, release %llu\n", (unsigned long long)v.create,
            (unsigned long long)v.map, (unsigned long long)v.set_access,
            (unsigned long long)v.unmap, (unsigned long long)v.release);
    sim_nvme_stats();
    fprintf(stderr, "elixir-sim stats:   faults %llu, races %llu\n",
            (unsigned long long)exec_stats.faults,
            (unsigned long long)(exec_race ? sim_race_count(exec_race) : 0));
}
