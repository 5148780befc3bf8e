/* SPDX-License-Identifier: MIT */
/*
 * launch_extra.c - cuLaunchKernel with the `extra` form: the arguments packed by the caller
 * into one buffer laid out at the offsets cuFuncGetParamInfo reports, passed with
 * CU_LAUNCH_PARAM_BUFFER_POINTER and CU_LAUNCH_PARAM_BUFFER_SIZE.  The size is the end of the
 * last parameter: one with a struct's tail padding is "arguments of the wrong size", refused
 * with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES as by the real driver.  Giving both kernelParams and
 * extra is CUDA_ERROR_INVALID_VALUE.
 */
#include <stdint.h>
#include <string.h>

#include "simtest.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry scale(.param .u32 n, .param .u64 p, .param .f32 k)\n{\n ret;\n}\n";

SIM_KERNEL void scale(const sim_launch_t *l, void **params)
{
    unsigned n = *(unsigned *)params[0];
    float *p = *(float **)params[1], k = *(float *)params[2];
    for (unsigned i = 0; i < n; i++)
        p[i] *= k;
}

int main(void)
{
    CUmodule mod;
    CUfunction f;
    CUdeviceptr d;
    float host[64];
    size_t off[3], size[3];
    unsigned char buf[64];
    unsigned n = 48;
    float k = 3.0f;

    st_setup(0);
    CHECK_CU(cuModuleLoadData(&mod, ptx));
    CHECK_CU(cuModuleGetFunction(&f, mod, "scale"));
    CHECK_CU(cuMemAlloc(&d, sizeof(host)));
    for (int i = 0; i < 64; i++)
        host[i] = (float)i;
    CHECK_CU(cuMemcpyHtoD(d, host, sizeof(host)));

    for (int i = 0; i < 3; i++)
        CHECK_CU(cuFuncGetParamInfo(f, (size_t)i, &off[i], &size[i]));
    EXPECT(off[0] == 0 && size[0] == 4 && off[1] == 8 && size[1] == 8 && off[2] == 16 &&
               size[2] == 4,
           "layout: (%zu,%zu) (%zu,%zu) (%zu,%zu)", off[0], size[0], off[1], size[1], off[2],
           size[2]);
    memset(buf, 0, sizeof(buf));
    memcpy(buf + off[0], &n, sizeof(n));
    memcpy(buf + off[1], &d, sizeof(d));
    memcpy(buf + off[2], &k, sizeof(k));
    size_t bytes = (off[2] + size[2] + 7) & ~(size_t)7;   /* as sizeof a matching struct */
    void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &bytes,
                      CU_LAUNCH_PARAM_END };
    EXPECT_CU(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
              cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, NULL, NULL, extra));
    bytes = off[2] + size[2];
    CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, NULL, NULL, extra));
    CHECK_CU(cuMemcpyDtoH(host, d, sizeof(host)));
    for (int i = 0; i < 64; i++) {
        float want = i < 48 ? 3.0f * (float)i : (float)i;
        EXPECT(host[i] == want, "host[%d] = %f, expected %f", i, host[i], want);
    }

    void *args[] = { &n, &d, &k };
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, extra));

    CHECK_CU(cuMemFree(d));
    CHECK_CU(cuModuleUnload(mod));
    return 0;
}
