/* SPDX-License-Identifier: MIT */
/*
 * unit_trace_tool_plan_input.c - how `elixir-trace plan` reads an iteration of a made-up trace,
 * and the options it refuses.
 *
 * Each iteration: one 4 MiB weight used by a 2 ms kernel; TEMPS temporaries of 4 MiB, each
 * allocated at the same address, set by a memset and freed at once (as a caching allocator's
 * scratch block is not, but a plain one's is); and a kernel naming SMALL allocations of
 * 64 KiB that share one chunk.
 *   - The footprint counts a temporary that lives for one operation: the weight, one
 *     temporary and the small allocations' chunk, 10 MiB (not 6).
 *   - Every temporary is a buffer of its own, the first as well as the last: the memset's
 *     address finds its allocation however often the address was used (1 + TEMPS + 1
 *     buffers: the weight, the temporaries, the small allocations' shared chunk).
 *   - The kernel naming the small allocations reaches one chunk: on a GPU of two chunks no
 *     operation runs in place.
 *   - The JSON's times are integers (above 1e6 ns, where "%g" would write an exponent).
 *   - Refused, exit status 2, naming what is accepted: GPU memory below one chunk, given or
 *     recorded; --device host; a bandwidth below 0.001 GB/s; --nvme without --nvme-memory,
 *     --points without --sweep, --force without --svg, --svg - with --json; every value is
 *     judged before the trace is read (a bad --handles, --map-us or size with a trace that
 *     does not exist is still a usage error).  An --svg file that exists fails (exit status
 *     1) before the trace is read; GPU and host memory together under the footprint plan
 *     nothing, saying so.
 * An iteration of STREAMS launches, each on a stream of its own and followed by a
 * synchronisation of that stream, recorded in the reverse order of their times (as records of
 * threads may interleave): every synchronisation finds its stream among the operations' and is
 * counted, and the planner takes them (it refuses syncs out of operation order).
 * A record naming device -1 ahead of the others does not make it the device planned (it
 * would count every device's operations, and crash the build of the iteration).
 * A damaged trace whose iteration reaches an allocation of 2^52 bytes (2^31 chunks, whose
 * per-chunk arrays the planner would allocate) is refused, naming the limit; a memset whose
 * size runs past 2^64 is taken as reaching its allocation to the end.
 */
#include "simcuda.h"
#include "unit_trace_tool.h"

#define ITER_NS 10000000u              /* iterations 10 ms apart */
#define BASE    0x7f0000000000ull
#define TEMPS   100
#define SMALL   8
#define STREAMS 5000

/* neg: a MEMORY record naming device -1 comes first (a damaged trace's). */
static void make_trace(const char *path, unsigned iters, int neg)
{
    trc_writer_t *w = tt_writer(path, 0);
    uint32_t k;
    if (neg)
        TT_EMIT(trc_emit_memory(w, 1, &(trc_memory_t){ .device = -1 }));
    tt_plan_preamble(w, &k);
    uint64_t weight = 1, small[SMALL];
    TT_EMIT(trc_emit_alloc(w, 10, &(trc_alloc_t){ .id = weight, .device = 0, .addr = BASE,
                                                  .size = 4 * MiB }));
    for (uint64_t s = 0; s < SMALL; s++) {
        small[s] = 2 + s;
        TT_EMIT(trc_emit_alloc(w, 11 + s, &(trc_alloc_t){ .id = small[s], .device = 0,
                                                          .addr = BASE + 8 * MiB + s * 64 * KiB,
                                                          .size = 64 * KiB }));
    }
    uint64_t id = 1, alloc = 100;
    for (unsigned i = 0; i < iters; i++) {
        uint64_t t = 1000 + (uint64_t)i * ITER_NS;
        TT_EMIT(trc_emit_iteration(w, t, &(trc_iteration_t){ i }));
        trc_launch_t l = { .id = id++, .func_id = k, .span = { 1, t + 100, t + 2000100 },
                           .nallocs = 1, .allocs = &weight };
        TT_EMIT(trc_emit_launch(w, t + 10, &l));
        for (uint64_t n = 0; n < TEMPS; n++) {
            uint64_t at = t + 200000 + n * 1000;
            TT_EMIT(trc_emit_alloc(w, at, &(trc_alloc_t){ .id = alloc, .device = 0,
                                                          .addr = BASE + 16 * MiB,
                                                          .size = 4 * MiB }));
            trc_memset_t m = { .dst = BASE + 16 * MiB, .bytes = 4 * MiB, .elem_size = 4,
                               .span = { 1, at + 500, at + 600 }, .id = id++ };
            TT_EMIT(trc_emit_memset(w, at + 100, &m));
            TT_EMIT(trc_emit_free(w, at + 200, &(trc_free_t){ alloc++ }));
        }
        uint64_t at = t + 200000 + TEMPS * 1000;
        trc_launch_t s = { .id = id++, .func_id = k, .span = { 1, at + 100, at + 200 },
                           .nallocs = SMALL, .allocs = small };
        TT_EMIT(trc_emit_launch(w, at, &s));
    }
    tt_close(w);
}

static void reads(const char *trace)
{
    tt_result_t r = tt_run("plan", trace, "--gpu-memory", "4M", NULL);
    TT_CHECK("4M: exit status", 0, r.status);
    char want[64];
    snprintf(want, sizeof(want), "operations %d, %d with device times, %d buffers", TEMPS + 2,
             TEMPS + 2, TEMPS + 2);
    TT_LINE(r.out, want, "footprint 10.00 MiB");
    TT_HASNT(r.out, "reach more than the GPU holds");
    tt_free(&r);

    r = tt_run("plan", trace, "--gpu-memory", "4M", "--json", NULL);
    TT_CHECK("4M --json: exit status", 0, r.status);
    TT_JSON(r.out, "d['footprint']", "10485760");
    TT_JSON(r.out, "all(type(d['plan'][k]) is int for k in ('iteration_ns', 'unlimited_ns', "
                   "'bound_ns', 'bound_in_ns', 'stall_ns', 'map_ns'))", "True");
    tt_free(&r);
}

static void refused(const char *trace)
{
    TT_REFUSED(TT_ARGS("plan", trace, "--gpu-memory", "1M"),
               "--gpu-memory 1.00 MiB is less than one chunk", "at least 2.00 MiB");
    TT_REFUSED(TT_ARGS("plan", trace, "--gpu-memory", "0"),
               "--gpu-memory 0 B is less than one chunk");
    TT_REFUSED(TT_ARGS("plan", trace, "--chunk", "2G"),     /* (the trace's budget: 1 GiB) */
               "the trace's GPU budget 1.00 GiB is less than one chunk", "--gpu-memory");
    TT_REFUSED(TT_ARGS("plan", trace, "--device", "host"), "--device host", "a device number");
    TT_REFUSED(TT_ARGS("plan", trace, "--nvme-memory", "1G", "--nvme", "1e-9"),
               "--nvme", "'1e-9' is not a bandwidth", "0.001");
    /* Options that mean nothing without another, judged before the trace is read. */
    TT_REFUSED(TT_ARGS("plan", "/nonexistent.trace", "--nvme", "3"), "--nvme",
               "give --nvme-memory too");
    TT_REFUSED(TT_ARGS("plan", "/nonexistent.trace", "--points", "abc"), "--points",
               "give --sweep too");
    TT_REFUSED(TT_ARGS("plan", "/nonexistent.trace", "--force"), "--force", "give --svg too");
    TT_REFUSED(TT_ARGS("plan", "/nonexistent.trace", "--handles", "extnet"), "--handles",
               "chunk", "extent");
    TT_REFUSED(TT_ARGS("plan", "/nonexistent.trace", "--map-us", "-1"), "--map-us",
               "0 to 1000000");
    TT_REFUSED(TT_ARGS("plan", "/nonexistent.trace", "--host-memory", "12X"), "--host-memory",
               "not a size");
    TT_REFUSED(TT_ARGS("plan", "/nonexistent.trace", "--sweep", "--json", "--svg", "-"),
               "--svg -", "--json");
    /* An --svg file that exists is refused before any planning (exit 1), the trace unread. */
    tt_result_t r = tt_run("plan", "/nonexistent.trace", "--sweep", "--svg", trace, NULL);
    TT_CHECK("--svg of an existing file: exit status", 1, r.status);
    TT_LINE(r.err, "exists (--force replaces it)");
    tt_free(&r);
    /* GPU and host memory together under the footprint (10 MiB): the message says so. */
    r = tt_run("plan", trace, "--gpu-memory", "4M", "--host-memory", "2M", NULL);
    TT_CHECK("4M + 2M of a 10 MiB footprint: exit status", 1, r.status);
    TT_LINE(r.out, "no plan: GPU, host and NVMe memory together (6.00 MiB) hold less than the "
                   "iteration's footprint (10.00 MiB)", "--host-memory");
    tt_free(&r);
}

/* Two iterations of one kernel reaching an allocation of `size` bytes, and a memset into it of
 * `set` bytes from its second chunk. */
static void make_huge(const char *path, uint64_t size, uint64_t set)
{
    trc_writer_t *w = tt_writer(path, 0);
    uint32_t k;
    tt_plan_preamble(w, &k);
    uint64_t a = 1, id = 1;
    TT_EMIT(trc_emit_alloc(w, 10, &(trc_alloc_t){ .id = a, .device = 0, .addr = BASE,
                                                  .size = size }));
    for (unsigned i = 0; i < 3; i++) {
        uint64_t t = 1000 + (uint64_t)i * ITER_NS;
        TT_EMIT(trc_emit_iteration(w, t, &(trc_iteration_t){ i }));
        trc_launch_t l = { .id = id++, .func_id = k, .span = { 1, t + 100, t + 2000100 },
                           .nallocs = 1, .allocs = &a };
        TT_EMIT(trc_emit_launch(w, t + 10, &l));
        trc_memset_t m = { .dst = BASE + 2 * MiB, .bytes = set, .elem_size = 4,
                           .span = { 1, t + 3000000, t + 3000100 }, .id = id++ };
        TT_EMIT(trc_emit_memset(w, t + 20, &m));
    }
    tt_close(w);
}

static void huge(void)
{
    const char *trace = tt_path("huge.trace");
    make_huge(trace, 1ull << 52, 4 * MiB);
    tt_result_t r = tt_run("plan", trace, "--gpu-memory", "4M", NULL);
    TT_CHECK("an allocation of 2^52 bytes: exit status", 1, r.status);
    TT_HAS(r.err, "the iteration's buffers come to more than 16777216 chunks");
    tt_free(&r);

    trace = tt_path("past.trace");
    make_huge(trace, 8 * MiB, UINT64_MAX - 4 * MiB);
    r = tt_run("plan", trace, "--gpu-memory", "8M", NULL);
    TT_CHECK("a memset of 2^64 - 4 MiB bytes: exit status", 0, r.status);
    TT_LINE(r.out, "operations 2, 2 with device times, 1 buffers", "footprint 8.00 MiB");
    tt_free(&r);
}

/* Three iterations of STREAMS launches, launch n on stream 100 + n and synchronised at once,
 * the synchronisations of an iteration recorded last to first. */
static void make_streams(const char *path)
{
    trc_writer_t *w = tt_writer(path, 0);
    uint32_t k;
    tt_plan_preamble(w, &k);
    uint64_t a = 1, id = 1;
    TT_EMIT(trc_emit_alloc(w, 10, &(trc_alloc_t){ .id = a, .device = 0, .addr = BASE,
                                                  .size = 2 * MiB }));
    for (unsigned i = 0; i < 3; i++) {
        uint64_t t = 1000 + (uint64_t)i * ITER_NS;
        TT_EMIT(trc_emit_iteration(w, t, &(trc_iteration_t){ i }));
        for (uint64_t n = 0; n < STREAMS; n++) {
            uint64_t at = t + 100 + n * 1000;
            trc_launch_t l = { .id = id++, .func_id = k, .stream = 100 + n,
                               .span = { 1, at + 10, at + 500 }, .nallocs = 1, .allocs = &a };
            TT_EMIT(trc_emit_launch(w, at, &l));
        }
        for (uint64_t n = STREAMS; n-- > 0;)
            TT_EMIT(trc_emit_sync(w, t + 100 + n * 1000 + 600,
                                  &(trc_sync_t){ TRC_SYNC_STREAM, 100 + n, 0 }));
    }
    tt_close(w);
}

static void streams(void)
{
    const char *trace = tt_path("streams.trace");
    make_streams(trace);
    tt_result_t r = tt_run("plan", trace, "--gpu-memory", "4M", "--json", NULL);
    TT_CHECK("a stream per launch: exit status", 0, r.status);
    char want[32];
    snprintf(want, sizeof(want), "%d", STREAMS);
    TT_JSON(r.out, "d['syncs']", want);
    TT_JSON(r.out, "d['operations']", want);
    tt_free(&r);
}

int main(void)
{
    tt_init();
    const char *trace = tt_path("temps.trace");
    make_trace(trace, 3, 0);
    reads(trace);
    /* A record naming device -1 first: the device planned is still device 0. */
    const char *neg = tt_path("neg.trace");
    make_trace(neg, 3, 1);
    tt_result_t r = tt_run("plan", neg, "--gpu-memory", "4M", "--json", NULL);
    TT_CHECK("a record of device -1 first: exit status", 0, r.status);
    TT_JSON(r.out, "d['device']", "0");
    tt_free(&r);
    refused(trace);
    huge();
    streams();
    return tt_done();
}
