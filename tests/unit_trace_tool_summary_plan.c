/* SPDX-License-Identifier: MIT */
/*
 * unit_trace_tool_summary_plan.c - the plan section of `elixir-trace summary` (format 1.6)
 * on made-up traces.
 *
 * A run under ELIXIR_POLICY=plan: plan 1 made at 10 ms from iteration 1 (100 operations,
 * predicted 2 ms) and followed by iterations 2, 3 and 4, whose FOLLOW records come 2.5 ms apart
 * (measured 2.50 ms, 1.25x the prediction), and by iteration 5, in progress when its context
 * went 0.9 ms later (a partial record, 1.9: not measured); plan 2 made later and followed by
 * one iteration only (nothing measured); plan 3, plan 2 predicted again with the times of
 * iteration 7 under it (1.10), last.  The summary names each kind as such.  Kernels run over
 * [11, 12] and [14, 15] ms.  The plan's moves: two to the GPU, issued at 11.5 and 12.5 ms and
 * seen complete at 12.5 and 13 ms, the first with its copy's device times [11.2, 11.8] ms (a
 * TIMING record naming its move id), and one back over [14.5, 15.5] ms: busy 2.1 ms, 1.1 ms of
 * it behind kernels (52.4%).  The reactive engine's: one to the GPU over [13, 13.5] ms (nothing
 * hidden) and one back at 20 ms, after the last kernel with device times (so it cannot count as
 * hidden, and the summary says so).  MAPPING records add up to 4 remaps of the plan in 264 us
 * and 2 of the reactive engine in 132 us.  The guard, off, kept plan 1 as iteration 4 began
 * (2.5 ms against 4 ms paged on demand) and dropped plan 2 as iteration 8 began (5 ms against 4
 * ms, over its limit of 1.1).
 * A run under ELIXIR_POLICY=reactive gets one line with its mapping time; a trace that does
 * not say which policy ran (an older one) gets no plan section at all.
 */
#include "unit_trace_tool.h"

#define US 1000ull
#define MS 1000000ull

static trc_writer_t *w;

static void header(const char *policy)
{
    trc_process_t p = { .pid = 9, .ppid = 1, .exe_id = tt_str(w, "/usr/bin/python3"),
                        .cmdline_id = tt_str(w, "python3 train.py"),
                        .host_id = tt_str(w, "node1") };
    trc_device_t d = { 0, tt_str(w, "Sim GPU"), 80 * GiB, 9, 0, 132, NULL };
    TT_EMIT(trc_emit_process(w, 0, &p));
    TT_EMIT(trc_emit_device(w, 0, &d));
    if (policy) {
        trc_option_t o = { tt_str(w, "ELIXIR_POLICY"), tt_str(w, policy), NULL, NULL };
        TT_EMIT(trc_emit_options(w, 0, &(trc_options_t){ 1, &o }));
    }
}

static void kernel(uint64_t id, uint64_t start, uint64_t end)
{
    trc_launch_t l = { .id = id, .func_id = tt_str(w, "gemm"), .stream = 1, .device = 0,
                       .span = { 1, start, end } };
    TT_EMIT(trc_emit_launch(w, start, &l));
}

static void move(uint32_t from, uint32_t to, uint64_t start, uint64_t end, uint64_t flags)
{
    trc_migration_t m = { .chunk = start, .bytes = 2 * MiB, .from = from, .to = to,
                          .device = 0, .start = start, .end = end, .flags = flags,
                          .move = flags ? 900 + start / MS : 0 };
    TT_EMIT(trc_emit_migration(w, end, &m));
}

static void follow_of(uint64_t time, uint64_t plan, uint64_t it, uint64_t unforeseen,
                      uint64_t partial)
{
    trc_follow_t f = { .device = 0, .plan = plan, .iteration = it, .foreseen = 100 - unforeseen,
                       .unforeseen = unforeseen, .missed = unforeseen, .moves = 40,
                       .chunks = 38, .left = 2, .partial = partial };
    TT_EMIT(trc_emit_follow(w, time, &f));
}

static void follow(uint64_t time, uint64_t plan, uint64_t it, uint64_t unforeseen)
{
    follow_of(time, plan, it, unforeseen, 0);
}

static void mapping(uint64_t time, uint64_t pr, uint64_t pns, uint64_t rr, uint64_t rns)
{
    trc_mapping_t m = { 0, pr, pns, rr, rns };
    TT_EMIT(trc_emit_mapping(w, time, &m));
}

static void guard(uint64_t time, uint64_t plan, uint64_t it, uint32_t verdict, uint64_t planned,
                  uint64_t limit)
{
    trc_guard_t g = { 0, plan, it, verdict, planned, 4 * MS, limit };
    TT_EMIT(trc_emit_guard(w, time, &g));
}

static void planned_run(const char *path)
{
    w = tt_writer(path, TRC_FLAG_VIRTUAL_TIME);
    header("plan");
    trc_plan_t p = { .device = 0, .plan = 1, .iteration = 1, .ops = 100, .buffers = 10,
                     .moves = 40, .predicted_ns = 2 * MS, .bound_ns = 1500 * US,
                     .compute_ns = 1 * MS, .bytes_in = 64 * MiB, .bytes_out = 32 * MiB,
                     .planning_ns = 3 * MS };
    TT_EMIT(trc_emit_plan(w, 10 * MS, &p));
    kernel(1, 11 * MS, 12 * MS);
    move(TRC_TIER_HOST, TRC_TIER_GPU, 11500 * US, 12500 * US, TRC_MIG_PLANNED);
    /* Its copy's device times, which replace the interval from issue to completion seen. */
    trc_timing_t tm = { 900 + 11, TRC_TIMING_EVENTS, 11200 * US, 11800 * US };
    TT_EMIT(trc_emit_timing(w, 12600 * US, &tm));
    follow(12 * MS, 1, 2, 0);
    move(TRC_TIER_HOST, TRC_TIER_GPU, 12500 * US, 13 * MS, TRC_MIG_PLANNED);
    move(TRC_TIER_HOST, TRC_TIER_GPU, 13 * MS, 13500 * US, 0);
    kernel(2, 14 * MS, 15 * MS);
    follow(14500 * US, 1, 3, 2);
    move(TRC_TIER_GPU, TRC_TIER_HOST, 14500 * US, 15500 * US, TRC_MIG_PLANNED);
    mapping(15 * MS, 3, 198 * US, 1, 66 * US);
    follow(17 * MS, 1, 4, 0);
    guard(17 * MS, 1, 4, TRC_GUARD_KEPT, 2500 * US, 0);
    follow_of(17900 * US, 1, 5, 0, 1);  /* (in progress as its context went: not measured) */
    p.plan = 2;
    p.iteration = 5;
    TT_EMIT(trc_emit_plan(w, 18 * MS, &p));
    follow(19 * MS, 2, 7, 0);
    guard(19 * MS, 2, 8, TRC_GUARD_DROPPED, 5 * MS, 1100);
    move(TRC_TIER_GPU, TRC_TIER_HOST, 20 * MS, 20200 * US, 0);
    mapping(21 * MS, 1, 66 * US, 1, 66 * US);
    p.plan = 3;
    p.iteration = 7;
    p.again = 2;
    TT_EMIT(trc_emit_plan(w, 21500 * US, &p));
    tt_close(w);
}

static void check_planned(const char *path)
{
    tt_result_t r = tt_run("summary", path, NULL);
    TT_CHECK("summary exit status", 0, r.status);
    TT_LINE(r.out, "  device 0: 3 plans made (1 of them a plan predicted again), 5 iterations "
                   "followed them");
    TT_LINE(r.out, "  plan 1 at ", ": profiled iteration 1, 100 operations, 10 buffers, 40 moves;",
            "planned in 3.00 ms (host)");
    TT_LINE(r.out, "    predicted iteration 2.00 ms (bound 1.50 ms, compute 1.00 ms), "
                   "64.00 MiB to the GPU and 32.00 MiB back");
    TT_LINE(r.out, "    measured 2.50 ms (mean of 2 followed in a row): 1.25x the prediction");
    TT_LINE(r.out, "  plan 2 at ", ": profiled iteration 5,");
    TT_LINE(r.out, "  plan 3 at ", ": plan 2 predicted again with the times of iteration 7 "
                   "under it, 100 operations, 10 buffers, 40 moves; replayed in 3.00 ms (host)");
    TT_LINE(r.out, "    measured: no two iterations in a row followed it");
    TT_LINE(r.out, "    guard: kept as iteration 4 began: an iteration that followed it took "
                   "2.50 ms against 4.00 ms for one paged on demand (0.62x, guard off)");
    TT_LINE(r.out, "    guard: dropped as iteration 8 began: an iteration that followed it took "
                   "5.00 ms against 4.00 ms for one paged on demand (1.25x, limit 1.1x); the "
                   "reactive engine served the rest");
    TT_LINE(r.out, "  operations  foreseen 498, not foreseen 2, the plan's not come 2");
    TT_LINE(r.out, "  plan moves  200 issued: 190 chunks moved, 10 left to the reactive engine");
    TT_LINE(r.out, "  by the plan               3");
    TT_LINE(r.out, "    host -> gpu ", " 2 ", "4.00 MiB");
    TT_LINE(r.out, "    busy 2.10 ms, hidden behind kernels 1.10 ms (52.4%)");
    TT_LINE(r.out, "    1 timed on the device (their copies' events); the others from issue to "
                   "completion seen");
    TT_LINE(r.out, "  reactive                  2");
    TT_LINE(r.out, "    busy 700.00 us, hidden behind kernels 0 ns (0.0%)");
    TT_LINE(r.out, "    1 of them ran where no kernel has device times");
    TT_LINE(r.out, "    by the plan ", " 4 remaps ", "264.00 us", "(66.00 us each)");
    TT_LINE(r.out, "    reactive ", " 2 remaps ", "132.00 us", "(66.00 us each)");
    /* The migrations section counts both kinds, as before. */
    TT_LINE(r.out, "migrations  5");
    tt_free(&r);
}

/* A reactive run: one line, with its mapping time; an older trace: nothing. */
static void check_reactive(const char *reactive, const char *old)
{
    w = tt_writer(reactive, 0);
    header("reactive");
    move(TRC_TIER_HOST, TRC_TIER_GPU, 1 * MS, 2 * MS, 0);
    mapping(3 * MS, 0, 0, 2, 150 * US);
    tt_close(w);
    w = tt_writer(old, 0);
    header(NULL);
    move(TRC_TIER_HOST, TRC_TIER_GPU, 1 * MS, 2 * MS, 0);
    tt_close(w);
    tt_result_t r = tt_run("summary", reactive, NULL);
    TT_CHECK("reactive: exit status", 0, r.status);
    TT_LINE(r.out, "plan        none: the reactive engine (ELIXIR_POLICY=reactive); mapping "
                   "calls 2 remaps, 150.00 us (75.00 us each)");
    TT_HASNT(r.out, "by the plan");
    tt_free(&r);
    r = tt_run("summary", old, NULL);
    TT_CHECK("old: exit status", 0, r.status);
    TT_HASNT(r.out, "\nplan");
    TT_HASNT(r.out, "reactive engine");
    tt_free(&r);
}

int main(void)
{
    tt_init();
    const char *path = tt_path("plan.trace");
    planned_run(path);
    check_planned(path);
    check_reactive(tt_path("reactive.trace"), tt_path("old.trace"));
    return tt_failures ? 1 : 0;
}
