/* SPDX-License-Identifier: MIT */
/*
 * mem_module_globals.c - a module's .global variables live in device memory of the module's
 * context: they are charged to the device while the module is loaded and given back by
 * cuModuleUnload, every time (loading and unloading in a loop does not leak).  They are not
 * cuMemAlloc memory, so cuMemFree refuses them; cuMemGetAddressRange finds them.
 */
#include "memtest.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .global .align 8 .b8 big[3145728];\n"
    ".visible .global .align 4 .u32 small[4] = {1, 2, 3, 4};\n";

int main(void)
{
    CUmodule m;
    CUdeviceptr g, base;
    size_t bytes, size;

    st_setup(0);
    size_t used = mt_used();
    for (int i = 0; i < 50; i++) {
        CHECK_CU(cuModuleLoadData(&m, ptx));
        CHECK_CU(cuModuleGetGlobal(&g, &bytes, m, "big"));
        EXPECT(bytes == 3 * MT_MIB, "size of big: %zu", bytes);
        EXPECT(mt_used() >= used + 3 * MT_MIB, "globals not charged: %zu in use", mt_used());
        CHECK_CU(cuMemGetAddressRange(&base, &size, g + 100));
        EXPECT(base == g && size >= 3 * MT_MIB, "range of big: 0x%llx+%zu",
               (unsigned long long)base, size);
        EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFree(g));
        CHECK_CU(cuModuleUnload(m));
        EXPECT(mt_used() == used, "after unloading module %d: %zu in use, %zu before", i,
               mt_used(), used);
    }
    return 0;
}
