/* SPDX-License-Identifier: MIT */
/*
 * stream_wait_event.c - cuStreamWaitEvent orders work across streams.
 *
 * A producer kernel on one non-blocking stream fills a buffer and an event is recorded after
 * it; a consumer on a second non-blocking stream waits for the event and then reads the buffer.
 * The consumer sees the producer's data and the race checker (ELIXIR_SIM_RACECHECK=fail)
 * finds nothing.  The wait refers to the record most recently submitted before it: recording
 * the event again later does not change what an earlier wait waited for.  Waiting for an event
 * that was never recorded waits for nothing.
 */
#include "simtest.h"

#define N 4096

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry produce(.param .u64 p, .param .u32 n, .param .u32 v)\n{\n ret;\n}\n"
    ".visible .entry consume(.param .u64 out, .param .u64 in, .param .u32 n)\n{\n ret;\n}\n";

SIM_KERNEL void produce(const sim_launch_t *l, void **params)
{
    unsigned *p = *(unsigned **)params[0];
    unsigned n = *(unsigned *)params[1], v = *(unsigned *)params[2];
    for (unsigned i = 0; i < n; i++)
        p[i] = v + i;
    sim_kernel_access(p, n * sizeof(*p), SIM_ACCESS_WRITE);
}

SIM_KERNEL void consume(const sim_launch_t *l, void **params)
{
    unsigned *out = *(unsigned **)params[0];
    const unsigned *in = *(const unsigned **)params[1];
    unsigned n = *(unsigned *)params[2];
    for (unsigned i = 0; i < n; i++)
        out[i] = in[i] * 2;
    sim_kernel_access(in, n * sizeof(*in), SIM_ACCESS_READ);
    sim_kernel_access(out, n * sizeof(*out), SIM_ACCESS_WRITE);
}

static CUfunction prod, cons;

static void check(CUdeviceptr out, unsigned v)
{
    static unsigned host[N];
    CHECK_CU(cuMemcpyDtoH(host, out, sizeof(host)));
    for (unsigned i = 0; i < N; i++)
        EXPECT(host[i] == (v + i) * 2, "out[%u]: expected %u, got %u", i, (v + i) * 2, host[i]);
}

int main(void)
{
    CUmodule mod;
    CUstream s1, s2, s3;
    CUevent ev, never;
    CUdeviceptr in, out;
    unsigned n = N, v = 100;
    void *pargs[] = { &in, &n, &v };
    void *cargs[] = { &out, &in, &n };

    st_setup(0);
    CHECK_CU(cuModuleLoadData(&mod, ptx));
    CHECK_CU(cuModuleGetFunction(&prod, mod, "produce"));
    CHECK_CU(cuModuleGetFunction(&cons, mod, "consume"));
    CHECK_CU(cuMemAlloc(&in, N * 4));
    CHECK_CU(cuMemAlloc(&out, N * 4));
    CHECK_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&s3, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    CHECK_CU(cuEventCreate(&never, CU_EVENT_DEFAULT));

    CHECK_CU(cuLaunchKernel(prod, 1, 1, 1, 1, 1, 1, 0, s1, pargs, NULL));
    CHECK_CU(cuEventRecord(ev, s1));
    CHECK_CU(cuStreamWaitEvent(s2, ev, 0));
    CHECK_CU(cuLaunchKernel(cons, 1, 1, 1, 1, 1, 1, 0, s2, cargs, NULL));
    CHECK_CU(cuStreamSynchronize(s2));
    check(out, 100);

    /* Re-recording on an idle stream after the wait does not release the waiter early. */
    v = 200;
    CHECK_CU(cuLaunchKernel(prod, 1, 1, 1, 1, 1, 1, 0, s1, pargs, NULL));
    CHECK_CU(cuEventRecord(ev, s1));
    CHECK_CU(cuStreamWaitEvent(s2, ev, 0));
    CHECK_CU(cuEventRecord(ev, s3));
    CHECK_CU(cuLaunchKernel(cons, 1, 1, 1, 1, 1, 1, 0, s2, cargs, NULL));
    CHECK_CU(cuStreamSynchronize(s2));
    check(out, 200);

    /* A never-recorded event is complete: the wait does not block the stream. */
    CHECK_CU(cuStreamWaitEvent(s3, never, 0));
    CHECK_CU(cuStreamSynchronize(s3));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamWaitEvent(s3, ev, 0x80));

    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuEventDestroy(ev));
    CHECK_CU(cuEventDestroy(never));
    CHECK_CU(cuStreamDestroy(s1));
    CHECK_CU(cuStreamDestroy(s2));
    CHECK_CU(cuStreamDestroy(s3));
    CHECK_CU(cuMemFree(in));
    CHECK_CU(cuMemFree(out));
    CHECK_CU(cuModuleUnload(mod));
    return 0;
}
