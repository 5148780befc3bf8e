/* SPDX-License-Identifier: MIT */
/*
 * stream_memop_contexts.c - a stream memory wait in one context released from another.
 *
 * Stream A of device 0's primary context waits for a word; stream B of another context (a
 * second context of device 0, or device 1's primary context with peer access to device 0)
 * stores data and then writes the word, submitted after A's wait.  The other context's
 * cuCtxSynchronize does not wait for A's blocked work (it is not that context's); A's work
 * runs after B's write, sees B's data, and the race checker sees the ordering.  The word is
 * device 0 memory or page-locked host memory.  Each case runs in a child with two devices,
 * eager and lazy executor.
 */
#include <string.h>

#include "simchild.h"
#include "simtest.h"

enum { OTHER_DEVICE = 1, HOST_WORD = 2 };

static void program(void *arg)
{
    int mode = (int)(intptr_t)arg;
    CUcontext c0, c1;
    CUstream a, b;
    CUdeviceptr flag, data, out;
    void *host = NULL;
    unsigned got = 0;

    c0 = st_setup(0);
    if (mode & OTHER_DEVICE) {
        CUdevice d1;
        CHECK_CU(cuDeviceGet(&d1, 1));
        CHECK_CU(cuDevicePrimaryCtxRetain(&c1, d1));
    } else {
        CHECK_CU(cuCtxCreate(&c1, NULL, 0, 0));
    }
    CHECK_CU(cuCtxSetCurrent(c0));
    if (mode & HOST_WORD) {
        CHECK_CU(cuMemHostAlloc(&host, 64, CU_MEMHOSTALLOC_PORTABLE |
                                CU_MEMHOSTALLOC_DEVICEMAP));
        memset(host, 0, 64);
        flag = (CUdeviceptr)(uintptr_t)host;
    } else {
        CHECK_CU(cuMemAlloc(&flag, 64));
        CHECK_CU(cuMemsetD32(flag, 0, 16));
    }
    CHECK_CU(cuMemAlloc(&data, 64));
    CHECK_CU(cuMemAlloc(&out, 64));
    CHECK_CU(cuMemsetD32(data, 0, 16));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamWaitValue32(a, flag, 1, CU_STREAM_WAIT_VALUE_GEQ));
    CHECK_CU(cuMemcpyDtoDAsync(out, data, 4, a));

    CHECK_CU(cuCtxSetCurrent(c1));
    if ((mode & OTHER_DEVICE) && !(mode & HOST_WORD))
        CHECK_CU(cuCtxEnablePeerAccess(c0, 0));
    CHECK_CU(cuCtxSynchronize());       /* nothing of c1 waits for A */
    CHECK_CU(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemsetD32Async(data, 7, 1, b));
    CHECK_CU(cuStreamWriteValue32(b, flag, 1, 0));
    CHECK_CU(cuStreamSynchronize(b));

    CHECK_CU(cuCtxSetCurrent(c0));
    CHECK_CU(cuStreamSynchronize(a));
    CHECK_CU(cuMemcpyDtoH(&got, out, 4));
    EXPECT(got == 7, "mode %d: A read %u after the wait, expected 7", mode, got);
    CHECK_CU(cuStreamDestroy(a));
    CHECK_CU(cuCtxSetCurrent(c1));
    CHECK_CU(cuStreamDestroy(b));
}

int main(void)
{
    static const char *const execs[] = { "ELIXIR_SIM_EXEC=async", "ELIXIR_SIM_EXEC=lazy" };
    for (int i = 0; i < 2; i++) {
        for (int mode = 0; mode < 4; mode++) {
            const char *env[] = { "ELIXIR_SIM_RACECHECK=fail", "ELIXIR_SIM_DEVICES=2", execs[i],
                                  NULL };
            st_child_t c;
            st_run_child(program, (void *)(intptr_t)mode, env, &c);
            if (c.status != 0 || strstr(c.err, "race") || strstr(c.err, "warn"))
                fprintf(stderr, "mode %d (%s): status %d\n%s", mode, execs[i], c.status,
                        c.err);
            EXPECT(c.status == 0 && !strstr(c.err, "race") && !strstr(c.err, "warn"),
                   "mode %d (%s) clean", mode, execs[i]);
            st_child_free(&c);
        }
    }
    return 0;
}
