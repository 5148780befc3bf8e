/* SPDX-License-Identifier: MIT */
/*
 * unit_trace_tool_plan_near.c - `elixir-trace plan` on a caching allocator's segment: a
 * launch's pointer into an allocation of several chunks reaches it from that pointer's chunk
 * on, as the shim collects it (format 1.8's offsets), the chunks before it POL_NEAR.
 *
 * Each iteration: a 1 ms kernel given a pointer 12 MiB into a 16 MiB segment (its last two
 * chunks), then a 1 ms kernel on a 16 MiB weight; the GPU holds 16 MiB (8 chunks).
 *   - With the offsets, the planner may leave the segment's first six chunks where they are:
 *     it moves fewer bytes in than the same trace without offsets (a 1.7 recorder's), where
 *     both allocations come in whole, 16 chunks an iteration.
 *   - A trace whose options say ELIXIR_REACH=allocation is planned with whole allocations,
 *     as the shim took them; one that says `forward` as one that says nothing.
 */
#include "simcuda.h"
#include "unit_trace_tool.h"

#define ITER_NS 10000000u
#define BASE    0x7f0000000000ull

/* The trace; `reach`: the value of ELIXIR_REACH in its options (NULL: none recorded). */
static void make_trace(const char *path, int offsets, const char *reach, unsigned iters)
{
    trc_writer_t *w = tt_writer(path, 0);
    uint32_t k;
    if (reach) {
        trc_option_t o = { tt_str(w, "ELIXIR_REACH"), tt_str(w, reach), NULL, NULL };
        TT_EMIT(trc_emit_options(w, 0, &(trc_options_t){ 1, &o }));
    }
    tt_plan_preamble(w, &k);
    uint64_t seg = 1, weight = 2, off = 12 * MiB;
    TT_EMIT(trc_emit_alloc(w, 10, &(trc_alloc_t){ .id = seg, .device = 0, .addr = BASE,
                                                  .size = 16 * MiB }));
    TT_EMIT(trc_emit_alloc(w, 11, &(trc_alloc_t){ .id = weight, .device = 0,
                                                  .addr = BASE + 32 * MiB, .size = 16 * MiB }));
    uint64_t id = 1;
    for (unsigned i = 0; i < iters; i++) {
        uint64_t t = 1000 + (uint64_t)i * ITER_NS;
        TT_EMIT(trc_emit_iteration(w, t, &(trc_iteration_t){ i }));
        trc_launch_t a = { .id = id++, .func_id = k, .span = { 1, t + 100, t + 1000100 },
                           .nallocs = 1, .allocs = &seg, .offsets = offsets ? &off : NULL };
        TT_EMIT(trc_emit_launch(w, t + 10, &a));
        trc_launch_t l = { .id = id++, .func_id = k, .span = { 1, t + 1000200, t + 2000200 },
                           .nallocs = 1, .allocs = &weight };
        TT_EMIT(trc_emit_launch(w, t + 20, &l));
    }
    tt_close(w);
}

static uint64_t bytes_in(const char *trace, const char *gpu)
{
    tt_result_t r = tt_run("plan", trace, "--gpu-memory", gpu, "--json", NULL);
    TT_CHECK("exit status", 0, r.status);
    char *v = tt_json(r.out, "d['plan']['bytes']['host']['to_gpu']");
    uint64_t n = v ? strtoull(v, NULL, 10) : 0;
    free(v);
    tt_free(&r);
    return n;
}

int main(void)
{
    tt_init();
    const char *with = tt_path("near.trace"), *without = tt_path("whole.trace");
    const char *forward = tt_path("forward.trace"), *allocation = tt_path("allocation.trace");
    make_trace(with, 1, NULL, 4);
    make_trace(without, 0, NULL, 4);
    make_trace(forward, 1, "forward", 4);
    make_trace(allocation, 1, "allocation", 4);

    uint64_t near = bytes_in(with, "16M"), whole = bytes_in(without, "16M");
    printf("16 MiB GPU: %llu bytes in with offsets, %llu without\n", (unsigned long long)near,
           (unsigned long long)whole);
    TT_CHECK("without offsets: 16 chunks in", (int64_t)(32 * MiB), (int64_t)whole);
    if (near >= whole)
        TT_FAIL("with offsets %llu bytes in, not fewer than %llu without",
                (unsigned long long)near, (unsigned long long)whole);
    TT_CHECK("ELIXIR_REACH=forward: as with offsets", (int64_t)near,
             (int64_t)bytes_in(forward, "16M"));
    TT_CHECK("ELIXIR_REACH=allocation: whole allocations", (int64_t)whole,
             (int64_t)bytes_in(allocation, "16M"));
    return tt_done();
}
