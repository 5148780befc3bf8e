/* SPDX-License-Identifier: MIT */
/*
 * time_stream_wait.c - in virtual time, a stream's next operation after cuStreamWaitEvent
 * starts no earlier than the recorded work ends: an event recorded there, and a copy issued
 * there, come after a 1 ms kernel on the other stream, while a stream that does not wait is
 * not held back.
 */
#include "simtest.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry busy(.param .f64 flops)\n{\n ret;\n}\n";

SIM_KERNEL void busy(const sim_launch_t *l, void **params)
{
    sim_kernel_cost(*(double *)params[0], 0);
}

static float since(CUevent a, CUevent b)
{
    float ms;
    CHECK_CU(cuEventElapsedTime(&ms, a, b));
    return ms;
}

int main(void)
{
    const size_t bytes = 64u << 20;
    const double copy_ms = bytes / 25e9 * 1e3;
    CUmodule mod;
    CUfunction f;
    CUstream s1, s2, s3;
    CUevent t0, done, waited, copied, free_run;
    CUdeviceptr d;
    void *pinned;
    double flops = 51e9;
    void *args[] = { &flops };

    st_setup(0);
    CHECK_CU(cuModuleLoadData(&mod, ptx));
    CHECK_CU(cuModuleGetFunction(&f, mod, "busy"));
    CHECK_CU(cuMemAlloc(&d, bytes));
    CHECK_CU(cuMemAllocHost(&pinned, bytes));
    CHECK_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&s3, CU_STREAM_NON_BLOCKING));
    CUevent *evs[] = { &t0, &done, &waited, &copied, &free_run };
    for (int i = 0; i < 5; i++)
        CHECK_CU(cuEventCreate(evs[i], CU_EVENT_DEFAULT));

    CHECK_CU(cuEventRecord(t0, s1));
    CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s1, args, NULL));
    CHECK_CU(cuEventRecord(done, s1));
    CHECK_CU(cuStreamWaitEvent(s2, done, 0));
    CHECK_CU(cuEventRecord(waited, s2));
    CHECK_CU(cuMemcpyHtoDAsync(d, pinned, bytes, s2));
    CHECK_CU(cuEventRecord(copied, s2));
    CHECK_CU(cuEventRecord(free_run, s3));
    CHECK_CU(cuCtxSynchronize());

    float kernel_end = since(t0, done), w = since(t0, waited), c = since(t0, copied);
    float fr = since(t0, free_run);
    EXPECT(kernel_end >= 1.0f && kernel_end < 1.02f, "kernel: expected about 1.002 ms, got %f",
           kernel_end);
    EXPECT(w >= kernel_end, "record after the wait at %f ms, before the event at %f ms", w,
           kernel_end);
    EXPECT(c >= kernel_end + copy_ms * 0.999 && c <= kernel_end + copy_ms * 1.001 + 0.01,
           "copy after the wait ended at %f ms, expected %f + %f", c, kernel_end, copy_ms);
    EXPECT(fr < 0.5f, "a stream without the wait was held back to %f ms", fr);

    for (int i = 0; i < 5; i++)
        CHECK_CU(cuEventDestroy(*evs[i]));
    CHECK_CU(cuStreamDestroy(s1));
    CHECK_CU(cuStreamDestroy(s2));
    CHECK_CU(cuStreamDestroy(s3));
    CHECK_CU(cuMemFreeHost(pinned));
    CHECK_CU(cuMemFree(d));
    CHECK_CU(cuModuleUnload(mod));
    return 0;
}
