/* SPDX-License-Identifier: MIT */
/*
 * export.h - elixir-trace's pictures and exports: Chrome trace events, an SVG memory plot and
 * a self-contained HTML report.  Each writes to `out` and returns 0 or a negative errno
 * (with `err` saying why); they read the model (model.h) and the shared figures (agg.h).
 */
#ifndef ELIXIR_TRACE_EXPORT_H
#define ELIXIR_TRACE_EXPORT_H

#include <stdio.h>

#include "model.h"

/* Chrome trace event format (JSON object with "traceEvents"), which Perfetto and
 * chrome://tracing open: a process per device, a track per stream and per copy direction of
 * the shim's migrations, counters of bytes per tier, migrations as slices with flow arrows
 * from the kernel or copy that caused them, iteration marks as instant events. */
int tx_chrome(const tm_trace_t *t, FILE *out, char *err, size_t err_len);

typedef struct tx_plot_opts {
    int device;                        /* -1: all devices summed */
    unsigned width, height;            /* pixels; 0: 960 x 420 */
} tx_plot_opts_t;

/* SVG: memory per tier over time, stacked areas, iteration marks as vertical lines,
 * migrations as ticks along the time axis, axes with units, a legend. */
int tx_svg(const tm_trace_t *t, const tx_plot_opts_t *o, FILE *out, char *err, size_t err_len);

/* One HTML file with no external references: the plot (inline SVG), the summary figures,
 * top kernels, top allocations with call sites, migration totals, iterations. */
int tx_html(const tm_trace_t *t, FILE *out, char *err, size_t err_len);

#endif
