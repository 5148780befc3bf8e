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
 * everything.  The test checks every MIGRATION, EVICTION and MEMORY record against that.
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
    printf("%zu migrations (%d caused by the launch), %zu evictions, %zu memory records\n",
           tt_count(&t, TRC_EV_MIGRATION), caused, tt_count(&t, TRC_EV_EVICTION),
           tt_count(&t, TRC_EV_MEMORY));
    tt_free(&t);
    unlink(path);
    sh_run_free(&r);
    return 0;
}
