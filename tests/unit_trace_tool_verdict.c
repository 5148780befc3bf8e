/* SPDX-License-Identifier: MIT */
/*
 * unit_trace_tool_verdict.c - the verdict that opens `elixir-trace summary`, and Python call
 * sites in `allocs` and `summary`.
 *
 * A job whose allocations peak at 3.1 GiB (a free and an allocation at the same instant do
 * not add up) on a 1 GiB GPU budget with a 24 GiB host budget, migrating for 4.1 s of a
 * 4.5 s run with 8.2 ms of that behind a kernel, must read "Footprint 3.10 GiB on a 1.00 GiB
 * GPU budget (host 24.00 GiB): 3.1x what the GPU holds." and "Migrations took 91% of the run
 * (4.100 s of 4.500 s); 0.2% hidden behind kernels." as its first lines; a trace without
 * budgets or migrations compares the footprint with the device's memory and says that
 * nothing moved; one whose kernels have device times over [1, 2] s only (one profiled
 * iteration) says how many migrations ran outside that span, where none can count as hidden
 * (2 of 3: 0.1 s of the 0.4 s they took hidden).  Stacks with Python frames show their
 * Python call site (the program's own frames, leaving out a package's and the standard
 * library's; the standard library's when there is nothing else), --json gives every Python
 * frame with its kind, and equal Python sites reached through different native frames make
 * one row.
 */
#include "unit_trace_tool.h"

static trc_writer_t *w;

static void process_and_device(uint64_t total)
{
    trc_process_t p = { .pid = 7, .ppid = 1, .exe_id = tt_str(w, "/usr/bin/python3"),
                        .cmdline_id = tt_str(w, "python3 train.py"),
                        .host_id = tt_str(w, "node1") };
    trc_device_t d = { 0, tt_str(w, "Sim GPU"), total, 9, 0, 132, NULL };
    TT_EMIT(trc_emit_process(w, 0, &p));
    TT_EMIT(trc_emit_device(w, 0, &d));
}

static void alloc(uint64_t time, uint64_t id, uint64_t size, uint32_t stack)
{
    trc_alloc_t a = { id, 0, 0x700000000000ull + id * (4 * GiB), size, stack, NULL };
    TT_EMIT(trc_emit_alloc(w, time, &a));
}

static void oversubscribed(const char *path)
{
    const uint64_t s = 1000000000ull;
    w = tt_writer(path, 0);
    process_and_device(80 * GiB);
    trc_budget_t b = { .device = 0, .bytes = { GiB, 0, 24 * GiB, 0 } };
    TT_EMIT(trc_emit_budget(w, 0, &b));
    alloc(10, 1, GiB, 0);
    alloc(20, 2, 2 * GiB, 0);
    alloc(30, 3, (uint64_t)(0.1 * (double)GiB), 0);
    TT_EMIT(trc_emit_free(w, s, &(trc_free_t){ 2 }));
    alloc(s, 4, 2 * GiB, 0);           /* at the free's instant: the peak stays 3.1 GiB */
    trc_migration_t m = { .chunk = 1, .bytes = GiB, .from = TRC_TIER_HOST, .to = TRC_TIER_GPU,
                          .device = 0, .start = s / 5, .end = 43 * s / 10 };
    TT_EMIT(trc_emit_migration(w, s / 5, &m));
    trc_launch_t l = { .id = 1, .func_id = tt_str(w, "gemm"), .stream = 1, .device = 0,
                       .span = { 1, 43 * s / 10 - 8200000, 43 * s / 10 } };
    TT_EMIT(trc_emit_launch(w, 4 * s, &l));
    TT_EMIT(trc_emit_iteration(w, 45 * s / 10, &(trc_iteration_t){ 0 }));
    tt_close(w);
}

static void fits(const char *path)
{
    w = tt_writer(path, 0);
    process_and_device(80 * GiB);
    alloc(10, 1, GiB, 0);
    tt_close(w);
}

/* Kernels with device times over [1, 2] s; migrations over [1.5, 1.6] s, then [3, 3.2] and
 * [4, 4.1] s, after them. */
static void outside(const char *path)
{
    const uint64_t s = 1000000000ull;
    w = tt_writer(path, 0);
    process_and_device(80 * GiB);
    alloc(10, 1, GiB, 0);
    trc_launch_t l = { .id = 1, .func_id = tt_str(w, "gemm"), .stream = 1, .device = 0,
                       .span = { 1, s, 2 * s } };
    TT_EMIT(trc_emit_launch(w, s, &l));
    const uint64_t at[3][2] = { { 15 * s / 10, 16 * s / 10 }, { 3 * s, 32 * s / 10 },
                                { 4 * s, 41 * s / 10 } };
    for (int i = 0; i < 3; i++) {
        trc_migration_t m = { .chunk = 1, .bytes = 2 * MiB, .from = TRC_TIER_HOST,
                              .to = TRC_TIER_GPU, .device = 0, .start = at[i][0],
                              .end = at[i][1] };
        TT_EMIT(trc_emit_migration(w, at[i][0], &m));
    }
    tt_close(w);
}

/* Python stacks: the same Python frames over two native stacks, Python frames that are all
 * the standard library's, and a native stack. */
static void python_sites(const char *path)
{
    w = tt_writer(path, 0);
    process_and_device(80 * GiB);
    uint32_t lib = tt_str(w, "/usr/lib/libpython3.11.so.1.0");
    trc_frame_t n1[1] = { { lib, 0x100, NULL } }, n2[1] = { { lib, 0x200, NULL } };
    trc_pyframe_t py[3] = {
        { tt_str(w, "/usr/lib/python3.11/threading.py"), tt_str(w, "Thread.run"), 10, NULL, NULL },
        { tt_str(w, "/home/u/model.py"), tt_str(w, "Net.forward"), 20, NULL, NULL },
        { tt_str(w, "/venv/lib/python3.11/site-packages/torch/nn/module.py"),
          tt_str(w, "Module._call_impl"), 5, NULL, NULL },
    };
    trc_pyframe_t std[2] = {
        { tt_str(w, "/usr/lib64/python3.11/json/decoder.py"), tt_str(w, "decode"), 3, NULL, NULL },
        { tt_str(w, "<frozen importlib._bootstrap>"), tt_str(w, "_load"), 1, NULL, NULL },
    };
    long s1 = trc_writer_stack_py(w, &(trc_stack_t){ .depth = 1, .frames = n1, .pydepth = 3,
                                                     .pyframes = py });
    long s2 = trc_writer_stack_py(w, &(trc_stack_t){ .depth = 1, .frames = n2, .pydepth = 3,
                                                     .pyframes = py });
    long s3 = trc_writer_stack_py(w, &(trc_stack_t){ .pydepth = 2, .pyframes = std });
    long s4 = trc_writer_stack(w, n1, 1);
    TT_CHECK("four stacks", 4, s1 > 0 && s2 > 0 && s3 > 0 && s4 > 0 ? s4 : -1);
    alloc(10, 1, 3 * MiB, (uint32_t)s1);
    alloc(20, 2, 5 * MiB, (uint32_t)s2);
    alloc(30, 3, 1 * MiB, (uint32_t)s3);
    alloc(40, 4, 2 * MiB, (uint32_t)s4);
    tt_close(w);
}

static void check_python(const char *path)
{
    const char *site = "model.py:20 Net.forward";
    tt_result_t r = tt_run("allocs", "--stack-depth", "2", path, NULL);
    TT_CHECK("allocs exit status", 0, r.status);
    TT_LINE(r.out, "5.00 MiB", site);
    TT_LINE(r.out, "3.00 MiB", site);
    TT_LINE(r.out, "1.00 MiB", "decoder.py:3 decode < <frozen importlib._bootstrap>:1 _load");
    TT_LINE(r.out, "2.00 MiB", "libpython3.11.so.1.0+0x100");
    TT_HASNT(r.out, "threading.py");
    TT_HASNT(r.out, "module.py");
    tt_free(&r);
    r = tt_run("allocs", "--json", path, NULL);
    TT_CHECK("allocs --json exit status", 0, r.status);
    TT_HAS(r.out, "\"file\": \"/venv/lib/python3.11/site-packages/torch/nn/module.py\", "
                  "\"function\": \"Module._call_impl\", \"line\": 5, \"kind\": \"package\"}");
    TT_HAS(r.out, "\"function\": \"Thread.run\", \"line\": 10, \"kind\": \"stdlib\"}");
    TT_HAS(r.out, "\"function\": \"Net.forward\", \"line\": 20, \"kind\": \"program\"}");
    tt_free(&r);
    r = tt_run("allocs", "--by-site", "--stack-depth", "2", path, NULL);
    TT_CHECK("allocs --by-site exit status", 0, r.status);
    TT_LINE(r.out, "4 of 4 allocations match, by call site");
    TT_LINE(r.out, "         2    8.00 MiB    8.00 MiB  ", site);
    TT_LINE(r.out, "         1    2.00 MiB    2.00 MiB  libpython3.11.so.1.0+0x100");
    tt_free(&r);
    r = tt_run("summary", "--stack-depth", "1", path, NULL);
    TT_CHECK("summary exit status", 0, r.status);
    TT_LINE(r.out, "         2    8.00 MiB    8.00 MiB  model.py:20 Net.forward");
    tt_free(&r);
    TT_RUN(2, "allocs", "--by-site", "--json", path);
}

int main(void)
{
    tt_init();
    const char *path = tt_path("over.trace");
    oversubscribed(path);
    tt_result_t r = tt_run("summary", path, NULL);
    TT_CHECK("exit status", 0, r.status);
    const char *want = "Footprint 3.10 GiB on a 1.00 GiB GPU budget (host 24.00 GiB): 3.1x "
                       "what the GPU holds.\n"
                       "Migrations took 91% of the run (4.100 s of 4.500 s); 0.2% hidden "
                       "behind kernels.\n\n";
    if (strncmp(r.out, want, strlen(want)) != 0)
        TT_FAIL("expected the summary to open with\n%sgot\n%.400s", want, r.out);
    tt_free(&r);

    path = tt_path("fits.trace");
    fits(path);
    r = tt_run("summary", path, NULL);
    TT_CHECK("exit status", 0, r.status);
    want = "Footprint 1.00 GiB on a 80.00 GiB GPU device.\n"
           "No migrations: nothing was moved between tiers.\n\n";
    if (strncmp(r.out, want, strlen(want)) != 0)
        TT_FAIL("expected the summary to open with\n%sgot\n%.400s", want, r.out);
    tt_free(&r);

    path = tt_path("outside.trace");
    outside(path);
    r = tt_run("summary", path, NULL);
    TT_CHECK("exit status", 0, r.status);
    TT_LINE(r.out, "Migrations took ", "; 25.0% hidden behind kernels (2 of 3 outside the "
                   "profiled iterations, where none counts).");
    tt_free(&r);

    path = tt_path("python.trace");
    python_sites(path);
    check_python(path);
    return tt_done();
}
