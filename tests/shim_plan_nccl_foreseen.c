/* SPDX-License-Identifier: MIT */
/*
 * shim_plan_nccl_foreseen.c - under ELIXIR_POLICY=plan, an NCCL call is an operation of the
 * profiled iteration, and the plan foresees it in the iterations that follow.
 *
 * A data-parallel training loop on two ranks (ncclCommInitAll, two simulated devices, one
 * thread driving both): per rank, four 4 MiB layers' weights, a 4 MiB activation and two
 * 8 MiB gradient buckets (40 MiB) under a 16 MiB GPU budget per device.  Each iteration runs
 * the layers forward over the activation, writes each layer's gradient into the first bucket,
 * all-reduces that bucket into the second (one ncclAllReduce per rank, in a group), updates
 * each layer's weights from the summed bucket and synchronises: 13 operations per device.
 * The stand-in's kernels take only a pointer to a work descriptor in host memory, as NCCL's
 * do: only the NCCL wrappers can say which buffers the all-reduce reaches.
 *
 * Each device's plan must count the all-reduce among its operations (the log's "planned 13
 * operations (NCCL calls 1)"), and the statistics must show every operation of the iterations
 * that followed the plan foreseen, the all-reduce among them: NCCL calls foreseen times the
 * plan's operations equals the operations foreseen; not foreseen are only the copies that
 * read the weights back after the loop.  Every operation of the profile is timed, the
 * all-reduce too (by events of its stream's context, whichever context is current when the
 * thread calls NCCL for that rank).  The weights each rank ends with are printed, and must be
 * the same as without the shim.  The race checker fails either run on any race.
 */
#include "nccl_test.h"
#include "shim_test.h"

#define N 2
#define LAYERS 4
#define ITERS 8
#define MIB (1ull << 20)
#define LAYER (4 * MIB)
#define WORDS (LAYER / 4)
#define BUCKET (LAYERS * WORDS / 2)     /* each layer's gradient: half its words */
#define FLOPS 5e9                       /* each kernel's: 98 us on the default machine */

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry fwd(.param .u64 w, .param .u64 a, .param .u64 n, .param .u32 it)\n"
    "{\n ret;\n}\n"
    ".visible .entry bwd(.param .u64 a, .param .u64 g, .param .u64 n)\n{\n ret;\n}\n"
    ".visible .entry upd(.param .u64 w, .param .u64 g, .param .u64 n)\n{\n ret;\n}\n";

/* fwd: a[j] = a[j] * 31 + w[j] for j < n; the first layer's (it != 0): w[j] + it. */
SIM_KERNEL void fwd(const sim_launch_t *l, void **params)
{
    const uint32_t *w = *(uint32_t **)params[0];
    uint32_t *a = *(uint32_t **)params[1];
    uint64_t n = *(uint64_t *)params[2];
    uint32_t it = *(uint32_t *)params[3];
    (void)l;
    sim_kernel_access(w, n * 4, SIM_ACCESS_READ);
    sim_kernel_access(a, n * 4, it ? SIM_ACCESS_WRITE : SIM_ACCESS_READ | SIM_ACCESS_WRITE);
    sim_kernel_cost(FLOPS, 0);
    for (uint64_t j = 0; j < n; j++)
        a[j] = it ? w[j] + it : a[j] * 31u + w[j];
}

/* bwd: g[j] = a[2j] ^ a[2j + 1] for j < n (a has 2n words). */
SIM_KERNEL void bwd(const sim_launch_t *l, void **params)
{
    const uint32_t *a = *(uint32_t **)params[0];
    uint32_t *g = *(uint32_t **)params[1];
    uint64_t n = *(uint64_t *)params[2];
    (void)l;
    sim_kernel_access(a, 2 * n * 4, SIM_ACCESS_READ);
    sim_kernel_access(g, n * 4, SIM_ACCESS_WRITE);
    sim_kernel_cost(FLOPS, 0);
    for (uint64_t j = 0; j < n; j++)
        g[j] = a[2 * j] ^ a[2 * j + 1];
}

/* upd: w[2j] += g[j] >> 4, w[2j + 1] -= g[j] >> 5 for j < n (w has 2n words). */
SIM_KERNEL void upd(const sim_launch_t *l, void **params)
{
    uint32_t *w = *(uint32_t **)params[0];
    const uint32_t *g = *(uint32_t **)params[1];
    uint64_t n = *(uint64_t *)params[2];
    (void)l;
    sim_kernel_access(w, 2 * n * 4, SIM_ACCESS_READ | SIM_ACCESS_WRITE);
    sim_kernel_access(g, n * 4, SIM_ACCESS_READ);
    sim_kernel_cost(FLOPS, 0);
    for (uint64_t j = 0; j < n; j++) {
        w[2 * j] += g[j] >> 4;
        w[2 * j + 1] -= g[j] >> 5;
    }
}

typedef struct rank {
    ncclComm_t comm;
    CUcontext ctx;
    CUstream s;
    CUfunction fwd, bwd, upd;
    CUdeviceptr w[LAYERS], a, g, sum;
} rank_t;

static rank_t rk[N];

static void launch(const rank_t *r, CUfunction f, CUdeviceptr x, CUdeviceptr y, uint64_t n,
                   uint32_t it)
{
    void *args[] = { &x, &y, &n, &it };
    CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, r->s, args, NULL));
}

static void setup(void)
{
    ncclComm_t comms[N];
    CHECK_CU(cuInit(0));
    CHECK_NCCL(ncclCommInitAll(comms, N, NULL));
    for (int i = 0; i < N; i++) {
        rank_t *r = &rk[i];
        r->comm = comms[i];
        CHECK_CU(cuDevicePrimaryCtxRetain(&r->ctx, i));
        CHECK_CU(cuCtxSetCurrent(r->ctx));
        CHECK_CU(cuStreamCreate(&r->s, CU_STREAM_NON_BLOCKING));
        r->fwd = st_function(ptx, "fwd");
        r->bwd = st_function(ptx, "bwd");
        r->upd = st_function(ptx, "upd");
        for (int l = 0; l < LAYERS; l++) {
            CHECK_CU(cuMemAlloc(&r->w[l], LAYER));
            CHECK_CU(cuMemsetD32Async(r->w[l], (unsigned)(1000 * i + 17 * l + 3), WORDS, r->s));
        }
        CHECK_CU(cuMemAlloc(&r->a, LAYER));
        CHECK_CU(cuMemAlloc(&r->g, BUCKET * 4));
        CHECK_CU(cuMemAlloc(&r->sum, BUCKET * 4));
        CHECK_CU(cuStreamSynchronize(r->s));
    }
}

/* Forward and backward of rank r in iteration it. */
static void compute(const rank_t *r, int it)
{
    CHECK_CU(cuCtxSetCurrent(r->ctx));
    for (int l = 0; l < LAYERS; l++)
        launch(r, r->fwd, r->w[l], r->a, WORDS, l ? 0 : (uint32_t)it + 1);
    for (int l = LAYERS; l-- > 0;)
        launch(r, r->bwd, r->a, r->g + (uint64_t)l * (WORDS / 2) * 4, WORDS / 2, 0);
}

static void update(const rank_t *r)
{
    CHECK_CU(cuCtxSetCurrent(r->ctx));
    for (int l = 0; l < LAYERS; l++)
        launch(r, r->upd, r->w[l], r->sum + (uint64_t)l * (WORDS / 2) * 4, WORDS / 2, 0);
    CHECK_CU(cuStreamSynchronize(r->s));
}

/* FNV-1a of rank r's weights, printed. */
static void print_weights(const rank_t *r, int i)
{
    static uint32_t host[WORDS];
    uint64_t h = 1469598103934665603ull;
    CHECK_CU(cuCtxSetCurrent(r->ctx));
    for (int l = 0; l < LAYERS; l++) {
        CHECK_CU(cuMemcpyDtoH(host, r->w[l], LAYER));
        for (size_t j = 0; j < WORDS; j++)
            h = (h ^ host[j]) * 1099511628211ull;
    }
    printf("rank %d weights %016llx\n", i, (unsigned long long)h);
}

static void scenario(void)
{
    setup();
    for (int it = 0; it < ITERS; it++) {
        for (int i = 0; i < N; i++)
            compute(&rk[i], it);
        CHECK_NCCL(ncclGroupStart());
        for (int i = 0; i < N; i++)
            CHECK_NCCL(ncclAllReduce((void *)rk[i].g, (void *)rk[i].sum, BUCKET, ncclUint32,
                                     ncclSum, rk[i].comm, rk[i].s));
        CHECK_NCCL(ncclGroupEnd());
        for (int i = 0; i < N; i++)
            update(&rk[i]);
    }
    for (int i = 0; i < N; i++) {
        print_weights(&rk[i], i);
        CHECK_NCCL(ncclCommDestroy(rk[i].comm));
    }
}

/* Device dev's plan in the log and statistics of run r. */
static void expect_foreseen(const sh_run_t *r, int dev)
{
    char key[64];
    snprintf(key, sizeof(key), "device %d: planned ", dev);
    const char *line = strstr(r->err, key);
    snprintf(key, sizeof(key), "device %d: the plan's machine: ", dev);
    const char *mach = strstr(r->err, key);
    snprintf(key, sizeof(key), "device %d: plan: ", dev);
    const char *stats = strstr(r->err, key);
    EXPECT(line && mach && stats, "device %d: a plan, its machine and its statistics in the "
           "log:\n%s", dev, r->err);
    double timed = sh_after(mach, "machine: ");
    EXPECT(timed == 2 * LAYERS + LAYERS + 1 && strstr(mach, " 0 untimed"),
           "device %d: every operation timed, the all-reduce too:\n%s", dev, mach);
    double ops = sh_after(line, "planned "), nccl = sh_after(line, "operations (NCCL calls ");
    double seen = sh_after(stats, "operations foreseen ");
    double unseen = sh_after(stats, "not foreseen ");
    double nseen = sh_after(stats, "NCCL calls foreseen ");
    printf("device %d: planned %.0f operations, %.0f of them NCCL calls; operations foreseen "
           "%.0f, not foreseen %.0f, NCCL calls foreseen %.0f\n", dev, ops, nccl, seen, unseen,
           nseen);
    EXPECT(ops == 2 * LAYERS + LAYERS + 1 && nccl == 1,
           "device %d: the all-reduce among the plan's 13 operations:\n%s", dev, line);
    EXPECT(nseen >= ITERS - 4 && nseen * ops == seen && unseen == LAYERS,
           "device %d: every operation foreseen, the all-reduce of each iteration among them "
           "(not foreseen: the %d copies after the loop):\n%s", dev, LAYERS, stats);
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    const char *plain_env[] = { "ELIXIR_SIM_DEVICES=2", "ELIXIR_SIM_RACECHECK=fail", NULL };
    const char *env[] = { "ELIXIR_SIM_DEVICES=2", "ELIXIR_SIM_RACECHECK=fail",
                          "ELIXIR_GPU_MEMORY=16M", "ELIXIR_POLICY=plan", "ELIXIR_STATS=1",
                          "ELIXIR_LOG=info", "ELIXIR_LOG_SUBSYS=RES", NULL };
    sh_run_t plain = sh_run_plain_ok(plain_env), shim = sh_run_ok("scenario", env);
    for (int dev = 0; dev < N; dev++)
        expect_foreseen(&shim, dev);
    sh_same_transcript("the weights", &plain, &shim);
    return 0;
}
