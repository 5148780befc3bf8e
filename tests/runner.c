/* SPDX-License-Identifier: MIT */
/*
 * runner.c - the test runner behind `make test`.
 *
 * Every program in $BUILD/tests (but this one) and every script tests/NAME.sh is one test.
 * Tests run from the repository root, two at a time by default (ELIXIR_TEST_JOBS), each in
 * its own process group with a time limit (ELIXIR_TEST_TIMEOUT seconds, default 300), with
 * LD_LIBRARY_PATH pointing at the simulator and ELIXIR_SIM_RACECHECK=fail unless set.
 * Exit status 0 is a pass, 77 a skip, anything else (or a timeout) a failure.  Output goes to
 * $BUILD/test-logs/NAME.log.  Arguments, when given, select tests whose names contain one of
 * them.
 *
 * Each test is reported as it finishes, with how many are done of how many:
 *     [ 12/312] PASS copy_peer                                  0.41s
 *     [ 13/312] SKIP fuzz_trace                                 no clang with libFuzzer
 *     [ 14/312] FAIL copy_3d                                    exit 1
 *         | the last 40 lines of its log
 * A skipped test gives its reason as the last line of its output ("skip: REASON", by
 * convention; the prefix is dropped).  On a terminal the PASS lines overwrite one another, so
 * that skips and failures stay on the screen.  At the end come the slowest tests and, as the
 * last line (which .ci/run parses), "N passed, N failed, N skipped".
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_TESTS 1024
#define SLOWEST 5                   /* tests listed at the end by time */

typedef struct test {
    char name[128];
    char path[512];
    int script;
    pid_t pid;
    double start, end;
    int done, status, timed_out, reported;
} test_t;

static test_t tests[MAX_TESTS];
static int ntests;
static const char *build = "build";
static int tty;                     /* stdout is a terminal: PASS lines overwrite one another */
static int status_line;             /* a PASS line is on the screen, not ended by a newline */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int selected(const char *name, int argc, char **argv)
{
    if (argc <= 1)
        return 1;
    for (int i = 1; i < argc; i++)
        if (strstr(name, argv[i]))
            return 1;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const test_t *)a)->name, ((const test_t *)b)->name);
}

static double duration(const test_t *t)
{
    return t->end - t->start;
}

/* Longest first: for the list of the slowest tests. */
static int by_time(const void *a, const void *b)
{
    double x = duration(*(test_t *const *)a), y = duration(*(test_t *const *)b);
    return (x < y) - (x > y);
}

static void collect(const char *dir, const char *suffix, int script, int argc, char **argv)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    if (!d)
        return;
    while ((e = readdir(d)) && ntests < MAX_TESTS) {
        size_t n = strlen(e->d_name), sl = strlen(suffix);
        char path[512];
        struct stat st;
        if (e->d_name[0] == '.' || strcmp(e->d_name, "runner") == 0 || n <= sl ||
            strcmp(e->d_name + n - sl, suffix) != 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) || (!script && !(st.st_mode & S_IXUSR)))
            continue;
        test_t *t = &tests[ntests];
        snprintf(t->name, sizeof(t->name), "%.*s", (int)(n - sl), e->d_name);
        if (!selected(t->name, argc, argv))
            continue;
        snprintf(t->path, sizeof(t->path), "%s", path);
        t->script = script;
        ntests++;
    }
    closedir(d);
}

static void log_path(const test_t *t, char *buf, size_t size)
{
    snprintf(buf, size, "%.400s/test-logs/%.127s.log", build, t->name);
}

static void start(test_t *t)
{
    char log[600];
    log_path(t, log, sizeof(log));
    t->start = now();
    t->pid = fork();
    if (t->pid != 0)
        return;
    setpgid(0, 0);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
    }
    if (t->script)
        execl("/bin/bash", "bash", t->path, (char *)NULL);
    else
        execl(t->path, t->path, (char *)NULL);
    _exit(127);
}

static void show_log(const test_t *t)
{
    char path[600], line[1024];
    log_path(t, path, sizeof(path));
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    long lines = 0;
    while (fgets(line, sizeof(line), f))
        lines++;
    rewind(f);
    for (long i = 0; fgets(line, sizeof(line), f); i++)
        if (i >= lines - 40)
            printf("    | %s", line);
    fclose(f);
}

/* The reason a test skipped: the last non-blank line of its log, without a leading "skip:"
 * (any case), trimmed, into buf; "no reason given" when the log has none. */
static void skip_reason(const test_t *t, char *buf, size_t size)
{
    char path[600], line[1024], last[1024] = "";
    log_path(t, path, sizeof(path));
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof(line), f)) {
        size_t n = strlen(line);
        while (n && strchr(" \t\r\n", line[n - 1]))
            line[--n] = '\0';
        if (n)
            memcpy(last, line, n + 1);
    }
    if (f)
        fclose(f);
    const char *r = last;
    while (*r == ' ' || *r == '\t')
        r++;
    if (strncasecmp(r, "skip:", 5) == 0)
        r += 5;
    while (*r == ' ')
        r++;
    snprintf(buf, size, "%s", *r ? r : "no reason given");
}

static void setup_env(void)
{
    char buf[4096];
    const char *old = getenv("LD_LIBRARY_PATH");
    snprintf(buf, sizeof(buf), "%s/sim%s%s", build, old ? ":" : "", old ? old : "");
    setenv("LD_LIBRARY_PATH", buf, 1);
    setenv("BUILD", build, 1);
    setenv("ELIXIR_SIM_RACECHECK", "fail", 0);
    snprintf(buf, sizeof(buf), "%s/test-logs", build);
    mkdir(buf, 0755);
}

/* Reap finished tests and kill overdue ones; returns how many are still running. */
static int poll_running(double timeout)
{
    int running = 0;
    for (int i = 0; i < ntests; i++) {
        test_t *t = &tests[i];
        if (!t->pid || t->done)
            continue;
        int st;
        pid_t p = waitpid(t->pid, &st, WNOHANG);
        if (p == t->pid) {
            t->done = 1;
            t->end = now();
            t->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            kill(-t->pid, SIGKILL);     /* stray children of the test */
            continue;
        }
        if (now() - t->start > timeout && !t->timed_out) {
            t->timed_out = 1;
            kill(-t->pid, SIGKILL);
        }
        running++;
    }
    return running;
}

/* Print one result line: "[ k/N] WORD name detail".  A PASS on a terminal stays unended so
 * that the next line replaces it; anything else first clears such a line. */
static void result_line(int k, const char *word, const char *name, const char *detail)
{
    int width = snprintf(NULL, 0, "%d", ntests);
    if (status_line)
        printf("\r\033[K");
    printf("[%*d/%d] %s %-40s %s", width, k, ntests, word, name, detail);
    status_line = tty && strcmp(word, "PASS") == 0;
    if (!status_line)
        printf("\n");
    fflush(stdout);
}

/* Report test t, the k-th to finish, and count it. */
static void report(const test_t *t, int k, int *pass, int *fail, int *skip)
{
    char detail[1100];
    if (t->timed_out) {
        snprintf(detail, sizeof(detail), "timed out after %.0f s", duration(t));
        result_line(k, "FAIL", t->name, detail);
        show_log(t);
        (*fail)++;
    } else if (t->status == 0) {
        snprintf(detail, sizeof(detail), "%6.2fs", duration(t));
        result_line(k, "PASS", t->name, detail);
        (*pass)++;
    } else if (t->status == 77) {
        skip_reason(t, detail, sizeof(detail));
        result_line(k, "SKIP", t->name, detail);
        (*skip)++;
    } else {
        snprintf(detail, sizeof(detail), "exit %d", t->status);
        result_line(k, "FAIL", t->name, detail);
        show_log(t);
        (*fail)++;
    }
}

/* The SLOWEST longest tests, on one line each. */
static void show_slowest(void)
{
    test_t *order[MAX_TESTS];
    int n = 0;
    for (int i = 0; i < ntests; i++)
        order[n++] = &tests[i];
    qsort(order, (size_t)n, sizeof(order[0]), by_time);
    if (n > SLOWEST)
        n = SLOWEST;
    if (n > 1) {
        printf("slowest:\n");
        for (int i = 0; i < n; i++)
            printf("  %7.2fs %s\n", duration(order[i]), order[i]->name);
    }
}

int main(int argc, char **argv)
{
    char dir[512];
    int pass = 0, fail = 0, skip = 0, next = 0, reported = 0;
    const char *v = getenv("BUILD");
    if (v && *v)
        build = v;
    char *end;
    v = getenv("ELIXIR_TEST_TIMEOUT");
    double timeout = v ? strtod(v, &end) : 300;
    if (v && (!*v || *end || !(timeout > 0) || timeout > 86400)) {
        fprintf(stderr, "runner: ELIXIR_TEST_TIMEOUT=\"%s\" is not valid: expected seconds, "
                "above 0 and at most 86400\n", v);
        return 2;
    }
    v = getenv("ELIXIR_TEST_JOBS");
    long jobs = v ? strtol(v, &end, 10) : 2;
    if (v && (!*v || *end || jobs < 1 || jobs > 256)) {
        fprintf(stderr, "runner: ELIXIR_TEST_JOBS=\"%s\" is not valid: expected a whole "
                "number from 1 to 256\n", v);
        return 2;
    }
    tty = isatty(1);

    snprintf(dir, sizeof(dir), "%s/tests", build);
    collect(dir, "", 0, argc, argv);
    collect("tests", ".sh", 1, argc, argv);
    qsort(tests, (size_t)ntests, sizeof(test_t), by_name);
    setup_env();
    while (reported < ntests) {
        int running = poll_running(timeout);
        while (running < jobs && next < ntests) {
            start(&tests[next++]);
            running++;
        }
        /* Report each as soon as it is done, in the order they finish. */
        for (int i = 0; i < next; i++)
            if (tests[i].done && !tests[i].reported) {
                tests[i].reported = 1;
                report(&tests[i], ++reported, &pass, &fail, &skip);
            }
        usleep(20000);
    }
    if (status_line)
        printf("\n");
    show_slowest();
    printf("%d passed, %d failed, %d skipped\n", pass, fail, skip);
    return fail ? 1 : 0;
}
