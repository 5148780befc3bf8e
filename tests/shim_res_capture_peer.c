/* SPDX-License-Identifier: MIT */
/*
 * shim_res_capture_peer.c - a copy captured in a global-mode capture that reaches another
 * device's paged-out memory: the shim pins that memory on its device, and the waits this
 * takes do not invalidate the capture.
 *
 * Two simulated devices, a 4 MiB GPU budget each (two 2 MiB chunks).  On device 1, buffers
 * a1, b1 and c1 filled by kernel on a stream of its own leave a1 on the host, b1 and c1 in GPU
 * memory with their fills as their last uses.  With device 0's context current, a capture in
 * CU_STREAM_CAPTURE_MODE_GLOBAL on device 0's stream s0 takes a cuMemcpyPeerAsync from a1
 * into x0 on device 0 and a cuMemsetD32Async of b1's first word.  A captured operation pins
 * what it reaches on another device (its graph may run at any time), which brings a1 back
 * into device 1's memory and evicts b1 or c1: the eviction waits for its victim's last use,
 * with event queries and waits that the calling thread's global-mode capture forbids (they
 * would invalidate it), so the shim must make them in relaxed mode, as it does for launches.
 * The capture ends, its graph runs, and x0 holds a1's pattern, b1 its pattern but for its
 * first word.  The transcript must equal the one without the shim, with evicted chunks mapped
 * (host VMM) and unmapped (ELIXIR_SIM_HOST_VMM=0), with the race checker failing the run on
 * any race.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define BYTES (2 * SH_MIB)
#define WORDS (BYTES / 4)

static uint32_t host[WORDS];

static void scenario(void)
{
    CUdeviceptr a1[3], x0;
    CUstream t1, s0;
    CUgraph g;
    CUgraphExec ge;

    CUcontext c1 = st_setup(1);
    CUfunction fill1 = st_function(sh_res_ptx, "sh_fill");
    CHECK_CU(cuStreamCreate(&t1, CU_STREAM_NON_BLOCKING));
    sh_alloc_filled(fill1, a1, 3, BYTES, 1, t1);
    CHECK_CU(cuStreamSynchronize(t1));

    CUcontext c0 = st_setup(0);
    CHECK_CU(cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&x0, BYTES));
    CHECK_CU(cuStreamBeginCapture(s0, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_CU(cuMemcpyPeerAsync(x0, c0, a1[0], c1, BYTES, s0));
    CHECK_CU(cuMemsetD32Async(a1[1], 7, 1, s0));
    CUresult r = cuStreamEndCapture(s0, &g);
    printf("the capture ended: %s\n", r == CUDA_SUCCESS ? "a graph" : "invalidated");
    CHECK_CU(r);
    CHECK_CU(cuGraphInstantiate(&ge, g, 0));
    CHECK_CU(cuGraphLaunch(ge, s0));
    CHECK_CU(cuStreamSynchronize(s0));
    CHECK_CU(cuMemcpyDtoH(host, x0, BYTES));
    sh_expect_pattern(host, WORDS, 1, "x0, copied from a1 by the graph");
    printf("x0 holds a1's pattern\n");
    CHECK_CU(cuGraphExecDestroy(ge));
    CHECK_CU(cuGraphDestroy(g));
    CHECK_CU(cuStreamDestroy(s0));
    CHECK_CU(cuMemFree(x0));

    CHECK_CU(cuCtxSetCurrent(c1));
    for (int i = 0; i < 3; i++) {
        CHECK_CU(cuMemcpyDtoH(host, a1[i], BYTES));
        EXPECT(i != 1 || host[0] == 7, "b1's first word is %u, expected 7", host[0]);
        if (i == 1)
            host[0] = sh_pattern(2, 0);
        sh_expect_pattern(host, WORDS, 1 + (uint32_t)i, "a buffer on device 1");
        printf("buffer %d on device 1 holds its pattern%s\n", i,
               i == 1 ? " but for its first word, set by the graph" : "");
        CHECK_CU(cuMemFree(a1[i]));
    }
    CHECK_CU(cuStreamDestroy(t1));
}

static void run(const char *what, const char *host_vmm)
{
    sh_run_t plain, shim;

    sh_run_two_devices(host_vmm, "ELIXIR_GPU_MEMORY=4M", &plain, &shim);
    EXPECT(sh_migrations_out(shim.err, 1) >= 2, "%s: device 1 did not page out:\n%s", what,
           shim.err);
    sh_same_transcript(what, &plain, &shim);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
