/* SPDX-License-Identifier: MIT */
/*
 * conc_shim_res_ctx_churn.c - two threads each work in a context of their own on one device
 * and destroy it and make a new one, over and over, while the other keeps launching under
 * eviction pressure.
 *
 * Each thread has its own buffers from cuMemAllocAsync, which "are not associated with any
 * CUDA context" (cuda.h, cuCtxDestroy) and so outlive the contexts.  In each round a thread
 * makes a context, fills every buffer of its own by a kernel on the legacy default stream and
 * reads each back to check it, then destroys the context.  Under a 4 MiB GPU budget every
 * fill brings its buffer back in.  Whenever the arena's context is destroyed, the arena gives
 * it up; the other thread's operations, which may have found the device before that and wait
 * for its lock, must still find what they reach made resident: every call must succeed and
 * every buffer hold its pattern, as without the shim, with evicted chunks mapped and
 * unmapped.  Run under the thread sanitizer too (tests named conc_*).
 */
#define SH_RES_KERNELS
#include <pthread.h>

#include "shim_test.h"

#define BYTES (2 * SH_MIB)
#define WORDS (BYTES / 4)
#define NBUF 3
#define ROUNDS 24

typedef struct worker {
    int id;
    CUdeviceptr buf[NBUF];
    uint32_t *host;
    char failure[256];
} worker_t;

/* A failure of the thread, kept for the main thread to report: nonzero. */
static int failed(worker_t *w, const char *what, CUresult r)
{
    snprintf(w->failure, sizeof(w->failure), "thread %d: %s: %s", w->id, what, st_err(r));
    return 1;
}

/* One round in a new context: every buffer filled with a pattern of the round and checked. */
static int round_of(worker_t *w, int round)
{
    CUcontext c;
    CUdevice dev;
    CUfunction fill;
    CUmodule m;
    CUresult r;

    if ((r = cuDeviceGet(&dev, 0)) || (r = cuCtxCreate(&c, NULL, 0, dev)))
        return failed(w, "making a context", r);
    if ((r = cuModuleLoadData(&m, sh_res_ptx)) || (r = cuModuleGetFunction(&fill, m, "sh_fill")))
        return failed(w, "loading the kernels", r);
    for (int i = 0; i < NBUF; i++) {
        uint32_t seed = (uint32_t)(1000 * w->id + 10 * round + i);
        if ((r = sh_fill_async(fill, w->buf[i], WORDS, seed, NULL)))
            return failed(w, "a fill", r);
        if ((r = cuMemcpyDtoH(w->host, w->buf[i], BYTES)))
            return failed(w, "reading a buffer back", r);
        for (uint32_t j = 0; j < WORDS; j++)
            if (w->host[j] != sh_pattern(seed, j)) {
                snprintf(w->failure, sizeof(w->failure), "thread %d round %d buffer %d: word "
                         "%u is 0x%08x, expected 0x%08x", w->id, round, i, j, w->host[j],
                         sh_pattern(seed, j));
                return 1;
            }
    }
    if ((r = cuCtxDestroy(c)))
        return failed(w, "destroying the context", r);
    return 0;
}

static void *work(void *arg)
{
    worker_t *w = arg;
    for (int round = 0; round < ROUNDS && !w->failure[0]; round++)
        round_of(w, round);
    return NULL;
}

/* w's buffers from cuMemAllocAsync, in a context made for it and destroyed again. */
static void buffers(worker_t *w)
{
    CUcontext c;
    CUstream s;

    CHECK_CU(cuCtxCreate(&c, NULL, 0, 0));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < NBUF; i++)
        CHECK_CU(cuMemAllocAsync(&w->buf[i], BYTES, s));
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuCtxDestroy(c));
    w->host = malloc(BYTES);
    EXPECT(w->host, "out of memory");
}

static void scenario(void)
{
    static worker_t w[2];
    pthread_t t[2];
    CUcontext c;

    CHECK_CU(cuInit(0));
    for (int i = 0; i < 2; i++) {
        w[i].id = i;
        buffers(&w[i]);
    }
    for (int i = 0; i < 2; i++)
        EXPECT(pthread_create(&t[i], NULL, work, &w[i]) == 0, "cannot start a thread");
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 2; i++)
        EXPECT(!w[i].failure[0], "%s", w[i].failure);
    printf("%d rounds of two threads, each in contexts of its own: right\n", ROUNDS);
    CHECK_CU(cuCtxCreate(&c, NULL, 0, 0));
    for (int i = 0; i < 2; i++) {
        for (int j = 0; j < NBUF; j++)
            CHECK_CU(cuMemFree(w[i].buf[j]));
        free(w[i].host);
    }
    CHECK_CU(cuCtxDestroy(c));
}

static void run(const char *what, const char *host_vmm)
{
    sh_paged_same(what, host_vmm, NULL, NULL);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
