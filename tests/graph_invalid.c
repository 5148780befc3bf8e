/* SPDX-License-Identifier: MIT */
/*
 * graph_invalid.c - what stream capture forbids.  Capture cannot begin on the legacy stream
 * or twice; synchronising or querying a capturing stream, cuCtxSynchronize, using the legacy
 * stream while a blocking stream captures, querying a captured event and stream callbacks
 * fail and invalidate the capture, after which the stream's work fails and ending the capture
 * returns CUDA_ERROR_STREAM_CAPTURE_INVALIDATED and no graph, and the stream works again; the
 * event, last recorded in that capture, is CUDA_ERROR_INVALID_VALUE to query until recorded
 * again (as on the real driver).
 * Synchronous copies are "potentially unsafe": refused in GLOBAL and THREAD_LOCAL captures,
 * allowed when the capture or the thread is RELAXED; another thread is refused them only
 * while a GLOBAL capture runs.  Ending a capture from another thread is refused.
 */
#include <pthread.h>

#include "simtest.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry touch(.param .u64 p)\n{\n ret;\n}\n";

SIM_KERNEL void touch(const sim_launch_t *l, void **params)
{
    int *p = *(int **)params[0];
    *p += 1;
    sim_kernel_access(p, sizeof(int), SIM_ACCESS_READWRITE);
}

static CUfunction f;
static CUdeviceptr d;

static CUresult launch(CUstream s)
{
    void *args[] = { &d };
    return cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
}

static void expect_status(CUstream s, CUstreamCaptureStatus want)
{
    CUstreamCaptureStatus st;
    CHECK_CU(cuStreamIsCapturing(s, &st));
    EXPECT(st == want, "capture status %d, expected %d", (int)st, (int)want);
}

/* The capture on s was invalidated: its work fails, its end fails, then s works again. */
static void expect_invalidated(CUstream s)
{
    CUgraph g = (CUgraph)1;
    expect_status(s, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, launch(s));
    EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(s, &g));
    EXPECT(g == NULL, "graph %p from an invalidated capture", (void *)g);
    expect_status(s, CU_STREAM_CAPTURE_STATUS_NONE);
    CHECK_CU(launch(s));
    CHECK_CU(cuStreamSynchronize(s));
}

static void begin_rules(CUstream s)
{
    CUgraph g;
    EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
              cuStreamBeginCapture(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
              cuStreamBeginCapture(CU_STREAM_LEGACY, CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamBeginCapture(s, (CUstreamCaptureMode)7));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_STATE, cuStreamEndCapture(s, &g));
    CHECK_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_STATE, cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_CU(cuStreamEndCapture(s, &g));
    CHECK_CU(cuGraphDestroy(g));

    /* The per-thread default stream may capture. */
    CHECK_CU(cuStreamBeginCapture(CU_STREAM_PER_THREAD, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CHECK_CU(launch(CU_STREAM_PER_THREAD));
    CHECK_CU(cuStreamEndCapture(CU_STREAM_PER_THREAD, &g));
    size_t n = 0;
    CHECK_CU(cuGraphGetNodes(g, NULL, &n));
    EXPECT(n == 1, "%zu nodes captured on the per-thread stream", n);
    CHECK_CU(cuGraphDestroy(g));
}

static void sync_rules(CUstream s)
{
    CHECK_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_CU(launch(s));
    EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuStreamSynchronize(s));
    expect_invalidated(s);

    CHECK_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuStreamQuery(s));
    expect_invalidated(s);

    CHECK_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuCtxSynchronize());
    expect_invalidated(s);
}

/* A blocking stream captures: the legacy stream may not be used, and says so when asked. */
static void legacy_rules(CUstream blocking, CUstream nonblocking)
{
    CUstreamCaptureStatus st;
    CHECK_CU(cuStreamBeginCapture(blocking, CU_STREAM_CAPTURE_MODE_RELAXED));
    EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, cuStreamIsCapturing(NULL, &st));
    expect_status(blocking, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, launch(NULL));
    expect_invalidated(blocking);

    /* A non-blocking capture leaves the legacy stream alone. */
    CHECK_CU(cuStreamBeginCapture(nonblocking, CU_STREAM_CAPTURE_MODE_GLOBAL));
    expect_status(NULL, CU_STREAM_CAPTURE_STATUS_NONE);
    CHECK_CU(launch(NULL));
    expect_status(nonblocking, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CUgraph g;
    CHECK_CU(cuStreamEndCapture(nonblocking, &g));
    CHECK_CU(cuGraphDestroy(g));
    CHECK_CU(cuStreamSynchronize(NULL));
}

static void never_called(CUstream s, CUresult status, void *data)
{
    abort();
}

static void event_and_callback_rules(CUstream s)
{
    CUevent e;
    CHECK_CU(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    CHECK_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK_CU(cuEventRecord(e, s));
    EXPECT_CU(CUDA_ERROR_CAPTURED_EVENT, cuEventQuery(e));
    expect_invalidated(s);
    /* Last recorded in a capture that is over: nothing to query until recorded again. */
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuEventQuery(e));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuEventSynchronize(e));
    CHECK_CU(cuEventRecord(e, s));
    CHECK_CU(cuEventSynchronize(e));
    CHECK_CU(cuEventQuery(e));

    CHECK_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
              cuStreamAddCallback(s, never_called, NULL, 0));
    expect_invalidated(s);
    CHECK_CU(cuEventDestroy(e));
}

static int host_word;

/* Synchronous copies in the capturing thread, by capture mode and thread mode. */
static void unsafe_rules(CUstream s)
{
    CUgraph g;
    int v = 1;
    CHECK_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuMemcpyHtoD(d, &v, sizeof(v)));
    expect_invalidated(s);

    CHECK_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuMemcpyDtoH(&host_word, d, sizeof(int)));
    expect_invalidated(s);

    CHECK_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK_CU(cuMemcpyDtoH(&host_word, d, sizeof(int)));
    CHECK_CU(cuStreamEndCapture(s, &g));
    CHECK_CU(cuGraphDestroy(g));

    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    CHECK_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_CU(cuThreadExchangeStreamCaptureMode(&mode));
    EXPECT(mode == CU_STREAM_CAPTURE_MODE_GLOBAL, "previous thread mode %d", (int)mode);
    CHECK_CU(cuMemcpyDtoH(&host_word, d, sizeof(int)));
    CHECK_CU(cuThreadExchangeStreamCaptureMode(&mode));
    EXPECT(mode == CU_STREAM_CAPTURE_MODE_RELAXED, "previous thread mode %d", (int)mode);
    CHECK_CU(cuStreamEndCapture(s, &g));
    CHECK_CU(cuGraphDestroy(g));
    mode = (CUstreamCaptureMode)9;
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuThreadExchangeStreamCaptureMode(&mode));
}

typedef struct other {
    CUcontext ctx;
    CUstream s;
    CUresult query, end;
} other_t;

static void *other_thread(void *arg)
{
    other_t *o = arg;
    CUevent e;
    CUgraph g;
    cuCtxSetCurrent(o->ctx);
    cuEventCreate(&e, CU_EVENT_DISABLE_TIMING);
    o->query = cuEventQuery(e);
    o->end = cuStreamEndCapture(o->s, &g);
    if (o->end == CUDA_SUCCESS)
        cuGraphDestroy(g);
    cuEventDestroy(e);
    return NULL;
}

static void run_other(other_t *o)
{
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, other_thread, o) == 0, "pthread_create failed");
    pthread_join(t, NULL);
}

/* Another thread: refused unsafe calls under a GLOBAL capture only; cannot end the capture. */
static void thread_rules(CUcontext ctx, CUstream s)
{
    other_t o = { ctx, s, 0, 0 };
    CHECK_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    run_other(&o);
    EXPECT_CU(CUDA_SUCCESS, o.query);
    EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, o.end);
    expect_invalidated(s);

    CHECK_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    run_other(&o);
    EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, o.query);
    expect_invalidated(s);

    CHECK_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    run_other(&o);
    EXPECT_CU(CUDA_SUCCESS, o.query);
    EXPECT(o.end == CUDA_SUCCESS, "relaxed capture not ended by another thread: %s",
           st_err(o.end));
    expect_status(s, CU_STREAM_CAPTURE_STATUS_NONE);
}

int main(void)
{
    CUstream blocking, nonblocking;
    int v;

    CUcontext ctx = st_setup(0);
    f = st_function(ptx, "touch");
    CHECK_CU(cuMemAlloc(&d, sizeof(int)));
    CHECK_CU(cuMemsetD32(d, 0, 1));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
    CHECK_CU(cuStreamCreate(&nonblocking, CU_STREAM_NON_BLOCKING));

    begin_rules(nonblocking);
    sync_rules(nonblocking);
    legacy_rules(blocking, nonblocking);
    event_and_callback_rules(nonblocking);
    unsafe_rules(nonblocking);
    thread_rules(ctx, nonblocking);

    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuMemcpyDtoH(&v, d, sizeof(v)));
    EXPECT(v == 11, "the kernel ran %d times, expected 11 (captured work never runs)", v);
    return 0;
}
