/* SPDX-License-Identifier: MIT */
/*
 * link.c - a link's two directions in the cost model, their rates together held to the
 * link's duplex figure.
 *
 * Each direction moves one copy at a time, in the order the replay gives them, at its own
 * bandwidth.  A copy cannot slow down one already placed (the replay has used its end), so the
 * later one takes what is left: wherever the other direction moves data at rate r, it moves at
 * min(its bandwidth, duplex - r).  That is how a PCIe link behaves when both directions are
 * busy (one keeps its full rate, the other drops to the remainder: the A100 figures in
 * docs/simulator.md), and it lets a copy that the replay places after a long queue of copies
 * the other way, but earlier in time, run beside them at the remainder rather than behind
 * them: the replay places copies in the host's issue order, not in time order.  It is the
 * rule of the simulator's links (sim/link.c), written again here because policy/ depends on
 * nothing else of the project (docs/ARCHITECTURE.md), and differs from it where a planner
 * must: out of memory it fails the replay (-ENOMEM) rather than forget a stretch.
 *
 * A direction remembers the stretches (start, end, rate) its copies occupy for as long as a
 * copy the other way may still start inside them: each copy forgets the other direction's
 * stretches that ended before it starts, since the copies after it that way start later, and
 * its own direction's that ended before the other direction's last copy ended or before the
 * caller's floor (no copy either way starts before it), so that a link used one way only
 * remembers little.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pol_int.h"

static double min2(double a, double b)
{
    return a < b ? a : b;
}

/* Forget the stretches of direction d that end at or before t (the array compacted once half
 * of it is forgotten, so that a long queue is not moved at every copy). */
static void forget(pol_lanes_t *k, int d, double t)
{
    while (k->head[d] < k->n[d] && k->seg[d][k->head[d]].e <= t)
        k->head[d]++;
    if (k->head[d] > 32 && 2 * k->head[d] > k->n[d]) {
        memmove(k->seg[d], k->seg[d] + k->head[d],
                (k->n[d] - k->head[d]) * sizeof(*k->seg[d]));
        k->n[d] -= k->head[d];
        k->head[d] = 0;
    }
}

/* Append [s, e) at `rate` to direction d, joined to the last stretch where they meet at the
 * same rate; out of memory, k->oom. */
static void add(pol_lanes_t *k, int d, double s, double e, double rate)
{
    if (!(e > s) || !(rate > 0))
        return;
    if (k->n[d] > k->head[d] && k->seg[d][k->n[d] - 1].e == s &&
        k->seg[d][k->n[d] - 1].rate == rate) {
        k->seg[d][k->n[d] - 1].e = e;
        return;
    }
    if (k->n[d] == k->cap[d]) {
        size_t cap = k->cap[d] ? 2 * k->cap[d] : 32;
        pol_seg_t *n = realloc(k->seg[d], cap * sizeof(*n));
        if (!n) {
            k->oom = 1;
            return;
        }
        k->seg[d] = n;
        k->cap[d] = cap;
    }
    k->seg[d][k->n[d]++] = (pol_seg_t){ s, e, rate };
}

/* Run what is left of a copy in direction d from *t at `rate` until `until`: 1 where it ends
 * by then (*t its end), else 0 (*t = until, *left less what ran). */
static int run(pol_lanes_t *k, int d, double *t, double *left, double rate, double until)
{
    double cap = rate * (until - *t);
    if (*left <= cap) {
        add(k, d, *t, *t + *left / rate, rate);
        *t += *left / rate;
        return 1;
    }
    add(k, d, *t, until, rate);
    *left -= cap;
    *t = until;
    return 0;
}

double pol_lanes_copy(pol_lanes_t *k, int dir, double t, double bytes, double gbps,
                      double duplex, double floor)
{
    int o = !dir;
    if (!(bytes > 0) || !(gbps > 0))
        return t;
    gbps = min2(gbps, duplex);
    forget(k, o, t);                    /* (this copy starts at t: the other's before it) */
    forget(k, dir, floor > k->last[o] ? floor : k->last[o]);    /* (and the other's later) */
    double left = bytes;
    for (size_t i = k->head[o]; i < k->n[o]; i++) {
        const pol_seg_t *g = &k->seg[o][i];
        if (g->s > t && run(k, dir, &t, &left, gbps, g->s))
            return k->last[dir] = t;    /* (the other direction idle until g->s) */
        double rate = min2(gbps, duplex - g->rate);
        if (rate > 0 && run(k, dir, &t, &left, rate, g->e))
            return k->last[dir] = t;
        t = g->e;
    }
    run(k, dir, &t, &left, gbps, INFINITY);
    return k->last[dir] = t;
}

void pol_lanes_free(pol_lanes_t *k)
{
    free(k->seg[0]);
    free(k->seg[1]);
    memset(k, 0, sizeof(*k));
}
