/* SPDX-License-Identifier: MIT */
/*
 * mem_host_device_pointer.c - mapped pinned memory: cuMemHostGetDevicePointer passes back the
 * device address of memory from cuMemHostAlloc(DEVICEMAP) or cuMemHostRegister(DEVICEMAP).
 * The simulated device reports CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, so it equals the host
 * pointer (interior addresses too), and a kernel writing through it is seen by the host after
 * synchronisation.  Flags must be 0; memory that is not pinned is CUDA_ERROR_INVALID_VALUE.
 */
#include "memtest.h"

#define WORDS 1024

int main(void)
{
    uint32_t *mapped, *reg, *plain;
    CUdeviceptr d;
    int same;

    st_setup(0);
    CHECK_CU(cuDeviceGetAttribute(&same, CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM,
                                  0));
    EXPECT(same == 1, "CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM is %d", same);

    CHECK_CU(cuMemHostAlloc((void **)&mapped, WORDS * 4, CU_MEMHOSTALLOC_DEVICEMAP));
    CHECK_CU(cuMemHostGetDevicePointer(&d, mapped, 0));
    EXPECT(d == (CUdeviceptr)(uintptr_t)mapped, "device pointer 0x%llx for host %p",
           (unsigned long long)d, (void *)mapped);
    CHECK_CU(cuMemHostGetDevicePointer(&d, mapped + 10, 0));
    EXPECT(d == (CUdeviceptr)(uintptr_t)(mapped + 10), "interior device pointer 0x%llx",
           (unsigned long long)d);
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemHostGetDevicePointer(&d, mapped, 1));

    /* A kernel writes the host memory through the device pointer. */
    CHECK_CU(cuMemHostGetDevicePointer(&d, mapped, 0));
    CHECK_CU(mt_fill_async(d, WORDS, 0xfeedu, NULL));
    CHECK_CU(cuCtxSynchronize());
    for (int i = 0; i < WORDS; i++)
        EXPECT(mapped[i] == 0xfeedu, "mapped[%d] = 0x%x after the kernel", i, mapped[i]);

    EXPECT(posix_memalign((void **)&reg, 4096, WORDS * 4) == 0, "posix_memalign");
    CHECK_CU(cuMemHostRegister(reg, WORDS * 4, CU_MEMHOSTREGISTER_DEVICEMAP));
    CHECK_CU(cuMemHostGetDevicePointer(&d, reg, 0));
    EXPECT(d == (CUdeviceptr)(uintptr_t)reg, "registered: device pointer 0x%llx for %p",
           (unsigned long long)d, (void *)reg);
    CHECK_CU(mt_fill_async(d, WORDS, 0xbeefu, NULL));
    CHECK_CU(cuCtxSynchronize());
    EXPECT(reg[WORDS - 1] == 0xbeefu, "registered memory after the kernel: 0x%x", reg[WORDS - 1]);
    CHECK_CU(cuMemHostUnregister(reg));

    plain = malloc(WORDS * 4);
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemHostGetDevicePointer(&d, plain, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemHostGetDevicePointer(&d, reg, 0));
    free(plain);
    free(reg);
    CHECK_CU(cuMemFreeHost(mapped));
    return 0;
}
