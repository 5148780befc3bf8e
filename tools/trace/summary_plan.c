/* SPDX-License-Identifier: MIT */
/*
 * summary_plan.c - the plan section of `elixir-trace summary`: the planned policy at work
 * (format 1.5).  Per device: each plan made (its size, the host time planning took, its
 * predicted iteration against the iterations measured while it was followed, the guard's
 * verdict on it: 1.6), the operations it foresaw and those it did not; then the moves the
 * plan issued against the reactive engine's (count and bytes per direction, time busy and
 * hidden behind kernels) and the host time of the shim's mapping calls.  A trace without plan
 * records gets one line when its options say which policy ran, and nothing otherwise (an
 * older trace).
 */
#include "cli.h"

#include <inttypes.h>
#include <string.h>

/* Plans listed per device, and devices listed (each costs a pass over the records: a
 * damaged or hostile trace with many of either stays quick). */
#define MAX_PLANS   8
#define MAX_DEVICES 64

/* The value of option `name` in the trace's snapshot, or NULL. */
static const char *option(const tm_trace_t *t, const char *name)
{
    for (size_t i = 0; i < t->noptions; i++)
        if (strcmp(t->options[i].name, name) == 0)
            return t->options[i].value;
    return NULL;
}

/* The mean time of the iterations that followed plan `plan` of device `dev`, in a row: each
 * FOLLOW record is written as the next iteration begins, so two records of consecutive
 * iterations are one iteration apart; a record of the iteration in progress when the plan
 * went or the trace closed (partial, 1.9) ends no whole one.  0 when no two are; *n: how
 * many were measured. */
static uint64_t measured_ns(const tm_trace_t *t, int32_t dev, uint64_t plan, uint64_t *n)
{
    const tm_follow_t *prev = NULL;
    uint64_t sum = 0;
    *n = 0;
    for (size_t i = 0; i < t->nfollows; i++) {
        const tm_follow_t *f = &t->follows[i];
        if (f->f.device != dev || f->f.plan != plan)
            continue;
        if (prev && f->f.iteration == prev->f.iteration + 1 && f->time >= prev->time &&
            !f->f.partial) {
            sum += f->time - prev->time;
            (*n)++;
        }
        prev = f;
    }
    return *n ? sum / *n : 0;
}

/* The guard's verdict on plan x (GUARD, 1.6), when the trace has one. */
static void print_guard(const tm_trace_t *t, const trc_plan_t *x)
{
    char b[2][32];
    for (size_t i = 0; i < t->nguards; i++) {
        const trc_guard_t *g = &t->guards[i].g;
        if (g->device != x->device || g->plan != x->plan)
            continue;
        printf("    guard: %s as iteration %" PRIu64 " began: an iteration that followed it took "
               "%s", g->verdict == TRC_GUARD_DROPPED ? "dropped"
               : g->verdict == TRC_GUARD_KEPT ? "kept" : "unknown verdict", g->iteration,
               text_ns(g->planned_ns, b[0]));
        if (!g->reactive_ns)
            printf(", no reactive one timed");
        else
            printf(" against %s for one paged on demand (%.2fx", text_ns(g->reactive_ns, b[1]),
                   (double)g->planned_ns / (double)g->reactive_ns);
        if (g->reactive_ns && g->limit)
            printf(", limit %gx)", (double)g->limit / 1000.0);
        else if (g->reactive_ns)
            printf(", guard off)");
        printf("%s\n", g->verdict == TRC_GUARD_DROPPED ? "; the reactive engine served the rest"
                                                          : "");
        return;
    }
}

static void print_one_plan(const tm_trace_t *t, const tm_plan_t *p)
{
    char b[5][32];
    const trc_plan_t *x = &p->p;
    if (x->again)
        printf("  plan %" PRIu64 " at %s: plan %" PRIu64 " predicted again with the times of "
               "iteration %" PRIu64 " under it, %" PRIu64 " operations, %" PRIu64 " buffers, %"
               PRIu64 " moves; replayed in %s (host)\n", x->plan,
               text_ns(p->time - t->t_first, b[0]), x->again, x->iteration, x->ops, x->buffers,
               x->moves, text_ns(x->planning_ns, b[1]));
    else
        printf("  plan %" PRIu64 " at %s: profiled iteration %" PRIu64 ", %" PRIu64
               " operations, %" PRIu64 " buffers, %" PRIu64 " moves; planned in %s (host)\n",
               x->plan, text_ns(p->time - t->t_first, b[0]), x->iteration, x->ops, x->buffers,
               x->moves, text_ns(x->planning_ns, b[1]));
    printf("    predicted iteration %s (bound %s, compute %s), %s to the GPU and %s back\n",
           text_ns(x->predicted_ns, b[0]), text_ns(x->bound_ns, b[1]),
           text_ns(x->compute_ns, b[2]), text_bytes(x->bytes_in, b[3]),
           text_bytes(x->bytes_out, b[4]));
    uint64_t n, m = measured_ns(t, x->device, x->plan, &n);
    if (!n)
        printf("    measured: no two iterations in a row followed it\n");
    else if (x->predicted_ns)
        printf("    measured %s (mean of %" PRIu64 " followed in a row): %.2fx the prediction\n",
               text_ns(m, b[0]), n, (double)m / (double)x->predicted_ns);
    else
        printf("    measured %s (mean of %" PRIu64 " followed in a row)\n", text_ns(m, b[0]), n);
    print_guard(t, x);
}

/* Plans and FOLLOW totals of device dev. */
static void print_device(const tm_trace_t *t, int32_t dev)
{
    char b[32];
    uint64_t iters = 0, seen = 0, unseen = 0, missed = 0, moves = 0, chunks = 0, left = 0;
    size_t plans = 0, again = 0;
    for (size_t i = 0; i < t->nplans; i++) {
        plans += t->plans[i].p.device == dev;
        again += t->plans[i].p.device == dev && t->plans[i].p.again;
    }
    for (size_t i = 0; i < t->nfollows; i++) {
        const trc_follow_t *f = &t->follows[i].f;
        if (f->device != dev)
            continue;
        iters++;
        seen += f->foreseen;
        unseen += f->unforeseen;
        missed += f->missed;
        moves += f->moves;
        chunks += f->chunks;
        left += f->left;
    }
    printf("  device %s: %zu plan%s made", fmt_device(dev, b), plans, plans == 1 ? "" : "s");
    if (again)
        printf(" (%zu of them a plan predicted again)", again);
    printf(", %" PRIu64 " iteration%s followed %s\n", iters, iters == 1 ? "" : "s",
           plans == 1 ? "it" : "them");
    size_t shown = 0;
    for (size_t i = 0; i < t->nplans && shown < MAX_PLANS; i++)
        if (t->plans[i].p.device == dev) {
            print_one_plan(t, &t->plans[i]);
            shown++;
        }
    if (plans > shown)
        printf("  (and %zu more plans)\n", plans - shown);
    if (!iters)
        return;
    printf("  operations  foreseen %" PRIu64 ", not foreseen %" PRIu64 ", the plan's not come %"
           PRIu64 "\n", seen, unseen, missed);
    printf("  plan moves  %" PRIu64 " issued: %" PRIu64 " chunks moved, %" PRIu64
           " left to the reactive engine\n", moves, chunks, left);
}

/* Moves of one kind (the plan's or the reactive engine's): per direction, then the time. */
static void print_moves(const tm_trace_t *t, int which, const char *title)
{
    char b[3][32];
    tm_migration_totals_t m;
    uint64_t untimed, count = 0;
    if (tm_migration_totals_of(t, which, &m, &untimed) < 0)
        return;
    for (uint32_t f = 0; f < TRC_TIERS; f++)
        for (uint32_t to = 0; to < TRC_TIERS; to++)
            count += m.count[f][to];
    printf("  %-18s %8" PRIu64 "\n", title, count);
    for (uint32_t f = 0; f < TRC_TIERS; f++)
        for (uint32_t to = 0; to < TRC_TIERS; to++)
            if (m.count[f][to])
                printf("    %-4s -> %-4s  %8" PRIu64 "  %12s\n", tm_tier_name(f),
                       tm_tier_name(to), m.count[f][to], text_bytes(m.bytes[f][to], b[0]));
    if (!count)
        return;
    printf("    busy %s, hidden behind kernels %s", text_ns(m.busy_ns, b[0]),
           text_ns(m.hidden_ns, b[1]));
    if (m.busy_ns)
        printf(" (%.1f%%)", 100.0 * (double)m.hidden_ns / (double)m.busy_ns);
    printf("\n");
    if (which == TM_MIG_PLANNED)
        printf("    %" PRIu64 " timed on the device (their copies' events); the others from "
               "issue to completion seen\n", m.timed);
    if (untimed)
        printf("    %" PRIu64 " of them ran where no kernel has device times (outside the "
               "profiled iterations): not counted as hidden\n", untimed);
}

/* Host time in mapping calls, from the MAPPING records. */
static void print_mapping(const tm_trace_t *t)
{
    char b[2][32];
    uint64_t pr = 0, pns = 0, rr = 0, rns = 0;
    if (!t->nmappings)
        return;
    for (size_t i = 0; i < t->nmappings; i++) {
        pr += t->mappings[i].m.planned_remaps;
        pns += t->mappings[i].m.planned_ns;
        rr += t->mappings[i].m.reactive_remaps;
        rns += t->mappings[i].m.reactive_ns;
    }
    printf("  mapping calls (host time, the trace's clock)\n");
    printf("    by the plan   %8" PRIu64 " remaps  %11s", pr, text_ns(pns, b[0]));
    if (pr)
        printf("  (%s each)", text_ns(pns / pr, b[1]));
    printf("\n    reactive      %8" PRIu64 " remaps  %11s", rr, text_ns(rns, b[0]));
    if (rr)
        printf("  (%s each)", text_ns(rns / rr, b[1]));
    printf("\n");
}

void print_plan(const tm_trace_t *t)
{
    int32_t devs[MAX_DEVICES];
    size_t ndevs = 0;
    if (!t->nplans && !t->nfollows) {
        const char *policy = option(t, "ELIXIR_POLICY");
        char b[2][32];
        uint64_t rr = 0, rns = 0;
        if (!policy)
            return;
        for (size_t i = 0; i < t->nmappings; i++) {
            rr += t->mappings[i].m.reactive_remaps + t->mappings[i].m.planned_remaps;
            rns += t->mappings[i].m.reactive_ns + t->mappings[i].m.planned_ns;
        }
        if (strcmp(policy, "plan") == 0)
            printf("plan        none made (ELIXIR_POLICY=plan): the reactive engine served "
                   "the run");
        else
            printf("plan        none: the reactive engine (ELIXIR_POLICY=%s)", policy);
        if (rr)
            printf("; mapping calls %" PRIu64 " remaps, %s (%s each)", rr, text_ns(rns, b[0]),
                   text_ns(rns / rr, b[1]));
        printf("\n");
        return;
    }
    printf("plan\n");
    for (size_t i = 0; i < t->nplans + t->nfollows; i++) {
        int32_t d = i < t->nplans ? t->plans[i].p.device : t->follows[i - t->nplans].f.device;
        size_t k = 0;
        while (k < ndevs && devs[k] != d)
            k++;
        if (k == ndevs && ndevs < MAX_DEVICES)
            devs[ndevs++] = d;
    }
    for (size_t k = 0; k < ndevs; k++)
        print_device(t, devs[k]);
    printf("  moves\n");
    print_moves(t, TM_MIG_PLANNED, "by the plan");
    print_moves(t, TM_MIG_REACTIVE, "reactive");
    print_mapping(t);
}
