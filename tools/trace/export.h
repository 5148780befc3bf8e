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

/* The picture sizes tx_svg draws, in pixels; the command line accepts the same. */
#define TX_PLOT_MIN_W     320
#define TX_PLOT_MAX_W     16384
#define TX_PLOT_MIN_H     200
#define TX_PLOT_MAX_H     16384
#define TX_PLOT_DEFAULT_W 960
#define TX_PLOT_DEFAULT_H 420

typedef struct tx_plot_opts {
    int device;                        /* -1: all devices summed */
    unsigned width, height;            /* pixels; 0: TX_PLOT_DEFAULT_W x TX_PLOT_DEFAULT_H */
} tx_plot_opts_t;

/* SVG: memory per tier over time, stacked areas, iteration marks as vertical lines,
 * migrations as ticks along the time axis, axes with units, a legend.  No memory samples
 * for the selection: a picture with a message saying so, and 0.  A size outside
 * TX_PLOT_MIN_W..TX_PLOT_MAX_W x TX_PLOT_MIN_H..TX_PLOT_MAX_H, a device below -1 or one
 * that is not in the trace: -EINVAL (and nothing written). */
int tx_svg(const tm_trace_t *t, const tx_plot_opts_t *o, FILE *out, char *err, size_t err_len);

/* One HTML file with no external references: the plot (inline SVG), the summary figures,
 * top kernels, top allocations with call sites, migration totals, iterations. */
int tx_html(const tm_trace_t *t, FILE *out, char *err, size_t err_len);

#endif
