/* SPDX-License-Identifier: MIT */
/*
 * res_plan_guard.c - whether a device keeps its plan (ELIXIR_PLAN_GUARD).  A plan is what its
 * cost model predicts best, and a machine can differ from the model (mapping calls that cost
 * more in the middle of a job than alone, a host that issues less than the model assumes).
 * The guard measures instead: each iteration is timed on the host's clock (shim_ht_now, the
 * simulator's virtual clock under the simulator), from its first operation on the device to
 * the next iteration's first.  The reactive figure is the shortest iteration the reactive
 * engine served whole since profiling began (the profiled one, which profiling slows a
 * little, and any waiting for its times); the planned figure the mean of GUARD_ITERS
 * iterations that followed the plan, after the first (which pays for planning and moves
 * chunks from where the reactive engine left them to where the plan starts them).  An
 * iteration that strayed from the plan (res_plan.c's rule) is not counted.  Where the
 * planned figure exceeds ELIXIR_PLAN_GUARD times the reactive one the plan is dropped, with a
 * warning: the reactive engine serves the device for the rest of the run (a new context
 * profiles anew).  Each plan is judged once; a re-plan is judged afresh.  Where the host runs
 * ahead of the GPU the planned figure is low (the reactive engine waits for each migration,
 * so its figure is not): the guard then keeps the plan.
 */
#include <stdio.h>

#include "res_plan_int.h"

#define GUARD_ITERS 2       /* iterations that followed the plan, averaged */

/* The verdict given (p->verdict), in the trace. */
static void traced(const res_dev_t *d, const res_plan_t *p, double planned, long limit)
{
    if (!SHIM_TRACING())
        return;
    shim_trace_guard_t g = { .plan = p->plans, .iteration = (uint64_t)p->iter,
                             .planned_ns = (uint64_t)planned, .reactive_ns = p->react_ns,
                             .limit = (uint64_t)limit, .dropped = p->verdict == GUARD_DROPPED };
    shim_trace_guard(d->device, &g);
}

int res_plan_guard(const res_dev_t *d, res_plan_t *p, uint64_t took, int reactive, int followed)
{
    long limit = shim_opt_int(SHIM_OPT_PLAN_GUARD);     /* (thousandths; 0: never) */
    if (!took)
        return 0;
    if (reactive) {
        if (!p->react_ns || took < p->react_ns)
            p->react_ns = took;
        return 0;
    }
    if (p->verdict != GUARD_PENDING || ++p->exec_iters < 2 || !followed)
        return 0;
    p->planned_ns += took;
    if (++p->judged < GUARD_ITERS)
        return 0;
    double planned = (double)p->planned_ns / p->judged;
    if (!limit || !p->react_ns || planned * 1000 <= (double)p->react_ns * limit) {
        p->verdict = GUARD_KEPT;
        traced(d, p, planned, limit);
        return 0;
    }
    p->verdict = GUARD_DROPPED;
    traced(d, p, planned, limit);
    SHIM_WARN(RES, "device %d: iterations that followed the plan took %.3f ms against %.3f ms "
              "for one paged on demand (%.2fx, more than ELIXIR_PLAN_GUARD=%.2f); the plan is "
              "dropped, and the reactive engine serves the rest of the run", d->device,
              planned / 1e6, p->react_ns / 1e6, planned / p->react_ns, limit / 1000.0);
    return 1;
}

void res_plan_guard_new(res_plan_t *p)
{
    p->planned_ns = 0;
    p->exec_iters = p->judged = 0;
    p->verdict = GUARD_PENDING;
}

void res_plan_guard_text(const res_plan_t *p, char *buf, size_t len)
{
    static const char *const verdicts[] = { "not judged", "kept", "dropped" };
    if (!p->judged || !p->react_ns)
        snprintf(buf, len, "%s", verdicts[p->verdict]);
    else
        snprintf(buf, len, "%s (planned iteration %.3f ms against %.3f ms reactive)",
                 verdicts[p->verdict], (double)p->planned_ns / p->judged / 1e6,
                 p->react_ns / 1e6);
}
