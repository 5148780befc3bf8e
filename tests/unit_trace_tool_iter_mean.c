/* SPDX-License-Identifier: MIT */
/*
 * unit_trace_tool_iter_mean.c - every command that shows a mean iteration time (summary,
 * report, diff as a table and as JSON) shows the same one, taken over the iterations that a
 * next mark closes: on a trace with marks 2, 3 and 4 us apart and a last iteration that runs
 * 20 us on to the end of the trace (teardown), the mean is 3 us, not 7.25 us; on a trace with
 * a single mark, no command shows a mean at all (nothing closes that iteration).
 */
#include "unit_trace_tool.h"


/* Marks at the given times (indices 0, 1, ...), one launch after the last, then an event at
 * t_end that the last iteration runs on to. */
static void make_trace(const char *path, const uint64_t *marks, size_t n, uint64_t t_end)
{
    trc_writer_t *w = tt_writer(path, 0);
    uint32_t k = tt_str(w, "step");
    for (size_t i = 0; i < n; i++)
        TT_EMIT(trc_emit_iteration(w, marks[i], &(trc_iteration_t){ (uint64_t)i }));
    trc_launch_t l = { .id = 1, .func_id = k, .span = { 1, marks[n - 1] + 100,
                                                        marks[n - 1] + 200 } };
    TT_EMIT(trc_emit_launch(w, marks[n - 1] + 50, &l));
    TT_EMIT(trc_emit_free(w, t_end, &(trc_free_t){ 7 }));
    tt_close(w);
}

/* The report of trace, as text. */
static char *report(const char *trace, const char *name)
{
    const char *out = tt_path(name);
    if (!TT_RUN(0, "report", trace, out))
        return strdup("");
    return tt_slurp(out);
}

/* Marks at 1, 3, 6 and 10 us, the trace ends at 30 us: iterations of 2, 3 and 4 us closed by
 * a next mark (mean 3 us), and the last one, 20 us to the end, counted by none. */
static void closed_iterations(void)
{
    static const uint64_t marks[] = { 1000, 3000, 6000, 10000 };
    const char *trace = tt_path("four.trace");
    make_trace(trace, marks, 4, 30000);

    tt_result_t r = tt_run("summary", trace, NULL);
    TT_CHECK("summary: exit status", 0, r.status);
    TT_LINE(r.out, "iterations  4 marked; over 3 between marks: mean 3.00 us, min 2.00 us, "
                   "max 4.00 us");
    tt_free(&r);

    char *html = report(trace, "four.html");
    TT_HAS(html, "4 marked; over 3 between marks: mean 3.00 \xc2\xb5s, min 2.00 \xc2\xb5s, "
                 "max 4.00 \xc2\xb5s");
    free(html);

    r = tt_run("diff", trace, trace, NULL);
    TT_CHECK("diff: exit status", 0, r.status);
    TT_LINE(r.out, "iteration time (mean)", "3.00 us", "3.00 us", "same");
    tt_free(&r);
    TT_RUN_JSON("[(f['a'], f['b']) for f in d['figures'] if f['figure'] == "
                "'iteration time (mean)']", "[(3000, 3000)]", "diff", trace, trace, "--json");
}

/* One mark at 1 us, the trace ends at 5 us: no iteration is closed, so there is no mean (the
 * 4 us to the end would be the run's teardown as much as an iteration). */
static void single_mark(void)
{
    static const uint64_t marks[] = { 1000 };
    const char *trace = tt_path("one.trace");
    make_trace(trace, marks, 1, 5000);

    tt_result_t r = tt_run("summary", trace, NULL);
    TT_CHECK("summary: exit status", 0, r.status);
    TT_LINE(r.out, "iterations  1 marked; none closed by a next mark: no mean");
    TT_HASNT(r.out, "mean 4.00 us");
    tt_free(&r);

    char *html = report(trace, "one.html");
    TT_HAS(html, "1 marked; none closed by a next mark: no mean");
    TT_HASNT(html, "mean 4.00");
    free(html);

    r = tt_run("diff", trace, trace, NULL);
    TT_CHECK("diff: exit status", 0, r.status);
    TT_LINE(r.out, "iteration time (mean)", " - ");
    TT_HASNT(r.out, "4.00 us");
    tt_free(&r);
    TT_RUN_JSON("[(f['a'], f['b']) for f in d['figures'] if f['figure'] == "
                "'iteration time (mean)']", "[(None, None)]", "diff", trace, trace, "--json");
}

int main(void)
{
    tt_init();
    tt_need_python("json");
    closed_iterations();
    single_mark();
    return tt_done();
}
