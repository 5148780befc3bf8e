/* SPDX-License-Identifier: MIT */
/*
 * cli.h - elixir-trace's command-line layer: the command table, option parsing, value
 * parsing, and the commands themselves.  The commands only read the model (model.h) and the
 * shared figures (agg.h); this layer turns them into text (text.h).
 *
 * Exit status: 0 success, 1 the output could not be produced (an output file that exists,
 * an I/O or exporter error), 2 a usage error or a trace that cannot be read.
 */
#ifndef ELIXIR_TRACE_CLI_H
#define ELIXIR_TRACE_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "agg.h"
#include "model.h"
#include "text.h"

#define CLI_EXIT_FAIL  1
#define CLI_EXIT_USAGE 2

/* One option of a command; `value` is filled by the parser. */
typedef struct cli_opt {
    const char *name;                  /* "--top" */
    const char *arg;                   /* "N"; NULL for a flag */
    const char *help;
    const char *value;                 /* parsed: the argument, "" for a flag; NULL: absent */
} cli_opt_t;

typedef struct cli_cmd cli_cmd_t;
struct cli_cmd {
    const char *name;
    const char *args;                  /* positional arguments for the usage line */
    int npos;                          /* how many positional arguments it takes */
    const char *summary;               /* one line for `elixir-trace --help` */
    const char *details;               /* paragraph(s) for `elixir-trace CMD --help` */
    cli_opt_t *opts;                   /* ends with a NULL name */
    int (*run)(const cli_cmd_t *c, char **pos);
};

/* Every command that reads a trace takes --partial (cli_load reads it); every table ends
 * with CLI_OPT_END. */
#define CLI_OPT_PARTIAL                                                                       \
    { "--partial", NULL, "read a damaged trace up to its last whole record", NULL }
#define CLI_OPT_END     { NULL, NULL, NULL, NULL }

/* ------------------------------------------------------------------ main.c */

/* Prints "elixir-trace CMD: <message>" and a hint to stderr, exits 2. */
__attribute__((format(printf, 2, 3), noreturn)) void cli_usage(const cli_cmd_t *c,
                                                               const char *fmt, ...);
/* Prints "elixir-trace CMD: <message>" to stderr and returns CLI_EXIT_FAIL (1). */
__attribute__((format(printf, 2, 3))) int cli_fail(const cli_cmd_t *c, const char *fmt, ...);
/* The value of an option of c (NULL when absent); cli_get_or: dflt when absent. */
const char *cli_get(const cli_cmd_t *c, const char *name);
const char *cli_get_or(const cli_cmd_t *c, const char *name, const char *dflt);
/* Loads a trace for command c: prints the warning of a partial or unclosed trace; on an
 * error prints it and exits 2.  --partial is read from c's options. */
void cli_load(const cli_cmd_t *c, const char *path, tm_trace_t *t);

/* ------------------------------------------------------------------ cmd_export.c */

/* Writes out ('-': stdout) with fn, never replacing a file unless the command's --force is
 * given, never leaving one half-written, and says on stderr what it wrote: 0, or prints why
 * and returns CLI_EXIT_FAIL. */
typedef int (*cli_export_fn)(const tm_trace_t *t, const void *arg, FILE *out, char *err,
                             size_t len);
int cli_export(const cli_cmd_t *c, const tm_trace_t *t, const char *out, cli_export_fn fn,
               const void *arg);
/* Whether cli_export could write out (as it judges it, before any work): 0, or prints why
 * and returns CLI_EXIT_FAIL. */
int cli_export_check(const cli_cmd_t *c, const char *out);

/* ------------------------------------------------------------------ fmt.c */

/* Option values: each exits 2 through cli_usage with the accepted values when bad. */
uint64_t cli_count(const cli_cmd_t *c, const char *opt, const char *s);
/* The count given to option opt of c, or dflt when it is absent. */
uint64_t cli_count_opt(const cli_cmd_t *c, const char *opt, uint64_t dflt);
uint64_t cli_size(const cli_cmd_t *c, const char *opt, const char *s);
int32_t cli_device(const cli_cmd_t *c, const char *opt, const char *s);

/* Text of a device ("0", "host"). */
const char *fmt_device(int32_t d, char buf[32]);

/* ------------------------------------------------------------------ commands */

extern const cli_cmd_t cmd_summary, cmd_allocs, cmd_kernels, cmd_diff, cmd_timeline,
    cmd_plot, cmd_report, cmd_plan;

/* cmd_tables.c, shared with summary: allocations sorted by size (largest first), kernels as
 * tm_kernel_stats sorts them; each prints at most `top` rows (0: all). */
void print_alloc_table(const tm_trace_t *t, const tm_alloc_t **v, size_t n, size_t top,
                       unsigned depth);
void print_kernel_table(const tm_kernel_stat_t *k, size_t n, size_t top);
/* cmd_tables.c, shared with summary: allocations v[0..n) grouped by call site (tm_sites),
 * largest total first, at most `top` rows (0: all), `depth` frames per site. */
void print_site_table(const tm_alloc_t **v, size_t n, size_t top, unsigned depth);
/* cmd_summary.c, shared with kernels: a line per timing source that lost device-time records
 * (DROPPED), since the times that follow leave out the operations those records were of. */
void print_dropped(const tm_trace_t *t);
/* summary_plan.c: the plan section of summary (format 1.5; one line or nothing without a
 * plan). */
void print_plan(const tm_trace_t *t);

#endif
