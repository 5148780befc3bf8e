/* SPDX-License-Identifier: MIT */
/*
 * cupti_errors.c - bad arguments to the CUPTI stand-in get the codes cupti_activity.h,
 * cupti_callbacks.h and cupti_result.h document.
 *
 * cuptiActivityFlushAll before cuptiActivityRegisterCallbacks is INVALID_OPERATION; records
 * made before buffer callbacks exist are dropped and counted.  Enabling a kind outside the enum
 * is INVALID_KIND, one the stand-in does not collect NOT_COMPATIBLE.  cuptiActivityGetNextRecord
 * ends with MAX_LIMIT_REACHED and reports a truncated or unknown record as INVALID_KIND.
 * External correlation stacks are per thread and per kind: popping an empty one is QUEUE_EMPTY,
 * an invalid kind INVALID_PARAMETER.  NULL outputs are INVALID_PARAMETER everywhere.
 */
#include "cupti_test.h"

static void *pop_elsewhere(void *arg)
{
    *(CUptiResult *)arg = ct.pop(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, NULL);
    return NULL;
}

static void check_kinds(void)
{
    EXPECT_CUPTI(CUPTI_ERROR_INVALID_KIND, ct.enable(CUPTI_ACTIVITY_KIND_INVALID));
    EXPECT_CUPTI(CUPTI_ERROR_INVALID_KIND, ct.enable(CUPTI_ACTIVITY_KIND_COUNT));
    EXPECT_CUPTI(CUPTI_ERROR_INVALID_KIND, ct.enable((CUpti_ActivityKind)1000));
    EXPECT_CUPTI(CUPTI_ERROR_NOT_COMPATIBLE, ct.enable(CUPTI_ACTIVITY_KIND_RUNTIME));
    EXPECT_CUPTI(CUPTI_ERROR_NOT_COMPATIBLE, ct.enable(CUPTI_ACTIVITY_KIND_MEMCPY2));
    EXPECT_CUPTI(CUPTI_ERROR_INVALID_KIND, ct.disable(CUPTI_ACTIVITY_KIND_INVALID));
    EXPECT_CUPTI(CUPTI_ERROR_INVALID_KIND, ct.disable((CUpti_ActivityKind)-3));
    CHECK_CUPTI(ct.disable(CUPTI_ACTIVITY_KIND_RUNTIME));
}

/* A hand-made buffer: one external record, then what `tail_kind` says. */
static void check_next_record(void)
{
    _Alignas(8) uint8_t buf[256] = { 0 };
    CUpti_ActivityExternalCorrelation e = { CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
                                            CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 5, 9, 0 };
    CUpti_Activity *rec = NULL;
    size_t n = sizeof(e);

    memcpy(buf, &e, n);
    EXPECT_CUPTI(CUPTI_ERROR_INVALID_PARAMETER, ct.next_record(NULL, n, &rec));
    EXPECT_CUPTI(CUPTI_ERROR_INVALID_PARAMETER, ct.next_record(buf, n, NULL));
    EXPECT_CUPTI(CUPTI_ERROR_MAX_LIMIT_REACHED, ct.next_record(buf, 0, &rec));
    EXPECT_CUPTI(CUPTI_ERROR_INVALID_KIND, ct.next_record(buf, n - 4, &rec));
    CHECK_CUPTI(ct.next_record(buf, n, &rec));
    EXPECT(rec == (CUpti_Activity *)buf, "the first record at the buffer's start");
    EXPECT_CUPTI(CUPTI_ERROR_MAX_LIMIT_REACHED, ct.next_record(buf, n, &rec));

    CUpti_Activity bad = { CUPTI_ACTIVITY_KIND_RUNTIME };   /* a kind never written here */
    memcpy(buf + n, &bad, sizeof(bad));
    rec = NULL;
    CHECK_CUPTI(ct.next_record(buf, 2 * n, &rec));
    EXPECT_CUPTI(CUPTI_ERROR_INVALID_KIND, ct.next_record(buf, 2 * n, &rec));
}

static void check_external(void)
{
    uint64_t last = 0;
    pthread_t t;
    CUptiResult other = CUPTI_SUCCESS;

    EXPECT_CUPTI(CUPTI_ERROR_INVALID_PARAMETER,
                 ct.push(CUPTI_EXTERNAL_CORRELATION_KIND_INVALID, 1));
    EXPECT_CUPTI(CUPTI_ERROR_INVALID_PARAMETER, ct.push(CUPTI_EXTERNAL_CORRELATION_KIND_SIZE, 1));
    EXPECT_CUPTI(CUPTI_ERROR_INVALID_PARAMETER,
                 ct.pop(CUPTI_EXTERNAL_CORRELATION_KIND_INVALID, &last));
    EXPECT_CUPTI(CUPTI_ERROR_QUEUE_EMPTY, ct.pop(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last));
    CHECK_CUPTI(ct.push(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 5));
    CHECK_CUPTI(ct.push(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 6));
    EXPECT_CUPTI(CUPTI_ERROR_QUEUE_EMPTY, ct.pop(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, &last));
    EXPECT(pthread_create(&t, NULL, pop_elsewhere, &other) == 0, "a thread");
    pthread_join(t, NULL);
    EXPECT_CUPTI(CUPTI_ERROR_QUEUE_EMPTY, other);       /* the stack is this thread's */
    CHECK_CUPTI(ct.pop(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last));
    EXPECT(last == 6, "innermost id 6 popped first, got %llu", (unsigned long long)last);
    CHECK_CUPTI(ct.pop(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, NULL));
    EXPECT_CUPTI(CUPTI_ERROR_QUEUE_EMPTY, ct.pop(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, NULL));
}

static void check_strings(void)
{
    const char *s = NULL;
    CHECK_CUPTI(ct.result_string(CUPTI_SUCCESS, &s));
    EXPECT(s && strcmp(s, "CUPTI_SUCCESS") == 0, "name of CUPTI_SUCCESS, got %s", s);
    CHECK_CUPTI(ct.result_string(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, &s));
    EXPECT(strcmp(s, "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED") == 0, "got %s", s);
    CHECK_CUPTI(ct.error_message(CUPTI_ERROR_QUEUE_EMPTY, &s));
    EXPECT(s && strlen(s) > 10 && strstr(s, "CUPTI_") == NULL, "a message, got \"%s\"", s);
    EXPECT_CUPTI(CUPTI_ERROR_INVALID_PARAMETER, ct.result_string((CUptiResult)12345, &s));
    EXPECT_CUPTI(CUPTI_ERROR_INVALID_PARAMETER, ct.result_string(CUPTI_SUCCESS, NULL));
    EXPECT_CUPTI(CUPTI_ERROR_INVALID_PARAMETER, ct.error_message(CUPTI_SUCCESS, NULL));
}

int main(void)
{
    CUmodule mod;
    CUfunction f;
    CUpti_SubscriberHandle h;
    size_t n = 0;

    CUcontext ctx = st_setup(0);
    ct_open();
    EXPECT_CUPTI(CUPTI_ERROR_INVALID_OPERATION, ct.flush_all(0));
    CHECK_CU(cuModuleLoadData(&mod, ct_costly_ptx));
    CHECK_CU(cuModuleGetFunction(&f, mod, "costly"));
    CHECK_CUPTI(ct.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    ct_launch(f, NULL, 0, 0);
    ct_launch(f, NULL, 0, 0);
    CHECK_CU(cuCtxSynchronize());
    EXPECT_CUPTI(CUPTI_ERROR_INVALID_PARAMETER, ct.dropped(NULL, 0, NULL));
    CHECK_CUPTI(ct.dropped(ctx, 0, &n));
    EXPECT(n == 2, "2 records dropped before any buffer callback, got %zu", n);

    EXPECT_CUPTI(CUPTI_ERROR_INVALID_PARAMETER, ct.register_callbacks(NULL, ct_complete));
    EXPECT_CUPTI(CUPTI_ERROR_INVALID_PARAMETER, ct.register_callbacks(ct_request, NULL));
    EXPECT_CUPTI(CUPTI_ERROR_INVALID_OPERATION, ct.flush_all(0));
    ct_register();
    ct_flush();
    EXPECT(ct_nrecords == 0, "dropped records are not delivered later");

    check_kinds();
    check_next_record();
    check_external();
    check_strings();
    EXPECT_CUPTI(CUPTI_ERROR_INVALID_PARAMETER, ct.timestamp(NULL));
    EXPECT_CUPTI(CUPTI_ERROR_INVALID_PARAMETER, ct.subscribe(NULL, NULL, NULL));
    CUpti_SubscriberParams p = { 0 };
    EXPECT_CUPTI(CUPTI_ERROR_INVALID_PARAMETER, ct.subscribe_v2(&h, NULL, NULL, &p));
    CHECK_CU(cuModuleUnload(mod));
    return 0;
}
