/* SPDX-License-Identifier: MIT */
/*
 * conc_shim_res_threads.c - sixteen threads allocate, launch and free at once under a GPU
 * budget far smaller than what they use together, so the shim pages chunks in and out while
 * other threads' kernels are in flight.
 *
 * Under libelixir.so with an 8 MiB GPU budget (four chunks), the threads meet at a barrier,
 * so their first allocations race into the arena's set-up, then each runs rounds on its own
 * non-blocking stream: allocate a small buffer (a slot of a chunk shared with other threads;
 * sizes vary, so several size classes are in use) and a large one of two chunks (cuMemAlloc
 * or cuMemAllocAsync, alternately), fill both by kernel, add to both, copy both back and
 * check every word, then add once more and free at once (cuMemFree or cuMemFreeAsync): the
 * free must wait for that kernel, since the memory is handed to another thread next.
 * Results must be exact, the statistics must show chunks moved both ways and count every
 * launch of the threads (all gone by the time they are printed), and the race checker must
 * find nothing (a migration or a reuse unordered with a kernel is a race).  Run
 * under the thread sanitizer too (tests named conc_*).
 */
#define SH_RES_KERNELS
#include <pthread.h>

#include "shim_test.h"

#define THREADS 16
#define ROUNDS 6
#define BIG (2 * SH_MIB + 64 * 1024)
#define LAUNCHES_PER_ROUND 6

static CUcontext ctx;
static CUfunction fill, add;
static pthread_barrier_t start;

typedef struct worker {
    uint32_t id;
    CUstream s;
    uint32_t *host;
    char why[160];
} worker_t;

static CUresult add_async(worker_t *w, CUdeviceptr p, uint64_t words, uint32_t v)
{
    void *args[] = { &p, &words, &v };

    return sh_launch(add, w->s, args);
}

/* Buffer p (bytes long) holds sh_pattern(seed, i) + plus; 0, or -1 with why. */
static int check(worker_t *w, CUdeviceptr p, size_t bytes, uint32_t seed, uint32_t plus,
                 int round)
{
    if (cuMemcpyDtoHAsync(w->host, p, bytes, w->s) || cuStreamSynchronize(w->s)) {
        snprintf(w->why, sizeof(w->why), "round %d: read back failed", round);
        return -1;
    }
    for (uint64_t i = 0; i < bytes / 4; i++)
        if (w->host[i] != sh_pattern(seed, i) + plus) {
            snprintf(w->why, sizeof(w->why), "round %d: word %llu of %zu bytes is 0x%08x, "
                     "expected 0x%08x", round, (unsigned long long)i, bytes, w->host[i],
                     sh_pattern(seed, i) + plus);
            return -1;
        }
    return 0;
}

static CUresult alloc(CUdeviceptr *p, size_t bytes, int async, CUstream s)
{
    return async ? cuMemAllocAsync(p, bytes, s) : cuMemAlloc(p, bytes);
}

static CUresult release(CUdeviceptr p, int async, CUstream s)
{
    return async ? cuMemFreeAsync(p, s) : cuMemFree(p);
}

static int one_round(worker_t *w, int round)
{
    size_t small = 256 * (1 + (w->id + (uint32_t)round) % 24);
    uint32_t seed = w->id * 100 + (uint32_t)round, async = (w->id + (uint32_t)round) % 2;
    CUdeviceptr a, b;

    if (alloc(&a, small, async, w->s) || alloc(&b, BIG, !async, w->s) ||
        sh_fill_async(fill, a, small / 4, seed, w->s) ||
        sh_fill_async(fill, b, BIG / 4, seed + 1, w->s) ||
        add_async(w, a, small / 4, w->id) || add_async(w, b, BIG / 4, (uint32_t)round)) {
        snprintf(w->why, sizeof(w->why), "round %d: allocation or launch failed", round);
        return -1;
    }
    if (check(w, a, small, seed, w->id, round) < 0 ||
        check(w, b, BIG, seed + 1, (uint32_t)round, round) < 0)
        return -1;
    if (add_async(w, a, small / 4, 1) || add_async(w, b, BIG / 4, 1) ||
        release(a, async, w->s) || release(b, !async, w->s)) {
        snprintf(w->why, sizeof(w->why), "round %d: last launch or free failed", round);
        return -1;
    }
    return 0;
}

static void *run(void *arg)
{
    worker_t *w = arg;
    int failed = 0;

    w->host = malloc(BIG);
    if (!w->host || cuCtxSetCurrent(ctx) || cuStreamCreate(&w->s, CU_STREAM_NON_BLOCKING)) {
        snprintf(w->why, sizeof(w->why), "set-up failed");
        pthread_barrier_wait(&start);
        return w;
    }
    pthread_barrier_wait(&start);
    for (int r = 0; r < ROUNDS && !failed; r++)
        failed = one_round(w, r) < 0;
    if ((cuStreamSynchronize(w->s) || cuStreamDestroy(w->s)) && !failed) {
        snprintf(w->why, sizeof(w->why), "stream teardown failed");
        failed = 1;
    }
    free(w->host);
    return failed ? w : NULL;
}

static void scenario(void)
{
    static worker_t w[THREADS];
    pthread_t t[THREADS];
    void *ret;

    ctx = st_setup(0);
    fill = st_function(sh_res_ptx, "sh_fill");
    add = st_function(sh_res_ptx, "sh_add");
    pthread_barrier_init(&start, NULL, THREADS);
    for (uint32_t i = 0; i < THREADS; i++) {
        w[i].id = i;
        EXPECT(pthread_create(&t[i], NULL, run, &w[i]) == 0, "pthread_create %u", i);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], &ret);
        EXPECT(ret == NULL, "thread %d: %s", i, w[i].why);
    }
    pthread_barrier_destroy(&start);
    CHECK_CU(cuCtxSynchronize());
    printf("%d threads x %d rounds: every word right\n", THREADS, ROUNDS);
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_GPU_MEMORY=8M", "ELIXIR_STATS=1", NULL };

    sh_scenario_child(argc, argv, scenario);
    sh_run_t r = sh_run_migrations(env);
    long long out = sh_stat(r.err, "migrations to host "), in = sh_stat(r.err, "to GPU ");

    EXPECT(out > 0 && in > 0, "chunks were not paged both ways:\n%s", r.err);
    EXPECT(sh_stat(r.err, "GPU peak ") <= 8, "the GPU budget was exceeded:\n%s", r.err);
    EXPECT(sh_stat(r.err, "launch kernel ") == THREADS * ROUNDS * LAUNCHES_PER_ROUND,
           "%lld kernel launches counted, %d made:\n%s", sh_stat(r.err, "launch kernel "),
           THREADS * ROUNDS * LAUNCHES_PER_ROUND, r.err);
    sh_run_free(&r);
    return 0;
}
