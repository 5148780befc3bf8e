/* SPDX-License-Identifier: MIT */
/*
 * trace_plan.c - the planned policy at work in the trace (format 1.5): the plans made
 * (PLAN), each iteration that followed one (FOLLOW), the guard's verdict on each (GUARD, 1.6),
 * the moves the plan issued (MIGRATION flagged planned, with the device times of its copy in a
 * TIMING record naming the move when events could time it: trace_time.c) and the host time of
 * the shim's mapping calls for moves (MAPPING).
 *
 * Residency calls these hooks under its device lock; none makes a CUDA call.  Mapping time
 * is summed per device in atomics (remaps and nanoseconds, the plan's and the reactive
 * engine's) and written as one MAPPING record per device that had any, at each iteration
 * mark and at exit: a record per remap would cost more than the remap's own figures are
 * worth.  Times are the trace's clock: on the simulator its virtual clock, which charges
 * the VMM calls as the driver takes them (sim/include/simcuda.h), on a GPU the host's.
 */
#include "trace_int.h"

#define MAP_DEVICES 64          /* devices whose mapping time is kept (more: not recorded) */

static struct {
    _Atomic uint64_t remaps[2], ns[2];          /* [planned] */
} map[MAP_DEVICES];

void *shim_trace_move_begin(CUcontext ctx, CUstream s, uint64_t *move)
{
    *move = shim_trace_new_id();
    void *h = *move ? shim_timing_move_before(*move, ctx, s) : NULL;
    if (!h)
        *move = 0;
    return h;
}

void shim_trace_move_end(void *handle, CUresult r, CUstream s)
{
    if (handle)
        shim_timing_move_after(handle, r, s);
}

void shim_trace_planned_move(int device, uint64_t chunk, uint64_t bytes, int from, int to,
                             uint64_t issued, uint64_t done, uint64_t move)
{
    if (!shim_trace_enter(device))
        return;
    trc_event_t ev = { .type = TRC_EV_MIGRATION, .time = shim_trace_now() };
    ev.u.migration = (trc_migration_t){ .chunk = chunk, .bytes = bytes, .from = (uint32_t)from,
                                        .to = (uint32_t)to, .device = device, .start = issued,
                                        .end = done >= issued ? done : issued,
                                        .flags = TRC_MIG_PLANNED, .move = move };
    shim_trace_emit(&ev);
    shim_trace_exit();
}

void shim_trace_mapping(int device, int planned, uint64_t ns)
{
    if (device < 0 || device >= MAP_DEVICES)
        return;
    planned = planned != 0;
    atomic_fetch_add_explicit(&map[device].remaps[planned], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&map[device].ns[planned], ns, memory_order_relaxed);
}

void shim_trace_mapping_flush(void)
{
    for (int dev = 0; dev < MAP_DEVICES; dev++) {
        if (!atomic_load_explicit(&map[dev].remaps[0], memory_order_relaxed) &&
            !atomic_load_explicit(&map[dev].remaps[1], memory_order_relaxed))
            continue;
        trc_event_t ev = { .type = TRC_EV_MAPPING, .time = shim_trace_now() };
        ev.u.mapping = (trc_mapping_t){
            .device = dev,
            .planned_remaps = atomic_exchange(&map[dev].remaps[1], 0),
            .planned_ns = atomic_exchange(&map[dev].ns[1], 0),
            .reactive_remaps = atomic_exchange(&map[dev].remaps[0], 0),
            .reactive_ns = atomic_exchange(&map[dev].ns[0], 0),
        };
        shim_trace_emit(&ev);
    }
}

void shim_trace_plan(int device, const shim_trace_plan_t *p)
{
    if (!shim_trace_enter(device))
        return;
    trc_event_t ev = { .type = TRC_EV_PLAN, .time = shim_trace_now() };
    ev.u.plan = (trc_plan_t){ .device = device, .plan = p->plan, .iteration = p->iteration,
                              .ops = p->ops, .buffers = p->buffers, .moves = p->moves,
                              .predicted_ns = p->predicted_ns, .bound_ns = p->bound_ns,
                              .compute_ns = p->compute_ns, .bytes_in = p->bytes_in,
                              .bytes_out = p->bytes_out, .planning_ns = p->planning_ns,
                              .again = p->again };
    shim_trace_emit(&ev);
    shim_trace_exit();
}

void shim_trace_follow(int device, const shim_trace_follow_t *f)
{
    if (!shim_trace_enter(device))
        return;
    trc_event_t ev = { .type = TRC_EV_FOLLOW, .time = shim_trace_now() };
    ev.u.follow = (trc_follow_t){ .device = device, .plan = f->plan, .iteration = f->iteration,
                                  .foreseen = f->foreseen, .unforeseen = f->unforeseen,
                                  .missed = f->missed, .moves = f->moves, .chunks = f->chunks,
                                  .left = f->left, .partial = f->partial != 0 };
    shim_trace_emit(&ev);
    shim_trace_exit();
}

void shim_trace_guard(int device, const shim_trace_guard_t *g)
{
    if (!shim_trace_enter(device))
        return;
    trc_event_t ev = { .type = TRC_EV_GUARD, .time = shim_trace_now() };
    ev.u.guard = (trc_guard_t){ .device = device, .plan = g->plan, .iteration = g->iteration,
                                .verdict = g->dropped ? TRC_GUARD_DROPPED : TRC_GUARD_KEPT,
                                .planned_ns = g->planned_ns, .reactive_ns = g->reactive_ns,
                                .limit = g->limit };
    shim_trace_emit(&ev);
    shim_trace_exit();
}
