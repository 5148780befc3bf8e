/* SPDX-License-Identifier: MIT */
/*
 * bench.h - helpers shared by the benchmarks in bench/: a monotonic clock, pinning to one CPU, a
 * `-n RUNS` argument, medians, the shim under test and its call counters, and running the benchmark
 * itself again as a child (on the plain simulator or with the shim preloaded) to keep the best
 * figure of each row it prints.  Static functions only, so that every bench/NAME.c stays one
 * program from one file.
 */
#ifndef BENCH_H
#define BENCH_H

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* CLOCK_MONOTONIC, in nanoseconds. */
static inline double bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The host clock a benchmark of driver calls reads, in nanoseconds: the simulator's virtual
 * host clock where sim_clock (its sim_activity_clock) is there, else CLOCK_MONOTONIC. */
static inline double bench_host_ns(uint64_t (*sim_clock)(void))
{
    return sim_clock ? (double)sim_clock() : bench_now_ns();
}

static inline int bench_by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of v[0..n), which it sorts. */
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), bench_by_value);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * Keeps this process, and the threads and children it starts later, on the CPU it runs on now;
 * 0, or -errno when the affinity cannot be set.  The simulator hands every operation from the
 * submitting thread to its executor thread; across two cores that hand-off costs several times
 * what it costs on one, and which of the two a run gets is up to the scheduler, so an unpinned
 * comparison measures the scheduler more than the code under test.
 */
static inline int bench_pin_to_one_cpu(void)
{
    cpu_set_t set;
    int cpu = sched_getcpu();
    CPU_ZERO(&set);
    CPU_SET(cpu >= 0 ? cpu : 0, &set);
    return sched_setaffinity(0, sizeof(set), &set) == 0 ? 0 : -errno;
}

/* elixir_shim_calls(name) of a preloaded shim, or -2 when none is loaded. */
static inline long long bench_shim_calls(const char *name)
{
    long long (*calls)(const char *);
    *(void **)&calls = dlsym(RTLD_DEFAULT, "elixir_shim_calls");
    return calls ? calls(name) : -2;
}

/* The shim under test: $BUILD/libelixir.so (build/ by default), as an absolute path; NULL when
 * it is not there. */
static inline const char *bench_shim_path(void)
{
    static char path[PATH_MAX];
    char rel[PATH_MAX];
    const char *build = getenv("BUILD");
    snprintf(rel, sizeof(rel), "%s/libelixir.so", build && *build ? build : "build");
    return realpath(rel, path) ? path : NULL;
}

/*
 * Finds the shim under test and this program (argv0) as absolute paths, into *shim and self;
 * 0, or -ENOENT after saying on stderr, as `who`, which one is missing.
 */
static inline int bench_find_shim_and_self(const char *who, const char *argv0, const char **shim,
                                           char self[PATH_MAX])
{
    *shim = bench_shim_path();
    if (*shim && realpath(argv0, self))
        return 0;
    fprintf(stderr, "%s: cannot find %s/libelixir.so or this program\n", who,
            getenv("BUILD") ? getenv("BUILD") : "build");
    return -ENOENT;
}

/*
 * Runs `self run` as a child under env(1): LD_PRELOAD removed, then `env` added (VAR=value
 * words, "" for none), then LD_PRELOAD=shim when shim is not NULL.  For every line
 * "KEY X NS" the child prints whose KEY is `key` and whose X is a row (row(X) >= 0), best[row]
 * becomes NS when it is 0 or more than NS.  Returns N of the child's line "WHAT-seen N", or -3
 * when it printed none, failed, or could not be started.
 */
static inline long long bench_run_child(const char *self, const char *shim, const char *env,
                                        const char *key, int (*row)(long long x), double *best)
{
    char cmd[5 * PATH_MAX], line[256], word[32];
    long long seen = -3, x;
    double ns;

    if (snprintf(cmd, sizeof(cmd), "env -u LD_PRELOAD %s %s%s%s '%s' run", env,
                 shim ? "LD_PRELOAD='" : "", shim ? shim : "", shim ? "'" : "",
                 self) >= (int)sizeof(cmd))
        return -3;
    fflush(stdout);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -3;
    while (fgets(line, sizeof(line), p)) {
        int i;
        if (sscanf(line, "%31s %lld %lf", word, &x, &ns) == 3 && strcmp(word, key) == 0) {
            if ((i = row(x)) >= 0 && (best[i] == 0 || ns < best[i]))
                best[i] = ns;
        } else {
            sscanf(line, "%*[a-z]-seen %lld", &seen);
        }
    }
    return pclose(p) == 0 ? seen : -3;
}

/*
 * The run count of a benchmark invoked as `NAME [-n RUNS]`: `def` without arguments, else RUNS
 * from 1 to `max`; -1 after printing the usage or what is wrong with the value.
 */
static inline int bench_runs_arg(int argc, char **argv, const char *name, int def, int max)
{
    char *end;
    long v;

    if (argc == 1)
        return def;
    if (argc != 3 || strcmp(argv[1], "-n") != 0) {
        fprintf(stderr, "usage: %s [-n RUNS]   (RUNS: 1 to %d, default %d)\n", name, max, def);
        return -1;
    }
    v = strtol(argv[2], &end, 10);
    if (end == argv[2] || *end || v < 1 || v > max) {
        fprintf(stderr, "%s: -n takes a whole number of runs from 1 to %d, not '%s'\n", name,
                max, argv[2]);
        return -1;
    }
    return (int)v;
}

#endif
