/* SPDX-License-Identifier: MIT */
/*
 * shim_trace_residency.c - what residency records in the trace: migrations (chunk, tiers,
 * bytes, times, and the operation that caused them), evictions (the allocation and why) and
 * memory per tier.
 *
 * The scenario runs with a 4 MiB GPU budget (two 2 MiB chunks): it allocates four 4 MiB
 * buffers, so that backing each new one evicts older chunks to host memory (evictions for an
 * allocation, with no cause), then launches tt_k1 on the first buffer, which brings its
 * chunks back and evicts others (for that launch, whose id the migrations name), then frees
 * everything.  The test checks every MIGRATION, EVICTION and MEMORY record against that,
 * then what elixir-trace's summary, Chrome timeline and plot show of them.
 */
#define TT_KERNELS
#include "shim_trace_test.h"

#define BUFS 4
#define BUF_BYTES (4u << 20)
#define CHUNK (2u << 20)
#define BUDGET (4u << 20)

static void scenario(void)
{
    CUdeviceptr buf[BUFS];

    st_setup(0);
    CUfunction k1 = st_function(tt_ptx, "tt_k1");
    for (int i = 0; i < BUFS; i++) {
        CHECK_CU(cuMemAlloc(&buf[i], BUF_BYTES));
        CHECK_CU(cuMemsetD32(buf[i], (unsigned)i, BUF_BYTES / 4));
        CHECK_CU(cuCtxSynchronize());
    }
    CHECK_CU(tt_launch1(k1, NULL, buf[0], BUF_BYTES / 4));
    CHECK_CU(cuCtxSynchronize());
    for (int i = 0; i < BUFS; i++)
        CHECK_CU(cuMemFree(buf[i]));
    printf("done\n");
}

static int is_alloc_id(const tt_trace_t *t, uint64_t id)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->ev[i].type == TRC_EV_ALLOC && t->ev[i].u.alloc.id == id)
            return 1;
    return 0;
}

/* Every migration moves one chunk between the GPU and the host, in time order; returns how
 * many went to the GPU with the launch as their cause. */
static int check_migrations(const tt_trace_t *t, uint64_t launch)
{
    int caused = 0;

    EXPECT(tt_count(t, TRC_EV_MIGRATION) >= 4, "%zu MIGRATION records",
           tt_count(t, TRC_EV_MIGRATION));
    for (size_t i = 0; i < t->n; i++) {
        const trc_migration_t *m = &t->ev[i].u.migration;
        if (t->ev[i].type != TRC_EV_MIGRATION)
            continue;
        int out = m->from == TRC_TIER_GPU && m->to == TRC_TIER_HOST;
        int in = m->from == TRC_TIER_HOST && m->to == TRC_TIER_GPU;
        EXPECT((out || in) && m->bytes == CHUNK && m->device == 0 && m->end >= m->start &&
                   m->end <= t->ev[i].time,
               "MIGRATION of chunk %llu: tier %u -> %u, %llu bytes, device %d, %llu..%llu "
               "recorded at %llu", (unsigned long long)m->chunk, m->from, m->to,
               (unsigned long long)m->bytes, m->device, (unsigned long long)m->start,
               (unsigned long long)m->end, (unsigned long long)t->ev[i].time);
        EXPECT(m->cause == 0 || m->cause == launch, "MIGRATION caused by %llu: no such operation "
               "(the launch is %llu)", (unsigned long long)m->cause, (unsigned long long)launch);
        caused += in && m->cause == launch;
    }
    return caused;
}

/* Every eviction names a live allocation and a reason; returns a bit per reason seen. */
static unsigned check_evictions(const tt_trace_t *t)
{
    unsigned reasons = 0;

    for (size_t i = 0; i < t->n; i++) {
        const trc_eviction_t *e = &t->ev[i].u.eviction;
        if (t->ev[i].type != TRC_EV_EVICTION)
            continue;
        EXPECT(e->from == TRC_TIER_GPU && e->to == TRC_TIER_HOST && e->bytes == CHUNK &&
                   is_alloc_id(t, e->alloc) &&
                   (e->reason == TRC_EVICT_FOR_ALLOC || e->reason == TRC_EVICT_FOR_LAUNCH),
               "EVICTION of chunk %llu: tier %u -> %u, %llu bytes, allocation %llu, reason %u",
               (unsigned long long)e->chunk, e->from, e->to, (unsigned long long)e->bytes,
               (unsigned long long)e->alloc, e->reason);
        reasons |= 1u << e->reason;
    }
    return reasons;
}

/* GPU bytes never above the budget; at the peak all four buffers held somewhere. */
static void check_memory(const tt_trace_t *t)
{
    uint64_t most = 0, host = 0;

    EXPECT(tt_count(t, TRC_EV_MEMORY) > 0, "no MEMORY records");
    for (size_t i = 0; i < t->n; i++) {
        const trc_memory_t *m = &t->ev[i].u.memory;
        if (t->ev[i].type != TRC_EV_MEMORY)
            continue;
        uint64_t all = m->bytes[TRC_TIER_GPU] + m->bytes[TRC_TIER_HOST];
        EXPECT(m->device == 0 && m->bytes[TRC_TIER_GPU] <= BUDGET && m->bytes[TRC_TIER_PEER] == 0
                   && m->bytes[TRC_TIER_NVME] == 0,
               "MEMORY of device %d: GPU %llu (budget %u), peer %llu, NVMe %llu", m->device,
               (unsigned long long)m->bytes[TRC_TIER_GPU], BUDGET,
               (unsigned long long)m->bytes[TRC_TIER_PEER],
               (unsigned long long)m->bytes[TRC_TIER_NVME]);
        most = all > most ? all : most;
        host = m->bytes[TRC_TIER_HOST] > host ? m->bytes[TRC_TIER_HOST] : host;
    }
    EXPECT(most >= (uint64_t)BUFS * BUF_BYTES && host > 0,
           "MEMORY: at most %llu bytes in all, at most %llu on the host; %u bytes were allocated",
           (unsigned long long)most, (unsigned long long)host, BUFS * BUF_BYTES);
}

static size_t count_migrations(const tt_trace_t *t, uint32_t from, uint32_t to, int caused)
{
    size_t n = 0;

    for (size_t i = 0; i < t->n; i++) {
        const trc_migration_t *m = &t->ev[i].u.migration;
        n += t->ev[i].type == TRC_EV_MIGRATION &&
             (caused ? m->cause != 0 : m->from == from && m->to == to);
    }
    return n;
}

static size_t count_evictions(const tt_trace_t *t, uint32_t reason)
{
    size_t n = 0;

    for (size_t i = 0; i < t->n; i++)
        n += t->ev[i].type == TRC_EV_EVICTION && t->ev[i].u.eviction.reason == reason;
    return n;
}

/* The highest value of tier k in the MEMORY records, as elixir-trace prints a size. */
static void peak_text(const tt_trace_t *t, int k, char *buf, size_t len)
{
    uint64_t most = 0;

    for (size_t i = 0; i < t->n; i++)
        if (t->ev[i].type == TRC_EV_MEMORY && t->ev[i].u.memory.bytes[k] > most)
            most = t->ev[i].u.memory.bytes[k];
    if (most)
        snprintf(buf, len, "%.2f MiB", (double)most / (1 << 20));
    else
        snprintf(buf, len, "0 B");
}

/* What elixir-trace makes of these records: the summary's peak per tier, migrations per
 * direction and evictions per reason; a Chrome slice per migration and a flow from the
 * launch to each migration it caused; the plot's two tiers, migrations and budget. */
static void check_tool(const tt_trace_t *t, const char *path)
{
    char out[256], json[256], svg[256], want[160], peak[4][32];
    snprintf(out, sizeof(out), "%s.out", path);
    snprintf(json, sizeof(json), "%s.json", path);
    snprintf(svg, sizeof(svg), "%s.svg", path);

    const char *summary[] = { "summary", path, NULL };
    const char *text = tt_tool(summary, out, out);
    for (int k = 0; k < 4; k++)
        peak_text(t, k, peak[k], sizeof(peak[k]));
    snprintf(want, sizeof(want), "  0       %12s  %12s  %12s  %12s\n", peak[0], peak[1], peak[2],
             peak[3]);
    EXPECT(strstr(text, want), "the summary lacks the peaks '%s':\n%s", want, text);
    size_t out_n = count_migrations(t, TRC_TIER_GPU, TRC_TIER_HOST, 0);
    size_t in_n = count_migrations(t, TRC_TIER_HOST, TRC_TIER_GPU, 0);
    snprintf(want, sizeof(want), "migrations  %zu\n  gpu  -> host  %8zu  %5zu.00 MiB\n"
             "  host -> gpu   %8zu  %5zu.00 MiB\n", out_n + in_n, out_n, 2 * out_n, in_n,
             2 * in_n);
    EXPECT(strstr(text, want), "the summary lacks the migrations '%s':\n%s", want, text);
    size_t ev_launch = count_evictions(t, TRC_EVICT_FOR_LAUNCH);
    size_t ev_alloc = count_evictions(t, TRC_EVICT_FOR_ALLOC);
    snprintf(want, sizeof(want), "evictions   %zu\n", tt_count(t, TRC_EV_EVICTION));
    EXPECT(strstr(text, want), "the summary lacks '%s':\n%s", want, text);
    snprintf(want, sizeof(want), "  for-launch    %8zu  %5zu.00 MiB\n", ev_launch, 2 * ev_launch);
    EXPECT(strstr(text, want), "the summary lacks '%s':\n%s", want, text);
    snprintf(want, sizeof(want), "  for-alloc     %8zu  %5zu.00 MiB\n", ev_alloc, 2 * ev_alloc);
    EXPECT(strstr(text, want), "the summary lacks '%s':\n%s", want, text);

    const char *timeline[] = { "timeline", "--chrome", json, path, NULL };
    text = tt_tool(timeline, out, json);
    size_t slices = (size_t)sh_count(text, "\"cat\":\"migration\"");
    size_t flows = (size_t)sh_count(text, "\"cat\":\"migration.cause\"");
    size_t caused = count_migrations(t, 0, 0, 1);
    EXPECT(slices == tt_count(t, TRC_EV_MIGRATION) && caused > 0 && flows == 2 * caused,
           "the Chrome timeline has %zu migration slices and %zu flow ends; the trace %zu "
           "migrations, %zu of them with a cause", slices, flows, tt_count(t, TRC_EV_MIGRATION),
           caused);

    const char *plot[] = { "plot", path, svg, NULL };
    text = tt_tool(plot, out, svg);
    unlink(out);
    static const char *const marks[] = { "class=\"area\" data-tier=\"gpu\"",
                                         "class=\"area\" data-tier=\"host\"",
                                         "class=\"migrations\" data-direction=\"evict\"",
                                         "class=\"migrations\" data-direction=\"fetch\"",
                                         "class=\"budget\" data-tier=\"gpu\"" };
    for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++)
        EXPECT(strstr(text, marks[i]), "the plot has no <path %s>", marks[i]);
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    const char *path = tt_path("residency", 0);
    const char *env[] = { tt_env_trace(path, 0), "ELIXIR_GPU_MEMORY=4M", NULL };
    sh_run_t r = sh_run_ok("scenario", env);
    tt_trace_t t;

    tt_load(path, &t);
    tt_expect_clean(&t, path);
    const trc_event_t *l = tt_launch_of(&t, "tt_k1", 0);
    EXPECT(l != NULL, "no launch of tt_k1 recorded");
    int caused = check_migrations(&t, l->u.launch.id);
    EXPECT(caused >= 1, "no migration into GPU memory names the launch (%llu) as its cause",
           (unsigned long long)l->u.launch.id);
    unsigned reasons = check_evictions(&t);
    EXPECT(reasons == ((1u << TRC_EVICT_FOR_ALLOC) | (1u << TRC_EVICT_FOR_LAUNCH)),
           "eviction reasons seen (bit mask) 0x%x, expected for allocations and for the launch",
           reasons);
    check_memory(&t);
    check_tool(&t, path);
    printf("%zu migrations (%d caused by the launch), %zu evictions, %zu memory records\n",
           tt_count(&t, TRC_EV_MIGRATION), caused, tt_count(&t, TRC_EV_EVICTION),
           tt_count(&t, TRC_EV_MEMORY));
    tt_free(&t);
    unlink(path);
    sh_run_free(&r);
    return 0;
}
