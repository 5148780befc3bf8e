/* SPDX-License-Identifier: MIT */
/*
 * event_elapsed_time.c - cuEventElapsedTime reports virtual milliseconds between two
 * completed records: a kernel that declares its cost with sim_kernel_cost takes the modelled
 * time (the default machine: 51 TFLOP/s, 2000 GB/s, 2 us launch latency), so the events around
 * it are that far apart; the difference is signed (end before start is negative) and an event
 * against itself is 0.  Asked before the later event completed (cuEventQuery would say
 * CUDA_ERROR_NOT_READY), it says CUDA_ERROR_NOT_READY too, as documented.
 */
#include <math.h>

#include "simtest.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry costly(.param .f64 flops, .param .f64 bytes)\n{\n ret;\n}\n";

SIM_KERNEL void costly(const sim_launch_t *l, void **params)
{
    sim_kernel_cost(*(double *)params[0], *(double *)params[1]);
}

static CUfunction fn;

/* Milliseconds between events around one kernel of this cost. */
static float timed(CUstream s, double flops, double bytes, CUevent a, CUevent b)
{
    void *args[] = { &flops, &bytes };
    float ms;
    CHECK_CU(cuEventRecord(a, s));
    CHECK_CU(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
    CHECK_CU(cuEventRecord(b, s));
    CHECK_CU(cuEventSynchronize(b));
    CHECK_CU(cuEventElapsedTime(&ms, a, b));
    return ms;
}

/* The model's figure plus at most a few microseconds of per-call host time. */
static void expect_ms(const char *what, float got, double want)
{
    EXPECT(got >= want - 1e-4 && got <= want + 0.01, "%s: expected %.4f ms, got %.4f ms", what,
           want, got);
}

int main(void)
{
    CUmodule mod;
    CUstream s;
    CUevent a, b;
    float ms;

    st_setup(0);
    CHECK_CU(cuModuleLoadData(&mod, ptx));
    CHECK_CU(cuModuleGetFunction(&fn, mod, "costly"));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuEventCreate(&a, CU_EVENT_DEFAULT));
    CHECK_CU(cuEventCreate(&b, CU_EVENT_BLOCKING_SYNC));

    /* Compute-bound: 51e9 flops / 51e12 flop/s = 1 ms, plus 2 us launch latency. */
    expect_ms("compute-bound kernel", timed(s, 51e9, 1e6, a, b), 1.002);
    /* Memory-bound: 4e9 bytes / 2000e9 B/s = 2 ms, plus 2 us. */
    expect_ms("memory-bound kernel", timed(s, 1e6, 4e9, a, b), 2.002);
    /* Costs add up within a kernel and the larger of the two terms counts. */
    expect_ms("balanced kernel", timed(s, 102e9, 2e9, a, b), 2.002);
    /* An empty kernel costs the launch latency. */
    expect_ms("empty kernel", timed(NULL, 0, 0, a, b), 0.002);

    CHECK_CU(cuEventElapsedTime(&ms, b, a));
    EXPECT(ms < -0.0015f, "end to start: expected about -0.002 ms, got %f", ms);
    CHECK_CU(cuEventElapsedTime(&ms, a, a));
    EXPECT(fabsf(ms) < 1e-6f, "event to itself: expected 0, got %f", ms);
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuEventElapsedTime(NULL, a, b));

    /* Not complete yet: a 1 ms kernel between the records, asked at once. */
    double flops = 51e9, bytes = 1e6;
    void *args[] = { &flops, &bytes };
    CHECK_CU(cuEventRecord(a, s));
    CHECK_CU(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
    CHECK_CU(cuEventRecord(b, s));
    EXPECT_CU(CUDA_ERROR_NOT_READY, cuEventQuery(b));
    EXPECT_CU(CUDA_ERROR_NOT_READY, cuEventElapsedTime(&ms, a, b));
    CHECK_CU(cuEventSynchronize(b));
    CHECK_CU(cuEventElapsedTime(&ms, a, b));
    expect_ms("after the wait", ms, 1.002);

    CHECK_CU(cuEventDestroy(a));
    CHECK_CU(cuEventDestroy(b));
    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuModuleUnload(mod));
    return 0;
}
