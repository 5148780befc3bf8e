/* SPDX-License-Identifier: MIT */
/*
 * launch_library_kernel.c - context-independent loading: cuLibraryLoadData, cuLibraryGetKernel,
 * launching the CUkernel cast to a CUfunction, and launching the CUfunction that
 * cuKernelGetFunction returns for the current context.  An unknown kernel name is
 * CUDA_ERROR_NOT_FOUND.
 */
#include "simtest.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry add_to(.param .u64 p, .param .u32 v)\n{\n ret;\n}\n"
    ".visible .entry unused_entry(.param .u64 p)\n{\n ret;\n}\n";

SIM_KERNEL void add_to(const sim_launch_t *l, void **params)
{
    unsigned *p = *(unsigned **)params[0];
    p[0] += *(unsigned *)params[1];
}

SIM_KERNEL void unused_entry(const sim_launch_t *l, void **params)
{
}

int main(void)
{
    CUlibrary lib;
    CUkernel k, k2;
    CUfunction f;
    CUdeviceptr d;
    unsigned v = 5, got, count;

    CHECK_CU(cuInit(0));
    CHECK_CU(cuLibraryLoadData(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0));   /* no context yet */
    st_setup(0);
    CHECK_CU(cuLibraryGetKernelCount(&count, lib));
    EXPECT(count == 2, "kernel count %u", count);
    CHECK_CU(cuLibraryGetKernel(&k, lib, "add_to"));
    CHECK_CU(cuLibraryGetKernel(&k2, lib, "add_to"));
    EXPECT(k == k2, "the same name gave two kernels");
    EXPECT_CU(CUDA_ERROR_NOT_FOUND, cuLibraryGetKernel(&k2, lib, "no_such_kernel"));
    CHECK_CU(cuMemAlloc(&d, 4));
    CHECK_CU(cuMemsetD32(d, 100, 1));

    void *args[] = { &d, &v };
    CHECK_CU(cuLaunchKernel((CUfunction)k, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    CHECK_CU(cuKernelGetFunction(&f, k));
    v = 20;
    CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    CHECK_CU(cuMemcpyDtoH(&got, d, 4));
    EXPECT(got == 125, "after both launches: expected 125, got %u", got);

    CHECK_CU(cuMemFree(d));
    CHECK_CU(cuLibraryUnload(lib));
    return 0;
}
