/* SPDX-License-Identifier: MIT */
/*
 * stats.c - what the shim saw, printed once at exit with ELIXIR_STATS=1.
 *
 * Allocations are counted with current, peak and total (blocks and bytes); launches and
 * copies by kind with totals; and every hooked entry point with its number of calls (the
 * call counters also answer elixir_shim_calls, so they are always on).  The printout leads
 * with what matters (residency's migrations, evictions and the host's time blocked on them,
 * with its share of the run), gives sizes in B/KiB/MiB/GiB, and lists the calls of the
 * entry points other than launches and copies (those are given by kind; a call the driver
 * failed is not counted there).  All counters are
 * relaxed atomics: several threads update them at once and nothing is ordered by them.
 * Calls and launches, counted on every call, are counted per thread (a load and a store, no
 * locked instruction) and summed when read; an exiting thread adds its counts to the totals.
 * The bytes of a freed block are only known when ELIXIR_STATS is on (the free wrappers then
 * ask the driver for its size), so "current bytes" is meaningful only then.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shim.h"

typedef struct stat_count {
    _Atomic int64_t current, peak, total;
} stat_count_t;

typedef struct stat_ops {
    _Atomic uint64_t count, bytes;
} stat_ops_t;

SHIM_TLS shim_calls_t shim_stat_calls;
/* Calls of threads that have exited, or that could not join the list. */
static _Atomic unsigned long long calls_gone[SHIM_NHOOKS];

static stat_count_t blocks, block_bytes;
static _Atomic uint64_t launches[SHIM_NLAUNCH_KINDS];
static stat_ops_t copies[SHIM_NCOPY_KINDS];
static stat_ops_t host_time[SHIM_NHT];  /* (count: calls; bytes: ns) */
static _Atomic int printed;
int shim_host_timing;

/* One thread's entry on the list of live threads while the thread runs: its call and launch
 * counts (its shim_stat_calls, whose state follows this one's). */
typedef struct stat_thread {
    shim_calls_t *calls;
    struct stat_thread *next;
    int state;                      /* 0: not joined yet; 1: on the list; -1: counts globally */
} stat_thread_t;

static SHIM_TLS stat_thread_t tls_stats;
static pthread_mutex_t threads_lock = PTHREAD_MUTEX_INITIALIZER;
static stat_thread_t *threads;
static pthread_key_t threads_key;
static pthread_once_t threads_once = PTHREAD_ONCE_INIT;
static int threads_key_ok;

static const char *const copy_names[] = {
#define X(e, name) [SHIM_COPY_##e] = name,
    SHIM_COPY_KINDS(X)
#undef X
};

static const char *const launch_names[] = {
#define X(e, name) [SHIM_LAUNCH_##e] = name,
    SHIM_LAUNCH_KINDS(X)
#undef X
};

static void count_add(stat_count_t *s, int64_t n)
{
    int64_t cur = atomic_fetch_add_explicit(&s->current, n, memory_order_relaxed) + n;
    int64_t peak = atomic_load_explicit(&s->peak, memory_order_relaxed);

    while (cur > peak && !atomic_compare_exchange_weak_explicit(&s->peak, &peak, cur,
                                                                memory_order_relaxed,
                                                                memory_order_relaxed))
        ;
    atomic_fetch_add_explicit(&s->total, n, memory_order_relaxed);
}

static void count_sub(stat_count_t *s, int64_t n)
{
    atomic_fetch_sub_explicit(&s->current, n, memory_order_relaxed);
}

const char *shim_fmt_size(uint64_t bytes, char buf[32])
{
    static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    double v = (double)bytes;
    int u = -1;

    if (bytes < 1024) {
        snprintf(buf, 32, "%llu B", (unsigned long long)bytes);
        return buf;
    }
    while (v >= 1024 && u < 5) {
        v /= 1024;
        u++;
    }
    snprintf(buf, 32, "%.1f %s", v, units[u]);
    return buf;
}

void shim_stat_alloc(uint64_t bytes)
{
    count_add(&blocks, 1);
    count_add(&block_bytes, (int64_t)bytes);
}

void shim_stat_free(uint64_t bytes)
{
    count_sub(&blocks, 1);
    count_sub(&block_bytes, (int64_t)bytes);
}

uint64_t shim_ht_now(void)
{
    const shim_driver_t *d = atomic_load_explicit(&shim_drv, memory_order_acquire);
    struct timespec t;
    if (d && d->sim_clock)
        return d->sim_clock();
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

void shim_ht_add(shim_ht_t k, uint64_t t0)
{
    atomic_fetch_add_explicit(&host_time[k].count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&host_time[k].bytes, shim_ht_now() + 1 - t0,   /* (begin's +1) */
                              memory_order_relaxed);
}

void shim_stat_copy(shim_copy_kind_t kind, uint64_t bytes)
{
    atomic_fetch_add_explicit(&copies[kind].count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&copies[kind].bytes, bytes, memory_order_relaxed);
}

/* An exiting thread: its counts go to the totals, and it leaves the list. */
static void thread_exit(void *arg)
{
    stat_thread_t *t = arg;
    pthread_mutex_lock(&threads_lock);
    for (stat_thread_t **p = &threads; *p; p = &(*p)->next)
        if (*p == t) {
            *p = t->next;
            break;
        }
    for (int i = 0; i < SHIM_NLAUNCH_KINDS; i++)
        atomic_fetch_add_explicit(&launches[i], atomic_load(&t->calls->launches[i]),
                                  memory_order_relaxed);
    for (int i = 0; i < SHIM_NHOOKS; i++)
        atomic_fetch_add_explicit(&calls_gone[i], atomic_load(&t->calls->n[i]),
                                  memory_order_relaxed);
    t->state = t->calls->state = -1;    /* anything counted later counts globally */
    pthread_mutex_unlock(&threads_lock);
}

static void threads_init(void)
{
    threads_key_ok = pthread_key_create(&threads_key, thread_exit) == 0;
}

/* Put the calling thread's counts on the list (or, failing that, count globally). */
static void thread_join(stat_thread_t *t)
{
    t->calls = &shim_stat_calls;
    pthread_once(&threads_once, threads_init);
    if (!threads_key_ok || pthread_setspecific(threads_key, t) != 0) {
        t->state = t->calls->state = -1;
        return;
    }
    pthread_mutex_lock(&threads_lock);
    t->next = threads;
    threads = t;
    t->state = t->calls->state = 1;
    pthread_mutex_unlock(&threads_lock);
}

void shim_stat_launch_slow(shim_launch_kind_t kind)
{
    stat_thread_t *t = &tls_stats;
    if (t->state == 0)
        thread_join(t);
    if (t->state > 0)
        atomic_fetch_add_explicit(&shim_stat_calls.launches[kind], 1, memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&launches[kind], 1, memory_order_relaxed);
}

void shim_stat_call_slow(shim_hook_t h)
{
    stat_thread_t *t = &tls_stats;
    if (t->state == 0)
        thread_join(t);
    if (t->state > 0)
        atomic_fetch_add_explicit(&shim_stat_calls.n[h], 1, memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&calls_gone[h], 1, memory_order_relaxed);
}

unsigned long long shim_stat_calls_of(shim_hook_t h)
{
    pthread_mutex_lock(&threads_lock);
    unsigned long long n = atomic_load(&calls_gone[h]);
    for (const stat_thread_t *t = threads; t; t = t->next)
        n += atomic_load_explicit(&t->calls->n[h], memory_order_relaxed);
    pthread_mutex_unlock(&threads_lock);
    return n;
}

/* Launches of `kind` counted so far, by every thread. */
static uint64_t launches_of(int kind)
{
    pthread_mutex_lock(&threads_lock);
    uint64_t n = atomic_load(&launches[kind]);
    for (const stat_thread_t *t = threads; t; t = t->next)
        n += atomic_load_explicit(&t->calls->launches[kind], memory_order_relaxed);
    pthread_mutex_unlock(&threads_lock);
    return n;
}

int shim_stats_enabled(void)
{
    return shim_opt_int(SHIM_OPT_STATS) != 0;
}

static void count_reset(stat_count_t *s)
{
    atomic_store(&s->current, 0);
    atomic_store(&s->peak, 0);
    atomic_store(&s->total, 0);
}

void shim_stats_reset(void)
{
    shim_nccl_stats_reset();
    count_reset(&blocks);
    count_reset(&block_bytes);
    /* In a forked child only this thread is left, and the lock may have been held by another:
     * the list is now this thread's counts alone, if it had joined. */
    pthread_mutex_init(&threads_lock, NULL);
    threads = tls_stats.state > 0 ? &tls_stats : NULL;
    tls_stats.next = NULL;
    for (int i = 0; i < SHIM_NLAUNCH_KINDS; i++) {
        atomic_store(&launches[i], 0);
        atomic_store(&shim_stat_calls.launches[i], 0);
    }
    for (int i = 0; i < SHIM_NCOPY_KINDS; i++) {
        atomic_store(&copies[i].count, 0);
        atomic_store(&copies[i].bytes, 0);
    }
    for (int i = 0; i < SHIM_NHT; i++) {
        atomic_store(&host_time[i].count, 0);
        atomic_store(&host_time[i].bytes, 0);
    }
    for (int i = 0; i < SHIM_NHOOKS; i++) {
        atomic_store(&calls_gone[i], 0);
        atomic_store(&shim_stat_calls.n[i], 0);
    }
    atomic_store(&printed, 0);
}

static void print_count(const char *what, stat_count_t *s)
{
    shim_log_plain("  %-12s %14lld %14lld %14lld", what, (long long)atomic_load(&s->current),
                   (long long)atomic_load(&s->peak), (long long)atomic_load(&s->total));
}

static void print_sizes(const char *what, stat_count_t *s)
{
    char cur[32], peak[32], total[32];

    shim_log_plain("  %-12s %14s %14s %14s", what,
                   shim_fmt_size((uint64_t)atomic_load(&s->current), cur),
                   shim_fmt_size((uint64_t)atomic_load(&s->peak), peak),
                   shim_fmt_size((uint64_t)atomic_load(&s->total), total));
}

/* Seconds since the process started (/proc/self/stat's start time against the boot-time
 * clock), or -1 when they cannot be read. */
static double run_seconds(void)
{
    char buf[1024];
    unsigned long long start = 0;
    struct timespec now;
    long hz = sysconf(_SC_CLK_TCK);
    FILE *f = fopen("/proc/self/stat", "r");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    const char *p;

    if (f)
        fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')');              /* after the command name, which may hold spaces */
    /* fields 3 (state) to 21 skipped; field 22 is the start time in clock ticks */
    if (!p || hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &now) != 0 ||
        sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d "
               "%*d %llu", &start) != 1)
        return -1;
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9 - (double)start / (double)hz;
}

/* "NAME N in X ms" of host-time kind k appended to line, after ", " unless first (nothing
 * when it has no calls). */
static void host_part(char *line, size_t len, const char *name, shim_ht_t k)
{
    uint64_t n = atomic_load(&host_time[k].count);
    size_t at = strlen(line);
    if (n && at < len)
        snprintf(line + at, len - at, "%s%s %llu in %.1f ms", at ? ", " : "", name,
                 (unsigned long long)n, (double)atomic_load(&host_time[k].bytes) / 1e6);
}

/* Where the host's time went (shim_ht_t): the application's launches and copies, whole and
 * in the driver, and its synchronisations; residency's driver calls, made inside those and
 * the other wrappers. */
static void print_host_time(void)
{
    char line[512] = "";
    host_part(line, sizeof(line), "launches", SHIM_HT_LAUNCH);
    host_part(line, sizeof(line), "the driver's launch calls", SHIM_HT_LAUNCH_DRV);
    host_part(line, sizeof(line), "copies and memsets", SHIM_HT_COPY);
    host_part(line, sizeof(line), "the driver's copy and memset calls", SHIM_HT_COPY_DRV);
    host_part(line, sizeof(line), "synchronisations", SHIM_HT_SYNC_APP);
    if (line[0])
        shim_log_plain("host time: %s", line);
    line[0] = '\0';
    host_part(line, sizeof(line), "copies of migrations", SHIM_HT_MOVE_COPY);
    host_part(line, sizeof(line), "mapping calls", SHIM_HT_MAP);
    host_part(line, sizeof(line), "memory made or released", SHIM_HT_PHYS);
    host_part(line, sizeof(line), "event records", SHIM_HT_RECORD);
    host_part(line, sizeof(line), "event queries", SHIM_HT_QUERY);
    host_part(line, sizeof(line), "stream waits", SHIM_HT_STREAM_WAIT);
    host_part(line, sizeof(line), "host waits", SHIM_HT_SYNC);
    if (line[0])
        shim_log_plain("host time in residency's driver calls: %s", line);
}

/* Entry points whose calls are given above as launches and copies by kind. */
static int counted_as_launch_or_copy(const char *name)
{
    return strncmp(name, "cuLaunch", 8) == 0 || strncmp(name, "cuGraphLaunch", 13) == 0 ||
           strncmp(name, "cuMemcpy", 8) == 0 || strncmp(name, "cuMemset", 8) == 0;
}

/*
 * What matters leads: per device, the migrations each way, the evictions, the host's time
 * blocked on migrations and its share of the run, then budgets and peaks (res_stats.c); then the
 * allocations (sizes in B/KiB/MiB/GiB), launches and copies by kind, the other devices'
 * figures, and the calls of the entry points not already given as launches or copies.
 */
void shim_stats_print(void)
{
    double run_s;

    if (!shim_stats_enabled() || atomic_exchange(&printed, 1))
        return;
    run_s = run_seconds();
    if (run_s > 0)
        shim_log_plain("statistics of process %d (run %.3f s)", (int)getpid(), run_s);
    else
        shim_log_plain("statistics of process %d", (int)getpid());
    res_stats_print(run_s, 1);
    print_host_time();
    shim_log_plain("  %-12s %14s %14s %14s", "allocations", "current", "peak", "total");
    print_count("blocks", &blocks);
    print_sizes("bytes", &block_bytes);
    for (int i = 0; i < SHIM_NLAUNCH_KINDS; i++) {
        uint64_t n = launches_of(i);
        if (n)
            shim_log_plain("  launch %-12s %14llu", launch_names[i], (unsigned long long)n);
    }
    for (int i = 0; i < SHIM_NCOPY_KINDS; i++) {
        char size[32];
        if (atomic_load(&copies[i].count))
            shim_log_plain("  copy %-14s %14llu calls %14s", copy_names[i],
                           (unsigned long long)atomic_load(&copies[i].count),
                           shim_fmt_size(atomic_load(&copies[i].bytes), size));
    }
    res_stats_print(run_s, 0);
    for (int i = 0; i < SHIM_NHOOKS; i++) {
        unsigned long long n = shim_stat_calls_of((shim_hook_t)i);
        if (n && !counted_as_launch_or_copy(shim_hook_names[i]))
            shim_log_plain("  call %-34s %10llu", shim_hook_names[i], n);
    }
    shim_nccl_stats_print();
}
