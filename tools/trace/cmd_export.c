/* SPDX-License-Identifier: MIT */
/*
 * cmd_export.c - `elixir-trace timeline`, `plot` and `report`: the exporters of export.h
 * writing to a file.
 *
 * An output file is never replaced unless --force is given, and never left half-written:
 * the exporter writes to a new temporary file in the same directory, which is flushed to
 * disk and then renamed over the target (--force) or linked to it only if it still does not
 * exist (renameat2 with RENAME_NOREPLACE, else link + unlink), so a reader sees the old file
 * or the whole new one.  "-" writes to standard output.  A file written is said on stderr:
 * "elixir-trace plot: wrote OUT.svg (N bytes)" ("replaced" with --force over a file).
 */
#include "cli.h"
#include "export.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

typedef cli_export_fn export_fn;

/* ------------------------------------------------------------------ where the output goes */

typedef enum out_kind {
    OUT_STDOUT,                        /* "-" */
    OUT_NEW,                           /* nothing there: create, never replacing */
    OUT_REPLACE,                       /* a file (or a dangling link) there, and --force */
    OUT_DIRECT,                        /* a device, pipe or socket: written in place */
} out_kind_t;

/* Decides how to write out, before any work is done: *target is where the new file goes
 * (a symbolic link to a file is followed, so the file is replaced, not the link).  An
 * existing file or dangling link without --force, a directory, or a path that cannot be
 * examined is refused with a message (-1). */
static int classify(const cli_cmd_t *c, const char *out, int force, char *target)
{
    struct stat lst, st;
    snprintf(target, PATH_MAX, "%s", out);
    if (strcmp(out, "-") == 0)
        return OUT_STDOUT;
    if (lstat(out, &lst) != 0) {
        if (errno == ENOENT)
            return OUT_NEW;
        cli_fail(c, "%s: %s", out, strerror(errno));
        return -1;
    }
    int followed = stat(out, &st) == 0;
    if (followed && S_ISDIR(st.st_mode)) {
        cli_fail(c, "%s is a directory", out);
        return -1;
    }
    if (followed && !S_ISREG(st.st_mode))
        return OUT_DIRECT;
    if (!force) {
        cli_fail(c, "%s exists (--force replaces it)", out);
        return -1;
    }
    if (followed && S_ISLNK(lst.st_mode) && !realpath(out, target))
        snprintf(target, PATH_MAX, "%s", out);
    return OUT_REPLACE;
}

/* ------------------------------------------------------------------ atomic files */

/* Creates "DIR/.BASE.XXXXXX" next to out, with the mode a new file would get. */
static int make_temp(const char *out, char *tmp, size_t len)
{
    const char *slash = strrchr(out, '/');
    int dlen = slash ? (int)(slash - out + 1) : 0;
    if ((size_t)snprintf(tmp, len, "%.*s.%s.XXXXXX", dlen, out, slash ? slash + 1 : out) >=
        len)
        return -ENAMETOOLONG;
    int fd = mkstemp(tmp);
    if (fd < 0)
        return -errno;
    mode_t mask = umask(0);
    umask(mask);
    if (fchmod(fd, 0666 & ~mask) < 0) {
        int rc = -errno;
        close(fd);
        unlink(tmp);
        return rc;
    }
    return fd;
}

/* Puts the finished temporary file in place of out. */
static int publish(const char *tmp, const char *out, int replace)
{
    if (replace)
        return rename(tmp, out) < 0 ? -errno : 0;
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, out, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
        return -errno;
    if (link(tmp, out) < 0)            /* file systems without RENAME_NOREPLACE */
        return -errno;
    unlink(tmp);
    return 0;
}

/* Closes f, after flushing it to disk when it is a file; 0 or the first error. */
static int finish(FILE *f, int is_file)
{
    int rc = fflush(f) == 0 && !ferror(f) ? 0 : -(errno ? errno : EIO);
    if (rc == 0 && is_file && fsync(fileno(f)) < 0)
        rc = -errno;
    if (fclose(f) != 0 && rc == 0)
        rc = -(errno ? errno : EIO);
    return rc;
}

/* Runs fn into a temporary file and publishes it as out: 0 or a negative errno. */
static int write_file(const char *out, int replace, export_fn fn, const tm_trace_t *t,
                      const void *arg, char *err, size_t len)
{
    char tmp[PATH_MAX + 16];
    int fd = make_temp(out, tmp, sizeof(tmp)), rc = fd;
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (fd >= 0 && !f) {
        rc = -errno;
        close(fd);
        unlink(tmp);
    }
    if (!f)
        return rc;
    errno = 0;
    rc = fn(t, arg, f, err, len);
    int frc = finish(f, 1);
    rc = rc < 0 ? rc : frc;
    if (rc == 0)
        rc = publish(tmp, out, replace);
    if (rc < 0)
        unlink(tmp);
    return rc;
}

/* Runs fn into stdout or into a device, pipe or socket. */
static int write_stream(const char *out, out_kind_t kind, export_fn fn, const tm_trace_t *t,
                        const void *arg, char *err, size_t len)
{
    if (kind == OUT_STDOUT) {
        errno = 0;
        int rc = fn(t, arg, stdout, err, len);
        return rc < 0 ? rc : fflush(stdout) == 0 && !ferror(stdout) ? 0 : -(errno ? errno : EIO);
    }
    int fd = open(out, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        int rc = -errno;
        if (fd >= 0)
            close(fd);
        return rc;
    }
    errno = 0;
    int rc = fn(t, arg, f, err, len), frc = finish(f, 0);
    return rc < 0 ? rc : frc;
}

/* "elixir-trace CMD: wrote OUT (N bytes)" on stderr, once the file is in place (stdout stays
 * the output's alone when it is "-"). */
static void said_written(const cli_cmd_t *c, const char *out, int replaced)
{
    struct stat st;

    if (stat(out, &st) == 0)
        fprintf(stderr, "elixir-trace %s: %s %s (%lld bytes)\n", c->name,
                replaced ? "replaced" : "wrote", out, (long long)st.st_size);
}

int cli_export(const cli_cmd_t *c, const tm_trace_t *t, const char *out, cli_export_fn fn,
               const void *arg)
{
    char target[PATH_MAX], err[512] = "";
    int kind = classify(c, out, cli_get(c, "--force") != NULL, target), rc;
    if (kind < 0)
        return CLI_EXIT_FAIL;
    if (kind == OUT_NEW || kind == OUT_REPLACE)
        rc = write_file(target, kind == OUT_REPLACE, fn, t, arg, err, sizeof(err));
    else
        rc = write_stream(out, (out_kind_t)kind, fn, t, arg, err, sizeof(err));
    if (rc < 0)
        return cli_fail(c, "%s: %s", out, err[0] ? err : strerror(-rc));
    if (kind == OUT_NEW || kind == OUT_REPLACE)
        said_written(c, out, kind == OUT_REPLACE);
    return 0;
}

int cli_export_check(const cli_cmd_t *c, const char *out)
{
    char target[PATH_MAX];
    return classify(c, out, cli_get(c, "--force") != NULL, target) < 0 ? CLI_EXIT_FAIL : 0;
}

/* Loads the trace and writes out with fn: 0, or prints why and returns 1.  The output's
 * place is checked before the trace is read, so a refused one costs nothing. */
static int export_to(const cli_cmd_t *c, const char *trace, const char *out, export_fn fn,
                     const void *arg)
{
    char target[PATH_MAX];
    if (classify(c, out, cli_get(c, "--force") != NULL, target) < 0)
        return CLI_EXIT_FAIL;
    tm_trace_t t;
    cli_load(c, trace, &t);
    int rc = cli_export(c, &t, out, fn, arg);
    tm_free(&t);
    return rc;
}

/* ------------------------------------------------------------------ the exporters */

static int do_chrome(const tm_trace_t *t, const void *arg, FILE *out, char *err, size_t len)
{
    (void)arg;
    return tx_chrome(t, out, err, len);
}

static int do_svg(const tm_trace_t *t, const void *arg, FILE *out, char *err, size_t len)
{
    return tx_svg(t, arg, out, err, len);
}

static int do_html(const tm_trace_t *t, const void *arg, FILE *out, char *err, size_t len)
{
    (void)arg;
    return tx_html(t, out, err, len);
}

/* ------------------------------------------------------------------ timeline */

static cli_opt_t timeline_opts[] = {
    { "--chrome", "OUT.json", "write Chrome trace events to OUT.json ('-': stdout)", NULL },
    { "--force", NULL, "replace OUT.json if it exists", NULL },
    CLI_OPT_PARTIAL,
    CLI_OPT_END,
};

static int run_timeline(const cli_cmd_t *c, char **pos)
{
    const char *out = cli_get(c, "--chrome");
    if (!out)
        cli_usage(c, "--chrome OUT.json is required (the only timeline format)");
    if (!out[0])
        cli_usage(c, "--chrome: empty file name");
    return export_to(c, pos[0], out, do_chrome, NULL);
}

const cli_cmd_t cmd_timeline = {
    .name = "timeline",
    .args = "FILE --chrome OUT.json",
    .npos = 1,
    .summary = "Chrome trace events (Perfetto, chrome://tracing): streams, copies, "
               "memory, migrations",
    .details = "Writes the trace as Chrome trace events, which Perfetto (ui.perfetto.dev)\n"
               "and chrome://tracing open: a process per device, a track per stream and\n"
               "per migration direction, memory counters per tier, migrations as slices\n"
               "with arrows from the operation that caused them, iteration marks.",
    .opts = timeline_opts,
    .run = run_timeline,
};

/* ------------------------------------------------------------------ plot */

static cli_opt_t plot_opts[] = {
    { "--device", "N", "plot device N only (default: all devices summed)", NULL },
    { "--size", "WxH", "picture size in pixels (default 960x420)", NULL },
    { "--force", NULL, "replace OUT.svg if it exists", NULL },
    CLI_OPT_PARTIAL,
    CLI_OPT_END,
};

/* "WxH" within the sizes tx_svg draws (TX_PLOT_MIN_W ... in export.h). */
static void parse_size(const cli_cmd_t *c, const char *s, tx_plot_opts_t *o)
{
    char *x = NULL, *end = NULL;
    unsigned long w = strtoul(s, &x, 10), h = 0;
    if (x != s && (*x == 'x' || *x == 'X') && x[1] >= '0' && x[1] <= '9')
        h = strtoul(x + 1, &end, 10);
    if (s[0] < '0' || s[0] > '9' || !end || *end || w < TX_PLOT_MIN_W || w > TX_PLOT_MAX_W ||
        h < TX_PLOT_MIN_H || h > TX_PLOT_MAX_H)
        cli_usage(c, "--size: '%s' is not a picture size (accepted: WxH, width %u to %u, "
                  "height %u to %u, e.g. 1280x540)", s, TX_PLOT_MIN_W, TX_PLOT_MAX_W,
                  TX_PLOT_MIN_H, TX_PLOT_MAX_H);
    o->width = (unsigned)w;
    o->height = (unsigned)h;
}

static int run_plot(const cli_cmd_t *c, char **pos)
{
    tx_plot_opts_t o = { .device = -1 };
    const char *dev = cli_get(c, "--device"), *size = cli_get(c, "--size");
    if (dev && (o.device = cli_device(c, "--device", dev)) == TRC_DEVICE_HOST)
        cli_usage(c, "--device: 'host' has no memory tiers (accepted: a device number 0, 1, "
                  "...)");
    if (size)
        parse_size(c, size, &o);
    if (!pos[1][0])
        cli_usage(c, "OUT.svg: empty file name");
    return export_to(c, pos[0], pos[1], do_svg, &o);
}

const cli_cmd_t cmd_plot = {
    .name = "plot",
    .args = "FILE OUT.svg",
    .npos = 2,
    .summary = "SVG picture: memory per tier over time, iterations, migrations",
    .details = "Draws the memory resident in each tier over time as stacked areas, with\n"
               "iteration marks and migrations, into an SVG file ('-': stdout).",
    .opts = plot_opts,
    .run = run_plot,
};

/* ------------------------------------------------------------------ report */

static cli_opt_t report_opts[] = {
    { "--force", NULL, "replace OUT.html if it exists", NULL },
    CLI_OPT_PARTIAL,
    CLI_OPT_END,
};

static int run_report(const cli_cmd_t *c, char **pos)
{
    if (!pos[1][0])
        cli_usage(c, "OUT.html: empty file name");
    return export_to(c, pos[0], pos[1], do_html, NULL);
}

const cli_cmd_t cmd_report = {
    .name = "report",
    .args = "FILE OUT.html",
    .npos = 2,
    .summary = "self-contained HTML report: the plot and the summary figures",
    .details = "Writes one HTML file with no external references: the memory plot, the\n"
               "summary figures, top kernels and allocations with call sites, migration\n"
               "totals and iterations ('-': stdout).",
    .opts = report_opts,
    .run = run_report,
};
