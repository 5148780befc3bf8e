/* SPDX-License-Identifier: MIT */
/*
 * mem_memory_option.c - ELIXIR_SIM_MEMORY sets the memory of each simulated device: with 256M
 * cuDeviceTotalMem and cuMemGetInfo report 256 MiB and cuMemAlloc stops there.  The test
 * re-executes itself with the variable set.
 */
#include "memtest.h"
#include "simchild.h"

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_SIM_MEMORY=256M", NULL };
    size_t total, free_bytes;
    CUdeviceptr d, x;

    st_reexec(argv, env);
    st_setup(0);
    CHECK_CU(cuDeviceTotalMem(&total, 0));
    EXPECT(total == 256 * MT_MIB, "cuDeviceTotalMem: expected %llu, got %zu", 256 * MT_MIB, total);
    CHECK_CU(cuMemGetInfo(&free_bytes, &total));
    EXPECT(total == 256 * MT_MIB && free_bytes == total, "cuMemGetInfo: free %zu, total %zu",
           free_bytes, total);
    EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&x, 256 * MT_MIB + 1));
    CHECK_CU(cuMemAlloc(&d, 256 * MT_MIB));
    EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&x, 1));
    CHECK_CU(cuMemFree(d));
    return 0;
}
