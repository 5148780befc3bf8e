/* SPDX-License-Identifier: MIT */
/*
 * copy_peer.c - copies between two devices: cuMemcpyPeer, cuMemcpyPeerAsync, cuMemcpy3DPeer
 * and a plain cuMemcpyDtoD across devices (unified addressing), each followed by a read in the
 * destination device's context.  cuMemcpyPeer is serialised with the work of the contexts it
 * names, so no further synchronisation is needed before that read, and the race checker
 * (ELIXIR_SIM_RACECHECK=fail) must agree.  Runs on the 4-GPU NVLink machine model
 * (ELIXIR_SIM_MACHINE=h100-nvlink-4, set by re-executing).
 */
#include <string.h>

#include "simchild.h"
#include "simtest.h"

#define N (1 << 20)

static unsigned char host[N], back[N];

static void expect_copy(CUcontext ctx, CUdeviceptr d, unsigned seed, const char *what)
{
    CHECK_CU(cuCtxPushCurrent(ctx));
    memset(back, 0, N);
    CHECK_CU(cuMemcpyDtoH(back, d, N));
    CHECK_CU(cuCtxPopCurrent(NULL));
    for (size_t i = 0; i < N; i++)
        EXPECT(back[i] == (unsigned char)(i * 5 + seed), "%s: byte %zu is %u, expected %u", what,
               i, back[i], (unsigned char)(i * 5 + seed));
}

static void put(CUcontext ctx, CUdeviceptr d, unsigned seed)
{
    for (size_t i = 0; i < N; i++)
        host[i] = (unsigned char)(i * 5 + seed);
    CHECK_CU(cuCtxPushCurrent(ctx));
    CHECK_CU(cuMemcpyHtoD(d, host, N));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuCtxPopCurrent(NULL));
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_SIM_MACHINE=h100-nvlink-4", NULL };
    CUcontext c0, c1;
    CUdeviceptr d0, d1;
    CUstream s;
    int n, can;

    st_reexec(argv, env);
    CHECK_CU(cuInit(0));
    CHECK_CU(cuDeviceGetCount(&n));
    EXPECT(n == 4, "devices: expected 4, got %d", n);
    CHECK_CU(cuDeviceCanAccessPeer(&can, 0, 1));
    EXPECT(can == 1, "device 0 cannot access device 1");
    CHECK_CU(cuDevicePrimaryCtxRetain(&c0, 0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&c1, 1));
    CHECK_CU(cuCtxPushCurrent(c1));
    CHECK_CU(cuMemAlloc(&d1, N));
    CHECK_CU(cuCtxPopCurrent(NULL));
    CHECK_CU(cuCtxPushCurrent(c0));
    CHECK_CU(cuMemAlloc(&d0, N));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

    put(c0, d0, 1);
    CHECK_CU(cuMemcpyPeer(d1, c1, d0, c0, N));
    expect_copy(c1, d1, 1, "cuMemcpyPeer 0 -> 1");

    put(c1, d1, 2);
    CHECK_CU(cuMemcpyPeerAsync(d0, c0, d1, c1, N, s));
    CHECK_CU(cuStreamSynchronize(s));
    expect_copy(c0, d0, 2, "cuMemcpyPeerAsync 1 -> 0");

    put(c0, d0, 3);
    CUDA_MEMCPY3D_PEER p;
    memset(&p, 0, sizeof(p));
    p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    p.srcDevice = d0;
    p.srcContext = c0;
    p.srcPitch = 1024;
    p.srcHeight = N / 1024;
    p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    p.dstDevice = d1;
    p.dstContext = c1;
    p.dstPitch = 1024;
    p.dstHeight = N / 1024;
    p.WidthInBytes = 1024;
    p.Height = N / 1024;
    p.Depth = 1;
    CHECK_CU(cuMemcpy3DPeer(&p));
    expect_copy(c1, d1, 3, "cuMemcpy3DPeer 0 -> 1");

    put(c1, d1, 4);
    CHECK_CU(cuMemcpyDtoDAsync(d0, d1, N, s));
    CHECK_CU(cuStreamSynchronize(s));
    expect_copy(c0, d0, 4, "cuMemcpyDtoDAsync 1 -> 0");

    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuMemFree(d0));
    CHECK_CU(cuCtxPopCurrent(NULL));
    CHECK_CU(cuCtxPushCurrent(c1));
    CHECK_CU(cuMemFree(d1));
    CHECK_CU(cuCtxPopCurrent(NULL));
    CHECK_CU(cuDevicePrimaryCtxRelease(0));
    CHECK_CU(cuDevicePrimaryCtxRelease(1));
    return 0;
}
