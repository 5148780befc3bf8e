/* SPDX-License-Identifier: MIT */
/*
 * res_stats.c - residency's lines of ELIXIR_STATS, per device: migrations and what the host
 * blocked on them, budgets and peaks, the plan's and the NVMe tier's figures (lead), then
 * frees, refusals, the application's own memory, pins and parking (the rest).
 */
#include <stdio.h>

#include "res_int.h"
#include "res_nvme.h"

static unsigned long long mib(uint64_t bytes)
{
    return (unsigned long long)(bytes >> 20);
}

/* The lines that lead: what migrations cost, then the budgets and peaks. */
static void stats_lead(const res_dev_t *d, double run_s, const arena_stats_t *st)
{
    char out[32], in[32], share[96] = "";

    if (run_s > 0)
        snprintf(share, sizeof(share), " (%.1f%% of the %.3f s run)",
                 100.0 * d->blocked_s / run_s, run_s);
    shim_log_plain("device %d: migrations to host %llu (%s), to GPU %llu (%s), evictions "
                   "forced %llu; the host blocked on migrations %.3f s%s", d->device,
                   (unsigned long long)d->migrations_out, shim_fmt_size(d->bytes_out, out),
                   (unsigned long long)d->migrations_in, shim_fmt_size(d->bytes_in, in),
                   (unsigned long long)d->evictions_forced, d->blocked_s, share);
    shim_log_plain("device %d: GPU peak %llu MiB of %llu (the budget), host peak %llu MiB of "
                   "%llu; allocations %llu live, %llu peak", d->device, mib(d->gpu_peak),
                   mib(d->gpu_budget), mib(d->host_peak), mib(atomic_load(&res_host.budget)),
                   (unsigned long long)st->live_allocs, (unsigned long long)st->peak_live_allocs);
}

/* The other lines: waits for frees, refusals, the application's own memory, pins, parking. */
static void stats_rest(const res_dev_t *d)
{
    shim_log_plain("device %d: application VMM memory %llu MiB (peak %llu), pools %llu MiB "
                   "(peak %llu); chunks pinned %u (total %llu, fences that pinned %llu); frees "
                   "deferred %llu, in captures %llu; blocked on frees %.3f s, operations "
                   "refused (no room) %llu; evicted chunks %s", d->device, mib(d->app_used),
                   mib(d->app_peak), mib(d->pool_used), mib(d->pool_peak), d->pinned,
                   (unsigned long long)d->pins, (unsigned long long)d->fences_pinned,
                   (unsigned long long)d->frees_deferred, (unsigned long long)d->frees_captured,
                   d->blocked_free_s, (unsigned long long)d->refused,
                   d->host_mappable ? "stay mapped" : "unmapped");
    shim_log_plain("device %d: freed chunks kept mapped (parked) %u, taken back into use "
                   "%llu, unmapped for room %llu; migrations copied through a shadow "
                   "mapping %llu (%u mapped)", d->device, d->parked.n,
                   (unsigned long long)d->parked_reused, (unsigned long long)d->parked_dropped,
                   (unsigned long long)d->shadow_hits, d->sh_n);
}

void res_stats_print(double run_s, int lead)
{
    for (int i = 0; i < MAX_DEVICES; i++) {
        res_dev_t *d = &res_devs[i];
        if (d->ready <= 0)
            continue;
        arena_stats_t st;
        arena_stats(d->arena, &st);
        if (lead) {
            stats_lead(d, run_s, &st);
            res_plan_stats(d);
            if (d->nvme_on)
                shim_log_plain("device %d: chunks to NVMe %llu, back from NVMe %llu, on NVMe "
                               "now %llu MiB", d->device, (unsigned long long)d->nvme_out,
                               (unsigned long long)d->nvme_in, mib(d->resident[TIER_NVME]));
        } else {
            stats_rest(d);
        }
    }
    if (lead)
        res_nvme_stats_print();
}
