/* SPDX-License-Identifier: MIT */
/*
 * stream_legacy_implicit_sync.c - the legacy default stream synchronises with blocking
 * streams and not with non-blocking ones, seen in virtual time.
 *
 * Work on a blocking stream (cuStreamCreate with CU_STREAM_DEFAULT) starts only after all
 * earlier work on the legacy stream, and legacy work starts only after earlier work on every
 * blocking stream.  A CU_STREAM_NON_BLOCKING stream is ordered with neither.  A kernel that
 * charges 1 ms of modelled compute makes the difference visible in cuEventElapsedTime.
 */
#include "simtest.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry busy(.param .u64 p, .param .f64 flops)\n{\n ret;\n}\n";

SIM_KERNEL void busy(const sim_launch_t *l, void **params)
{
    unsigned *p = *(unsigned **)params[0];
    p[0]++;
    sim_kernel_access(p, sizeof(*p), SIM_ACCESS_READWRITE);
    sim_kernel_cost(*(double *)params[1], 0);
}

static CUfunction fn;
static CUdeviceptr buf;

/* 1 ms of work at the default machine's 51 TFLOP/s. */
static void busy_1ms(CUstream s)
{
    double flops = 51e9;
    void *args[] = { &buf, &flops };
    CHECK_CU(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
}

static float elapsed(CUevent a, CUevent b)
{
    float ms;
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuEventElapsedTime(&ms, a, b));
    return ms;
}

int main(void)
{
    CUmodule mod;
    CUstream blocking, nonblocking;
    CUevent start, after;
    unsigned count;

    st_setup(0);
    CHECK_CU(cuModuleLoadData(&mod, ptx));
    CHECK_CU(cuModuleGetFunction(&fn, mod, "busy"));
    CHECK_CU(cuMemAlloc(&buf, sizeof(unsigned)));
    CHECK_CU(cuMemsetD32(buf, 0, 1));
    CHECK_CU(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
    CHECK_CU(cuStreamCreate(&nonblocking, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuEventCreate(&start, CU_EVENT_DEFAULT));
    CHECK_CU(cuEventCreate(&after, CU_EVENT_DEFAULT));

    /* Legacy work, then a record on a blocking stream: it waits for the legacy kernel. */
    CHECK_CU(cuEventRecord(start, NULL));
    busy_1ms(NULL);
    CHECK_CU(cuEventRecord(after, blocking));
    float ms = elapsed(start, after);
    EXPECT(ms >= 1.0f, "blocking stream after legacy work: expected >= 1 ms, got %f ms", ms);

    /* The same with a non-blocking stream: no wait. */
    CHECK_CU(cuEventRecord(start, NULL));
    busy_1ms(NULL);
    CHECK_CU(cuEventRecord(after, nonblocking));
    ms = elapsed(start, after);
    EXPECT(ms < 0.5f, "non-blocking stream after legacy work: expected < 0.5 ms, got %f ms", ms);

    /* Blocking-stream work, then a record on the legacy stream: it waits. */
    CHECK_CU(cuEventRecord(start, blocking));
    busy_1ms(blocking);
    CHECK_CU(cuEventRecord(after, NULL));
    ms = elapsed(start, after);
    EXPECT(ms >= 1.0f, "legacy stream after blocking-stream work: expected >= 1 ms, got %f ms",
           ms);

    /* Non-blocking-stream work, then a record on the legacy stream: no wait. */
    CHECK_CU(cuEventRecord(start, nonblocking));
    busy_1ms(nonblocking);
    CHECK_CU(cuEventRecord(after, NULL));
    ms = elapsed(start, after);
    EXPECT(ms < 0.5f, "legacy stream after non-blocking work: expected < 0.5 ms, got %f ms", ms);

    /* CU_STREAM_LEGACY names the same stream as NULL. */
    CHECK_CU(cuEventRecord(start, CU_STREAM_LEGACY));
    busy_1ms(CU_STREAM_LEGACY);
    CHECK_CU(cuEventRecord(after, blocking));
    ms = elapsed(start, after);
    EXPECT(ms >= 1.0f, "blocking stream after CU_STREAM_LEGACY work: expected >= 1 ms, got %f",
           ms);

    CHECK_CU(cuMemcpyDtoH(&count, buf, sizeof(count)));
    EXPECT(count == 5, "kernel runs: expected 5, got %u", count);
    CHECK_CU(cuEventDestroy(start));
    CHECK_CU(cuEventDestroy(after));
    CHECK_CU(cuStreamDestroy(blocking));
    CHECK_CU(cuStreamDestroy(nonblocking));
    CHECK_CU(cuMemFree(buf));
    CHECK_CU(cuModuleUnload(mod));
    return 0;
}
