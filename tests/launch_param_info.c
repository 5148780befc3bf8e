/* SPDX-License-Identifier: MIT */
/*
 * launch_param_info.c - cuFuncGetParamInfo and cuKernelGetParamInfo report each parameter's
 * offset and size in the argument buffer as the PTX lays it out, including a structure passed
 * by value (.param .align 8 .b8 s[24]) and the padding before an aligned parameter; the size
 * is optional but the offset is not (a NULL paramOffset is CUDA_ERROR_INVALID_VALUE, as on the
 * real driver); an index past the last parameter is CUDA_ERROR_INVALID_VALUE, and so is a
 * CUkernel handed to cuFuncGetParamInfo (which takes a CUfunction; cuKernelGetParamInfo is the
 * CUkernel's).
 */
#include "simtest.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry with_struct(.param .u32 n, .param .align 8 .b8 s[24],\n"
    "    .param .u16 h, .param .u64 p, .param .align 16 .b8 v[32])\n{\n ret;\n}\n";

SIM_KERNEL void with_struct(const sim_launch_t *l, void **params)
{
}

static const size_t want[5][2] = { { 0, 4 }, { 8, 24 }, { 32, 2 }, { 40, 8 }, { 48, 32 } };

int main(void)
{
    CUmodule mod;
    CUfunction f;
    CUlibrary lib;
    CUkernel k;
    size_t off, size;

    st_setup(0);
    CHECK_CU(cuModuleLoadData(&mod, ptx));
    CHECK_CU(cuModuleGetFunction(&f, mod, "with_struct"));
    CHECK_CU(cuLibraryLoadData(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0));
    CHECK_CU(cuLibraryGetKernel(&k, lib, "with_struct"));

    for (size_t i = 0; i < 5; i++) {
        CHECK_CU(cuFuncGetParamInfo(f, i, &off, &size));
        EXPECT(off == want[i][0] && size == want[i][1],
               "cuFuncGetParamInfo %zu: expected offset %zu size %zu, got %zu %zu", i,
               want[i][0], want[i][1], off, size);
        CHECK_CU(cuKernelGetParamInfo(k, i, &off, &size));
        EXPECT(off == want[i][0] && size == want[i][1],
               "cuKernelGetParamInfo %zu: expected offset %zu size %zu, got %zu %zu", i,
               want[i][0], want[i][1], off, size);
    }
    CHECK_CU(cuFuncGetParamInfo(f, 1, &off, NULL));
    EXPECT(off == 8, "offset alone: %zu", off);
    CHECK_CU(cuKernelGetParamInfo(k, 1, &off, NULL));
    EXPECT(off == 8, "kernel offset alone: %zu", off);
    /* Only paramSize is optional: the real driver refuses a NULL paramOffset. */
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuFuncGetParamInfo(f, 1, NULL, &size));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuKernelGetParamInfo(k, 1, NULL, &size));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuFuncGetParamInfo(f, 5, &off, &size));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuKernelGetParamInfo(k, 5, &off, &size));
    /* A CUkernel is asked through cuKernelGetParamInfo, not in a CUfunction's place. */
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuFuncGetParamInfo((CUfunction)(void *)k, 0, &off, &size));

    CHECK_CU(cuLibraryUnload(lib));
    CHECK_CU(cuModuleUnload(mod));
    return 0;
}
