/* SPDX-License-Identifier: MIT */
/*
 * launch_ex_config.c - cuLaunchKernelEx takes grid, block, dynamic shared memory and stream
 * from a CUlaunchConfig (with or without launch attributes) and the arguments in either form;
 * a config that claims attributes without an array, or no config, is
 * CUDA_ERROR_INVALID_VALUE.
 */
#include <string.h>

#include "simtest.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry geometry(.param .u64 out, .param .u32 tag)\n{\n ret;\n}\n";

SIM_KERNEL void geometry(const sim_launch_t *l, void **params)
{
    unsigned *out = *(unsigned **)params[0];
    out[0] = l->grid[0];
    out[1] = l->grid[1];
    out[2] = l->grid[2];
    out[3] = l->block[0];
    out[4] = l->block[1];
    out[5] = l->block[2];
    out[6] = l->shared_bytes;
    out[7] = *(unsigned *)params[1];
}

static void expect_geometry(CUdeviceptr d, const unsigned want[8], const char *what)
{
    unsigned got[8];
    CHECK_CU(cuMemcpyDtoH(got, d, sizeof(got)));
    for (int i = 0; i < 8; i++)
        EXPECT(got[i] == want[i], "%s: field %d is %u, expected %u", what, i, got[i], want[i]);
}

int main(void)
{
    CUmodule mod;
    CUfunction f;
    CUstream s;
    CUdeviceptr d;
    unsigned tag = 77;
    CUlaunchConfig cfg;
    CUlaunchAttribute attr[2];

    st_setup(0);
    CHECK_CU(cuModuleLoadData(&mod, ptx));
    CHECK_CU(cuModuleGetFunction(&f, mod, "geometry"));
    CHECK_CU(cuMemAlloc(&d, 64));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_DEFAULT));

    memset(&cfg, 0, sizeof(cfg));
    cfg.gridDimX = 5;
    cfg.gridDimY = 6;
    cfg.gridDimZ = 7;
    cfg.blockDimX = 8;
    cfg.blockDimY = 4;
    cfg.blockDimZ = 2;
    cfg.sharedMemBytes = 4096;
    cfg.hStream = s;
    void *args[] = { &d, &tag };
    CHECK_CU(cuLaunchKernelEx(&cfg, f, args, NULL));
    CHECK_CU(cuStreamSynchronize(s));
    const unsigned want1[8] = { 5, 6, 7, 8, 4, 2, 4096, 77 };
    expect_geometry(d, want1, "no attributes");

    memset(attr, 0, sizeof(attr));
    attr[0].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attr[0].value.cooperative = 1;
    attr[1].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
    attr[1].value.priority = 0;
    cfg.attrs = attr;
    cfg.numAttrs = 2;
    cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.hStream = NULL;
    tag = 78;
    size_t bytes = 12;      /* the parameters' end, without tail padding */
    unsigned char buf[12];
    memcpy(buf, &d, 8);
    memcpy(buf + 8, &tag, 4);
    void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &bytes,
                      CU_LAUNCH_PARAM_END };
    CHECK_CU(cuLaunchKernelEx(&cfg, f, NULL, extra));
    const unsigned want2[8] = { 5, 1, 1, 8, 4, 2, 4096, 78 };
    expect_geometry(d, want2, "with attributes, extra form, legacy stream");

    cfg.attrs = NULL;
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuLaunchKernelEx(&cfg, f, args, NULL));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuLaunchKernelEx(NULL, f, args, NULL));

    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuMemFree(d));
    CHECK_CU(cuModuleUnload(mod));
    return 0;
}
