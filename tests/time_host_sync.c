/* SPDX-License-Identifier: MIT */
/*
 * time_host_sync.c - host synchronisation advances the host's virtual clock: after the host
 * waits for 10 ms of device work (cuStreamSynchronize, cuEventSynchronize, cuCtxSynchronize, a
 * synchronous device-to-host copy), work it submits next to an idle stream starts after that
 * work ended; without the wait it starts at once.
 */
#include "simtest.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry busy(.param .f64 flops)\n{\n ret;\n}\n";

SIM_KERNEL void busy(const sim_launch_t *l, void **params)
{
    sim_kernel_cost(*(double *)params[0], 0);
}

enum how { NO_WAIT, STREAM_SYNC, EVENT_SYNC, CTX_SYNC, COPY_DTOH };

static CUfunction f;
static CUstream work, idle;
static CUevent t0, busy_end, later;
static CUdeviceptr d;

/* 10 ms of work on `work`, a host wait of kind `how`, then a record on `idle`: its time. */
static float after(int how)
{
    double flops = 510e9;
    void *args[] = { &flops };
    unsigned v;
    float ms;
    CHECK_CU(cuEventRecord(t0, work));
    CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, work, args, NULL));
    CHECK_CU(cuEventRecord(busy_end, work));
    if (how == STREAM_SYNC)
        CHECK_CU(cuStreamSynchronize(work));
    else if (how == EVENT_SYNC)
        CHECK_CU(cuEventSynchronize(busy_end));
    else if (how == CTX_SYNC)
        CHECK_CU(cuCtxSynchronize());
    else if (how == COPY_DTOH)
        CHECK_CU(cuMemcpyDtoHAsync(&v, d, sizeof(v), work));   /* pageable: returns when done */
    CHECK_CU(cuEventRecord(later, idle));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuEventElapsedTime(&ms, t0, later));
    return ms;
}

int main(void)
{
    static const char *const names[] = { "no wait", "cuStreamSynchronize",
                                         "cuEventSynchronize", "cuCtxSynchronize",
                                         "DtoH into pageable memory" };
    CUmodule mod;

    st_setup(0);
    CHECK_CU(cuModuleLoadData(&mod, ptx));
    CHECK_CU(cuModuleGetFunction(&f, mod, "busy"));
    CHECK_CU(cuMemAlloc(&d, 256));
    CHECK_CU(cuMemsetD8(d, 0, 256));
    CHECK_CU(cuStreamCreate(&work, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&idle, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuEventCreate(&t0, CU_EVENT_DEFAULT));
    CHECK_CU(cuEventCreate(&busy_end, CU_EVENT_DEFAULT));
    CHECK_CU(cuEventCreate(&later, CU_EVENT_DEFAULT));
    CHECK_CU(cuCtxSynchronize());

    float ms = after(NO_WAIT);
    EXPECT(ms < 0.5f, "%s: the idle stream's record came %f ms after the start", names[0], ms);
    for (int how = STREAM_SYNC; how <= COPY_DTOH; how++) {
        ms = after(how);
        EXPECT(ms >= 10.0f, "%s: the idle stream's record came %f ms after the start, expected "
               ">= 10 ms", names[how], ms);
    }

    CHECK_CU(cuEventDestroy(t0));
    CHECK_CU(cuEventDestroy(busy_end));
    CHECK_CU(cuEventDestroy(later));
    CHECK_CU(cuStreamDestroy(work));
    CHECK_CU(cuStreamDestroy(idle));
    CHECK_CU(cuMemFree(d));
    CHECK_CU(cuModuleUnload(mod));
    return 0;
}
