/* SPDX-License-Identifier: MIT */
/*
 * cupti_buffers.c - the CUPTI stand-in requests and completes activity buffers as CUPTI
 * documents.
 *
 * With 1024-byte buffers (four 216-byte kernel records each), 22 kernels fill five buffers that
 * come back full, on their own, before any flush; the sixth, holding two records, comes back
 * at cuptiActivityFlushAll.  Every buffer requested is completed exactly once, validSize is the
 * end of its last record, and cuptiActivityGetNextRecord walks each to
 * CUPTI_ERROR_MAX_LIMIT_REACHED (the helper checks the walk).  maxNumRecords bounds the records
 * per buffer; a buffer that does not start on an 8-byte boundary gets its records at aligned
 * addresses with validSize counted from its start.  Records that find no buffer (the request
 * is declined, or the buffer is too small) are dropped and counted in the queue of their
 * context and stream (here the legacy stream's), and reading the count resets it.
 */
#include <time.h>

#include "cupti_test.h"

#define KREC sizeof(CUpti_ActivityKernel10)

static CUfunction f;
static CUcontext ctx;

static void launch_sync(int n)
{
    for (int i = 0; i < n; i++)
        ct_launch(f, NULL, 0, 0);
    CHECK_CU(cuCtxSynchronize());
}

/* Wait (up to 10 s) until `n` buffers have come back without a flush. */
static void wait_completions(int n)
{
    for (int i = 0; i < 1000 && ct_completed() < n; i++)
        nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
    EXPECT(ct_completed() >= n, "%d buffers completed without a flush, got %d", n,
           ct_completed());
}

static void set_shape(size_t size, size_t skew, size_t max, int decline)
{
    pthread_mutex_lock(&ct_lock);
    ct_buf_size = size, ct_buf_skew = skew, ct_max_records = max, ct_decline = decline;
    pthread_mutex_unlock(&ct_lock);
}

static void expect_valid(const size_t *want, int n)
{
    pthread_mutex_lock(&ct_lock);
    EXPECT(ct_completions == n && ct_requests == n,
           "%d buffers requested and completed, got %d requested, %d completed", n, ct_requests,
           ct_completions);
    for (int i = 0; i < n; i++)
        EXPECT(ct_valid[i] == want[i], "buffer %d: validSize %zu, got %zu", i, want[i],
               ct_valid[i]);
    pthread_mutex_unlock(&ct_lock);
}

static size_t dropped(void)
{
    size_t n = 12345;
    CHECK_CUPTI(ct.dropped(ctx, 0, &n));
    return n;
}

int main(void)
{
    CUmodule mod;

    ctx = st_setup(0);
    ct_open();
    CHECK_CU(cuModuleLoadData(&mod, ct_costly_ptx));
    CHECK_CU(cuModuleGetFunction(&f, mod, "costly"));
    set_shape(1024, 0, 0, 0);
    ct_register();
    CHECK_CUPTI(ct.enable(CUPTI_ACTIVITY_KIND_KERNEL));

    /* Full buffers come back by themselves; the partial one at the flush. */
    launch_sync(22);
    wait_completions(5);
    nanosleep(&(struct timespec){ 0, 50 * 1000 * 1000 }, NULL);
    EXPECT(ct_completed() == 5, "a partial buffer waits for a flush: 5 completed, got %d",
           ct_completed());
    CHECK_CUPTI(ct.flush_all(0));
    expect_valid((const size_t[]){ 4 * KREC, 4 * KREC, 4 * KREC, 4 * KREC, 4 * KREC, 2 * KREC },
                 6);
    EXPECT(ct_nrecords == 22 && ct_count(CUPTI_ACTIVITY_KIND_KERNEL) == 22,
           "22 kernel records, got %zu", ct_nrecords);
    CHECK_CUPTI(ct.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    EXPECT(ct_completed() == 6, "a flush with nothing queued returns no buffer");

    /* maxNumRecords = 3: buffers of 3, 3 and 1 records. */
    ct_reset();
    set_shape(64 * 1024, 0, 3, 0);
    launch_sync(7);
    wait_completions(2);
    ct_flush();
    expect_valid((const size_t[]){ 3 * KREC, 3 * KREC, KREC }, 3);

    /* A buffer 4 bytes past an 8-byte boundary. */
    ct_reset();
    set_shape(1024, 4, 0, 0);
    launch_sync(2);
    ct_flush();
    expect_valid((const size_t[]){ 4 + 2 * KREC }, 1);

    /* No buffer: the records are dropped and counted; the count resets when read. */
    ct_reset();
    EXPECT(dropped() == 0, "no record dropped so far");
    set_shape(1024, 0, 0, 1);
    launch_sync(3);
    ct_flush();
    EXPECT(ct_nrecords == 0 && ct_completions == 0, "nothing delivered without buffers");
    EXPECT(ct_requests == 3, "a buffer requested for each record, got %d", ct_requests);
    EXPECT(dropped() == 3, "3 records dropped");
    EXPECT(dropped() == 0, "the dropped count resets when read");

    /* A buffer too small for a kernel record: dropped, the buffer still comes back. */
    ct_reset();
    set_shape(100, 0, 0, 0);
    launch_sync(1);
    ct_flush();
    expect_valid((const size_t[]){ 0 }, 1);
    EXPECT(ct_nrecords == 0 && dropped() == 1, "the record that did not fit is dropped");

    CHECK_CU(cuModuleUnload(mod));
    return 0;
}
