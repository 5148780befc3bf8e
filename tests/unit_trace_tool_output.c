/* SPDX-License-Identifier: MIT */
/*
 * unit_trace_tool_output.c - the output files of `timeline`, `plot` and `report`.
 *
 * Each command writes its file (mode 0666 less the umask, not the temporary file's 0600),
 * with the content of its exporter (Chrome JSON parsed back with python3, an SVG of the
 * size asked for, an HTML page); an existing file, or a dangling symbolic link, is never
 * replaced without --force (exit 1, a message naming it, the old content intact) and is
 * replaced with it; no temporary file is left behind; a directory that does not exist is
 * an error naming the path; "-" writes to standard output; devices are written in place,
 * directories refused, links to files followed; write errors are reported.  A file written
 * is said on stderr, with its size ("wrote OUT (N bytes)", "replaced" with --force), and
 * nothing is said for "-".
 */
#include "unit_trace_tool.h"

#include <dirent.h>

static const char *trace;

static void make_trace(void)
{
    trace = tt_path("run.trace");
    trc_writer_t *w = tt_writer(trace, 0);
    uint32_t k = tt_str(w, "step");
    TT_EMIT(trc_emit_device(w, 0, &(trc_device_t){ 0, tt_str(w, "Sim"), 1ull << 30, 9, 0, 1,
                                                   NULL }));
    for (uint64_t i = 0; i < 20; i++) {
        uint64_t t = 1000 * (i + 1);
        if (i % 5 == 0)
            TT_EMIT(trc_emit_iteration(w, t, &(trc_iteration_t){ i / 5 }));
        trc_launch_t l = { .id = i + 1, .func_id = k, .span = { 1, t + 10, t + 500 } };
        TT_EMIT(trc_emit_launch(w, t, &l));
        trc_memory_t m = { 0, { (i % 7) << 20, 0, (i % 3) << 20, 0 } };
        TT_EMIT(trc_emit_memory(w, t + 1, &m));
    }
    tt_close(w);
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        exit(1);
}

/* No file of the scratch directory is a leftover temporary (".NAME.XXXXXX"). */
static void no_temporaries(void)
{
    DIR *d = opendir(tt_dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] == '.' && strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
            strncmp(e->d_name, ".std", 4) && strcmp(e->d_name, ".json"))
            TT_FAIL("temporary file left behind: %s", e->d_name);
    if (d)
        closedir(d);
}

static void check_mode(const char *path)
{
    struct stat st;
    TT_CHECK("stat", 0, stat(path, &st));
    TT_CHECK("mode (umask 022)", 0644, st.st_mode & 0777);
}

/* stderr says "elixir-trace CMD: VERB PATH (N bytes)", N the file's size, on a line of its
 * own and nothing else. */
static void said(const tt_result_t *r, const char *cmd, const char *verb, const char *path)
{
    struct stat st;
    char want[PATH_MAX + 128];

    TT_CHECK("stat", 0, stat(path, &st));
    snprintf(want, sizeof(want), "elixir-trace %s: %s %s (%lld bytes)\n", cmd, verb, path,
             (long long)st.st_size);
    if (strcmp(r->err, want) != 0)
        TT_FAIL("expected stderr \"%s\", got \"%s\"", want, r->err);
}

static void timeline(void)
{
    const char *out = tt_path("t.json");
    tt_result_t r = tt_run("timeline", trace, "--chrome", out, NULL);
    TT_CHECK("timeline exit status", 0, r.status);
    said(&r, "timeline", "wrote", out);
    tt_free(&r);
    char *json = tt_slurp(out);
    TT_JSON(json, "'traceEvents' in d and len(d['traceEvents']) > 20", "True");
    free(json);
    check_mode(out);
    r = tt_run("timeline", trace, "--chrome=-", NULL);
    TT_CHECK("timeline to stdout", 0, r.status);
    TT_JSON(r.out, "'traceEvents' in d", "True");
    TT_HASNT(r.err, "wrote");
    tt_free(&r);
}

static void refuse_and_force(void)
{
    const char *out = tt_path("p.svg");
    put(out, "KEEP");
    tt_result_t r = tt_run("plot", trace, out, NULL);
    TT_CHECK("plot over an existing file", 1, r.status);
    TT_LINE(r.err, "elixir-trace plot: ", out, "exists (--force replaces it)");
    tt_free(&r);
    char *kept = tt_slurp(out);
    TT_HAS(kept, "KEEP");
    free(kept);
    r = tt_run("plot", trace, out, "--force", "--size", "1280x540", NULL);
    TT_CHECK("plot --force", 0, r.status);
    said(&r, "plot", "replaced", out);
    tt_free(&r);
    char *svg = tt_slurp(out);
    TT_HAS(svg, "<svg");
    TT_HAS(svg, "width=\"1280\" height=\"540\"");
    TT_HASNT(svg, "KEEP");
    free(svg);
    check_mode(out);
    const char *link = tt_path("dangling.html");
    TT_CHECK("symlink", 0, symlink(tt_path("nowhere"), link));
    r = tt_run("report", trace, link, NULL);
    TT_CHECK("report over a dangling link", 1, r.status);
    TT_LINE(r.err, link, "exists");
    tt_free(&r);
}

static void report(void)
{
    const char *out = tt_path("r.html");
    tt_result_t r = tt_run("report", trace, out, NULL);
    TT_CHECK("report exit status", 0, r.status);
    said(&r, "report", "wrote", out);
    tt_free(&r);
    char *html = tt_slurp(out);
    TT_HAS(html, "<html");
    TT_HAS(html, "<svg");
    free(html);
    const char *bad = tt_path("no-such-dir/r.html");
    r = tt_run("report", trace, bad, NULL);
    TT_CHECK("report into a missing directory", 1, r.status);
    TT_LINE(r.err, "elixir-trace report: ", bad, "No such file or directory");
    tt_free(&r);
}

/* Devices are written in place, never replaced; directories are refused; a symbolic link
 * to a file is followed by --force (the file is replaced, the link stays); write errors
 * (a full device, a full standard output) are exit 1 with the reason.  --force is never
 * given with a device here. */
static void special_targets(void)
{
    struct stat st;
    tt_result_t r = tt_run("timeline", trace, "--chrome", "/dev/null", NULL);
    TT_CHECK("timeline into /dev/null", 0, r.status);
    TT_CHECK("/dev/null is still a device", 1, stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));
    tt_free(&r);
    r = tt_run("timeline", trace, "--chrome", "/dev/full", NULL);
    TT_CHECK("timeline into /dev/full", 1, r.status);
    TT_LINE(r.err, "elixir-trace timeline: /dev/full: ");   /* the exporter says why */
    TT_CHECK("/dev/full is still a device", 1, stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode));
    tt_free(&r);
    char *sh[] = { "sh", "-c", "\"$0\" kernels \"$1\" > /dev/full", (char *)tt_tool(),
                   (char *)trace, NULL };
    r = tt_exec(sh);
    TT_CHECK("kernels into a full standard output", 1, r.status);
    TT_LINE(r.err, "elixir-trace kernels: standard output: No space left on device");
    tt_free(&r);
    r = tt_run("plot", trace, tt_dir, "--force", NULL);
    TT_CHECK("plot into a directory", 1, r.status);
    TT_LINE(r.err, tt_dir, "is a directory");
    tt_free(&r);
    const char *file = tt_path("real.svg"), *link = tt_path("link.svg");
    put(file, "OLD");
    TT_CHECK("symlink", 0, symlink(file, link));
    r = tt_run("plot", trace, link, "--force", NULL);
    TT_CHECK("plot --force through a link", 0, r.status);
    tt_free(&r);
    char *svg = tt_slurp(file);
    TT_HAS(svg, "<svg");
    free(svg);
    TT_CHECK("the link is still a link", 1, lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
}

int main(void)
{
    tt_init();
    umask(022);
    make_trace();
    timeline();
    refuse_and_force();
    report();
    special_targets();
    no_temporaries();
    return tt_done();
}
