/* SPDX-License-Identifier: MIT */
/*
 * shim_plan_nccl_group.c - under ELIXIR_POLICY=plan, the NCCL calls of one group on one
 * stream, which NCCL enqueues together at the group's end, count the group's device time
 * once: the last of them takes it, the others 0.
 *
 * One rank (ncclCommInitAll on one simulated device) runs a loop whose iterations each launch
 * one short kernel and all-reduce two 32 MiB buffers, then synchronise.  The same program runs
 * twice under libelixir.so: with the two all-reduces one after the other, and with both inside
 * one ncclGroupStart/ncclGroupEnd.  The device does the same work either way, so the compute
 * the plan's log reports for the profiled iteration (its operations' device times on the
 * stream, mostly the all-reduces') must be the same within 5%: a group whose every call were
 * timed from its own call to the group's end would count its work twice.  Both plans must
 * have 3 operations, the two all-reduces among them, all timed, and the iteration's one
 * host synchronisation (the cost model's: res_plan_synced).
 */
#include "nccl_test.h"
#include "shim_test.h"

#define ITERS 6
#define MIB (1ull << 20)
#define BYTES (32 * MIB)
#define WORDS (BYTES / 4)

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry touch(.param .u64 p)\n{\n ret;\n}\n";

/* touch: adds 1 to the first word of p. */
SIM_KERNEL void touch(const sim_launch_t *l, void **params)
{
    uint32_t *p = *(uint32_t **)params[0];
    (void)l;
    sim_kernel_access(p, 4, SIM_ACCESS_READ | SIM_ACCESS_WRITE);
    sim_kernel_cost(1e8, 0);
    p[0]++;
}

static void scenario(void)
{
    int grouped = getenv("ELIXIR_TEST_NCCL_GROUPED") != NULL;
    ncclComm_t comm;
    CUcontext ctx;
    CUstream s;
    CUdeviceptr x, y;
    CHECK_CU(cuInit(0));
    CHECK_NCCL(ncclCommInitAll(&comm, 1, NULL));
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, 0));
    CHECK_CU(cuCtxSetCurrent(ctx));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUfunction f = st_function(ptx, "touch");
    CHECK_CU(cuMemAlloc(&x, BYTES));
    CHECK_CU(cuMemAlloc(&y, BYTES));
    CHECK_CU(cuMemsetD32Async(x, 1, WORDS, s));
    CHECK_CU(cuMemsetD32Async(y, 2, WORDS, s));
    for (int it = 0; it < ITERS; it++) {
        void *args[] = { &x };
        CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
        if (grouped)
            CHECK_NCCL(ncclGroupStart());
        CHECK_NCCL(ncclAllReduce((void *)x, (void *)x, WORDS, ncclUint32, ncclSum, comm, s));
        CHECK_NCCL(ncclAllReduce((void *)y, (void *)y, WORDS, ncclUint32, ncclSum, comm, s));
        if (grouped)
            CHECK_NCCL(ncclGroupEnd());
        CHECK_CU(cuStreamSynchronize(s));
    }
    CHECK_NCCL(ncclCommDestroy(comm));
}

/* The profiled iteration's compute (ms) in the plan's log of one run. */
static double compute_ms(int grouped)
{
    const char *env[] = { "ELIXIR_POLICY=plan", "ELIXIR_LOG=info", "ELIXIR_LOG_SUBSYS=RES",
                          "ELIXIR_SIM_RACECHECK=fail",
                          grouped ? "ELIXIR_TEST_NCCL_GROUPED=1" : NULL, NULL };
    sh_run_t r = sh_run_ok("scenario", env);
    const char *line = strstr(r.err, "device 0: planned ");
    const char *mach = strstr(r.err, "device 0: the plan's machine: ");
    EXPECT(line && mach, "a plan and its machine in the log:\n%s", r.err);
    double ms = sh_after(line, " against ");
    printf("%s: %.0f operations, %.0f NCCL calls, %.0f timed; compute %.3f ms\n",
           grouped ? "in a group" : "one by one", sh_after(line, "planned "),
           sh_after(line, "(NCCL calls "), sh_after(mach, "machine: "), ms);
    EXPECT(strstr(line, "planned 3 operations (NCCL calls 2)"),
           "the kernel and the two all-reduces planned:\n%s", line);
    EXPECT(strstr(line, "host synchronisations 1,"), "the stream's synchronisation that ends "
           "each iteration noted once:\n%s", line);
    EXPECT(sh_after(mach, "machine: ") == 3 && strstr(mach, " 0 untimed"),
           "every operation timed:\n%s", mach);
    sh_run_free(&r);
    return ms;
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    double alone = compute_ms(0), group = compute_ms(1);
    char what[128];
    snprintf(what, sizeof(what), "compute with the all-reduces in a group against %.3f ms "
             "without", alone);
    sh_near(group, alone, 0.05, "the profiled iteration's compute in a group, ms", what);
    printf("a group's calls on one stream count its time once\n");
    return 0;
}
