/* SPDX-License-Identifier: MIT */
/*
 * unit_trace_tool_diff.c - `elixir-trace diff A B` on two hand-made runs with known
 * changes: peaks per tier and device (up, unchanged, new in B, a device only B has), the
 * budgets each run started with (a GPU budget down, one only B has, the host budget the same;
 * a later BUDGET record that lowers them does not count),
 * iteration count and mean time, migrations and migrated bytes, kernel time; as a table and
 * as JSON parsed back with python3; and against a trace without iterations or MEMORY
 * records, whose missing figures show as '-' (null in JSON).
 */
#include "unit_trace_tool.h"


typedef struct run {
    uint64_t gpu0, host0, nvme0, gpu1;        /* peaks; gpu1 = 0: no device 1 */
    uint64_t marks[3], t_end;
    int migrations;
    uint64_t kernel_ns;                       /* per launch, three launches */
    uint64_t budget0, budget1, host;          /* GPU budgets (0: none), the host budget */
} run_t;

static void make_trace(const char *path, const run_t *r, int with_memory)
{
    trc_writer_t *w = tt_writer(path, 0);
    uint32_t k = tt_str(w, "step_kernel");
    if (with_memory) {
        TT_EMIT(trc_emit_memory(w, 900, &(trc_memory_t){ 0, { r->gpu0, 0, r->host0, r->nvme0 } }));
        TT_EMIT(trc_emit_memory(w, 950, &(trc_memory_t){ 0, { MiB, 0, 0, 0 } }));
        if (r->gpu1)
            TT_EMIT(trc_emit_memory(w, 960, &(trc_memory_t){ 1, { r->gpu1, 0, 0, 0 } }));
        TT_EMIT(trc_emit_budget(w, 900, &(trc_budget_t){ 0, { r->budget0, 0, r->host, 0 } }));
        if (r->budget1)
            TT_EMIT(trc_emit_budget(w, 960, &(trc_budget_t){ 1, { r->budget1, 0, r->host, 0 } }));
        /* a budget that came down later: diff compares what each run started with */
        TT_EMIT(trc_emit_budget(w, 990, &(trc_budget_t){ 0, { MiB, 0, MiB, 0 } }));
    }
    for (int i = 0; i < 3 && r->marks[0]; i++)
        TT_EMIT(trc_emit_iteration(w, r->marks[i], &(trc_iteration_t){ (uint64_t)i }));
    for (uint64_t i = 0; i < 3; i++) {
        trc_launch_t l = { .id = i + 1, .func_id = k, .span = { 1, 1010 + i * 1000,
                                                                1010 + i * 1000 + r->kernel_ns } };
        TT_EMIT(trc_emit_launch(w, 1005 + i * 1000, &l));
    }
    for (int i = 0; i < r->migrations; i++) {
        uint64_t t = 1100 + (uint64_t)i * 300;
        trc_migration_t m = { .chunk = (uint64_t)i, .bytes = MiB, .from = TRC_TIER_GPU,
                              .to = TRC_TIER_HOST, .start = t, .end = t + 100 };
        TT_EMIT(trc_emit_migration(w, t, &m));
    }
    TT_EMIT(trc_emit_free(w, r->t_end, &(trc_free_t){ 77 }));
    tt_close(w);
}

static void table(const char *a, const char *b)
{
    tt_result_t r = tt_run("diff", a, b, NULL);
    TT_CHECK("exit status", 0, r.status);
    TT_LINE(r.out, "peak gpu, device 0", "4.00 MiB", "6.00 MiB", "+50.0% (x1.50)");
    TT_LINE(r.out, "peak host, device 0", "1.00 MiB", "1.00 MiB", "same");
    TT_LINE(r.out, "peak nvme, device 0", "0 B", "2.00 MiB", "new (was 0)");
    TT_LINE(r.out, "peak gpu, device 1", "0 B", "1.00 MiB", "new (was 0)");
    TT_HASNT(r.out, "peak peer");
    TT_LINE(r.out, "budget gpu, device 0", "8.00 MiB", "4.00 MiB", "-50.0% (x0.50)");
    TT_LINE(r.out, "budget gpu, device 1", " - ", "2.00 MiB", " - ");
    TT_LINE(r.out, "budget host", "64.00 MiB", "64.00 MiB", "same");
    TT_LINE(r.out, "iterations ", "3", "3", "same");
    TT_LINE(r.out, "iteration time (mean)", "1.00 us", "1.50 us", "+50.0% (x1.50)");
    TT_LINE(r.out, "migrations ", "2", "4", "+100.0% (x2.00)");
    TT_LINE(r.out, "migrated bytes", "2.00 MiB", "4.00 MiB", "+100.0% (x2.00)");
    TT_LINE(r.out, "launches", "3", "3", "same");
    TT_LINE(r.out, "kernel time (total)", "300 ns", "450 ns", "+50.0% (x1.50)");
    tt_free(&r);
    r = tt_run("diff", b, a, NULL);
    TT_LINE(r.out, "peak gpu, device 0", "6.00 MiB", "4.00 MiB", "-33.3% (x0.67)");
    TT_LINE(r.out, "migrations ", "4", "2", "-50.0% (x0.50)");
    tt_free(&r);
}

static void json(const char *a, const char *b)
{
    tt_result_t r = tt_run("diff", a, b, "--json", NULL);
    TT_CHECK("exit status", 0, r.status);
    TT_JSON(r.out, "[(f['a'], f['b'], f['ratio'], f['change_pct']) for f in d['figures'] "
                   "if f['figure'] == 'peak' and f['tier'] == 'gpu' and f['device'] == 0]",
            "[(4194304, 6291456, 1.5, 50)]");
    TT_JSON(r.out, "[(f['a'], f['b'], f['ratio']) for f in d['figures'] "
                   "if f['figure'] == 'peak' and f['device'] == 1]", "[(0, 1048576, None)]");
    TT_JSON(r.out, "[(f['unit'], f['a'], f['b']) for f in d['figures'] "
                   "if f['figure'] == 'iteration time (mean)']", "[('ns', 1000, 1500)]");
    TT_JSON(r.out, "[(f['device'], f['tier'], f['a'], f['b'], f['ratio']) for f in d['figures'] "
                   "if f['figure'] == 'budget']",
            "[(0, 'gpu', 8388608, 4194304, 0.5), (1, 'gpu', None, 2097152, None)]");
    TT_JSON(r.out, "[f['change_pct'] for f in d['figures'] if f['figure'] == 'migrations']",
            "[100]");
    TT_JSON(r.out, "[f['b'] for f in d['figures'] if f['figure'] == 'kernel time (total)']",
            "[450]");
    tt_free(&r);
}

static void missing(const char *a, const char *c)
{
    tt_result_t r = tt_run("diff", a, c, NULL);
    TT_CHECK("exit status", 0, r.status);
    TT_LINE(r.out, "iteration time (mean)", "1.00 us", " - ");
    TT_LINE(r.out, "peak gpu, device 0", "4.00 MiB", " - ");
    TT_LINE(r.out, "budget gpu, device 0", "8.00 MiB", " - ");
    TT_LINE(r.out, "iterations ", "3", "0");
    tt_free(&r);
    r = tt_run("diff", a, c, "--json", NULL);
    TT_JSON(r.out, "[(f['a'], f['b'], f['ratio'], f['change_pct']) for f in d['figures'] "
                   "if f['figure'] == 'iteration time (mean)']", "[(1000, None, None, None)]");
    tt_free(&r);
}

int main(void)
{
    tt_init();
    const char *a = tt_path("a.trace"), *b = tt_path("b.trace"), *c = tt_path("c.trace");
    run_t ra = { 4 * MiB, MiB, 0, 0, { 1000, 2000, 3000 }, 4000, 2, 100, 8 * MiB, 0, 64 * MiB };
    run_t rb = { 6 * MiB, MiB, 2 * MiB, MiB, { 1000, 2500, 4000 }, 5500, 4, 150, 4 * MiB, 2 * MiB,
                 64 * MiB };
    run_t rc = { 0, 0, 0, 0, { 0, 0, 0 }, 4000, 0, 100, 0, 0, 0 };
    make_trace(a, &ra, 1);
    make_trace(b, &rb, 1);
    make_trace(c, &rc, 0);
    table(a, b);
    json(a, b);
    missing(a, c);
    return tt_done();
}
