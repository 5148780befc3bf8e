/* SPDX-License-Identifier: MIT */
/*
 * unit_trace_tool_export_chrome.c - `elixir-trace timeline FILE --chrome OUT.json` end to end.
 *
 * Writes a two-device trace with the tracer's writer (launches timed by their own span, by a
 * later TIMING record and not at all; copies, a memset and a collective; migrations caused by
 * a timed launch, an untimed one, a launch on the other device, none and an unknown id;
 * memory samples using three tiers on one device and one on the other; iteration marks;
 * names with <, &, ", newlines and bytes that are not UTF-8), runs the tool, and checks with
 * Python's json module that the output parses (NaN and Infinity refused) and holds: one
 * process per device with its name, a thread per stream, per migration direction and per copy
 * engine a timed copy used, one X slice per operation with device times at the exact
 * microsecond (a timed copy's also on its engine's thread), an instant per untimed
 * operation, a slice per migration with its arguments, a flow from each cause to its
 * migration (each end inside its slice, forward in time), one memory counter series per tier
 * a device used, a budget counter from the BUDGET records, global instants for iterations,
 * and every string unchanged after decoding.  A trace with nothing but a process record must
 * give valid JSON too.  Each timing source is named as FORMAT.md defines it, one it does not
 * define as "unknown (N)".
 * Skips (77) when $BUILD/bin/elixir-trace (BUILD default "build") or python3 is missing.
 */
#include "unit_trace_tool.h"

static const char exe[] = "/opt/tr<ain>&\"x\n.py";
static const char k1[] = "void k<float>(int&, \"x\")\n";
static const char dev0_name[] = "NVIDIA H100 & <co>";

/* ------------------------------------------------------------------ the trace */

static void head(trc_writer_t *w)
{
    trc_process_t p = { .pid = 42, .ppid = 1, .exe_id = tt_str(w, exe),
                        .cmdline_id = tt_str(w, "python3 train.py"),
                        .host_id = tt_str(w, "node1") };
    trc_device_t d0 = { .device = 0, .name_id = tt_str(w, dev0_name), .total_mem = 80ull << 30,
                        .cc_major = 9, .sm_count = 132 };
    trc_device_t d1 = { .device = 1, .name_id = tt_str(w, "GPU B"), .total_mem = 80ull << 30 };
    trc_emit_process(w, 1000, &p);
    trc_emit_device(w, 1001, &d0);
    trc_emit_device(w, 1001, &d1);
    trc_emit_iteration(w, 1500, &(trc_iteration_t){ 0 });
}

static void ops(trc_writer_t *w)
{
    uint32_t gemm = tt_str(w, "gemm"), bad = tt_str(w, "bad\xff\xfe name");
    trc_launch_t l = { .id = 1, .func_id = tt_str(w, k1), .stream = 0, .device = 0,
                       .span = { 1, 3100, 5100 } };
    trc_emit_launch(w, 3000, &l);
    l = (trc_launch_t){ .id = 2, .func_id = gemm, .stream = 3, .device = 0 };
    trc_emit_launch(w, 3001, &l);     /* timed later by TIMING */
    l = (trc_launch_t){ .id = 3, .func_id = gemm, .stream = 3, .device = 0 };
    trc_emit_launch(w, 3005, &l);     /* never timed */
    l = (trc_launch_t){ .id = 4, .func_id = bad, .stream = 1, .device = 1,
                        .span = { 1, 4000, 4500 } };
    trc_emit_launch(w, 3900, &l);
    trc_copy_t c = { .kind = TRC_COPY_HTOD, .bytes = MiB, .stream = 3, .device = 0,
                     .span = { 1, 2500, 2900 }, .id = 5 };
    trc_emit_copy(w, 2400, &c);
    c = (trc_copy_t){ .kind = TRC_COPY_DTOH, .bytes = 4096, .stream = 3, .device = 0, .id = 6 };
    trc_emit_copy(w, 2450, &c);       /* never timed */
    trc_memset_t m = { .bytes = MiB, .stream = 0, .device = 0, .span = { 1, 5200, 5300 },
                       .id = 7 };
    trc_emit_memset(w, 5150, &m);
    trc_nccl_t n = { .op_id = tt_str(w, "allReduce"), .bytes = MiB, .peer = -1, .stream = 1,
                     .device = 1, .span = { 1, 4600, 4900 } };
    trc_emit_nccl(w, 4550, &n);
    trc_emit_timing(w, 7100, &(trc_timing_t){ .op = 2, .source = TRC_TIMING_CUPTI,
                                              .start = 6000, .end = 7000 });
}

static void migrate(trc_writer_t *w, int32_t dev, uint32_t from, uint32_t to, uint64_t start,
                    uint64_t end, uint64_t cause)
{
    trc_migration_t m = { .chunk = 17, .bytes = 2 * MiB, .from = from, .to = to,
                          .device = dev, .start = start, .end = end, .cause = cause };
    trc_emit_migration(w, end, &m);
}

static void write_trace(const char *path)
{
    trc_writer_t *w = tt_writer(path, TRC_FLAG_VIRTUAL_TIME);
    head(w);
    tt_memory(w, 2000, 0, MiB, 0, 0);
    tt_memory(w, 2100, 1, 4 * MiB, 0, 0);
    TT_EMIT(trc_emit_budget(w, 2000, &(trc_budget_t){ 0, { 8 * MiB, 0, 64 * MiB, 0 } }));
    TT_EMIT(trc_emit_budget(w, 7000, &(trc_budget_t){ 0, { 8 * MiB, 0, 6 * MiB, 0 } }));
    migrate(w, 0, TRC_TIER_HOST, TRC_TIER_GPU, 2000, 2100, 3);   /* untimed launch */
    migrate(w, 0, TRC_TIER_GPU, TRC_TIER_HOST, 2950, 3050, 1);   /* before launch 1 */
    tt_memory(w, 3050, 0, MiB, 2 * MiB, 0);
    migrate(w, 1, TRC_TIER_HOST, TRC_TIER_GPU, 3500, 3600, 4);
    ops(w);
    trc_emit_iteration(w, 5000, &(trc_iteration_t){ 1 });
    migrate(w, 0, TRC_TIER_HOST, TRC_TIER_GPU, 5500, 5900, 2);   /* before TIMING's 6000 */
    migrate(w, 0, TRC_TIER_GPU, TRC_TIER_NVME, 8000, 8100, 0);   /* no cause */
    migrate(w, 0, TRC_TIER_GPU, TRC_TIER_HOST, 8200, 8300, 999); /* unknown cause */
    tt_memory(w, 8100, 0, MiB, 2 * MiB, 2 * MiB);
    trc_emit_iteration(w, 9000, &(trc_iteration_t){ 2 });
    tt_close(w);
}

/* ------------------------------------------------------------------ the checks */

/* argv: OUT.json, the exe, the first kernel's name, the name of device 0. */
static const char check_py[] =
    "import json, sys\n"
    "path, exe, k1, dev0 = sys.argv[1:5]\n"
    "fails = []\n"
    "def check(what, exp, got):\n"
    "    if exp != got:\n"
    "        fails.append('%s: expected %r, got %r' % (what, exp, got))\n"
    "def no_const(c):\n"
    "    raise ValueError('not a finite number: ' + c)\n"
    "doc = json.load(open(path, encoding='utf-8'), parse_constant=no_const)\n"
    "ev = doc['traceEvents']\n"
    "check('displayTimeUnit', 'ns', doc.get('displayTimeUnit'))\n"
    "check('otherData.exe', exe, doc['otherData'].get('exe'))\n"
    "meta = {(e['pid'], e['tid'], e['name']): e['args'] for e in ev if e['ph'] == 'M'}\n"
    "procs = {e['args']['name']: e['pid'] for e in ev if e['ph'] == 'M' and e['name'] == 'process_name'}\n"
    "check('process names', {'GPU 0: ' + dev0, 'GPU 1: GPU B'}, set(procs))\n"
    "p0, p1 = procs.get('GPU 0: ' + dev0), procs.get('GPU 1: GPU B')\n"
    "threads = {(e['pid'], e['args']['name']): e['tid'] for e in ev if e['ph'] == 'M' and e['name'] == 'thread_name'}\n"
    "want = {(p0, 'stream 0 (default)'), (p0, 'stream 3'), (p1, 'stream 1'),\n"
    "        (p0, 'migrations host->gpu'), (p0, 'migrations gpu->host'), (p0, 'migrations gpu->nvme'),\n"
    "        (p1, 'migrations host->gpu'), (p0, 'copy engine HtoD')}\n"
    "check('thread names', want, set(threads))\n"
    "for e in ev:\n"
    "    if 'ts' in e and (not isinstance(e['ts'], (int, float)) or e['ts'] < 0):\n"
    "        fails.append('bad ts in %r' % e)\n"
    "ops = [e for e in ev if e['ph'] == 'X' and e.get('cat') in ('kernel', 'copy', 'memset', 'nccl')]\n"
    "check('X slices of operations with device times', 6, len(ops))\n"
    "byname = {e['name']: e for e in ops}\n"
    "check('slice names', {k1, 'gemm', 'bad\\ufffd\\ufffd name', 'copy HtoD', 'memset', 'allReduce'}, set(byname))\n"
    "k = byname.get(k1, {})\n"
    "check('kernel ts (us since 1000 ns)', 2.1, k.get('ts'))\n"
    "check('kernel dur', 2.0, k.get('dur'))\n"
    "check('kernel tid', threads.get((p0, 'stream 0 (default)')), k.get('tid'))\n"
    "check('TIMING applied', (5.0, 1.0), (byname.get('gemm', {}).get('ts'), byname.get('gemm', {}).get('dur')))\n"
    "eng = [e for e in ev if e['ph'] == 'X' and e.get('cat') == 'copy engine']\n"
    "cp = byname.get('copy HtoD', {})\n"
    "check('copy engine slices', [('copy HtoD', threads.get((p0, 'copy engine HtoD')), cp.get('ts'), cp.get('dur'))],\n"
    "      [(e['name'], e['tid'], e['ts'], e['dur']) for e in eng])\n"
    "inst = [e for e in ev if e['ph'] == 'i' and e.get('s') == 't']\n"
    "check('instants of untimed operations', [('gemm', 2.005), ('copy DtoH', 1.45)],\n"
    "      sorted([(e['name'], e['ts']) for e in inst], reverse=True))\n"
    "migs = [e for e in ev if e['ph'] == 'X' and e.get('cat') == 'migration']\n"
    "check('migration slices', 6, len(migs))\n"
    "gh = [e for e in migs if e['name'] == 'gpu->host' and e['ts'] == 1.95]\n"
    "check('gpu->host args', [{'chunk': 17, 'bytes': 2097152, 'from': 'gpu', 'to': 'host', 'cause': 1}],\n"
    "      [e['args'] for e in gh])\n"
    "check('gpu->host thread', threads.get((p0, 'migrations gpu->host')), gh and gh[0]['tid'])\n"
    "slices = [e for e in ev if e['ph'] in ('X', 'i') and e.get('s') != 'g']\n"
    "def at(e):\n"
    "    return [s for s in slices if (s['pid'], s['tid']) == (e['pid'], e['tid']) and\n"
    "            s['ts'] <= e['ts'] <= s['ts'] + s.get('dur', 0)]\n"
    "flows = {}\n"
    "for e in ev:\n"
    "    if e['ph'] in ('s', 'f'):\n"
    "        flows.setdefault(e['id'], {})[e['ph']] = e\n"
    "linked = set()\n"
    "for fid, fl in flows.items():\n"
    "    if set(fl) != {'s', 'f'}:\n"
    "        fails.append('flow %r lacks an end: %r' % (fid, fl)); continue\n"
    "    if fl['f'].get('bp') != 'e' or fl['s']['ts'] > fl['f']['ts']:\n"
    "        fails.append('flow %r: backwards or unbound: %r' % (fid, fl))\n"
    "    ends = at(fl['s']) + at(fl['f'])\n"
    "    mig = [s for s in ends if s.get('cat') == 'migration']\n"
    "    op = [s for s in ends if s.get('cat') != 'migration']\n"
    "    if len(mig) != 1 or len(op) != 1 or op[0]['args'].get('id') != mig[0]['args'].get('cause'):\n"
    "        fails.append('flow %r does not join a migration to its cause: %r' % (fid, ends)); continue\n"
    "    linked.add(op[0]['args']['id'])\n"
    "check('causes linked by flows', {1, 2, 3, 4}, linked)\n"
    "cnt = [e for e in ev if e['ph'] == 'C' and e['name'] == 'memory']\n"
    "check('counter events', 4, len(cnt))\n"
    "bud = [(e['pid'], e['ts'], e['args']) for e in ev if e['ph'] == 'C' and e['name'] == 'budget']\n"
    "check('budget counters', [(p0, 1.0, {'gpu': 8388608, 'host': 67108864}), (p0, 6.0, {'gpu': 8388608, 'host': 6291456})], bud)\n"
    "keys = {}\n"
    "for e in cnt:\n"
    "    keys.setdefault(e['pid'], set()).update(e['args'])\n"
    "check('counter series per device', {p0: {'gpu', 'host', 'nvme'}, p1: {'gpu'}}, keys)\n"
    "last = [e['args'] for e in cnt if e['pid'] == p0 and e['ts'] == 7.1]\n"
    "check('last sample of device 0', [{'gpu': 1048576, 'host': 2097152, 'nvme': 2097152}], last)\n"
    "its = sorted((e['args']['index'], e['name'], e['ts']) for e in ev if e['ph'] == 'i' and e.get('s') == 'g')\n"
    "check('iteration instants', [(0, 'iteration 0', 0.5), (1, 'iteration 1', 4.0), (2, 'iteration 2', 8.0)], its)\n"
    "for m in fails:\n"
    "    print('FAIL', m)\n"
    "sys.exit(1 if fails else 0)\n";

static const char empty_py[] =
    "import json, sys\n"
    "doc = json.load(open(sys.argv[1], encoding='utf-8'))\n"
    "kinds = sorted({e['ph'] for e in doc['traceEvents']})\n"
    "if kinds not in ([], ['M']):\n"
    "    print('FAIL: events in an empty trace:', kinds); sys.exit(1)\n";

static void test_full(void)
{
    const char *trace = tt_path("full.trace"), *out = tt_path("full.json");
    write_trace(trace);
    if (TT_RUN(0, "timeline", trace, "--chrome", out))
        TT_CHECK("timeline JSON as expected (python3's exit status)", 0,
                 tt_py(check_py, out, exe, k1, dev0_name, NULL));
}

static void test_empty(void)
{
    const char *trace = tt_path("empty.trace"), *out = tt_path("empty.json");
    trc_writer_t *w = tt_writer(trace, 0);
    trc_emit_process(w, 5, &(trc_process_t){ .pid = 1, .exe_id = tt_str(w, "x") });
    tt_close(w);
    if (TT_RUN(0, "timeline", trace, "--chrome", out))
        TT_CHECK("empty timeline is valid JSON (python3's exit status)", 0,
                 tt_py(empty_py, out, NULL));
}

/* Launch 1 is timed by its own record, 2 to 5 by TIMING records of sources 0 (CUPTI), 1
 * (CUDA events) and two that FORMAT.md does not define, which a reader passes through: the
 * slices' "timing" argument must name each source as the format does, not call an unknown
 * one "events" (or take UINT32_MAX for no source at all).  Launch 6 (a graph) has two TIMING
 * records of source UINT32_MAX, 100 ns each 300 ns apart: its slice spans both (0.3 us). */
static const char sources_py[] =
    "import json, sys\n"
    "doc = json.load(open(sys.argv[1], encoding='utf-8'))\n"
    "got = {e['args']['id']: (e['args'].get('timing'), e['dur']) for e in doc['traceEvents']\n"
    "       if e['ph'] == 'X' and e.get('cat') == 'kernel'}\n"
    "u = 'unknown (4294967295)'\n"
    "want = {1: (None, 0.1), 2: ('cupti', 0.1), 3: ('events', 0.1), 4: ('unknown (7)', 0.1),\n"
    "        5: (u, 0.1), 6: (u, 0.3)}\n"
    "if got != want:\n"
    "    print('FAIL: timing sources: expected %r, got %r' % (want, got)); sys.exit(1)\n";

static void test_sources(void)
{
    static const uint32_t source[] = { TRC_TIMING_CUPTI, TRC_TIMING_EVENTS, 7, UINT32_MAX };
    const char *trace = tt_path("sources.trace"), *out = tt_path("sources.json");
    trc_writer_t *w = tt_writer(trace, 0);
    uint32_t k = tt_str(w, "k");
    for (uint64_t id = 1; id <= 6; id++) {
        trc_launch_t l = { .id = id, .func_id = k, .span = { id == 1, 1100, 1200 } };
        TT_EMIT(trc_emit_launch(w, 1000 * id, &l));
    }
    for (uint64_t id = 2; id <= 5; id++) {
        trc_timing_t tm = { .op = id, .source = source[id - 2], .start = 1000 * id + 100,
                            .end = 1000 * id + 200 };
        TT_EMIT(trc_emit_timing(w, 1000 * id + 500, &tm));
    }
    for (uint64_t at = 6100; at <= 6300; at += 200) {
        trc_timing_t tm = { .op = 6, .source = UINT32_MAX, .start = at, .end = at + 100 };
        TT_EMIT(trc_emit_timing(w, 6500, &tm));
    }
    tt_close(w);
    if (TT_RUN(0, "timeline", trace, "--chrome", out))
        TT_CHECK("timing sources named (python3's exit status)", 0,
                 tt_py(sources_py, out, NULL));
}

int main(void)
{
    tt_init();
    tt_need_python("json");
    test_full();
    test_empty();
    test_sources();
    return tt_done();
}
