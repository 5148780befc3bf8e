/* SPDX-License-Identifier: MIT */
/*
 * unit_trace_tool_kernels.c - `elixir-trace kernels`: every sort key (total, count, mean,
 * max, name, ties by name), the filters --device and --name alone and together, --top, the
 * JSON document parsed back with python3 (a kernel name with quotes, a backslash, a tab and
 * bytes that are not UTF-8 included), and the table (launches, and how many of them were
 * timed, beside the times over those).  Device times come from the launch
 * records' spans and from TIMING records, one written after its launch and one before it
 * (buffers of different threads may land in either order); a TIMING for an unknown id is
 * ignored.  Collectives and copies are not kernels.  C++ kernel names are shown demangled
 * (where libstdc++ can be opened) in the table and the JSON, and --name matches the shown
 * name; a name that only looks mangled stays as it is.  A graph launch timed by CUPTI has one
 * TIMING record per kernel node, all for the launch's id: its time is their whole span, as
 * timing by events gives it, not the last node's.  Control bytes in a name (terminal escape
 * sequences) are shown as '?' in text and escaped in JSON.
 */
#include "unit_trace_tool.h"

static const char *trace;
static trc_writer_t *w;

static void launch(uint64_t id, const char *name, int32_t dev, uint64_t dur)
{
    uint64_t t = 1000 + id * 10;
    trc_launch_t l = { .id = id, .func_id = tt_str(w, name), .device = dev,
                       .span = { dur > 0, t + 1, t + 1 + dur } };
    TT_EMIT(trc_emit_launch(w, t, &l));
}

static void timing(uint64_t time, uint64_t op, uint64_t start, uint64_t end)
{
    trc_timing_t tm = { .op = op, .source = TRC_TIMING_EVENTS, .start = start, .end = end };
    TT_EMIT(trc_emit_timing(w, time, &tm));
}

static void make_trace(void)
{
    trace = tt_path("kernels.trace");
    w = tt_writer(trace, 0);
    timing(900, 99, 5000, 5900);       /* before its launch: lazy, 900 ns */
    launch(1, "gemm_fp16", 0, 300);
    launch(2, "gemm_fp16", 0, 500);
    launch(3, "gemm_fp32", 1, 700);
    for (uint64_t i = 0; i < 5; i++)
        launch(4 + i, "relu", 0, 10 * (i + 1));
    launch(10, "softmax", 0, 0);       /* untimed */
    launch(11, "softmax", 1, 100);
    launch(12, "weird \"k\"\\\t\xff\xc3", 1, 0);
    trc_nccl_t n = { .op_id = tt_str(w, "allReduce"), .bytes = 1 << 20, .peer = -1,
                     .span = { 1, 2000, 9000 } };
    TT_EMIT(trc_emit_nccl(w, 1500, &n));
    trc_copy_t c = { .kind = TRC_COPY_HTOD, .bytes = 4096, .span = { 1, 2000, 9000 }, .id = 13 };
    TT_EMIT(trc_emit_copy(w, 1510, &c));
    launch(99, "lazy", 0, 0);
    timing(1600, 12345, 1, 2);         /* no such operation */
    tt_close(w);
}

/* The kernel names listed by `kernels trace --json args...`. */
#define NAMES(want, ...)                                                                      \
    TT_RUN_JSON("' '.join(k['name'] for k in d['kernels'] if k['name'] != "                   \
                "'weird \"k\"\\\\\\t\\ufffd\\ufffd')",                                        \
                want, "kernels", trace, "--json", __VA_ARGS__)

static void sorting(void)
{
    NAMES("lazy gemm_fp16 gemm_fp32 relu softmax", "--top", "0");
    NAMES("lazy gemm_fp16 gemm_fp32 relu softmax", "--sort", "total");
    NAMES("relu gemm_fp16 softmax gemm_fp32 lazy", "--sort", "count");
    NAMES("lazy gemm_fp32 gemm_fp16 softmax relu", "--sort", "mean");
    NAMES("lazy gemm_fp32 gemm_fp16 softmax relu", "--sort=max");
    NAMES("gemm_fp16 gemm_fp32 lazy relu softmax", "--sort", "name");
}

static void filters(void)
{
    NAMES("lazy gemm_fp16 relu softmax", "--device", "0");
    NAMES("gemm_fp32 softmax", "--device", "1");
    NAMES("", "--device", "2");
    NAMES("gemm_fp16 gemm_fp32", "--name", "gemm");
    NAMES("gemm_fp32", "--name=gemm", "--device", "1");
    NAMES("relu", "--name", "el", "--sort", "name");
    NAMES("lazy gemm_fp16", "--top", "2");
}

static void json_fields(void)
{
    tt_result_t r = tt_run("kernels", trace, "--json", "--sort", "name", "--top", "0", NULL);
    TT_JSON(r.out, "d['matched']", "6");
    TT_JSON(r.out, "[(k['launches'], k['timed'], k['total_ns'], k['mean_ns'], k['min_ns'], "
                   "k['max_ns']) for k in d['kernels'][:4]]",
            "[(2, 2, 800, 400, 300, 500), (1, 1, 700, 700, 700, 700), "
            "(1, 1, 900, 900, 900, 900), (5, 5, 150, 30, 10, 50)]");
    TT_JSON(r.out, "d['kernels'][4]['launches'], d['kernels'][4]['total_ns']", "(2, 100)");
    TT_JSON(r.out, "d['kernels'][5]['name'] == 'weird \"k\"\\\\\\t\\ufffd\\ufffd'", "True");
    TT_JSON(r.out, "d['kernels'][5]['mean_ns'], d['kernels'][5]['timed']", "(None, 0)");
    tt_free(&r);
}

static void table(void)
{
    tt_result_t r = tt_run("kernels", trace, "--device", "0", NULL);
    TT_CHECK("exit status", 0, r.status);
    TT_LINE(r.out, "4 kernels match; 4 shown, by total");
    TT_LINE(r.out, "800 ns", "  2 ", "400 ns", "300 ns", "500 ns", "gemm_fp16");
    TT_LINE(r.out, "900 ns", "  1 ", "lazy");
    TT_LINE(r.out, "-", "  1 ", "softmax");
    TT_HASNT(r.out, "allReduce");
    TT_HASNT(r.out, "gemm_fp32");
    tt_free(&r);
    /* On both devices softmax has two launches, one of them timed: the times are over one. */
    r = tt_run("kernels", trace, NULL);
    TT_CHECK("exit status", 0, r.status);
    TT_LINE(r.out, "total", "launches", "timed", "mean", "min", "max", "name");
    TT_LINE(r.out, "    100 ns         2         1      100 ns      100 ns      100 ns  softmax");
    TT_LINE(r.out, "         -         1         0           -           -           -  weird");
    tt_free(&r);
}

/* A trace of two C++ kernels (one launched twice) and a name that only looks mangled. */
static void demangling(void)
{
    const char *tr = tt_path("cxx.trace"), *want;
    w = tt_writer(tr, 0);
    launch(1, "_ZN2at6native13reduce_kernelILi512ELi1EEEvi", 0, 50);
    launch(2, "_ZN2at6native13reduce_kernelILi512ELi1EEEvi", 0, 70);
    launch(3, "_ZN5flash7fwd_runEv", 0, 10);
    launch(4, "_Zbogus", 0, 5);
    tt_close(w);
    want = tt_cxx_runtime() ? "void at::native::reduce_kernel<512, 1>(int):2 flash::fwd_run():1 "
                              "_Zbogus:1"
                            : "_ZN2at6native13reduce_kernelILi512ELi1EEEvi:2 "
                              "_ZN5flash7fwd_runEv:1 _Zbogus:1";
    TT_RUN_JSON("' '.join('%s:%d' % (k['name'], k['launches']) for k in d['kernels'])", want,
                "kernels", tr, "--json");
    if (!tt_cxx_runtime())
        return;
    TT_RUN_JSON("[k['name'] for k in d['kernels']]", "['flash::fwd_run()']", "kernels", tr,
                "--json", "--name", "flash::");
    tt_result_t r = tt_run("kernels", tr, NULL);
    TT_LINE(r.out, "120 ns", "  2 ", "void at::native::reduce_kernel<512, 1>(int)");
    tt_free(&r);
}

/* A graph launch with three TIMING records from CUPTI (its nodes, not in order), and a kernel
 * timed once: the graph's time runs from its first node's start to its last node's end. */
static void graph_nodes(void)
{
    const char *tr = tt_path("graph.trace");
    w = tt_writer(tr, 0);
    launch(1, "cuGraphLaunch", 0, 0);
    launch(2, "after", 0, 0);
    const trc_timing_source_t cupti = TRC_TIMING_CUPTI;
    trc_timing_t nodes[] = { { .op = 1, .source = cupti, .start = 5000, .end = 25000 },
                             { .op = 1, .source = cupti, .start = 4000, .end = 4500 },
                             { .op = 1, .source = cupti, .start = 25000, .end = 25100 },
                             { .op = 2, .source = cupti, .start = 26000, .end = 26200 } };
    for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++)
        TT_EMIT(trc_emit_timing(w, 30000 + i, &nodes[i]));
    tt_close(w);
    tt_result_t r = tt_run("kernels", tr, "--json", "--sort", "name", NULL);
    TT_JSON(r.out, "[(k['name'], k['timed'], k['total_ns']) for k in d['kernels']]",
            "[('after', 1, 200), ('cuGraphLaunch', 1, 21100)]");
    tt_free(&r);
}

/* A kernel named with terminal controls (ESC, BEL, CR, DEL, and U+009B, CSI, in UTF-8): the
 * table and the summary show each control byte as '?', the JSON escapes them. */
static void control_bytes(void)
{
    const char *tr = tt_path("controls.trace");
    w = tt_writer(tr, 0);
    launch(1, "evil\x1b[2J\x07\r\x7f\xc2\x9bname", 0, 40);
    tt_close(w);
    const char *cmds[2] = { "kernels", "summary" };
    for (int i = 0; i < 2; i++) {
        tt_result_t r = tt_run(cmds[i], tr, NULL);
        TT_CHECK("exit status", 0, r.status);
        TT_HAS(r.out, "evil?[2J?????name");
        for (const unsigned char *p = (const unsigned char *)r.out; *p; p++)
            if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f ||
                (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)) {
                TT_FAIL("%s printed control byte 0x%02x", cmds[i], *p);
                break;
            }
        tt_free(&r);
    }
    tt_result_t r = tt_run("kernels", tr, "--json", NULL);
    TT_JSON(r.out, "d['kernels'][0]['name'] == 'evil\\x1b[2J\\x07\\r\\x7f\\x9bname'", "True");
    tt_free(&r);
}

int main(void)
{
    tt_init();
    make_trace();
    sorting();
    filters();
    json_fields();
    table();
    demangling();
    graph_nodes();
    control_bytes();
    return tt_done();
}
