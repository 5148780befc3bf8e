/* SPDX-License-Identifier: MIT */
/*
 * activity.c - the activity observer a profiling library may attach (simcuda.h): sim_submit
 * lets it tag kernels, copies and memsets on the submitting thread, and the executor reports
 * each tagged operation's virtual start and end once it has run, before anyone can see it
 * complete.
 */
#include <errno.h>
#include <string.h>

#include "exec_int.h"

/* ---------------------------------------------------------------- activity observer */

/* The observer attached by a profiling library; NULL unless one is. */
_Atomic(const sim_activity_ops_t *) exec_act_ops;

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
    if (atomic_compare_exchange_strong(&exec_act_ops, &none, ops) || none == ops)
        return 0;
    return -EBUSY;
}

SIM_API void sim_activity_detach(const sim_activity_ops_t *ops)
{
    const sim_activity_ops_t *mine = ops;
    atomic_compare_exchange_strong(&exec_act_ops, &mine, NULL);
}

/* The host clock without sim_lock: the value last published under it (exec_host_clock_publish),
 * which is the value sim_host_now would read now. */
SIM_API uint64_t sim_activity_clock(void)
{
    return atomic_load_explicit(&exec_host_clock_ns, memory_order_acquire);
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
void exec_activity_submit(const sim_activity_ops_t *a, sim_op_t *op)
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
void exec_activity_complete(const sim_op_t *op, double start, double end)
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
