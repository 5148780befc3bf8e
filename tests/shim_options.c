/* SPDX-License-Identifier: MIT */
/*
 * shim_options.c - the ELIXIR_* options of libelixir.so, seen from a preloaded child.
 *
 *   - bad configuration stops the program at its first CUDA call, exit status 1, before the
 *     call returns: a bad value of any option in the table (each alone, and all at once:
 *     each reported once, naming the variable, the value and the accepted forms, on stderr
 *     even when the log goes to a file or keeps errors only), a name one or two edits from
 *     an option's, a budget that comes to less than one chunk, an NVMe tier that cannot be
 *     had (a path that does not open, an area under one chunk, a percentage of a file) and a
 *     trace that cannot be created; with ELIXIR_DISABLE=1 they are warnings and the program
 *     runs; other ELIXIR_* variables are left alone;
 *   - good values, in every accepted form, are taken and not reported;
 *   - ELIXIR_VERBOSE=1 prints the version and what auto and percentage budgets became;
 *   - ELIXIR_LOG and ELIXIR_LOG_SUBSYS select lines by level and subsystem, "^" excluding;
 *   - ELIXIR_LOG_FILE expands %p and %h;
 *   - ELIXIR_STATS=1 prints the statistics once, at exit.
 */
#include <limits.h>
#include <string.h>

#include "shim_test.h"
#include "simtest.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

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

/* A child that bad configuration must stop: exit status 1, nothing printed on stdout (its
 * first CUDA call did not return). */
static sh_run_t run_refused(const char *const *env)
{
    sh_run_t r = sh_run("child", 1, env);

    EXPECT(r.status == 1 && !strstr(r.out, "pid"),
           "with %s the child exited %d (expected 1), stdout \"%s\", stderr:\n%s", env[0],
           r.status, r.out, r.err);
    EXPECT(!strstr(r.err, "option ELIXIR_"), "options listed by a refused child:\n%s", r.err);
    return r;
}

/* `var`="value" was refused exactly once, with its accepted forms and the exit status. */
static void expect_refused(const sh_run_t *r, const char *var, const char *value,
                           const char *accepted)
{
    char want[PATH_MAX + 128];
    const char *at;

    snprintf(want, sizeof(want), "elixir: error: %s=\"%s\" is not valid: expected ", var, value);
    EXPECT(sh_count(r->err, want) == 1, "%d reports of %s in:\n%s", sh_count(r->err, want), want,
           r->err);
    at = strstr(r->err, want);
    EXPECT(strstr(at, accepted) && strstr(at, accepted) < strchr(at, '\n'),
           "the report of %s does not say \"%s\":\n%s", var, accepted, r->err);
    EXPECT(strstr(at, "; the program stops (exit status 1)\n"), "no exit status in:\n%s", at);
}

/* One bad value of every option of the table, with a piece of what it accepts. */
static const struct bad {
    const char *var, *value, *accepted;
} bad[] = {
    { "ELIXIR_DISABLE", "perhaps", "1 or 0" },
    { "ELIXIR_VERBOSE", "loud", "1 or 0" },
    { "ELIXIR_LOG", "loud", "error, warn, info or trace" },
    { "ELIXIR_LOG_SUBSYS", "INIT,BOGUS", "INIT, ALLOC, LAUNCH, COPY, RES" },
    { "ELIXIR_LOG_SUBSYS", "INIT,", "INIT, ALLOC, LAUNCH, COPY, RES" },
    { "ELIXIR_LOG_SUBSYS", "^ALL", "INIT, ALLOC, LAUNCH, COPY, RES" },
    { "ELIXIR_STATS", "maybe", "1 or 0" },
    { "ELIXIR_GPU_MEMORY", "64X", "auto, a size in bytes with an optional K, M, G or T" },
    { "ELIXIR_HOST_MEMORY", "-1G", "percentage above 0" },
    { "ELIXIR_MEMINFO", "sideways", "virtual or physical" },
    { "ELIXIR_TRACE_LEVEL", "everything", "summary, allocs or all" },
    { "ELIXIR_TRACE_DEPTH", "257", "from 0 to 256" },
    { "ELIXIR_PROFILE_WARMUP", "-1", "a whole number from 0" },
    { "ELIXIR_PROFILE_ITERATIONS", "3x", "a whole number from 0" },
    { "ELIXIR_CUPTI", "", "auto, off, or the path" },
    { "ELIXIR_CUPTI_BUFFER", "2G", "from 1 to 1G" },
    { "ELIXIR_CUPTI_BUFFER", "0", "from 1 to 1G" },
    { "ELIXIR_NVME_MEMORY", "5X", "auto, a size in bytes with an optional K, M, G or T" },
    { "ELIXIR_NVME_VERIFY", "perhaps", "1 or 0" },
    { "ELIXIR_NVME_QUEUE_DEPTH", "0", "from 1 to 4096" },
    { "ELIXIR_NVME_BLOCK", "3X", "a power of two from 4K to 1G" },
    { "ELIXIR_NVME_BLOCK", "12K", "a power of two from 4K to 1G" },
    { "ELIXIR_NVME_BLOCK", "2K", "a power of two from 4K to 1G" },
    { "ELIXIR_NVME_ENGINE", "bogus", "auto, io_uring or psync" },
    { "ELIXIR_NVME_SHARE", "0", "auto or a whole number from 1 to 4096" },
    { "ELIXIR_NVME_SHARE", "4097", "auto or a whole number from 1 to 4096" },
    { "ELIXIR_POLICY", "smart", "reactive or plan" },
    { "ELIXIR_REACH", "backward", "forward or allocation" },
    { "ELIXIR_HOST_VMM", "sometimes", "auto, 1 or 0" },
    { "ELIXIR_PLAN_SLACK", "4097", "auto or a whole number from 0 to 4096" },
    { "ELIXIR_PLAN_SLACK", "-1", "auto or a whole number from 0 to 4096" },
    { "ELIXIR_PLAN_GUARD", "fast", "0, or a ratio from 0.01 to 100" },
    { "ELIXIR_PLAN_GUARD", "-1", "0, or a ratio from 0.01 to 100" },
    { "ELIXIR_PLAN_GUARD", "0.001", "0, or a ratio from 0.01 to 100" },
    { "ELIXIR_PLAN_GUARD", "101", "0, or a ratio from 0.01 to 100" },
    { "ELIXIR_PLAN_GUARD", "1.1x", "0, or a ratio from 0.01 to 100" },
};

/* Each bad value alone stops the child; all together, each is reported once. */
static void bad_values(void)
{
    char vars[ARRAY_LEN(bad)][128];
    const char *all[ARRAY_LEN(bad) + 1] = { 0 };
    sh_run_t r;
    size_t n = 0;

    for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
        snprintf(vars[i], sizeof(vars[i]), "%s=%s", bad[i].var, bad[i].value);
        const char *env[] = { vars[i], NULL };
        r = run_refused(env);
        expect_refused(&r, bad[i].var, bad[i].value, bad[i].accepted);
        EXPECT(sh_count(r.err, "elixir: error: ") == 1, "more than one error line:\n%s", r.err);
        sh_run_free(&r);
        if (i == 0 || strcmp(bad[i].var, bad[i - 1].var) != 0)
            all[n++] = vars[i];
    }
    r = run_refused(all);
    for (size_t i = 0; i < ARRAY_LEN(bad); i++)
        if (i == 0 || strcmp(bad[i].var, bad[i - 1].var) != 0)
            expect_refused(&r, bad[i].var, bad[i].value, bad[i].accepted);
    EXPECT(!strstr(r.err, "statistics of process"), "statistics printed by a refused child");
    sh_run_free(&r);
}

/* Out-of-range sizes and percentages, and a log or trace file name too long for a path, one
 * run each (the variable can only hold one). */
static void bad_memory_and_paths(void)
{
    static const char *const values[] = { "150%", "0%", "0", "5X", "1.5G", "%", "16EiB", "" };
    static char long_file[PATH_MAX + 32];
    const char *env[] = { long_file, NULL };

    for (size_t i = 0; i < ARRAY_LEN(values); i++) {
        char var[64];
        const char *env_mem[] = { var, "ELIXIR_VERBOSE=1", NULL };

        snprintf(var, sizeof(var), "ELIXIR_GPU_MEMORY=%s", values[i]);
        sh_run_t r = run_refused(env_mem);
        expect_refused(&r, "ELIXIR_GPU_MEMORY", values[i], "percentage");
        sh_run_free(&r);
    }
    for (int t = 0; t < 2; t++) {
        const char *var = t ? "ELIXIR_TRACE" : "ELIXIR_LOG_FILE";
        int n = snprintf(long_file, sizeof(long_file), "%s=/tmp/", var);
        memset(long_file + n, 'f', PATH_MAX);
        long_file[n + PATH_MAX] = '\0';
        sh_run_t r = run_refused(env);
        char cut[128];
        snprintf(cut, sizeof(cut), "%.60s...", long_file + strlen(var) + 1);
        expect_refused(&r, var, cut, "shorter than PATH_MAX");
        sh_run_free(&r);
    }
}

/* The refusal reaches stderr whatever the log says: errors only, or lines to a file. */
static void refused_whatever_the_log(void)
{
    char dir[] = "/tmp/shim-options-XXXXXX", var[192], path[160];
    const char *quiet[] = { "ELIXIR_LOG=error", "ELIXIR_STATS=maybe", NULL };
    const char *to_file[] = { "ELIXIR_STATS=maybe", var, NULL };
    sh_run_t r = run_refused(quiet);

    expect_refused(&r, "ELIXIR_STATS", "maybe", "1 or 0");
    sh_run_free(&r);
    EXPECT(mkdtemp(dir), "mkdtemp");
    snprintf(path, sizeof(path), "%s/log.txt", dir);
    snprintf(var, sizeof(var), "ELIXIR_LOG_FILE=%s", path);
    r = run_refused(to_file);
    expect_refused(&r, "ELIXIR_STATS", "maybe", "1 or 0");
    unlink(path);
    rmdir(dir);
    sh_run_free(&r);
}

/* A name one or two edits from an option's stops the child, naming the option; other ELIXIR_*
 * variables (the simulator's, the tools', unrelated names) are left alone. */
static void typos(void)
{
    static const char *const typo[][2] = {
        { "ELIXIR_GPU_MEMROY=4G", "ELIXIR_GPU_MEMROY is not an option of libelixir.so: did you "
                                  "mean ELIXIR_GPU_MEMORY?" },
        { "ELIXIR_stats=1", "ELIXIR_stats is not an option of libelixir.so: did you mean "
                            "ELIXIR_STATS?" },
        { "ELIXIR_TRACE_DEPT=4", "did you mean ELIXIR_TRACE_DEPTH?" },
        { "ELIXIR_LOGS=info", "did you mean ELIXIR_LOG?" },
    };
    static const char *const others[] = {
        "ELIXIR_SIM_STATS=0", "ELIXIR_DEBUG_DIRS=/nonexistent", "ELIXIR_TEST_TIMEOUT=5",
        "ELIXIR_PROC_REQUESTS=/nonexistent", "ELIXIR_SOMETHING_ELSE=1", "ELIXIR_DEMO=1", NULL
    };

    for (size_t i = 0; i < ARRAY_LEN(typo); i++) {
        const char *env[] = { typo[i][0], NULL };
        sh_run_t r = run_refused(env);
        EXPECT(sh_count(r.err, typo[i][1]) == 1 && strstr(r.err, "elixir: error: ") &&
                   strstr(r.err, "the program stops (exit status 1)"),
               "with %s, expected \"%s\" once in:\n%s", typo[i][0], typo[i][1], r.err);
        sh_run_free(&r);
    }
    sh_run_t r = run_child(others);
    EXPECT(!strstr(r.err, "elixir"), "other ELIXIR_* variables were reported:\n%s", r.err);
    sh_run_free(&r);
}

/* ELIXIR_DISABLE=1 still passes every call through: bad values and typos are warnings. */
static void disabled(void)
{
    static const char *const env[] = { "ELIXIR_DISABLE=1", "ELIXIR_GPU_MEMORY=64X",
                                       "ELIXIR_GPU_MEMROY=4G", NULL };
    sh_run_t r = run_child(env);

    EXPECT(strstr(r.out, "pid") && !strstr(r.err, "elixir: error"), "the child did not run:\n%s",
           r.err);
    EXPECT(sh_count(r.err, "ignored, since ELIXIR_DISABLE=1 passes every call through") == 2 &&
               strstr(r.err, "ELIXIR_GPU_MEMORY=\"64X\" is not valid") &&
               strstr(r.err, "did you mean ELIXIR_GPU_MEMORY?"),
           "expected two warnings, got:\n%s", r.err);
    sh_run_free(&r);
}

/* A budget that comes to less than one chunk (2 MiB on the simulator) stops the child at its
 * first allocation; one chunk is enough. */
static void budget_under_a_chunk(void)
{
    static const char *const under[][2] = {
        { "ELIXIR_GPU_MEMORY=1K", "ELIXIR_GPU_MEMORY=\"1K\" gives device 0 a GPU budget of "
                                  "1.0 KiB (1024 bytes), less than one chunk (2.0 MiB" },
        { "ELIXIR_GPU_MEMORY=2047K", "a GPU budget of 2.0 MiB (2096128 bytes), less than one "
                                     "chunk (2.0 MiB" },
        { "ELIXIR_GPU_MEMORY=0.0001%", "a GPU budget of 1.0 KiB (1073 bytes), less than one "
                                       "chunk" },
        { "ELIXIR_HOST_MEMORY=1K", "ELIXIR_HOST_MEMORY=\"1K\" gives device 0 a host budget of "
                                   "1.0 KiB (1024 bytes), less than one chunk (2.0 MiB" },
    };
    static const char *const one_chunk[] = { "ELIXIR_GPU_MEMORY=2M", "ELIXIR_HOST_MEMORY=2M",
                                             NULL };

    for (size_t i = 0; i < ARRAY_LEN(under); i++) {
        const char *env[] = { under[i][0], NULL };
        sh_run_t r = run_refused(env);
        EXPECT(sh_count(r.err, under[i][1]) == 1 &&
                   strstr(r.err, "at least 2.0 MiB; the program stops (exit status 1)"),
               "with %s, expected \"%s\" once in:\n%s", under[i][0], under[i][1], r.err);
        sh_run_free(&r);
    }
    sh_run_t r = run_child(one_chunk);
    EXPECT(!strstr(r.err, "elixir"), "a budget of one chunk was reported:\n%s", r.err);
    sh_run_free(&r);
}

/* A fixed ELIXIR_PLAN_SLACK with evictions that unmap (asked for, or auto with the NVMe tier)
 * stops the child, as does one of the whole GPU budget (at its first allocation); slack 0 and
 * auto go with anything, and a slack under the budget runs. */
static void slack_refused(void)
{
    /* (each sets what it needs of ELIXIR_POLICY and ELIXIR_PLAN_UNMAP: the tests also run
     * with either set otherwise) */
    static const char *const refused[][6] = {
        { "ELIXIR_PLAN_SLACK=4", "ELIXIR_PLAN_UNMAP=1", "ELIXIR_POLICY=plan", NULL, NULL,
          "ELIXIR_PLAN_SLACK=4 leaves GPU room for moves in while evictions' copies run, but "
          "ELIXIR_PLAN_UNMAP=1 unmaps evictions" },
        { "ELIXIR_PLAN_SLACK=2", "ELIXIR_NVME_PATH=/nonexistent", "ELIXIR_PLAN_UNMAP=auto",
          "ELIXIR_POLICY=plan", NULL,
          "ELIXIR_PLAN_UNMAP=auto (with ELIXIR_NVME_PATH set) unmaps evictions" },
        { "ELIXIR_PLAN_SLACK=256", "ELIXIR_GPU_MEMORY=512M", "ELIXIR_POLICY=plan",
          "ELIXIR_PLAN_UNMAP=0", NULL,
          "ELIXIR_PLAN_SLACK=256 leaves device 0's plan no GPU memory: its budget is 256 chunks "
          "(512.0 MiB): expected auto, or a whole number under 256" },
    };
    static const char *const ran[][5] = {
        { "ELIXIR_PLAN_SLACK=0", "ELIXIR_PLAN_UNMAP=1", NULL },
        { "ELIXIR_PLAN_SLACK=auto", "ELIXIR_PLAN_UNMAP=yes", NULL },
        { "ELIXIR_PLAN_SLACK=255", "ELIXIR_GPU_MEMORY=512M", "ELIXIR_PLAN_UNMAP=0", NULL },
        { "ELIXIR_PLAN_SLACK=256", "ELIXIR_GPU_MEMORY=512M", "ELIXIR_POLICY=reactive",
          "ELIXIR_PLAN_UNMAP=0", NULL },
    };

    for (size_t i = 0; i < ARRAY_LEN(refused); i++) {
        sh_run_t r = run_refused(refused[i]);
        EXPECT(sh_count(r.err, "elixir: error: ") == 1 && strstr(r.err, refused[i][5]) &&
                   strstr(r.err, "the program stops (exit status 1)"),
               "with %s %s, expected \"%s\" once in:\n%s", refused[i][0], refused[i][1],
               refused[i][5], r.err);
        sh_run_free(&r);
    }
    for (size_t i = 0; i < ARRAY_LEN(ran); i++) {
        sh_run_t r = run_child(ran[i]);
        EXPECT(!strstr(r.err, "elixir"), "with %s %s, something was reported:\n%s", ran[i][0],
               ran[i][1], r.err);
        sh_run_free(&r);
    }
}

/* An NVMe tier that cannot be had stops the child at its first allocation: a path that does
 * not open, ELIXIR_NVME_MEMORY under one chunk, a percentage of a regular file; one chunk
 * runs. */
static void nvme_refused(void)
{
    const char *in_dir = sh_nvme_path_env();
    char file[PATH_MAX + 8], in_file[PATH_MAX + 48];
    snprintf(file, sizeof(file), "%s/area", sh_nvme_dir());
    int fd = open(file, O_CREAT | O_WRONLY, 0600);
    EXPECT(fd >= 0 && ftruncate(fd, 64 << 20) == 0, "%s: %s", file, strerror(errno));
    close(fd);
    snprintf(in_file, sizeof(in_file), "ELIXIR_NVME_PATH=%s", file);
    const char *const refused[][3] = {
        { "ELIXIR_NVME_PATH=/nonexistent/swap", NULL,
          "ELIXIR_NVME_PATH=/nonexistent/swap: cannot open the swap area (" },
        { in_dir, "ELIXIR_NVME_MEMORY=1M", "ELIXIR_NVME_MEMORY=\"1M\" gives the NVMe area less "
          "than one chunk (2.0 MiB)" },
        { in_file, "ELIXIR_NVME_MEMORY=50%", "ELIXIR_NVME_MEMORY=\"50%\" is a percentage of "
          "what a directory's file system can spare, but ELIXIR_NVME_PATH=" },
    };
    for (size_t i = 0; i < ARRAY_LEN(refused); i++) {
        const char *env[] = { refused[i][0], refused[i][1], NULL };
        sh_run_t r = run_refused(env);
        EXPECT(sh_count(r.err, "elixir: error: ") == 1 && strstr(r.err, refused[i][2]) &&
                   strstr(r.err, "the program stops (exit status 1)"),
               "with %s %s, expected \"%s\" once in:\n%s", refused[i][0],
               refused[i][1] ? refused[i][1] : "", refused[i][2], r.err);
        sh_run_free(&r);
    }
    const char *env[] = { in_dir, "ELIXIR_NVME_MEMORY=2M", NULL };
    sh_run_t r = run_child(env);
    EXPECT(!strstr(r.err, "error"), "an area of one chunk was refused:\n%s", r.err);
    sh_run_free(&r);
    unlink(file);                       /* (the directory goes at exit) */
}

/* A trace that cannot be created stops the child at its first CUDA call. */
static void trace_refused(void)
{
    const char *env[] = { "ELIXIR_TRACE=/nonexistent/dir/run.trace", NULL };
    sh_run_t r = run_refused(env);
    EXPECT(sh_count(r.err, "elixir: error: ") == 1 &&
               strstr(r.err, "ELIXIR_TRACE=/nonexistent/dir/run.trace: cannot record: ") &&
               strstr(r.err, "the program stops (exit status 1)"),
           "expected one report of the trace that cannot be recorded:\n%s", r.err);
    sh_run_free(&r);
}

/* ELIXIR_CUPTI naming a library that does not load, or one that is no CUPTI, stops the
 * program before the trace file is made; a CUPTI held by another tool does not (that is
 * shim_trace_iterations' "CUPTI taken"). */
static void cupti_refused(void)
{
    static const char *const libs[] = { "/nonexistent/libcupti.so", "libc.so.6" };
    static const char *const why[] = { "CUPTI not loaded (", "CUPTI not usable: " };
    char dir[] = "/tmp/shim-options-XXXXXX", trace[192], path[64], cupti[96];
    const char *env[] = { cupti, trace, NULL };

    EXPECT(mkdtemp(dir), "mkdtemp");
    snprintf(path, sizeof(path), "%s/run.trace", dir);
    snprintf(trace, sizeof(trace), "ELIXIR_TRACE=%s", path);
    for (int i = 0; i < 2; i++) {
        snprintf(cupti, sizeof(cupti), "ELIXIR_CUPTI=%s", libs[i]);
        sh_run_t r = run_refused(env);
        EXPECT(sh_count(r.err, "elixir: error: ") == 1 && strstr(r.err, cupti) &&
                   strstr(r.err, why[i]) && strstr(r.err, "the program stops (exit status 1)"),
               "expected one report of %s (%s...):\n%s", cupti, why[i], r.err);
        EXPECT(access(path, F_OK) != 0, "%s: the trace %s was made", cupti, path);
        sh_run_free(&r);
    }
    rmdir(dir);
}

/* ELIXIR_VERBOSE=1: the version first, then what the budgets became. */
static void verbose_resolved(void)
{
    static const char *const env[] = { "ELIXIR_VERBOSE=1", "ELIXIR_HOST_MEMORY=50%", NULL };
    sh_run_t r = run_child(env);
    const char *at = strstr(r.err, "option ELIXIR_GPU_MEMORY=auto -> ");
    double v = 0;
    char unit[8] = "";

    EXPECT(strstr(r.err, "elixir: libelixir.so " ELIXIR_VERSION ", process "),
           "no version banner (%s) in:\n%s", ELIXIR_VERSION, r.err);
    EXPECT(at && sscanf(at, "option ELIXIR_GPU_MEMORY=auto -> %lf %7s on device 0", &v,
                        unit) == 2 && strcmp(unit, "MiB") == 0 && v > 0 && v <= 1024,
           "no resolved GPU budget (auto, 1 GiB device) in:\n%s", r.err);
    EXPECT(strstr(r.err, "option ELIXIR_HOST_MEMORY=50% -> "), "no resolved host budget:\n%s",
           r.err);
    sh_run_free(&r);
}

static void good_values(void)
{
    static const char *const env[] = {
        "ELIXIR_VERBOSE=on", "ELIXIR_LOG=INFO", "ELIXIR_LOG_SUBSYS=^alloc",
        "ELIXIR_STATS=yes", "ELIXIR_GPU_MEMORY=512M", "ELIXIR_HOST_MEMORY=12.5%",
        "ELIXIR_MEMINFO=physical", "ELIXIR_DISABLE=false", "ELIXIR_PLAN_GUARD=1.25",
        "ELIXIR_REACH=Allocation", NULL
    };
    static const char *const listed[] = {
        "option ELIXIR_GPU_MEMORY=512M (set)", "option ELIXIR_HOST_MEMORY=12.5% (set)",
        "option ELIXIR_MEMINFO=physical (set)", "option ELIXIR_LOG_SUBSYS=^alloc (set)",
        "option ELIXIR_LOG_FILE= (default)", "option ELIXIR_PLAN_GUARD=1.25 (set)",
        "option ELIXIR_REACH=Allocation (set)", NULL
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
    bad_memory_and_paths();
    refused_whatever_the_log();
    typos();
    disabled();
    budget_under_a_chunk();
    slack_refused();
    nvme_refused();
    trace_refused();
    cupti_refused();
    verbose_resolved();
    good_values();
    subsystems();
    log_file();
    return 0;
}
