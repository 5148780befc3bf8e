/* SPDX-License-Identifier: MIT */
/*
 * ctx_per_thread_current.c - the current context belongs to the calling thread: a new thread
 * starts with none (calls that need one fail with CUDA_ERROR_INVALID_CONTEXT), making a context
 * current there does not change the main thread's, and a context is usable from any thread
 * it is made current in.  A context destroyed by another thread stays current to a thread,
 * where what needs it fails with CUDA_ERROR_CONTEXT_IS_DESTROYED (cuCtxDestroy's documentation;
 * the real driver answers so), until that thread pops it.
 */
#include <pthread.h>

#include "simtest.h"

static CUcontext shared_ctx;
static CUdeviceptr dev;

static void *worker(void *unused)
{
    CUcontext c = (CUcontext)(uintptr_t)1;
    CUdeviceptr d;
    CHECK_CU(cuCtxGetCurrent(&c));
    EXPECT(c == NULL, "a new thread starts with context %p", (void *)c);
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuMemAlloc(&d, 256));
    CHECK_CU(cuCtxSetCurrent(shared_ctx));
    CHECK_CU(cuMemsetD32(dev, 0x5eed, 64));
    CHECK_CU(cuCtxSynchronize());
    return NULL;
}

/* Current in this thread while the main thread destroys it (between the two barriers). */
static pthread_barrier_t destroying;

static void *orphan(void *ctx)
{
    CUcontext c = NULL;
    CUdeviceptr d;
    CHECK_CU(cuCtxSetCurrent(ctx));
    pthread_barrier_wait(&destroying);
    pthread_barrier_wait(&destroying);
    CHECK_CU(cuCtxGetCurrent(&c));
    EXPECT(c == ctx, "the destroyed context is no longer current here (%p)", (void *)c);
    EXPECT_CU(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuMemAlloc(&d, 256));
    EXPECT_CU(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuCtxSynchronize());
    CHECK_CU(cuCtxPopCurrent(&c));
    EXPECT(c == ctx, "popped %p, expected the destroyed context", (void *)c);
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxSynchronize());
    return NULL;
}

static void destroyed_elsewhere(void)
{
    CUcontext ctx;
    pthread_t t;
    CHECK_CU(cuCtxCreate(&ctx, NULL, 0, 0));
    CHECK_CU(cuCtxPopCurrent(NULL));
    EXPECT(pthread_barrier_init(&destroying, NULL, 2) == 0, "pthread_barrier_init");
    EXPECT(pthread_create(&t, NULL, orphan, ctx) == 0, "pthread_create");
    pthread_barrier_wait(&destroying);
    CHECK_CU(cuCtxDestroy(ctx));
    pthread_barrier_wait(&destroying);
    pthread_join(t, NULL);
    pthread_barrier_destroy(&destroying);
}

int main(void)
{
    CUcontext primary, mine;
    pthread_t t;
    unsigned host[64];

    primary = st_setup(0);
    CHECK_CU(cuCtxCreate(&shared_ctx, NULL, 0, 0));    /* now current here: shared_ctx */
    CHECK_CU(cuMemAlloc(&dev, sizeof(host)));
    EXPECT(pthread_create(&t, NULL, worker, NULL) == 0, "pthread_create");
    pthread_join(t, NULL);
    CHECK_CU(cuCtxGetCurrent(&mine));
    EXPECT(mine == shared_ctx, "main thread's context changed to %p", (void *)mine);
    CHECK_CU(cuMemcpyDtoH(host, dev, sizeof(host)));
    for (int i = 0; i < 64; i++)
        EXPECT(host[i] == 0x5eed, "host[%d] = 0x%x", i, host[i]);
    CHECK_CU(cuMemFree(dev));
    CHECK_CU(cuCtxDestroy(shared_ctx));
    CHECK_CU(cuCtxGetCurrent(&mine));
    EXPECT(mine == primary, "after destroying: current %p, expected the primary %p",
           (void *)mine, (void *)primary);
    destroyed_elsewhere();
    return 0;
}
