/* SPDX-License-Identifier: MIT */
/*
 * link.c - a link with two directions whose sum is capped: the PCIe link between the host and
 * each device, and the NVMe drive's link (nvme.c).
 *
 * Each direction (a lane) serves one transfer at a time, in the order they are given, each at
 * its own bandwidth; while both lanes are busy their rates together are held to the link's
 * duplex figure.  A transfer cannot slow down one already scheduled (its end is already
 * known to events, streams and the host), so the later one takes what is left: in every
 * stretch of time where the other lane moves data at rate r, it moves at
 * min(its bandwidth, duplex - r).  This is deterministic in virtual time, and it is what the
 * A100 measurements it rests on show (options.c): one direction keeps its full rate while the
 * other drops to the remainder.
 *
 * A lane remembers the stretches its transfers occupy (start, end, rate) for as long as a
 * transfer of the other lane may still start inside them.  Callers serialise access (the
 * executor for the PCIe links, the NVMe lock for the drive).
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

static double dmin(double a, double b)
{
    return a < b ? a : b;
}

/* Drop the stretches of lane l that end at or before t: no transfer can start before t. */
static void lane_prune(sim_lane_t *l, double t)
{
    size_t i = 0;
    while (i < l->n && l->seg[i].e <= t)
        i++;
    if (i) {
        memmove(l->seg, l->seg + i, (l->n - i) * sizeof(*l->seg));
        l->n -= i;
    }
}

/* Append the stretch [s, e) at `rate` to lane l, joining it to the last one when they meet
 * at the same rate.  Out of memory, the stretch is forgotten (the other lane then sees this
 * one idle there: faster, never wrong in order). */
static void lane_push(sim_lane_t *l, double s, double e, double rate)
{
    if (e <= s || rate <= 0)
        return;
    if (l->n && l->seg[l->n - 1].e == s && l->seg[l->n - 1].rate == rate) {
        l->seg[l->n - 1].e = e;
        return;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        sim_seg_t *n = realloc(l->seg, cap * sizeof(*n));
        if (!n)
            return;
        l->seg = n;
        l->cap = cap;
    }
    l->seg[l->n++] = (sim_seg_t){ s, e, rate };
}

/*
 * Move `bytes` from time t at up to `gbps` (bytes per ns) on lane `me`, beside the stretches
 * of lane `other`; records its own stretches and returns when it ends.
 */
static double lane_run(sim_link_t *link, sim_lane_t *me, const sim_lane_t *other, double t,
                       double bytes, double gbps)
{
    double left = bytes;
    for (size_t i = 0; i < other->n && left > 0; i++) {
        const sim_seg_t *o = &other->seg[i];
        if (o->e <= t)
            continue;
        if (o->s > t) {                 /* the other lane idle until o->s */
            double span = o->s - t, cap = gbps * span;
            if (left <= cap) {
                lane_push(me, t, t + left / gbps, gbps);
                return t + left / gbps;
            }
            lane_push(me, t, o->s, gbps);
            left -= cap;
            t = o->s;
        }
        double rate = dmin(gbps, link->duplex_gbps - o->rate);
        if (rate > 0) {
            double span = o->e - t, cap = rate * span;
            if (left <= cap) {
                lane_push(me, t, t + left / rate, rate);
                return t + left / rate;
            }
            lane_push(me, t, o->e, rate);
            left -= cap;
        }
        t = o->e;
    }
    if (left > 0) {
        lane_push(me, t, t + left / gbps, gbps);
        t += left / gbps;
    }
    return t;
}

/*
 * Schedule a transfer of `bytes` on direction `dir` (0 or 1) of link, starting no earlier
 * than `start` nor before the lane's previous transfer ends, at up to `gbps` (GB/s, bytes per
 * ns), within the link's duplex figure (0: none).  `floor` is a time before which no later
 * transfer on either lane will start (what may be forgotten).  Returns its end (ns) and its
 * actual start in *t_start.
 */
double sim_link_transfer(sim_link_t *link, int dir, double start, double floor, double bytes,
                         double gbps, double *t_start)
{
    sim_lane_t *me = &link->lane[dir], *other = &link->lane[!dir];
    double t = start > me->free ? start : me->free;
    *t_start = t;
    if (bytes <= 0 || gbps <= 0)
        return t;
    if (link->duplex_gbps > 0)
        gbps = dmin(gbps, link->duplex_gbps);
    lane_prune(other, t);
    lane_prune(me, other->free > floor ? other->free : floor);
    double end = link->duplex_gbps > 0 ? lane_run(link, me, other, t, bytes, gbps)
                                       : t + bytes / gbps;
    me->free = end;
    return end;
}
