/* SPDX-License-Identifier: MIT */
/*
 * shim_trace_budget.c - the budgets in the trace: a BUDGET record when the arena is set up,
 * another when a budget comes down, and another when it goes back up.
 *
 * The scenario (recording) runs with an 8 MiB GPU budget and a 64 MiB host budget on a
 * machine that pins 64 MiB at most (ELIXIR_SIM_HOST_MEMORY), 48 of which other processes pin
 * (sim_other_process_pinned): it allocates 2 MiB buffers until an allocation fails, which
 * brings the host budget down to what the shim holds.  The other processes then let go, and
 * after a pause (the shim looks at most every 100 ms) one more buffer is allocated, which
 * brings the budget back up.  The trace must hold, for device 0, first a BUDGET of 8 MiB
 * (GPU) and 64 MiB (host), before any MEMORY record, then exactly two more: the GPU budget
 * unchanged, the host budget at most 16 MiB, whole chunks, then 64 MiB again; and
 * `elixir-trace summary` must say so.
 */
#define TT_KERNELS
#include "shim_trace_test.h"

#define MAXBUF 32
#define MIB ((uint64_t)1 << 20)

static void scenario(void)
{
    CUdeviceptr buf[MAXBUF];
    int n = 0;

    st_setup(0);
    EXPECT(sim_other_process_pinned(48 * MIB) == 0, "other processes pinning 48 MiB");
    while (n < MAXBUF - 1 && cuMemAlloc(&buf[n], 2 * MIB) == CUDA_SUCCESS)
        n++;
    printf("%d buffers before the pinned memory ran out\n", n);
    EXPECT(sim_other_process_pinned(0) == 0, "the other processes letting go");
    usleep(150 * 1000);
    CHECK_CU(cuMemAlloc(&buf[n++], 2 * MIB));
    while (n-- > 0)
        CHECK_CU(cuMemFree(buf[n]));
}

/* The BUDGET records, in order: device 0's GPU and host budgets. */
static void check_budgets(const tt_trace_t *t)
{
    size_t n = tt_count(t, TRC_EV_BUDGET), first_memory = SIZE_MAX, first_budget = SIZE_MAX;
    for (size_t i = 0; i < t->n; i++) {
        if (t->ev[i].type == TRC_EV_MEMORY && first_memory == SIZE_MAX)
            first_memory = i;
        if (t->ev[i].type == TRC_EV_BUDGET && first_budget == SIZE_MAX)
            first_budget = i;
    }
    EXPECT(n == 3 && first_budget < first_memory, "%zu BUDGET records (the first at %zu, the "
           "first MEMORY at %zu); expected 3, the first before any MEMORY", n, first_budget,
           first_memory);
    const trc_budget_t *a = &tt_nth(t, TRC_EV_BUDGET, 0)->u.budget;
    const trc_budget_t *b = &tt_nth(t, TRC_EV_BUDGET, 1)->u.budget;
    EXPECT(a->device == 0 && a->bytes[TRC_TIER_GPU] == 8 * MIB &&
               a->bytes[TRC_TIER_HOST] == 64 * MIB && a->bytes[TRC_TIER_PEER] == 0 &&
               a->bytes[TRC_TIER_NVME] == 0,
           "the first BUDGET: device %d, GPU %llu, host %llu, peer %llu, NVMe %llu",
           a->device, (unsigned long long)a->bytes[TRC_TIER_GPU],
           (unsigned long long)a->bytes[TRC_TIER_HOST],
           (unsigned long long)a->bytes[TRC_TIER_PEER],
           (unsigned long long)a->bytes[TRC_TIER_NVME]);
    uint64_t host = b->bytes[TRC_TIER_HOST];
    EXPECT(b->device == 0 && b->bytes[TRC_TIER_GPU] == 8 * MIB && host > 0 &&
               host <= 16 * MIB && host % (2 * MIB) == 0,
           "the second BUDGET: device %d, GPU %llu, host %llu; expected the host budget down "
           "to what was held", b->device, (unsigned long long)b->bytes[TRC_TIER_GPU],
           (unsigned long long)host);
    const trc_budget_t *c = &tt_nth(t, TRC_EV_BUDGET, 2)->u.budget;
    EXPECT(c->device == 0 && c->bytes[TRC_TIER_GPU] == 8 * MIB &&
               c->bytes[TRC_TIER_HOST] == 64 * MIB,
           "the third BUDGET: device %d, GPU %llu, host %llu; expected the host budget back up "
           "to 64 MiB", c->device, (unsigned long long)c->bytes[TRC_TIER_GPU],
           (unsigned long long)c->bytes[TRC_TIER_HOST]);
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    const char *path = tt_path("budget", 0);
    const char *env[] = { tt_env_trace(path, 0), "ELIXIR_GPU_MEMORY=8M", "ELIXIR_HOST_MEMORY=64M",
                          "ELIXIR_SIM_HOST_MEMORY=64M", NULL };
    sh_run_t r = sh_run_ok("scenario", env);
    tt_trace_t t;

    tt_load(path, &t);
    tt_expect_clean(&t, path);
    check_budgets(&t);
    const char *args[] = { "summary", path, NULL };
    const char *out = tt_path("budget", 1);
    const char *summary = tt_tool(args, out, out);
    EXPECT(strstr(summary, "  device 0: GPU 8.00 MiB\n") &&
               strstr(summary, "  host (the process's): 64.00 MiB\n") &&
               strstr(summary, ": the host budget came down to ") &&
               strstr(summary, ": the host budget went back up to 64.00 MiB\n"),
           "elixir-trace summary does not show the budgets:\n%s", summary);
    printf("%s", r.out);
    printf("the trace holds the budgets at the start and the host budget's coming down and "
           "going back up\n");
    tt_free(&t);
    sh_run_free(&r);
    return 0;
}
