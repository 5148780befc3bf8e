/* SPDX-License-Identifier: MIT */
/*
 * shim_trace_files.c - the trace file itself: "%p" in ELIXIR_TRACE is the process id, "%h"
 * the host name, and the file is created 0600; an existing file is never overwritten: the
 * program run twice with the same name leaves two whole traces, NAME.1.EXT and NAME.2.EXT
 * beside the old file, the log naming each; a bad ELIXIR_TRACE_LEVEL stops the program
 * (exit 1) before anything is written; with ELIXIR_TRACE unset nothing is written and no
 * recording thread is started.
 *
 * The scenario allocates, launches and frees a little, then prints its pid and its number of
 * threads.  It runs in a directory of its own (also its TMPDIR), so that a file written
 * anywhere near would be seen.
 */
#define TT_KERNELS
#include "shim_trace_test.h"

#include <dirent.h>

static void scenario(void)
{
    CUdeviceptr p;
    char line[256];
    int threads = -1;

    st_setup(0);
    CUfunction k1 = st_function(tt_ptx, "tt_k1");
    CHECK_CU(cuMemAlloc(&p, 4096));
    CHECK_CU(tt_launch1(k1, NULL, p, 16));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuMemFree(p));
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof(line), f))
        sscanf(line, "Threads: %d", &threads);
    if (f)
        fclose(f);
    printf("pid %d threads %d\n", (int)getpid(), threads);
}

/* Entries of directory `dir` other than . and .. */
static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    EXPECT(d != NULL, "cannot open %s", dir);
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

/* Run the scenario in directory dir (cwd and TMPDIR) with env; its pid and thread count. */
static sh_run_t run_in(const char *dir, int preload, const char **env, int *pid, int *threads)
{
    char cwd[PATH_MAX], tmpdir[PATH_MAX + 8];
    const char *all[8] = { tmpdir };

    snprintf(tmpdir, sizeof(tmpdir), "TMPDIR=%s", dir);
    for (int i = 0; env && env[i] && i < 6; i++)
        all[i + 1] = env[i];
    EXPECT(getcwd(cwd, sizeof(cwd)) && chdir(dir) == 0, "cannot enter %s", dir);
    sh_run_t r = sh_run("scenario", preload, all);
    EXPECT(chdir(cwd) == 0, "cannot go back to %s", cwd);
    EXPECT(r.status == 0 && sscanf(r.out, "pid %d threads %d", pid, threads) == 2,
           "scenario exited %d: %s%s", r.status, r.out, r.err);
    return r;
}

/* %p and %h: the file carries the scenario's pid and the host name, mode 0600, and reads
 * back whole. */
static void percent_p(const char *dir)
{
    char pattern[PATH_MAX], env[PATH_MAX + 16], file[PATH_MAX + 128], host[64];
    const char *e[] = { env, NULL };
    int pid, threads;
    tt_trace_t t;
    struct stat st;

    EXPECT(gethostname(host, sizeof(host)) == 0, "gethostname: %s", strerror(errno));
    snprintf(pattern, sizeof(pattern), "%s/run-%%h-%%p.trace", dir);
    snprintf(env, sizeof(env), "ELIXIR_TRACE=%s", pattern);
    sh_run_t r = run_in(dir, 1, e, &pid, &threads);
    snprintf(file, sizeof(file), "%s/run-%s-%d.trace", dir, host, pid);
    EXPECT(stat(file, &st) == 0, "no %s (ELIXIR_TRACE=%s)", file, pattern);
    EXPECT((st.st_mode & 0777) == 0600, "%s has mode %o, expected 600", file,
           (unsigned)(st.st_mode & 0777));
    EXPECT(entries(dir) == 1, "%d files in %s, expected the trace only", entries(dir), dir);
    tt_load(file, &t);
    tt_expect_clean(&t, file);
    EXPECT(t.complete && tt_count(&t, TRC_EV_LAUNCH) == 1 &&
               tt_nth(&t, TRC_EV_PROCESS, 0)->u.process.pid == (uint32_t)pid,
           "%s: complete %d, %zu launches", file, t.complete, tt_count(&t, TRC_EV_LAUNCH));
    tt_free(&t);
    unlink(file);
    sh_run_free(&r);
    printf("%%p and %%h: %s, mode 600, complete\n", file);
}

/* An existing file keeps its bytes; two runs with its name record kept.1.trace and
 * kept.2.trace, each whole and of its own process, the log naming the file used. */
static void existing(const char *dir)
{
    char file[PATH_MAX], env[PATH_MAX + 16], got[64] = "", used[PATH_MAX + 16],
        want[4 * PATH_MAX];
    const char *e[] = { env, NULL };
    int pid, threads;

    snprintf(file, sizeof(file), "%s/kept.trace", dir);
    snprintf(env, sizeof(env), "ELIXIR_TRACE=%s", file);
    FILE *f = fopen(file, "w");
    EXPECT(f && fputs("not a trace\n", f) >= 0 && fclose(f) == 0, "cannot write %s", file);
    for (int n = 1; n <= 2; n++) {
        sh_run_t r = run_in(dir, 1, e, &pid, &threads);
        tt_trace_t t;
        snprintf(used, sizeof(used), "%s/kept.%d.trace", dir, n);
        snprintf(want, sizeof(want), "ELIXIR_TRACE=%s: %s exists (never overwritten); "
                 "recording to %s", file, file, used);
        EXPECT(sh_count(r.err, want) == 1, "run %d: expected \"%s\" once in:\n%s", n, want,
               r.err);
        tt_load(used, &t);
        tt_expect_clean(&t, used);
        EXPECT(t.complete && tt_count(&t, TRC_EV_LAUNCH) == 1 &&
                   tt_nth(&t, TRC_EV_PROCESS, 0)->u.process.pid == (uint32_t)pid,
               "%s: complete %d, %zu launches", used, t.complete, tt_count(&t, TRC_EV_LAUNCH));
        tt_free(&t);
        sh_run_free(&r);
    }
    f = fopen(file, "r");
    EXPECT(f && fgets(got, sizeof(got), f), "cannot read %s back", file);
    fclose(f);
    EXPECT(strcmp(got, "not a trace\n") == 0, "%s was overwritten: now starts '%s'", file, got);
    EXPECT(entries(dir) == 3, "%d files in %s, expected the old one and two traces",
           entries(dir), dir);
    for (int n = 1; n <= 2; n++) {
        snprintf(used, sizeof(used), "%s/kept.%d.trace", dir, n);
        unlink(used);
    }
    unlink(file);
    printf("existing file: kept; two runs recorded kept.1.trace and kept.2.trace\n");
}

/* ELIXIR_TRACE unset: no file, and no more threads than without the shim's recording. */
static void unset(const char *dir)
{
    int pid, plain, shim;
    sh_run_t a = run_in(dir, 0, NULL, &pid, &plain);
    sh_run_t b = run_in(dir, 1, NULL, &pid, &shim);
    char env[64];
    const char *e[] = { env, NULL };
    int traced;

    EXPECT(entries(dir) == 0, "%d files appeared in %s without ELIXIR_TRACE", entries(dir), dir);
    EXPECT(shim == plain, "%d threads under the shim without ELIXIR_TRACE, %d without the shim",
           shim, plain);
    /* The comparison can fail: with recording on, the recorder has a writer thread. */
    snprintf(env, sizeof(env), "ELIXIR_TRACE=%s", "on.trace");
    sh_run_t c = run_in(dir, 1, e, &pid, &traced);
    EXPECT(traced > plain, "%d threads while recording, %d without: the check above proves "
           "nothing", traced, plain);
    EXPECT(entries(dir) == 1, "recording into %s/on.trace made %d files", dir, entries(dir));
    char on[PATH_MAX + 16];
    snprintf(on, sizeof(on), "%s/on.trace", dir);
    unlink(on);
    sh_run_free(&a);
    sh_run_free(&b);
    sh_run_free(&c);
    printf("unset: no file, %d threads as without the shim (%d while recording)\n", shim,
           traced);
}

/* The scenario runs from another directory: relative LD_LIBRARY_PATH entries (build/sim)
 * become absolute. */
static void absolute_library_path(void)
{
    const char *lp = getenv("LD_LIBRARY_PATH");
    char out[4 * PATH_MAX] = "", one[PATH_MAX], abs[PATH_MAX];
    size_t n = 0;

    while (lp && *lp && n < sizeof(out) - PATH_MAX - 2) {
        size_t len = strcspn(lp, ":");
        snprintf(one, sizeof(one), "%.*s", (int)len, lp);
        n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%s", n ? ":" : "",
                              realpath(one, abs) ? abs : one);
        lp += len + (lp[len] == ':');
    }
    if (n)
        setenv("LD_LIBRARY_PATH", out, 1);
}

/* A bad ELIXIR_TRACE_LEVEL stops the program at its first CUDA call, naming the variable and
 * the accepted values, before the trace file is made. */
static void bad_level(const char *dir)
{
    char file[PATH_MAX], env[PATH_MAX + 16];
    const char *e[] = { env, "ELIXIR_TRACE_LEVEL=everything", NULL };
    char cwd[PATH_MAX];

    snprintf(file, sizeof(file), "%s/level.trace", dir);
    snprintf(env, sizeof(env), "ELIXIR_TRACE=%s", file);
    EXPECT(getcwd(cwd, sizeof(cwd)) && chdir(dir) == 0, "cannot enter %s", dir);
    sh_run_t r = sh_run("scenario", 1, e);
    EXPECT(chdir(cwd) == 0, "cannot go back to %s", cwd);
    EXPECT(r.status == 1 && !strstr(r.out, "pid") &&
               sh_count(r.err, "ELIXIR_TRACE_LEVEL=\"everything\" is not valid") == 1 &&
               strstr(r.err, "summary, allocs or all"),
           "expected exit 1 and one error naming ELIXIR_TRACE_LEVEL and its values, got %d:\n%s",
           r.status, r.err);
    EXPECT(entries(dir) == 0, "%d files in %s after the refusal", entries(dir), dir);
    sh_run_free(&r);
    printf("bad ELIXIR_TRACE_LEVEL: the program stops, no file\n");
}

static char dir[] = "/tmp/elixir-trace-files-XXXXXX";

/* At exit, pass or fail: the scenario's directory and whatever is left in it. */
static void remove_dir(void)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[PATH_MAX];

    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
            unlink(path);
        }
    if (d)
        closedir(d);
    rmdir(dir);
}

int main(int argc, char **argv)
{

    sh_scenario_child(argc, argv, scenario);
    EXPECT(mkdtemp(dir) != NULL, "mkdtemp: %s", strerror(errno));
    atexit(remove_dir);
    sh_lib();           /* found (and kept) from the test's directory, before any chdir */
    absolute_library_path();
    percent_p(dir);
    existing(dir);
    bad_level(dir);
    unset(dir);
    return 0;
}
