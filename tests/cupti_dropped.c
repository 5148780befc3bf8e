/* SPDX-License-Identifier: MIT */
/*
 * cupti_dropped.c - the CUPTI stand-in counts dropped records per queue, as
 * cuptiActivityGetNumDroppedRecords documents: one count per context and stream, and the
 * global queue (context NULL) for records tied to no context.
 *
 * With every buffer request declined, kernels on two streams of one context, on the legacy
 * stream of another context, and the external correlation and driver API records of those
 * launches are all dropped.  Each (context, stream) reads the drops of its own stream only;
 * the global queue reads the context-less records only, whatever stream id is passed; reading
 * one queue resets it and leaves the others; a queue with no drops reads 0; a destroyed
 * context has no queue (CUPTI_ERROR_INVALID_CONTEXT).
 */
#include "cupti_test.h"

static size_t dropped(CUcontext ctx, uint32_t stream)
{
    size_t n = 12345;
    CHECK_CUPTI(ct.dropped(ctx, stream, &n));
    return n;
}

static uint32_t stream_id(CUstream s)
{
    unsigned long long id = 0;
    CHECK_CU(cuStreamGetId(s, &id));
    return (uint32_t)id;
}

int main(void)
{
    CUcontext a = st_setup(0), b;
    CUstream s1, s2;
    CUdevice dev;
    uint64_t last = 0;

    ct_open();
    CHECK_CU(cuCtxGetDevice(&dev));
    CUfunction fa = st_function(ct_costly_ptx, "costly");
    CHECK_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuCtxCreate(&b, NULL, 0, dev));
    CUfunction fb = st_function(ct_costly_ptx, "costly");
    CHECK_CU(cuCtxSetCurrent(a));

    ct_decline = 1;
    ct_register();
    CHECK_CUPTI(ct.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    CHECK_CUPTI(ct.enable(CUPTI_ACTIVITY_KIND_DRIVER));
    CHECK_CUPTI(ct.enable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION));

    /* a: 3 kernels on s1, 2 on s2, each under an external id; b: 1 on its legacy stream. */
    CHECK_CUPTI(ct.push(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 7));
    for (int i = 0; i < 3; i++)
        ct_launch(fa, s1, 0, 0);
    for (int i = 0; i < 2; i++)
        ct_launch(fa, s2, 0, 0);
    CHECK_CUPTI(ct.pop(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuCtxSetCurrent(b));
    ct_launch(fb, NULL, 0, 0);
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuCtxSetCurrent(a));
    ct_flush();
    EXPECT(ct_nrecords == 0, "nothing delivered with every request declined");

    EXPECT(stream_id(s1) != stream_id(s2), "two streams, two ids");
    size_t n = dropped(a, stream_id(s2));
    EXPECT(n == 2, "context a, stream s2: its 2 kernels dropped, got %zu", n);
    n = dropped(a, stream_id(s2));
    EXPECT(n == 0, "reading resets the count, got %zu", n);
    n = dropped(b, 0);
    EXPECT(n == 1, "context b, legacy stream: 1 kernel dropped, got %zu", n);
    n = dropped(a, 0);
    EXPECT(n == 0, "context a's legacy stream dropped nothing, got %zu", n);
    /* 5 external correlation and 6 API records: the global queue's, any stream id. */
    n = dropped(NULL, stream_id(s1));
    EXPECT(n == 11, "global queue: 5 external correlation and 6 API records, got %zu", n);
    EXPECT(dropped(NULL, 0) == 0, "the global count reset when read");
    n = dropped(a, stream_id(s1));
    EXPECT(n == 3, "context a, stream s1: its 3 kernels, untouched by the other reads, got %zu",
           n);

    CHECK_CU(cuCtxDestroy(b));
    EXPECT_CUPTI(CUPTI_ERROR_INVALID_CONTEXT, ct.dropped(b, 0, &n));
    EXPECT_CUPTI(CUPTI_ERROR_INVALID_PARAMETER, ct.dropped(a, 0, NULL));
    CHECK_CU(cuStreamDestroy(s1));
    CHECK_CU(cuStreamDestroy(s2));
    return 0;
}
