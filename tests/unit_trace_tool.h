/* SPDX-License-Identifier: MIT */
/*
 * unit_trace_tool.h - helpers for the tests of elixir-trace (tests/unit_trace_tool_*.c).
 *
 * Each test writes traces with the tracer's writer into a scratch directory (removed at
 * exit, kept when a check failed), runs $BUILD/bin/elixir-trace on them (the test skips with
 * 77 when the tool is not built) and checks its exit status, standard output and standard
 * error.  JSON output is checked with python3's json module, which also answers questions
 * about it; the exporters' tests hand whole files to Python scripts of their own (tt_py).
 */
#ifndef UNIT_TRACE_TOOL_H
#define UNIT_TRACE_TOOL_H

#include "../tracer/trace.h"

#include <dlfcn.h>
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

#define KiB ((uint64_t)1 << 10)
#define MiB ((uint64_t)1 << 20)
#define GiB ((uint64_t)1 << 30)

static int tt_failures;
static const char *tt_shown;           /* the output last printed in full with a failure */
static char tt_dir[] = "/tmp/unit_trace_tool.XXXXXX";

/* Counts a failure (its message already printed); gives up after 30. */
static inline void tt_failed(void)
{
    if (++tt_failures > 30)
        exit(1);
}

#define TT_FAIL(...)                                                                          \
    do {                                                                                      \
        printf("FAIL %s:%d: ", __func__, __LINE__);                                           \
        printf(__VA_ARGS__);                                                                  \
        printf("\n");                                                                         \
        tt_failed();                                                                          \
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

/* Removes this test's own scratch directory (made by mkdtemp) and what it holds, unless a
 * check failed: then it stays for a look at the traces and outputs. */
static inline void tt_rm_dir(void)
{
    if (tt_failures)
        printf("outputs kept in %s\n", tt_dir);
    else
        nftw(tt_dir, tt_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    for (int i = 0; i < tt_npaths; i++)
        free(tt_paths[i]);
    free((char *)tt_shown);
}

/* The tool under test, $BUILD/bin/elixir-trace; exits 77 (skip) when it is not built. */
static inline const char *tt_tool(void)
{
    static char path[PATH_MAX];
    const char *build = getenv("BUILD");
    if (!path[0])
        snprintf(path, sizeof(path), "%s/bin/elixir-trace", build && *build ? build : "build");
    if (access(path, X_OK) != 0) {
        printf("skip: %s is not built\n", path);
        exit(77);
    }
    return path;
}

/* Checks that the tool is built (else skips) and creates the scratch directory; call first. */
static inline void tt_init(void)
{
    tt_tool();
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

/* The bytes of the file at path, malloc'd and NUL-terminated, their count in *len (when len
 * is not NULL); "" when the file cannot be read. */
static inline char *tt_slurp_len(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t cap = 0, n = 0, k;
    do {
        if (n + 1 >= cap && !(buf = realloc(buf, cap = cap ? cap * 2 : 4096)))
            exit(1);
        k = f ? fread(buf + n, 1, cap - n - 1, f) : 0;
        n += k;
    } while (k > 0);
    if (f)
        fclose(f);
    buf[n] = 0;
    if (len)
        *len = n;
    return buf;
}

static inline char *tt_slurp(const char *path)
{
    return tt_slurp_len(path, NULL);
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

/* Runs the command pre (NULL-terminated) with the arguments from arg on (NULL-terminated). */
static inline tt_result_t tt_execv(const char *const pre[], const char *arg, va_list ap)
{
    char *argv[64];
    int n = 0;
    for (; pre[n]; n++)
        argv[n] = (char *)pre[n];
    for (const char *a = arg; a && n < 63; a = va_arg(ap, const char *))
        argv[n++] = (char *)a;
    argv[n] = NULL;
    return tt_exec(argv);
}

/* Runs elixir-trace with the given arguments (NULL-terminated). */
static inline tt_result_t tt_run(const char *arg, ...)
{
    const char *pre[] = { tt_tool(), NULL };
    va_list ap;
    va_start(ap, arg);
    tt_result_t r = tt_execv(pre, arg, ap);
    va_end(ap);
    return r;
}

/* Can the C++ runtime, through which the tool demangles C++ names, be opened here? */
static inline int tt_cxx_runtime(void)
{
    void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
    if (h)
        dlclose(h);
    return h != NULL;
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
    tt_failed();
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
    tt_failed();
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

/* Runs elixir-trace with the given arguments and checks that it exits with status `want`;
 * on another, a failure showing its standard error.  Whether it did. */
#define TT_RUN(want, ...) tt_run_expect(__func__, __LINE__, (want), __VA_ARGS__, (char *)NULL)

static inline int tt_run_expect(const char *fn, int line, int want, const char *arg, ...)
{
    const char *pre[] = { tt_tool(), NULL };
    va_list ap;
    va_start(ap, arg);
    tt_result_t r = tt_execv(pre, arg, ap);
    va_end(ap);
    int ok = r.status == want;
    if (!ok) {
        printf("FAIL %s:%d: elixir-trace %s ...: expected exit status %d, got %d; stderr:\n%s",
               fn, line, arg, want, r.status, r.err);
        tt_failed();
    }
    tt_free(&r);
    return ok;
}

/* Skips the test (77) unless python3 runs and can import `module`. */
static inline void tt_need_python(const char *module)
{
    char code[128];
    snprintf(code, sizeof(code), "import %s", module);
    char *argv[] = { tt_python(), "-c", code, NULL };
    tt_result_t r = tt_exec(argv);
    int status = r.status;
    tt_free(&r);
    if (status != 0) {
        printf("skip: python3 cannot import %s\n", module);
        exit(77);
    }
}

/* Runs elixir-trace with the arguments args (NULL-terminated: TT_ARGS), which it must refuse:
 * exit status 2, and a line of its standard error holding every one of the texts after. */
#define TT_ARGS(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define TT_REFUSED(args, ...)                                                                 \
    do {                                                                                      \
        tt_result_t r_ = tt_run_args(args);                                                   \
        if (r_.status != 2) {                                                                 \
            printf("FAIL %s:%d: elixir-trace %s %s ...: expected exit status 2, got %d\n",    \
                   __func__, __LINE__, (args)[0], (args)[1] ? (args)[1] : "", r_.status);     \
            tt_failed();                                                                      \
        }                                                                                     \
        TT_LINE(r_.err, __VA_ARGS__);                                                         \
        tt_free(&r_);                                                                         \
    } while (0)

static inline tt_result_t tt_run_args(const char *const *args)
{
    char *argv[64];
    int n = 0;
    argv[n++] = (char *)tt_tool();
    for (; *args && n < 63; args++)
        argv[n++] = (char *)*args;
    argv[n] = NULL;
    return tt_exec(argv);
}

/* Runs a Python program (python3 -c script) with the given arguments (NULL-terminated):
 * its exit status, and what it printed shown when that is not 0. */
static inline int tt_py(const char *script, const char *arg, ...)
{
    const char *pre[] = { tt_python(), "-c", script, NULL };
    va_list ap;
    va_start(ap, arg);
    tt_result_t r = tt_execv(pre, arg, ap);
    va_end(ap);
    int status = r.status;
    if (status != 0)
        printf("python3 (exit status %d):\n%s%s", status, r.out, r.err);
    tt_free(&r);
    return status;
}

/* Writes len bytes to a new file `name` in the scratch directory: its path. */
static inline const char *tt_write_file(const char *name, const void *data, size_t len)
{
    const char *p = tt_path(name);
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0)
        exit(1);
    return p;
}

/* Runs elixir-trace with the given arguments, which must exit 0 with JSON on which the Python
 * expression expr prints want. */
#define TT_RUN_JSON(expr, want, ...)                                                          \
    do {                                                                                      \
        tt_result_t r_ = tt_run(__VA_ARGS__, NULL);                                           \
        TT_CHECK("exit status", 0, r_.status);                                                \
        TT_JSON(r_.out, (expr), (want));                                                      \
        tt_free(&r_);                                                                         \
    } while (0)

/* ------------------------------------------------------------------ writing traces */

/* A new trace at path, with the header flags given (TRC_FLAG_VIRTUAL_TIME or 0). */
static inline trc_writer_t *tt_writer(const char *path, uint32_t flags)
{
    trc_writer_t *w;
    int rc = trc_writer_open(path, flags, &w);
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

/* What the plan tests' traces begin with: device 0, an 80 GiB "Test GPU" (compute capability
 * 9), with budgets of 1 GiB of GPU and 64 GiB of host memory; the kernel name "layer" is
 * defined, its string id in *kernel. */
static inline void tt_plan_preamble(trc_writer_t *w, uint32_t *kernel)
{
    *kernel = tt_str(w, "layer");
    uint32_t name = tt_str(w, "Test GPU");
    TT_EMIT(trc_emit_device(w, 1, &(trc_device_t){ .device = 0, .name_id = name,
                                                   .total_mem = 80 * GiB, .cc_major = 9 }));
    trc_budget_t b = { .device = 0, .bytes = { 1 * GiB, 0, 64 * GiB, 0 } };
    TT_EMIT(trc_emit_budget(w, 2, &b));
}

/* A MEMORY record of device dev: bytes on the GPU, in pinned host memory and on NVMe. */
static inline void tt_memory(trc_writer_t *w, uint64_t time, int32_t dev, uint64_t gpu,
                             uint64_t host, uint64_t nvme)
{
    trc_memory_t m = { .device = dev, .bytes = { gpu, 0, host, nvme } };
    TT_EMIT(trc_emit_memory(w, time, &m));
}

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
