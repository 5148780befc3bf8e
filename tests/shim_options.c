/* SPDX-License-Identifier: MIT */
/*
 * shim_options.c - the ELIXIR_* options of libelixir.so, seen from a preloaded child.
 *
 *   - bad values, of every option in the table: each is reported once (however many calls
 *     the child makes), naming the variable, the value and the accepted form, and the default
 *     is used (ELIXIR_VERBOSE=1 lists the value in force);
 *   - good values, in every accepted form, are taken and not reported;
 *   - ELIXIR_LOG and ELIXIR_LOG_SUBSYS select lines by level and subsystem, "^" excluding;
 *   - ELIXIR_LOG_FILE expands %p and %h;
 *   - ELIXIR_STATS=1 prints the statistics once, at exit.
 */
#include <limits.h>
#include <string.h>

#include "shim_test.h"
#include "simtest.h"

/* The child: a few hooked calls, then its process id on stdout. */
static void child(void)
{
    CUdeviceptr d;
    void *p;

    st_setup(0);
    for (int i = 0; i < 3; i++) {
        CHECK_CU(cuMemAlloc(&d, 4096));
        CHECK_CU(cuMemFree(d));
    }
    CHECK_CU(cuGetProcAddress("cuMemAlloc", &p, 3020, 0, NULL));
    printf("pid %d\n", (int)getpid());
}

static sh_run_t run_child(const char *const *env)
{
    sh_run_t r = sh_run("child", 1, env);

    EXPECT(r.status == 0, "the child exited %d:\n%s", r.status, r.err);
    return r;
}

/* `var` was reported exactly once, with its accepted form, and its default is in force. */
static void expect_reported(const sh_run_t *r, const char *var, const char *value,
                            const char *accepted, const char *def)
{
    char want[256];

    snprintf(want, sizeof(want), "%s=\"%s\" is not valid", var, value);
    EXPECT(sh_count(r->err, want) == 1, "%d reports of %s in:\n%s", sh_count(r->err, want), want,
           r->err);
    EXPECT(strstr(strstr(r->err, want), accepted), "the report of %s does not say \"%s\"", var,
           accepted);
    snprintf(want, sizeof(want), "option %s=%s (default)", var, def);
    EXPECT(strstr(r->err, want), "\"%s\" missing from the listing:\n%s", want, r->err);
}

static void bad_values(void)
{
    static const char *const env[] = {
        "ELIXIR_VERBOSE=1", "ELIXIR_LOG=loud", "ELIXIR_LOG_SUBSYS=INIT,BOGUS",
        "ELIXIR_STATS=maybe", "ELIXIR_GPU_MEMORY=12Q", "ELIXIR_HOST_MEMORY=-1G",
        "ELIXIR_MEMINFO=sideways", "ELIXIR_DISABLE=perhaps", NULL
    };
    sh_run_t r = run_child(env);

    expect_reported(&r, "ELIXIR_LOG", "loud", "error, warn, info or trace", "warn");
    expect_reported(&r, "ELIXIR_LOG_SUBSYS", "INIT,BOGUS", "INIT, ALLOC, LAUNCH, COPY, RES", "ALL");
    expect_reported(&r, "ELIXIR_STATS", "maybe", "1 or 0", "0");
    expect_reported(&r, "ELIXIR_GPU_MEMORY", "12Q", "K, M, G or T", "auto");
    expect_reported(&r, "ELIXIR_HOST_MEMORY", "-1G", "percentage", "auto");
    expect_reported(&r, "ELIXIR_MEMINFO", "sideways", "virtual or physical", "virtual");
    expect_reported(&r, "ELIXIR_DISABLE", "perhaps", "1 or 0", "0");
    EXPECT(!strstr(r.err, "statistics of process"), "statistics printed with STATS=maybe");
    EXPECT(strstr(r.err, "shim/options.c:"), "a warning without file:line:\n%s", r.err);
    sh_run_free(&r);
}

/* The recording options' types (depth, count, CUPTI, size), a bad ELIXIR_VERBOSE and a log
 * file name too long for a path: each parser has its own bounds, so each is tried; the trace
 * options are read whether or not ELIXIR_TRACE is set. */
static void bad_other_values(void)
{
    static const char *const env[] = {
        "ELIXIR_VERBOSE=1", "ELIXIR_TRACE_DEPTH=257", "ELIXIR_PROFILE_WARMUP=-1",
        "ELIXIR_PROFILE_ITERATIONS=3x", "ELIXIR_CUPTI=", "ELIXIR_CUPTI_BUFFER=2G", NULL
    };
    static const char *const quiet[] = { "ELIXIR_VERBOSE=loud", "ELIXIR_CUPTI_BUFFER=0", NULL };
    static char long_file[PATH_MAX + 32] = "ELIXIR_LOG_FILE=/tmp/";
    const char *too_long[] = { long_file, NULL };
    sh_run_t r = run_child(env);

    expect_reported(&r, "ELIXIR_TRACE_DEPTH", "257", "from 0 to 256", "16");
    expect_reported(&r, "ELIXIR_PROFILE_WARMUP", "-1", "a whole number", "1");
    expect_reported(&r, "ELIXIR_PROFILE_ITERATIONS", "3x", "a whole number", "1");
    expect_reported(&r, "ELIXIR_CUPTI", "", "auto, off, or the path", "auto");
    expect_reported(&r, "ELIXIR_CUPTI_BUFFER", "2G", "from 1 to 1G", "1M");
    sh_run_free(&r);

    r = run_child(quiet);
    EXPECT(sh_count(r.err, "ELIXIR_VERBOSE=\"loud\" is not valid") == 1 &&
               strstr(r.err, "ELIXIR_CUPTI_BUFFER=\"0\" is not valid: expected a size"),
           "ELIXIR_VERBOSE=loud or ELIXIR_CUPTI_BUFFER=0 not reported once:\n%s", r.err);
    EXPECT(!strstr(r.err, "option ELIXIR_"), "options listed with ELIXIR_VERBOSE=loud:\n%s",
           r.err);
    sh_run_free(&r);

    memset(long_file + strlen(long_file), 'f', PATH_MAX);
    r = run_child(too_long);
    EXPECT(sh_count(r.err, "ELIXIR_LOG_FILE=\"/tmp/fff") == 1 &&
               strstr(r.err, "shorter than PATH_MAX; using the default, (none)"),
           "a log file name of %d bytes not reported once:\n%.300s", PATH_MAX + 5, r.err);
    sh_run_free(&r);
}

/* A bad value is an error: reported even when the log keeps errors only. */
static void bad_value_errors_only(void)
{
    static const char *const env[] = { "ELIXIR_LOG=error", "ELIXIR_STATS=maybe", NULL };
    sh_run_t r = run_child(env);

    EXPECT(sh_count(r.err, "ELIXIR_STATS=\"maybe\" is not valid") == 1,
           "ELIXIR_STATS=maybe not reported once with ELIXIR_LOG=error:\n%s", r.err);
    sh_run_free(&r);
}

/* Out-of-range sizes and percentages, one run each (the variable can only hold one). */
static void bad_memory(void)
{
    static const char *const values[] = { "150%", "0%", "0", "5X", "1.5G", "%", "16EiB", "" };

    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        char var[64];
        const char *env[] = { var, "ELIXIR_VERBOSE=1", NULL };

        snprintf(var, sizeof(var), "ELIXIR_GPU_MEMORY=%s", values[i]);
        sh_run_t r = run_child(env);
        expect_reported(&r, "ELIXIR_GPU_MEMORY", values[i], "percentage", "auto");
        sh_run_free(&r);
    }
}

static void good_values(void)
{
    static const char *const env[] = {
        "ELIXIR_VERBOSE=on", "ELIXIR_LOG=INFO", "ELIXIR_LOG_SUBSYS=^alloc",
        "ELIXIR_STATS=yes", "ELIXIR_GPU_MEMORY=24G", "ELIXIR_HOST_MEMORY=12.5%",
        "ELIXIR_MEMINFO=physical", "ELIXIR_DISABLE=false", NULL
    };
    static const char *const listed[] = {
        "option ELIXIR_GPU_MEMORY=24G (set)", "option ELIXIR_HOST_MEMORY=12.5% (set)",
        "option ELIXIR_MEMINFO=physical (set)", "option ELIXIR_LOG_SUBSYS=^alloc (set)",
        "option ELIXIR_LOG_FILE= (default)", NULL
    };
    sh_run_t r = run_child(env);

    EXPECT(!strstr(r.err, "not valid"), "a good value was reported:\n%s", r.err);
    for (int i = 0; listed[i]; i++)
        EXPECT(strstr(r.err, listed[i]), "\"%s\" missing from:\n%s", listed[i], r.err);
    EXPECT(strstr(r.err, "INFO INIT started"), "no INFO INIT line:\n%s", r.err);
    EXPECT(sh_count(r.err, "statistics of process") == 1, "statistics printed %d times",
           sh_count(r.err, "statistics of process"));
    sh_run_free(&r);
}

static void subsystems(void)
{
    static const char *const only_alloc[] = { "ELIXIR_LOG=trace", "ELIXIR_LOG_SUBSYS=ALLOC",
                                              NULL };
    static const char *const not_alloc[] = { "ELIXIR_LOG=trace", "ELIXIR_LOG_SUBSYS=^ALLOC",
                                             NULL };
    static const char *const warn_only[] = { "ELIXIR_LOG_SUBSYS=ALL", NULL };
    sh_run_t a = run_child(only_alloc), b = run_child(not_alloc), c = run_child(warn_only);

    EXPECT(sh_count(a.err, "TRACE ALLOC cuMemAlloc_v2") == 3 && !strstr(a.err, "TRACE INIT"),
           "with ALLOC only:\n%s", a.err);
    EXPECT(!strstr(b.err, "TRACE ALLOC") && strstr(b.err, "TRACE INIT cuGetProcAddress_v2"),
           "with ^ALLOC:\n%s", b.err);
    EXPECT(!strstr(c.err, "elixir "), "lines at the default level warn:\n%s", c.err);
    sh_run_free(&a);
    sh_run_free(&b);
    sh_run_free(&c);
}

static void log_file(void)
{
    char dir[] = "/tmp/shim-options-XXXXXX", var[128], path[256], host[64];
    const char *env[] = { var, "ELIXIR_LOG=info", NULL };
    FILE *f;
    char line[512];
    int found = 0;

    EXPECT(mkdtemp(dir) && gethostname(host, sizeof(host)) == 0, "mkdtemp/gethostname");
    snprintf(var, sizeof(var), "ELIXIR_LOG_FILE=%s/log-%%h-%%p-%%%%.txt", dir);
    sh_run_t r = run_child(env);
    EXPECT(!strstr(r.err, "elixir "), "log lines on stderr:\n%s", r.err);
    snprintf(path, sizeof(path), "%s/log-%s-%d-%%.txt", dir, host, atoi(r.out + 4));
    f = fopen(path, "r");
    EXPECT(f, "no log file %s", path);
    while (fgets(line, sizeof(line), f))
        found += strstr(line, "INFO INIT started") != NULL;
    fclose(f);
    EXPECT(found == 1, "%s: %d start lines", path, found);
    unlink(path);
    rmdir(dir);
    sh_run_free(&r);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "child") == 0) {
        child();
        return 0;
    }
    bad_values();
    bad_memory();
    bad_other_values();
    bad_value_errors_only();
    good_values();
    subsystems();
    log_file();
    return 0;
}
