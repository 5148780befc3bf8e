/* SPDX-License-Identifier: MIT */
/*
 * launch_bad_dims.c - launches outside the device's limits fail with CUDA_ERROR_INVALID_VALUE
 * and run nothing: a zero grid or block dimension, more than 1024 threads per block, a block
 * z above 64, a grid y above 65535, more dynamic shared memory than the function allows:
 * CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK until cuFuncSetAttribute raises
 * CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, at most to the device's opt-in limit.  The
 * largest legal shapes launch.
 */
#include "simtest.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry tick(.param .u64 p)\n{\n ret;\n}\n";

SIM_KERNEL void tick(const sim_launch_t *l, void **params)
{
    unsigned *p = *(unsigned **)params[0];
    p[0]++;
}

static CUfunction f;
static CUdeviceptr d;

static CUresult launch(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                       unsigned bz, unsigned shared)
{
    void *args[] = { &d };
    return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, NULL, args, NULL);
}

int main(void)
{
    CUmodule mod;
    unsigned runs;
    int max_shared, per_block, limit;

    st_setup(0);
    CHECK_CU(cuModuleLoadData(&mod, ptx));
    CHECK_CU(cuModuleGetFunction(&f, mod, "tick"));
    CHECK_CU(cuMemAlloc(&d, 4));
    CHECK_CU(cuMemsetD32(d, 0, 1));
    CHECK_CU(cuDeviceGetAttribute(&max_shared,
                                  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 0));
    CHECK_CU(cuDeviceGetAttribute(&per_block, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
                                  0));
    CHECK_CU(cuFuncGetAttribute(&limit, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f));
    EXPECT(limit == per_block, "default dynamic shared limit %d, expected %d", limit, per_block);

    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, launch(0, 1, 1, 1, 1, 1, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, launch(1, 0, 1, 1, 1, 1, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, launch(1, 1, 1, 0, 1, 1, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, launch(1, 1, 1, 1025, 1, 1, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, launch(1, 1, 1, 32, 32, 2, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, launch(1, 1, 1, 1, 1, 65, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, launch(1, 65536, 1, 1, 1, 1, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, launch(1, 1, 65536, 1, 1, 1, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, launch(1, 1, 1, 1, 1, 1, (unsigned)per_block + 1));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
              cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 max_shared + 1));
    CHECK_CU(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, max_shared));
    CHECK_CU(cuFuncGetAttribute(&limit, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f));
    EXPECT(limit == max_shared, "raised dynamic shared limit %d, expected %d", limit,
           max_shared);
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, launch(1, 1, 1, 1, 1, 1, (unsigned)max_shared + 1));

    CHECK_CU(launch(2147483647u, 65535, 65535, 1024, 1, 1, 0));
    CHECK_CU(launch(1, 1, 1, 16, 1, 64, (unsigned)max_shared));
    CHECK_CU(cuMemcpyDtoH(&runs, d, 4));
    EXPECT(runs == 2, "kernel runs: expected 2 (only the legal launches), got %u", runs);

    CHECK_CU(cuMemFree(d));
    CHECK_CU(cuModuleUnload(mod));
    return 0;
}
