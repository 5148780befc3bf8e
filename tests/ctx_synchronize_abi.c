/* SPDX-License-Identifier: MIT */
/*
 * ctx_synchronize_abi.c - both ABIs of cuCtxSynchronize.  cuGetProcAddress("cuCtxSynchronize")
 * at CUDA 12.0 gives the original entry point (no arguments: synchronise the current context),
 * at 13.0 the new one, cuCtxSynchronize_v2, which takes the context to synchronise (NULL: the
 * current one; a destroyed one is CUDA_ERROR_CONTEXT_IS_DESTROYED).  With ELIXIR_SIM_EXEC=lazy
 * (the test re-executes itself) queued work runs only when the host waits, so each call is seen
 * to complete the work it must.
 */
#include <dlfcn.h>
#include <string.h>

#include "simchild.h"
#include "simtest.h"

typedef CUresult (*sync_v1_fn)(void);
typedef CUresult (*sync_v2_fn)(CUcontext);

static void *proc(const char *name, int version)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult st;
    CHECK_CU(cuGetProcAddress(name, &p, version, CU_GET_PROC_ADDRESS_DEFAULT, &st));
    EXPECT(p && st == CU_GET_PROC_ADDRESS_SUCCESS, "%s@%d: %p, status %d", name, version, p,
           (int)st);
    return p;
}

/* Queue a device-to-host copy of `value` into pinned memory on ctx's legacy stream. */
static void queue_copy(CUcontext ctx, CUdeviceptr d, unsigned *pinned, unsigned value)
{
    CHECK_CU(cuCtxPushCurrent(ctx));
    CHECK_CU(cuMemsetD32Async(d, value, 1, NULL));
    CHECK_CU(cuMemcpyDtoHAsync(pinned, d, 4, NULL));
    CHECK_CU(cuCtxPopCurrent(NULL));
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_SIM_EXEC=lazy", NULL };
    CUcontext a, b;
    CUdeviceptr da, db;
    unsigned *pinned;

    st_reexec(argv, env);
    CHECK_CU(cuInit(0));
    sync_v1_fn v1 = (sync_v1_fn)proc("cuCtxSynchronize", 12000);
    sync_v2_fn v2 = (sync_v2_fn)proc("cuCtxSynchronize", 13000);
    EXPECT((void *)v1 == dlsym(RTLD_DEFAULT, "cuCtxSynchronize"),
           "cuCtxSynchronize@12000 is not cuCtxSynchronize");
    EXPECT((void *)v2 == dlsym(RTLD_DEFAULT, "cuCtxSynchronize_v2"),
           "cuCtxSynchronize@13000 is not cuCtxSynchronize_v2");

    CHECK_CU(cuCtxCreate(&b, NULL, 0, 0));
    CHECK_CU(cuMemAlloc(&db, 4));
    CHECK_CU(cuMemAllocHost((void **)&pinned, 16));
    CHECK_CU(cuCtxCreate(&a, NULL, 0, 0));     /* stack: b a; current a */
    CHECK_CU(cuMemAlloc(&da, 4));

    /* The old ABI synchronises the current context. */
    memset(pinned, 0, 16);
    queue_copy(a, da, &pinned[0], 11);
    CHECK_CU(v1());
    EXPECT(pinned[0] == 11, "cuCtxSynchronize(): copy not complete (%u)", pinned[0]);

    /* The new ABI synchronises the context it is given, current or not. */
    queue_copy(b, db, &pinned[1], 22);
    CHECK_CU(v2(b));
    EXPECT(pinned[1] == 22, "cuCtxSynchronize_v2(b) from a: copy not complete (%u)", pinned[1]);
    queue_copy(a, da, &pinned[2], 33);
    CHECK_CU(v2(NULL));
    EXPECT(pinned[2] == 33, "cuCtxSynchronize_v2(NULL): copy not complete (%u)", pinned[2]);
    queue_copy(a, da, &pinned[3], 44);
    CHECK_CU(v2(a));
    EXPECT(pinned[3] == 44, "cuCtxSynchronize_v2(a): copy not complete (%u)", pinned[3]);

    CHECK_CU(cuMemFree(da));
    CHECK_CU(cuCtxDestroy(a));                 /* current is b again */
    EXPECT_CU(CUDA_ERROR_CONTEXT_IS_DESTROYED, v2(a));     /* as the real driver answers */
    CHECK_CU(cuMemFree(db));
    CHECK_CU(cuMemFreeHost(pinned));
    CHECK_CU(cuCtxDestroy(b));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, v1());
    return 0;
}
