/* SPDX-License-Identifier: MIT */
/*
 * cmd_summary.c - `elixir-trace summary`: one page about a trace: a verdict (footprint against
 * the budgets, time spent migrating and how much of it was hidden), the process, its devices
 * and options, the time span and iterations, peak memory per tier, the top kernels and
 * allocations, migration totals with the share hidden behind kernels, evictions, and the
 * plan at work (summary_plan.c).
 */
#include "cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_TOP   10
#define DEFAULT_DEPTH 3

static void print_header(const tm_trace_t *t)
{
    char when[64] = "?";
    time_t secs = (time_t)(t->header.created_ns / 1000000000u);
    struct tm tmv;
    if (gmtime_r(&secs, &tmv))
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tmv);
    printf("trace       %s\n", t->path);
    printf("  format %u.%u, %" PRIu64 " events, %s\n", t->header.major, t->header.minor,
           t->events, t->partial ? "partial (damaged; read up to the damage)"
                      : t->complete ? "complete" : "not closed (no END record)");
    printf("  created %s; %s clock\n", when,
           t->header.flags & TRC_FLAG_VIRTUAL_TIME ? "simulator's virtual" : "monotonic");
    if (!t->has_process) {
        printf("process     (no PROCESS record; pid %u from the header)\n", t->header.pid);
        return;
    }
    printf("process     pid %u (parent %u) on %s\n", t->process.pid, t->process.ppid,
           t->process.host[0] ? t->process.host : "?");
    printf("  exe       %s\n", t->process.exe);
    printf("  cmdline   %s\n", t->process.cmdline);
}

static int by_ordinal(const void *a, const void *b)
{
    const tm_device_t *x = *(const tm_device_t *const *)a, *y = *(const tm_device_t *const *)b;
    return x->device < y->device ? -1 : x->device > y->device;
}

/* The devices in ordinal order (n of them); NULL when there are none or no memory. */
static const tm_device_t **sorted_devices(const tm_trace_t *t)
{
    const tm_device_t **v = malloc((t->ndevices ? t->ndevices : 1) * sizeof(*v));
    for (size_t i = 0; v && i < t->ndevices; i++)
        v[i] = &t->devices[i];
    if (v)
        qsort(v, t->ndevices, sizeof(*v), by_ordinal);
    return v;
}

/* The device's first BUDGET record, or NULL. */
static const tm_memory_t *first_budget(const tm_trace_t *t, int32_t device)
{
    for (size_t i = 0; i < t->nbudgets; i++)
        if (t->budgets[i].device == device)
            return &t->budgets[i];
    return NULL;
}

/* One verdict line per device with allocations: its footprint (the most bytes of its
 * allocations live at once) against its GPU budget, or the device's memory when the trace
 * has no budget, with the host budget. */
static void verdict_footprint(const tm_trace_t *t, const tm_device_t **dv)
{
    char b[3][32], dev[32];
    for (size_t i = 0; dv && i < t->ndevices; i++) {
        int32_t d = dv[i]->device;
        uint64_t peak;
        if (d == TRC_DEVICE_HOST || tm_peak_allocated(t, d, &peak) < 0 || !peak)
            continue;
        const tm_memory_t *r = first_budget(t, d);
        uint64_t gpu = r ? r->bytes[TRC_TIER_GPU] : dv[i]->total_mem;
        printf("Footprint %s", text_bytes(peak, b[0]));
        if (t->ndevices > 1)
            printf(" on device %s", fmt_device(d, dev));
        if (gpu)
            printf(" on a %s GPU %s", text_bytes(gpu, b[1]), r ? "budget" : "device");
        if (r && r->bytes[TRC_TIER_HOST])
            printf(" (host %s)", text_bytes(r->bytes[TRC_TIER_HOST], b[2]));
        if (gpu && peak > gpu)
            printf(": %.1fx what the GPU holds", (double)peak / (double)gpu);
        printf(".\n");
    }
}

/* The verdict on migrations: the share of the run they took (the union of their intervals,
 * per device) and the share of that hidden behind kernels, saying how many ran where no
 * kernel has device times (outside the profiled iterations), which cannot count as hidden. */
static void verdict_migrations(const tm_trace_t *t)
{
    char b[2][32];
    tm_migration_totals_t m;
    uint64_t span = t->t_last - t->t_first, untimed = 0;
    if (!t->nmigrations) {
        printf("No migrations: nothing was moved between tiers.\n");
        return;
    }
    if (tm_migration_totals_of(t, TM_MIG_ALL, &m, &untimed) < 0)
        return;
    if (span && t->ndevices <= 1)
        printf("Migrations took %.0f%% of the run (%s of %s)", 100.0 * (double)m.busy_ns /
               (double)span, text_ns(m.busy_ns, b[0]), text_ns(span, b[1]));
    else
        printf("Migrations took %s over a run of %s", text_ns(m.busy_ns, b[0]),
               text_ns(span, b[1]));
    if (m.busy_ns)
        printf("; %.1f%% hidden behind kernels", 100.0 * (double)m.hidden_ns / (double)m.busy_ns);
    if (m.busy_ns && untimed)
        printf(" (%" PRIu64 " of %zu outside the profiled iterations, where none counts)",
               untimed, t->nmigrations);
    printf(".\n");
}

/* The verdict: a few lines on what the trace says about memory, before the details. */
static void print_verdict(const tm_trace_t *t, const tm_device_t **dv)
{
    verdict_footprint(t, dv);
    verdict_migrations(t);
    printf("\n");
}

static void print_devices(const tm_trace_t *t, const tm_device_t **dv)
{
    char b[2][32];
    printf("devices     %zu\n", t->ndevices);
    for (size_t i = 0; dv && i < t->ndevices; i++) {
        const tm_device_t *d = dv[i];
        if (!d->name[0] && !d->total_mem && !d->sm_count)
            printf("  %-3s (no DEVICE record)\n", fmt_device(d->device, b[0]));
        else
            printf("  %-3s %s, sm_%u%u, %u SMs, %s\n", fmt_device(d->device, b[0]), d->name,
                   d->cc_major, d->cc_minor, d->sm_count, text_bytes(d->total_mem, b[1]));
    }
    printf("options     %zu\n", t->noptions);
    for (size_t i = 0; i < t->noptions; i++)
        printf("  %s=%s\n", t->options[i].name, t->options[i].value);
}

/* One row per iteration: index, start (from the first event), time, launches, migrations. */
static void iteration_table(const tm_trace_t *t)
{
    char b[3][32];
    tm_iter_stat_t *it;
    size_t n;
    if (tm_iteration_stats(t, &it, &n) < 0)
        return;
    printf("  %8s  %11s  %11s  %8s  %10s  %12s\n", "index", "start", "time", "launches",
           "migrations", "migrated");
    for (size_t i = 0; i < n; i++)
        printf("  %8" PRIu64 "  %11s  %11s  %8" PRIu64 "  %10" PRIu64 "  %12s%s\n",
               it[i].index, text_ns(it[i].start - t->t_first, b[0]),
               text_ns(it[i].end - it[i].start, b[1]), it[i].launches, it[i].migrations,
               text_bytes(it[i].migrated_bytes, b[2]), i + 1 == n ? "  (to the end)" : "");
    free(it);
}

static void print_iterations(const tm_trace_t *t, int each)
{
    char b[32], line[200];
    tm_iter_times_t x;
    printf("time span   %s\n", text_ns(t->t_last - t->t_first, b));
    if (tm_iteration_times(t, &x) < 0)
        return;
    printf("iterations  %s\n", tm_iteration_text(&x, 0, line, sizeof(line)));
    if (each && x.marks)
        iteration_table(t);
}

static void print_peaks(const tm_trace_t *t, const tm_device_t **dv)
{
    char b[32];
    if (t->nmemory == 0) {
        printf("peak memory unknown (no MEMORY records)\n");
        return;
    }
    printf("peak memory per tier\n  %-6s", "device");
    for (uint32_t k = 0; k < TRC_TIERS; k++)
        printf("  %12s", tm_tier_name(k));
    printf("\n");
    for (size_t i = 0; dv && i < t->ndevices; i++) {
        printf("  %-6s", fmt_device(dv[i]->device, b));
        for (uint32_t k = 0; k < TRC_TIERS; k++)
            printf("  %12s", text_bytes(dv[i]->peak[k], b));
        printf("\n");
    }
}

/* The budgets at the start (each device's first BUDGET record) and every time one came down
 * or went back up (a later record with another figure), at its time into the trace; the host
 * budget is the process's, shared by its devices. */
static void print_budgets(const tm_trace_t *t)
{
    char b[3][32];
    uint64_t host = 0;
    int seen_host = 0;
    if (t->nbudgets == 0) {
        printf("budgets unknown (no BUDGET records)\n");
        return;
    }
    printf("budgets\n");
    for (size_t i = 0; i < t->nbudgets; i++) {
        const tm_memory_t *r = &t->budgets[i];
        uint64_t gpu = r->bytes[TRC_TIER_GPU], h = r->bytes[TRC_TIER_HOST];
        const tm_memory_t *before = NULL;
        for (size_t j = i; j-- > 0 && !before;)
            if (t->budgets[j].device == r->device)
                before = &t->budgets[j];
        if (!before)
            printf("  device %s: GPU %s\n", fmt_device(r->device, b[0]), text_bytes(gpu, b[1]));
        else if (gpu != before->bytes[TRC_TIER_GPU])
            printf("  at %s: device %s's GPU budget %s to %s\n",
                   text_ns(r->time - t->t_first, b[0]), fmt_device(r->device, b[1]),
                   gpu < before->bytes[TRC_TIER_GPU] ? "came down" : "went back up",
                   text_bytes(gpu, b[2]));
        if (!seen_host)
            printf("  host (the process's): %s\n", text_bytes(h, b[0]));
        else if (h != host)
            printf("  at %s: the host budget %s to %s\n", text_ns(r->time - t->t_first, b[0]),
                   h < host ? "came down" : "went back up", text_bytes(h, b[1]));
        host = h;
        seen_host = 1;
    }
}

void print_dropped(const tm_trace_t *t)
{
    char b[128];
    for (int cupti = 1; cupti >= 0; cupti--)
        if (tm_dropped_text(t, cupti, b, sizeof(b)))
            printf("%s\n", b);
}

static void print_kernels(const tm_trace_t *t, size_t top)
{
    tm_kernel_stat_t *k;
    size_t n;
    print_dropped(t);
    if (tm_kernel_stats(t, &k, &n) < 0)
        return;
    printf("top kernels by device time (%zu of %zu)\n", top && top < n ? top : n, n);
    if (n)
        print_kernel_table(k, n, top);
    free(k);
}

static void print_allocs(const tm_trace_t *t, size_t top, unsigned depth)
{
    const tm_alloc_t **v = tm_allocs_by_size(t);
    if (!v)
        return;
    printf("top allocations by size (%zu of %zu)\n",
           top && top < t->nallocs ? top : t->nallocs, t->nallocs);
    if (t->nallocs)
        print_alloc_table(t, v, t->nallocs, top, depth);
    free(v);
}

/* Allocations by call site (the Python one in a Python program), largest total first. */
static void print_sites(const tm_trace_t *t, size_t top, unsigned depth)
{
    const tm_alloc_t **v = malloc((t->nallocs ? t->nallocs : 1) * sizeof(*v));
    if (!v)
        return;
    for (size_t i = 0; i < t->nallocs; i++)
        v[i] = &t->allocs[i];
    printf("allocations by call site\n");
    if (t->nallocs)
        print_site_table(v, t->nallocs, top, depth);
    free(v);
}

static void print_migrations(const tm_trace_t *t)
{
    char b[2][32];
    tm_migration_totals_t m;
    if (tm_migration_totals(t, &m) < 0)
        return;
    printf("migrations  %zu\n", t->nmigrations);
    for (uint32_t f = 0; f < TRC_TIERS; f++)
        for (uint32_t to = 0; to < TRC_TIERS; to++)
            if (m.count[f][to])
                printf("  %-4s -> %-4s  %8" PRIu64 "  %12s\n", tm_tier_name(f), tm_tier_name(to),
                       m.count[f][to], text_bytes(m.bytes[f][to], b[0]));
    if (!t->nmigrations)
        return;
    printf("  busy %s, hidden behind kernels %s", text_ns(m.busy_ns, b[0]),
           text_ns(m.hidden_ns, b[1]));
    if (m.busy_ns)
        printf(" (%.1f%%)\n", 100.0 * (double)m.hidden_ns / (double)m.busy_ns);
    else
        printf(" (-)\n");
}

static const char *reason_name(uint32_t r, char buf[32])
{
    static const char *const names[] = { [TRC_EVICT_FOR_LAUNCH] = "for-launch",
                                         [TRC_EVICT_FOR_COPY] = "for-copy",
                                         [TRC_EVICT_FOR_ALLOC] = "for-alloc",
                                         [TRC_EVICT_PLAN] = "plan" };
    if (r < sizeof(names) / sizeof(names[0]) && names[r])
        return names[r];
    snprintf(buf, 32, "reason-%" PRIu32, r);
    return buf;
}

/* Evictions by reason: the known reasons in code order, then the others as met. */
static void print_evictions(const tm_trace_t *t)
{
    uint32_t reasons[64];
    uint64_t counts[64] = { 0 }, bytes[64] = { 0 };
    size_t nr = 0;
    char b[2][32];
    for (uint32_t r = TRC_EVICT_FOR_LAUNCH; r <= TRC_EVICT_PLAN; r++)
        reasons[nr++] = r;
    for (size_t i = 0; i < t->nevictions; i++) {
        size_t k = 0;
        while (k < nr && reasons[k] != t->evictions[i].e.reason)
            k++;
        if (k == nr && nr == 64)
            k = nr - 1;                /* reasons beyond the table share its last row */
        else if (k == nr)
            reasons[nr++] = t->evictions[i].e.reason;
        counts[k]++;
        bytes[k] += t->evictions[i].e.bytes;
    }
    printf("evictions   %zu\n", t->nevictions);
    for (size_t k = 0; k < nr; k++)
        if (counts[k])
            printf("  %-12s  %8" PRIu64 "  %12s\n", reason_name(reasons[k], b[0]), counts[k],
                   text_bytes(bytes[k], b[1]));
}

/* NCCL calls by operation, in the order each was first called (nothing without any). */
static void print_nccl(const tm_trace_t *t)
{
    enum { ROWS = 32 };
    const char *names[ROWS];
    uint64_t counts[ROWS] = { 0 }, bytes[ROWS] = { 0 };
    size_t nr = 0, calls = 0;
    char b[32];
    for (size_t i = 0; i < t->nops; i++) {
        const tm_op_t *o = &t->ops[i];
        if (o->type != TRC_EV_NCCL)
            continue;
        const char *name = o->name && *o->name ? o->name : "?";
        size_t k = 0;
        while (k < nr && strcmp(names[k], name) != 0)
            k++;
        if (k == nr && nr == ROWS)
            k = nr - 1;                /* names beyond the table share its last row */
        else if (k == nr)
            names[nr++] = name;
        counts[k]++;
        bytes[k] += o->bytes;
        calls++;
    }
    if (!calls)
        return;
    printf("nccl calls  %zu\n", calls);
    for (size_t k = 0; k < nr; k++)
        printf("  %-14s  %8" PRIu64 "  %12s\n", names[k], counts[k], text_bytes(bytes[k], b));
}

static cli_opt_t summary_opts[] = {
    { "--top", "N", "kernels and allocations to list (default 10; 0: all)", NULL },
    { "--stack-depth", "N", "call-site frames per allocation (default 3; 0: all)", NULL },
    { "--iterations", NULL, "also list every iteration: start, time, launches, migrations",
      NULL },
    CLI_OPT_PARTIAL,
    CLI_OPT_END,
};

static int run_summary(const cli_cmd_t *c, char **pos)
{
    size_t top = cli_count_opt(c, "--top", DEFAULT_TOP);
    unsigned depth = (unsigned)cli_count_opt(c, "--stack-depth", DEFAULT_DEPTH);
    tm_trace_t t;
    cli_load(c, pos[0], &t);
    const tm_device_t **dv = sorted_devices(&t);
    print_verdict(&t, dv);
    print_header(&t);
    print_devices(&t, dv);
    print_iterations(&t, cli_get(c, "--iterations") != NULL);
    print_peaks(&t, dv);
    print_budgets(&t);
    print_kernels(&t, top);
    print_allocs(&t, top, depth);
    print_sites(&t, top, depth);
    print_migrations(&t);
    print_evictions(&t);
    print_plan(&t);
    print_nccl(&t);
    free(dv);
    tm_free(&t);
    return 0;
}

const cli_cmd_t cmd_summary = {
    .name = "summary",
    .args = "FILE",
    .npos = 1,
    .summary = "one page: process, devices, iterations, peaks, top kernels and allocations, "
               "migrations",
    .details = "Opens with a verdict: each device's footprint (the most bytes of its\n"
               "allocations live at once) against its GPU budget, or its memory when the\n"
               "trace has no budget, with the host budget; the share of the run that\n"
               "migrations took and the share of their time hidden behind kernels.\n"
               "Then prints the process, devices and option snapshot, the time span, the\n"
               "iterations (an iteration runs from its mark to the next: mean, min and\n"
               "max time over those a next mark closes, so the last one, which runs to\n"
               "the trace's end, never counts, and a single mark gives no mean;\n"
               "--iterations lists each), the peak\n"
               "bytes per tier and device (from the MEMORY records), the top kernels by\n"
               "device time (launches, how many were timed, and the times over those;\n"
               "preceded by a warning when the trace says that CUPTI dropped\n"
               "activity records: the operations that lost theirs have no times), the\n"
               "largest allocations with their call sites, the allocations grouped by\n"
               "call site (in a Python program, its Python call site), migrations per\n"
               "direction with how much of their time was hidden behind kernels running on\n"
               "the same device, evictions by reason, the plan (below), and NCCL calls by\n"
               "operation (calls and bytes) when there are any.\n"
               "The plan section (traces of ELIXIR_POLICY=plan, format 1.5): per device,\n"
               "each plan made (profiled iteration, size, host time to plan, predicted\n"
               "iteration against the mean of the iterations that followed it in a row,\n"
               "the guard's verdict, 1.6: kept, or dropped for the reactive engine),\n"
               "operations foreseen, not foreseen and those of the plan that did not come,\n"
               "the plan's moves against the reactive engine's (count and bytes per\n"
               "direction, time busy and hidden behind kernels; moves outside the profiled\n"
               "iterations, where kernels have no device times, cannot count as hidden),\n"
               "and the host time of the shim's mapping calls.  Without a plan, one line\n"
               "says which policy ran, or nothing in a trace that does not say.",
    .opts = summary_opts,
    .run = run_summary,
};
