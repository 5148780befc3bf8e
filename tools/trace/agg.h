/* SPDX-License-Identifier: MIT */
/*
 * agg.h - figures computed from a loaded trace, shared by the commands and the exporters.
 *
 * Every function reads the model only; arrays returned are malloc'd and owned by the caller.
 */
#ifndef ELIXIR_TRACE_AGG_H
#define ELIXIR_TRACE_AGG_H

#include "model.h"

/* Launches of one kernel name, on all devices. */
typedef struct tm_kernel_stat {
    const char *name;
    uint64_t launches;
    uint64_t timed;                    /* launches with device times */
    uint64_t total_ns, min_ns, max_ns; /* over the timed ones */
} tm_kernel_stat_t;

/* All kernels, sorted by total_ns (then launches) descending.  0 or -ENOMEM. */
int tm_kernel_stats(const tm_trace_t *t, tm_kernel_stat_t **out, size_t *n);

/* Migrations by direction, and how much of their time overlapped kernels on their device. */
typedef struct tm_migration_totals {
    uint64_t count[TRC_TIERS][TRC_TIERS];  /* [from][to] */
    uint64_t bytes[TRC_TIERS][TRC_TIERS];
    uint64_t busy_ns;                  /* union of migration intervals, all devices */
    uint64_t hidden_ns;                /* the part of busy_ns during which a kernel ran */
    uint64_t timed;                    /* migrations whose times are their copy's device
                                        * times (1.5: a planned move's TIMING record) */
    /* Both are taken per device and summed: the union of one device's migration intervals,
     * and the part of it during which a launch with known device times ran on that same
     * device (so hidden_ns <= busy_ns). */
} tm_migration_totals_t;

int tm_migration_totals(const tm_trace_t *t, tm_migration_totals_t *out);

/* The same over the migrations the plan issued (TRC_MIG_PLANNED, 1.5) or over the others
 * (the reactive engine's), with untimed: how many of them ran wholly outside the span of
 * their device's kernels with device times (the profiled iterations), where nothing can
 * count as hidden. */
enum { TM_MIG_ALL, TM_MIG_PLANNED, TM_MIG_REACTIVE };
int tm_migration_totals_of(const tm_trace_t *t, int which, tm_migration_totals_t *out,
                           uint64_t *untimed);

/* The most bytes of device `device`'s allocations live at once (the program's footprint on
 * it, wherever the bytes were), in *peak; -ENOMEM. */
int tm_peak_allocated(const tm_trace_t *t, int32_t device, uint64_t *peak);

/* One iteration: from its mark to the next (the last one to the trace's end). */
typedef struct tm_iter_stat {
    uint64_t index, start, end;
    uint64_t launches, migrations, migrated_bytes;
} tm_iter_stat_t;

int tm_iteration_stats(const tm_trace_t *t, tm_iter_stat_t **out, size_t *n);

/* Iteration times, the one definition every command and export uses: an iteration runs from
 * its mark to the next, so they are taken over the iterations a next mark closes, all but the
 * last (which runs on to the end of the trace, teardown included).  With a single mark none
 * is closed and there is no mean (measured 0).  All 0 when there is no mark.  0 or -ENOMEM. */
typedef struct tm_iter_times {
    uint64_t marks;                    /* iteration marks in the trace */
    uint64_t measured;                 /* iterations the times are taken over: marks - 1 */
    uint64_t mean_ns, min_ns, max_ns;  /* 0 when measured is 0 */
} tm_iter_times_t;

int tm_iteration_times(const tm_trace_t *t, tm_iter_times_t *out);

/* Those times as one line of text, the same in summary and report: "4 marked; over 3 between
 * marks: mean 3.00 us, min 2.00 us, max 4.00 us", "1 marked; none closed by a next mark: no
 * mean" or "none marked"; microseconds as "µs" when utf8.  Returns buf. */
const char *tm_iteration_text(const tm_iter_times_t *x, int utf8, char *buf, size_t len);

/* The allocations, largest first (equal sizes by id): a malloc'd array of t->nallocs
 * pointers into t, NULL when out of memory. */
const tm_alloc_t **tm_allocs_by_size(const tm_trace_t *t);
/* That order as a qsort comparator over `const tm_alloc_t *` elements. */
int tm_alloc_cmp_size(const void *a, const void *b);

/* The warning that the trace's device times are incomplete (its DROPPED records), in buf, for
 * records CUPTI dropped when `cupti`, else for those other timing sources lost; NULL when
 * that source lost none.  Every command and export that shows kernel times says it. */
const char *tm_dropped_text(const tm_trace_t *t, int cupti, char *buf, size_t len);

/* A call site as text: "symbol+0xoff (module)" frames joined by " < ", innermost first, at
 * most `frames` frames (0: all), symbolised from the modules' ELF symbol tables when they can
 * be read, "module+0xoff" otherwise.  Writes at most len bytes (NUL-terminated). */
void tm_stack_text(const trc_stack_t *s, unsigned frames, char *buf, size_t len);

/* ------------------------------------------------------------------ sites.c */

/* What a Python source file is: the program's own, an installed package (under
 * site-packages or dist-packages), or the interpreter's standard library (.../lib/pythonX.Y/
 * otherwise, or a frozen module); and that kind's name ("program", "package", "stdlib"). */
enum { TM_PY_PROGRAM, TM_PY_PACKAGE, TM_PY_STDLIB };
int tm_py_kind(const char *file);
const char *tm_py_kind_name(int kind);
/* A Python call site as text: "file:line function" frames joined by " < ", innermost first,
 * at most `frames` (0: all), only those of the kind nearest the program among the stack's
 * (its own files, else packages, else the standard library); file is the base name.  ""
 * when s has no Python frames. */
void tm_py_site_text(const trc_stack_t *s, unsigned frames, char *buf, size_t len);
/* A call site as `elixir-trace` shows it: the Python one when s has Python frames, else the
 * native one (tm_stack_text). */
void tm_site_text(const trc_stack_t *s, unsigned frames, char *buf, size_t len);

/* Allocations of one call site (its text at a given depth). */
typedef struct tm_site {
    char *text;                        /* "-" for allocations without a call site */
    int python;                        /* a Python call site */
    uint64_t allocs, bytes, live_bytes;  /* live: never freed in the trace */
} tm_site_t;

/* Groups allocations a[0..n) by call site text (at most `frames` frames each, 0: all),
 * largest total first (equal totals by text): a malloc'd array in *out, its size in *nout;
 * -ENOMEM.  Free it with tm_sites_free. */
int tm_sites(const tm_alloc_t **a, size_t n, unsigned frames, tm_site_t **out, size_t *nout);
void tm_sites_free(tm_site_t *v, size_t n);

#endif
