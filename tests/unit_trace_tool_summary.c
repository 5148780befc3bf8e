/* SPDX-License-Identifier: MIT */
/*
 * unit_trace_tool_summary.c - `elixir-trace summary` on a hand-made trace whose figures are
 * known: process, devices, options, time span, iteration mean/min/max (over the iterations
 * followed by a mark), peak bytes per tier and device (from MEMORY records), the top 10 of
 * 14 kernels by device time (one launch timed by a TIMING record after it, one not timed:
 * launches and timed launches both shown), the top 10 of
 * 12 allocations by size with their call sites, migrations per direction, and the share of
 * migration time hidden behind kernels on the same device, computed by hand below;
 * evictions by reason; the budgets at the start and when they came down or went back up
 * (BUDGET records); no word of dropped records in a trace without DROPPED records, and in a
 * copy with two, one line with their sum before the kernels (the timed ones as they were);
 * and with --iterations the launches and migrations of each
 * iteration.
 */
#include "unit_trace_tool.h"


static trc_writer_t *w;

static void header_events(void)
{
    trc_process_t p = { .pid = 4242, .ppid = 1, .exe_id = tt_str(w, "/usr/bin/python3"),
                        .cmdline_id = tt_str(w, "python3 train.py --steps 3"),
                        .host_id = tt_str(w, "node7") };
    trc_device_t d0 = { 0, tt_str(w, "Sim GPU A"), 16ull << 30, 9, 0, 132, NULL };
    trc_device_t d1 = { 1, tt_str(w, "Sim GPU B"), 8ull << 30, 8, 6, 84, NULL };
    trc_option_t o[2] = { { tt_str(w, "ELIXIR_GPU_MEMORY"), tt_str(w, "8G"), NULL, NULL },
                          { tt_str(w, "ELIXIR_TRACE_LEVEL"), tt_str(w, "all"), NULL, NULL } };
    trc_options_t opts = { 2, o };
    TT_EMIT(trc_emit_process(w, 1000, &p));
    TT_EMIT(trc_emit_device(w, 1000, &d0));
    TT_EMIT(trc_emit_device(w, 1000, &d1));
    TT_EMIT(trc_emit_options(w, 1000, &opts));
}

/* Allocation k (1..12): k MiB, a two-frame call site, freed at 9000 except the 12th. */
static void allocations(void)
{
    uint32_t foo = tt_str(w, "/nonexistent/libfoo.so"), bar = tt_str(w, "/nonexistent/libbar.so");
    for (uint64_t k = 1; k <= 12; k++) {
        trc_frame_t f[2] = { { foo, 0x1000 + k, NULL }, { bar, 0x20, NULL } };
        long s = trc_writer_stack(w, f, 2);
        trc_alloc_t a = { k, k % 3 == 0 ? 1 : 0, 0x700000000000ull + k * (64 * MiB), k * MiB,
                          (uint32_t)s, NULL };
        TT_EMIT(trc_emit_alloc(w, 1100 + k, &a));
    }
}

static void launch(uint64_t time, uint64_t id, const char *name, int32_t dev, uint64_t start,
                   uint64_t end)
{
    trc_launch_t l = { .id = id, .func_id = tt_str(w, name), .stream = 1, .device = dev,
                       .span = { end > 0, start, end } };
    TT_EMIT(trc_emit_launch(w, time, &l));
}

static void migration(uint64_t time, uint32_t from, uint32_t to, uint64_t bytes, int32_t dev,
                      uint64_t start, uint64_t end)
{
    trc_migration_t m = { .chunk = time, .bytes = bytes, .from = from, .to = to, .device = dev,
                          .start = start, .end = end };
    TT_EMIT(trc_emit_migration(w, time, &m));
}

static void eviction(uint64_t time, uint32_t reason)
{
    trc_eviction_t e = { .chunk = 1, .alloc = 3, .bytes = MiB, .from = TRC_TIER_GPU,
                         .to = TRC_TIER_HOST, .reason = reason };
    TT_EMIT(trc_emit_eviction(w, time, &e));
}

/*
 * Migrations: device 0 [2100,2200] and [2150,2300] (union 200 ns), [5000,5400] (400 ns);
 * device 1 [6000,6100] (100 ns): busy 700 ns.
 * Kernels: device 0 gemm [2000,3000] hides 200, gemm [5200,7200] hides 200 (its overlap with
 * device 1's migration does not count), gemm [7000,10000] (TIMING) hides 0; device 1 k05
 * [6050,6650] hides 50; an untimed launch on device 1 hides nothing.  Hidden: 450 of 700 ns
 * = 64.3%.
 */
static void work(void)
{
    launch(1500, 30, "gemm", 0, 0, 0);  /* never timed (before any mark: in no iteration) */
    TT_EMIT(trc_emit_iteration(w, 2000, &(trc_iteration_t){ 0 }));
    launch(1990, 1, "gemm", 0, 2000, 3000);
    migration(2100, TRC_TIER_GPU, TRC_TIER_HOST, MiB, 0, 2100, 2200);
    migration(2150, TRC_TIER_GPU, TRC_TIER_HOST, 2 * MiB, 0, 2150, 2300);
    TT_EMIT(trc_emit_iteration(w, 4000, &(trc_iteration_t){ 1 }));
    launch(5100, 2, "gemm", 0, 5200, 7200);
    migration(5000, TRC_TIER_HOST, TRC_TIER_GPU, MiB, 0, 5000, 5400);
    migration(6000, TRC_TIER_GPU, TRC_TIER_NVME, 4 * MiB, 1, 6000, 6100);
    launch(6000, 3, "k05", 1, 6050, 6650);
    launch(6001, 4, "untimed", 1, 0, 0);
    TT_EMIT(trc_emit_iteration(w, 7000, &(trc_iteration_t){ 2 }));
    launch(6990, 5, "gemm", 0, 0, 0);
    for (uint64_t k = 0; k < 12; k++) {
        char name[8];
        snprintf(name, sizeof(name), "k%02" PRIu64, k);
        if (k != 5)
            launch(7500 + k, 10 + k, name, 1, 8000, 8000 + (k + 1) * 100);
    }
    trc_timing_t tm = { .op = 5, .source = TRC_TIMING_CUPTI, .start = 7000, .end = 10000 };
    TT_EMIT(trc_emit_timing(w, 9500, &tm));
}

/* A BUDGET record: device dev's GPU budget and the process's host budget. */
static void budget(uint64_t time, int32_t dev, uint64_t gpu, uint64_t host)
{
    trc_budget_t b = { .device = dev, .bytes = { gpu, 0, host, 0 } };
    TT_EMIT(trc_emit_budget(w, time, &b));
}

/* drops: DROPPED records of CUPTI (at 9600 and 9700) splitting these many between them. */
static void make_trace(const char *path, uint64_t drops)
{
    w = tt_writer(path, 0);
    header_events();
    tt_memory(w, 1500, 0, MiB, 0, 0);
    budget(1500, 0, 8ull << 30, 12ull << 30);
    budget(1600, 1, 4ull << 30, 12ull << 30);
    allocations();
    tt_memory(w, 3000, 0, 6 * MiB, 2 * MiB, 0);
    tt_memory(w, 3500, 1, 512 << 10, 0, 1ull << 30);
    tt_memory(w, 5000, 0, 4 * MiB, 3 * MiB, 0);
    budget(5500, 1, 3ull << 30, 12ull << 30);          /* device 1's GPU budget came down */
    budget(5600, 0, 8ull << 30, 96 * MiB);             /* the host budget came down */
    budget(5700, 1, 3ull << 30, 96 * MiB);             /* (the same figures: nothing new) */
    budget(5800, 1, 3584ull << 20, 96 * MiB);          /* device 1's went back up */
    budget(5900, 0, 8ull << 30, 6ull << 30);           /* and the host budget */
    work();
    eviction(6200, TRC_EVICT_FOR_LAUNCH);
    eviction(6300, TRC_EVICT_FOR_LAUNCH);
    eviction(6400, TRC_EVICT_FOR_ALLOC);
    eviction(6500, TRC_EVICT_PLAN);
    eviction(6600, 9);
    for (uint64_t k = 1; k <= 11; k++)
        TT_EMIT(trc_emit_free(w, k == 11 ? 10000 : 9000, &(trc_free_t){ k }));
    if (drops) {
        TT_EMIT(trc_emit_dropped(w, 9600, &(trc_dropped_t){ TRC_TIMING_CUPTI, drops / 2 }));
        TT_EMIT(trc_emit_dropped(w, 9700, &(trc_dropped_t){ TRC_TIMING_CUPTI,
                                                             drops - drops / 2 }));
    }
    tt_close(w);
}

static void check_process(const char *out)
{
    TT_LINE(out, "format 1.10", "complete");
    TT_LINE(out, "pid 4242 (parent 1) on node7");
    TT_LINE(out, "exe", "/usr/bin/python3");
    TT_LINE(out, "cmdline", "python3 train.py --steps 3");
    TT_LINE(out, "devices     2");
    TT_LINE(out, "  0 ", "Sim GPU A", "sm_90", "132 SMs", "16.00 GiB");
    TT_LINE(out, "  1 ", "Sim GPU B", "sm_86", "84 SMs", "8.00 GiB");
    TT_LINE(out, "ELIXIR_GPU_MEMORY=8G");
    TT_LINE(out, "ELIXIR_TRACE_LEVEL=all");
    TT_LINE(out, "time span   9.00 us");
    /* Marks at 2000, 4000, 7000: 2000 and 3000 ns between marks; the last one (7000 to the
     * end, 10000) is not averaged. */
    TT_LINE(out, "iterations  3 marked; over 2 between marks: mean 2.50 us, min 2.00 us, "
                 "max 3.00 us");
}

static void check_peaks(const char *out)
{
    TT_LINE(out, "device", "gpu", "peer", "host", "nvme");
    TT_LINE(out, "  0  ", "6.00 MiB", "0 B", "3.00 MiB");
    TT_LINE(out, "  1  ", "512.00 KiB", "0 B", "1.00 GiB");
}

/* Budgets: each device's at its first record, the host budget once, then each time one came
 * down or went back up, at its time into the trace (which starts at 1000 ns). */
static void check_budgets(const char *out)
{
    TT_LINE(out, "budgets");
    TT_LINE(out, "  device 0: GPU 8.00 GiB");
    TT_LINE(out, "  device 1: GPU 4.00 GiB");
    const char *host = strstr(out, "  host (the process's): 12.00 GiB\n");
    TT_CHECK("the host budget at the start, once", 1,
             host && !strstr(host + 1, "  host (the process's)"));
    TT_LINE(out, "  at 4.50 us: device 1's GPU budget came down to 3.00 GiB");
    TT_LINE(out, "  at 4.60 us: the host budget came down to 96.00 MiB");
    TT_HASNT(out, "at 4.70 us");                       /* nothing came down then */
    TT_LINE(out, "  at 4.80 us: device 1's GPU budget went back up to 3.50 GiB");
    TT_LINE(out, "  at 4.90 us: the host budget went back up to 6.00 GiB");
}

static void check_kernels(const char *out)
{
    TT_LINE(out, "top kernels by device time (10 of 14)");
    /* gemm: 1000 + 2000 + 3000 (the last from TIMING): total 6 us, mean 2 us, over 3 of its
     * 4 launches (the one at 1500 has no device times), which the table must say. */
    TT_LINE(out, "total", "launches", "timed", "mean", "min", "max", "name");
    TT_LINE(out, "  6.00 us         4         3     2.00 us     1.00 us     3.00 us  gemm");
    TT_LINE(out, "1.20 us", "  1  ", "k11");
    TT_LINE(out, "600 ns", "k05");
    TT_LINE(out, "400 ns", "k03");
    TT_HASNT(out, "k02\n");
    TT_HASNT(out, "untimed\n");       /* untimed: sorts last, outside the top 10 */
}

static void check_allocs(const char *out)
{
    TT_LINE(out, "top allocations by size (10 of 12)");
    TT_LINE(out, "12", "12.00 MiB", "live", "libfoo.so+0x100c < libbar.so+0x20");
    TT_LINE(out, "3", "  1  ", "3.00 MiB", "libfoo.so+0x1003 < libbar.so+0x20");
    TT_HASNT(out, "libfoo.so+0x1002 ");
    TT_HASNT(out, "libfoo.so+0x1001 ");
}

/* The verdict opens the page: device 0's allocations 1, 2, 4, 5, 7, 8, 10, 11 MiB all live
 * at once (48 MiB) against its first budgets (8 GiB, host 12 GiB), device 1's 3, 6, 9, 12
 * (30 MiB) against 4 GiB; with two devices, the migrations' 700 ns against the 9 us run. */
static void check_verdict(const char *out)
{
    const char *first = "Footprint 48.00 MiB on device 0 on a 8.00 GiB GPU budget (host "
                        "12.00 GiB).\n";
    TT_CHECK("the verdict comes first", 0, strncmp(out, first, strlen(first)));
    TT_LINE(out, "Footprint 30.00 MiB on device 1 on a 4.00 GiB GPU budget (host 12.00 GiB).");
    TT_LINE(out, "Migrations took 700 ns over a run of 9.00 us; 64.3% hidden behind kernels.");
    TT_LINE(out, "allocations by call site");
    TT_LINE(out, "         1   12.00 MiB   12.00 MiB  libfoo.so+0x100c < libbar.so+0x20");
    TT_LINE(out, "         1   11.00 MiB         0 B  libfoo.so+0x100b < libbar.so+0x20");
}

static void check_migrations(const char *out)
{
    TT_LINE(out, "migrations  4");
    TT_LINE(out, "gpu  -> host", " 2 ", "3.00 MiB");
    TT_LINE(out, "host -> gpu", " 1 ", "1.00 MiB");
    TT_LINE(out, "gpu  -> nvme", " 1 ", "4.00 MiB");
    TT_LINE(out, "busy 700 ns, hidden behind kernels 450 ns (64.3%)");
    TT_LINE(out, "evictions   5");
    TT_LINE(out, "for-launch", " 2 ", "2.00 MiB");
    TT_LINE(out, "for-alloc", " 1 ");
    TT_LINE(out, "plan", " 1 ");
    TT_LINE(out, "reason-9", " 1 ");
    TT_HASNT(out, "for-copy");
}

/* Launches by enqueue time: gemm at 1990 is before the first mark; 5100, 6000, 6001, 6990 in
 * iteration 1; the eleven k* at 7500+ in iteration 2.  Migrations by start: 2100 and 2150
 * (1 + 2 MiB) in iteration 0, 5000 and 6000 (1 + 4 MiB) in iteration 1. */
static void check_iterations(const char *path)
{
    tt_result_t r = tt_run("summary", path, "--iterations", NULL);
    TT_CHECK("exit status", 0, r.status);
    TT_LINE(r.out, "index", "start", "time", "launches", "migrations", "migrated");
    TT_LINE(r.out, "       0 ", " 1.00 us ", " 2.00 us ", "  0  ", "  2  ", "3.00 MiB");
    TT_LINE(r.out, "       1 ", " 3.00 us ", " 3.00 us ", "  4  ", "  2  ", "5.00 MiB");
    TT_LINE(r.out, "       2 ", " 6.00 us ", " 3.00 us ", "  11  ", "  0  ", "0 B",
            "(to the end)");
    tt_free(&r);
}

int main(void)
{
    tt_init();
    const char *path = tt_path("summary.trace");
    make_trace(path, 0);
    tt_result_t r = tt_run("summary", path, NULL);
    TT_CHECK("exit status", 0, r.status);
    TT_CHECK("stderr bytes", 0, strlen(r.err));
    TT_HASNT(r.out, "dropped");
    check_verdict(r.out);
    check_process(r.out);
    check_peaks(r.out);
    check_budgets(r.out);
    check_kernels(r.out);
    check_allocs(r.out);
    check_migrations(r.out);
    TT_HASNT(r.out, "migrated");      /* no iteration table without --iterations */
    tt_free(&r);
    check_iterations(path);

    const char *lossy = tt_path("dropped.trace");
    make_trace(lossy, 41);
    r = tt_run("summary", lossy, NULL);
    TT_CHECK("exit status", 0, r.status);
    TT_LINE(r.out, "CUPTI dropped 41 activity records: kernel timings incomplete");
    TT_CHECK("the drops said before the kernels", 1,
             strstr(r.out, "CUPTI dropped") < strstr(r.out, "top kernels"));
    check_kernels(r.out);
    tt_free(&r);
    return tt_done();
}
