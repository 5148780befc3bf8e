/* SPDX-License-Identifier: MIT */
/*
 * cmd_plan.c - `elixir-trace plan TRACE`: what the computed policy would do with a recorded
 * iteration on a machine the user may not have.
 *
 * The iteration becomes the planner's input (plan_input.c), the machine comes from the
 * options (by default: the budgets and the device the trace was recorded with, a PCIe 4.0
 * x16 link), and libelixir.so's own planner (policy/) plans it and predicts its time on its
 * cost model.  Printed: the predicted iteration time against an unlimited GPU and against
 * the lower bound, the bytes each link carries, each tier's peak and the configuration the
 * search chose.  --sweep plans again for a range of GPU memory sizes (and --svg draws it), so
 * that a user sees how much memory the job needs to run at full speed.  --json for scripts.
 */
#include "cli.h"
#include "plan_input.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define UNLIMITED (UINT64_C(1) << 50)  /* a tier's capacity when it is not limited */
#define MAX_POINTS 64

/* Defaults of the machine's figures (GB/s, microseconds), documented in --help. */
#define PCIE_GBS      25.0             /* the simulator's h100-pcie model, each way */
#define DUPLEX_RATIO  (36.0 / 25.0)    /* both ways together, relative to one way (an A100's
                                        * link, nvbandwidth issues 11 and 53; as the shim) */
#define NVME_GBS      7.0              /* a PCIe 4.0 x4 drive, reading */
#define NVME_WRITE    0.7              /* its writes, relative to its reads */
#define LINK_LAT_US   10.0
#define NVME_LAT_US   80.0
#define MAP_CALL_US   1.0              /* a move's mapping calls, whatever they span, and */
#define HOST_OP_US    1.0              /* host time to issue one operation: what the simulator
                                        * charges per submitted operation (as the shim) */

static cli_opt_t plan_opts[] = {
    { "--gpu-memory", "SIZE", "GPU memory to plan for, at least one chunk (default: the "
      "trace's GPU budget)", NULL },
    { "--host-memory", "SIZE", "pinned host memory (default: the trace's host budget)", NULL },
    { "--pcie", "GB/s", "host link bandwidth each way, 0.001 to 1000000 as every bandwidth "
      "(default 25)", NULL },
    { "--duplex", "GB/s", "both ways together (default 1.44 x --pcie)", NULL },
    { "--map-us", "US", "host time of the mapping calls per 2 MiB chunk moved where evicted "
      "memory stays mapped (default: the mean of the trace's reactive remaps, at least 16, "
      "else 132 as on an H200); --unmap and chunks born scale with it", NULL },
    { "--unmap", NULL, "as the shim with ELIXIR_PLAN_UNMAP=1: evictions unmap, and a prefetch "
      "takes GPU memory its eviction's copy still reads", NULL },
    { "--handles", "chunk|extent", "physical handles: one a chunk, as the shim maps them, or "
      "one a move (a what-if: a move of N chunks costs the mapping calls of one chunk plus "
      "1.4% of them per further chunk, as the simulator charges per handle and per granule) "
      "(default chunk)", NULL },
    { "--slack", "auto|N", "GPU chunks the plan leaves free, as ELIXIR_PLAN_SLACK: auto (the "
      "search tries 0, 2 and 4) or 0 to 4096; not with --unmap (default auto)", NULL },
    { "--nvme-memory", "SIZE", "an NVMe tier of SIZE behind host memory (default none)", NULL },
    { "--nvme", "GB/s", "its read bandwidth; writes at 0.7 x (default 7)", NULL },
    { "--chunk", "SIZE", "bytes moved as one chunk, a power of two from 4K to 4G (default 2M)",
      NULL },
    { "--iteration", "N", "the iteration to plan (default: the closed one with most device "
      "times)", NULL },
    { "--device", "N", "the device to plan (default: the one with most operations)", NULL },
    { "--sweep", NULL, "plan for GPU memory from 1/POINTS of the footprint up to all of it",
      NULL },
    { "--points", "N", "with --sweep: sizes it tries (default 12, 2 to 64)", NULL },
    { "--svg", "OUT.svg", "with --sweep: draw predicted time against GPU memory", NULL },
    { "--force", NULL, "replace OUT.svg if it exists", NULL },
    { "--json", NULL, "print JSON instead of text", NULL },
    CLI_OPT_PARTIAL,
    CLI_OPT_END,
};

/* One planned machine and what the plan predicts for it. */
typedef struct point {
    uint64_t gpu;
    uint32_t slack;                    /* pol_input_t.slack asked for */
    int rc;                            /* pol_plan's: 0, -ENOSPC no plan can exist, ... */
    char why[224];                     /* with -EINVAL: what pol_input_check refused; with
                                        * -ENOSPC: the tiers together too small, or "" */
    pol_result_t r;
    pol_knobs_t knobs;
} point_t;

typedef struct sweep {
    const tp_input_t *x;
    point_t p[MAX_POINTS];
    size_t n;
} sweep_t;

static double gbs(const cli_cmd_t *c, const char *opt, double dflt)
{
    const char *s = cli_get(c, opt);
    if (!s)
        return dflt;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < 0.001 || v > 1e6)
        cli_usage(c, "%s: '%s' is not a bandwidth: GB/s from 0.001 to 1000000, like 25 or 12.5",
                  opt, s);
    return v;
}

/* The budget of `tier` the trace's device started its window with (0: none recorded). */
static uint64_t trace_budget(const tm_trace_t *t, const tp_input_t *x, int tier)
{
    uint64_t v = 0;
    for (size_t i = 0; i < t->nbudgets; i++)
        if (t->budgets[i].device == x->device && (t->budgets[i].time <= x->start || !v))
            v = t->budgets[i].bytes[tier];
    return v;
}

/* --map-us, or -1 when not given. */
static double map_us_opt(const cli_cmd_t *c)
{
    const char *s = cli_get(c, "--map-us");
    if (!s)
        return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < 0 || v > 1e6)
        cli_usage(c, "--map-us: '%s' is not a time: microseconds from 0 to 1000000, like 132 "
                  "or 65.5", s);
    return v;
}

/* The mapping calls' host time per 2 MiB chunk moved with evicted memory mapped (us): --map-us,
 * else the mean of device dev's reactive remaps in the trace's MAPPING records (at least
 * POL_MAP_SAMPLES), else the H200's (POL_MAP_US_PER_CHUNK); *from says which ("--map-us",
 * "trace", "default"). */
static double map_us(const cli_cmd_t *c, const tm_trace_t *t, int32_t dev, const char **from)
{
    double v = map_us_opt(c);
    uint64_t n = 0, ns = 0;
    if (v >= 0) {
        *from = "--map-us";
        return v;
    }
    for (size_t i = 0; i < t->nmappings; i++)
        if (t->mappings[i].m.device == dev) {
            n += t->mappings[i].m.reactive_remaps;
            ns += t->mappings[i].m.reactive_ns;
        }
    *from = n >= POL_MAP_SAMPLES ? "trace" : "default";
    return n >= POL_MAP_SAMPLES ? (double)ns / 1e3 / (double)n : POL_MAP_US_PER_CHUNK;
}

/* --handles: 1 for extent, 0 for chunk (the default). */
static int handles_extent(const cli_cmd_t *c)
{
    const char *s = cli_get(c, "--handles");
    if (!s || strcmp(s, "chunk") == 0)
        return 0;
    if (strcmp(s, "extent") != 0)
        cli_usage(c, "--handles: '%s' is not a kind of handles: chunk (one a chunk) or extent "
                  "(one a move)", s);
    return 1;
}

static void machine(const cli_cmd_t *c, const tm_trace_t *t, const tp_input_t *x, uint64_t chunk,
                    pol_machine_t *m, const char **map_from)
{
    memset(m, 0, sizeof(*m));
    m->chunk = chunk;
    const tm_device_t *d = tm_device(t, x->device);
    uint64_t gpu = trace_budget(t, x, TRC_TIER_GPU), host = trace_budget(t, x, TRC_TIER_HOST);
    const char *s = cli_get(c, "--gpu-memory"), *given = s;
    m->cap[POL_GPU] = s ? cli_size(c, "--gpu-memory", s) : gpu ? gpu : d ? d->total_mem : 0;
    s = cli_get(c, "--host-memory");
    m->cap[POL_HOST] = s ? cli_size(c, "--host-memory", s) : host ? host : UNLIMITED;
    s = cli_get(c, "--nvme-memory");
    m->cap[POL_NVME] = s ? cli_size(c, "--nvme-memory", s) : 0;
    if (!given && !m->cap[POL_GPU])
        cli_usage(c, "the trace records no GPU budget or device size: give --gpu-memory SIZE");
    char b[2][32];
    if (m->cap[POL_GPU] < chunk)
        cli_usage(c, "%s %s is less than one chunk: give at least %s%s",
                  given ? "--gpu-memory" : "the trace's GPU budget",
                  text_bytes(m->cap[POL_GPU], b[0]), text_bytes(chunk, b[1]),
                  given ? "" : " with --gpu-memory SIZE, or a smaller --chunk");
    double pcie = gbs(c, "--pcie", PCIE_GBS), nvme = gbs(c, "--nvme", NVME_GBS);
    m->link[POL_HOST] = (pol_link_t){ pcie, pcie, gbs(c, "--duplex", pcie * DUPLEX_RATIO),
                                      LINK_LAT_US };
    m->link[POL_NVME] = (pol_link_t){ nvme, nvme * NVME_WRITE, nvme, NVME_LAT_US };
    int unmap = cli_get(c, "--unmap") != NULL;
    double scale = map_us(c, t, x->device, map_from) / POL_MAP_US_PER_CHUNK;
    m->map_us_per_call = MAP_CALL_US;
    m->map_us_per_chunk = (unmap ? POL_UNMAP_US_PER_CHUNK : POL_MAP_US_PER_CHUNK) * scale *
                          (double)chunk / (2 << 20);
    m->handle_share = handles_extent(c) ? POL_HANDLE_GRANULE_SHARE : 0;
    m->birth_us_per_chunk = POL_BIRTH_US_PER_CHUNK * scale * (double)chunk / (2 << 20);
    m->drop_us_per_chunk = POL_DROP_US_PER_CHUNK * scale * (double)chunk / (2 << 20);
    m->mapback_us_per_chunk = unmap ? POL_MAPBACK_US_PER_CHUNK * scale * (double)chunk /
                                          (2 << 20) : 0;
    m->room_on_device = unmap;
    m->host_us_per_op = HOST_OP_US;
    m->copy_engines = 1;
}

/* --slack as pol_input_t.slack. */
static uint32_t slack_opt(const cli_cmd_t *c, int unmap)
{
    const char *s = cli_get(c, "--slack");
    if (!s || strcmp(s, "auto") == 0)
        return POL_SLACK_SEARCH;
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || v > 4096)
        cli_usage(c, "--slack: '%s' is not a slack: auto or a whole number of chunks from 0 to "
                  "4096", s);
    if (v && unmap)
        cli_usage(c, "--slack %lu with --unmap: evictions that unmap free their room for moves "
                  "in at once, the slack is for evictions that stay mapped (give --slack auto "
                  "or 0, or leave out --unmap)", v);
    return v ? (uint32_t)v : POL_SLACK_NONE;
}

/* Every option's value judged before the trace is read, so that a bad one is a usage error
 * whatever the trace holds (machine() and slack_opt() read them again, with the trace's
 * defaults). */
static void judge_options(const cli_cmd_t *c)
{
    static const char *const sizes[] = { "--gpu-memory", "--host-memory", "--nvme-memory" };
    static const char *const rates[] = { "--pcie", "--duplex", "--nvme" };
    for (size_t i = 0; i < 3; i++) {
        const char *s = cli_get(c, sizes[i]);
        if (s)
            (void)cli_size(c, sizes[i], s);
        (void)gbs(c, rates[i], 1);
    }
    (void)map_us_opt(c);
    (void)handles_extent(c);
    (void)slack_opt(c, cli_get(c, "--unmap") != NULL);
}

/* Plans x on machine m with `slack` (pol_input_t.slack): the point's result.  A fixed slack
 * of the whole GPU or more plans nothing (-ENOSPC). */
static void plan_point(tp_input_t *x, const pol_machine_t *m, uint32_t slack, point_t *p)
{
    tp_fit(x, m->cap[POL_GPU] / m->chunk);
    pol_input_t in = x->in;
    in.m = *m;
    in.slack = slack;
    pol_plan_t *plan = NULL;
    p->gpu = m->cap[POL_GPU];
    p->slack = slack;
    p->why[0] = 0;
    int fixed = slack != POL_SLACK_SEARCH && slack != POL_SLACK_NONE;
    if (fixed && slack >= m->cap[POL_GPU] / m->chunk) {
        p->rc = -ENOSPC;
        return;
    }
    p->rc = pol_plan(&in, NULL, &plan);
    if (p->rc == -EINVAL && pol_input_check(&in, p->why, sizeof(p->why)) == 0)
        p->why[0] = 0;
    uint64_t held = 0;                  /* (whole chunks of each tier, saturating) */
    for (int tier = POL_GPU; tier < POL_NTIERS; tier++) {
        uint64_t c = m->cap[tier] / m->chunk * m->chunk;
        held = held > UINT64_MAX - c ? UINT64_MAX : held + c;
    }
    if (p->rc == -ENOSPC && x->footprint > held) {
        char b[3][32];
        snprintf(p->why, sizeof(p->why), "no plan: GPU, host and NVMe memory together (%s) "
                 "hold less than the iteration's footprint (%s): give more --host-memory (now "
                 "%s) or --nvme-memory", text_bytes(held, b[0]), text_bytes(x->footprint, b[1]),
                 text_bytes(m->cap[POL_HOST], b[2]));
    }
    if (p->rc)
        return;
    p->r = plan->predicted;
    p->knobs = plan->knobs;
    pol_plan_free(plan);
}

static const char *ratio(double a, double b, char buf[32])
{
    if (b > 0)
        snprintf(buf, 32, "%.2fx", a / b);
    else
        snprintf(buf, 32, "-");
    return buf;
}

static const char *no_plan_text(const point_t *p)
{
    if ((p->rc == -EINVAL || p->rc == -ENOSPC) && p->why[0])
        return p->why;
    if (p->rc != -ENOSPC)
        return strerror(-p->rc);
    return p->slack != POL_SLACK_SEARCH && p->slack != POL_SLACK_NONE
               ? "no plan: one operation needs more GPU memory at once than the slack leaves"
               : "no plan: one operation needs more GPU memory at once";
}

/* Operations of x that reach more chunks than m's GPU holds: the planner leaves them in
 * place, at their recorded device time.  A chunk that several references of one operation
 * reach (small allocations sharing a slab chunk) counts once, as the planner counts it. */
static size_t in_place_ops(const tp_input_t *x, const pol_machine_t *m)
{
    size_t n = 0;
    uint64_t cap = m->cap[POL_GPU] / m->chunk;
    for (size_t i = 0; i < x->in.nops; i++) {
        const pol_ref_t *r = &x->in.refs[x->in.ops[i].ref];
        uint32_t nref = x->in.ops[i].nref;
        uint64_t chunks = 0;
        for (uint32_t j = 0; j < nref; j++)
            for (uint32_t k = 0; k < r[j].nchunks; k++) {
                uint32_t c = r[j].chunk + k, seen = 0;
                for (uint32_t e = 0; e < j && !seen; e++)
                    seen = r[e].buf == r[j].buf && c - r[e].chunk < r[e].nchunks;
                chunks += !seen;
            }
        n += chunks > cap;
    }
    return n;
}

static void print_text(const tm_trace_t *t, const tp_input_t *x, const pol_machine_t *m,
                       const char *map_from, const point_t *p)
{
    char b[6][32];
    printf("plan        %s, device %d, iteration %" PRId64 "\n", t->path, x->device,
           x->iteration);
    printf("  operations %zu, %zu with device times, %zu buffers, %zu host synchronisation%s; "
           "footprint %s\n", x->in.nops, x->timed, x->in.nbufs, x->in.nsyncs,
           x->in.nsyncs == 1 ? "" : "s", text_bytes(x->footprint, b[0]));
    if (x->timed < x->in.nops)
        printf("  %zu operations without device times count as taking none\n",
               x->in.nops - x->timed);
    printf("machine     GPU %s, host %s, link %.10g GB/s each way (%.10g both), chunk %s",
           text_bytes(m->cap[POL_GPU], b[0]),
           m->cap[POL_HOST] >= UNLIMITED ? "unlimited" : text_bytes(m->cap[POL_HOST], b[1]),
           m->link[POL_HOST].to_gpu_gbs, m->link[POL_HOST].duplex_gbs, text_bytes(m->chunk, b[2]));
    if (m->cap[POL_NVME])
        printf(", NVMe %s at %.10g GB/s", text_bytes(m->cap[POL_NVME], b[3]),
               m->link[POL_NVME].to_gpu_gbs);
    if (m->room_on_device)
        printf(", evictions unmapped");
    printf("\n  mapping calls %.1f us a chunk moved, %.1f us a chunk born (%s), %.1f us of it "
           "the unmap of the room it takes", m->map_us_per_chunk, m->birth_us_per_chunk,
           map_from, m->drop_us_per_chunk);
    if (m->room_on_device)
        printf(", %.1f us to map back a chunk left unmapped", m->mapback_us_per_chunk);
    if (m->handle_share > 0)
        printf("; a move one handle: %.1f%% of that per further chunk", 100 * m->handle_share);
    printf("\n");
    if (p->rc) {
        printf("predicted   %s\n", no_plan_text(p));
        return;
    }
    const pol_result_t *r = &p->r;
    printf("predicted   %s per iteration: %s an unlimited GPU (%s), %s the lower bound (%s)\n",
           text_ns((uint64_t)r->iter_ns, b[0]), ratio(r->iter_ns, r->compute_ns, b[1]),
           text_ns((uint64_t)r->compute_ns, b[2]), ratio(r->iter_ns, r->bound_ns, b[3]),
           text_ns((uint64_t)r->bound_ns, b[4]));
    printf("  the bound counts %" PRIu64 " chunks that must come in, %" PRIu64 " that must go "
           "back; with those in alone it is %s\n", r->bound_chunks[0], r->bound_chunks[1],
           text_ns((uint64_t)r->bound_in_ns, b[0]));
    printf("  waiting for moves %s, host time in mapping calls %s\n",
           text_ns((uint64_t)r->stall_ns, b[0]), text_ns((uint64_t)r->map_ns, b[1]));
    size_t big = in_place_ops(x, m);
    if (big)
        printf("  %zu operations reach more than the GPU holds: they run in place, at their "
               "recorded device time (what they read and write over the link is not "
               "counted)\n", big);
    int moved = 0;
    for (int tier = POL_PEER; tier < POL_NTIERS; tier++)
        moved |= r->bytes[tier][0] || r->bytes[tier][1];
    printf("moved       %s\n", moved ? "per iteration" : "nothing");
    for (int tier = POL_PEER; tier < POL_NTIERS; tier++)
        if (r->bytes[tier][0] || r->bytes[tier][1])
            printf("  %-5s     to GPU %s, from GPU %s\n", pol_tier_name(tier),
                   text_bytes(r->bytes[tier][0], b[0]), text_bytes(r->bytes[tier][1], b[1]));
    printf("peak        ");
    for (int tier = 0; tier < POL_NTIERS; tier++)
        printf("%s %s%s", pol_tier_name(tier), text_bytes(r->peak[tier], b[0]),
               tier + 1 < POL_NTIERS ? ", " : "\n");
    printf("chosen      lookahead %s, extents of %u chunks, %s kept on the GPU, %u chunks of "
           "slack\n",
           p->knobs.lookahead ? (snprintf(b[0], 32, "%u", p->knobs.lookahead), b[0])
                              : "unbounded",
           p->knobs.extent_chunks, text_bytes(p->knobs.pin_bytes, b[1]), p->knobs.slack_chunks);
}

static void print_sweep_text(const sweep_t *s)
{
    char b[5][32];
    printf("sweep       GPU memory      predicted   x unlimited   x bound\n");
    for (size_t i = 0; i < s->n; i++) {
        const point_t *p = &s->p[i];
        if (p->rc) {
            printf("  %20s   %s\n", text_bytes(p->gpu, b[0]), no_plan_text(p));
            continue;
        }
        printf("  %20s   %10s   %11s   %7s\n", text_bytes(p->gpu, b[0]),
               text_ns((uint64_t)p->r.iter_ns, b[1]), ratio(p->r.iter_ns, p->r.compute_ns, b[2]),
               ratio(p->r.iter_ns, p->r.bound_ns, b[3]));
    }
}

static void json_point(const point_t *p)
{
    printf("{\"gpu_memory\": %" PRIu64 ", \"planned\": %s", p->gpu, p->rc ? "false" : "true");
    if (p->rc) {
        printf(", \"reason\": ");
        text_json(stdout, no_plan_text(p));
        printf("}");
        return;
    }
    const pol_result_t *r = &p->r;
    printf(", \"iteration_ns\": ");
    text_json_ns(stdout, r->iter_ns);
    printf(", \"unlimited_ns\": ");
    text_json_ns(stdout, r->compute_ns);
    printf(", \"bound_ns\": ");
    text_json_ns(stdout, r->bound_ns);
    printf(", \"bound_in_ns\": ");
    text_json_ns(stdout, r->bound_in_ns);
    printf(", \"bound_chunks_in\": %" PRIu64 ", \"bound_chunks_back\": %" PRIu64,
           r->bound_chunks[0], r->bound_chunks[1]);
    printf(", \"stall_ns\": ");
    text_json_ns(stdout, r->stall_ns);
    printf(", \"map_ns\": ");
    text_json_ns(stdout, r->map_ns);
    printf(", \"bytes\": {");
    for (int tier = POL_PEER; tier < POL_NTIERS; tier++)
        printf("\"%s\": {\"to_gpu\": %" PRIu64 ", \"from_gpu\": %" PRIu64 "}%s",
               pol_tier_name(tier), r->bytes[tier][0], r->bytes[tier][1],
               tier + 1 < POL_NTIERS ? ", " : "");
    printf("}, \"peak\": {");
    for (int tier = 0; tier < POL_NTIERS; tier++)
        printf("\"%s\": %" PRIu64 "%s", pol_tier_name(tier), r->peak[tier],
               tier + 1 < POL_NTIERS ? ", " : "");
    printf("}, \"knobs\": {\"lookahead\": %u, \"extent_chunks\": %u, \"pin_bytes\": %" PRIu64
           ", \"slack_chunks\": %u, \"near\": %u}}",
           p->knobs.lookahead, p->knobs.extent_chunks, p->knobs.pin_bytes, p->knobs.slack_chunks,
           p->knobs.near);
}

static void print_json(const tm_trace_t *t, const tp_input_t *x, const pol_machine_t *m,
                       const char *map_from, const point_t *p, const sweep_t *s)
{
    printf("{\"trace\": ");
    text_json(stdout, t->path);
    printf(", \"device\": %d, \"iteration\": %" PRId64 ", \"operations\": %zu, \"timed\": %zu"
           ", \"buffers\": %zu, \"syncs\": %zu, \"footprint\": %" PRIu64 ",\n \"machine\": "
           "{\"gpu_memory\": %" PRIu64 ", \"host_memory\": %" PRIu64 ", \"nvme_memory\": %"
           PRIu64 ", \"chunk\": %" PRIu64 ", \"pcie_gbs\": ",
           x->device, x->iteration, x->in.nops, x->timed, x->in.nbufs, x->in.nsyncs,
           x->footprint,
           m->cap[POL_GPU], m->cap[POL_HOST], m->cap[POL_NVME], m->chunk);
    text_json_num(stdout, m->link[POL_HOST].to_gpu_gbs);
    printf(", \"duplex_gbs\": ");
    text_json_num(stdout, m->link[POL_HOST].duplex_gbs);
    printf(", \"nvme_gbs\": ");
    text_json_num(stdout, m->link[POL_NVME].to_gpu_gbs);
    printf(", \"map_us_per_chunk\": ");
    text_json_num(stdout, m->map_us_per_chunk);
    printf(", \"birth_us_per_chunk\": ");
    text_json_num(stdout, m->birth_us_per_chunk);
    printf(", \"drop_us_per_chunk\": ");
    text_json_num(stdout, m->drop_us_per_chunk);
    printf(", \"mapback_us_per_chunk\": ");
    text_json_num(stdout, m->mapback_us_per_chunk);
    printf(", \"handles\": \"%s\", \"handle_share\": ",
           m->handle_share > 0 ? "extent" : "chunk");
    text_json_num(stdout, m->handle_share);
    printf(", \"map_from\": \"%s\"", map_from);
    printf(", \"unmap\": %s},\n \"in_place\": %zu, \"plan\": ",
           m->room_on_device ? "true" : "false", in_place_ops(x, m));
    json_point(p);
    if (s) {
        printf(",\n \"sweep\": [");
        for (size_t i = 0; i < s->n; i++) {
            printf("%s\n  ", i ? "," : "");
            json_point(&s->p[i]);
        }
        printf("]");
    }
    printf("}\n");
}

/* The sweep's picture: predicted iteration time against GPU memory, with the unlimited GPU's
 * time as a dashed line; sizes where no plan exists are left out. */
static int svg_sweep(const tm_trace_t *t, const void *arg, FILE *f, char *err, size_t len)
{
    const sweep_t *s = arg;
    const double W = 640, H = 360, L = 80, R = 20, T = 40, B = 50;
    double xmax = 0, ymax = 0, unl = 0;
    for (size_t i = 0; i < s->n; i++) {
        xmax = fmax(xmax, (double)s->p[i].gpu);
        if (!s->p[i].rc) {
            ymax = fmax(ymax, s->p[i].r.iter_ns);
            unl = s->p[i].r.compute_ns;
        }
    }
    if (ymax <= 0 || xmax <= 0)
        return text_fail(err, len, -EINVAL, "no size of the sweep could be planned");
    ymax *= 1.1;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "font-family=\"sans-serif\" font-size=\"12\">\n", W, H);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<text x=\"%.0f\" "
               "y=\"22\" font-size=\"14\">Predicted iteration time against GPU memory: ", L);
    text_xml(f, t->path);
    fprintf(f, "</text>\n<g stroke=\"black\"><line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" "
               "y2=\"%.0f\"/><line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\"/></g>\n",
            L, H - B, W - R, H - B, L, T, L, H - B);
    char b[2][32];
    for (int k = 0; k <= 4; k++) {
        double xv = xmax * k / 4, yv = ymax * k / 4;
        double px = L + (W - L - R) * k / 4, py = H - B - (H - T - B) * k / 4;
        fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%s</text>\n", px,
                H - B + 16, text_bytes((uint64_t)xv, b[0]));
        fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", L - 6, py + 4,
                text_ns((uint64_t)yv, b[1]));
    }
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">GPU memory</text>\n",
            (L + W - R) / 2, H - 12);
    double uy = H - B - (H - T - B) * unl / ymax;
    fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"gray\" "
               "stroke-dasharray=\"6 4\"/>\n<text x=\"%.0f\" y=\"%.1f\" fill=\"gray\" "
               "text-anchor=\"end\">unlimited GPU</text>\n",
            L, uy, W - R, uy, W - R, uy - 4);
    fprintf(f, "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"");
    for (size_t i = 0; i < s->n; i++)
        if (!s->p[i].rc)
            fprintf(f, "%.1f,%.1f ", L + (W - L - R) * (double)s->p[i].gpu / xmax,
                    H - B - (H - T - B) * s->p[i].r.iter_ns / ymax);
    fprintf(f, "\"/>\n</svg>\n");
    return ferror(f) ? text_fail(err, len, -EIO, "write error") : 0;
}

/* --points (with --sweep only), judged before the trace is read. */
static uint64_t points(const cli_cmd_t *c, int sweep)
{
    if (!sweep) {
        if (cli_get(c, "--points"))
            cli_usage(c, "--points sets the sizes --sweep tries: give --sweep too");
        return 0;
    }
    uint64_t n = cli_count_opt(c, "--points", 12);
    if (n < 2 || n > MAX_POINTS)
        cli_usage(c, "--points: %" PRIu64 " is out of range: 2 to %d", n, MAX_POINTS);
    return n;
}

static void run_sweep(tp_input_t *x, const pol_machine_t *m, uint32_t slack, uint64_t n,
                      sweep_t *s)
{
    s->x = x;
    s->n = n;
    for (size_t i = 0; i < n; i++) {
        pol_machine_t mi = *m;
        uint64_t gpu = x->footprint * (i + 1) / n;
        mi.cap[POL_GPU] = gpu > m->chunk ? (gpu + m->chunk - 1) / m->chunk * m->chunk : m->chunk;
        plan_point(x, &mi, slack, &s->p[i]);
    }
}

static int run_plan(const cli_cmd_t *c, char **pos)
{
    const char *svg = cli_get(c, "--svg");
    int sweep = cli_get(c, "--sweep") != NULL, json = cli_get(c, "--json") != NULL;
    if (svg && !sweep)
        cli_usage(c, "--svg draws the sweep: give --sweep too");
    if (svg && !svg[0])
        cli_usage(c, "--svg: empty file name");
    if (svg && json && strcmp(svg, "-") == 0)
        cli_usage(c, "--svg -: standard output carries the --json document; give a file name");
    if (cli_get(c, "--force") && !svg)
        cli_usage(c, "--force replaces the --svg file: give --svg too");
    if (cli_get(c, "--nvme") && !cli_get(c, "--nvme-memory"))
        cli_usage(c, "--nvme is the NVMe tier's bandwidth: give --nvme-memory too");
    uint64_t npoints = points(c, sweep);
    const char *cs = cli_get(c, "--chunk");
    uint64_t chunk = cs ? cli_size(c, "--chunk", cs) : 2 << 20;
    if (chunk < 4096 || chunk > ((uint64_t)4 << 30) || (chunk & (chunk - 1)))
        cli_usage(c, "--chunk: %" PRIu64 " bytes: a power of two from 4K to 4G", chunk);
    const char *it = cli_get(c, "--iteration"), *dev = cli_get(c, "--device");
    if (dev && cli_device(c, "--device", dev) == TRC_DEVICE_HOST)
        cli_usage(c, "--device %s: the plan is a GPU's: a device number 0, 1, ...", dev);
    tp_select_t sel = { .iteration = it ? (int64_t)cli_count(c, "--iteration", it) : -1,
                        .device = dev ? cli_device(c, "--device", dev) : -1, .chunk = chunk };
    judge_options(c);
    if (svg && cli_export_check(c, svg))
        return CLI_EXIT_FAIL;           /* (before any work, as plot and report) */
    tm_trace_t t;
    cli_load(c, pos[0], &t);
    tp_input_t x;
    char err[256];
    if (tp_build(&t, &sel, &x, err, sizeof(err)) < 0) {
        tm_free(&t);
        return cli_fail(c, "%s: %s", pos[0], err);
    }
    pol_machine_t m;
    const char *map_from;
    machine(c, &t, &x, chunk, &m, &map_from);
    uint32_t slack = slack_opt(c, (int)m.room_on_device);
    if (slack != POL_SLACK_SEARCH && slack != POL_SLACK_NONE && slack >= m.cap[POL_GPU] / chunk) {
        tm_free(&t);
        tp_free(&x);
        cli_usage(c, "--slack %u: the GPU holds %" PRIu64 " chunks, the slack must leave some "
                  "(give fewer, or more --gpu-memory)", slack, m.cap[POL_GPU] / chunk);
    }
    point_t p;
    plan_point(&x, &m, slack, &p);
    static sweep_t s;
    if (sweep)
        run_sweep(&x, &m, slack, npoints, &s);
    int rc = 0;
    if (json) {
        print_json(&t, &x, &m, map_from, &p, sweep ? &s : NULL);
    } else {
        print_text(&t, &x, &m, map_from, &p);
        if (sweep)
            print_sweep_text(&s);
    }
    if (svg)
        rc = cli_export(c, &t, svg, svg_sweep, &s);
    if (!rc && p.rc == -ENOSPC && !sweep)
        rc = CLI_EXIT_FAIL;            /* said on the "predicted" line */
    else if (!rc && p.rc && p.rc != -ENOSPC)
        rc = cli_fail(c, "planning failed: %s", no_plan_text(&p));
    tp_free(&x);
    tm_free(&t);
    return rc;
}

const cli_cmd_t cmd_plan = {
    .name = "plan",
    .args = "FILE",
    .npos = 1,
    .summary = "what the computed policy would do with the iteration on another machine",
    .details =
        "Plans the trace's profiled iteration with libelixir.so's own planner for a GPU\n"
        "of --gpu-memory (default: the budget the trace ran with), and prints the predicted\n"
        "iteration time against an unlimited GPU and against the lower bound\n"
        "max(compute, bytes that must move / link bandwidth), the bytes each link carries,\n"
        "each tier's peak and the configuration chosen.  Operations without device times\n"
        "count as taking none: record with ELIXIR_TRACE and the default profiling options.\n"
        "Mapping calls cost 1 us per move plus, per 2 MiB chunk of it, what the trace's\n"
        "reactive remaps took (--map-us to set it; 132 us as on an H200 when the trace has\n"
        "fewer than 16), scaled for --unmap (49/132, and 166/132 to map back a chunk that\n"
        "an operation reaches where an eviction left it unmapped) and for a chunk born in\n"
        "the iteration (99/132), and the host 1 us per operation issued; with --handles\n"
        "extent a move's chunks are one physical handle, whose mapping calls cost one\n"
        "chunk's plus 1.4% of that per further chunk.  An operation that reaches more\n"
        "chunks than the GPU holds runs in place, at its recorded device time.\n"
        "--sweep repeats the plan for GPU memory sizes up to the iteration's footprint.",
    .opts = plan_opts,
    .run = run_plan,
};
