/* SPDX-License-Identifier: MIT */
/*
 * exec.c - the executor: one FIFO of operations for the whole process, run by one thread.
 *
 * Running operations in submission order is always legal: every dependency CUDA defines
 * (stream order, event waits, the legacy stream) points from an earlier submission to a later
 * one.  So the FIFO needs no dependency tracking to be correct, with one exception: a stream
 * memory wait may be satisfied by later work, so an unsatisfied one is set aside with what
 * depends on it ("blocked waits" below).  Otherwise dependencies matter only for the virtual
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

#include "sim.h"

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
static _Thread_local int on_executor;

static double host_clock;               /* ns, under sim_lock */
/* host_clock as sim_activity_clock reports it, stored under sim_lock after every change, so
 * that the activity clock (read once per recorded operation) is read without the lock. */
static _Atomic uint64_t host_clock_ns;
static double exec_t_max;               /* latest end of any executed op, under sim_lock */

static sim_race_t *race;
/* Lock order: race_lock, then sim_lock; never race_lock while holding sim_lock. */
static pthread_mutex_t race_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t host_tid;
static sim_vc_t *host_snap;

/* Statistics, executor-only until printed. */
static struct {
    uint64_t ops[SIM_OP_NOP + 1];
    uint64_t bytes[SIM_ENG_COUNT];
    uint64_t faults;
    double host_ns[SIM_HOST_WHY];   /* host clock moved, by what moved it (sim_lock) */
    uint64_t polls_early;           /* queries of work done, but after the host's now */
} stats;

/* The kernel running on the executor: cost and declared accesses. */
typedef struct access_rec {
    uint64_t addr, len;
    int mode;
} access_rec_t;

static struct {
    int active;
    CUcontext ctx;                  /* its context, whose device's access is checked */
    double flops, bytes;
    access_rec_t *acc;
    size_t nacc, cap;
} cur;

int sim_on_executor(void)
{
    return on_executor;
}

/* ---------------------------------------------------------------- host clock and race glue */

double sim_host_now(void)
{
    pthread_mutex_lock(&sim_lock);
    double t = host_clock;
    pthread_mutex_unlock(&sim_lock);
    return t;
}

/* Publishes host_clock to the activity clock (sim_lock held). */
static void host_clock_publish(void)
{
    atomic_store_explicit(&host_clock_ns, (uint64_t)host_clock, memory_order_release);
}

void sim_host_advance(double t, int why)
{
    pthread_mutex_lock(&sim_lock);
    if (t > host_clock) {
        stats.host_ns[why] += t - host_clock;
        host_clock = t;
    }
    host_clock_publish();
    pthread_mutex_unlock(&sim_lock);
}

int sim_host_reached(const double *t)
{
    pthread_mutex_lock(&sim_lock);
    int reached = *t <= host_clock;
    if (!reached) {
        host_clock += sim_cfg.model.api_us * 1000.0;
        stats.host_ns[SIM_HOST_POLL] += sim_cfg.model.api_us * 1000.0;
        stats.polls_early++;
        host_clock_publish();
    }
    pthread_mutex_unlock(&sim_lock);
    return reached;
}

void sim_host_charge(double us)
{
    pthread_mutex_lock(&sim_lock);
    host_clock += us * 1000.0;
    stats.host_ns[SIM_HOST_CALL] += us * 1000.0;
    host_clock_publish();
    pthread_mutex_unlock(&sim_lock);
}

void sim_alloc_cost(double us)
{
    if (sim_cfg.alloc_costs)
        sim_host_charge(us);
}

static void race_report(void *ctx, const char *detail)
{
    SIM_WARN("%s", detail);
}

uint32_t sim_race_new_thread(void)
{
    if (!race)
        return 0;
    pthread_mutex_lock(&race_lock);
    uint32_t tid = sim_race_thread(race);
    pthread_mutex_unlock(&race_lock);
    return tid;
}

void sim_host_acquire(const sim_vc_t *vc)
{
    if (!race || !vc)
        return;
    pthread_mutex_lock(&race_lock);
    sim_race_acquire(race, host_tid, vc);
    sim_vc_t *old = host_snap;
    host_snap = sim_race_release(race, host_tid);
    pthread_mutex_unlock(&race_lock);
    sim_vc_unref(old);
}

void sim_host_access(uint64_t addr, uint64_t len, int write, const char *what)
{
    static _Atomic uint64_t host_ops;
    if (!race)
        return;
    sim_race_who_t who = { what, atomic_fetch_add(&host_ops, 1) + 1, 0 };
    pthread_mutex_lock(&race_lock);
    sim_race_tick(race, host_tid);
    sim_race_access(race, host_tid, addr, len, write, &who);
    sim_vc_t *old = host_snap;
    host_snap = sim_race_release(race, host_tid);
    pthread_mutex_unlock(&race_lock);
    sim_vc_unref(old);
}

sim_vc_t *sim_host_vc(void)
{
    if (!race)
        return NULL;
    pthread_mutex_lock(&race_lock);
    sim_vc_t *vc = sim_vc_ref(host_snap);
    pthread_mutex_unlock(&race_lock);
    return vc;
}

void sim_race_forget_range(uint64_t base, uint64_t size)
{
    if (!race)
        return;
    pthread_mutex_lock(&race_lock);
    sim_race_forget(race, base, size);
    pthread_mutex_unlock(&race_lock);
}

/* ---------------------------------------------------------------- kernel-side helpers */

SIM_API void sim_kernel_cost(double flops, double bytes)
{
    if (!on_executor || !cur.active)
        return;
    cur.flops += flops > 0 ? flops : 0;
    cur.bytes += bytes > 0 ? bytes : 0;
}

/*
 * A kernel declares a range it is about to touch: for the race checker, and held to the
 * device's access as its pointer arguments are (kernel_precheck), since a pointer it loaded
 * from memory reaches no further on a GPU: a VMM mapping its device has no access to, or
 * another device's memory without peer access, is a fault at the first such byte.
 */
SIM_API void sim_kernel_access(const void *ptr, size_t bytes, int mode)
{
    if (!on_executor || !cur.active || bytes == 0)
        return;
    uint64_t first = (uint64_t)(uintptr_t)ptr, last = first + bytes - 1;
    if (sim_launch_denied(first, cur.ctx))
        sim_fault_raise(first);
    if (sim_launch_denied(last, cur.ctx))
        sim_fault_raise(last);
    if (cur.nacc == cur.cap) {
        size_t cap = cur.cap ? cur.cap * 2 : 16;
        access_rec_t *a = realloc(cur.acc, cap * sizeof(*a));
        if (!a)
            return;
        cur.acc = a;
        cur.cap = cap;
    }
    cur.acc[cur.nacc++] = (access_rec_t){ (uint64_t)(uintptr_t)ptr, bytes, mode };
}

/* ---------------------------------------------------------------- activity observer */

/* The observer attached by a profiling library; NULL unless one is. */
static _Atomic(const sim_activity_ops_t *) act_ops;

/* The API call this thread is in (sim_activity_call_begin), for one correlation id. */
static _Thread_local struct {
    int depth;
    uint32_t corr;
} act_call;

SIM_API int sim_activity_attach(const sim_activity_ops_t *ops)
{
    const sim_activity_ops_t *none = NULL;
    if (!ops || !ops->on_submit || !ops->on_complete)
        return -EINVAL;
    if (atomic_compare_exchange_strong(&act_ops, &none, ops) || none == ops)
        return 0;
    return -EBUSY;
}

SIM_API void sim_activity_detach(const sim_activity_ops_t *ops)
{
    const sim_activity_ops_t *mine = ops;
    atomic_compare_exchange_strong(&act_ops, &mine, NULL);
}

/* The host clock without sim_lock: the value last published under it (host_clock_publish),
 * which is the value sim_host_now would read now. */
SIM_API uint64_t sim_activity_clock(void)
{
    return atomic_load_explicit(&host_clock_ns, memory_order_acquire);
}

void sim_activity_call_begin(void)
{
    if (act_call.depth++ == 0)
        act_call.corr = 0;
}

void sim_activity_call_end(void)
{
    act_call.depth--;
}

static int activity_kind(int op_kind)
{
    switch (op_kind) {
    case SIM_OP_KERNEL: return SIM_ACTIVITY_KERNEL;
    case SIM_OP_COPY: return SIM_ACTIVITY_MEMCPY;
    case SIM_OP_MEMSET: return SIM_ACTIVITY_MEMSET;
    default: return 0;
    }
}

/* On the submitting thread: let the observer tag a kernel, copy or memset. */
static void activity_submit(const sim_activity_ops_t *a, sim_op_t *op)
{
    int kind = activity_kind(op->kind);
    if (!kind)
        return;
    uint32_t corr = act_call.depth ? act_call.corr : 0;
    if (a->on_submit(a->ctx, kind, &corr)) {
        op->act = a;
        op->act_corr = corr;
    }
    if (act_call.depth)
        act_call.corr = corr;
}

static int memory_kind(int where)
{
    return where == SIM_WHERE_DEVICE ? SIM_MEMORY_DEVICE
           : where == SIM_WHERE_PINNED ? SIM_MEMORY_PINNED : SIM_MEMORY_PAGEABLE;
}

static int copy_kind(const sim_copy_t *c)
{
    switch (c->engine) {
    case SIM_ENG_H2D: return SIM_COPY_HTOD;
    case SIM_ENG_D2H: return SIM_COPY_DTOH;
    case SIM_ENG_PEER: return SIM_COPY_PTOP;
    case SIM_ENG_COMPUTE: return SIM_COPY_DTOD;
    default: return SIM_COPY_HTOH;
    }
}

/* What the observer learns of a kernel, copy or memset beyond its times and stream. */
static void activity_detail(const sim_op_t *op, sim_activity_t *a)
{
    if (op->kind == SIM_OP_KERNEL) {
        const sim_launch_t *l = &op->u.kernel.launch;
        a->name = l->name;
        memcpy(a->grid, l->grid, sizeof(a->grid));
        memcpy(a->block, l->block, sizeof(a->block));
        a->shared_bytes = l->shared_bytes;
    } else if (op->kind == SIM_OP_COPY) {
        const sim_copy_t *c = &op->u.copy;
        a->async = c->async;
        a->bytes = (uint64_t)c->width * c->height * c->depth;
        a->copy_kind = copy_kind(c);
        a->src_memory = memory_kind(c->src_where);
        a->dst_memory = memory_kind(c->dst_where);
    } else {
        const sim_memset_t *m = &op->u.memset;
        a->async = m->async;
        a->bytes = (uint64_t)m->width * m->elem * m->height;
        a->dst_memory = memory_kind(m->where);
        a->value = m->value;
        a->elem_size = m->elem;
    }
}

/* On the executor: tell the observer that a tagged op ran from start to end (ns). */
static void activity_complete(const sim_op_t *op, double start, double end)
{
    CUstream s = op->stream;
    CUcontext ctx = sim_op_ctx(op);
    sim_activity_t a = { .kind = activity_kind(op->kind), .correlation = op->act_corr,
                         .start = (uint64_t)start, .end = (uint64_t)end,
                         .device = ctx->device, .context_id = ctx->id,
                         .stream_id = s->kind == SIM_STREAM_LEGACY ? 0 : s->id };
    activity_detail(op, &a);
    op->act->on_complete(op->act->ctx, &a);
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
    const sim_activity_ops_t *act = atomic_load_explicit(&act_ops, memory_order_acquire);
    if (__builtin_expect(act != NULL, 0))
        activity_submit(act, op);
    sim_vc_t *vc = sim_host_vc();
    pthread_mutex_lock(&sim_lock);
    op->stream = s;
    s->refs++;
    op->seq = ++s->enq_seq;
    if (seq)
        *seq = op->seq;
    op->opno = ++q_submitted;
    stuck = 0;
    op->t_submit = host_clock;
    op->host_vc = vc;
    host_clock += sim_cfg.model.api_us * 1000.0;
    stats.host_ns[SIM_HOST_SUBMIT] += sim_cfg.model.api_us * 1000.0;
    host_clock_publish();
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

/* ---------------------------------------------------------------- running one op */

typedef struct run_arg {
    sim_op_t *op;
} run_arg_t;

static void copy_body(const sim_copy_t *c)
{
    for (size_t z = 0; z < c->depth; z++)
        for (size_t y = 0; y < c->height; y++) {
            char *d = (char *)(uintptr_t)(c->dst + (z * c->dheight + y) * c->dpitch);
            const char *s = c->staging
                ? (const char *)c->staging + (z * c->height + y) * c->width
                : (const char *)(uintptr_t)(c->src + (z * c->sheight + y) * c->spitch);
            memmove(d, s, c->width);
        }
}

static void memset_body(const sim_memset_t *m)
{
    for (size_t y = 0; y < m->height; y++) {
        char *row = (char *)(uintptr_t)(m->dst + y * m->pitch);
        if (m->elem == 1) {
            memset(row, (int)(m->value & 0xff), m->width);
        } else if (m->elem == 2) {
            uint16_t v = (uint16_t)m->value;
            for (size_t i = 0; i < m->width; i++)
                memcpy(row + i * 2, &v, 2);
        } else {
            uint32_t v = m->value;
            for (size_t i = 0; i < m->width; i++)
                memcpy(row + i * 4, &v, 4);
        }
    }
}

static void run_body(void *arg)
{
    sim_op_t *op = ((run_arg_t *)arg)->op;
    switch (op->kind) {
    case SIM_OP_KERNEL:
        op->u.kernel.fn(&op->u.kernel.launch, op->u.kernel.params);
        break;
    case SIM_OP_COPY:
        copy_body(&op->u.copy);
        break;
    case SIM_OP_MEMSET:
        memset_body(&op->u.memset);
        break;
    case SIM_OP_WRITE_VALUE:
        /* One store of the whole word, as the device makes it: a waiter never sees half. */
        if (op->u.memop.size == 8)
            atomic_store_explicit((_Atomic uint64_t *)(uintptr_t)op->u.memop.addr,
                                  op->u.memop.value, memory_order_release);
        else
            atomic_store_explicit((_Atomic uint32_t *)(uintptr_t)op->u.memop.addr,
                                  (uint32_t)op->u.memop.value, memory_order_release);
        break;
    case SIM_OP_HOSTFN:
        if (op->u.host.fn)
            op->u.host.fn(op->u.host.data);
        else
            op->u.host.cb(op->u.host.handle, (CUresult)atomic_load(&op->stream->ctx->sticky),
                          op->u.host.data);
        break;
    default:
        break;
    }
}

static const char *op_name(const sim_op_t *op)
{
    switch (op->kind) {
    case SIM_OP_KERNEL: return op->u.kernel.launch.name;
    case SIM_OP_COPY: return "memcpy";
    case SIM_OP_MEMSET: return "memset";
    case SIM_OP_HOSTFN: return "host function";
    case SIM_OP_FREE: return "cuMemFreeAsync";
    case SIM_OP_WAIT_VALUE: return "cuStreamWaitValue";
    case SIM_OP_WRITE_VALUE: return "cuStreamWriteValue";
    default: return "operation";
    }
}

/* Check a kernel's pointer arguments against per-device access of VMM mappings and peer
 * access to other devices' memory. */
static int kernel_precheck(const sim_op_t *op, uint64_t *bad)
{
    const sim_kernel_op_t *k = &op->u.kernel;
    for (size_t off = 0; off + 8 <= k->args_size; off += 8) {
        uint64_t v;
        memcpy(&v, k->args + off, 8);
        if (v >= 4096 && sim_launch_denied(v, sim_op_ctx(op))) {
            *bad = v;
            return -EFAULT;
        }
    }
    return 0;
}

static void fault(sim_op_t *op, uint64_t addr)
{
    stats.faults++;
    SIM_ERR("illegal address 0x%llx in %s (op %llu, stream %llu, device %d): "
            "CUDA_ERROR_ILLEGAL_ADDRESS, context is now unusable",
            (unsigned long long)addr, op_name(op), (unsigned long long)op->opno,
            (unsigned long long)op->stream->id, sim_op_ctx(op)->device);
    sim_ctx_fault(sim_op_ctx(op), CUDA_ERROR_ILLEGAL_ADDRESS);
}

/* Execute the body of op under the fault guard; returns 0 or -EFAULT. */
static int execute(sim_op_t *op)
{
    uint64_t bad = 0;
    run_arg_t arg = { op };

    if (atomic_load(&sim_op_ctx(op)->sticky) &&
        !(op->kind == SIM_OP_HOSTFN && op->u.host.cb))
        return -EFAULT;
    if (op->poison) {
        fault(op, op->poison);
        return -EFAULT;
    }
    if (op->kind == SIM_OP_KERNEL) {
        if (kernel_precheck(op, &bad) < 0) {
            fault(op, bad);
            return -EFAULT;
        }
        cur.active = 1;
        cur.ctx = sim_op_ctx(op);
        cur.flops = cur.bytes = 0;
        cur.nacc = 0;
    } else if (op->kind == SIM_OP_WRITE_VALUE &&
               sim_launch_denied(op->u.memop.addr, sim_op_ctx(op))) {
        /* Held to the device's access as a kernel's pointer is. */
        fault(op, op->u.memop.addr);
        return -EFAULT;
    }
    int err = op->kind == SIM_OP_HOSTFN ? (run_body(&arg), 0) : sim_guarded(run_body, &arg, &bad);
    cur.active = 0;
    if (err)
        fault(op, bad);
    return err;
}

/* ---------------------------------------------------------------- blocked waits */

/*
 * A stream memory wait breaks the rule the FIFO rests on: its condition may be made true by
 * work submitted after it on another stream, or by the host.  So a wait is looked at only
 * when it could run (at the front of a batch, everything before it done or set aside); one
 * whose condition does not hold is set aside, and so is every later operation that depends on
 * an operation set aside: the same stream, the legacy stream's ordering either way, and an
 * event wait whose record was set aside (dependencies that graph launches and host functions
 * express through these too).  Everything else runs.  The operations set aside keep their
 * order on one list; the list is looked at again whenever memory may have changed (after
 * operations ran, and every AWAIT_POLL_US for the host's own stores) and what no longer
 * depends on anything set aside runs, in order.  Every dependency still points from an earlier
 * submission to a later one, so looking only at what was set aside before an operation is
 * enough.  Host synchronisation needs nothing new: it waits for its stream's position, which
 * an operation set aside does not reach.
 *
 * Which operations depend on the list is kept as marks on streams and contexts
 * (CUstream_st.aside_gen, CUctx_st.aside_blocking_gen) valid in the current generation: each
 * new look at the list starts a generation and marks what stays on it; an operation set
 * aside afterwards marks too.  All of it belongs to the executor thread.
 */
#define AWAIT_POLL_US 200

static sim_op_t *aside_head, *aside_tail;
static uint64_t aside_gen = 1;
static int aside_dirty;                 /* look at the list again before taking from the FIFO */

/*
 * The last device stores, so that a wait satisfied by one of them acquires its ordering and
 * starts after it ends.  Any operation that writes may release a wait (a memset, a copy, a
 * kernel, a stream write), and it may have run before the wait was even submitted, so every
 * store is noted: its written extent (a bounding range), and for a stream write the value.
 * A ring, newest last; a store older than the ring is taken for the host's.
 */
#define WRITERS 256
static struct writer {
    uint64_t lo, hi;                    /* [lo, hi) written */
    uint64_t value;                     /* a stream write's value (size != 0) */
    unsigned size;
    double t;
    sim_vc_t *vc;
} writers[WRITERS];
static unsigned writers_next;

static void note_store(uint64_t lo, uint64_t hi, const sim_memop_t *m, double t, sim_vc_t *vc)
{
    struct writer *w = &writers[writers_next++ % WRITERS];
    sim_vc_unref(w->vc);
    *w = (struct writer){ lo, hi, m ? m->value : 0, m ? m->size : 0, t, sim_vc_ref(vc) };
}

/* A kernel's declared writes or, without declarations, each allocation a pointer argument
 * leads into, as the race checker takes them. */
static void note_kernel_writes(const sim_op_t *op, double t, sim_vc_t *vc)
{
    const sim_kernel_op_t *k = &op->u.kernel;
    for (size_t i = 0; i < cur.nacc; i++)
        if (cur.acc[i].mode & SIM_ACCESS_WRITE)
            note_store(cur.acc[i].addr, cur.acc[i].addr + cur.acc[i].len, NULL, t, vc);
    for (size_t off = 0; !cur.nacc && off + 8 <= k->args_size; off += 8) {
        uint64_t v;
        sim_ptr_info_t info;
        memcpy(&v, k->args + off, 8);
        if (v >= 4096 && sim_ptr_info(v, &info) == 0 && info.mapped)
            note_store(info.base, info.base + info.size, NULL, t, vc);
    }
}

/* Note what executed op wrote (bounding ranges: more than it wrote orders more, never less). */
static void note_write(const sim_op_t *op, double t, sim_vc_t *vc)
{
    switch (op->kind) {
    case SIM_OP_WRITE_VALUE:
        note_store(op->u.memop.addr, op->u.memop.addr + op->u.memop.size, &op->u.memop, t, vc);
        break;
    case SIM_OP_MEMSET: {
        const sim_memset_t *m = &op->u.memset;
        if (m->width && m->height)
            note_store(m->dst, m->dst + (m->height - 1) * m->pitch + m->width * m->elem, NULL,
                       t, vc);
        break;
    }
    case SIM_OP_COPY: {
        const sim_copy_t *c = &op->u.copy;
        if (c->width && c->height && c->depth)
            note_store(c->dst, c->dst + ((c->depth - 1) * c->dheight + c->height - 1) *
                       c->dpitch + c->width, NULL, t, vc);
        break;
    }
    case SIM_OP_KERNEL:
        note_kernel_writes(op, t, vc);
        break;
    default:
        break;
    }
}

static void mark_aside(const sim_op_t *op)
{
    CUstream s = op->stream;
    if (s->aside_gen != aside_gen) {
        s->aside_gen = aside_gen;
        s->aside_seq = op->seq;
    }
    if (sim_stream_blocking(s))
        s->ctx->aside_blocking_gen = aside_gen;
}

/* Must op wait for an operation set aside (as marked in this generation)? */
static int depends_aside(const sim_op_t *op)
{
    CUstream s = op->stream;
    if (s->aside_gen == aside_gen)
        return 1;
    if (s->kind == SIM_STREAM_LEGACY && s->ctx->aside_blocking_gen == aside_gen)
        return 1;
    if (sim_stream_blocking(s) && s->ctx->legacy->aside_gen == aside_gen)
        return 1;
    if (op->kind == SIM_OP_EVENT_WAIT && op->u.wait_stream) {
        CUstream w = op->u.wait_stream;
        return w->aside_gen == aside_gen && w->aside_seq <= op->u.wait_seq;
    }
    return 0;
}

/* A wait set aside while the record it waits for has run keeps that record's time and
 * clock: a later record may replace the event's before the wait runs. */
static void snap(sim_op_t *w, double t, sim_vc_t *vc)
{
    if (w->u.snap)
        return;
    w->u.snap = 1;
    w->u.snap_t = t;
    w->u.snap_vc = sim_vc_ref(vc);
}

/* Set op aside at the end of the list (it is later than everything on it).  Under sim_lock. */
static void aside_append(sim_op_t *op)
{
    op->next = NULL;
    if (aside_tail)
        aside_tail->next = op;
    else
        aside_head = op;
    aside_tail = op;
    mark_aside(op);
    struct CUevent_st *e = op->u.event;
    if (op->kind == SIM_OP_EVENT_WAIT && op->u.wait_stream && e->exec_opno == op->u.wait_opno)
        snap(op, e->t, e->vc);
}

typedef struct flag_read {
    const sim_memop_t *m;
    uint64_t value;
} flag_read_t;

static void read_flag(void *arg)
{
    flag_read_t *r = arg;
    if (r->m->size == 8)
        r->value = atomic_load_explicit((_Atomic uint64_t *)(uintptr_t)r->m->addr,
                                        memory_order_acquire);
    else
        r->value = atomic_load_explicit((_Atomic uint32_t *)(uintptr_t)r->m->addr,
                                        memory_order_acquire);
}

/* The conditions of CUstreamWaitValue_flags, on words of the wait's size. */
static int wait_holds(const sim_memop_t *m, uint64_t v)
{
    uint64_t x = m->value, mask = m->size == 8 ? UINT64_MAX : UINT32_MAX;
    switch (m->cond) {
    case CU_STREAM_WAIT_VALUE_GEQ:
        return m->size == 8 ? (int64_t)(v - x) >= 0 : (int32_t)(uint32_t)(v - x) >= 0;
    case CU_STREAM_WAIT_VALUE_EQ: return v == x;
    case CU_STREAM_WAIT_VALUE_AND: return (v & x) != 0;
    default: return (~(v | x) & mask) != 0;
    }
}

/* The newest store noted that overlaps the word of wait m, or NULL. */
static const struct writer *last_store(const sim_memop_t *m)
{
    for (unsigned i = 1; i <= WRITERS; i++) {
        const struct writer *w = &writers[(writers_next - i) % WRITERS];
        if (w->hi > m->addr && w->lo < m->addr + m->size)
            return w;
    }
    return NULL;
}

/*
 * May wait op run now?  Reads its word with sim_lock released (the read may fault, and the
 * access check takes the registry's lock).  Yes when its condition holds, noting what wrote
 * the value seen, and when it cannot be read or its context is lost: it then runs as the
 * fault it is.  Under sim_lock, which it drops and takes again.
 */
static int wait_ready(sim_op_t *op)
{
    sim_memop_t *m = &op->u.memop;
    flag_read_t r = { m, 0 };
    uint64_t bad = 0;
    int ready = 1;

    pthread_mutex_unlock(&sim_lock);
    if (atomic_load(&sim_op_ctx(op)->sticky))
        ;
    else if (sim_launch_denied(m->addr, sim_op_ctx(op)))
        op->poison = m->addr;
    else if (sim_guarded(read_flag, &r, &bad) < 0)
        op->poison = bad ? bad : m->addr;
    else
        ready = wait_holds(m, r.value);
    if (ready && !op->poison) {
        m->src = SIM_MEMOP_SRC_HOST;
        const struct writer *w = last_store(m);
        /* A stream write of another value than the one seen: the host stored after it. */
        if (w && !(w->size == m->size && w->lo == m->addr && w->value != r.value)) {
            m->src = SIM_MEMOP_SRC_WRITER;
            m->src_t = w->t;
            m->src_vc = sim_vc_ref(w->vc);
        }
    }
    pthread_mutex_lock(&sim_lock);
    if (m->src == SIM_MEMOP_SRC_HOST)
        m->src_t = host_clock;      /* the host stored it by now */
    return ready;
}

/*
 * Look at the list again: take, in order, what no longer depends on anything left on it into
 * b (a wait only first in a batch, a host function only alone).  Returns how many; *stopped
 * when the look ended early, so that the marks are incomplete and the FIFO must wait for the
 * next look.  Under sim_lock.
 */
static int aside_take(sim_op_t **b, int max, int *stopped)
{
    int n = 0;
    sim_op_t **link = &aside_head, *prev = NULL;

    aside_gen++;
    aside_dirty = 0;
    *stopped = 0;
    while (*link) {
        sim_op_t *op = *link;
        int stay = depends_aside(op);
        if (!stay && n > 0 && (op->kind == SIM_OP_HOSTFN || op->kind == SIM_OP_WAIT_VALUE ||
                               n == max)) {
            *stopped = 1;
            aside_dirty = 1;
            break;
        }
        if (!stay && op->kind == SIM_OP_EVENT_WAIT && !op->u.snap &&
            op->u.event->taken_gen == aside_gen && op->u.event->taken_opno == op->u.wait_opno)
            stay = 1;   /* its record runs in this batch: take it once that copied its clock */
        if (!stay && op->kind == SIM_OP_WAIT_VALUE)
            stay = !wait_ready(op);
        if (stay) {
            mark_aside(op);
            prev = op;
            link = &op->next;
            continue;
        }
        *link = op->next;
        if (aside_tail == op)
            aside_tail = prev;
        b[n++] = op;
        if (op->kind == SIM_OP_EVENT_RECORD) {
            op->u.event->taken_gen = aside_gen;
            op->u.event->taken_opno = op->opno;
        }
        if (op->kind == SIM_OP_HOSTFN) {
            *stopped = 1;
            aside_dirty = 1;
            break;
        }
    }
    return n;
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
                if (race)
                    sim_race_acquire(race, s->race_tid, x->vc_exec);
            }
        pthread_mutex_unlock(&sim_lock);
    } else if (sim_stream_blocking(s)) {
        t0 = dmax(t0, ctx->legacy->t_end);
        if (race)
            sim_race_acquire(race, s->race_tid, ctx->legacy->vc_exec);
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
    for (size_t i = 0; i < cur.nacc; i++) {
        double b = (double)sim_host_bytes(cur.acc[i].addr, cur.acc[i].len);
        rd += cur.acc[i].mode & SIM_ACCESS_READ ? b : 0;
        wr += cur.acc[i].mode & SIM_ACCESS_WRITE ? b : 0;
    }
    return dmax(rd / m->h2d_gbps, wr / m->d2h_gbps);
}

/* Modelled duration of op in ns, and the bytes it moved. */
static double duration(const sim_op_t *op, uint64_t *bytes)
{
    const sim_model_t *m = &sim_cfg.model;
    *bytes = 0;
    if (op->kind == SIM_OP_KERNEL) {
        double compute = cur.flops / (m->tflops * 1e3);
        double memory = cur.bytes / m->hbm_gbps;
        return m->launch_us * 1000.0 + dmax(dmax(compute, memory), host_link_ns(m));
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

/* Report the accesses of a strided region: per row when few rows, else its whole span. */
static void race_rows(uint32_t tid, uint64_t base, size_t width, size_t height, size_t depth,
                      size_t pitch, size_t rows_per_slice, int write, const sim_race_who_t *who)
{
    if (width == 0 || height == 0 || depth == 0)
        return;
    if (height * depth > 16 || pitch == width) {
        uint64_t last = base + ((depth - 1) * rows_per_slice + (height - 1)) * pitch + width;
        sim_race_access(race, tid, base, last - base, write, who);
        return;
    }
    for (size_t z = 0; z < depth; z++)
        for (size_t y = 0; y < height; y++)
            sim_race_access(race, tid, base + (z * rows_per_slice + y) * pitch, width, write,
                            who);
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
            sim_race_access(race, tid, info.base, info.size, 1, who);
    }
}

static void race_op(const sim_op_t *op, uint32_t tid)
{
    sim_race_who_t who = { op_name(op), op->opno, (uint32_t)op->stream->id };
    switch (op->kind) {
    case SIM_OP_KERNEL:
        if (!cur.nacc)
            race_kernel_args(op, tid, &who);
        for (size_t i = 0; i < cur.nacc; i++) {
            if (cur.acc[i].mode & SIM_ACCESS_READ)
                sim_race_access(race, tid, cur.acc[i].addr, cur.acc[i].len, 0, &who);
            if (cur.acc[i].mode & SIM_ACCESS_WRITE)
                sim_race_access(race, tid, cur.acc[i].addr, cur.acc[i].len, 1, &who);
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
        sim_race_access(race, tid, op->u.free.base, op->u.free.size, 1, &who);
        break;
    case SIM_OP_WRITE_VALUE:
        sim_race_access(race, tid, op->u.memop.addr, op->u.memop.size, 1, &who);
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
            snap(w, t, vc);
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
    if (race)
        sim_race_acquire(race, op->stream->race_tid, vc);
    return dmax(t0, t);
}

/*
 * A satisfied stream memory wait: after what wrote the value it saw, as an event wait is after
 * its record.  A stream write (the v2 API's, always with its memory barrier) orders all its
 * stream's work before it; a value the host stored orders what the host had done by the time
 * the wait ran (the checker cannot tell which of the host's stores it was).  Under race_lock.
 */
static double memop_wait_order(const sim_op_t *op, double t0)
{
    const sim_memop_t *m = &op->u.memop;
    if (race && m->src == SIM_MEMOP_SRC_WRITER)
        sim_race_acquire(race, op->stream->race_tid, m->src_vc);
    else if (race && m->src == SIM_MEMOP_SRC_HOST)
        sim_race_acquire(race, op->stream->race_tid, host_snap);
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

    if (race) {
        pthread_mutex_lock(&race_lock);
        sim_race_tick(race, s->race_tid);
        sim_race_acquire(race, s->race_tid, op->host_vc);
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
        stats.bytes[eng] += bytes;
    } else if (eng >= 0 && !err) {
        start = dmax(t0, d->engine_free[eng]);
        end = start + dur;
        d->engine_free[eng] = end;
        stats.bytes[eng] += bytes;
    }
    if (race) {
        if (!err)
            race_op(op, s->race_tid);
        *vc = sim_race_release(race, s->race_tid);
        sim_race_acquire(race, sink_tid, *vc);
        pthread_mutex_unlock(&race_lock);
        sim_vc_unref(s->vc_exec);
        s->vc_exec = sim_vc_ref(*vc);
    }
    if (op->kind == SIM_OP_EVENT_RECORD)
        event_recorded(op, end, *vc);
    if (!err)
        note_write(op, end, *vc);
    if (op->kind == SIM_OP_FREE)
        sim_free_device(op->u.free.base, SIM_RANGE_POOL);
    s->t_end = end;
    *t_start = start;
    return end;
}

/* After sim_wait_all: the host happens after every executed operation. */
void sim_exec_acquire_all(void)
{
    if (!race)
        return;
    pthread_mutex_lock(&race_lock);
    sim_vc_t *all = sim_race_release(race, sink_tid);
    pthread_mutex_unlock(&race_lock);
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
 * while its condition does not hold.  Under sim_lock (wait_ready drops it for a while).
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
        if (aside_head && depends_aside(op)) {
            aside_append(op);
            continue;
        }
        if (op->kind == SIM_OP_WAIT_VALUE && !wait_ready(op)) {
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
        stats.ops[op->kind]++;
        int err = execute(op);
        double start;
        b[i].vc = NULL;
        b[i].t_end = account(op, err, &b[i].vc, &start);
        if (__builtin_expect(op->act != NULL, 0) && !err)
            activity_complete(op, start, b[i].t_end);
        op_free_payload(op);
        sim_vc_unref(op->host_vc);
    }
}

static void *executor_main(void *unused)
{
    done_rec_t batch[BATCH];
    sim_vc_t *old[BATCH];

    on_executor = 1;
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

CUresult sim_wait_seq(CUstream s, uint64_t seq, int acquire)
{
    pthread_mutex_lock(&sim_lock);
    flush_locked(q_submitted);
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
        flush_locked(q_submitted);
    pthread_mutex_unlock(&sim_lock);
    return done;
}

/* ---------------------------------------------------------------- start and exit */

static void at_exit(void)
{
    if (!sim_initialized)
        return;
    if (!on_executor)
        wait_all(1);
    uint64_t races = race ? sim_race_count(race) : 0;
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
        race = sim_race_new(race_report, NULL);
        if (race) {
            host_tid = sim_race_thread(race);
            sink_tid = sim_race_thread(race);
            host_snap = sim_race_release(race, host_tid);
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
            exec_t_max / 1e6, host_clock / 1e6);
    fprintf(stderr, "elixir-sim stats:   host clock moved by waits %.3f ms, charged calls %.3f "
            "ms, submissions %.3f ms, queries not yet complete %.3f ms (%llu), drive waits "
            "%.3f ms\n", stats.host_ns[SIM_HOST_WAIT] / 1e6, stats.host_ns[SIM_HOST_CALL] / 1e6,
            stats.host_ns[SIM_HOST_SUBMIT] / 1e6, stats.host_ns[SIM_HOST_POLL] / 1e6,
            (unsigned long long)stats.polls_early, stats.host_ns[SIM_HOST_IO] / 1e6);
    for (int k = 1; k <= SIM_OP_NOP; k++)
        if (stats.ops[k])
            fprintf(stderr, "elixir-sim stats:   %-15s %llu\n", kinds[k],
                    (unsigned long long)stats.ops[k]);
    for (int e = 0; e < SIM_ENG_COUNT; e++)
        fprintf(stderr, "elixir-sim stats:   bytes %-9s %llu\n", engines[e],
                (unsigned long long)stats.bytes[e]);
    sim_nvme_stats();
    fprintf(stderr, "elixir-sim stats:   faults %llu, races %llu\n",
            (unsigned long long)stats.faults,
            (unsigned long long)(race ? sim_race_count(race) : 0));
}
