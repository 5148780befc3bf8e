/* SPDX-License-Identifier: MIT */
/*
 * conc_shim_threads.c - sixteen threads allocate, launch and copy through the shim at once.
 *
 * With libelixir.so preloaded, the threads wait at a barrier and then make their first
 * hooked calls together, so they race into the shim's start-up; then each, on its own
 * stream, allocates (alternately cuMemAlloc and cuMemAllocAsync), sets, launches, copies back
 * and checks, and frees, for a number of rounds.  Every result must be exact, the race
 * checker must find nothing, and elixir_shim_calls must count every call of every thread.
 * Run under the thread sanitizer too (tests named conc_*).
 */
#define ST_KERNEL_AXPB

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "shim_test.h"
#include "simtest.h"

#define THREADS 16
#define ROUNDS 12
#define N 1024

static const char ptx[] = ST_PTX_HEADER ST_PTX_AXPB;

static CUcontext ctx;
static CUfunction fn;
static pthread_barrier_t start;

typedef struct worker {
    int id;
    char why[160];
} worker_t;

/* Allocate, set to `id`, launch p = p * a + round, copy back, free; 0 or -1 with why. */
static int one_round(worker_t *w, CUstream s, unsigned *host, int round)
{
    unsigned n = N, a = (unsigned)w->id + 2, b = (unsigned)round, want = (unsigned)w->id * a + b;
    int async = round % 2;
    CUdeviceptr d;
    void *args[] = { &d, &n, &a, &b };

    if ((async ? cuMemAllocAsync(&d, N * 4, s) : cuMemAlloc(&d, N * 4)) ||
        cuMemsetD32Async(d, (unsigned)w->id, N, s) ||
        cuLaunchKernel(fn, 2, 1, 1, 128, 1, 1, 0, s, args, NULL) ||
        cuMemcpyDtoHAsync(host, d, N * 4, s) || cuStreamSynchronize(s) ||
        (async ? cuMemFreeAsync(d, s) : cuMemFree(d)) || cuStreamSynchronize(s)) {
        snprintf(w->why, sizeof(w->why), "a call failed in round %d", round);
        return -1;
    }
    for (unsigned i = 0; i < N; i++) {
        if (host[i] != want) {
            snprintf(w->why, sizeof(w->why), "round %d: element %u is %u, expected %u", round,
                     i, host[i], want);
            return -1;
        }
    }
    return 0;
}

static void *run(void *arg)
{
    worker_t *w = arg;
    unsigned *host = malloc(N * 4);
    CUstream s;
    int failed = 0;

    if (!host || cuCtxSetCurrent(ctx) || cuStreamCreate(&s, CU_STREAM_NON_BLOCKING)) {
        snprintf(w->why, sizeof(w->why), "set-up failed");
        free(host);
        pthread_barrier_wait(&start);
        return w;
    }
    pthread_barrier_wait(&start);
    for (int r = 0; r < ROUNDS && !failed; r++)
        failed = one_round(w, s, host, r) < 0;
    if (cuStreamDestroy(s) && !failed) {
        snprintf(w->why, sizeof(w->why), "cuStreamDestroy failed");
        failed = 1;
    }
    free(host);
    return failed ? w : NULL;
}

/* Every call of every thread was counted by its wrapper. */
static void check_counts(void)
{
    static const struct {
        const char *name;
        long long want;
    } counts[] = {
        { "cuMemAlloc_v2", THREADS * (ROUNDS / 2) },
        { "cuMemAllocAsync", THREADS * (ROUNDS / 2) },
        { "cuMemFree_v2", THREADS * (ROUNDS / 2) },
        { "cuMemFreeAsync", THREADS * (ROUNDS / 2) },
        { "cuMemsetD32Async", THREADS * ROUNDS },
        { "cuLaunchKernel", THREADS * ROUNDS },
        { "cuMemcpyDtoHAsync_v2", THREADS * ROUNDS },
        { "cuStreamDestroy_v2", THREADS },
    };

    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
        EXPECT(sh_calls(counts[i].name) == counts[i].want, "%s: %lld calls counted, %lld made",
               counts[i].name, sh_calls(counts[i].name), counts[i].want);
}

int main(int argc, char **argv)
{
    CUmodule mod;
    pthread_t t[THREADS];
    worker_t w[THREADS];
    void *ret;

    (void)argc;
    sh_reexec_preloaded(argv);
    ctx = st_setup(0);
    CHECK_CU(cuModuleLoadData(&mod, ptx));
    CHECK_CU(cuModuleGetFunction(&fn, mod, "axpb"));
    pthread_barrier_init(&start, NULL, THREADS);
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker_t){ .id = i };
        EXPECT(pthread_create(&t[i], NULL, run, &w[i]) == 0, "pthread_create %d", i);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], &ret);
        EXPECT(ret == NULL, "thread %d: %s", i, w[i].why);
    }
    pthread_barrier_destroy(&start);
    check_counts();
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuModuleUnload(mod));
    return 0;
}
