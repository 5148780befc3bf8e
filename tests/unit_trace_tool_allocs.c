/* SPDX-License-Identifier: MIT */
/*
 * unit_trace_tool_allocs.c - `elixir-trace allocs`: every sort key (size, time, lifetime,
 * device), every filter (--device with a number and 'host', --min-size with suffixes,
 * --live) alone and combined, --top, --stack-depth, and --json, whose document is parsed
 * back with python3 (including a module name with a quote, a backslash, a control byte and
 * a byte that is not UTF-8, which must come out escaped); and the text table.
 */
#include "unit_trace_tool.h"


static const char *trace;

/*  id  device  size     alloc  free   lifetime (t_last = 5000)
 *   1   0      4 MiB    100    1100   1000
 *   2   1      1 MiB    200    live   4800
 *   3   0      16 MiB   300    600    300
 *   4   host   2 MiB    400    5000   4600
 *   5   1      512 KiB  500    live   4500
 *   6   0      64 KiB   600    700    100 */
static void make_trace(void)
{
    static const struct { int32_t dev; uint64_t size, t, freed; } a[6] = {
        { 0, 4 * MiB, 100, 1100 }, { 1, MiB, 200, 0 },      { 0, 16 * MiB, 300, 600 },
        { -1, 2 * MiB, 400, 5000 }, { 1, 512 * KiB, 500, 0 }, { 0, 64 * KiB, 600, 700 },
    };
    trace = tt_path("allocs.trace");
    trc_writer_t *w = tt_writer(trace, 0);
    uint32_t deep = tt_str(w, "/nonexistent/libdeep.so");
    uint32_t weird = tt_str(w, "/weird/\"q\\b\x01\xff.so");
    trc_frame_t f[5];
    for (int i = 0; i < 5; i++)
        f[i] = (trc_frame_t){ deep, 0x10 * (uint64_t)(i + 1), NULL };
    long s_deep = trc_writer_stack(w, f, 5);
    long s_weird = trc_writer_stack(w, &(trc_frame_t){ weird, 0x99, NULL }, 1);
    for (int i = 0; i < 6; i++) {
        trc_alloc_t al = { (uint64_t)i + 1, a[i].dev, 0x10000000ull * (uint64_t)(i + 1),
                           a[i].size, i == 0 ? (uint32_t)s_deep : i == 5 ? (uint32_t)s_weird : 0,
                           NULL };
        TT_EMIT(trc_emit_alloc(w, a[i].t, &al));
    }
    uint64_t frees[][2] = { { 3, 600 }, { 6, 700 }, { 1, 1100 }, { 4, 5000 } };
    for (int i = 0; i < 4; i++)
        TT_EMIT(trc_emit_free(w, frees[i][1], &(trc_free_t){ frees[i][0] }));
    tt_close(w);
}

/* The ids listed by `allocs trace --json args...`, as Python prints the list. */
#define IDS(want, ...)                                                                        \
    TT_RUN_JSON("[a['id'] for a in d['allocations']]", want, "allocs", trace, "--json",       \
                __VA_ARGS__)

static void sorting(void)
{
    IDS("[3, 1, 4, 2, 5, 6]", "--sort", "size");
    IDS("[3, 1, 4, 2, 5, 6]", "--top", "0");       /* size is the default */
    IDS("[1, 2, 3, 4, 5, 6]", "--sort", "time");
    IDS("[2, 4, 5, 1, 3, 6]", "--sort=lifetime");
    IDS("[4, 3, 1, 6, 2, 5]", "--sort", "device");
}

static void filters(void)
{
    IDS("[3, 1, 6]", "--device", "0");
    IDS("[2, 5]", "--device=1");
    IDS("[4]", "--device", "host");
    IDS("[]", "--device", "7");
    IDS("[3, 1, 4, 2]", "--min-size", "1M");
    IDS("[3, 1, 4]", "--min-size", "2MiB");
    IDS("[3, 1, 4, 2, 5]", "--min-size", "524288");
    IDS("[3]", "--min-size", "16m");
    IDS("[2, 5]", "--live");
    IDS("[3, 1]", "--top", "2");
    IDS("[2, 5]", "--device", "1", "--live", "--sort", "time");
    IDS("[1]", "--device", "0", "--min-size", "1K", "--sort", "lifetime", "--top", "1");
}

static void json_fields(void)
{
    tt_result_t r = tt_run("allocs", trace, "--json", "--sort", "time", NULL);
    TT_JSON(r.out, "d['matched']", "6");
    TT_JSON(r.out, "d['allocations'][0]['lifetime_ns'], d['allocations'][0]['t_free']",
            "(1000, 1100)");
    TT_JSON(r.out, "d['allocations'][1]['live'], d['allocations'][1]['t_free']", "(True, None)");
    TT_JSON(r.out, "d['allocations'][3]['device']", "-1");
    TT_JSON(r.out, "len(d['allocations'][0]['stack'])", "3");   /* default depth 3 */
    TT_JSON(r.out, "d['allocations'][0]['call_site']",
            "libdeep.so+0x10 < libdeep.so+0x20 < libdeep.so+0x30");
    TT_JSON(r.out, "d['allocations'][5]['stack'][0]['module'] == '/weird/\"q\\\\b\\x01\\ufffd.so'",
            "True");
    TT_JSON(r.out, "d['allocations'][5]['stack'][0]['offset']", "153");
    tt_free(&r);
    r = tt_run("allocs", trace, "--json", "--sort", "time", "--stack-depth", "0", NULL);
    TT_JSON(r.out, "len(d['allocations'][0]['stack'])", "5");
    tt_free(&r);
    r = tt_run("allocs", trace, "--json", "--sort", "time", "--stack-depth", "2", NULL);
    TT_JSON(r.out, "d['allocations'][0]['call_site']", "libdeep.so+0x10 < libdeep.so+0x20");
    TT_JSON(r.out, "d['allocations'][1]['stack']", "[]");
    tt_free(&r);
}

static void table(void)
{
    tt_result_t r = tt_run("allocs", trace, "--top", "3", "--stack-depth", "1", NULL);
    TT_CHECK("exit status", 0, r.status);
    TT_LINE(r.out, "6 of 6 allocations match; 3 shown, by size");
    TT_LINE(r.out, "  3 ", "  0 ", "16.00 MiB", "200 ns", "300 ns", "-");
    TT_LINE(r.out, "  1 ", "4.00 MiB", "1.00 us", "libdeep.so+0x10");
    TT_LINE(r.out, "  4 ", "host", "2.00 MiB", "4.60 us");
    TT_HASNT(r.out, "libdeep.so+0x20");
    TT_HASNT(r.out, "512.00 KiB");
    tt_free(&r);
    r = tt_run("allocs", trace, "--live", NULL);
    TT_LINE(r.out, "  2 ", "1.00 MiB", "live", "4.80 us");
    TT_LINE(r.out, "  5 ", "512.00 KiB", "live", "4.50 us");
    TT_LINE(r.out, "2 of 6 allocations match; 2 shown, by size");
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
    return tt_done();
}
