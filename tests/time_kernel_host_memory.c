/* SPDX-License-Identifier: MIT */
/*
 * time_kernel_host_memory.c - a kernel that touches host memory (a VMM mapping of
 * host-located memory, or mapped pinned memory) moves those bytes over the host link: the
 * simulator charges what it reads there at the host-to-device bandwidth and what it writes at
 * the device-to-host bandwidth, while the same kernel on device memory costs its launch
 * latency.  The link is set apart (10 GB/s to the device, 20 back) so that the two directions
 * show.
 */
#include <stdlib.h>

#include "simtest.h"

#define MIB (1ull << 20)
#define BYTES (8 * MIB)

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry touch(.param .u64 src, .param .u64 dst, .param .u64 n)\n{\n ret;\n}\n";

/* touch(src, dst, n): reads n bytes at src and writes n bytes at dst (declared only). */
SIM_KERNEL void touch(const sim_launch_t *l, void **params)
{
    (void)l;
    uint64_t n = *(uint64_t *)params[2];
    sim_kernel_access(*(void **)params[0], n, SIM_ACCESS_READ);
    sim_kernel_access(*(void **)params[1], n, SIM_ACCESS_WRITE);
}

static CUfunction fn;

/* Device time (ms) of touch(src, dst, BYTES), by events. */
static double touch_ms(CUdeviceptr src, CUdeviceptr dst)
{
    CUevent a, b;
    uint64_t n = BYTES;
    void *args[] = { &src, &dst, &n };
    float ms;
    CHECK_CU(cuEventCreate(&a, 0));
    CHECK_CU(cuEventCreate(&b, 0));
    CHECK_CU(cuEventRecord(a, NULL));
    CHECK_CU(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    CHECK_CU(cuEventRecord(b, NULL));
    CHECK_CU(cuEventSynchronize(b));
    CHECK_CU(cuEventElapsedTime(&ms, a, b));
    CHECK_CU(cuEventDestroy(a));
    CHECK_CU(cuEventDestroy(b));
    return ms;
}

static void near(double got, double want, const char *what)
{
    printf("%s: %.4f ms (expected %.4f)\n", what, got, want);
    if (got < want * 0.97 || got > want * 1.03 + 0.003) {
        fprintf(stderr, "%s: %.4f ms, expected %.4f\n", what, got, want);
        exit(1);
    }
}

int main(void)
{
    if (!st_simulated())
        return TEST_SKIP;
    setenv("ELIXIR_SIM_PCIE_H2D_GBPS", "10", 1);
    setenv("ELIXIR_SIM_PCIE_D2H_GBPS", "20", 1);
    st_setup(0);
    fn = st_function(ptx, "touch");

    CUdeviceptr d1, d2, hv, va;
    CHECK_CU(cuMemAlloc(&d1, BYTES));
    CHECK_CU(cuMemAlloc(&d2, BYTES));

    /* Host-located VMM memory mapped for device 0. */
    CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                 .location = { CU_MEM_LOCATION_TYPE_HOST, 0 } };
    CUmemAccessDesc rw = { { CU_MEM_LOCATION_TYPE_DEVICE, 0 },
                           CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
    CUmemGenericAllocationHandle h;
    CHECK_CU(cuMemCreate(&h, BYTES, &prop, 0));
    CHECK_CU(cuMemAddressReserve(&va, BYTES, 0, 0, 0));
    CHECK_CU(cuMemMap(va, BYTES, 0, h, 0));
    CHECK_CU(cuMemSetAccess(va, BYTES, &rw, 1));

    /* Mapped pinned memory. */
    void *pinned;
    CHECK_CU(cuMemHostAlloc(&pinned, BYTES, CU_MEMHOSTALLOC_DEVICEMAP));
    CHECK_CU(cuMemHostGetDevicePointer(&hv, pinned, 0));

    double launch = touch_ms(d1, d2);
    printf("device memory only: %.4f ms\n", launch);
    if (launch > 0.01) {
        fprintf(stderr, "a kernel on device memory costs its launch latency: %.4f ms\n", launch);
        return 1;
    }
    double rd = BYTES / 10e9 * 1e3, wr = BYTES / 20e9 * 1e3;
    near(touch_ms(va, d2), launch + rd, "reading host-located VMM memory");
    near(touch_ms(d1, va), launch + wr, "writing host-located VMM memory");
    near(touch_ms(hv, d2), launch + rd, "reading mapped pinned memory");
    near(touch_ms(va, hv), launch + rd, "reading one host range, writing another");

    CHECK_CU(cuMemUnmap(va, BYTES));
    CHECK_CU(cuMemRelease(h));
    CHECK_CU(cuMemAddressFree(va, BYTES));
    CHECK_CU(cuMemFreeHost(pinned));
    printf("kernels touching host memory are charged its bytes over the host link\n");
    return 0;
}
