/* SPDX-License-Identifier: MIT */
/*
 * launch_module_global.c - cuModuleGetGlobal finds a module's .global variable: its device
 * address and declared size, its initial value from the PTX initialiser (and zero for one
 * without), memory that copies and kernels can use like any device memory.  An unknown name is
 * CUDA_ERROR_NOT_FOUND.  cuLibraryGetGlobal does the same for a library.
 */
#include <stdint.h>

#include "simtest.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .global .align 4 .u32 table[4] = {10, 20, 30, 40};\n"
    ".visible .global .align 8 .f64 scale = 0d4004000000000000;\n"
    ".visible .global .align 4 .b8 zeros[12];\n"
    ".visible .entry bump(.param .u64 p, .param .u32 n)\n{\n ret;\n}\n";

SIM_KERNEL void bump(const sim_launch_t *l, void **params)
{
    uint32_t *p = *(uint32_t **)params[0];
    for (unsigned i = 0; i < *(unsigned *)params[1]; i++)
        p[i] += 1;
}

int main(void)
{
    CUmodule mod;
    CUfunction f;
    CUlibrary lib;
    CUdeviceptr table, scale, zeros, ltable, missing;
    size_t bytes;
    uint32_t t[4];
    double sc;
    unsigned char z[12];

    st_setup(0);
    CHECK_CU(cuModuleLoadData(&mod, ptx));
    CHECK_CU(cuModuleGetFunction(&f, mod, "bump"));
    CHECK_CU(cuModuleGetGlobal(&table, &bytes, mod, "table"));
    EXPECT(bytes == 16, "table: %zu bytes", bytes);
    CHECK_CU(cuModuleGetGlobal(&scale, &bytes, mod, "scale"));
    EXPECT(bytes == 8 && scale % 8 == 0, "scale: %zu bytes at 0x%llx", bytes,
           (unsigned long long)scale);
    CHECK_CU(cuModuleGetGlobal(&zeros, NULL, mod, "zeros"));
    /* What a failed lookup leaves in its outputs is unspecified: keep `table` out of it. */
    EXPECT_CU(CUDA_ERROR_NOT_FOUND, cuModuleGetGlobal(&missing, &bytes, mod, "nothing"));

    CHECK_CU(cuMemcpyDtoH(t, table, sizeof(t)));
    EXPECT(t[0] == 10 && t[1] == 20 && t[2] == 30 && t[3] == 40, "table: %u %u %u %u", t[0],
           t[1], t[2], t[3]);
    CHECK_CU(cuMemcpyDtoH(&sc, scale, sizeof(sc)));
    EXPECT(sc == 2.5, "scale: %f", sc);
    CHECK_CU(cuMemcpyDtoH(z, zeros, sizeof(z)));
    for (int i = 0; i < 12; i++)
        EXPECT(z[i] == 0, "zeros[%d] = %u", i, z[i]);

    unsigned n = 4;
    void *args[] = { &table, &n };
    CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    CHECK_CU(cuMemcpyDtoH(t, table, sizeof(t)));
    EXPECT(t[0] == 11 && t[3] == 41, "after the kernel: %u .. %u", t[0], t[3]);

    CHECK_CU(cuLibraryLoadData(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0));
    CHECK_CU(cuLibraryGetGlobal(&ltable, &bytes, lib, "table"));
    EXPECT(bytes == 16 && ltable != table, "library table: %zu bytes, same address as module's",
           bytes);
    CHECK_CU(cuMemcpyDtoH(t, ltable, sizeof(t)));
    EXPECT(t[0] == 10 && t[3] == 40, "library table: %u .. %u", t[0], t[3]);

    CHECK_CU(cuLibraryUnload(lib));
    CHECK_CU(cuModuleUnload(mod));
    return 0;
}
