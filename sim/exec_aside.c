/* SPDX-License-Identifier: MIT */
/*
 * exec_aside.c - the executor's blocked waits: stream memory waits whose condition does not
 * hold yet, set aside with what depends on them, and the last device stores that may satisfy
 * them.
 */
#include <string.h>

#include "exec_int.h"

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
sim_op_t *aside_head;
static sim_op_t *aside_tail;
static uint64_t aside_gen = 1;
int aside_dirty;                        /* look at the list again before taking from the FIFO */

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
    for (size_t i = 0; i < exec_cur.nacc; i++)
        if (exec_cur.acc[i].mode & SIM_ACCESS_WRITE)
            note_store(exec_cur.acc[i].addr, exec_cur.acc[i].addr + exec_cur.acc[i].len, NULL,
                       t, vc);
    for (size_t off = 0; !exec_cur.nacc && off + 8 <= k->args_size; off += 8) {
        uint64_t v;
        sim_ptr_info_t info;
        memcpy(&v, k->args + off, 8);
        if (v >= 4096 && sim_ptr_info(v, &info) == 0 && info.mapped)
            note_store(info.base, info.base + info.size, NULL, t, vc);
    }
}

/* Note what executed op wrote (bounding ranges: more than it wrote orders more, never less). */
void aside_note_write(const sim_op_t *op, double t, sim_vc_t *vc)
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
int aside_depends(const sim_op_t *op)
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
void aside_snap(sim_op_t *w, double t, sim_vc_t *vc)
{
    if (w->u.snap)
        return;
    w->u.snap = 1;
    w->u.snap_t = t;
    w->u.snap_vc = sim_vc_ref(vc);
}

/* Set op aside at the end of the list (it is later than everything on it).  Under sim_lock. */
void aside_append(sim_op_t *op)
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
        aside_snap(op, e->t, e->vc);
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
int aside_wait_ready(sim_op_t *op)
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
        m->src_t = exec_host_clock;      /* the host stored it by now */
    return ready;
}

/*
 * Look at the list again: take, in order, what no longer depends on anything left on it into
 * b (a wait only first in a batch, a host function only alone).  Returns how many; *stopped
 * when the look ended early, so that the marks are incomplete and the FIFO must wait for the
 * next look.  Under sim_lock.
 */
int aside_take(sim_op_t **b, int max, int *stopped)
{
    int n = 0;
    sim_op_t **link = &aside_head, *prev = NULL;

    aside_gen++;
    aside_dirty = 0;
    *stopped = 0;
    while (*link) {
        sim_op_t *op = *link;
        int stay = aside_depends(op);
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
            stay = !aside_wait_ready(op);
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
