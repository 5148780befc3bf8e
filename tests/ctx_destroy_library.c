/* SPDX-License-Identifier: MIT */
/*
 * ctx_destroy_library.c - a library is context-independent, its modules are not: it is loaded
 * into every context (cuLibraryLoadData) until it is unloaded, and cuLibraryGetModule,
 * cuKernelGetFunction and cuLibraryGetGlobal answer for the current context.  Destroying a
 * context destroys that context's module, function and globals (CUDA_ERROR_INVALID_HANDLE,
 * unknown to cuPointerGetAttribute afterwards), while the library and its CUkernel handles
 * stay: in another context they launch, and its globals start again from their initial
 * values.  Without a current context the per-context calls are CUDA_ERROR_INVALID_CONTEXT.
 */
#include "simtest.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .global .align 4 .u32 table[4] = {10, 20, 30, 40};\n"
    ".visible .entry bump(.param .u64 p, .param .u32 n)\n{\n ret;\n}\n";

SIM_KERNEL void bump(const sim_launch_t *l, void **params)
{
    unsigned *p = *(unsigned **)params[0];
    for (unsigned i = 0; i < *(unsigned *)params[1]; i++)
        p[i] += 1;
}

/* The current context's table after one launch of the CUkernel k and one of its function. */
static CUdeviceptr use(CUlibrary lib, CUkernel k, CUfunction *f, CUmodule *m)
{
    CUdeviceptr table;
    unsigned n = 4, t[4];
    size_t bytes;
    CHECK_CU(cuLibraryGetGlobal(&table, &bytes, lib, "table"));
    EXPECT(bytes == 16, "table: %zu bytes", bytes);
    CHECK_CU(cuKernelGetFunction(f, k));
    CHECK_CU(cuLibraryGetModule(m, lib));
    void *args[] = { &table, &n };
    CHECK_CU(cuLaunchKernel((CUfunction)k, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    CHECK_CU(cuLaunchKernel(*f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    CHECK_CU(cuMemcpyDtoH(t, table, sizeof(t)));
    EXPECT(t[0] == 12 && t[3] == 42, "table after two launches: %u .. %u", t[0], t[3]);
    return table;
}

int main(void)
{
    CUlibrary lib;
    CUkernel k, k2;
    CUfunction fa, fb, f;
    CUmodule ma, mb;
    CUcontext a, b, none;
    CUdeviceptr g;
    const char *name;

    CHECK_CU(cuInit(0));
    CHECK_CU(cuLibraryLoadData(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0));
    CHECK_CU(cuLibraryGetKernel(&k, lib, "bump"));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuLibraryGetGlobal(&g, NULL, lib, "table"));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuLibraryGetModule(&ma, lib));
    CHECK_CU(cuCtxCreate(&b, NULL, 0, 0));
    CHECK_CU(cuCtxCreate(&a, NULL, 0, 0));
    CUdeviceptr ta = use(lib, k, &fa, &ma);
    CHECK_CU(cuCtxDestroy(a));
    CHECK_CU(cuCtxGetCurrent(&none));
    EXPECT(none == b, "context a still current");

    /* Its module, function and global went with context a. */
    EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuFuncGetName(&name, fa));
    EXPECT_CU(CUDA_ERROR_INVALID_HANDLE, cuModuleGetFunction(&f, ma, "bump"));
    EXPECT(!st_pointer_known(ta), "the global of destroyed context a still known");

    /* The library and its kernel stay, and work in context b with b's own module. */
    CHECK_CU(cuLibraryGetKernel(&k2, lib, "bump"));
    EXPECT(k2 == k, "the library's kernel handle changed");
    CHECK_CU(cuKernelGetName(&name, k));
    CUdeviceptr tb = use(lib, k, &fb, &mb);
    CHECK_CU(cuFuncGetModule(&mb, fb));
    CHECK_CU(cuModuleGetGlobal(&g, NULL, mb, "table"));
    EXPECT(g == tb, "cuModuleGetGlobal of b's module: 0x%llx, cuLibraryGetGlobal 0x%llx",
           (unsigned long long)g, (unsigned long long)tb);

    /* The library unloaded, b's module goes too. */
    CHECK_CU(cuLibraryUnload(lib));
    EXPECT(!st_pointer_known(tb), "the global of an unloaded library still known");
    CHECK_CU(cuCtxDestroy(b));
    return 0;
}
