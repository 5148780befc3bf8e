/* SPDX-License-Identifier: MIT */
/*
 * export_svg.c - the memory plot: bytes resident per tier over time, as stacked areas in SVG.
 *
 * The memory series (tm_memory_t: each sample holds for its device until the next one) is
 * selected for one device or summed over all, then reduced to one value per pixel column and
 * tier boundary: the highest cumulative total (GPU, GPU+PEER, ...) reached anywhere in the
 * column, the value held at its left edge included.  So a trace of millions of samples draws
 * at most two points per column and boundary, and a peak shorter than a pixel still reaches
 * its full height.  Iteration marks are dashed vertical lines labelled with their index (at
 * most one per column); migrations are ticks in a lane under the plot, one per column and
 * direction (fetch to a faster tier, eviction to a slower one).  The GPU budget (BUDGET
 * records, summed over the selected devices) is a dashed step line, drawn where it is at most
 * four times the peak (the y axis then reaches it), else named in the subtitle, so that a
 * generous budget does not squash the areas to nothing.  The axes have round ticks in
 * binary byte units and ns/µs/ms/s; grid lines carry their value (data-bytes, data-ns) so
 * that a reader of the file can map coordinates back to figures.
 *
 * All text is escaped for XML.  There is no XML declaration (UTF-8 is XML's default), so the
 * same output can be inlined in HTML.  No memory samples for the selection is not an error:
 * the picture then says "no memory samples ..." and tx_svg returns 0.
 */
#include "export.h"
#include "text.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define M_LEFT 72                      /* room for "10.5 GiB" */
#define M_RIGHT 18
#define M_TOP 66                       /* title, subtitle, legend */
#define M_BOTTOM 58                    /* migration lane, time labels, axis title */
#define LANE 14                        /* height of the migration lane */

static const char *const tier_label[TRC_TIERS] = { "GPU", "PEER", "HOST", "NVME" };
static const char *const tier_key[TRC_TIERS] = { "gpu", "peer", "host", "nvme" };
static const char *const tier_colour[TRC_TIERS] = { "#4c78a8", "#72b7b2", "#f58518", "#b279a2" };

enum { MIG_FETCH, MIG_EVICT, MIG_OTHER, MIG_CLASSES };
static const char *const mig_key[MIG_CLASSES] = { "fetch", "evict", "other" };
static const char *const mig_colour[MIG_CLASSES] = { "#2ca02c", "#d62728", "#7f7f7f" };

typedef struct plot {
    const tm_trace_t *t;
    FILE *f;
    int32_t device;                    /* -1: all devices summed */
    unsigned w, h, cols;               /* picture size; pixel columns of the plot area */
    double px, py, pw, ph;             /* plot area: left, top, width, height */
    uint64_t t0, span;                 /* time at the left edge; ns across the plot (> 0) */
    const tm_memory_t **samples;       /* the selected samples, by time */
    size_t nsamples, *slot;            /* slot: index of each sample's device in cur */
    uint64_t (*cur)[TRC_TIERS];        /* latest sample per device */
    double *top[TRC_TIERS];            /* per column: highest total of tiers 0..k */
    int present[TRC_TIERS];            /* tier k holds bytes somewhere in the selection */
    double peak, ymax;                 /* highest total; bytes at the top of the y axis */
    uint64_t peak_time;
    double *budget;                    /* per column: the selection's GPU budget (0: unknown) */
    double budget_max;
    int budget_shown;                  /* drawn (else above the scale, or none) */
    size_t nmigrations;                /* migrations of the selection */
} plot_t;

/* ------------------------------------------------------------------ numbers and ticks */

/* The smallest of 1, 2, 2.5, 5 times a power of ten that is >= raw (> 0). */
static double nice_step(double raw)
{
    static const double mult[] = { 1, 2, 2.5, 5, 10 };
    double e = 1;
    while (e * 10 <= raw)
        e *= 10;
    while (e > raw)
        e /= 10;
    for (int i = 0; i < 4; i++)
        if (mult[i] * e >= raw * (1 - 1e-9))
            return mult[i] * e;
    return 10 * e;
}

/* Decimals needed to print multiples of step (at most 3). */
static int decimals(double step)
{
    int d = 0;
    for (double s = step; d < 3; d++, s *= 10) {
        double frac = s - (double)(uint64_t)s;
        if (frac < 1e-6 || frac > 1 - 1e-6)
            break;
    }
    return d;
}

typedef struct axis {
    double unit, step;                 /* unit in base units; step in units */
    const char *name;
    int decimals;
} axis_t;

/* Byte axis for values up to max: a binary unit and about four round steps. */
static axis_t byte_axis(double max)
{
    static const char *const names[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
    axis_t a = { 1, 1, names[0], 0 };
    for (int i = 1; i < 6 && a.unit * 1024 <= max; i++) {
        a.unit *= 1024;
        a.name = names[i];
    }
    a.step = nice_step(max / a.unit / 4);
    if (a.unit == 1 && a.step < 1)
        a.step = 1;
    a.decimals = decimals(a.step);
    return a;
}

/* Time axis for a span of ns: a unit and a step of about one label per 110 pixels. */
static axis_t time_axis(uint64_t span, double pixels)
{
    axis_t a = { 1, 1, "ns", 0 };
    if (span >= 2000000000u)
        a = (axis_t){ 1e9, 1, "s", 0 };
    else if (span >= 2000000u)
        a = (axis_t){ 1e6, 1, "ms", 0 };
    else if (span >= 2000u)
        a = (axis_t){ 1e3, 1, "\xc2\xb5s", 0 };
    double labels = pixels / 110 > 1 ? pixels / 110 : 1;
    a.step = nice_step((double)span / a.unit / labels);
    if (a.unit == 1 && a.step < 1)
        a.step = 1;
    a.decimals = decimals(a.step);
    return a;
}

static void fmt_bytes(double v, char *buf, size_t len)
{
    axis_t a = byte_axis(v);
    snprintf(buf, len, a.unit == 1 ? "%.0f %s" : "%.2f %s", v / a.unit, a.name);
}

static void fmt_time(uint64_t ns, char *buf, size_t len)
{
    axis_t a = time_axis(ns, 110);
    snprintf(buf, len, a.unit == 1 ? "%.0f %s" : "%.2f %s", (double)ns / a.unit, a.name);
}

/* ------------------------------------------------------------------ selection */

static int by_time(const void *a, const void *b)
{
    const tm_memory_t *x = *(const tm_memory_t *const *)a, *y = *(const tm_memory_t *const *)b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return x < y ? -1 : x > y;         /* file order among equal times */
}

/* Index of device d among the first *n entries of devs, appended when new. */
static size_t device_index(int32_t *devs, size_t *n, int32_t d)
{
    for (size_t i = 0; i < *n; i++)
        if (devs[i] == d)
            return i;
    devs[*n] = d;
    return (*n)++;
}

/* Fills p->samples (sorted by time), p->slot, p->cur and p->present.  0 or -ENOMEM. */
static int select_samples(plot_t *p)
{
    const tm_trace_t *t = p->t;
    size_t n = 0, ndev = 0, cap = t->nmemory ? t->nmemory : 1;
    int32_t *devs = malloc(cap * sizeof(*devs));
    p->samples = malloc(cap * sizeof(*p->samples));
    p->slot = malloc(cap * sizeof(*p->slot));
    if (!devs || !p->samples || !p->slot) {
        free(devs);
        return -ENOMEM;
    }
    for (size_t i = 0; i < t->nmemory; i++)
        if (p->device < 0 || t->memory[i].device == p->device)
            p->samples[n++] = &t->memory[i];
    qsort(p->samples, n, sizeof(*p->samples), by_time);
    for (size_t i = 0; i < n; i++) {
        p->slot[i] = device_index(devs, &ndev, p->samples[i]->device);
        for (int k = 0; k < TRC_TIERS; k++)
            p->present[k] |= p->samples[i]->bytes[k] != 0;
    }
    free(devs);
    p->nsamples = n;
    p->cur = calloc(ndev ? ndev : 1, sizeof(*p->cur));
    return p->cur ? 0 : -ENOMEM;
}

/* The plot's time range: the whole trace, with every sample and migration in it. */
static void time_range(plot_t *p)
{
    const tm_trace_t *t = p->t;
    uint64_t lo = t->t_first, hi = t->t_last;
    if (p->nsamples) {
        lo = p->samples[0]->time < lo ? p->samples[0]->time : lo;
        hi = p->samples[p->nsamples - 1]->time > hi ? p->samples[p->nsamples - 1]->time : hi;
    }
    for (size_t i = 0; i < t->nmigrations; i++) {
        lo = t->migrations[i].m.start < lo ? t->migrations[i].m.start : lo;
        hi = t->migrations[i].m.end > hi ? t->migrations[i].m.end : hi;
    }
    p->t0 = lo;
    p->span = hi > lo ? hi - lo : 1000;
}

/* ------------------------------------------------------------------ reduction */

/* The pixel column of a time (clamped to the plot). */
static unsigned column(const plot_t *p, uint64_t time)
{
    if (time <= p->t0)
        return 0;
    double c = (double)(time - p->t0) / (double)p->span * p->cols;
    return c >= p->cols ? p->cols - 1 : (unsigned)c;
}

/* Applies sample i to the per-device state and the running sums of all devices. */
static void apply(plot_t *p, size_t i, double sum[TRC_TIERS])
{
    uint64_t *cur = p->cur[p->slot[i]];
    for (int k = 0; k < TRC_TIERS; k++) {
        sum[k] += (double)p->samples[i]->bytes[k] - (double)cur[k];
        cur[k] = p->samples[i]->bytes[k];
    }
}

static void cumulate(const double sum[TRC_TIERS], double cum[TRC_TIERS])
{
    cum[0] = sum[0];
    for (int k = 1; k < TRC_TIERS; k++)
        cum[k] = cum[k - 1] + sum[k];
}

/* Fills p->top: per column and k, the highest total of tiers 0..k held at any time in the
 * column (the value at its left edge included), and the peak total with its time. */
static void reduce(plot_t *p)
{
    double sum[TRC_TIERS] = { 0 }, cum[TRC_TIERS], colmax[TRC_TIERS];
    size_t i = 0;
    for (unsigned c = 0; c < p->cols; c++) {
        cumulate(sum, colmax);
        for (; i < p->nsamples && column(p, p->samples[i]->time) <= c; i++) {
            apply(p, i, sum);
            cumulate(sum, cum);
            for (int k = 0; k < TRC_TIERS; k++)
                colmax[k] = cum[k] > colmax[k] ? cum[k] : colmax[k];
            if (cum[TRC_TIERS - 1] > p->peak) {
                p->peak = cum[TRC_TIERS - 1];
                p->peak_time = p->samples[i]->time;
            }
        }
        for (int k = 0; k < TRC_TIERS; k++)
            p->top[k][c] = colmax[k] > 0 ? colmax[k] : 0;
    }
}

/* Fills p->budget: per column, the GPU budgets of the selected devices added up (BUDGET
 * records, 1.2), as they stand at the column's right edge; 0 before the first.  0 or -ENOMEM. */
static int budget_columns(plot_t *p)
{
    const tm_trace_t *t = p->t;
    size_t n = 0, ndev = 0, cap = t->nbudgets ? t->nbudgets : 1;
    const tm_memory_t **r = malloc(cap * sizeof(*r));
    int32_t *devs = malloc(cap * sizeof(*devs));
    double *cur = calloc(cap, sizeof(*cur)), sum = 0;
    int rc = r && devs && cur ? 0 : -ENOMEM;
    for (size_t i = 0; !rc && i < t->nbudgets; i++)
        if (p->device < 0 || t->budgets[i].device == p->device)
            r[n++] = &t->budgets[i];
    if (!rc)
        qsort(r, n, sizeof(*r), by_time);
    for (size_t c = 0, i = 0; !rc && c < p->cols; c++) {
        for (; i < n && column(p, r[i]->time) <= c; i++) {
            size_t k = device_index(devs, &ndev, r[i]->device);
            sum += (double)r[i]->bytes[TRC_TIER_GPU] - cur[k];
            cur[k] = (double)r[i]->bytes[TRC_TIER_GPU];
        }
        p->budget[c] = sum;
        p->budget_max = sum > p->budget_max ? sum : p->budget_max;
    }
    free(r);
    free(devs);
    free(cur);
    return rc;
}

/* ------------------------------------------------------------------ drawing */

static double x_of(const plot_t *p, uint64_t time)
{
    double x = time <= p->t0 ? 0 : (double)(time - p->t0) / (double)p->span * p->pw;
    return p->px + (x > p->pw ? p->pw : x);
}

static double y_of(const plot_t *p, double bytes)
{
    return p->py + p->ph - bytes / p->ymax * p->ph;
}

static const char *exe_name(const tm_trace_t *t)
{
    const char *e = t->has_process && t->process.exe ? t->process.exe : "";
    const char *s = strrchr(e, '/');
    e = s && s[1] ? s + 1 : e;
    return e[0] ? e : "unknown program";
}

static void draw_title(const plot_t *p)
{
    fprintf(p->f, "<text class=\"title\" x=\"%.1f\" y=\"22\" font-size=\"15\" "
            "font-weight=\"bold\">Memory per tier: ", p->px);
    text_xml(p->f, exe_name(p->t));
    if (p->device < 0) {
        fputs(", all devices</text>\n", p->f);
        return;
    }
    const tm_device_t *d = tm_device(p->t, p->device);
    fprintf(p->f, ", device %" PRId32, p->device);
    if (d && d->name && d->name[0]) {
        fputs(" (", p->f);
        text_xml(p->f, d->name);
        fputs(")", p->f);
    }
    fputs("</text>\n", p->f);
}

static void draw_subtitle(const plot_t *p)
{
    char peak[32], when[32];
    fmt_bytes(p->peak, peak, sizeof(peak));
    fmt_time(p->peak_time - p->t0, when, sizeof(when));
    fprintf(p->f, "<text class=\"subtitle\" x=\"%.1f\" y=\"39\" fill=\"#555\">peak %s at %s; "
            "%zu iterations; %zu migrations; %zu memory samples", p->px, peak, when,
            p->t->niterations, p->nmigrations, p->nsamples);
    if (p->budget_max > 0 && !p->budget_shown) {
        char b[32];
        fmt_bytes(p->budget_max, b, sizeof(b));
        fprintf(p->f, "; GPU budget %s, above the scale", b);
    }
    fputs("</text>\n", p->f);
}

/* One legend entry at x: a swatch (rectangle, tick or dashed line) and a label. */
static double legend_item(const plot_t *p, double x, const char *swatch, const char *label)
{
    fprintf(p->f, "<g class=\"legend\">%s<text x=\"%.1f\" y=\"57\">%s</text></g>\n", swatch,
            x + 15, label);
    return x + 15 + 6.5 * (double)strlen(label) + 16;
}

static void draw_legend(const plot_t *p)
{
    char sw[256];
    double x = p->px;
    for (int k = 0; k < TRC_TIERS; k++) {
        snprintf(sw, sizeof(sw), "<rect x=\"%.1f\" y=\"48\" width=\"10\" height=\"10\" "
                 "fill=\"%s\"/>", x, tier_colour[k]);
        x = legend_item(p, x, sw, tier_label[k]);
    }
    static const char *const label[] = { "fetch", "evict" };
    for (int c = 0; c < 2 && p->nmigrations; c++) {
        snprintf(sw, sizeof(sw), "<line x1=\"%.1f\" y1=\"47\" x2=\"%.1f\" y2=\"59\" "
                 "stroke=\"%s\" stroke-width=\"2\"/>", x + 5, x + 5, mig_colour[c]);
        x = legend_item(p, x, sw, label[c]);
    }
    if (p->t->niterations) {
        snprintf(sw, sizeof(sw), "<line x1=\"%.1f\" y1=\"53\" x2=\"%.1f\" y2=\"53\" "
                 "stroke=\"#444\" stroke-dasharray=\"3 2\"/>", x, x + 11);
        x = legend_item(p, x, sw, "iteration");
    }
    if (p->budget_shown) {
        snprintf(sw, sizeof(sw), "<line x1=\"%.1f\" y1=\"53\" x2=\"%.1f\" y2=\"53\" "
                 "stroke=\"#c00\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\"/>", x, x + 11);
        legend_item(p, x, sw, "GPU budget");
    }
}

static void draw_y_axis(const plot_t *p, const axis_t *a)
{
    for (double v = 0; v <= p->ymax * (1 + 1e-9); v += a->step * a->unit) {
        double y = y_of(p, v);
        fprintf(p->f, "<line class=\"ygrid\" data-bytes=\"%.0f\" x1=\"%.1f\" y1=\"%.1f\" "
                "x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e3e3e3\"/>\n", v, p->px, y, p->px + p->pw, y);
        fprintf(p->f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", p->px - 6, y + 4);
        if (v == 0)
            fputs("0</text>\n", p->f);
        else
            fprintf(p->f, "%.*f %s</text>\n", a->decimals, v / a->unit, a->name);
    }
}

static void draw_x_axis(const plot_t *p)
{
    axis_t a = time_axis(p->span, p->pw);
    double label_y = p->py + p->ph + LANE + 18;
    for (double v = 0; v <= (double)p->span / a.unit * (1 + 1e-9); v += a.step) {
        uint64_t ns = (uint64_t)(v * a.unit + 0.5);
        double x = x_of(p, p->t0 + ns);
        fprintf(p->f, "<line class=\"xgrid\" data-ns=\"%" PRIu64 "\" x1=\"%.1f\" y1=\"%.1f\" "
                "x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e3e3e3\"/>\n", ns, x, p->py, x, p->py + p->ph);
        fprintf(p->f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.*f %s</text>\n", x,
                label_y, a.decimals, v, a.name);
    }
    fprintf(p->f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#555\">time since "
            "the trace started</text>\n", p->px + p->pw / 2, label_y + 17);
}

/* The top of area k from left to right: "M x y" then "H x V y" at every change. */
static void path_forward(const plot_t *p, const double *v)
{
    fprintf(p->f, "M%.1f %.1f", p->px, y_of(p, v[0]));
    for (unsigned c = 1; c < p->cols; c++)
        if (v[c] != v[c - 1])
            fprintf(p->f, "H%.1fV%.1f", p->px + c, y_of(p, v[c]));
    fprintf(p->f, "H%.1f", p->px + p->cols);
}

/* The bottom of an area from right to left (v NULL: the baseline), closing the path. */
static void path_back(const plot_t *p, const double *v)
{
    if (!v) {
        fprintf(p->f, "V%.1fH%.1fZ", y_of(p, 0), p->px);
        return;
    }
    fprintf(p->f, "V%.1f", y_of(p, v[p->cols - 1]));
    for (unsigned c = p->cols - 1; c > 0; c--)
        if (v[c] != v[c - 1])
            fprintf(p->f, "H%.1fV%.1f", p->px + c, y_of(p, v[c - 1]));
    fprintf(p->f, "H%.1fZ", p->px);
}

static void draw_areas(const plot_t *p)
{
    for (int k = 0; k < TRC_TIERS; k++) {
        if (!p->present[k])
            continue;
        fprintf(p->f, "<path class=\"area\" data-tier=\"%s\" fill=\"%s\" d=\"", tier_key[k],
                tier_colour[k]);
        path_forward(p, p->top[k]);
        path_back(p, k ? p->top[k - 1] : NULL);
        fputs("\"/>\n", p->f);
    }
}

/* The GPU budget: a dashed step line over the columns where it is known. */
static void draw_budget(const plot_t *p)
{
    if (!p->budget_shown)
        return;
    fputs("<path class=\"budget\" data-tier=\"gpu\" fill=\"none\" stroke=\"#c00\" "
          "stroke-width=\"1.5\" stroke-dasharray=\"6 3\" d=\"", p->f);
    for (unsigned c = 0; c < p->cols; c++) {
        double v = p->budget[c];
        if (v <= 0)
            continue;
        if (c == 0 || p->budget[c - 1] <= 0)
            fprintf(p->f, "M%.1f %.1f", p->px + c, y_of(p, v));
        else if (v != p->budget[c - 1])
            fprintf(p->f, "H%.1fV%.1f", p->px + c, y_of(p, v));
        if (c + 1 == p->cols || p->budget[c + 1] <= 0)
            fprintf(p->f, "H%.1f", p->px + c + 1);
    }
    fputs("\"/>\n", p->f);
}

/* One dashed line per iteration (at most one per pixel column), labelled with its index
 * where the previous label leaves room. */
static void draw_iterations(const plot_t *p)
{
    double last_line = -1, last_label = -1e9;
    for (size_t i = 0; i < p->t->niterations; i++) {
        const tm_iteration_t *it = &p->t->iterations[i];
        double x = x_of(p, it->time);
        if (last_line >= 0 && x - last_line < 1 && x >= last_line)
            continue;
        last_line = x;
        fprintf(p->f, "<line class=\"iteration\" data-index=\"%" PRIu64 "\" x1=\"%.1f\" "
                "y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\" stroke-dasharray=\"4 3\"/>\n",
                it->index, x, p->py, x, p->py + p->ph);
        if (x - last_label < 8 + 7 * 6.5)
            continue;
        last_label = x;
        fprintf(p->f, "<text class=\"iteration-label\" x=\"%.1f\" y=\"%.1f\" fill=\"#444\" "
                "font-size=\"10\">%" PRIu64 "</text>\n", x + 3, p->py + 11, it->index);
    }
}

static int mig_class(const trc_migration_t *m)
{
    if (m->from >= TRC_TIERS || m->to >= TRC_TIERS || m->from == m->to)
        return MIG_OTHER;
    return m->to < m->from ? MIG_FETCH : MIG_EVICT;
}

/* Ticks in the lane under the plot: one per column and class, fetches in the upper half,
 * evictions in the lower one, others across.  mark holds cols bytes per class. */
static void draw_migrations(const plot_t *p, unsigned char *mark)
{
    const tm_trace_t *t = p->t;
    for (size_t i = 0; i < t->nmigrations; i++) {
        const trc_migration_t *m = &t->migrations[i].m;
        if (p->device < 0 || m->device == p->device)
            mark[mig_class(m) * p->cols + column(p, m->start)] = 1;
    }
    double lane = p->py + p->ph + 3, half = (LANE - 2) / 2.0;
    for (int k = 0; k < MIG_CLASSES; k++) {
        double y1 = k == MIG_EVICT ? lane + half : lane;
        double y2 = k == MIG_FETCH ? lane + half : lane + 2 * half;
        int any = 0;
        for (unsigned c = 0; c < p->cols; c++) {
            if (!mark[k * p->cols + c])
                continue;
            if (!any++)
                fprintf(p->f, "<path class=\"migrations\" data-direction=\"%s\" stroke=\"%s\" "
                        "stroke-width=\"1\" d=\"", mig_key[k], mig_colour[k]);
            fprintf(p->f, "M%.1f %.1fV%.1f", p->px + c + 0.5, y1, y2);
        }
        if (any)
            fputs("\"/>\n", p->f);
    }
}

/* ------------------------------------------------------------------ the picture */

static void open_svg(const plot_t *p)
{
    fprintf(p->f, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"elixir-memory-plot\" "
            "width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" font-family=\"sans-serif\" "
            "font-size=\"11\">\n<rect class=\"background\" width=\"%u\" height=\"%u\" "
            "fill=\"#fff\"/>\n", p->w, p->h, p->w, p->h, p->w, p->h);
    draw_title(p);
}

static void close_svg(const plot_t *p)
{
    fprintf(p->f, "<rect class=\"frame\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
            "fill=\"none\" stroke=\"#999\"/>\n</svg>\n", p->px, p->py, p->pw, p->ph);
}

static void draw_empty(const plot_t *p)
{
    open_svg(p);
    fprintf(p->f, "<text class=\"empty\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
            "font-size=\"14\" fill=\"#666\">no memory samples ", p->px + p->pw / 2,
            p->py + p->ph / 2);
    if (p->device >= 0)
        fprintf(p->f, "for device %" PRId32 " ", p->device);
    fputs("in this trace</text>\n", p->f);
    close_svg(p);
}

/* Draws the selection; the buffers are allocated here.  0 or -ENOMEM. */
static int draw(plot_t *p)
{
    unsigned char *mark = calloc((size_t)p->cols * MIG_CLASSES, 1);
    int rc = mark ? 0 : -ENOMEM;
    for (int k = 0; k < TRC_TIERS && !rc; k++)
        if (!(p->top[k] = calloc(p->cols, sizeof(double))))
            rc = -ENOMEM;
    if (!rc && !(p->budget = calloc(p->cols, sizeof(double))))
        rc = -ENOMEM;
    if (!rc)
        rc = budget_columns(p);
    if (!rc) {
        p->peak_time = p->t0;
        reduce(p);
        /* The budget line is drawn where it does not squash the areas: up to 4x the peak. */
        p->budget_shown = p->budget_max > 0 && p->budget_max <= 4 * p->peak;
        double high = p->budget_shown && p->budget_max > p->peak ? p->budget_max : p->peak;
        axis_t a = byte_axis(high > 0 ? high : 1 << 20);
        double step = a.step * a.unit;
        p->ymax = step * (double)(uint64_t)((high > 0 ? high : 1) / step + 1 - 1e-9);
        for (size_t i = 0; i < p->t->nmigrations; i++)
            p->nmigrations += p->device < 0 || p->t->migrations[i].m.device == p->device;
        open_svg(p);
        draw_subtitle(p);
        draw_legend(p);
        draw_y_axis(p, &a);
        draw_x_axis(p);
        draw_areas(p);
        draw_budget(p);
        draw_iterations(p);
        draw_migrations(p, mark);
        close_svg(p);
    }
    free(mark);
    return rc;
}

/* Whether device d appears anywhere in the trace. */
static int known_device(const tm_trace_t *t, int32_t d)
{
    if (tm_device(t, d))
        return 1;
    for (size_t i = 0; i < t->nmemory; i++)
        if (t->memory[i].device == d)
            return 1;
    for (size_t i = 0; i < t->nops; i++)
        if (t->ops[i].device == d)
            return 1;
    return 0;
}

/* The picture's size (o's, or the default) and its plot area (one pixel column per column
 * of the area). */
static void layout(plot_t *p, const tx_plot_opts_t *o)
{
    p->w = o->width ? o->width : TX_PLOT_DEFAULT_W;
    p->h = o->height ? o->height : TX_PLOT_DEFAULT_H;
    p->px = M_LEFT;
    p->py = M_TOP;
    p->cols = p->w - M_LEFT - M_RIGHT;
    p->pw = p->cols;
    p->ph = p->h - M_TOP - M_BOTTOM;
}

/* The size and device of p (after layout) are ones tx_svg draws: 0 or -EINVAL. */
static int check_opts(const plot_t *p, char *err, size_t len)
{
    const tm_trace_t *t = p->t;
    if (p->w < TX_PLOT_MIN_W || p->w > TX_PLOT_MAX_W || p->h < TX_PLOT_MIN_H ||
        p->h > TX_PLOT_MAX_H)
        return text_fail(err, len, -EINVAL, "plot size %ux%u out of range: width %u to %u, "
                         "height %u to %u pixels", p->w, p->h, TX_PLOT_MIN_W, TX_PLOT_MAX_W,
                         TX_PLOT_MIN_H, TX_PLOT_MAX_H);
    if (p->device < -1)
        return text_fail(err, len, -EINVAL, "device %d: expected -1 (all devices) or a device "
                         "number", p->device);
    if (p->device >= 0 && !known_device(t, p->device)) {
        char list[256] = "";
        size_t at = 0;
        for (size_t i = 0; i < t->ndevices && at < sizeof(list); i++)
            at += (size_t)snprintf(list + at, sizeof(list) - at, "%s%" PRId32, i ? ", " : "",
                                   t->devices[i].device);
        return text_fail(err, len, -EINVAL, "device %d is not in this trace (devices: %s)",
                         p->device, at ? list : "none");
    }
    return 0;
}

int tx_svg(const tm_trace_t *t, const tx_plot_opts_t *o, FILE *out, char *err, size_t err_len)
{
    static const tx_plot_opts_t defaults = { -1, 0, 0 };
    o = o ? o : &defaults;
    plot_t p = { .t = t, .f = out, .device = o->device };
    layout(&p, o);
    int rc = check_opts(&p, err, err_len);
    if (rc < 0)
        return rc;
    rc = select_samples(&p);
    if (rc == 0) {
        time_range(&p);
        if (p.nsamples)
            rc = draw(&p);
        else
            draw_empty(&p);
    }
    for (int k = 0; k < TRC_TIERS; k++)
        free(p.top[k]);
    free(p.samples);
    free(p.slot);
    free(p.cur);
    free(p.budget);
    return text_finish(out, rc, "plot", err, err_len);
}
