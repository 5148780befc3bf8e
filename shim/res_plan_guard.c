/* SPDX-License-Identifier: MIT */
/*
 * res_plan_guard.c - whether a device keeps its plan (ELIXIR_PLAN_GUARD).  A plan is what its
 * cost model predicts best, and a machine can differ from the model (mapping calls that cost
 * more in the middle of a job than alone, a host that issues less than the model assumes).
 * The guard measures instead: each iteration is timed on the host's clock (shim_ht_now, the
 * simulator's virtual clock under the simulator), from its first operation on the device to
 * the next iteration's first.  The reactive figure is the shortest iteration the reactive
 * engine served whole since profiling began (the profiled one, which profiling slows a
 * little, and any while its times are awaited); the planned figure the shorter of
 * GUARD_ITERS iterations that followed the plan, each after one that followed it too (so not
 * the first, which pays for planning and moves chunks from where the reactive engine left
 * them to where the plan starts them, nor one after an iteration that strayed, which puts
 * them back: res_plan.c's rule of straying).  Shortest against shorter: a stall in one
 * iteration (a checkpoint, a slow batch) does not make the plan look slow.  Where the planned
 * figure exceeds ELIXIR_PLAN_GUARD times the reactive one the plan is dropped, with a warning:
 * the reactive engine serves the device from then on (a new context profiles anew).  A
 * reactive iteration under GUARD_MIN_NS is too short to judge by: the plan is kept.  Each
 * plan is judged once; a re-plan is judged afresh.  Where the host runs ahead of the GPU the
 * planned figure is low (the reactive engine waits for each migration, so its figure is
 * not): the guard then keeps the plan.
 */
#include <stdio.h>

#include "res_plan_int.h"

#define GUARD_ITERS 2               /* iterations that followed the plan, the shorter taken */
#define GUARD_MIN_NS 1000000ull     /* a shorter reactive iteration keeps the plan */

/* The verdict given (p->verdict), in the trace. */
static void traced(const res_dev_t *d, const res_plan_t *p, long limit)
{
    if (!SHIM_TRACING())
        return;
    shim_trace_guard_t g = { .plan = p->plans, .iteration = (uint64_t)p->iter,
                             .planned_ns = p->planned_ns, .reactive_ns = p->react_ns,
                             .limit = (uint64_t)limit, .dropped = p->verdict == GUARD_DROPPED };
    shim_trace_guard(d->device, &g);
}

int res_plan_guard(const res_dev_t *d, res_plan_t *p, uint64_t took, int reactive, int followed)
{
    long limit = shim_opt_int(SHIM_OPT_PLAN_GUARD);     /* (thousandths; 0: never) */
    if (reactive) {
        if (took && (!p->react_ns || took < p->react_ns))
            p->react_ns = took;
        return 0;
    }
    int after_followed = p->last_followed;
    p->last_followed = followed;
    if (p->verdict != GUARD_PENDING || !took || !followed || !after_followed)
        return 0;
    if (!p->judged || took < p->planned_ns)
        p->planned_ns = took;
    if (++p->judged < GUARD_ITERS)
        return 0;
    if (!limit || p->react_ns < GUARD_MIN_NS ||
        (double)p->planned_ns * 1000 <= (double)p->react_ns * (double)limit) {
        p->verdict = GUARD_KEPT;
        traced(d, p, limit);
        return 0;
    }
    p->verdict = GUARD_DROPPED;
    traced(d, p, limit);
    SHIM_WARN(RES, "device %d: iterations that followed the plan took %.3f ms (the shorter of "
              "%d) against %.3f ms for one paged on demand (%.2fx, more than "
              "ELIXIR_PLAN_GUARD=%g); the plan is dropped, and the reactive engine serves the "
              "device from here", d->device, p->planned_ns / 1e6, GUARD_ITERS,
              p->react_ns / 1e6, (double)p->planned_ns / (double)p->react_ns, limit / 1000.0);
    return 1;
}

void res_plan_guard_new(res_plan_t *p)
{
    p->planned_ns = 0;
    p->judged = 0;
    p->last_followed = 0;               /* (the plan's first iteration is not judged) */
    p->verdict = GUARD_PENDING;
}

void res_plan_guard_text(const res_plan_t *p, char *buf, size_t len)
{
    static const char *const verdicts[] = { "not judged", "kept", "dropped" };
    if (p->verdict == GUARD_PENDING)
        snprintf(buf, len, "%s", verdicts[0]);
    else if (!p->react_ns)
        snprintf(buf, len, "%s (planned iteration %.3f ms, no reactive one timed)",
                 verdicts[p->verdict], p->planned_ns / 1e6);
    else
        snprintf(buf, len, "%s (planned iteration %.3f ms against %.3f ms reactive)",
                 verdicts[p->verdict], p->planned_ns / 1e6, p->react_ns / 1e6);
}
