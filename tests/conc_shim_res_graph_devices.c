/* SPDX-License-Identifier: MIT */
/*
 * conc_shim_res_graph_devices.c - threads launch graphs on two devices while other threads
 * page both devices' memory.
 *
 * Two simulated devices, a 4 MiB GPU budget each.  Graph G0, captured on device 0's stream
 * s0 with a fork to device 1's stream s1, adds 1 to g0 (device 0) and to g1 (device 1); graph
 * G1, one kernel node of device 1, adds 1 to h1 (device 1).  Four threads, in rounds: one
 * launches G0 on s0, one G1 on a stream of device 1, each waiting for its graph; one per
 * device fills three 2 MiB buffers of its own by kernel and checks them (more than the
 * budget together, so each round pages).  A graph launch holds every device's residency lock
 * across the driver call, taken in device order, while the paging threads take their own
 * device's lock and the other graph thread takes both: a lock taken out of order would hang
 * the test.  At the end g0, g1 and h1 hold their patterns plus the number of rounds, every
 * buffer was right in every round, and the race checker (failing the run) found nothing: no
 * migration raced with a graph.  Run under the thread sanitizer too (tests named conc_*).
 */
#define SH_RES_KERNELS
#include <pthread.h>

#include "shim_test.h"

#define ROUNDS 6
#define NBUF 3
#define BYTES (2 * SH_MIB)
#define WORDS (BYTES / 4)

static CUcontext ctx[2];
static CUfunction fill[2], add[2], verify[2];
static CUgraphExec graph[2];
static CUstream graph_stream[2];

typedef struct worker {
    int dev, pages;             /* pages: fills and checks buffers; else launches graph[dev] */
    CUstream s;
    CUdeviceptr buf[NBUF], bad;
    char why[160];
} worker_t;

static worker_t workers[4];

static void *run_worker(void *arg)
{
    worker_t *w = arg;
    CUresult res = cuCtxSetCurrent(ctx[w->dev]);

    for (int r = 0; r < ROUNDS && res == CUDA_SUCCESS; r++) {
        if (!w->pages) {
            if ((res = cuGraphLaunch(graph[w->dev], graph_stream[w->dev])) == CUDA_SUCCESS)
                res = cuStreamSynchronize(graph_stream[w->dev]);
            continue;
        }
        uint32_t wrong[NBUF] = { 0 };
        for (int b = 0; b < NBUF && res == CUDA_SUCCESS; b++)
            res = sh_fill_async(fill[w->dev], w->buf[b], WORDS, (uint32_t)(100 * r + b), w->s);
        for (int b = 0; b < NBUF && res == CUDA_SUCCESS; b++)
            res = sh_verify_async(verify[w->dev], w->buf[b], WORDS, (uint32_t)(100 * r + b),
                                  w->bad + 4 * (CUdeviceptr)b, w->s);
        if (res == CUDA_SUCCESS &&
            (res = cuMemcpyDtoHAsync(wrong, w->bad, sizeof(wrong), w->s)) == CUDA_SUCCESS)
            res = cuStreamSynchronize(w->s);
        for (int b = 0; b < NBUF && res == CUDA_SUCCESS && !w->why[0]; b++)
            if (wrong[b])
                snprintf(w->why, sizeof(w->why), "round %d: buffer %d has %u words wrong", r,
                         b, wrong[b]);
    }
    if (res != CUDA_SUCCESS)
        snprintf(w->why, sizeof(w->why), "%s", st_err(res));
    return NULL;
}

static void expect_plus(int dev, CUdeviceptr p, uint32_t seed, const char *what)
{
    static uint32_t host[WORDS];

    CHECK_CU(cuCtxSetCurrent(ctx[dev]));
    CHECK_CU(cuMemcpyDtoH(host, p, BYTES));
    sh_expect_pattern_plus(host, WORDS, seed, ROUNDS, what);
    printf("%s holds its pattern + %d\n", what, ROUNDS);
}

static void scenario(void)
{
    CUdeviceptr g0, g1, h1;
    CUstream s1;
    pthread_t th[4];

    for (int d = 1; d >= 0; d--) {
        ctx[d] = st_setup(d);
        fill[d] = st_function(sh_res_ptx, "sh_fill");
        add[d] = st_function(sh_res_ptx, "sh_add");
        verify[d] = st_function(sh_res_ptx, "sh_verify");
        CHECK_CU(cuStreamCreate(&graph_stream[d], CU_STREAM_NON_BLOCKING));
    }
    CHECK_CU(cuCtxSetCurrent(ctx[1]));
    CHECK_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&g1, BYTES));
    CHECK_CU(sh_fill_async(fill[1], g1, WORDS, 1, NULL));
    CHECK_CU(cuMemAlloc(&h1, BYTES));
    CHECK_CU(sh_fill_async(fill[1], h1, WORDS, 2, NULL));
    CHECK_CU(cuCtxSynchronize());
    uint64_t n = WORDS;
    uint32_t one = 1;
    void *args[] = { &h1, &n, &one };
    graph[1] = st_kernel_graph(add[1], args);
    CHECK_CU(cuCtxSetCurrent(ctx[0]));
    CHECK_CU(cuMemAlloc(&g0, BYTES));
    CHECK_CU(sh_fill_async(fill[0], g0, WORDS, 3, NULL));
    CHECK_CU(cuCtxSynchronize());
    graph[0] = sh_capture_fork((sh_fork_side_t){ ctx[0], graph_stream[0], add[0], g0, 1 },
                               (sh_fork_side_t){ ctx[1], s1, add[1], g1, 1 }, WORDS);

    for (int i = 0; i < 4; i++) {
        worker_t *w = &workers[i];
        *w = (worker_t){ .dev = i % 2, .pages = i >= 2 };
        if (!w->pages)
            continue;
        CHECK_CU(cuCtxSetCurrent(ctx[w->dev]));
        CHECK_CU(cuStreamCreate(&w->s, CU_STREAM_NON_BLOCKING));
        for (int b = 0; b < NBUF; b++)
            CHECK_CU(cuMemAlloc(&w->buf[b], BYTES));
        CHECK_CU(cuMemAlloc(&w->bad, 4 * NBUF));
    }
    for (int i = 0; i < 4; i++)
        EXPECT(pthread_create(&th[i], NULL, run_worker, &workers[i]) == 0, "pthread_create");
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 4; i++)
        EXPECT(!workers[i].why[0], "thread %d: %s", i, workers[i].why);
    expect_plus(0, g0, 3, "g0, added to by G0 on device 0");
    expect_plus(1, g1, 1, "g1, added to by G0's node on device 1");
    expect_plus(1, h1, 2, "h1, added to by G1");
    printf("%d rounds of graphs on two devices beside paging threads: exact\n", ROUNDS);
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_SIM_DEVICES=2", "ELIXIR_GPU_MEMORY=4M",
                                       "ELIXIR_STATS=1", "ELIXIR_SIM_RACECHECK=fail", NULL };

    sh_scenario_child(argc, argv, scenario);
    sh_run_t r = sh_run_ok("scenario", env);
    EXPECT(sh_migrations_out(r.err, 0) > 0 && sh_migrations_out(r.err, 1) > 0,
           "a device did not page out:\n%s", r.err);
    printf("%s", r.out);
    sh_run_free(&r);
    return 0;
}
