/* SPDX-License-Identifier: MIT */
/*
 * sim_basic.c - the simulator's first contract: init, one 1 GiB device by default, a
 * round trip through device memory, and a PTX kernel bound to a host function.  The tests see
 * it as the simulator (st_simulated, which keeps them from checking on a real driver what
 * only the simulator defines).
 */
#include <string.h>

#include "simtest.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry add_one(.param .u64 p, .param .u32 n)\n{\n ret;\n}\n";

SIM_KERNEL void add_one(const sim_launch_t *l, void **params)
{
    float *p = *(float **)params[0];
    unsigned n = *(unsigned *)params[1];
    for (unsigned i = 0; i < n; i++)
        p[i] += 1.0f;
    sim_kernel_access(p, n * sizeof(float), SIM_ACCESS_READWRITE);
}

int main(void)
{
    int count, version;
    size_t total;
    char name[128];
    CUdevice dev;
    float host[1000];

    EXPECT(st_simulated(), "the tests do not see libcuda.so.1 as the simulator");
    EXPECT_CU(CUDA_ERROR_NOT_INITIALIZED, cuDeviceGetCount(&count));
    st_setup(0);
    CHECK_CU(cuDriverGetVersion(&version));
    EXPECT(version == 13000, "driver version %d", version);
    CHECK_CU(cuDeviceGetCount(&count));
    EXPECT(count == 1, "device count %d", count);
    CHECK_CU(cuDeviceGet(&dev, 0));
    CHECK_CU(cuDeviceGetName(name, sizeof(name), dev));
    CHECK_CU(cuDeviceTotalMem(&total, dev));
    EXPECT(total == 1ull << 30, "total %zu", total);

    CUdeviceptr d;
    CHECK_CU(cuMemAlloc(&d, sizeof(host)));
    EXPECT(d % 256 == 0, "alignment of 0x%llx", (unsigned long long)d);
    for (int i = 0; i < 1000; i++)
        host[i] = (float)i;
    CHECK_CU(cuMemcpyHtoD(d, host, sizeof(host)));
    CUfunction f = st_function(ptx, "add_one");
    unsigned n = 1000;
    void *args[] = { &d, &n };
    CHECK_CU(cuLaunchKernel(f, 4, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
    memset(host, 0, sizeof(host));
    CHECK_CU(cuMemcpyDtoH(host, d, sizeof(host)));
    for (int i = 0; i < 1000; i++)
        EXPECT(host[i] == (float)i + 1, "host[%d] = %f", i, host[i]);
    CHECK_CU(cuMemFree(d));
    CHECK_CU(cuCtxSynchronize());
    return 0;
}
