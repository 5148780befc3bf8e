/* SPDX-License-Identifier: MIT */
/*
 * shim_plan_times.c - the planned policy measures what its cost model needs in the profiled
 * iteration: each operation's device time, and the host link's rate each way.
 *
 * A loop of identical iterations runs under libelixir.so with ELIXIR_POLICY=plan: six kernels
 * whose modelled costs are known (sim_kernel_cost: 100, 200, ... 600 us of arithmetic, plus the
 * simulator's 2 us launch latency each), a memset and a host-to-device copy from pinned memory
 * (its bytes at the simulator's link rate) into the buffer the last kernel used (so that it is
 * in GPU memory: a copy into a chunk kept in host memory does not cross the link), all on one
 * stream, then a host synchronisation.
 * The plan's log line must report the iteration's compute (the busiest stream's operations)
 * as the modelled total, within 2% (an operation timed while its stream was idle also counts
 * the simulator's 1 us of host time between the first event and the enqueue), with every
 * operation timed.  Twice: with a GPU budget that holds everything (the launches take the
 * fast path; no migration, so the link keeps its default figures, and the log says so), and
 * with half of it (the launches take the general path, the reactive engine migrates 24 MiB
 * each way per iteration): there the link's rates, set apart on the simulator (10 GB/s to the
 * GPU, 20 back), must be measured within 3%.  The race checker fails either run on any race.
 * The mapping calls' cost per chunk moved (ELIXIR_PLAN_UNMAP=0: evicted memory stays mapped,
 * whatever the environment says): the default (an H200's) without migrations; with
 * them, measured from the reactive engine's moves (the log says so): within 3% of what the
 * simulator charges a remap out and one in (their mean), or, on a device without host VMM
 * (ELIXIR_SIM_HOST_VMM=0), an unmap out and a map in; and about nothing with
 * ELIXIR_SIM_ALLOC_COSTS=0, where the simulator charges no mapping call (the simulator's
 * charges being the H200's, that run is the one that tells a measurement from the default).
 */
#define ST_KERNEL_BUSY_RW
#include "shim_test.h"
#include "simtest.h"

#define NBUF 6
#define MIB (1ull << 20)
#define BUF (4 * MIB)
#define COPY (4 * MIB)
#define ITERS 8
#define H2D_GBS 10.0
#define D2H_GBS 20.0

static const char ptx[] = ST_PTX_HEADER ST_PTX_BUSY_RW;

/* Kernel i's arithmetic: (i + 1) * 100 us at the default machine's 51 TFLOP/s. */
static double flops_of(int i)
{
    return 51e12 * 100e-6 * (i + 1);
}

/* The iteration's modelled device time, ms: the kernels (2 us of launch latency each), the
 * memset of one buffer at 2000 GB/s and the copy at H2D_GBS. */
static double modelled_ms(void)
{
    double ms = 0;
    for (int i = 0; i < NBUF; i++)
        ms += 2e-3 + flops_of(i) / 51e12 * 1e3;
    return ms + BUF / 2000e9 * 1e3 + COPY / (H2D_GBS * 1e9) * 1e3;
}

static void scenario(void)
{
    CUdeviceptr buf[NBUF];
    CUstream s;
    void *host;
    st_setup(0);
    CUfunction fn = st_function(ptx, "busy_rw");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAllocHost(&host, COPY));
    memset(host, 7, COPY);
    for (int i = 0; i < NBUF; i++)
        CHECK_CU(cuMemAlloc(&buf[i], BUF));
    for (int it = 0; it < ITERS; it++) {
        for (int i = 0; i < NBUF; i++) {
            double flops = flops_of(i);
            uint64_t n = BUF;
            void *args[] = { &flops, &buf[i], &n };
            CHECK_CU(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
        }
        CHECK_CU(cuMemsetD32Async(buf[NBUF - 1], (unsigned)it, BUF / 4, s));
        CHECK_CU(cuMemcpyHtoDAsync(buf[NBUF - 1], host, COPY, s));
        CHECK_CU(cuStreamSynchronize(s));
    }
    CHECK_CU(cuMemFreeHost(host));
}

/* The number before `key` in text (its first occurrence), or -1. */
static double before(const char *text, const char *key)
{
    const char *p = strstr(text, key);
    while (p && p > text && p[-1] == ' ')
        p--;
    while (p && p > text && (p[-1] == '.' || (p[-1] >= '0' && p[-1] <= '9')))
        p--;
    return p ? sh_after(p, "") : -1;
}

/* What the simulator charges a 2 MiB chunk's remap out to host memory and back, on average
 * (unmap, map and set access; sim/include/simcuda.h); without host VMM (`unmapped`) its unmap
 * out and map in. */
static double remap_us(int unmapped)
{
    double dev_map = SIM_COST_MAP_CALL_US + SIM_COST_MAP_HANDLE_US + SIM_COST_MAP_GRANULE_US +
                     SIM_COST_ACCESS_CALL_US + SIM_COST_ACCESS_HANDLE_US +
                     SIM_COST_ACCESS_GRANULE_US;
    double host_map = SIM_COST_MAP_CALL_US + SIM_COST_HOST_MAP_HANDLE_US +
                      SIM_COST_HOST_MAP_GRANULE_US + SIM_COST_ACCESS_CALL_US +
                      SIM_COST_HOST_ACCESS_HANDLE_US + SIM_COST_HOST_ACCESS_GRANULE_US;
    double dev_unmap = SIM_COST_UNMAP_CALL_US + SIM_COST_UNMAP_HANDLE_US +
                       SIM_COST_UNMAP_GRANULE_US;
    double host_unmap = SIM_COST_UNMAP_CALL_US + SIM_COST_HOST_UNMAP_HANDLE_US +
                        SIM_COST_HOST_UNMAP_GRANULE_US;
    return unmapped ? (dev_unmap + dev_map) / 2
                    : (dev_unmap + host_map + host_unmap + dev_map) / 2;
}

/* One run with GPU budget `budget`; paged: the reactive engine migrates in it; costs: the
 * simulator charges mapping calls; vmm: host memory maps through VMM. */
static void run(const char *budget, int paged, int costs, int vmm)
{
    char gpu[64];
    snprintf(gpu, sizeof(gpu), "ELIXIR_GPU_MEMORY=%s", budget);
    const char *env[] = { "ELIXIR_POLICY=plan", "ELIXIR_PLAN_UNMAP=0", "ELIXIR_LOG=info",
                          "ELIXIR_LOG_SUBSYS=RES", "ELIXIR_SIM_PCIE_H2D_GBPS=10",
                          "ELIXIR_SIM_PCIE_D2H_GBPS=20", gpu,
                          costs ? "ELIXIR_SIM_ALLOC_COSTS=1" : "ELIXIR_SIM_ALLOC_COSTS=0",
                          vmm ? NULL : "ELIXIR_SIM_HOST_VMM=0", NULL };
    sh_run_t r = sh_run_ok("scenario", env);
    const char *line = strstr(r.err, "device 0: planned");
    const char *mach = strstr(r.err, "the plan's machine:");
    EXPECT(line && mach, "a plan and its machine in the log:\n%s", r.err);
    double compute = sh_after(line, " against ");
    double timed = sh_after(mach, "machine: "), untimed = before(mach, " untimed");
    double to = sh_after(mach, "host link "), from = before(mach, " GB/s back");
    double map = sh_after(mach, "mapping calls ");
    printf("budget %s%s%s: compute %.3f ms (modelled %.3f), %.0f operations timed, %.0f untimed; "
           "link %.2f GB/s to the GPU, %.2f back; mapping %.1f us a chunk moved\n", budget,
           costs ? "" : " (no mapping costs)", vmm ? "" : " (no host VMM)", compute,
           modelled_ms(), timed, untimed, to, from, map);
    sh_near(compute, modelled_ms(), 0.02, "the profiled iteration's compute, ms", line);
    EXPECT(timed >= NBUF + 2 && untimed == 0, "every operation timed:\n%s", mach);
    if (paged) {
        sh_near(to, H2D_GBS, 0.03, "the link to the GPU, GB/s", mach);
        sh_near(from, D2H_GBS, 0.03, "the link back, GB/s", mach);
        EXPECT(!strstr(mach, "chunk born (default)"), "mapping costs measured:\n%s", mach);
        if (costs)
            sh_near(map, remap_us(!vmm), 0.03, "mapping calls per chunk moved, us", mach);
        else
            EXPECT(map >= 0 && map < 5, "mapping calls that cost nothing measured as such:\n%s",
                   mach);
    } else {
        EXPECT(strstr(mach, "GB/s to the GPU (default)") && strstr(mach, "GB/s back (default)"),
               "the link's default figures without migrations:\n%s", mach);
        EXPECT(strstr(mach, "chunk born (default)") && map > 0,
               "the default mapping costs without migrations:\n%s", mach);
    }
    sh_run_free(&r);
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    run("64M", 0, 1, 1);
    run("12M", 1, 1, 1);
    run("12M", 1, 0, 1);
    run("12M", 1, 1, 0);
    printf("the plan's compute is the modelled device time; the link's rates and the mapping "
           "calls' cost are measured\n");
    return 0;
}
