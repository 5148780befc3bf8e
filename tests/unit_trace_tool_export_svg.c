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
 *  - two devices: summed by default, one with --device 1;
 *  - no memory samples: a picture saying so, exit status 0;
 *  - bad options (an unknown device, a size too small): a failure and no output file.
 * The exe and device names hold <, &, ", ' and a newline: the XML must parse and the title
 * read back unchanged.  Skips (77) when $BUILD/bin/elixir-trace (BUILD default "build") or
 * python3 is missing.
 */
#include "../tracer/trace.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB ((uint64_t)1 << 20)
#define GiB ((uint64_t)1 << 30)

static const char exe[] = "/x/<plot>&\"\n'.py";
static const char exe_base[] = "<plot>&\"\n'.py";
static const char dev_name[] = "dev & <1>";

static char dir[] = "/tmp/unit_trace_svg.XXXXXX";
static int failures;

#define CHECK(what, cond)                                                                     \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            printf("FAIL %s:%d: %s\n", __func__, __LINE__, what);                             \
            failures++;                                                                       \
        }                                                                                     \
    } while (0)

/* ------------------------------------------------------------------ running programs */

/* Runs argv (stderr to errfile when given): its exit status, -1 when it did not exit. */
static int run_err(char *const argv[], const char *errfile)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (errfile && !freopen(errfile, "w", stderr))
            _exit(126);
        execvp(argv[0], argv);
        printf("cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) < 0)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int run(char *const argv[])
{
    return run_err(argv, NULL);
}

static char tool[4096];

static void find_tool(void)
{
    const char *build = getenv("BUILD");
    snprintf(tool, sizeof(tool), "%s/bin/elixir-trace", build && build[0] ? build : "build");
    if (access(tool, X_OK) != 0) {
        printf("SKIP: %s not built\n", tool);
        exit(77);
    }
    if (run((char *[]){ "python3", "-c", "import xml.etree.ElementTree", NULL }) != 0) {
        printf("SKIP: python3 cannot run\n");
        exit(77);
    }
}

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
    "for key, want in exp.items():\n"
    "    if key == 'max_cmds':\n"
    "        if got.get(key, 0) > want:\n"
    "            fails.append('path commands: expected at most %d, got %d' % (want, got.get(key, 0)))\n"
    "    elif key != 'top' and got.get(key) != want:\n"
    "        fails.append('%s: expected %r, got %r' % (key, want, got.get(key)))\n"
    "for f in fails:\n"
    "    print('FAIL', path, f)\n"
    "sys.exit(1 if fails else 0)\n";

/* Appends a JSON string to buf. */
static void json_str(char *buf, size_t len, const char *s)
{
    size_t at = strlen(buf);
    at += (size_t)snprintf(buf + at, len - at, "\"");
    for (; *s && at + 8 < len; s++)
        at += (size_t)(*s == '"' || *s == '\\' ? snprintf(buf + at, len - at, "\\%c", *s)
                       : (unsigned char)*s < 0x20 ? snprintf(buf + at, len - at, "\\u%04x", *s)
                                                  : snprintf(buf + at, len - at, "%c", *s));
    snprintf(buf + at, len - at, "\"");
}

static int measure(const char *svg, const char *expect)
{
    return run((char *[]){ "python3", "-c", (char *)check_py, (char *)svg, (char *)expect,
                           NULL });
}

/* ------------------------------------------------------------------ traces */

static uint32_t sid(trc_writer_t *w, const char *s)
{
    long id = trc_writer_string(w, s);
    if (id <= 0) {
        printf("FAIL: trc_writer_string: %ld\n", id);
        exit(1);
    }
    return (uint32_t)id;
}

static trc_writer_t *open_trace(const char *path, int devices)
{
    trc_writer_t *w;
    if (trc_writer_open(path, TRC_FLAG_VIRTUAL_TIME, &w) < 0) {
        printf("FAIL: cannot create %s\n", path);
        exit(1);
    }
    trc_process_t p = { .pid = 7, .exe_id = sid(w, exe), .cmdline_id = sid(w, "x") };
    trc_emit_process(w, 1000, &p);
    for (int d = 0; d < devices; d++) {
        trc_device_t dev = { .device = d, .name_id = sid(w, d ? dev_name : "dev0"),
                             .total_mem = 16 * GiB };
        trc_emit_device(w, 1000, &dev);
    }
    return w;
}

static void close_trace(trc_writer_t *w)
{
    if (trc_writer_close(w) < 0) {
        printf("FAIL: trc_writer_close\n");
        exit(1);
    }
}

static void memory(trc_writer_t *w, uint64_t time, int32_t dev, uint64_t gpu, uint64_t host,
                   uint64_t nvme)
{
    trc_memory_t m = { .device = dev, .bytes = { gpu, 0, host, nvme } };
    if (trc_emit_memory(w, time, &m) < 0)
        exit(1);
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
    for (uint64_t i = 0; i < NSAMPLES; i++) {
        uint64_t t = 1000 + i * 1000;
        if (i % 20000 == 0)
            trc_emit_iteration(w, t, &(trc_iteration_t){ i / 20000 });
        if (i % 5000 == 2500)
            migrate(w, t, i % 10000 == 2500 ? TRC_TIER_GPU : TRC_TIER_HOST,
                    i % 10000 == 2500 ? TRC_TIER_HOST : TRC_TIER_GPU);
        uint64_t gpu = i == SPIKE ? 8 * GiB : GiB + (i % 7) * MiB;
        memory(w, t, 0, gpu, 512 * MiB, i >= 10 ? 256 * MiB : 0);
    }
    close_trace(w);
}

static void test_long(void)
{
    char trace[256], out[256], expect[1024];
    snprintf(trace, sizeof(trace), "%s/long.trace", dir);
    snprintf(out, sizeof(out), "%s/long.svg", dir);
    write_long(trace);
    int rc = run((char *[]){ tool, "plot", trace, out, "--size", "800x300", NULL });
    CHECK("plot exits 0", rc == 0);
    if (rc)
        return;
    /* Plot area 800 - 72 - 18 = 710 columns: at most 2 commands per column and boundary. */
    uint64_t spike = 8 * GiB + 512 * MiB + 256 * MiB, spike_ns = (uint64_t)SPIKE * 1000;
    snprintf(expect, sizeof(expect), "{\"root\": \"{http://www.w3.org/2000/svg}svg\", "
             "\"size\": [\"800\", \"300\"], \"tiers\": [\"gpu\", \"host\", \"nvme\"], "
             "\"iterations\": [0, 1, 2, 3, 4], \"labels\": [\"0\", \"1\", \"2\", \"3\", \"4\"], "
             "\"migrations\": [\"evict\", \"fetch\"], \"max_cmds\": %d, "
             "\"top\": {\"nvme\": [%" PRIu64 ", %" PRIu64 "], \"gpu\": [%" PRIu64 ", %" PRIu64
             "]}, \"title\": [", 4 * 710 + 8, spike, spike_ns, 8 * GiB, spike_ns);
    char title[128];
    snprintf(title, sizeof(title), "Memory per tier: %s, all devices", exe_base);
    json_str(expect, sizeof(expect), title);
    strcat(expect, "]}");
    CHECK("long series: spike kept, path downsampled", measure(out, expect) == 0);
}

/* Device 0: GPU 1 GiB from 2 us; device 1: GPU 2 GiB from 3 us, HOST 1 GiB from 4 us;
 * the trace ends at 10 us. */
static void test_devices(void)
{
    char trace[256], out[256], out1[256], expect[1024], title[128];
    snprintf(trace, sizeof(trace), "%s/two.trace", dir);
    snprintf(out, sizeof(out), "%s/two.svg", dir);
    snprintf(out1, sizeof(out1), "%s/two-1.svg", dir);
    trc_writer_t *w = open_trace(trace, 2);
    memory(w, 2000, 0, GiB, 0, 0);
    memory(w, 3000, 1, 2 * GiB, 0, 0);
    memory(w, 4000, 1, 2 * GiB, GiB, 0);
    trc_emit_iteration(w, 10000, &(trc_iteration_t){ 9 });
    close_trace(w);
    CHECK("plot of two devices exits 0", run((char *[]){ tool, "plot", trace, out, NULL }) == 0);
    snprintf(expect, sizeof(expect), "{\"size\": [\"960\", \"420\"], \"tiers\": [\"gpu\", "
             "\"host\"], \"iterations\": [9], \"migrations\": [], \"top\": {\"gpu\": [%" PRIu64
             "], \"host\": [%" PRIu64 "]}}", 3 * GiB, 4 * GiB);
    CHECK("two devices summed", measure(out, expect) == 0);
    CHECK("plot --device 1 exits 0",
          run((char *[]){ tool, "plot", trace, out1, "--device", "1", NULL }) == 0);
    snprintf(expect, sizeof(expect), "{\"tiers\": [\"gpu\", \"host\"], \"top\": {\"gpu\": [%"
             PRIu64 "], \"host\": [%" PRIu64 "]}, \"title\": [", 2 * GiB, 3 * GiB);
    snprintf(title, sizeof(title), "Memory per tier: %s, device 1 (%s)", exe_base, dev_name);
    json_str(expect, sizeof(expect), title);
    strcat(expect, "]}");
    CHECK("device 1 alone", measure(out1, expect) == 0);
}

static void test_empty(void)
{
    char trace[256], out[256];
    snprintf(trace, sizeof(trace), "%s/empty.trace", dir);
    snprintf(out, sizeof(out), "%s/empty.svg", dir);
    trc_writer_t *w = open_trace(trace, 1);
    trc_emit_iteration(w, 5000, &(trc_iteration_t){ 0 });
    close_trace(w);
    CHECK("plot without samples exits 0", run((char *[]){ tool, "plot", trace, out, NULL }) == 0);
    CHECK("plot without samples says so",
          measure(out, "{\"tiers\": [], \"empty\": [\"no memory samples in this trace\"]}") == 0);
}

static void test_bad_options(void)
{
    char trace[256], out[256], errfile[256];
    struct stat st;
    snprintf(trace, sizeof(trace), "%s/two.trace", dir); /* from test_devices */
    snprintf(out, sizeof(out), "%s/bad.svg", dir);
    snprintf(errfile, sizeof(errfile), "%s/bad.err", dir);
    CHECK("unknown device fails",
          run_err((char *[]){ tool, "plot", trace, out, "--device", "7", NULL }, errfile) > 0);
    CHECK("no output for an unknown device", stat(out, &st) != 0);
    CHECK("size too small fails",
          run_err((char *[]){ tool, "plot", trace, out, "--size", "100x100", NULL }, errfile) > 0);
    CHECK("no output for a bad size", stat(out, &st) != 0);
}

int main(void)
{
    find_tool();
    if (!mkdtemp(dir)) {
        printf("FAIL: mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    test_long();
    test_devices();
    test_empty();
    test_bad_options();
    if (!failures)
        run((char *[]){ "rm", "-rf", dir, NULL });
    else
        printf("outputs kept in %s\n", dir);
    printf("%s\n", failures ? "FAIL" : "PASS");
    return failures ? 1 : 0;
}
