/* SPDX-License-Identifier: MIT */
/*
 * ctx_stack.c - the per-thread context stack: cuCtxCreate pushes the new context,
 * cuCtxPushCurrent/cuCtxPopCurrent push and pop, cuCtxSetCurrent replaces the top (pushes onto
 * an empty stack, pops for NULL), cuCtxGetCurrent reads the top (NULL when empty), popping an
 * empty stack is CUDA_ERROR_INVALID_CONTEXT, cuCtxDestroy pops a context that is current, and
 * the calls that need a context fail without one.  A destroyed context is
 * CUDA_ERROR_CONTEXT_IS_DESTROYED to cuCtxPushCurrent, cuCtxSetCurrent and cuCtxDestroy.
 */
#include "simtest.h"

static CUcontext current(void)
{
    CUcontext c = (CUcontext)(uintptr_t)1;
    CHECK_CU(cuCtxGetCurrent(&c));
    return c;
}

#define EXPECT_CURRENT(want)                                                                \
    do {                                                                                    \
        CUcontext got_ctx_ = current();                                                     \
        EXPECT(got_ctx_ == (want), "current context %p, expected %s (%p)", (void *)got_ctx_, \
               #want, (void *)(want));                                                      \
    } while (0)

int main(void)
{
    CUcontext primary, a, b, popped;
    CUdevice dev;
    CUdeviceptr d;
    unsigned long long ida, idb;

    CHECK_CU(cuInit(0));
    EXPECT_CURRENT(NULL);
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuMemAlloc(&d, 256));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxPopCurrent(&popped));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxSynchronize());

    CHECK_CU(cuDevicePrimaryCtxRetain(&primary, 0));
    CHECK_CU(cuCtxCreate(&a, NULL, 0, 0));
    EXPECT_CURRENT(a);
    CHECK_CU(cuCtxCreate(&b, NULL, 0, 0));
    EXPECT_CURRENT(b);
    EXPECT(a != b && a != primary, "contexts are not distinct");
    CHECK_CU(cuCtxGetId(a, &ida));
    CHECK_CU(cuCtxGetId(b, &idb));
    EXPECT(ida != idb, "contexts share id %llu", ida);
    CHECK_CU(cuCtxGetDevice(&dev));
    EXPECT(dev == 0, "device of the current context: %d", dev);

    /* Stack: a b -> pop b -> a */
    CHECK_CU(cuCtxPopCurrent(&popped));
    EXPECT(popped == b, "popped %p, expected b", (void *)popped);
    EXPECT_CURRENT(a);
    CHECK_CU(cuCtxPushCurrent(b));
    CHECK_CU(cuCtxPushCurrent(primary));
    EXPECT_CURRENT(primary);
    /* Set replaces the top: a b primary -> a b a */
    CHECK_CU(cuCtxSetCurrent(a));
    EXPECT_CURRENT(a);
    CHECK_CU(cuCtxPopCurrent(&popped));
    EXPECT(popped == a, "popped %p after set, expected a", (void *)popped);
    EXPECT_CURRENT(b);
    /* Set NULL pops: a b -> a */
    CHECK_CU(cuCtxSetCurrent(NULL));
    EXPECT_CURRENT(a);

    /* Work in a, then destroying the current context pops it: a b -> a */
    CHECK_CU(cuCtxPushCurrent(b));
    CHECK_CU(cuMemAlloc(&d, 256));
    CHECK_CU(cuMemsetD8(d, 1, 256));
    CHECK_CU(cuMemFree(d));
    CHECK_CU(cuCtxDestroy(b));
    EXPECT_CURRENT(a);
    /* Passing a destroyed context is undefined behaviour.  The simulator refuses it with the
     * driver's error for a destroyed context (the real driver pushes it, then corrupts its
     * heap at the next pop or set), and leaves the stack as it was. */
    EXPECT_CU(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuCtxPushCurrent(b));
    EXPECT_CU(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuCtxSetCurrent(b));
    EXPECT_CU(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuCtxDestroy(b));
    EXPECT_CURRENT(a);

    /* Pop to empty; set on an empty stack pushes. */
    CHECK_CU(cuCtxPopCurrent(NULL));
    EXPECT_CURRENT(NULL);
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxPopCurrent(&popped));
    CHECK_CU(cuCtxSetCurrent(NULL));
    EXPECT_CURRENT(NULL);
    CHECK_CU(cuCtxSetCurrent(primary));
    EXPECT_CURRENT(primary);
    CHECK_CU(cuCtxPopCurrent(&popped));
    EXPECT(popped == primary, "popped %p, expected the primary context", (void *)popped);
    EXPECT_CURRENT(NULL);

    CHECK_CU(cuCtxDestroy(a));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxDestroy(primary));
    CHECK_CU(cuDevicePrimaryCtxRelease(0));
    return 0;
}
