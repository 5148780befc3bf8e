/* SPDX-License-Identifier: MIT */
/*
 * unit_trace_tool_export_svg.c - `elixir-trace plot FILE OUT.svg [--device N] [--size WxH]`
 * end to end.
 *
 * Each case writes a trace with the tracer's writer, runs the tool, and has Python's
 * xml.etree parse the SVG and measure it: the size, the title, one area per tier that holds
 * bytes (none for the others), one dashed line and label per iteration mark, the migration
 * ticks per direction, and the height an area reaches, read back in bytes through the y grid
 * lines' data-bytes (and its time through the x grid lines' data-ns).
 *  - long: 100,000 samples that change every time, with one sample of a spike 5x the rest in
 *    the middle: the path stays at most a few points per pixel column, and the spike still
 *    reaches its full height at its own time;
 *  - two devices: summed by default, one with --device 1; their GPU budgets (BUDGET records)
 *    as a dashed line at their sum, stepping down when one comes down, from the first record
 *    on, 500 ns into the trace (the y axis then reaches the budget, above the peak);
 *  - in the long case, a budget far above the samples is not drawn but named in the
 *    subtitle;
 *  - no memory samples: a picture saying so, exit status 0;
 *  - bad options (an unknown device, a size too small): a failure and no output file.
 * The exe and device names hold <, &, ", ' and a newline: the XML must parse and the title
 * read back unchanged.  Skips (77) when $BUILD/bin/elixir-trace (BUILD default "build") or
 * python3 is missing.
 */
#include "unit_trace_tool.h"

static const char exe[] = "/x/<plot>&\"\n'.py";
static const char exe_base[] = "<plot>&\"\n'.py";
static const char dev_name[] = "dev & <1>";

/* ------------------------------------------------------------------ measuring the SVG */

/* argv: OUT.svg, then the expectations as JSON; only the keys given are checked. */
static const char check_py[] =
    "import json, re, sys\n"
    "import xml.etree.ElementTree as ET\n"
    "NS = '{http://www.w3.org/2000/svg}'\n"
    "path, exp = sys.argv[1], json.loads(sys.argv[2])\n"
    "root = ET.parse(path).getroot()\n"
    "def els(tag, cls):\n"
    "    return [e for e in root.iter(NS + tag) if e.get('class') == cls]\n"
    "def text(e):\n"
    "    return ''.join(e.itertext())\n"
    "got = {'root': root.tag, 'size': [root.get('width'), root.get('height')]}\n"
    "got['title'] = [text(e) for e in els('text', 'title')]\n"
    "got['empty'] = [text(e) for e in els('text', 'empty')]\n"
    "areas = {e.get('data-tier'): e.get('d') for e in els('path', 'area')}\n"
    "got['tiers'] = sorted(areas)\n"
    "got['iterations'] = [int(e.get('data-index')) for e in els('line', 'iteration')]\n"
    "got['labels'] = [text(e) for e in els('text', 'iteration-label')]\n"
    "got['migrations'] = sorted(e.get('data-direction') for e in els('path', 'migrations'))\n"
    "got['subtitle'] = ' '.join(text(e) for e in els('text', 'subtitle'))\n"
    "budget = [e.get('d') for e in els('path', 'budget')]\n"
    "got['budget_paths'] = len(budget)\n"
    "def linear(pairs):\n"
    "    (v0, p0), (v1, p1) = pairs[0], pairs[-1]\n"
    "    k = (p1 - p0) / (v1 - v0)\n"
    "    return (lambda v: p0 + k * (v - v0)), (lambda p: v0 + (p - p0) / k), abs(1 / k)\n"
    "def points(d):\n"
    "    x = y = 0.0; pts = []; cmds = 0; tok = re.findall(r'[MHVZ]|-?[0-9.]+', d); i = 0\n"
    "    while i < len(tok):\n"
    "        c = tok[i]; i += 1; cmds += 1\n"
    "        if c == 'M': x, y = float(tok[i]), float(tok[i + 1]); i += 2\n"
    "        elif c == 'H': x = float(tok[i]); i += 1\n"
    "        elif c == 'V': y = float(tok[i]); i += 1\n"
    "        pts.append((x, y))\n"
    "    return pts, cmds\n"
    "fails = []\n"
    "if areas:\n"
    "    ymap, yinv, _ = linear(sorted((float(e.get('data-bytes')), float(e.get('y1'))) for e in els('line', 'ygrid')))\n"
    "    xmap, xinv, ns_px = linear(sorted((float(e.get('data-ns')), float(e.get('x1'))) for e in els('line', 'xgrid')))\n"
    "    got['max_cmds'] = 0\n"
    "    for tier, d in areas.items():\n"
    "        pts, cmds = points(d)\n"
    "        got['max_cmds'] = max(got['max_cmds'], cmds)\n"
    "        top = min(y for x, y in pts)\n"
    "        xs = [x for x, y in pts if y == top]\n"
    "        want = exp.get('top', {}).get(tier)\n"
    "        if want is None:\n"
    "            continue\n"
    "        if abs(top - ymap(want[0])) > 0.15:\n"
    "            fails.append('%s area: top at %.0f bytes, expected %.0f' % (tier, yinv(top), want[0]))\n"
    "        if len(want) > 1 and not (xinv(min(xs)) - ns_px <= want[1] <= xinv(max(xs)) + ns_px):\n"
    "            fails.append('%s area: top at %.0f..%.0f ns, expected %.0f' % (tier, xinv(min(xs)), xinv(max(xs)), want[1]))\n"
    "    if budget and 'budget' in exp:\n"
    "        pts, _ = points(budget[0])\n"
    "        hi, last = min(y for x, y in pts), pts[-1][1]\n"
    "        want = exp['budget']\n"
    "        frame = float(els('rect', 'frame')[0].get('y'))\n"
    "        if hi < frame - 0.1:\n"
    "            fails.append('budget line: above the plot (y %.1f, the frame at %.1f)' % (hi, frame))\n"
    "        if abs(hi - ymap(want[0])) > 0.15 or abs(last - ymap(want[1])) > 0.15:\n"
    "            fails.append('budget line: highest %.0f, last %.0f bytes; expected %.0f, %.0f' % (yinv(hi), yinv(last), want[0], want[1]))\n"
    "        if len(want) > 2 and abs(xinv(pts[0][0]) - want[2]) > ns_px:\n"
    "            fails.append('budget line: starts at %.0f ns, expected %.0f' % (xinv(pts[0][0]), want[2]))\n"
    "for key, want in exp.items():\n"
    "    if key == 'max_cmds':\n"
    "        if got.get(key, 0) > want:\n"
    "            fails.append('path commands: expected at most %d, got %d' % (want, got.get(key, 0)))\n"
    "    elif key == 'subtitle_has':\n"
    "        if want not in got['subtitle']:\n"
    "            fails.append('subtitle %r lacks %r' % (got['subtitle'], want))\n"
    "    elif key not in ('top', 'budget') and got.get(key) != want:\n"
    "        fails.append('%s: expected %r, got %r' % (key, want, got.get(key)))\n"
    "for f in fails:\n"
    "    print('FAIL', path, f)\n"
    "sys.exit(1 if fails else 0)\n";

/* Appends a JSON string to buf. */
static void append_json_str(char *buf, size_t len, const char *s)
{
    size_t at = strlen(buf);
    at += (size_t)snprintf(buf + at, len - at, "\"");
    for (; *s && at + 8 < len; s++)
        at += (size_t)(*s == '"' || *s == '\\' ? snprintf(buf + at, len - at, "\\%c", *s)
                       : (unsigned char)*s < 0x20 ? snprintf(buf + at, len - at, "\\u%04x", *s)
                                                  : snprintf(buf + at, len - at, "%c", *s));
    snprintf(buf + at, len - at, "\"");
}

/* Measures the picture svg against the expectations (JSON): python3's exit status. */
static int measure(const char *svg, const char *expect)
{
    return tt_py(check_py, svg, expect, NULL);
}

/* ------------------------------------------------------------------ traces */

static trc_writer_t *open_trace(const char *path, int devices)
{
    trc_writer_t *w = tt_writer(path, TRC_FLAG_VIRTUAL_TIME);
    trc_process_t p = { .pid = 7, .exe_id = tt_str(w, exe), .cmdline_id = tt_str(w, "x") };
    trc_emit_process(w, 1000, &p);
    for (int d = 0; d < devices; d++) {
        trc_device_t dev = { .device = d, .name_id = tt_str(w, d ? dev_name : "dev0"),
                             .total_mem = 16 * GiB };
        trc_emit_device(w, 1000, &dev);
    }
    return w;
}

/* A BUDGET record: device dev's GPU budget (and a host budget, which the plot does not draw). */
static void budget(trc_writer_t *w, uint64_t time, int32_t dev, uint64_t gpu)
{
    trc_budget_t b = { .device = dev, .bytes = { gpu, 0, 64 * GiB, 0 } };
    TT_EMIT(trc_emit_budget(w, time, &b));
}

static void migrate(trc_writer_t *w, uint64_t time, uint32_t from, uint32_t to)
{
    trc_migration_t m = { .chunk = time, .bytes = 2 * MiB, .from = from, .to = to,
                          .start = time, .end = time + 500 };
    trc_emit_migration(w, time + 500, &m);
}

#define NSAMPLES 100000
#define SPIKE 61234

/* 100k samples 1 us apart: GPU 1 GiB plus a few MiB that change every sample, HOST 512 MiB,
 * NVME 256 MiB from the 10th sample on; sample SPIKE has 8 GiB on the GPU. */
static void write_long(const char *path)
{
    trc_writer_t *w = open_trace(path, 1);
    budget(w, 1000, 0, 1024 * GiB);    /* far above the samples: not drawn, only named */
    for (uint64_t i = 0; i < NSAMPLES; i++) {
        uint64_t t = 1000 + i * 1000;
        if (i % 20000 == 0)
            trc_emit_iteration(w, t, &(trc_iteration_t){ i / 20000 });
        if (i % 5000 == 2500)
            migrate(w, t, i % 10000 == 2500 ? TRC_TIER_GPU : TRC_TIER_HOST,
                    i % 10000 == 2500 ? TRC_TIER_HOST : TRC_TIER_GPU);
        uint64_t gpu = i == SPIKE ? 8 * GiB : GiB + (i % 7) * MiB;
        tt_memory(w, t, 0, gpu, 512 * MiB, i >= 10 ? 256 * MiB : 0);
    }
    tt_close(w);
}

static void test_long(void)
{
    const char *trace = tt_path("long.trace"), *out = tt_path("long.svg");
    char expect[1024];
    write_long(trace);
    if (!TT_RUN(0, "plot", trace, out, "--size", "800x300"))
        return;
    /* Plot area 800 - 72 - 18 = 710 columns: at most 2 commands per column and boundary. */
    uint64_t spike = 8 * GiB + 512 * MiB + 256 * MiB, spike_ns = (uint64_t)SPIKE * 1000;
    snprintf(expect, sizeof(expect), "{\"root\": \"{http://www.w3.org/2000/svg}svg\", "
             "\"size\": [\"800\", \"300\"], \"tiers\": [\"gpu\", \"host\", \"nvme\"], "
             "\"iterations\": [0, 1, 2, 3, 4], \"labels\": [\"0\", \"1\", \"2\", \"3\", \"4\"], "
             "\"migrations\": [\"evict\", \"fetch\"], \"max_cmds\": %d, \"budget_paths\": 0, "
             "\"subtitle_has\": \"GPU budget 1.00 TiB, above the scale\", "
             "\"top\": {\"nvme\": [%" PRIu64 ", %" PRIu64 "], \"gpu\": [%" PRIu64 ", %" PRIu64
             "]}, \"title\": [", 4 * 710 + 8, spike, spike_ns, 8 * GiB, spike_ns);
    char title[128];
    snprintf(title, sizeof(title), "Memory per tier: %s, all devices", exe_base);
    append_json_str(expect, sizeof(expect), title);
    strcat(expect, "]}");
    TT_CHECK("long series: spike kept, path downsampled", 0, measure(out, expect));
}

/* Device 0: GPU 1 GiB from 2 us; device 1: GPU 2 GiB from 3 us, HOST 1 GiB from 4 us;
 * the trace ends at 10 us. */
static void test_devices(void)
{
    const char *trace = tt_path("two.trace"), *out = tt_path("two.svg");
    const char *out1 = tt_path("two-1.svg");
    char expect[1024], title[128];
    trc_writer_t *w = open_trace(trace, 2);
    budget(w, 1500, 0, 4 * GiB);
    budget(w, 1500, 1, 2 * GiB);
    tt_memory(w, 2000, 0, GiB, 0, 0);
    tt_memory(w, 3000, 1, 2 * GiB, 0, 0);
    tt_memory(w, 4000, 1, 2 * GiB, GiB, 0);
    budget(w, 6000, 1, 3 * GiB / 2);
    trc_emit_iteration(w, 10000, &(trc_iteration_t){ 9 });
    tt_close(w);
    TT_RUN(0, "plot", trace, out);
    snprintf(expect, sizeof(expect), "{\"size\": [\"960\", \"420\"], \"tiers\": [\"gpu\", "
             "\"host\"], \"iterations\": [9], \"migrations\": [], \"top\": {\"gpu\": [%" PRIu64
             "], \"host\": [%" PRIu64 "]}, \"budget_paths\": 1, \"budget\": [%" PRIu64 ", %"
             PRIu64 ", 500]}", 3 * GiB, 4 * GiB, 6 * GiB, 11 * GiB / 2);
    TT_CHECK("two devices summed", 0, measure(out, expect));
    TT_RUN(0, "plot", trace, out1, "--device", "1");
    snprintf(expect, sizeof(expect), "{\"tiers\": [\"gpu\", \"host\"], \"top\": {\"gpu\": [%"
             PRIu64 "], \"host\": [%" PRIu64 "]}, \"budget\": [%" PRIu64 ", %" PRIu64 "], "
             "\"title\": [", 2 * GiB, 3 * GiB, 2 * GiB, 3 * GiB / 2);
    snprintf(title, sizeof(title), "Memory per tier: %s, device 1 (%s)", exe_base, dev_name);
    append_json_str(expect, sizeof(expect), title);
    strcat(expect, "]}");
    TT_CHECK("device 1 alone", 0, measure(out1, expect));
}

static void test_empty(void)
{
    const char *trace = tt_path("empty.trace"), *out = tt_path("empty.svg");
    trc_writer_t *w = open_trace(trace, 1);
    trc_emit_iteration(w, 5000, &(trc_iteration_t){ 0 });
    tt_close(w);
    TT_RUN(0, "plot", trace, out);
    TT_CHECK("plot without samples says so", 0,
             measure(out, "{\"tiers\": [], \"empty\": [\"no memory samples in this trace\"]}"));
}

/* A device that is not in the trace is the exporter's error (1), a size out of range a
 * usage error (2) naming the accepted range; neither leaves an output file. */
static void test_bad_options(void)
{
    const char *trace = tt_path("two.trace"), *out = tt_path("bad.svg"); /* from test_devices */
    struct stat st;
    tt_result_t r = tt_run("plot", trace, out, "--device", "7", NULL);
    TT_CHECK("unknown device: exit status", 1, r.status);
    TT_LINE(r.err, "device 7 is not in this trace (devices: 0, 1)");
    TT_CHECK("no output for an unknown device", -1, stat(out, &st));
    tt_free(&r);
    r = tt_run("plot", trace, out, "--size", "100x100", NULL);
    TT_CHECK("size too small: exit status", 2, r.status);
    TT_LINE(r.err, "width 320 to 16384, height 200 to 16384");
    TT_CHECK("no output for a bad size", -1, stat(out, &st));
    tt_free(&r);
}

int main(void)
{
    tt_init();
    tt_need_python("xml.etree.ElementTree");
    test_long();
    test_devices();
    test_empty();
    test_bad_options();
    return tt_done();
}
