/* SPDX-License-Identifier: MIT */
/*
 * stats.c - what the shim saw, printed once at exit with ELIXIR_STATS=1.
 *
 * Allocations are counted with current, peak and total (blocks and bytes); launches and
 * copies by kind with totals; and every hooked entry point with its number of calls (the
 * call counters also answer elixir_shim_calls, so they are always on).  All counters are
 * relaxed atomics: several threads update them at once and nothing is ordered by them.
 * The bytes of a freed block are only known when ELIXIR_STATS is on (the free wrappers then
 * ask the driver for its size), so "current bytes" is meaningful only then.
 */
#include <unistd.h>

#include "shim.h"

typedef struct stat_count {
    _Atomic int64_t current, peak, total;
} stat_count_t;

typedef struct stat_ops {
    _Atomic uint64_t count, bytes;
} stat_ops_t;

_Atomic unsigned long long shim_stat_calls[SHIM_NHOOKS];

static stat_count_t blocks, block_bytes;
static _Atomic uint64_t launches[SHIM_NLAUNCH_KINDS];
static stat_ops_t copies[SHIM_NCOPY_KINDS];
static _Atomic int printed;

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

void shim_stat_copy(shim_copy_kind_t kind, uint64_t bytes)
{
    atomic_fetch_add_explicit(&copies[kind].count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&copies[kind].bytes, bytes, memory_order_relaxed);
}

void shim_stat_launch(shim_launch_kind_t kind)
{
    atomic_fetch_add_explicit(&launches[kind], 1, memory_order_relaxed);
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
    count_reset(&blocks);
    count_reset(&block_bytes);
    for (int i = 0; i < SHIM_NLAUNCH_KINDS; i++)
        atomic_store(&launches[i], 0);
    for (int i = 0; i < SHIM_NCOPY_KINDS; i++) {
        atomic_store(&copies[i].count, 0);
        atomic_store(&copies[i].bytes, 0);
    }
    for (int i = 0; i < SHIM_NHOOKS; i++)
        atomic_store(&shim_stat_calls[i], 0);
    atomic_store(&printed, 0);
}

static void print_count(const char *what, stat_count_t *s)
{
    shim_log_plain("  %-12s %14lld %14lld %14lld", what, (long long)atomic_load(&s->current),
                   (long long)atomic_load(&s->peak), (long long)atomic_load(&s->total));
}

void shim_stats_print(void)
{
    if (!shim_stats_enabled() || atomic_exchange(&printed, 1))
        return;
    shim_log_plain("statistics of process %d", (int)getpid());
    shim_log_plain("  %-12s %14s %14s %14s", "allocations", "current", "peak", "total");
    print_count("blocks", &blocks);
    print_count("bytes", &block_bytes);
    for (int i = 0; i < SHIM_NLAUNCH_KINDS; i++)
        if (atomic_load(&launches[i]))
            shim_log_plain("  launch %-12s %14llu", launch_names[i],
                           (unsigned long long)atomic_load(&launches[i]));
    for (int i = 0; i < SHIM_NCOPY_KINDS; i++)
        if (atomic_load(&copies[i].count))
            shim_log_plain("  copy %-14s %14llu calls %14llu bytes", copy_names[i],
                           (unsigned long long)atomic_load(&copies[i].count),
                           (unsigned long long)atomic_load(&copies[i].bytes));
    for (int i = 0; i < SHIM_NHOOKS; i++)
        if (atomic_load(&shim_stat_calls[i]))
            shim_log_plain("  call %-34s %10llu", shim_hook_names[i],
                           (unsigned long long)atomic_load(&shim_stat_calls[i]));
    res_stats_print();
}
