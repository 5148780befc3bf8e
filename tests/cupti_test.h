/* SPDX-License-Identifier: MIT */
/*
 * cupti_test.h - helpers for the tests of the libcupti.so stand-in (tests/cupti_*.c,
 * conc_cupti_*.c).
 *
 * The library is found as a profiler finds it: dlopen("libcupti.so") through LD_LIBRARY_PATH
 * (the runner puts $BUILD/sim there), never linked.  ct_open resolves the entry points into
 * `ct`.  The buffer callbacks hand out heap buffers of ct_buf_size bytes (ct_buf_skew bytes
 * past an 8-byte boundary, ct_max_records per buffer), and on completion walk the buffer with
 * cuptiActivityGetNextRecord, check that the walk ends exactly at validSize with
 * CUPTI_ERROR_MAX_LIMIT_REACHED, and keep a copy of every record in delivery order.
 */
#ifndef CUPTI_TEST_H
#define CUPTI_TEST_H

#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "simtest.h"

typedef struct ct_api {
    __typeof__(cuptiActivityEnable) *enable;
    __typeof__(cuptiActivityDisable) *disable;
    __typeof__(cuptiActivityRegisterCallbacks) *register_callbacks;
    __typeof__(cuptiActivityFlushAll) *flush_all;
    __typeof__(cuptiActivityGetNextRecord) *next_record;
    __typeof__(cuptiActivityGetNumDroppedRecords) *dropped;
    __typeof__(cuptiActivityPushExternalCorrelationId) *push;
    __typeof__(cuptiActivityPopExternalCorrelationId) *pop;
    __typeof__(cuptiGetTimestamp) *timestamp;
    __typeof__(cuptiSubscribe) *subscribe;
    __typeof__(cuptiSubscribe_v2) *subscribe_v2;
    __typeof__(cuptiUnsubscribe) *unsubscribe;
    __typeof__(cuptiGetResultString) *result_string;
    __typeof__(cuptiGetErrorMessage) *error_message;
    __typeof__(cuptiFinalize) *finalize;
} ct_api_t;

static ct_api_t ct;

static inline const char *ct_err(CUptiResult r)
{
    const char *s = NULL;
    if (!ct.result_string || ct.result_string(r, &s) != CUPTI_SUCCESS || !s)
        return "(unknown CUptiResult)";
    return s;
}

/* The call must return `want`; otherwise print both and exit 1. */
#define EXPECT_CUPTI(want, call)                                                            \
    do {                                                                                    \
        CUptiResult got_ = (call);                                                          \
        if (got_ != (want)) {                                                               \
            fprintf(stderr, "%s:%d: %s\n  expected %s (%d), got %s (%d)\n", __FILE__,       \
                    __LINE__, #call, ct_err(want), (int)(want), ct_err(got_), (int)got_);   \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

#define CHECK_CUPTI(call) EXPECT_CUPTI(CUPTI_SUCCESS, call)

static inline void *ct_sym(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    EXPECT(p != NULL, "libcupti.so exports %s", name);
    return p;
}

/* dlopen the stand-in and resolve every entry point the tests use; exits 1 on failure. */
static inline void ct_open(void)
{
    void *lib = dlopen("libcupti.so", RTLD_NOW | RTLD_LOCAL);
    EXPECT(lib != NULL, "dlopen(libcupti.so) through LD_LIBRARY_PATH: %s", dlerror());
    ct.enable = ct_sym(lib, "cuptiActivityEnable");
    ct.disable = ct_sym(lib, "cuptiActivityDisable");
    ct.register_callbacks = ct_sym(lib, "cuptiActivityRegisterCallbacks");
    ct.flush_all = ct_sym(lib, "cuptiActivityFlushAll");
    ct.next_record = ct_sym(lib, "cuptiActivityGetNextRecord");
    ct.dropped = ct_sym(lib, "cuptiActivityGetNumDroppedRecords");
    ct.push = ct_sym(lib, "cuptiActivityPushExternalCorrelationId");
    ct.pop = ct_sym(lib, "cuptiActivityPopExternalCorrelationId");
    ct.timestamp = ct_sym(lib, "cuptiGetTimestamp");
    ct.subscribe = ct_sym(lib, "cuptiSubscribe");
    ct.subscribe_v2 = ct_sym(lib, "cuptiSubscribe_v2");
    ct.unsubscribe = ct_sym(lib, "cuptiUnsubscribe");
    ct.result_string = ct_sym(lib, "cuptiGetResultString");
    ct.error_message = ct_sym(lib, "cuptiGetErrorMessage");
    ct.finalize = ct_sym(lib, "cuptiFinalize");
}

/* ---------------------------------------------------------------- collected records */

/* One delivered record, copied out of its buffer. */
typedef union ct_record {
    CUpti_Activity any;
    CUpti_ActivityKernel10 kernel;
    CUpti_ActivityMemcpy6 memcpy;
    CUpti_ActivityMemset4 memset;
    CUpti_ActivityExternalCorrelation ext;
    CUpti_ActivityAPI api;
} ct_record_t;

#define CT_MAX_RECORDS 8192

static pthread_mutex_t ct_lock = PTHREAD_MUTEX_INITIALIZER;
static ct_record_t ct_records[CT_MAX_RECORDS];
static size_t ct_nrecords;
static int ct_requests, ct_completions;
static size_t ct_valid[1024];           /* validSize of each completed buffer, in order */
static char ct_failure[256];            /* first problem seen in a callback */

/* Buffer shape handed out by the request callback (set before enabling). */
static size_t ct_buf_size = 64 * 1024;
static size_t ct_buf_skew;              /* bytes past an 8-byte boundary */
static size_t ct_max_records;
static int ct_decline;                  /* the request callback returns no buffer */

/* The size of a record of `kind`: CUDA 13's record structs, the ones a client reads.  This is
 * the test's own table, not the library's (sim/cupti/buffer.c, which libcupti.so does not
 * export): an independent oracle, so that a wrong size or placement there shows here as a
 * misplaced record or a validSize that is not the end of the last one. */
static inline size_t ct_record_size(CUpti_ActivityKind kind)
{
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return sizeof(CUpti_ActivityExternalCorrelation);
    case CUPTI_ACTIVITY_KIND_DRIVER: return sizeof(CUpti_ActivityAPI);
    default: return 0;
    }
}

static inline void ct_fail(const char *msg, long a, long b)
{
    if (!ct_failure[0])
        snprintf(ct_failure, sizeof(ct_failure), "%s (%ld, %ld)", msg, a, b);
}

static inline void CUPTIAPI ct_request(uint8_t **buffer, size_t *size, size_t *max_records)
{
    pthread_mutex_lock(&ct_lock);
    ct_requests++;
    int decline = ct_decline;
    size_t skew = ct_buf_skew, bytes = ct_buf_size;
    *max_records = ct_max_records;
    pthread_mutex_unlock(&ct_lock);
    *buffer = NULL;
    *size = 0;
    if (decline)
        return;
    uint8_t *raw = aligned_alloc(8, (skew + bytes + 7) & ~(size_t)7);
    if (!raw)
        return;
    *buffer = raw + skew;
    *size = bytes;
}

/* Walk one completed buffer; called with ct_lock held. */
static inline void ct_walk(uint8_t *buffer, size_t size, size_t valid)
{
    CUpti_Activity *rec = NULL;
    CUptiResult r;
    if (valid > size)
        ct_fail("validSize beyond the buffer", (long)valid, (long)size);
    while ((r = ct.next_record(buffer, valid, &rec)) == CUPTI_SUCCESS) {
        size_t n = ct_record_size(rec->kind);
        if (((uintptr_t)rec & 7) || !n || (uint8_t *)rec + n > buffer + valid) {
            ct_fail("misplaced record", (long)((uint8_t *)rec - buffer), (long)rec->kind);
            return;
        }
        if (ct_nrecords < CT_MAX_RECORDS)
            memcpy(&ct_records[ct_nrecords++], rec, n);
    }
    if (r != CUPTI_ERROR_MAX_LIMIT_REACHED)
        ct_fail("walk ended with something else than MAX_LIMIT_REACHED", (long)r, (long)valid);
    else if (rec && (uint8_t *)rec + ct_record_size(rec->kind) != buffer + valid)
        ct_fail("validSize is not the end of the last record", (long)valid,
                (long)((uint8_t *)rec + ct_record_size(rec->kind) - buffer));
}

static inline void CUPTIAPI ct_complete(CUcontext ctx, uint32_t stream, uint8_t *buffer,
                                        size_t size, size_t valid)
{
    pthread_mutex_lock(&ct_lock);
    if (ctx || stream)
        ct_fail("completion carries a context or stream", (long)(uintptr_t)ctx, (long)stream);
    if (ct_completions < 1024)
        ct_valid[ct_completions] = valid;
    ct_completions++;
    ct_walk(buffer, size, valid);
    pthread_mutex_unlock(&ct_lock);
    free(buffer - ct_buf_skew);
}

/* Register the collecting callbacks. */
static inline void ct_register(void)
{
    CHECK_CUPTI(ct.register_callbacks(ct_request, ct_complete));
}

/* Flush, then fail if a callback saw a problem. */
static inline void ct_flush(void)
{
    CHECK_CUPTI(ct.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    pthread_mutex_lock(&ct_lock);
    EXPECT(!ct_failure[0], "buffers as CUPTI documents them: %s", ct_failure);
    pthread_mutex_unlock(&ct_lock);
}

/* Number of collected records of `kind`. */
static inline size_t ct_count(CUpti_ActivityKind kind)
{
    size_t n = 0;
    pthread_mutex_lock(&ct_lock);
    for (size_t i = 0; i < ct_nrecords; i++)
        n += ct_records[i].any.kind == kind;
    pthread_mutex_unlock(&ct_lock);
    return n;
}

/* Number of buffers completed so far. */
static inline int ct_completed(void)
{
    pthread_mutex_lock(&ct_lock);
    int n = ct_completions;
    pthread_mutex_unlock(&ct_lock);
    return n;
}

/* Forget what was collected so far. */
static inline void ct_reset(void)
{
    pthread_mutex_lock(&ct_lock);
    ct_nrecords = 0;
    ct_requests = ct_completions = 0;
    pthread_mutex_unlock(&ct_lock);
}

/* A kernel whose cost the test chooses (flops, bytes), for exact virtual durations. */
static const char ct_costly_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry costly(.param .f64 flops, .param .f64 bytes)\n{\n ret;\n}\n";

SIM_KERNEL void costly(const sim_launch_t *l, void **params)
{
    sim_kernel_cost(*(double *)params[0], *(double *)params[1]);
}

static inline void ct_launch(CUfunction f, CUstream s, double flops, double bytes)
{
    void *args[] = { &flops, &bytes };
    CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
}

#endif /* CUPTI_TEST_H */
