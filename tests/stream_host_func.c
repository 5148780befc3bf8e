/* SPDX-License-Identifier: MIT */
/*
 * stream_host_func.c - cuLaunchHostFunc and cuStreamAddCallback run in stream order.
 *
 * A host function runs after all work submitted to its stream before it (it sees the result of
 * a device-to-host copy into pinned memory) and before any work submitted after it (a copy
 * that follows reads what the function wrote).  Host functions and callbacks of one stream run
 * in submission order, a callback gets the stream it was added to and CUDA_SUCCESS, and
 * cuStreamAddCallback rejects non-zero flags.
 */
#include <string.h>

#include "simtest.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry set_value(.param .u64 p, .param .u32 v)\n{\n ret;\n}\n";

SIM_KERNEL void set_value(const sim_launch_t *l, void **params)
{
    unsigned *p = *(unsigned **)params[0];
    p[0] = *(unsigned *)params[1];
}

static char order[16];
static int norder;
static unsigned *pinned;
static unsigned seen_by_first;
static CUstream cb_stream;
static CUresult cb_status = CUDA_ERROR_UNKNOWN;

static void first(void *data)
{
    order[norder++] = *(const char *)data;
    seen_by_first = pinned[0];      /* the DtoH copy before this function has landed */
    pinned[1] = 4321;               /* read by the HtoD copy after this function */
}

static void mark(void *data)
{
    order[norder++] = *(const char *)data;
}

static void CUDA_CB callback(CUstream s, CUresult status, void *data)
{
    order[norder++] = *(const char *)data;
    cb_stream = s;
    cb_status = status;
}

int main(void)
{
    static const char a = 'a', b = 'b', c = 'c', d = 'd';
    CUmodule mod;
    CUfunction f;
    CUstream s;
    CUdeviceptr dev;
    unsigned v = 1234, back;

    st_setup(0);
    CHECK_CU(cuModuleLoadData(&mod, ptx));
    CHECK_CU(cuModuleGetFunction(&f, mod, "set_value"));
    CHECK_CU(cuMemAlloc(&dev, 64));
    CHECK_CU(cuMemAllocHost((void **)&pinned, 64));
    memset(pinned, 0, 64);
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

    void *args[] = { &dev, &v };
    CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
    CHECK_CU(cuMemcpyDtoHAsync(pinned, dev, 4, s));
    CHECK_CU(cuLaunchHostFunc(s, first, (void *)&a));
    CHECK_CU(cuMemcpyHtoDAsync(dev + 4, &pinned[1], 4, s));
    CHECK_CU(cuStreamAddCallback(s, callback, (void *)&b, 0));
    CHECK_CU(cuLaunchHostFunc(s, mark, (void *)&c));
    CHECK_CU(cuStreamAddCallback(s, callback, (void *)&d, 0));
    CHECK_CU(cuStreamSynchronize(s));

    EXPECT(norder == 4 && memcmp(order, "abcd", 4) == 0, "order: expected abcd, got %.*s",
           norder, order);
    EXPECT(seen_by_first == 1234, "host function saw %u, expected 1234", seen_by_first);
    CHECK_CU(cuMemcpyDtoH(&back, dev + 4, 4));
    EXPECT(back == 4321, "copy after the host function carried %u, expected 4321", back);
    EXPECT(cb_stream == s, "callback stream %p, expected %p", (void *)cb_stream, (void *)s);
    EXPECT_CU(CUDA_SUCCESS, cb_status);

    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamAddCallback(s, callback, (void *)&b, 1));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuLaunchHostFunc(s, NULL, NULL));

    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuMemFreeHost(pinned));
    CHECK_CU(cuMemFree(dev));
    CHECK_CU(cuModuleUnload(mod));
    return 0;
}
