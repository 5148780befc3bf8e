/* SPDX-License-Identifier: MIT */
/*
 * ctx_destroy_modules.c - a module lives as long as the context it was loaded in
 * (cuFuncGetModule: "The lifetime of the module corresponds to the lifetime of the context it
 * was loaded in or until the module is explicitly unloaded"), and destroying a context
 * destroys its CUmodule and CUfunction handles (cuCtxDestroy).  After cuCtxDestroy, and after
 * cuDevicePrimaryCtxReset of the primary context, the module's handle and its function's are
 * CUDA_ERROR_INVALID_HANDLE, as an unloaded module's, and its globals are freed: unknown to
 * cuPointerGetAttribute and no longer counted by cuMemGetInfo.  The same image loads again.
 */
#include "simtest.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .global .align 4 .u32 table[4] = {10, 20, 30, 40};\n"
    ".visible .global .align 4 .b8 big[8388608];\n"
    ".visible .entry bump(.param .u64 p, .param .u32 n)\n{\n ret;\n}\n";

SIM_KERNEL void bump(const sim_launch_t *l, void **params)
{
    unsigned *p = *(unsigned **)params[0];
    for (unsigned i = 0; i < *(unsigned *)params[1]; i++)
        p[i] += 1;
}

typedef struct loaded {
    CUmodule mod;
    CUfunction f;
    CUdeviceptr table, big;
} loaded_t;

/* Load the module into the current context and run its kernel once on its global. */
static loaded_t load(void)
{
    loaded_t l;
    unsigned n = 4, t[4];
    CHECK_CU(cuModuleLoadData(&l.mod, ptx));
    CHECK_CU(cuModuleGetFunction(&l.f, l.mod, "bump"));
    CHECK_CU(cuModuleGetGlobal(&l.table, NULL, l.mod, "table"));
    CHECK_CU(cuModuleGetGlobal(&l.big, NULL, l.mod, "big"));
    void *args[] = { &l.table, &n };
    CHECK_CU(cuLaunchKernel(l.f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    CHECK_CU(cuMemcpyDtoH(t, l.table, sizeof(t)));
    EXPECT(t[0] == 11 && t[3] == 41, "kernel on the global: %u .. %u", t[0], t[3]);
    return l;
}

/* Everything of l is gone; checked before anything new is loaded (a new module may be given
 * a destroyed one's handle). */
static void check_gone(const loaded_t *l, size_t before, const char *how)
{
    CUfunction f;
    CUdeviceptr g;
    CUmodule m;
    const char *name;
    unsigned n = 4;
    void *args[] = { (void *)&l->table, &n };

    fprintf(stderr, "after %s\n", how);
    EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuModuleGetFunction(&f, l->mod, "bump"));
    EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuModuleGetGlobal(&g, NULL, l->mod, "table"));
    EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuFuncGetName(&name, l->f));
    EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuFuncGetModule(&m, l->f));
    EXPECT_CU(CUDA_ERROR_INVALID_HANDLE,
              cuLaunchKernel(l->f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuModuleUnload(l->mod));
    EXPECT(!st_pointer_known(l->table), "a global of the destroyed module still known");
    EXPECT(!st_pointer_known(l->big), "a global of the destroyed module still known");
    EXPECT(st_free_mem() >= before, "the destroyed module's globals still counted");
}

static void created_context(void)
{
    CUcontext a, b;
    CHECK_CU(cuCtxCreate(&b, NULL, 0, 0));
    size_t before = st_free_mem();
    CHECK_CU(cuCtxCreate(&a, NULL, 0, 0));
    loaded_t l = load();
    EXPECT(st_free_mem() < before, "the module's globals not counted");
    CHECK_CU(cuCtxDestroy(a));
    CHECK_CU(cuCtxSetCurrent(b));
    check_gone(&l, before, "cuCtxDestroy");
    loaded_t again = load();
    CHECK_CU(cuModuleUnload(again.mod));
    CHECK_CU(cuCtxDestroy(b));
}

static void primary_context(void)
{
    CUcontext p;
    CHECK_CU(cuDevicePrimaryCtxRetain(&p, 0));
    CHECK_CU(cuCtxSetCurrent(p));
    size_t before = st_free_mem();
    loaded_t l = load();
    CHECK_CU(cuDevicePrimaryCtxReset(0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&p, 0));
    CHECK_CU(cuCtxSetCurrent(p));
    check_gone(&l, before, "cuDevicePrimaryCtxReset");
    loaded_t again = load();
    CHECK_CU(cuModuleUnload(again.mod));
    CHECK_CU(cuDevicePrimaryCtxRelease(0));
}

int main(void)
{
    CHECK_CU(cuInit(0));
    created_context();
    primary_context();
    return 0;
}
