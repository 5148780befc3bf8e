/* SPDX-License-Identifier: MIT */
/*
 * cmd_diff.c - `elixir-trace diff A B`: what changed between two runs.  The same figures are
 * taken from both traces (peak bytes per tier per device, the budgets each run started with,
 * iteration count and mean time, migrations, migrated bytes and their busy time, launches
 * and total kernel time) and shown
 * side by side with the change as a percentage and a ratio, as a table or as JSON.
 */
#include "cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FIGURES 256

typedef enum unit { U_BYTES, U_NS, U_COUNT } unit_t;

typedef struct figure {
    char name[64];                     /* "peak", "budget", "iteration mean", ... */
    int32_t device;                    /* peaks and GPU budgets only */
    int tier;                          /* peaks and GPU budgets only; -1 otherwise */
    unit_t unit;
    int known[2];                      /* A, B: the value exists (an iteration mean may not) */
    uint64_t v[2];
} figure_t;

/* The figures of one trace that do not depend on devices. */
typedef struct totals {
    uint64_t iterations, measured, iter_mean, migrations, migrated, busy, launches, kernel_ns;
} totals_t;

static int iteration_totals(const tm_trace_t *t, totals_t *o)
{
    tm_iter_times_t x;
    if (tm_iteration_times(t, &x) < 0)
        return -1;
    o->iterations = x.marks;
    o->measured = x.measured;          /* iterations the mean is over: 0, no mean */
    o->iter_mean = x.mean_ns;
    return 0;
}

static int totals_of(const tm_trace_t *t, totals_t *o)
{
    tm_kernel_stat_t *k;
    tm_migration_totals_t m;
    size_t nk;
    memset(o, 0, sizeof(*o));
    if (iteration_totals(t, o) < 0 || tm_migration_totals(t, &m) < 0 ||
        tm_kernel_stats(t, &k, &nk) < 0)
        return -1;
    for (size_t i = 0; i < nk; i++) {
        o->launches += k[i].launches;
        o->kernel_ns += k[i].total_ns;
    }
    free(k);
    for (int f = 0; f < TRC_TIERS; f++)
        for (int to = 0; to < TRC_TIERS; to++) {
            o->migrations += m.count[f][to];
            o->migrated += m.bytes[f][to];
        }
    o->busy = m.busy_ns;
    return 0;
}

static figure_t *add(figure_t *f, size_t *n, const char *name, unit_t unit)
{
    if (*n == MAX_FIGURES)
        return NULL;
    figure_t *x = &f[(*n)++];
    *x = (figure_t){ .unit = unit, .tier = -1 };
    snprintf(x->name, sizeof(x->name), "%s", name);
    return x;
}

static void set2(figure_t *x, int ka, uint64_t a, int kb, uint64_t b)
{
    if (!x)
        return;
    x->known[0] = ka;
    x->known[1] = kb;
    x->v[0] = a;
    x->v[1] = b;
}

/* The devices of either trace, in ordinal order (at most 64): their count. */
static size_t device_union(const tm_trace_t *t[2], int32_t devs[64])
{
    size_t nd = 0;
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < t[s]->ndevices; i++) {
            size_t k = 0;
            while (k < nd && devs[k] != t[s]->devices[i].device)
                k++;
            if (k == nd && nd < 64)
                devs[nd++] = t[s]->devices[i].device;
        }
    for (size_t i = 1; i < nd; i++)    /* insertion sort: a handful of devices */
        for (size_t k = i; k > 0 && devs[k - 1] > devs[k]; k--) {
            int32_t d = devs[k];
            devs[k] = devs[k - 1];
            devs[k - 1] = d;
        }
    return nd;
}

/* Peaks of every device of either trace, tiers used by either. */
static void peak_figures(const tm_trace_t *t[2], figure_t *f, size_t *n)
{
    int32_t devs[64];
    size_t nd = device_union(t, devs);
    for (size_t i = 0; i < nd; i++)
        for (int tier = 0; tier < TRC_TIERS; tier++) {
            const tm_device_t *a = tm_device(t[0], devs[i]), *b = tm_device(t[1], devs[i]);
            uint64_t va = a ? a->peak[tier] : 0, vb = b ? b->peak[tier] : 0;
            if (!va && !vb)
                continue;
            figure_t *x = add(f, n, "peak", U_BYTES);
            set2(x, t[0]->nmemory > 0, va, t[1]->nmemory > 0, vb);
            if (x) {
                x->device = devs[i];
                x->tier = tier;
            }
        }
}

/* The budget of `tier` a trace started with (its first BUDGET record: of device dev for the
 * GPU; of any device for the host, whose budget is the process's); 0 when it has none. */
static int first_budget(const tm_trace_t *t, int32_t dev, int tier, uint64_t *v)
{
    for (size_t i = 0; i < t->nbudgets; i++)
        if (tier == TRC_TIER_HOST || t->budgets[i].device == dev) {
            *v = t->budgets[i].bytes[tier];
            return 1;
        }
    *v = 0;
    return 0;
}

/* The GPU budget of every device of either trace that has one, and the host budget: as each
 * run started (a figure is missing from a trace before format 1.2). */
static void budget_figures(const tm_trace_t *t[2], figure_t *f, size_t *n)
{
    int32_t devs[64];
    size_t nd = device_union(t, devs);
    uint64_t va, vb;
    for (size_t i = 0; i < nd; i++) {
        int ka = first_budget(t[0], devs[i], TRC_TIER_GPU, &va);
        int kb = first_budget(t[1], devs[i], TRC_TIER_GPU, &vb);
        if (!ka && !kb)
            continue;
        figure_t *x = add(f, n, "budget", U_BYTES);
        set2(x, ka, va, kb, vb);
        if (x) {
            x->device = devs[i];
            x->tier = TRC_TIER_GPU;
        }
    }
    int ka = first_budget(t[0], 0, TRC_TIER_HOST, &va);
    int kb = first_budget(t[1], 0, TRC_TIER_HOST, &vb);
    if (ka || kb)
        set2(add(f, n, "budget host", U_BYTES), ka, va, kb, vb);
}

static void total_figures(const totals_t o[2], figure_t *f, size_t *n)
{
    set2(add(f, n, "iterations", U_COUNT), 1, o[0].iterations, 1, o[1].iterations);
    set2(add(f, n, "iteration time (mean)", U_NS), o[0].measured > 0, o[0].iter_mean,
         o[1].measured > 0, o[1].iter_mean);
    set2(add(f, n, "migrations", U_COUNT), 1, o[0].migrations, 1, o[1].migrations);
    set2(add(f, n, "migrated bytes", U_BYTES), 1, o[0].migrated, 1, o[1].migrated);
    set2(add(f, n, "migration time (busy)", U_NS), 1, o[0].busy, 1, o[1].busy);
    set2(add(f, n, "launches", U_COUNT), 1, o[0].launches, 1, o[1].launches);
    set2(add(f, n, "kernel time (total)", U_NS), 1, o[0].kernel_ns, 1, o[1].kernel_ns);
}

/* ------------------------------------------------------------------ output */

static const char *value_text(const figure_t *x, int col, char buf[32])
{
    if (!x->known[col])
        return "-";
    if (x->unit == U_BYTES)
        return text_bytes(x->v[col], buf);
    if (x->unit == U_NS)
        return text_ns(x->v[col], buf);
    snprintf(buf, 32, "%" PRIu64, x->v[col]);
    return buf;
}

/* The change from A to B as text: "+50.0% (x1.50)", "same", "new", or "-". */
static const char *change_text(const figure_t *x, char buf[48])
{
    if (!x->known[0] || !x->known[1])
        return "-";
    if (x->v[0] == x->v[1])
        return "same";
    if (x->v[0] == 0)
        return "new (was 0)";
    double r = (double)x->v[1] / (double)x->v[0];
    snprintf(buf, 48, "%+.1f%% (x%.2f)", (r - 1) * 100, r);
    return buf;
}

static const char *figure_label(const figure_t *x, char buf[96])
{
    char d[32];
    if (x->tier < 0)
        return x->name;
    snprintf(buf, 96, "%.40s %s, device %s", x->name, tm_tier_name((uint32_t)x->tier),
             fmt_device(x->device, d));
    return buf;
}

static void print_table(const char *pa, const char *pb, const figure_t *f, size_t n)
{
    char l[96], a[32], b[32], c[48];
    printf("A  %s\nB  %s\n\n", pa, pb);
    printf("%-28s  %14s  %14s  %s\n", "figure", "A", "B", "change");
    for (size_t i = 0; i < n; i++)
        printf("%-28s  %14s  %14s  %s\n", figure_label(&f[i], l), value_text(&f[i], 0, a),
               value_text(&f[i], 1, b), change_text(&f[i], c));
}

static void json_value(const figure_t *x, int col)
{
    if (x->known[col])
        printf("%" PRIu64, x->v[col]);
    else
        printf("null");
}

static void json_figure(const figure_t *x)
{
    static const char *const units[] = { "bytes", "ns", "count" };
    int both = x->known[0] && x->known[1] && x->v[0] > 0;
    double r = both ? (double)x->v[1] / (double)x->v[0] : 0;
    printf("{\"figure\": ");
    text_json(stdout, x->name);
    if (x->tier >= 0)
        printf(", \"device\": %" PRId32 ", \"tier\": \"%s\"", x->device,
               tm_tier_name((uint32_t)x->tier));
    printf(", \"unit\": \"%s\", \"a\": ", units[x->unit]);
    json_value(x, 0);
    printf(", \"b\": ");
    json_value(x, 1);
    printf(", \"ratio\": ");
    both ? text_json_num(stdout, r) : (void)printf("null");
    printf(", \"change_pct\": ");
    both ? text_json_num(stdout, (r - 1) * 100) : (void)printf("null");
    printf("}");
}

static void print_json(const char *pa, const char *pb, const figure_t *f, size_t n)
{
    printf("{\"a\": ");
    text_json(stdout, pa);
    printf(", \"b\": ");
    text_json(stdout, pb);
    printf(", \"figures\": [");
    for (size_t i = 0; i < n; i++) {
        printf("%s\n  ", i ? "," : "");
        json_figure(&f[i]);
    }
    printf("\n]}\n");
}

/* ------------------------------------------------------------------ the command */

static cli_opt_t diff_opts[] = {
    { "--json", NULL, "print one JSON document instead of a table", NULL },
    { "--partial", NULL, "read damaged traces up to their last whole record", NULL },
    CLI_OPT_END,
};

static int run_diff(const cli_cmd_t *c, char **pos)
{
    static figure_t f[MAX_FIGURES];
    tm_trace_t a, b;
    totals_t o[2];
    size_t n = 0;
    cli_load(c, pos[0], &a);
    cli_load(c, pos[1], &b);
    const tm_trace_t *t[2] = { &a, &b };
    int rc = totals_of(&a, &o[0]) < 0 || totals_of(&b, &o[1]) < 0 ? -1 : 0;
    if (rc == 0) {
        peak_figures(t, f, &n);
        budget_figures(t, f, &n);
        total_figures(o, f, &n);
        if (cli_get(c, "--json"))
            print_json(a.path, b.path, f, n);
        else
            print_table(a.path, b.path, f, n);
    }
    tm_free(&a);
    tm_free(&b);
    return rc ? cli_fail(c, "out of memory") : 0;
}

const cli_cmd_t cmd_diff = {
    .name = "diff",
    .args = "A B",
    .npos = 2,
    .summary = "what changed between two runs: peaks, budgets, iteration time, migrations, "
               "kernels",
    .details = "Compares two traces: peak bytes per tier and device (tiers used by either),\n"
               "the budgets each run started with (GPU per device, host),\n"
               "iteration count and mean time (as in summary), migrations (count,\n"
               "bytes, busy time),\n"
               "launches and total kernel time.  The change is B against A, as a\n"
               "percentage and a ratio; '-' when a figure is missing from either trace.",
    .opts = diff_opts,
    .run = run_diff,
};
