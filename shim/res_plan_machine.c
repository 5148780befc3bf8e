/* SPDX-License-Identifier: MIT */
/*
 * res_plan_machine.c - the machine a device's plan is made for (policy/'s pol_machine_t): the
 * GPU memory the plan has, the host link's rates, the mapping calls' costs, measured where
 * the profile measured them, defaults otherwise.
 */
#include <stdio.h>

#include "../policy/policy.h"
#include "res_int.h"
#include "res_nvme.h"
#include "res_plan_int.h"

/* The host link's defaults: GB/s each way of a PCIe 4.0 x16 link, and both ways together as a
 * ratio to one way: an A100 there moved 25 GB/s each way alone, 36 together (24 + 12; the
 * nvbandwidth measurements of NVIDIA/nvbandwidth issues 11 and 53, as docs/simulator.md). */
#define LINK_GBS 25.0
#define DUPLEX_RATIO (36.0 / 25.0)
/* The host's time to issue one operation (the driver call that enqueues it): the simulator
 * charges 1 us per submitted operation (docs/simulator.md); not measured in the profile. */
#define HOST_OP_US 1.0

/* The machine the plan is for: d's budgets; the host link's rate each way measured from the
 * profiled iteration's migrations (res_plan_time.c) where enough bytes went that way, else
 * the default, and the duplex limit DUPLEX_RATIO times the faster way (migrations never run
 * both ways at once: not measured); a fixed 10 us per transfer (an assumption).  Mapping:
 * every chunk is a physical handle of its own, and a move remaps chunk by chunk, so a move of
 * n chunks costs n times one handle's calls (POL_MAP_US_PER_CHUNK: the driver's cost is
 * nearly all per handle, docs/simulator.md) and about 1 us per call whatever it spans.  Where
 * the plan's evictions unmap (res_unmapped.c), or host memory does not map, an eviction costs
 * the unmap alone: POL_UNMAP_US_PER_CHUNK.  Those costs are measured where enough moves were
 * timed (res_plan_map_costs). */

/* The mean host time (us) of the mapping calls of d's moves of kind k (MAPT_*), or -1 when
 * fewer than POL_MAP_SAMPLES were timed. */
static double map_mean(const res_dev_t *d, int k)
{
    return d->map_n[k] >= POL_MAP_SAMPLES ? (double)d->map_ns[k] / 1e3 / (double)d->map_n[k]
                                          : -1;
}

/* The mapping costs per chunk the planner charges, on d's clock (shim_ht_now): a move where
 * evicted memory stays mapped (*mapped: the mean of a remap out and one in), one where
 * evictions unmap (*unmapped: the mean of an unmap out and a map in) and a chunk born (*birth).
 * The first two are measured where the moves so far (the reactive engine's in the profiled
 * iterations, the plan's after it) timed enough of their kinds; one not measured, and the
 * birth, is its default (POL_*_US_PER_CHUNK, an H200's calls) scaled by the ratio of a
 * measured one to its default, the driver being taken to be uniformly faster or slower; with
 * nothing measured, the defaults.  Returns which: "measured", "scaled" or "default". */
const char *res_plan_map_costs(const res_dev_t *d, double *mapped, double *unmapped,
                             double *birth)
{
    double out = map_mean(d, MAPT_OUT), in = map_mean(d, MAPT_IN);
    double un = map_mean(d, MAPT_UNMAP), mp = map_mean(d, MAPT_MAP), scale = 1;
    int have_mapped = out >= 0 && in >= 0, have_unmapped = un >= 0 && mp >= 0;
    if (have_mapped)
        scale = (out + in) / 2 / POL_MAP_US_PER_CHUNK;
    else if (have_unmapped)
        scale = (un + mp) / 2 / POL_UNMAP_US_PER_CHUNK;
    *mapped = have_mapped ? (out + in) / 2 : POL_MAP_US_PER_CHUNK * scale;
    *unmapped = have_unmapped ? (un + mp) / 2 : POL_UNMAP_US_PER_CHUNK * scale;
    *birth = POL_BIRTH_US_PER_CHUNK * scale;        /* (an unmap as well: not a MAPT kind) */
    return have_mapped && have_unmapped ? "measured" : have_mapped || have_unmapped ? "scaled"
                                                                                    : "default";
}

/* The GPU memory the plan has: the budget less the application's own memory (a chunk at
 * least). */
uint64_t res_plan_gpu_bytes(const res_dev_t *d)
{
    uint64_t other = d->app_used + d->pool_used;
    return d->gpu_budget > other ? d->gpu_budget - other : d->chunk;
}

pol_machine_t res_plan_machine(const res_dev_t *d, const res_ptime_report_t *tr)
{
    pol_machine_t m = { .chunk = d->chunk, .copy_engines = 1 };
    m.cap[POL_GPU] = res_plan_gpu_bytes(d);
    m.cap[POL_HOST] = atomic_load(&res_host.budget);
    double to = tr->link_gbs[0] > 0 ? tr->link_gbs[0] : LINK_GBS;
    double from = tr->link_gbs[1] > 0 ? tr->link_gbs[1] : LINK_GBS;
    m.link[POL_HOST] = (pol_link_t){ to, from, DUPLEX_RATIO * (to > from ? to : from), 10.0 };
    double mapped, unmapped, birth;
    res_plan_map_costs(d, &mapped, &unmapped, &birth);
    m.map_us_per_call = 1.0;
    m.map_us_per_chunk = d->unmap_on || !d->host_mappable ? unmapped : mapped;
    m.room_on_device = d->unmap_on && d->host_mappable;     /* (res_flight.c: flight_early) */
    m.birth_us_per_chunk = birth;
    /* (a chunk behind a kernel's pointers that the plan leaves unmapped is mapped back for it:
     * res_pin.c; the driver taken to be as much faster or slower as for a birth) */
    m.mapback_us_per_chunk = m.room_on_device ? POL_MAPBACK_US_PER_CHUNK * birth /
                                                    POL_BIRTH_US_PER_CHUNK : 0;
    m.drop_us_per_chunk = POL_DROP_US_PER_CHUNK * birth / POL_BIRTH_US_PER_CHUNK;
    m.host_us_per_op = HOST_OP_US;
    res_plan_nvme_machine(d, tr, &m);
    return m;
}

/* "measured, N MiB" or "default" for the log: the host link's rate in direction dir. */
const char *res_plan_link_source(const res_ptime_report_t *tr, int dir, char *buf, size_t len)
{
    if (tr->link_gbs[dir] <= 0)
        return tr->link_bytes[dir] ? "default: too few bytes moved" : "default";
    snprintf(buf, len, "measured over %llu MiB", (unsigned long long)(tr->link_bytes[dir] >> 20));
    return buf;
}
