/* SPDX-License-Identifier: MIT */
/*
 * launch_func_name.c - cuFuncGetName returns the entry's name for a module function, for the
 * CUfunction of a library kernel and for the CUkernel itself (cuKernelGetName); a NULL output
 * or a NULL function is CUDA_ERROR_INVALID_VALUE ("If either **name or hfunc is NULL").
 */
#include <string.h>

#include "simtest.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry first_kernel(.param .u64 p)\n{\n ret;\n}\n"
    ".visible .entry second_kernel()\n{\n ret;\n}\n";

SIM_KERNEL void first_kernel(const sim_launch_t *l, void **params)
{
}

SIM_KERNEL void second_kernel(const sim_launch_t *l, void **params)
{
}

static void expect_name(const char *got, const char *want, const char *what)
{
    EXPECT(got && strcmp(got, want) == 0, "%s: expected \"%s\", got \"%s\"", what, want,
           got ? got : "(null)");
}

int main(void)
{
    CUmodule mod;
    CUfunction f1, f2, kf;
    CUlibrary lib;
    CUkernel k;
    const char *name = NULL;

    st_setup(0);
    CHECK_CU(cuModuleLoadData(&mod, ptx));
    CHECK_CU(cuModuleGetFunction(&f1, mod, "first_kernel"));
    CHECK_CU(cuModuleGetFunction(&f2, mod, "second_kernel"));
    CHECK_CU(cuFuncGetName(&name, f1));
    expect_name(name, "first_kernel", "module function 1");
    CHECK_CU(cuFuncGetName(&name, f2));
    expect_name(name, "second_kernel", "module function 2");

    CHECK_CU(cuLibraryLoadData(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0));
    CHECK_CU(cuLibraryGetKernel(&k, lib, "second_kernel"));
    CHECK_CU(cuKernelGetFunction(&kf, k));
    CHECK_CU(cuFuncGetName(&name, kf));
    expect_name(name, "second_kernel", "library kernel's function");
    CHECK_CU(cuKernelGetName(&name, k));
    expect_name(name, "second_kernel", "cuKernelGetName");

    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuFuncGetName(NULL, f1));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuFuncGetName(&name, NULL));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuKernelGetName(NULL, k));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuKernelGetName(&name, NULL));

    CHECK_CU(cuLibraryUnload(lib));
    CHECK_CU(cuModuleUnload(mod));
    return 0;
}
