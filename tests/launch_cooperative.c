/* SPDX-License-Identifier: MIT */
/*
 * launch_cooperative.c - cuLaunchCooperativeKernel runs the kernel with its arguments and
 * geometry, in stream order with other work on the stream, and rejects bad dimensions.
 */
#include "simtest.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry count_blocks(.param .u64 p)\n{\n ret;\n}\n";

SIM_KERNEL void count_blocks(const sim_launch_t *l, void **params)
{
    unsigned *p = *(unsigned **)params[0];
    p[0] += l->grid[0] * l->grid[1] * l->grid[2];
}

int main(void)
{
    CUmodule mod;
    CUfunction f;
    CUstream s;
    CUdeviceptr d;
    unsigned got;
    int supported;

    st_setup(0);
    CHECK_CU(cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 0));
    EXPECT(supported == 1, "CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH is %d", supported);
    CHECK_CU(cuModuleLoadData(&mod, ptx));
    CHECK_CU(cuModuleGetFunction(&f, mod, "count_blocks"));
    CHECK_CU(cuMemAlloc(&d, 4));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemsetD32Async(d, 10, 1, s));

    void *args[] = { &d };
    CHECK_CU(cuLaunchCooperativeKernel(f, 4, 2, 1, 128, 1, 1, 0, s, args));
    CHECK_CU(cuLaunchCooperativeKernel(f, 3, 1, 1, 64, 1, 1, 0, s, args));
    CHECK_CU(cuMemcpyDtoHAsync(&got, d, 4, s));
    CHECK_CU(cuStreamSynchronize(s));
    EXPECT(got == 10 + 8 + 3, "blocks counted: expected 21, got %u", got);
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuLaunchCooperativeKernel(f, 1, 1, 1, 2048, 1, 1, 0, s,
                                                                  args));

    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuMemFree(d));
    CHECK_CU(cuModuleUnload(mod));
    return 0;
}
