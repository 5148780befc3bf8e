/* SPDX-License-Identifier: MIT */
/*
 * unit_trace_tool_export_html.c - `elixir-trace report FILE OUT.html` end to end.
 *
 * Writes a trace whose every name holds markup (a kernel called "<script>alert(1)</script>",
 * an exe, a device, a call-site module and an option value with <, &, ", ' and newlines),
 * with allocations that have call sites, timed launches, migrations partly overlapping a
 * kernel, iteration marks and memory samples; runs the tool and checks with Python that the
 * report is self-contained (no src= or href= anywhere, no script, link, img, iframe, object
 * or embed element, no url( or @import in the style) and well-formed enough to parse as XML,
 * that no markup from the trace got through unescaped, and that it holds the memory plot
 * (an inline SVG with its areas) and the tables with the right figures: devices (with the
 * GPU budget, what it came down to and back up to), iterations, migrations by direction
 * with the share hidden behind kernels, top kernels, the largest allocations first with
 * their call sites, and the options.  A trace with no events but its
 * process must give a report too, and one with memory samples of several devices (the host's
 * -1 among them) a plot of all devices and one per GPU.  Skips (77) when $BUILD/bin/elixir-trace (BUILD default
 * "build") or python3 is missing.
 */
#include "unit_trace_tool.h"

static const char exe[] = "/bin/<script>x</script>&\"y\"";
static const char cmdline[] = "run 'a' & <b>\nnext";
static const char kernel[] = "<script>alert(1)</script>";
static const char module[] = "/lib/libx<y>&.so";
static const char option_value[] = "<24G>&\"";

/* ------------------------------------------------------------------ the trace */

static trc_writer_t *open_trace(const char *path)
{
    trc_writer_t *w = tt_writer(path, TRC_FLAG_VIRTUAL_TIME);
    trc_process_t p = { .pid = 7, .ppid = 1, .exe_id = tt_str(w, exe),
                        .cmdline_id = tt_str(w, cmdline), .host_id = tt_str(w, "host'1") };
    trc_emit_process(w, 1000, &p);
    return w;
}

static void setup(trc_writer_t *w)
{
    trc_device_t d = { .device = 0, .name_id = tt_str(w, "H100 <&>"), .total_mem = 80 * GiB,
                       .cc_major = 9, .sm_count = 132 };
    trc_emit_device(w, 1000, &d);
    static trc_option_t opt;
    opt = (trc_option_t){ .name_id = tt_str(w, "ELIXIR_GPU_MEMORY"),
                          .value_id = tt_str(w, option_value) };
    trc_emit_options(w, 1000, &(trc_options_t){ 1, &opt });
    trc_frame_t fa[2] = { { .module_id = tt_str(w, module), .offset = 0x1234 },
                          { .module_id = tt_str(w, "/usr/lib/libc10.so"), .offset = 0x99 } };
    trc_frame_t fb[1] = { { .module_id = tt_str(w, "/usr/lib/libtorch.so"), .offset = 0x42 } };
    uint32_t sa = (uint32_t)trc_writer_stack(w, fa, 2), sb = (uint32_t)trc_writer_stack(w, fb, 1);
    trc_alloc_t a = { .id = 1, .device = 0, .addr = 1 << 30, .size = 64 * MiB, .stack_id = sa };
    trc_emit_alloc(w, 1100, &a);
    a = (trc_alloc_t){ .id = 2, .device = 0, .addr = 2u << 30, .size = GiB, .stack_id = sb };
    trc_emit_alloc(w, 1200, &a);
    a = (trc_alloc_t){ .id = 3, .device = TRC_DEVICE_HOST, .addr = 4096, .size = 4096 };
    trc_emit_alloc(w, 1300, &a);
    trc_emit_free(w, 9000, &(trc_free_t){ 1 });
}

/* Kernel intervals 1500-3000 (the markup kernel), 3000-3100 and 3100-3200 ("gemm&co"), 6000-
 * 6400 and 7000-7400 (markup kernel); migrations 1000-2000 (500 ns under a kernel) and 8000-
 * 8100 (after the last kernel with device times: it cannot count): 500 of 1100 ns hidden. */
static void work(trc_writer_t *w)
{
    uint32_t k = tt_str(w, kernel), g = tt_str(w, "gemm&co");
    static const uint64_t touches[] = { 1, 2 };
    trc_launch_t l = { .id = 1, .func_id = k, .device = 0, .span = { 1, 1500, 3000 },
                       .nallocs = 2, .allocs = touches };
    trc_emit_iteration(w, 1000, &(trc_iteration_t){ 0 });
    trc_emit_launch(w, 1450, &l);
    l = (trc_launch_t){ .id = 2, .func_id = g, .device = 0, .span = { 1, 3000, 3100 } };
    trc_emit_launch(w, 2900, &l);
    l = (trc_launch_t){ .id = 3, .func_id = g, .device = 0, .span = { 1, 3100, 3200 } };
    trc_emit_launch(w, 2950, &l);
    trc_migration_t m = { .chunk = 1, .bytes = 2 * MiB, .from = TRC_TIER_GPU,
                          .to = TRC_TIER_HOST, .start = 1000, .end = 2000, .cause = 1 };
    trc_emit_migration(w, 2000, &m);
    trc_emit_iteration(w, 4000, &(trc_iteration_t){ 1 });
    m = (trc_migration_t){ .chunk = 2, .bytes = 2 * MiB, .from = TRC_TIER_HOST,
                           .to = TRC_TIER_GPU, .start = 8000, .end = 8100 };
    trc_emit_migration(w, 8100, &m);
    l = (trc_launch_t){ .id = 4, .func_id = k, .device = 0, .span = { 1, 6000, 6400 } };
    trc_emit_launch(w, 5900, &l);
    l = (trc_launch_t){ .id = 5, .func_id = k, .device = 0, .span = { 1, 7000, 7400 } };
    trc_emit_launch(w, 6900, &l);
    tt_memory(w, 1200, 0, GiB, 64 * MiB, 0);
    TT_EMIT(trc_emit_budget(w, 1200, &(trc_budget_t){ 0, { 2 * GiB, 0, 4 * GiB, 0 } }));
    tt_memory(w, 5100, 0, GiB + 64 * MiB, 0, 0);
    TT_EMIT(trc_emit_budget(w, 5200, &(trc_budget_t){ 0, { 3 * GiB / 2, 0, 4 * GiB, 0 } }));
}

/* ------------------------------------------------------------------ the checks */

/* argv: OUT.html, the case ("full", "empty" or "multi"), exe, cmdline, kernel, module, option value. */
static const char check_py[] =
    "import re, sys\n"
    "import xml.etree.ElementTree as ET\n"
    "path, kind, exe, cmdline, kernel, module, optval = sys.argv[1:8]\n"
    "raw = open(path, encoding='utf-8').read()\n"
    "fails = []\n"
    "def check(what, exp, got):\n"
    "    if exp != got:\n"
    "        fails.append('%s: expected %r, got %r' % (what, exp, got))\n"
    "check('starts with the doctype', True, raw.startswith('<!DOCTYPE html>'))\n"
    "for bad in re.findall(r'(?i)(?:src|href)\\s*=|<script|<link|<img|<iframe|<object|<embed|url\\(|@import', raw):\n"
    "    fails.append('external reference or active markup: %r' % bad)\n"
    "try:\n"
    "    root = ET.fromstring(raw[len('<!DOCTYPE html>'):])\n"
    "except ET.ParseError as e:\n"
    "    fails.append('not well-formed: %s' % e)\n"
    "    root = ET.fromstring('<html><head><title/></head></html>')\n"
    "X = '{http://www.w3.org/2000/svg}'\n"
    "def text(e):\n"
    "    return ''.join(e.itertext())\n"
    "check('title', 'Elixir trace: ' + exe, text(root.find('head/title')))\n"
    "svgs = list(root.iter(X + 'svg'))\n"
    "titles = [text(e) for s in svgs for e in s.iter(X + 'text') if e.get('class') == 'title']\n"
    "name = exe.rsplit('/', 1)[1]\n"
    "if kind == 'multi':\n"
    "    check('plots', ['Memory per tier: %s, %s' % (name, d) for d in ('all devices', 'device 0 (H100 <&>)', 'device 1')], titles)\n"
    "else:\n"
    "    check('inline SVG plots', 1, len(svgs))\n"
    "svg = svgs[0] if svgs else ET.Element('svg')\n"
    "tables = {t.get('id'): [[text(c) for c in r] for r in t.iter('tr')] for t in root.iter('table')}\n"
    "ov = {r[0]: r[1] for r in tables.get('overview', [])}\n"
    "check('command line', cmdline, ov.get('command line'))\n"
    "if kind == 'multi':\n"
    "    dev = tables.get('devices', [[], []])[1]\n"
    "    check('budget down and back up', ['0', '2.00 GiB \u2192 1.00 GiB \u2192 1.50 GiB'], [dev[0], dev[5]] if len(dev) > 5 else dev)\n"
    "elif kind == 'empty':\n"
    "    check('tables of an empty trace', ['overview'], sorted(tables))\n"
    "    check('plot of an empty trace', ['no memory samples in this trace'],\n"
    "          [text(e) for e in svg.iter(X + 'text') if e.get('class') == 'empty'])\n"
    "else:\n"
    "    areas = sorted(e.get('data-tier') for e in svg.iter(X + 'path') if e.get('class') == 'area')\n"
    "    check('plot areas', ['gpu', 'host'], areas)\n"
    "    check('tables', ['allocations', 'devices', 'iterations', 'kernels', 'migrations', 'options', 'overview'], sorted(tables))\n"
    "    dev = tables.get('devices', [[], []])[1]\n"
    "    check('device row', ['0', 'H100 <&>', '80.00 GiB', '9.0', '132', '2.00 GiB \u2192 1.50 GiB', '1.06 GiB', '0 B', '64.00 MiB', '0 B'], dev)\n"
    "    its = tables.get('iterations', [])[1:]\n"
    "    check('iterations', [['0', '0 ns', '3.00 \\u00b5s', '3', '1', '2.00 MiB'], ['1', '3.00 \\u00b5s', '5.00 \\u00b5s', '2', '1', '2.00 MiB']], its)\n"
    "    check('migration rows', [['gpu \\u2192 host', '1', '2.00 MiB'], ['host \\u2192 gpu', '1', '2.00 MiB']], tables.get('migrations', [])[1:])\n"
    "    hidden = root.find(\".//p[@id='hidden']\")\n"
    "    check('hidden share', True, hidden is not None and '500 ns (45.5%) hidden' in text(hidden))\n"
    "    check('migrations outside', True, hidden is not None and\n"
    "          '1 of them outside the profiled iterations, where none counts' in text(hidden))\n"
    "    ks = [(r[0], r[1], r[3]) for r in tables.get('kernels', [])[1:]]\n"
    "    check('kernels', [(kernel, '3', '2.30 \\u00b5s'), ('gemm&co', '2', '200 ns')], ks)\n"
    "    al = [(r[0], r[2], r[5]) for r in tables.get('allocations', [])[1:]]\n"
    "    base = module.rsplit('/', 1)[1]\n"
    "    check('allocations', [('2', '1.00 GiB', 'libtorch.so+0x42'), ('1', '64.00 MiB', base + '+0x1234 < libc10.so+0x99'),\n"
    "          ('3', '4.00 KiB', '(no call site)')], al)\n"
    "    check('options', [['ELIXIR_GPU_MEMORY', optval]], tables.get('options', [])[1:])\n"
    "for f in fails:\n"
    "    print('FAIL', path, f)\n"
    "sys.exit(1 if fails else 0)\n";

/* Memory samples of devices 0, 1 and the host (-1): plots of all devices, 0 and 1. */
static void multi(trc_writer_t *w)
{
    setup(w);
    for (int32_t d = -1; d <= 1; d++)
        tt_memory(w, 2000 + (uint64_t)(d + 1) * 1000, d, GiB, 0, 0);
    /* device 0's GPU budget comes down, and back up part of the way */
    TT_EMIT(trc_emit_budget(w, 2000, &(trc_budget_t){ 0, { 2 * GiB, 0, 4 * GiB, 0 } }));
    TT_EMIT(trc_emit_budget(w, 2500, &(trc_budget_t){ 0, { GiB, 0, 4 * GiB, 0 } }));
    TT_EMIT(trc_emit_budget(w, 3500, &(trc_budget_t){ 0, { 3 * GiB / 2, 0, 4 * GiB, 0 } }));
}

static void full(trc_writer_t *w)
{
    setup(w);
    work(w);
}

static void report(const char *name, void (*fill)(trc_writer_t *w))
{
    char file[64];
    snprintf(file, sizeof(file), "%s.trace", name);
    const char *trace = tt_path(file);
    snprintf(file, sizeof(file), "%s.html", name);
    const char *out = tt_path(file);
    trc_writer_t *w = open_trace(trace);
    if (fill)
        fill(w);
    tt_close(w);
    if (TT_RUN(0, "report", trace, out))
        TT_CHECK("report as expected (python3's exit status)", 0,
                 tt_py(check_py, out, name, exe, cmdline, kernel, module, option_value, NULL));
}

int main(void)
{
    tt_init();
    tt_need_python("xml.etree.ElementTree");
    report("full", full);
    report("empty", NULL);
    report("multi", multi);
    return tt_done();
}
