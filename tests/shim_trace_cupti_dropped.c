/* SPDX-License-Identifier: MIT */
/*
 * shim_trace_cupti_dropped.c - the activity records CUPTI drops are noticed, said once in the
 * log, recorded in the trace (a DROPPED record) and shown by `elixir-trace summary`, `kernels`
 * and `report`; a trace that lost nothing says nothing of it.
 *
 * The scenario is a training loop of N iterations: an upload (HtoD) and tt_k1 on a stream of
 * its own, tt_k2 on the legacy stream, tt_k3 on the first stream again, then synchronise; one
 * warm-up and one profiled iteration, timed by the simulator's CUPTI stand-in.  Run as it is,
 * every operation of the profiled iteration gets a TIMING record and there is no DROPPED
 * record, no warning and no summary line.  Run with ELIXIR_CUPTI_BUFFER=64 (CUPTI's buffers
 * then hold the 24-byte external correlation and 40-byte API records, but no kernel or copy
 * record, of 216 and 96 bytes), CUPTI drops the record of every one of those operations: the
 * trace must have no TIMING record, a DROPPED record (source CUPTI) counting exactly as many
 * records as the first run had TIMING ones, the log must say that count once, and the
 * summary must say it and show the kernels without device times, and so must `kernels` (its
 * table, and its JSON's "dropped_records") and `report`.  With 32-byte buffers the
 * API record of each of those operations is dropped too (only the external correlation
 * records fit): CUPTI counts those in its global queue, so the DROPPED record counts twice as
 * many.  With TT_DROPPED_CTX=1 the first three iterations also run a kernel in another context,
 * which the third destroys: the drops of that context's queue, which cannot be read once it
 * is gone, must be counted too.
 */
#define TT_KERNELS
#include "shim_trace_test.h"

#define N 4
#define WORDS 256

/* A kernel of its own for the other context, so that the iterations stay marked as before. */
static const char other_ptx[] = ST_PTX_HEADER
    ".visible .entry other_k(.param .u64 p, .param .u64 n)\n{\n ret;\n}\n";

SIM_KERNEL void other_k(const sim_launch_t *l, void **params)
{
    tt_k3(l, params);
}

/* Context *c (made when NULL): other_k run in it on its legacy stream; with `last`, the context
 * destroyed then (an iteration after the profiled one, before CUPTI is retired). */
static void other_context(CUcontext home, CUcontext *c, int last)
{
    static CUfunction k;
    static CUdeviceptr p;

    if (!*c) {
        CHECK_CU(cuCtxCreate(c, NULL, 0, 0));
        k = st_function(other_ptx, "other_k");
        CHECK_CU(cuMemAlloc(&p, WORDS * 4));
    }
    CHECK_CU(cuCtxSetCurrent(*c));
    CHECK_CU(tt_launch1(k, CU_STREAM_LEGACY, p, WORDS));
    CHECK_CU(cuCtxSynchronize());
    if (last) {
        CHECK_CU(cuMemFree(p));
        CHECK_CU(cuCtxDestroy(*c));
    }
    CHECK_CU(cuCtxSetCurrent(home));
}

static void scenario(void)
{
    static uint32_t host[WORDS];
    CUdeviceptr x, y;
    CUstream s;

    CUcontext home = st_setup(0), other = NULL;
    CUfunction k1 = st_function(tt_ptx, "tt_k1"), k2 = st_function(tt_ptx, "tt_k2");
    CUfunction k3 = st_function(tt_ptx, "tt_k3");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&x, WORDS * 4));
    CHECK_CU(cuMemAlloc(&y, WORDS * 4));
    CHECK_CU(cuMemsetD32(y, 1, WORDS));
    for (int i = 0; i < N; i++) {
        CHECK_CU(cuMemcpyHtoDAsync(x, host, sizeof(host), s));
        CHECK_CU(tt_launch1(k1, s, x, WORDS));
        CHECK_CU(cuStreamSynchronize(s));
        CHECK_CU(tt_launch2(k2, CU_STREAM_LEGACY, x, y, WORDS));
        CHECK_CU(cuCtxSynchronize());
        CHECK_CU(tt_launch1(k3, s, x, WORDS));
        CHECK_CU(cuCtxSynchronize());
        if (getenv("TT_DROPPED_CTX") && i <= 2)
            other_context(home, &other, i == 2);
    }
    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuMemFree(x));
    CHECK_CU(cuMemFree(y));
}

static char trace_path[128];    /* the last trace record() made */

/* Records the scenario into trace k, with `extra` in the environment (or nothing); returns
 * the run, the trace in *t and the summary's text (static). */
static const char *record(int k, const char *extra, const char *more, sh_run_t *r,
                          tt_trace_t *t)
{
    const char *path = tt_path("cupti-dropped", k);
    snprintf(trace_path, sizeof(trace_path), "%s", path);
    const char *env[] = { tt_env_trace(path, k), "ELIXIR_PROFILE_WARMUP=1",
                          "ELIXIR_PROFILE_ITERATIONS=1", extra, more, NULL };
    *r = sh_run_ok("scenario", env);
    EXPECT(strstr(r->err, "not CUPTI") == NULL, "CUPTI did not time the profiled iteration:\n%s",
           r->err);
    tt_load(path, t);
    tt_expect_clean(t, path);
    const char *args[] = { "summary", path, NULL };
    const char *out = tt_path("cupti-dropped", k + 2);
    return tt_tool(args, out, out);
}

/* `kernels` (as a table and as JSON) and `report` of the trace at path say that `lost`
 * device-time records were dropped, or say nothing of drops when none were. */
static void check_tables(const char *path, uint64_t lost)
{
    char out[256], html[256], want[128], json[64];
    snprintf(out, sizeof(out), "%s.out", path);
    snprintf(html, sizeof(html), "%s.html", path);
    snprintf(want, sizeof(want), "CUPTI dropped %llu activity records: kernel timings incomplete",
             (unsigned long long)lost);
    snprintf(json, sizeof(json), "\"dropped_records\": %llu}", (unsigned long long)lost);
    const char *table[] = { "kernels", path, NULL };
    const char *text = tt_tool(table, out, out);
    EXPECT(lost ? strstr(text, want) != NULL : strstr(text, "timings incomplete") == NULL,
           "kernels %s \"%s\":\n%s", lost ? "does not say" : "speaks of drops, not", want, text);
    const char *as_json[] = { "kernels", path, "--json", NULL };
    text = tt_tool(as_json, out, out);
    EXPECT(strstr(text, json) != NULL, "kernels --json lacks '%s':\n%s", json, text);
    const char *report[] = { "report", path, html, NULL };
    text = tt_tool(report, out, html);
    unlink(out);
    EXPECT(lost ? strstr(text, want) != NULL : strstr(text, "timings incomplete") == NULL,
           "the report %s \"%s\"", lost ? "does not say" : "speaks of drops, not", want);
}

/* The DROPPED records' total (of CUPTI), and their number in *n. */
static uint64_t dropped(const tt_trace_t *t, size_t *n)
{
    uint64_t sum = 0;
    *n = tt_count(t, TRC_EV_DROPPED);
    for (size_t i = 0; i < *n; i++) {
        const trc_dropped_t *d = &tt_nth(t, TRC_EV_DROPPED, i)->u.dropped;
        EXPECT(d->source == TRC_TIMING_CUPTI, "a DROPPED record of source %u", d->source);
        sum += d->count;
    }
    return sum;
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    sh_run_t r;
    tt_trace_t t;
    size_t n;
    char want[128];

    /* Nothing lost: nothing said. */
    const char *summary = record(0, "ELIXIR_LOG=warn", NULL, &r, &t);
    size_t timed = tt_count(&t, TRC_EV_TIMING);
    EXPECT(timed >= 4, "the profiled iteration's operations timed by CUPTI: %zu TIMING records",
           timed);
    EXPECT(dropped(&t, &n) == 0 && n == 0, "%zu DROPPED records in a trace that lost nothing",
           n);
    EXPECT(strstr(r.err, "CUPTI dropped") == NULL, "a warning of drops that did not happen:\n%s",
           r.err);
    EXPECT(strstr(summary, "CUPTI dropped") == NULL, "the summary speaks of drops:\n%s", summary);
    EXPECT(strstr(summary, "tt_k2") != NULL, "the summary lists no kernel:\n%s", summary);
    check_tables(trace_path, 0);
    tt_free(&t);
    sh_run_free(&r);

    /* Every kernel and copy record of the profiled iteration dropped. */
    summary = record(1, "ELIXIR_CUPTI_BUFFER=64", NULL, &r, &t);
    EXPECT(tt_count(&t, TRC_EV_TIMING) == 0, "%zu TIMING records though CUPTI kept no record",
           tt_count(&t, TRC_EV_TIMING));
    uint64_t lost = dropped(&t, &n);
    EXPECT(n == 1 && lost == timed, "%zu DROPPED records counting %llu; expected one counting %zu",
           n, (unsigned long long)lost, timed);
    snprintf(want, sizeof(want), "CUPTI dropped %zu activity records", timed);
    EXPECT(sh_count(r.err, want) == 1, "the log does not say \"%s\" once:\n%s", want, r.err);
    snprintf(want, sizeof(want), "CUPTI dropped %zu activity records: kernel timings incomplete",
             timed);
    EXPECT(strstr(summary, want) != NULL, "the summary does not say \"%s\":\n%s", want, summary);
    /* No made-up times: every kernel's row has none ("-" for its total). */
    const char *row = strstr(summary, "tt_k2");
    const char *line = row;
    while (line && line > summary && line[-1] != '\n')
        line--;
    EXPECT(line && strncmp(line, "           -", 12) == 0,
           "tt_k2 shown with device times though its records were dropped:\n%s", summary);
    check_tables(trace_path, lost);
    tt_free(&t);
    sh_run_free(&r);

    /* The API records too: the global queue's. */
    summary = record(2, "ELIXIR_CUPTI_BUFFER=32", NULL, &r, &t);
    lost = dropped(&t, &n);
    EXPECT(n == 1 && lost == 2 * timed,
           "%zu DROPPED records counting %llu; expected one counting %zu (%zu API records)", n,
           (unsigned long long)lost, 2 * timed, timed);
    snprintf(want, sizeof(want), "CUPTI dropped %zu activity records: kernel timings incomplete",
             2 * timed);
    EXPECT(strstr(summary, want) != NULL, "the summary does not say \"%s\":\n%s", want, summary);
    tt_free(&t);
    sh_run_free(&r);

    /* A context destroyed in the profiled iteration: its drops are counted as well. */
    record(0, "TT_DROPPED_CTX=1", NULL, &r, &t);
    size_t timed_ctx = tt_count(&t, TRC_EV_TIMING);
    EXPECT(timed_ctx == timed + 1, "%zu TIMING records with a context's kernel, expected %zu",
           timed_ctx, timed + 1);
    tt_free(&t);
    sh_run_free(&r);
    record(1, "TT_DROPPED_CTX=1", "ELIXIR_CUPTI_BUFFER=64", &r, &t);
    lost = dropped(&t, &n);
    EXPECT(n == 1 && lost == timed_ctx,
           "%zu DROPPED records counting %llu; expected one counting %zu (one of a context "
           "destroyed)", n, (unsigned long long)lost, timed_ctx);
    printf("%zu, %zu and %zu records dropped, reported in the log, the trace, the summary, "
           "kernels and report\n", timed, 2 * timed, timed_ctx);
    tt_free(&t);
    sh_run_free(&r);
    return 0;
}
