/* SPDX-License-Identifier: MIT */
/*
 * unit_trace_tool_plan.c - `elixir-trace plan` on a made-up trace: three 4 MiB weights, each
 * used by one 100 us kernel per iteration, with a host-to-device copy into the first and a
 * memset of the second.  Planned for a GPU that holds all 12 MiB, the prediction is the
 * unlimited GPU's time and nothing moves; for 8 MiB, chunks move both ways every iteration
 * and the prediction is above the unlimited time and not below the lower bound; for 2 MiB the
 * three kernels and the memset reach more than the GPU holds and run in place (the output says
 * so; the copy reaches one chunk of the first weight): nothing moves.  A fixed --slack.
 * --handles extent (a move one physical handle) maps in less host time.  The
 * sweep, its JSON and its picture, and the errors: a trace without a closed iteration, an
 * iteration not in it, a bad bandwidth, --svg without --sweep.  With the host synchronising
 * the stream after each iteration's last launch (a SYNC record), the plan counts one, and the
 * predicted iteration is longer than the unlimited GPU's: the host issues the next iteration
 * only once the GPU is done.
 */
#include "simcuda.h"
#include "unit_trace_tool.h"

#define ITER_NS 1000000u               /* iterations 1 ms apart */
#define BASE    0x7f0000000000ull

static int with_sync;                  /* make_trace_remaps: a SYNC after each iteration */

/* A trace of `iters` iteration marks, each iteration as described above, and a MAPPING record
 * of `remaps` reactive remaps of 40 us each (none: 0). */
static void make_trace_remaps(const char *path, unsigned iters, uint64_t remaps)
{
    trc_writer_t *w = tt_writer(path, 0);
    uint32_t k;
    tt_plan_preamble(w, &k);
    for (uint64_t a = 1; a <= 3; a++)
        TT_EMIT(trc_emit_alloc(w, 10 + a, &(trc_alloc_t){ .id = a, .device = 0,
                                                          .addr = BASE + (a - 1) * 4 * MiB,
                                                          .size = 4 * MiB }));
    uint64_t id = 1;
    for (unsigned i = 0; i < iters; i++) {
        uint64_t t = 1000 + (uint64_t)i * ITER_NS;
        TT_EMIT(trc_emit_iteration(w, t, &(trc_iteration_t){ i }));
        trc_copy_t c = { .kind = TRC_COPY_HTOD, .src = 0x1000, .dst = BASE, .bytes = 4096,
                         .span = { 1, t + 10, t + 20 }, .id = id++ };
        TT_EMIT(trc_emit_copy(w, t + 5, &c));
        trc_memset_t m = { .dst = BASE + 4 * MiB, .bytes = 4 * MiB, .elem_size = 4,
                           .span = { 1, t + 30, t + 40 }, .id = id++ };
        TT_EMIT(trc_emit_memset(w, t + 25, &m));
        for (uint64_t a = 1; a <= 3; a++) {
            uint64_t start = t + 100 + a * 200000;
            trc_launch_t l = { .id = id++, .func_id = k, .span = { 1, start, start + 100000 },
                               .nallocs = 1, .allocs = &a };
            TT_EMIT(trc_emit_launch(w, t + 50 + a, &l));
        }
        if (with_sync)
            TT_EMIT(trc_emit_sync(w, t + 60, &(trc_sync_t){ TRC_SYNC_STREAM, 0, 0 }));
    }
    TT_EMIT(trc_emit_free(w, 1000 + (uint64_t)iters * ITER_NS, &(trc_free_t){ 1 }));
    if (remaps)
        TT_EMIT(trc_emit_mapping(w, 1000 + (uint64_t)iters * ITER_NS,
                                 &(trc_mapping_t){ .device = 0, .reactive_remaps = remaps,
                                                   .reactive_ns = remaps * 40000 }));
    tt_close(w);
}

static void make_trace(const char *path, unsigned iters)
{
    make_trace_remaps(path, iters, 0);
}

static tt_result_t plan(const char *trace, const char *gpu, const char *more)
{
    return tt_run("plan", trace, "--gpu-memory", gpu, more, NULL);
}

static void fits(const char *trace)
{
    tt_result_t r = plan(trace, "16M", NULL);
    TT_CHECK("16M: exit status", 0, r.status);
    TT_LINE(r.out, "operations 5, 5 with device times", "0 host synchronisations",
            "footprint 12.00 MiB");
    TT_LINE(r.out, "predicted", "1.00x an unlimited GPU (300.02 us)");
    TT_LINE(r.out, "peak", "gpu 12.00 MiB");
    TT_LINE(r.out, "moved       nothing");
    if (strstr(r.out, "to GPU"))
        TT_FAIL("16M: nothing should move, got:\n%s", r.out);
    tt_free(&r);
}

static void pages(const char *trace)
{
    tt_result_t r = plan(trace, "8M", "--json");
    TT_CHECK("8M: exit status", 0, r.status);
    TT_JSON(r.out, "d['plan']['planned']", "True");
    TT_JSON(r.out, "d['footprint']", "12582912");
    TT_JSON(r.out, "d['plan']['bytes']['host']['to_gpu'] > 0", "True");
    TT_JSON(r.out, "d['plan']['bytes']['host']['from_gpu'] > 0", "True");
    TT_JSON(r.out, "d['plan']['iteration_ns'] > d['plan']['unlimited_ns']", "True");
    TT_JSON(r.out, "d['plan']['iteration_ns'] >= d['plan']['bound_ns']", "True");
    TT_JSON(r.out, "d['plan']['bound_ns'] >= d['plan']['bound_in_ns'] > 0", "True");
    TT_JSON(r.out, "0 < d['plan']['bound_chunks_in'] << 21 <= d['plan']['bytes']['host']"
                   "['to_gpu']", "True");
    TT_JSON(r.out, "d['plan']['bound_chunks_back'] << 21 <= d['plan']['bytes']['host']"
                   "['from_gpu']", "True");
    TT_JSON(r.out, "d['plan']['peak']['gpu'] <= 8 << 20", "True");
    TT_JSON(r.out, "d['plan']['peak']['gpu'] + (d['plan']['knobs']['slack_chunks'] << 21) <= "
                   "8 << 20", "True");
    TT_JSON(r.out, "d['plan']['knobs']['near']", "0");     /* (a trace has no such references) */
    TT_JSON(r.out, "d['machine']['gpu_memory']", "8388608");
    TT_JSON(r.out, "d['machine']['unmap']", "False");
    /* As the shim with ELIXIR_PLAN_UNMAP=1: half the mapping calls, and the GPU room an
     * eviction frees handed over on the GPU: a shorter iteration. */
    tt_result_t u = tt_run("plan", trace, "--gpu-memory", "8M", "--unmap", "--json", NULL);
    TT_CHECK("8M --unmap: exit status", 0, u.status);
    TT_JSON(u.out, "d['machine']['unmap']", "True");
    const char *a = strstr(r.out, "\"iteration_ns\": "), *b = strstr(u.out, "\"iteration_ns\": ");
    double mapped = a ? strtod(a + 16, NULL) : 0, unmapped = b ? strtod(b + 16, NULL) : 0;
    if (!(unmapped > 0 && unmapped < mapped))
        TT_FAIL("8M --unmap: expected an iteration shorter than %.0f ns, got %.0f ns:\n%s",
                mapped, unmapped, u.out);
    tt_free(&u);
    tt_free(&r);
    r = plan(trace, "8M", "--pcie=50");
    TT_LINE(r.out, "machine", "link 50 GB/s each way (72 both)");
    tt_free(&r);
    r = plan(trace, "8M", "--unmap");
    TT_LINE(r.out, "machine", "evictions unmapped");
    TT_LINE(r.out, "host", "to GPU", "from GPU");
    tt_free(&r);
}

/* --slack: a fixed slack is every plan's, 0 none; one that leaves an operation's chunks no
 * room plans nothing, and says so. */
static void slack(const char *trace)
{
    tt_result_t r = tt_run("plan", trace, "--gpu-memory", "8M", "--slack", "1", "--json", NULL);
    TT_CHECK("8M --slack 1: exit status", 0, r.status);
    TT_JSON(r.out, "d['plan']['knobs']['slack_chunks']", "1");
    TT_JSON(r.out, "d['plan']['peak']['gpu'] <= 6 << 20", "True");
    tt_free(&r);
    r = plan(trace, "8M", "--slack=0");
    TT_LINE(r.out, "chosen", "0 chunks of slack");
    tt_free(&r);
    r = tt_run("plan", trace, "--sweep", "--points", "3", "--slack", "1", NULL);
    TT_CHECK("sweep --slack 1: exit status", 0, r.status);
    TT_LINE(r.out, "4.00 MiB", "no plan", "than the slack leaves");
    tt_free(&r);
    TT_REFUSED(TT_ARGS("plan", trace, "--gpu-memory", "8M", "--slack", "4"),
               "--slack 4: the GPU holds 4 chunks");
    TT_REFUSED(TT_ARGS("plan", trace, "--slack", "2", "--unmap"), "--slack 2 with --unmap");
    TT_REFUSED(TT_ARGS("plan", trace, "--slack", "4097"),
               "--slack: '4097' is not a slack", "0 to 4096");
    TT_RUN(0, "plan", trace, "--slack", "0", "--unmap");
}

static void in_place(const char *trace)
{
    tt_result_t r = plan(trace, "2M", NULL);
    TT_CHECK("2M: exit status", 0, r.status);
    TT_LINE(r.out, "4 operations reach more than the GPU holds", "in place");
    TT_LINE(r.out, "moved       nothing");
    tt_free(&r);
}

static void sweep(const char *trace)
{
    tt_result_t r = tt_run("plan", trace, "--sweep", "--points", "3", "--json", NULL);
    TT_CHECK("sweep: exit status", 0, r.status);
    TT_JSON(r.out, "[p['gpu_memory'] for p in d['sweep']]", "[4194304, 8388608, 12582912]");
    TT_JSON(r.out, "d['sweep'][2]['iteration_ns'] == d['sweep'][2]['unlimited_ns']", "True");
    TT_JSON(r.out, "d['sweep'][0]['iteration_ns'] >= d['sweep'][1]['iteration_ns']", "True");
    tt_free(&r);

    const char *svg = tt_path("sweep.svg");
    r = tt_run("plan", trace, "--sweep", "--points", "3", "--svg", svg, NULL);
    TT_CHECK("sweep --svg: exit status", 0, r.status);
    TT_LINE(r.out, "sweep", "GPU memory", "predicted");
    TT_LINE(r.err, "wrote", svg);
    char *pic = tt_slurp(svg);
    if (!strstr(pic, "<polyline") || !strstr(pic, "</svg>"))
        TT_FAIL("%s: no plotted line:\n%s", svg, pic);
    free(pic);
    tt_free(&r);
    TT_RUN(1, "plan", trace, "--sweep", "--svg", svg);          /* exists: no --force */
}

/* The trace again with a host synchronisation of the stream after each iteration's launches. */
static void syncs(const char *path)
{
    with_sync = 1;
    make_trace(path, 4);
    with_sync = 0;
    tt_result_t r = plan(path, "16M", "--json");
    TT_CHECK("synchronised: exit status", 0, r.status);
    TT_JSON(r.out, "d['syncs']", "1");
    TT_JSON(r.out, "d['plan']['iteration_ns'] > d['plan']['unlimited_ns'] + 1000", "True");
    tt_free(&r);
    r = plan(path, "16M", NULL);
    TT_LINE(r.out, "operations 5, 5 with device times", "1 host synchronisation;");
    tt_free(&r);
}

/* The mapping calls' cost per chunk moved: the H200's without mapping records, the mean of
 * the trace's reactive remaps with 16 or more, --map-us where given; the iteration follows. */
static void mapping(const char *trace)
{
    tt_result_t r = plan(trace, "8M", "--json");
    TT_JSON(r.out, "d['machine']['map_from']", "default");
    TT_JSON(r.out, "d['machine']['map_us_per_chunk']", "132");
    const char *a = strstr(r.out, "\"iteration_ns\": ");
    double dflt = a ? strtod(a + 16, NULL) : 0;
    tt_free(&r);
    r = tt_run("plan", trace, "--gpu-memory", "8M", "--map-us", "0", "--json", NULL);
    TT_JSON(r.out, "d['machine']['map_from']", "--map-us");
    TT_JSON(r.out, "d['machine']['map_us_per_chunk']", "0");
    TT_JSON(r.out, "d['machine']['drop_us_per_chunk']", "0");
    a = strstr(r.out, "\"iteration_ns\": ");
    if (!(a && strtod(a + 16, NULL) < dflt))
        TT_FAIL("--map-us 0: expected an iteration shorter than %.0f ns:\n%s", dflt, r.out);
    tt_free(&r);
    r = tt_run("plan", trace, "--gpu-memory", "8M", "--map-us", "66", "--unmap", NULL);
    TT_LINE(r.out, "mapping calls 24.5 us a chunk moved, 49.5 us a chunk born (--map-us), "
            "16.5 us of it the unmap of the room it takes");
    tt_free(&r);
    /* --handles extent: a weight's two chunks moved as one handle cost the mapping calls of
     * about one; the same knobs cannot cost more, so the best plan is not longer. */
    r = tt_run("plan", trace, "--gpu-memory", "8M", "--json", NULL);
    tt_result_t e = tt_run("plan", trace, "--gpu-memory", "8M", "--handles", "extent", "--json",
                           NULL);
    TT_CHECK("8M --handles extent: exit status", 0, e.status);
    TT_JSON(r.out, "d['machine']['handles']", "chunk");
    TT_JSON(e.out, "d['machine']['handles']", "extent");
    /* (the share is the simulator's: per-granule charges over one device handle's map, set
     * access and unmap) */
    double g = SIM_COST_MAP_GRANULE_US + SIM_COST_ACCESS_GRANULE_US + SIM_COST_UNMAP_GRANULE_US;
    double all = g + SIM_COST_MAP_CALL_US + SIM_COST_MAP_HANDLE_US + SIM_COST_ACCESS_CALL_US +
                 SIM_COST_ACCESS_HANDLE_US + SIM_COST_UNMAP_CALL_US + SIM_COST_UNMAP_HANDLE_US;
    char share[96];
    snprintf(share, sizeof(share), "abs(d['machine']['handle_share'] - %.9f) < 1e-6", g / all);
    TT_JSON(e.out, share, "True");
    TT_JSON(e.out, "d['plan']['knobs']['extent_chunks'] > 1", "True");
    const char *mk = "\"map_ns\": ", *ik = "\"iteration_ns\": ";
    const char *m1 = strstr(r.out, mk), *m2 = strstr(e.out, mk);
    const char *i1 = strstr(r.out, ik), *i2 = strstr(e.out, ik);
    if (!(m1 && m2 && i1 && i2 &&
          strtod(m2 + strlen(mk), NULL) < strtod(m1 + strlen(mk), NULL) &&
          strtod(i2 + strlen(ik), NULL) <= strtod(i1 + strlen(ik), NULL)))
        TT_FAIL("--handles extent: expected less mapping time and no longer an iteration "
                "than:\n%s\ngot:\n%s", r.out, e.out);
    tt_free(&e);
    tt_free(&r);
    r = plan(trace, "8M", "--handles=extent");
    TT_LINE(r.out, "mapping calls", "a move one handle: 1.4% of that per further chunk");
    tt_free(&r);
    /* Traces whose reactive remaps took 40 us each: too few of them, then enough. */
    const char *few = tt_path("few-remaps.trace"), *many = tt_path("remaps.trace");
    make_trace_remaps(few, 3, 15);
    make_trace_remaps(many, 3, 16);
    r = plan(few, "8M", NULL);
    TT_LINE(r.out, "mapping calls 132.0 us a chunk moved", "(default)");
    tt_free(&r);
    r = plan(many, "8M", NULL);
    TT_LINE(r.out, "mapping calls 40.0 us a chunk moved, 30.0 us a chunk born (trace)");
    tt_free(&r);
}

static void errors(const char *trace)
{
    const char *one = tt_path("one.trace");
    make_trace(one, 1);
    tt_result_t r = tt_run("plan", one, NULL);
    TT_CHECK("one mark: exit status", 1, r.status);
    TT_LINE(r.err, "planning needs one iteration closed by the next mark");
    tt_free(&r);
    r = tt_run("plan", trace, "--iteration", "9", NULL);
    TT_CHECK("iteration 9: exit status", 1, r.status);
    TT_LINE(r.err, "iteration 9 is not one a next mark closes");
    tt_free(&r);
    TT_REFUSED(TT_ARGS("plan", trace, "--pcie", "fast"),
               "--pcie", "'fast' is not a bandwidth", "GB/s");
    TT_RUN(2, "plan", trace, "--svg", tt_path("x.svg"));
    TT_RUN(2, "plan", trace, "--chunk", "3000");
    TT_RUN(2, "plan", trace, "--sweep", "--points", "1");
    TT_REFUSED(TT_ARGS("plan", trace, "--handles", "page"),
               "--handles: 'page' is not a kind of handles", "chunk", "extent");
    TT_REFUSED(TT_ARGS("plan", trace, "--map-us", "-3"),
               "--map-us", "'-3' is not a time", "microseconds");
}

int main(void)
{
    tt_init();
    const char *trace = tt_path("three.trace");
    make_trace(trace, 3);
    fits(trace);
    pages(trace);
    slack(trace);
    in_place(trace);
    sweep(trace);
    mapping(trace);
    errors(trace);
    syncs(tt_path("synced.trace"));
    return tt_done();
}
