/* SPDX-License-Identifier: MIT */
/*
 * runner.c - the test runner behind `make test`.
 *
 * Every program in $BUILD/tests (but this one) and every script tests/NAME.sh is one test.
 * Tests run from the repository root, two at a time by default (ELIXIR_TEST_JOBS), each in
 * its own process group with a time limit (ELIXIR_TEST_TIMEOUT seconds, default 300), with
 * LD_LIBRARY_PATH pointing at the simulator and ELIXIR_SIM_RACECHECK=fail unless set.
 * Exit status 0 is a pass, 77 a skip, anything else (or a timeout) a failure.  Output goes to
 * $BUILD/test-logs/NAME.log and is shown when a test fails.  Arguments, when given, select
 * tests whose names contain one of them.  The last line is "N passed, N failed, N skipped".
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_TESTS 1024

typedef struct test {
    char name[128];
    char path[512];
    int script;
    pid_t pid;
    double start, end;
    int done, status, timed_out;
} test_t;

static test_t tests[MAX_TESTS];
static int ntests;
static const char *build = "build";

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

static void start(test_t *t)
{
    char log[600];
    snprintf(log, sizeof(log), "%s/test-logs/%s.log", build, t->name);
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
    snprintf(path, sizeof(path), "%s/test-logs/%s.log", build, t->name);
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

static void report(const test_t *t, int *pass, int *fail, int *skip)
{
    double secs = t->end - t->start;
    if (t->timed_out) {
        printf("FAIL %-40s (timed out)\n", t->name);
        show_log(t);
        (*fail)++;
    } else if (t->status == 0) {
        printf("PASS %-40s %6.2fs\n", t->name, secs);
        (*pass)++;
    } else if (t->status == 77) {
        printf("SKIP %-40s\n", t->name);
        (*skip)++;
    } else {
        printf("FAIL %-40s (exit %d)\n", t->name, t->status);
        show_log(t);
        (*fail)++;
    }
    fflush(stdout);
}

int main(int argc, char **argv)
{
    char dir[512];
    int pass = 0, fail = 0, skip = 0, next = 0, reported = 0;
    const char *v = getenv("BUILD");
    if (v && *v)
        build = v;
    v = getenv("ELIXIR_TEST_TIMEOUT");
    double timeout = v ? atof(v) : 300;
    v = getenv("ELIXIR_TEST_JOBS");
    int jobs = v ? atoi(v) : 2;
    if (jobs < 1)
        jobs = 1;

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
        /* Report in name order, as soon as each is done. */
        while (reported < ntests && tests[reported].done)
            report(&tests[reported++], &pass, &fail, &skip);
        usleep(20000);
    }
    printf("%d passed, %d failed, %d skipped\n", pass, fail, skip);
    return fail ? 1 : 0;
}
