/* SPDX-License-Identifier: MIT */
/*
 * res_plan_retime.c - times under the plan: the first iteration that follows a plan made from
 * a profile is timed again, and where the cost model's device times for it missed what its
 * operations took, the plan's prediction is made again with both timings.
 *
 * Why.  The profile times each operation where the reactive engine left its chunks; under the
 * plan an operation may reach more of them in host memory (a launch that runs in place, one
 * whose chunks behind its pointers the plan leaves where they are) and read and write them
 * over the link.  The cost model scales such a time by the chunks away (pol_op_time), each
 * chunk taken to cost alike, which a kernel that touches little of the chunks behind its
 * pointer and all of those its pointers name belies.  An iteration under the plan measures
 * instead of guessing.
 *
 * How.  The iteration that begins as the plan is made is timed as the profile was
 * (res_plan_time.c: two events around an operation, numbered as the plan's), but only its
 * launches that matched the plan and reach another count of chunks away from the GPU than the
 * profile found (res_plan_away, which notes each count in away2): the others' times would tell
 * nothing new, and an iteration whose launches all find their chunks where the profile did
 * records no event at all.  A launch of the fast path has every chunk on the GPU (0 away), so
 * the fast path stays on for those the profile timed with none away.  At the start of a later
 * iteration, once those events completed (as planning waits for the profile's: at most
 * PTIME_DEFER_MAX iterations), the operations timed with another count away than the profile's
 * are compared: the model's time for that count against the time measured.  Where the two
 * differ by more than 1/PLAN_RETIME_SHARE of the model's (the sum of each operation's
 * difference, against the sum of the model's times), each of those operations keeps both
 * timings (pol_op_t.dur2_ns, away2: the model draws the line through them) and the plan is
 * replayed on the cost model with them (res_plan_predict_again, with the profile's link
 * figures, the GPU room the plan was made for and the mapping costs measured so far): a new
 * prediction for the same plan, whose execution goes on undisturbed.  The plan itself stays: a
 * plan searched again with those times chose other moves that the model, off by 13% for them,
 * predicted 6% faster and that measured 7% slower (pooled train.py at 1/8, evictions unmapped);
 * a new plan would have to be measured against the one followed before it replaced it.  The log
 * says what was compared.  Once per profile.
 */
#include <math.h>
#include <stdlib.h>

#include "../policy/policy.h"
#include "res_int.h"
#include "res_plan_int.h"

void res_plan_retime_end(res_dev_t *d, res_plan_t *p)
{
    if (p->retime == RT_TIMING || p->retime == RT_READ)
        res_ptime_close(d);
    free(p->away2);
    p->away2 = NULL;
    p->retime = RT_NONE;
}

void res_plan_retime_begin(res_dev_t *d, res_plan_t *p, int64_t it)
{
    res_plan_retime_end(d, p);
    if (!(p->away2 = calloc(p->nops ? p->nops : 1, sizeof(*p->away2))))
        return;
    res_ptime_open(d);
    p->retime = RT_TIMING;
    p->retime_iter = it;
}

/* The operations timed again whose count away differs from the profile's: their times
 * measured (*meas) and modelled (*model), and the sum of each one's difference (*miss), ns;
 * with `keep`, each keeps both timings.  How many there are. */
static size_t compare(res_plan_t *p, const uint64_t *ns, const uint8_t *timed, int keep,
                      double *meas, double *model, double *miss)
{
    size_t n = 0;
    *meas = *model = *miss = 0;
    for (size_t i = 0; i < p->nops; i++) {
        pol_op_t *op = &p->ops[i];
        if (!timed[i] || !ns[i] || p->away2[i] == op->away)
            continue;
        double m = pol_op_time(op, p->away2[i]);
        *meas += (double)ns[i];
        *model += m;
        *miss += fabs((double)ns[i] - m);
        n++;
        if (keep) {
            op->dur2_ns = ns[i];
            op->away2 = p->away2[i];
        }
    }
    return n;
}

void res_plan_retime_read(res_dev_t *d, res_plan_t *p)
{
    p->retime = RT_READ;
    if (!res_ptime_ready(d))
        return;                         /* (at the next iteration's start again) */
    size_t nops = p->nops;
    uint64_t *ns = calloc(nops ? nops : 1, sizeof(*ns));
    uint8_t *timed = calloc(nops ? nops : 1, 1);
    double meas = 0, model = 0, miss = 0;
    size_t ntimed = 0, n = 0;
    if (ns && timed) {
        ntimed = res_ptime_times(d, ns, timed, nops);
        n = compare(p, ns, timed, 0, &meas, &model, &miss);
    } else {
        res_ptime_close(d);
    }
    int again = n && miss * PLAN_RETIME_SHARE > model;
    if (again)
        compare(p, ns, timed, 1, &meas, &model, &miss);
    SHIM_INFO(RES, "device %d: iteration %lld under the plan timed again: %zu of %zu operations "
              "timed, %zu of them with another count of chunks away from the GPU than "
              "profiled, %.3f ms of device time against the model's %.3f ms (%.3f ms apart); "
              "%s", d->device, (long long)p->retime_iter, ntimed, nops, n, meas / 1e6,
              model / 1e6, miss / 1e6,
              again ? "its prediction made again with both timings" : "the prediction stays");
    free(ns);
    free(timed);
    free(p->away2);
    p->away2 = NULL;
    p->retime = RT_DONE;                /* (its events closed: res_ptime_times) */
    if (again)
        res_plan_predict_again(d, p);
}
