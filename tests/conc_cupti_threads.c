/* SPDX-License-Identifier: MIT */
/*
 * conc_cupti_threads.c - the CUPTI stand-in under concurrency: eight threads launch kernels
 * and memsets on their own streams, each call with its own external id pushed on that
 * thread's stack, while another thread keeps calling cuptiActivityFlushAll and the delivery
 * thread completes small buffers as they fill.  Every call must yield exactly one external
 * record with its id, one DRIVER API record and one kernel or memset record with the same
 * correlation id on the calling thread's stream; no record may be lost or delivered twice,
 * and every buffer requested comes back.  (Run under the thread sanitizer as well: tests
 * named conc_*.)
 */
#include <stdatomic.h>

#include "cupti_test.h"

#define THREADS 8
#define ITERS 50

static CUcontext ctx;
static CUfunction fn;
static CUdeviceptr mem[THREADS];
static unsigned long long stream_ids[THREADS];
static _Atomic int running;

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    CUstream s;
    CHECK_CU(cuCtxSetCurrent(ctx));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamGetId(s, &stream_ids[t]));
    for (int i = 0; i < ITERS; i++) {
        CHECK_CUPTI(ct.push(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, (uint64_t)t * 1000 + i));
        ct_launch(fn, s, 1e3, 0);
        CHECK_CUPTI(ct.pop(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, NULL));
        CHECK_CUPTI(ct.push(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, (uint64_t)t * 1000 + 500 + i));
        CHECK_CU(cuMemsetD8Async(mem[t], (unsigned char)i, 256, s));
        CHECK_CUPTI(ct.pop(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, NULL));
    }
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuStreamDestroy(s));
    return NULL;
}

static void *flusher(void *unused)
{
    while (atomic_load(&running))
        CHECK_CUPTI(ct.flush_all(0));
    return NULL;
}

/* The record (not external) with this correlation id; exactly one must exist. */
static const ct_record_t *only_record(uint32_t corr)
{
    const ct_record_t *found = NULL;
    for (size_t i = 0; i < ct_nrecords; i++) {
        const ct_record_t *r = &ct_records[i];
        uint32_t c = r->any.kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ? r->kernel.correlationId
                     : r->any.kind == CUPTI_ACTIVITY_KIND_MEMSET ? r->memset.correlationId : 0;
        if (c != corr)
            continue;
        EXPECT(!found, "one record for correlation id %u", corr);
        found = r;
    }
    EXPECT(found, "a record for correlation id %u", corr);
    return found;
}

/* Check the calls of thread t: ids t*1000+i (kernels) and t*1000+500+i (memsets). */
static void check_thread(int t, uint32_t *corr_by_id)
{
    for (int i = 0; i < 2 * ITERS; i++) {
        int memset_call = i >= ITERS;
        uint64_t id = (uint64_t)t * 1000 + (memset_call ? 500 + i - ITERS : i);
        uint32_t corr = corr_by_id[id];
        EXPECT(corr != 0, "an external record for id %llu", (unsigned long long)id);
        const ct_record_t *r = only_record(corr);
        CUpti_ActivityKind want = memset_call ? CUPTI_ACTIVITY_KIND_MEMSET
                                              : CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        uint32_t sid = memset_call ? r->memset.streamId : r->kernel.streamId;
        EXPECT(r->any.kind == want && sid == stream_ids[t],
               "id %llu: kind %d on stream %llu, got kind %d on stream %u",
               (unsigned long long)id, (int)want, stream_ids[t], (int)r->any.kind, sid);
    }
}

int main(void)
{
    pthread_t th[THREADS], fl;
    static uint32_t corr_by_id[THREADS * 1000];

    ctx = st_setup(0);
    ct_open();
    ct_buf_size = 2048;
    ct_register();
    CHECK_CUPTI(ct.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    CHECK_CUPTI(ct.enable(CUPTI_ACTIVITY_KIND_MEMSET));
    CHECK_CUPTI(ct.enable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION));
    CHECK_CUPTI(ct.enable(CUPTI_ACTIVITY_KIND_DRIVER)); /* external records come with API ones */
    fn = st_function(ct_costly_ptx, "costly");
    for (int t = 0; t < THREADS; t++)
        CHECK_CU(cuMemAlloc(&mem[t], 256));

    atomic_store(&running, 1);
    EXPECT(pthread_create(&fl, NULL, flusher, NULL) == 0, "the flushing thread");
    for (int t = 0; t < THREADS; t++)
        EXPECT(pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t) == 0, "thread %d", t);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    atomic_store(&running, 0);
    pthread_join(fl, NULL);
    CHECK_CU(cuCtxSynchronize());
    ct_flush();

    pthread_mutex_lock(&ct_lock);
    EXPECT(ct_requests == ct_completions, "every buffer came back: %d requested, %d completed",
           ct_requests, ct_completions);
    EXPECT(ct_nrecords == 6 * THREADS * ITERS, "%d records, got %zu", 6 * THREADS * ITERS,
           ct_nrecords);
    for (size_t i = 0; i < ct_nrecords; i++) {
        const CUpti_ActivityExternalCorrelation *e = &ct_records[i].ext;
        if (e->kind != CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION)
            continue;
        EXPECT(e->externalId < THREADS * 1000 && !corr_by_id[e->externalId],
               "one external record per id, id %llu", (unsigned long long)e->externalId);
        corr_by_id[e->externalId] = e->correlationId;
    }
    for (int t = 0; t < THREADS; t++)
        check_thread(t, corr_by_id);
    pthread_mutex_unlock(&ct_lock);
    for (int t = 0; t < THREADS; t++)
        CHECK_CU(cuMemFree(mem[t]));
    return 0;
}
