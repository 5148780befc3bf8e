/* SPDX-License-Identifier: MIT */
/*
 * conc_threads.c - sixteen host threads use the driver at once: each makes the primary context
 * current, creates its own stream (blocking for half of them, non-blocking for the others),
 * event and buffers, and repeatedly copies data in, runs a kernel, copies the result out and
 * checks it, while the main thread keeps the legacy default stream busy with work of its own.
 * Nothing is shared between the threads' work, so every result must be exact and the race
 * checker must find nothing.  (Run under the thread sanitizer as well: tests named conc_*.)
 */
#define ST_KERNEL_AXPB

#include <pthread.h>
#include <stdlib.h>

#include "simtest.h"

#define THREADS 16
#define ROUNDS 20
#define N 2048

static const char ptx[] = ST_PTX_HEADER ST_PTX_AXPB;

static CUcontext ctx;
static CUfunction fn;

typedef struct worker {
    int id;
    int failed;
    char why[160];
} worker_t;

/* One round: in, kernel, out, check.  Returns 0, or -1 with w->why set. */
static int round_trip(worker_t *w, CUstream s, CUevent ev, CUdeviceptr d, unsigned *pinned,
                      unsigned *pageable, int round)
{
    unsigned n = N, a = (unsigned)w->id + 2, b = (unsigned)round;
    void *args[] = { &d, &n, &a, &b };
    for (unsigned i = 0; i < N; i++)
        pinned[i] = i + (unsigned)w->id;
    if (cuMemcpyHtoDAsync(d, pinned, N * 4, s) || cuLaunchKernel(fn, 2, 1, 1, 128, 1, 1, 0, s,
                                                                 args, NULL) ||
        cuEventRecord(ev, s) || cuMemcpyDtoHAsync(pinned, d, N * 4, s) ||
        cuMemcpyDtoHAsync(pageable, d, N * 4, s) || cuStreamSynchronize(s) ||
        cuEventQuery(ev) != CUDA_SUCCESS) {
        snprintf(w->why, sizeof(w->why), "a call failed in round %d", round);
        return -1;
    }
    for (unsigned i = 0; i < N; i++) {
        unsigned want = (i + (unsigned)w->id) * a + b;
        if (pinned[i] != want || pageable[i] != want) {
            snprintf(w->why, sizeof(w->why), "round %d: element %u is %u / %u, expected %u",
                     round, i, pinned[i], pageable[i], want);
            return -1;
        }
    }
    return 0;
}

static void *run(void *arg)
{
    worker_t *w = arg;
    CUstream s;
    CUevent ev;
    CUdeviceptr d;
    unsigned *pinned, *pageable = malloc(N * 4);

    unsigned flags = w->id % 2 ? CU_STREAM_DEFAULT : CU_STREAM_NON_BLOCKING;
    if (!pageable || cuCtxSetCurrent(ctx) || cuStreamCreate(&s, flags) ||
        cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING) || cuMemAlloc(&d, N * 4) ||
        cuMemAllocHost((void **)&pinned, N * 4)) {
        snprintf(w->why, sizeof(w->why), "set-up failed");
        w->failed = 1;
        free(pageable);
        return NULL;
    }
    for (int r = 0; r < ROUNDS && !w->failed; r++)
        w->failed = round_trip(w, s, ev, d, pinned, pageable, r) < 0;
    if (cuStreamDestroy(s) || cuEventDestroy(ev) || cuMemFree(d) || cuMemFreeHost(pinned)) {
        snprintf(w->why, sizeof(w->why), "tear-down failed");
        w->failed = 1;
    }
    free(pageable);
    return NULL;
}

/* The main thread's own work on the legacy stream while the workers run. */
static void legacy_work(void)
{
    CUdeviceptr d;
    unsigned host[256];
    CHECK_CU(cuMemAlloc(&d, sizeof(host)));
    for (unsigned r = 0; r < ROUNDS; r++) {
        CHECK_CU(cuMemsetD32(d, r, 256));
        CHECK_CU(cuMemcpyDtoH(host, d, sizeof(host)));
        EXPECT(host[0] == r && host[255] == r, "legacy round %u: %u %u", r, host[0], host[255]);
    }
    CHECK_CU(cuMemFree(d));
}

int main(void)
{
    CUmodule mod;
    pthread_t t[THREADS];
    worker_t w[THREADS];

    ctx = st_setup(0);
    CHECK_CU(cuModuleLoadData(&mod, ptx));
    CHECK_CU(cuModuleGetFunction(&fn, mod, "axpb"));
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker_t){ .id = i };
        EXPECT(pthread_create(&t[i], NULL, run, &w[i]) == 0, "pthread_create %d", i);
    }
    legacy_work();
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++)
        EXPECT(!w[i].failed, "thread %d: %s", i, w[i].why);
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuModuleUnload(mod));
    return 0;
}
