/* SPDX-License-Identifier: MIT */
/*
 * ctx_destroy_registered.c - host memory registered with cuMemHostRegister is a resource of
 * the context that registered it, portable or not (CU_MEMHOSTREGISTER_PORTABLE only makes
 * other contexts take it as pinned too): destroying that context (cuCtxDestroy, or
 * cuDevicePrimaryCtxReset of the primary context) unregisters the range.  Afterwards it is
 * unknown to cuPointerGetAttribute, CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED to unregister, and
 * can be registered again.
 */
#include <stdlib.h>

#include "simtest.h"

#define LEN (1u << 20)

/* Register two buffers in the current context, one of them portable. */
static void register_both(void *plain, void *portable)
{
    CHECK_CU(cuMemHostRegister(plain, LEN, 0));
    CHECK_CU(cuMemHostRegister(portable, LEN, CU_MEMHOSTREGISTER_PORTABLE));
    EXPECT(st_pointer_known((CUdeviceptr)(uintptr_t)plain), "registration unknown");
    EXPECT(st_pointer_known((CUdeviceptr)(uintptr_t)portable), "registration unknown");
}

/* Both registrations are gone; they can be made again, in the current context. */
static void check_gone(void *plain, void *portable, const char *how)
{
    fprintf(stderr, "after %s\n", how);
    EXPECT(!st_pointer_known((CUdeviceptr)(uintptr_t)plain),
           "registration of a destroyed context still known");
    EXPECT(!st_pointer_known((CUdeviceptr)(uintptr_t)portable),
           "portable registration of a destroyed context still known");
    EXPECT_CU(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, cuMemHostUnregister(plain));
    CHECK_CU(cuMemHostRegister(plain, LEN, 0));
    CHECK_CU(cuMemHostRegister(portable, LEN, CU_MEMHOSTREGISTER_PORTABLE));
    CHECK_CU(cuMemHostUnregister(plain));
    CHECK_CU(cuMemHostUnregister(portable));
}

int main(void)
{
    CUcontext a, b, p;
    void *plain = aligned_alloc(4096, LEN), *portable = aligned_alloc(4096, LEN);

    EXPECT(plain && portable, "out of memory");
    CHECK_CU(cuInit(0));
    CHECK_CU(cuCtxCreate(&b, NULL, 0, 0));
    CHECK_CU(cuCtxCreate(&a, NULL, 0, 0));
    register_both(plain, portable);
    CHECK_CU(cuCtxDestroy(a));
    CHECK_CU(cuCtxSetCurrent(b));
    check_gone(plain, portable, "cuCtxDestroy");

    CHECK_CU(cuDevicePrimaryCtxRetain(&p, 0));
    CHECK_CU(cuCtxSetCurrent(p));
    register_both(plain, portable);
    CHECK_CU(cuDevicePrimaryCtxReset(0));
    CHECK_CU(cuCtxSetCurrent(b));
    check_gone(plain, portable, "cuDevicePrimaryCtxReset");

    CHECK_CU(cuDevicePrimaryCtxRelease(0));
    CHECK_CU(cuCtxDestroy(b));
    free(plain);
    free(portable);
    return 0;
}
