/* SPDX-License-Identifier: MIT */
/*
 * time_engines.c - the virtual clock's engines: operations on different streams that need
 * different engines (host-to-device copy, device-to-host copy, compute) overlap in virtual
 * time, while operations that need the same engine run one after the other even on
 * independent streams.  The two copy directions share the host link's duplex limit (36 GB/s
 * together on the default machine; time_pcie_duplex checks it in detail): beside a
 * host-to-device copy at 25 GB/s, one device-to-host gets the 11 GB/s left.
 */
#include "simtest.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry busy(.param .f64 flops)\n{\n ret;\n}\n";

SIM_KERNEL void busy(const sim_launch_t *l, void **params)
{
    sim_kernel_cost(*(double *)params[0], 0);
}

#define BYTES (64u << 20)
static const double copy_ms = BYTES / 25e9 * 1e3;    /* 2.684 ms */
static const double kernel_ms = 1.002;               /* 51e9 flops + 2 us launch */
/* 11 GB/s while the first copy runs, 25 GB/s after it */
#define BESIDE_MS (copy_ms + (BYTES - 11e6 * copy_ms) / 25e6)

static CUfunction fn;
static CUdeviceptr dev[2];
static void *pinned[2];
static CUstream s[2];
static CUevent start, end[2];

enum work { H2D, D2H, KERNEL };

static void submit(int i, int what)
{
    double flops = 51e9;
    void *args[] = { &flops };
    if (what == H2D)
        CHECK_CU(cuMemcpyHtoDAsync(dev[i], pinned[i], BYTES, s[i]));
    else if (what == D2H)
        CHECK_CU(cuMemcpyDtoHAsync(pinned[i], dev[i], BYTES, s[i]));
    else
        CHECK_CU(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s[i], args, NULL));
}

/* Start `w0` on stream 0 and `w1` on stream 1 together; return when each ended (ms). */
static void pair(int w0, int w1, float out[2])
{
    CHECK_CU(cuEventRecord(start, s[0]));
    CHECK_CU(cuStreamWaitEvent(s[1], start, 0));
    submit(0, w0);
    submit(1, w1);
    for (int i = 0; i < 2; i++)
        CHECK_CU(cuEventRecord(end[i], s[i]));
    CHECK_CU(cuCtxSynchronize());
    for (int i = 0; i < 2; i++)
        CHECK_CU(cuEventElapsedTime(&out[i], start, end[i]));
}

static void near(float got, double want, const char *what)
{
    EXPECT(got >= want * 0.999 && got <= want * 1.001 + 0.01, "%s: expected %.4f ms, got %.4f",
           what, want, got);
}

int main(void)
{
    CUmodule mod;
    float t[2];

    st_setup(0);
    CHECK_CU(cuModuleLoadData(&mod, ptx));
    CHECK_CU(cuModuleGetFunction(&fn, mod, "busy"));
    for (int i = 0; i < 2; i++) {
        CHECK_CU(cuMemAlloc(&dev[i], BYTES));
        CHECK_CU(cuMemAllocHost(&pinned[i], BYTES));
        CHECK_CU(cuStreamCreate(&s[i], CU_STREAM_NON_BLOCKING));
        CHECK_CU(cuEventCreate(&end[i], CU_EVENT_DEFAULT));
    }
    CHECK_CU(cuEventCreate(&start, CU_EVENT_DEFAULT));

    pair(H2D, D2H, t);
    near(t[0], copy_ms, "H2D beside D2H");
    near(t[1], BESIDE_MS, "D2H beside H2D (overlaps, within the duplex limit)");
    pair(H2D, H2D, t);
    near(t[0], copy_ms, "first of two H2D");
    near(t[1], 2 * copy_ms, "second of two H2D (waits for the engine)");
    pair(KERNEL, H2D, t);
    near(t[0], kernel_ms, "kernel beside H2D");
    near(t[1], copy_ms, "H2D beside a kernel (overlaps)");
    pair(KERNEL, KERNEL, t);
    near(t[0], kernel_ms, "first of two kernels");
    near(t[1], 2 * kernel_ms, "second of two kernels (waits for the compute engine)");

    for (int i = 0; i < 2; i++) {
        CHECK_CU(cuMemFree(dev[i]));
        CHECK_CU(cuMemFreeHost(pinned[i]));
        CHECK_CU(cuStreamDestroy(s[i]));
        CHECK_CU(cuEventDestroy(end[i]));
    }
    CHECK_CU(cuEventDestroy(start));
    CHECK_CU(cuModuleUnload(mod));
    return 0;
}
