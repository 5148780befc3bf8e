/* SPDX-License-Identifier: MIT */
/*
 * stream_stale_read.c - a program that forgets to synchronise reads stale data.
 *
 * cuMemcpyDtoHAsync into pinned memory returns before the copy has run, so reading the
 * destination before synchronising sees its old contents, as on a GPU; after
 * cuStreamSynchronize it holds the new ones.  The test re-executes itself with
 * ELIXIR_SIM_EXEC=lazy so that "not yet run" is deterministic.
 */
#include <string.h>

#include "simchild.h"
#include "simtest.h"

#define N 1024

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry fill(.param .u64 p, .param .u32 n, .param .u32 v)\n{\n ret;\n}\n";

SIM_KERNEL void fill(const sim_launch_t *l, void **params)
{
    unsigned *p = *(unsigned **)params[0];
    unsigned n = *(unsigned *)params[1], v = *(unsigned *)params[2];
    for (unsigned i = 0; i < n; i++)
        p[i] = v;
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_SIM_EXEC=lazy", NULL };
    CUmodule mod;
    CUfunction f;
    CUstream s;
    CUdeviceptr dev;
    unsigned *host, n = N, v = 0x600d;

    st_reexec(argv, env);
    st_setup(0);
    CHECK_CU(cuModuleLoadData(&mod, ptx));
    CHECK_CU(cuModuleGetFunction(&f, mod, "fill"));
    CHECK_CU(cuMemAlloc(&dev, N * 4));
    CHECK_CU(cuMemAllocHost((void **)&host, N * 4));
    for (unsigned i = 0; i < N; i++)
        host[i] = 0x01d;
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_DEFAULT));

    void *args[] = { &dev, &n, &v };
    CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
    CHECK_CU(cuMemcpyDtoHAsync(host, dev, N * 4, s));
    for (unsigned i = 0; i < N; i++)
        EXPECT(host[i] == 0x01d, "before synchronising: host[%u] = 0x%x, expected the stale 0x1d",
               i, host[i]);
    CHECK_CU(cuStreamSynchronize(s));
    for (unsigned i = 0; i < N; i++)
        EXPECT(host[i] == 0x600d, "after synchronising: host[%u] = 0x%x, expected 0x600d", i,
               host[i]);

    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuMemFreeHost(host));
    CHECK_CU(cuMemFree(dev));
    CHECK_CU(cuModuleUnload(mod));
    return 0;
}
