/* SPDX-License-Identifier: MIT */
/*
 * export_html.c - the report: one self-contained HTML file with the memory plot and the
 * summary figures of a trace.
 *
 * Sections: the process and the trace file, the memory plot (tx_svg inline, all devices
 * summed, then one per device when several have samples), the devices with their GPU
 * budget (what it came down to, and back up to) and their peak per tier, iterations
 * (tm_iteration_stats), migrations by direction with the share of their time hidden behind
 * kernels (tm_migration_totals), the top kernels (tm_kernel_stats), the
 * largest allocations with their call sites (tm_stack_text) and the option snapshot.
 *
 * Nothing is referenced from outside the file: no scripts, fonts, images or style sheets;
 * the style is one small <style> block.  Every text from the trace is escaped, and the markup
 * is written well-formed (void elements closed, attributes quoted), so the file also parses
 * as XML.
 */
#include "agg.h"
#include "export.h"
#include "text.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TOP_KERNELS 20
#define TOP_ALLOCS 20
#define MAX_ITER_ROWS 50
#define STACK_FRAMES 4

static const char css[] =
    "body{font-family:sans-serif;font-size:14px;color:#222;max-width:1100px;margin:24px auto;"
    "padding:0 16px}\n"
    "h1{font-size:22px;margin-bottom:4px}h2{font-size:17px;margin-top:28px;"
    "border-bottom:1px solid #ddd;padding-bottom:4px}\n"
    "table{border-collapse:collapse;margin:8px 0}th,td{padding:3px 10px;"
    "border-bottom:1px solid #eee;text-align:left;vertical-align:top}\n"
    "th{background:#f4f4f4}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}\n"
    "code{font-family:monospace;font-size:12px;word-break:break-all}\n"
    ".warn{background:#fff4e0;border:1px solid #f0c36d;padding:6px 10px}\n"
    ".note{color:#666}figure{margin:8px 0}\n";

/* ------------------------------------------------------------------ text */

static const char *hcount(uint64_t v, char buf[32])
{
    snprintf(buf, 32, "%" PRIu64, v);
    return buf;
}

/* ------------------------------------------------------------------ tables */

/* Opens a table: headers separated by '|', a leading '#' marks a numeric column. */
static void table_open(FILE *f, const char *id, const char *headers)
{
    fprintf(f, "<table id=\"%s\"><thead><tr>", id);
    for (const char *h = headers; *h;) {
        size_t n = strcspn(h, "|");
        int num = *h == '#';
        fprintf(f, "<th%s>%.*s</th>", num ? " class=\"num\"" : "", (int)(n - (size_t)num),
                h + num);
        h += n + (h[n] == '|');
    }
    fputs("</tr></thead><tbody>\n", f);
}

static void table_close(FILE *f)
{
    fputs("</tbody></table>\n", f);
}

static void td(FILE *f, const char *s)
{
    fputs("<td>", f);
    text_xml(f, s);
    fputs("</td>", f);
}

static void td_num(FILE *f, const char *s)
{
    fputs("<td class=\"num\">", f);
    text_xml(f, s);
    fputs("</td>", f);
}

static void td_code(FILE *f, const char *s)
{
    fputs("<td><code>", f);
    text_xml(f, s);
    fputs("</code></td>", f);
}

/* A key-value row of the overview table. */
static void kv(FILE *f, const char *key, const char *value)
{
    fprintf(f, "<tr><th>%s</th>", key);
    td(f, value);
    fputs("</tr>\n", f);
}

/* ------------------------------------------------------------------ sections */

static const char *exe_of(const tm_trace_t *t)
{
    return t->has_process && t->process.exe && t->process.exe[0] ? t->process.exe
                                                                  : "unknown program";
}

static void head(FILE *f, const tm_trace_t *t)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>\n<title>Elixir "
          "trace: ", f);
    text_xml(f, exe_of(t));
    fprintf(f, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<h1>Elixir trace: ", css);
    text_xml(f, exe_of(t));
    fputs("</h1>\n", f);
    if (t->warning[0] || !t->complete) {
        fputs("<p class=\"warn\">", f);
        text_xml(f, t->warning[0] ? t->warning : "the trace was not closed (no END record)");
        fputs("</p>\n", f);
    }
}

static void overview(FILE *f, const tm_trace_t *t)
{
    char buf[64], n[32];
    fputs("<table id=\"overview\"><tbody>\n", f);
    if (t->has_process) {
        kv(f, "command line", t->process.cmdline);
        kv(f, "host", t->process.host);
        snprintf(buf, sizeof(buf), "%" PRIu32 " (parent %" PRIu32 ")", t->process.pid,
                 t->process.ppid);
        kv(f, "process", buf);
    }
    kv(f, "trace file", t->path);
    snprintf(buf, sizeof(buf), "%u.%u, %s clock, %" PRIu64 " events", t->header.major,
             t->header.minor, t->header.flags & TRC_FLAG_VIRTUAL_TIME ? "virtual" : "monotonic",
             t->events);
    kv(f, "format", buf);
    time_t secs = (time_t)(t->header.created_ns / 1000000000u);
    struct tm tm;
    if (gmtime_r(&secs, &tm) && strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm))
        kv(f, "recorded", buf);
    kv(f, "duration", text_ns_utf8(t->t_last - t->t_first, n));
    fputs("</tbody></table>\n", f);
}

static int has_samples(const tm_trace_t *t, int32_t device)
{
    for (size_t i = 0; i < t->nmemory; i++)
        if (t->memory[i].device == device)
            return 1;
    return 0;
}

/* The plot of all devices, then one per device when more than one has memory samples. */
static int plots(FILE *f, const tm_trace_t *t, char *err, size_t len)
{
    tx_plot_opts_t o = { -1, TX_PLOT_DEFAULT_W, TX_PLOT_DEFAULT_H };
    int several = 0;
    for (size_t i = 1; i < t->nmemory && !several; i++)
        several = t->memory[i].device != t->memory[0].device;
    fputs("<h2>Memory over time</h2>\n<figure>\n", f);
    int rc = tx_svg(t, &o, f, err, len);
    for (size_t i = 0; i < t->ndevices && several && rc == 0; i++) {
        o = (tx_plot_opts_t){ t->devices[i].device, TX_PLOT_DEFAULT_W, 300 };
        if (o.device >= 0 && has_samples(t, o.device)) /* -1 in o means all devices */
            rc = tx_svg(t, &o, f, err, len);
    }
    fputs("</figure>\n", f);
    return rc;
}

/* Device dev's GPU budget as text: the first BUDGET record's; after an arrow, the lowest
 * when it came down, and after another the last when it went back up from there; "-"
 * without any. */
static const char *budget_text(const tm_trace_t *t, int32_t dev, char buf[120])
{
    const tm_memory_t *first = NULL, *last = NULL;
    uint64_t low = UINT64_MAX;
    char a[32], b[32], c[32];
    for (size_t i = 0; i < t->nbudgets; i++)
        if (t->budgets[i].device == dev) {
            first = first ? first : &t->budgets[i];
            last = &t->budgets[i];
            low = last->bytes[TRC_TIER_GPU] < low ? last->bytes[TRC_TIER_GPU] : low;
        }
    if (!first)
        return "-";
    uint64_t from = first->bytes[TRC_TIER_GPU], to = last->bytes[TRC_TIER_GPU];
    if (low == from)
        return text_bytes(from, buf);
    if (to == low)
        snprintf(buf, 120, "%s \xe2\x86\x92 %s", text_bytes(from, a), text_bytes(to, b));
    else
        snprintf(buf, 120, "%s \xe2\x86\x92 %s \xe2\x86\x92 %s", text_bytes(from, a),
                 text_bytes(low, b), text_bytes(to, c));
    return buf;
}

static void devices(FILE *f, const tm_trace_t *t)
{
    char b[32];
    fputs("<h2>Devices</h2>\n", f);
    if (!t->ndevices) {
        fputs("<p class=\"note\">no devices recorded</p>\n", f);
        return;
    }
    table_open(f, "devices", "#device|name|#memory|#compute capability|#SMs|#GPU budget|"
               "#peak GPU|#peak PEER|#peak HOST|#peak NVME");
    for (size_t i = 0; i < t->ndevices; i++) {
        const tm_device_t *d = &t->devices[i];
        fputs("<tr>", f);
        snprintf(b, sizeof(b), "%" PRId32, d->device);
        td_num(f, b);
        td(f, d->name);
        td_num(f, text_bytes(d->total_mem, b));
        snprintf(b, sizeof(b), "%" PRIu32 ".%" PRIu32, d->cc_major, d->cc_minor);
        td_num(f, b);
        td_num(f, hcount(d->sm_count, b));
        char bb[120];
        td_num(f, budget_text(t, d->device, bb));
        for (int k = 0; k < TRC_TIERS; k++)
            td_num(f, text_bytes(d->peak[k], b));
        fputs("</tr>\n", f);
    }
    table_close(f);
}

/* The mean, min and max as in summary (tm_iteration_text), and which iteration they leave
 * out, since the table below lists it too. */
static int iteration_summary(FILE *f, const tm_trace_t *t)
{
    tm_iter_times_t x;
    char line[200];
    if (tm_iteration_times(t, &x) < 0)
        return -ENOMEM;
    fputs("<p>", f);
    text_xml(f, tm_iteration_text(&x, 1, line, sizeof(line)));
    fputs(" (an iteration runs from its mark to the next: the last one, which runs to the end "
          "of the trace, is not counted)</p>\n", f);
    return 0;
}

static void iteration_rows(FILE *f, const tm_trace_t *t, const tm_iter_stat_t *it, size_t n)
{
    char b[32];
    table_open(f, "iterations", "#index|#start|#duration|#launches|#migrations|#migrated");
    for (size_t i = 0; i < n && i < MAX_ITER_ROWS; i++) {
        fputs("<tr>", f);
        td_num(f, hcount(it[i].index, b));
        td_num(f, text_ns_utf8(it[i].start - t->t_first, b));
        td_num(f, text_ns_utf8(it[i].end - it[i].start, b));
        td_num(f, hcount(it[i].launches, b));
        td_num(f, hcount(it[i].migrations, b));
        td_num(f, text_bytes(it[i].migrated_bytes, b));
        fputs("</tr>\n", f);
    }
    table_close(f);
    if (n > MAX_ITER_ROWS)
        fprintf(f, "<p class=\"note\">and %zu more</p>\n", n - MAX_ITER_ROWS);
}

static int iterations(FILE *f, const tm_trace_t *t)
{
    tm_iter_stat_t *it;
    size_t n;
    if (tm_iteration_stats(t, &it, &n) < 0)
        return -ENOMEM;
    fputs("<h2>Iterations</h2>\n", f);
    if (n) {
        if (iteration_summary(f, t) < 0) {
            free(it);
            return -ENOMEM;
        }
        iteration_rows(f, t, it, n);
    } else {
        fputs("<p class=\"note\">no iteration marks in this trace</p>\n", f);
    }
    free(it);
    return 0;
}

static void migration_rows(FILE *f, const tm_migration_totals_t *m)
{
    char b[32];
    for (uint32_t from = 0; from < TRC_TIERS; from++)
        for (uint32_t to = 0; to < TRC_TIERS; to++) {
            if (!m->count[from][to])
                continue;
            snprintf(b, sizeof(b), "%s \xe2\x86\x92 %s", tm_tier_name(from), tm_tier_name(to));
            fputs("<tr>", f);
            td(f, b);
            td_num(f, hcount(m->count[from][to], b));
            td_num(f, text_bytes(m->bytes[from][to], b));
            fputs("</tr>\n", f);
        }
}

static int migrations(FILE *f, const tm_trace_t *t)
{
    tm_migration_totals_t m;
    char a[32], b[32];
    uint64_t untimed = 0;
    if (tm_migration_totals_of(t, TM_MIG_ALL, &m, &untimed) < 0)
        return -ENOMEM;
    fputs("<h2>Migrations</h2>\n", f);
    if (!t->nmigrations) {
        fputs("<p class=\"note\">no migrations in this trace</p>\n", f);
        return 0;
    }
    fprintf(f, "<p id=\"hidden\">%zu migrations, busy %s, of which %s ", t->nmigrations,
            text_ns_utf8(m.busy_ns, a), text_ns_utf8(m.hidden_ns, b));
    if (m.busy_ns)
        fprintf(f, "(%.1f%%) ", 100.0 * (double)m.hidden_ns / (double)m.busy_ns);
    fputs("hidden behind kernels", f);
    if (untimed)    /* (as the summary's verdict says it) */
        fprintf(f, "; %" PRIu64 " of them outside the profiled iterations, where none counts",
                untimed);
    fputs("</p>\n", f);
    table_open(f, "migrations", "direction|#count|#bytes");
    migration_rows(f, &m);
    table_close(f);
    return 0;
}

static void kernel_row(FILE *f, const tm_kernel_stat_t *k, uint64_t all)
{
    char b[32];
    fputs("<tr>", f);
    td_code(f, k->name);
    td_num(f, hcount(k->launches, b));
    td_num(f, hcount(k->timed, b));
    td_num(f, k->timed ? text_ns_utf8(k->total_ns, b) : "");
    td_num(f, k->timed ? text_ns_utf8(k->total_ns / k->timed, b) : "");
    td_num(f, k->timed ? text_ns_utf8(k->min_ns, b) : "");
    td_num(f, k->timed ? text_ns_utf8(k->max_ns, b) : "");
    snprintf(b, sizeof(b), "%.1f%%", all ? 100.0 * (double)k->total_ns / (double)all : 0.0);
    td_num(f, b);
    fputs("</tr>\n", f);
}

static int kernels(FILE *f, const tm_trace_t *t)
{
    tm_kernel_stat_t *k;
    size_t n;
    uint64_t all = 0;
    if (tm_kernel_stats(t, &k, &n) < 0)
        return -ENOMEM;
    fputs("<h2>Top kernels</h2>\n", f);
    for (int cupti = 1; cupti >= 0; cupti--) {
        char b[128];
        if (tm_dropped_text(t, cupti, b, sizeof(b)))
            fprintf(f, "<p class=\"warn\">%s</p>\n", b);
    }
    if (!n)
        fputs("<p class=\"note\">no kernel launches in this trace</p>\n", f);
    else
        table_open(f, "kernels", "kernel|#launches|#timed|#total|#mean|#min|#max|#share");
    for (size_t i = 0; i < n; i++)
        all += k[i].total_ns;
    for (size_t i = 0; i < n && i < TOP_KERNELS; i++)
        kernel_row(f, &k[i], all);
    if (n)
        table_close(f);
    if (n > TOP_KERNELS)
        fprintf(f, "<p class=\"note\">and %zu more kernels</p>\n", n - TOP_KERNELS);
    free(k);
    return 0;
}

static void alloc_row(FILE *f, const tm_trace_t *t, const tm_alloc_t *a)
{
    char b[32], site[1024];
    fputs("<tr>", f);
    td_num(f, hcount(a->id, b));
    snprintf(b, sizeof(b), "%" PRId32, a->device);
    td_num(f, a->device == TRC_DEVICE_HOST ? "host" : b);
    td_num(f, text_bytes(a->size, b));
    td_num(f, text_ns_utf8(a->t_alloc - t->t_first, b));
    /* Times of different threads may be slightly out of order: never a negative lifetime. */
    td_num(f, a->t_free == TM_LIVE ? "never"
              : text_ns_utf8(a->t_free > a->t_alloc ? a->t_free - a->t_alloc : 0, b));
    tm_stack_text(a->stack, STACK_FRAMES, site, sizeof(site));
    td_code(f, a->stack ? site : "(no call site)");
    fputs("</tr>\n", f);
}

static int allocations(FILE *f, const tm_trace_t *t)
{
    const tm_alloc_t **v = tm_allocs_by_size(t);
    if (!v)
        return -ENOMEM;
    fputs("<h2>Largest allocations</h2>\n", f);
    if (!t->nallocs)
        fputs("<p class=\"note\">no allocations in this trace</p>\n", f);
    else
        table_open(f, "allocations", "#id|#device|#size|#allocated at|#lifetime|call site");
    for (size_t i = 0; i < t->nallocs && i < TOP_ALLOCS; i++)
        alloc_row(f, t, v[i]);
    if (t->nallocs)
        table_close(f);
    if (t->nallocs > TOP_ALLOCS)
        fprintf(f, "<p class=\"note\">and %zu more allocations</p>\n", t->nallocs - TOP_ALLOCS);
    free(v);
    return 0;
}

static void options(FILE *f, const tm_trace_t *t)
{
    fputs("<h2>Options</h2>\n", f);
    if (!t->noptions) {
        fputs("<p class=\"note\">no option snapshot in this trace</p>\n", f);
        return;
    }
    table_open(f, "options", "option|value");
    for (size_t i = 0; i < t->noptions; i++) {
        fputs("<tr>", f);
        td_code(f, t->options[i].name);
        td_code(f, t->options[i].value);
        fputs("</tr>\n", f);
    }
    table_close(f);
}

int tx_html(const tm_trace_t *t, FILE *out, char *err, size_t err_len)
{
    head(out, t);
    overview(out, t);
    int rc = plots(out, t, err, err_len);
    if (rc < 0)
        return rc;
    devices(out, t);
    if (iterations(out, t) < 0 || migrations(out, t) < 0 || kernels(out, t) < 0 ||
        allocations(out, t) < 0)
        rc = -ENOMEM;
    if (rc == 0) {
        options(out, t);
        fputs("</body>\n</html>\n", out);
    }
    return text_finish(out, rc, "report", err, err_len);
}
