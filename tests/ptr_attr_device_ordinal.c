/* SPDX-License-Identifier: MIT */
/*
 * ptr_attr_device_ordinal.c - on a two-device machine (ELIXIR_SIM_DEVICES=2, the test
 * re-executes itself) CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL is "the device against which the
 * memory was allocated or registered", whichever context is current when asking: device
 * memory, pinned memory and registered memory allocated under device 1 report 1, those of
 * device 0 report 0, and the CONTEXT attribute names the allocating context.
 */
#include "memtest.h"
#include "simchild.h"

static int ordinal(const void *p)
{
    int v = -1;
    CHECK_CU(cuPointerGetAttribute(&v, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                   (CUdeviceptr)(uintptr_t)p));
    return v;
}

static CUcontext context_of(const void *p)
{
    CUcontext c = NULL;
    CHECK_CU(cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, (CUdeviceptr)(uintptr_t)p));
    return c;
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_SIM_DEVICES=2", NULL };
    CUcontext c0, c1;
    CUdeviceptr d0, d1;
    void *h0, *h1;
    char *reg;

    st_reexec(argv, env);
    c0 = st_setup(0);
    CHECK_CU(cuDevicePrimaryCtxRetain(&c1, 1));
    CHECK_CU(cuMemAlloc(&d0, 4096));
    CHECK_CU(cuMemHostAlloc(&h0, 4096, 0));
    CHECK_CU(cuCtxSetCurrent(c1));
    CHECK_CU(cuMemAlloc(&d1, 4096));
    CHECK_CU(cuMemHostAlloc(&h1, 4096, CU_MEMHOSTALLOC_PORTABLE));
    EXPECT(posix_memalign((void **)&reg, 4096, 4096) == 0, "posix_memalign");
    CHECK_CU(cuMemHostRegister(reg, 4096, 0));

    for (int round = 0; round < 2; round++) {
        CHECK_CU(cuCtxSetCurrent(round ? c1 : c0));
        EXPECT(ordinal((void *)(uintptr_t)d0) == 0, "device memory of device 0: %d",
               ordinal((void *)(uintptr_t)d0));
        EXPECT(ordinal((void *)(uintptr_t)d1) == 1, "device memory of device 1: %d",
               ordinal((void *)(uintptr_t)d1));
        EXPECT(ordinal(h0) == 0, "pinned memory of device 0: %d", ordinal(h0));
        EXPECT(ordinal(h1) == 1, "pinned memory of device 1: %d", ordinal(h1));
        EXPECT(ordinal(reg) == 1, "registered under device 1: %d", ordinal(reg));
        EXPECT(context_of((void *)(uintptr_t)d1) == c1 && context_of(h0) == c0,
               "allocating contexts");
    }
    CHECK_CU(cuCtxSetCurrent(c1));
    CHECK_CU(cuMemHostUnregister(reg));
    CHECK_CU(cuMemFreeHost(h1));
    CHECK_CU(cuMemFree(d1));
    CHECK_CU(cuCtxSetCurrent(c0));
    CHECK_CU(cuMemFreeHost(h0));
    CHECK_CU(cuMemFree(d0));
    free(reg);
    return 0;
}
