/* SPDX-License-Identifier: MIT */
/*
 * unit_trace_tool.h - helpers for the tests of elixir-trace (tests/unit_trace_tool_*.c).
 *
 * Each test writes traces with the tracer's writer into a scratch directory (removed at
 * exit), runs $BUILD/bin/elixir-trace on them (the test skips with 77 when the tool is not
 * built) and checks its exit status, standard output and standard error.  JSON output is
 * checked with python3's json module, which also answers questions about it.
 */
#ifndef UNIT_TRACE_TOOL_H
#define UNIT_TRACE_TOOL_H

#include "../tracer/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int tt_failures;
static const char *tt_shown;           /* the output last printed in full with a failure */
static char tt_dir[] = "/tmp/unit_trace_tool.XXXXXX";

#define TT_FAIL(...)                                                                          \
    do {                                                                                      \
        printf("FAIL %s:%d: ", __func__, __LINE__);                                           \
        printf(__VA_ARGS__);                                                                  \
        printf("\n");                                                                         \
        if (++tt_failures > 30)                                                               \
            exit(1);                                                                          \
    } while (0)

#define TT_CHECK(what, expected, got)                                                         \
    do {                                                                                      \
        int64_t e_ = (int64_t)(expected), g_ = (int64_t)(got);                                \
        if (e_ != g_)                                                                         \
            TT_FAIL("%s: expected %" PRId64 ", got %" PRId64, what, e_, g_);                  \
    } while (0)

/* Some line of text contains every one of the given strings (NULL-terminated list). */
#define TT_LINE(text, ...) tt_expect_line(__func__, __LINE__, (text), __VA_ARGS__, (char *)NULL)
/* text contains / does not contain s. */
#define TT_HAS(text, s) tt_expect_has(__func__, __LINE__, (text), (s), 1)
#define TT_HASNT(text, s) tt_expect_has(__func__, __LINE__, (text), (s), 0)

static inline int tt_rm_entry(const char *p, const struct stat *s, int flag, struct FTW *f)
{
    (void)s;
    (void)flag;
    (void)f;
    remove(p);
    return 0;
}

static char *tt_paths[1024];            /* what tt_path handed out, freed at exit */
static int tt_npaths;

/* Removes this test's own scratch directory (made by mkdtemp) and what it holds. */
static inline void tt_rm_dir(void)
{
    nftw(tt_dir, tt_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    for (int i = 0; i < tt_npaths; i++)
        free(tt_paths[i]);
    free((char *)tt_shown);
}

/* Creates the scratch directory; call first. */
static inline void tt_init(void)
{
    if (!mkdtemp(tt_dir)) {
        printf("FAIL: mkdtemp: %s\n", strerror(errno));
        exit(1);
    }
    atexit(tt_rm_dir);
}

/* A path in the scratch directory (valid until exit). */
static inline const char *tt_path(const char *name)
{
    char *p = malloc(strlen(tt_dir) + strlen(name) + 2);
    if (!p || tt_npaths == 1024)
        exit(1);
    sprintf(p, "%s/%s", tt_dir, name);
    return tt_paths[tt_npaths++] = p;
}

/* The tool under test, $BUILD/bin/elixir-trace; exits 77 (skip) when it is not built. */
static inline const char *tt_tool(void)
{
    static char path[PATH_MAX];
    const char *build = getenv("BUILD");
    if (!path[0])
        snprintf(path, sizeof(path), "%s/bin/elixir-trace", build && *build ? build : "build");
    if (access(path, X_OK) != 0) {
        printf("SKIP: %s is not built\n", path);
        exit(77);
    }
    return path;
}

static inline char *tt_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (int c; f && (c = fgetc(f)) != EOF;) {
        if (n + 1 >= cap && !(buf = realloc(buf, cap = cap ? cap * 2 : 4096)))
            exit(1);
        buf[n++] = (char)c;
    }
    if (f)
        fclose(f);
    if (!buf && !(buf = malloc(1)))
        exit(1);
    buf[n] = 0;
    return buf;
}

typedef struct tt_result {
    int status;                        /* exit status; 128 + signal when killed */
    char *out, *err;
} tt_result_t;

/* Runs argv[0] with argv (NULL-terminated), capturing both outputs. */
static inline tt_result_t tt_exec(char *const argv[])
{
    static const char *out, *err;
    if (!out) {
        out = tt_path(".stdout");
        err = tt_path(".stderr");
    }
    tt_result_t r = { 0, NULL, NULL };
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
            _exit(126);
        execvp(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) < 0) {
        printf("FAIL: cannot run %s\n", argv[0]);
        exit(1);
    }
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r.out = tt_slurp(out);
    r.err = tt_slurp(err);
    return r;
}

/* Runs elixir-trace with the given arguments (NULL-terminated). */
static inline tt_result_t tt_run(const char *arg, ...)
{
    char *argv[64];
    int n = 0;
    va_list ap;
    argv[n++] = (char *)tt_tool();
    va_start(ap, arg);
    for (const char *a = arg; a && n < 63; a = va_arg(ap, const char *))
        argv[n++] = (char *)a;
    va_end(ap);
    argv[n] = NULL;
    return tt_exec(argv);
}

static inline void tt_free(tt_result_t *r)
{
    free(r->out);
    free(r->err);
}

/* Ends a failure message: the output checked, unless it was just printed. */
static inline void tt_show(const char *text)
{
    if (tt_shown && strcmp(text, tt_shown) == 0) {
        printf(" (output above)\n");
        return;
    }
    printf("; got:\n%s\n", text);
    free((char *)tt_shown);
    tt_shown = strdup(text);
}

static inline void tt_expect_has(const char *fn, int line, const char *text, const char *s,
                                 int want)
{
    if ((strstr(text, s) != NULL) == want)
        return;
    printf("FAIL %s:%d: expected output %s \"%s\"", fn, line, want ? "containing" : "without",
           s);
    tt_show(text);
    if (++tt_failures > 30)
        exit(1);
}

static inline void tt_expect_line(const char *fn, int line, const char *text, ...)
{
    for (const char *p = text; *p;) {
        const char *e = strchr(p, '\n');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        int all = 1;
        va_list ap;
        va_start(ap, text);
        for (const char *s = va_arg(ap, const char *); s && all; s = va_arg(ap, const char *))
            all = memmem(p, len, s, strlen(s)) != NULL;
        va_end(ap);
        if (all)
            return;
        p += len + (e ? 1 : 0);
    }
    va_list ap;
    va_start(ap, text);
    printf("FAIL %s:%d: expected a line containing", fn, line);
    for (const char *s = va_arg(ap, const char *); s; s = va_arg(ap, const char *))
        printf(" \"%s\"", s);
    va_end(ap);
    tt_show(text);
    if (++tt_failures > 30)
        exit(1);
}

/* The python3 interpreter itself (not a wrapper script in front of it), found once. */
static inline char *tt_python(void)
{
    static char py[PATH_MAX];
    if (!py[0]) {
        char *argv[] = { "python3", "-c", "import sys; print(sys.executable)", NULL };
        tt_result_t r = tt_exec(argv);
        size_t n = strcspn(r.out, "\n");
        snprintf(py, sizeof(py), "%.*s", (int)n, r.status == 0 && n ? r.out : "python3");
        tt_free(&r);
    }
    return py;
}

/* Checks that json is one valid JSON document (python3's json module) and prints the value
 * of the Python expression `expr` over it (the document is `d`) into a malloc'd string,
 * without the trailing newline.  NULL (and a failure) when it is not valid JSON. */
static inline char *tt_json(const char *json, const char *expr)
{
    static const char *file;
    if (!file)
        file = tt_path(".json");
    FILE *f = fopen(file, "w");
    if (!f || fputs(json, f) < 0 || fclose(f) != 0)
        exit(1);
    char *argv[] = { tt_python(), "-c",
                     "import json,sys\n"
                     "d = json.load(open(sys.argv[1], encoding='utf-8'))\n"
                     "print(eval(sys.argv[2]))",
                     (char *)file, (char *)expr, NULL };
    tt_result_t r = tt_exec(argv);
    if (r.status != 0) {
        TT_FAIL("not valid JSON (python3: %s):\n%s", r.err, json);
        tt_free(&r);
        return NULL;
    }
    free(r.err);
    size_t n = strlen(r.out);
    if (n && r.out[n - 1] == '\n')
        r.out[n - 1] = 0;
    return r.out;
}

/* tt_json(json, expr) equals want. */
#define TT_JSON(json, expr, want)                                                             \
    do {                                                                                      \
        char *g_ = tt_json((json), (expr));                                                   \
        if (g_ && strcmp(g_, (want)) != 0)                                                    \
            TT_FAIL("JSON %s: expected %s, got %s", (expr), (want), g_);                      \
        free(g_);                                                                             \
    } while (0)

/* ------------------------------------------------------------------ writing traces */

static inline trc_writer_t *tt_writer(const char *path)
{
    trc_writer_t *w;
    int rc = trc_writer_open(path, 0, &w);
    if (rc < 0) {
        printf("FAIL: cannot create %s: %s\n", path, strerror(-rc));
        exit(1);
    }
    return w;
}

static inline uint32_t tt_str(trc_writer_t *w, const char *s)
{
    long id = trc_writer_string(w, s);
    if (id <= 0)
        exit(1);
    return (uint32_t)id;
}

/* Fails the test on a negative return of an emitter. */
#define TT_EMIT(call)                                                                         \
    do {                                                                                      \
        int rc_ = (call);                                                                     \
        if (rc_ < 0) {                                                                        \
            printf("FAIL %s:%d: %s: %s\n", __func__, __LINE__, #call, strerror(-rc_));        \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

static inline void tt_close(trc_writer_t *w)
{
    if (trc_writer_close(w) < 0)
        exit(1);
}

static inline int tt_done(void)
{
    if (tt_failures)
        printf("%d check(s) failed\n", tt_failures);
    else
        printf("ok\n");
    return tt_failures ? 1 : 0;
}

#endif
