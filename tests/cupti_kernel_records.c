/* SPDX-License-Identifier: MIT */
/*
 * cupti_kernel_records.c - the CUPTI stand-in reports kernels as CUpti_ActivityKernel10
 * records on the simulator's virtual clock, correlated with external ids.
 *
 * Four kernels of known cost run on two streams; three of them are launched with external ids
 * pushed (one with two kinds pushed at once).  After a flush there must be one
 * CONCURRENT_KERNEL record per kernel with the launch's stream, context, device, grid, block
 * and name; one EXTERNAL_CORRELATION record per pushed kind, delivered before the kernel
 * record it names and before the launch's DRIVER API record, and carrying the innermost id;
 * durations equal to the machine model; and start/end times that agree with
 * cuEventElapsedTime and cuptiGetTimestamp, since all of them read the same virtual clock.
 * The kernel name stays valid after its module is unloaded.  First, with DRIVER off, a launch
 * with an id pushed gets no external record: CUPTI makes them only before API records.
 */
#include <math.h>
#include <unistd.h>

#include "cupti_test.h"

/* Kernel costs: flops at 51 TFLOP/s plus 2 us of launch latency (the default machine). */
#define MS_FLOPS 51e9
#define LAUNCH_NS 2000.0

static const CUpti_ActivityKernel10 *kernel_with_corr(uint32_t corr)
{
    for (size_t i = 0; i < ct_nrecords; i++)
        if (ct_records[i].kernel.kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
            ct_records[i].kernel.correlationId == corr)
            return &ct_records[i].kernel;
    return NULL;
}

/* The DRIVER record of correlation id corr, checking there is exactly one; its index. */
static size_t api_of(uint32_t corr)
{
    size_t n = 0, at = 0;
    for (size_t i = 0; i < ct_nrecords; i++)
        if (ct_records[i].any.kind == CUPTI_ACTIVITY_KIND_DRIVER &&
            ct_records[i].api.correlationId == corr)
            n++, at = i;
    EXPECT(n == 1, "one DRIVER record for correlation id %u, got %zu", corr, n);
    return at;
}

/* The external record (kind, id): its correlation id, checking it precedes its kernel and its
 * API record. */
static uint32_t corr_of(CUpti_ExternalCorrelationKind kind, uint64_t id)
{
    for (size_t i = 0; i < ct_nrecords; i++) {
        const CUpti_ActivityExternalCorrelation *e = &ct_records[i].ext;
        if (e->kind != CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION || e->externalKind != kind ||
            e->externalId != id)
            continue;
        for (size_t j = 0; j < i; j++)
            EXPECT(!(ct_records[j].any.kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
                     ct_records[j].kernel.correlationId == e->correlationId),
                   "external record (%d, %llu) delivered after its kernel", (int)kind,
                   (unsigned long long)id);
        EXPECT(api_of(e->correlationId) > i, "external record (%d, %llu) before its API record",
               (int)kind, (unsigned long long)id);
        return e->correlationId;
    }
    fprintf(stderr, "no external correlation record for kind %d id %llu\n", (int)kind,
            (unsigned long long)id);
    exit(1);
}

static void expect_ns(const char *what, double got, double want)
{
    EXPECT(fabs(got - want) <= 10.0, "%s: expected %.0f ns, got %.0f ns", what, want, got);
}

static double elapsed_ns(CUevent a, CUevent b)
{
    float ms;
    CHECK_CU(cuEventElapsedTime(&ms, a, b));
    return (double)ms * 1e6;
}

static void check_kernel(const CUpti_ActivityKernel10 *k, const char *what, CUstream s,
                         unsigned long long ctx_id, double want_ns)
{
    unsigned long long sid;
    CHECK_CU(cuStreamGetId(s, &sid));
    EXPECT(k != NULL, "a kernel record for %s", what);
    EXPECT(k->streamId == sid, "%s: streamId %llu, got %u", what, sid, k->streamId);
    EXPECT(k->contextId == ctx_id, "%s: contextId %llu, got %u", what, ctx_id, k->contextId);
    EXPECT(k->deviceId == 0, "%s: deviceId 0, got %u", what, k->deviceId);
    EXPECT(k->gridX == 1 && k->gridY == 1 && k->gridZ == 1 && k->blockX == 32 &&
           k->blockY == 1 && k->blockZ == 1, "%s: grid 1x1x1, block 32x1x1", what);
    EXPECT(k->name && strcmp(k->name, "costly") == 0, "%s: name costly, got %s", what,
           k->name ? k->name : "(null)");
    EXPECT(k->completed == k->end, "%s: completed %llu = end %llu", what,
           (unsigned long long)k->completed, (unsigned long long)k->end);
    expect_ns(what, (double)(k->end - k->start), want_ns);
}

int main(void)
{
    CUcontext ctx = st_setup(0);
    CUmodule mod;
    CUfunction f;
    CUstream a, b;
    CUevent a0, a1, a2, b1;
    unsigned long long ctx_id;
    uint64_t t0, t_end, last = 0;

    ct_open();
    ct_register();
    CHECK_CUPTI(ct.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    CHECK_CUPTI(ct.enable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION));
    CHECK_CU(cuCtxGetId(ctx, &ctx_id));
    CHECK_CU(cuModuleLoadData(&mod, ct_costly_ptx));
    CHECK_CU(cuModuleGetFunction(&f, mod, "costly"));
    CHECK_CU(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    CUevent *evs[] = { &a0, &a1, &a2, &b1 };
    for (size_t i = 0; i < 4; i++)
        CHECK_CU(cuEventCreate(evs[i], CU_EVENT_DEFAULT));

    /* Without API records, no external ones. */
    CHECK_CUPTI(ct.push(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 100));
    ct_launch(f, a, 0, 0);
    CHECK_CUPTI(ct.pop(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, NULL));
    CHECK_CU(cuCtxSynchronize());
    ct_flush();
    EXPECT(ct_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == 1 &&
           ct_count(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) == 0 &&
           ct_count(CUPTI_ACTIVITY_KIND_DRIVER) == 0,
           "DRIVER off: the kernel's record alone, got %zu kernel, %zu external, %zu API",
           ct_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
           ct_count(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION),
           ct_count(CUPTI_ACTIVITY_KIND_DRIVER));
    ct_reset();
    CHECK_CUPTI(ct.enable(CUPTI_ACTIVITY_KIND_DRIVER));

    CHECK_CUPTI(ct.push(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 101));
    CHECK_CUPTI(ct.timestamp(&t0));
    CHECK_CU(cuEventRecord(a0, a));
    ct_launch(f, a, MS_FLOPS, 0);                                   /* k1: 1 ms on a */
    CHECK_CU(cuEventRecord(a1, a));
    CHECK_CUPTI(ct.pop(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, NULL));
    CHECK_CUPTI(ct.push(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 102));
    ct_launch(f, b, 2 * MS_FLOPS, 0);                               /* k2: 2 ms on b */
    CHECK_CU(cuEventRecord(b1, b));
    CHECK_CUPTI(ct.pop(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, NULL));
    CHECK_CUPTI(ct.push(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 103));
    CHECK_CUPTI(ct.push(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 104));
    CHECK_CUPTI(ct.push(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, 7));
    ct_launch(f, a, MS_FLOPS / 2, 0);                               /* k3: 0.5 ms on a */
    CHECK_CU(cuEventRecord(a2, a));
    CHECK_CUPTI(ct.pop(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, NULL));
    CHECK_CUPTI(ct.pop(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, NULL));
    CHECK_CUPTI(ct.pop(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, NULL));
    ct_launch(f, a, 0, 0);                                          /* k4: launch latency */
    CHECK_CU(cuCtxSynchronize());
    CHECK_CUPTI(ct.timestamp(&t_end));
    ct_flush();

    EXPECT(ct_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == 4, "4 kernel records, got %zu",
           ct_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    EXPECT(ct_count(CUPTI_ACTIVITY_KIND_KERNEL) == 0, "no KERNEL records (not enabled)");
    EXPECT(ct_count(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) == 4,
           "4 external records (k1, k2, k3 twice), got %zu",
           ct_count(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION));
    EXPECT(ct_requests == ct_completions && ct_completions >= 1,
           "every requested buffer completed: %d requested, %d completed", ct_requests,
           ct_completions);

    uint32_t c1 = corr_of(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 101);
    uint32_t c2 = corr_of(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 102);
    uint32_t c3 = corr_of(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 104);
    EXPECT(corr_of(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, 7) == c3,
           "both kinds pushed around k3 name its correlation id %u", c3);
    for (size_t i = 0; i < ct_nrecords; i++)
        EXPECT(!(ct_records[i].any.kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION &&
                 ct_records[i].ext.externalId == 103),
               "only the innermost id (104) of CUSTOM0 is reported around k3");
    EXPECT(c1 && c2 && c3 && c1 != c2 && c2 != c3 && c1 != c3,
           "distinct non-zero correlation ids, got %u %u %u", c1, c2, c3);
    const CUpti_ActivityKernel10 *k1 = kernel_with_corr(c1), *k2 = kernel_with_corr(c2);
    const CUpti_ActivityKernel10 *k3 = kernel_with_corr(c3), *k4 = NULL;
    for (size_t i = 0; i < ct_nrecords; i++)
        if (ct_records[i].any.kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
            ct_records[i].kernel.correlationId != c1 && ct_records[i].kernel.correlationId != c2
            && ct_records[i].kernel.correlationId != c3)
            k4 = &ct_records[i].kernel;
    check_kernel(k1, "k1", a, ctx_id, 1e6 + LAUNCH_NS);
    check_kernel(k2, "k2", b, ctx_id, 2e6 + LAUNCH_NS);
    check_kernel(k3, "k3", a, ctx_id, 0.5e6 + LAUNCH_NS);
    check_kernel(k4, "k4", a, ctx_id, LAUNCH_NS);
    EXPECT(k4->correlationId != 0, "k4 has a correlation id of its own");
    const CUpti_ActivityAPI *api = &ct_records[api_of(k4->correlationId)].api;
    EXPECT(api->start >= t0 && api->start <= k4->start && api->end >= api->start &&
           api->threadId == (uint32_t)gettid() && api->processId == (uint32_t)getpid(),
           "k4's API record: submitted at %llu before the kernel started (%llu), this thread",
           (unsigned long long)api->start, (unsigned long long)k4->start);

    /* One clock: events, records and cuptiGetTimestamp agree. */
    expect_ns("a0 -> a1 against t0 -> k1.end", elapsed_ns(a0, a1), (double)(k1->end - t0));
    expect_ns("a1 -> a2 against k1.end -> k3.end", elapsed_ns(a1, a2),
              (double)(k3->end - k1->end));
    expect_ns("a1 -> b1 against k1.end -> k2.end", elapsed_ns(a1, b1),
              (double)(k2->end - k1->end));
    EXPECT(k1->start > t0 && k1->end <= k3->start && k3->end <= k4->start,
           "stream order on a: k1 [%llu, %llu], k3 [%llu, %llu], k4 from %llu",
           (unsigned long long)k1->start, (unsigned long long)k1->end,
           (unsigned long long)k3->start, (unsigned long long)k3->end,
           (unsigned long long)k4->start);
    const CUpti_ActivityKernel10 *all[] = { k1, k2, k3, k4 };
    for (size_t i = 0; i < 4; i++)
        last = all[i]->end > last ? all[i]->end : last;
    EXPECT(t_end >= last, "cuptiGetTimestamp after cuCtxSynchronize (%llu) >= last end %llu",
           (unsigned long long)t_end, (unsigned long long)last);

    CHECK_CU(cuModuleUnload(mod));
    EXPECT(strcmp(k1->name, "costly") == 0, "the name outlives its module");
    for (size_t i = 0; i < 4; i++)
        CHECK_CU(cuEventDestroy(*evs[i]));
    CHECK_CU(cuStreamDestroy(a));
    CHECK_CU(cuStreamDestroy(b));
    return 0;
}
