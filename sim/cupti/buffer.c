/* SPDX-License-Identifier: MIT */
/*
 * buffer.c - activity buffers: records queued by any thread, delivered into the client's
 * buffers by one delivery thread or by cuptiActivityFlushAll, and read back with
 * cuptiActivityGetNextRecord.
 *
 * Two locks, taken in this order: `deliver` (owns the client's current buffer and the
 * callbacks; held across the client's callbacks) and `pend.lock` (the queue; held only to
 * append or to take the queue whole).  The simulator's executor appends its records under
 * pend.lock alone, so a slow or blocking client callback never stalls the simulator, and no
 * client callback ever runs on the executor or under a simulator lock (DESIGN.md, invariant 7).
 *
 * As CUPTI documents: a buffer is requested when a record needs one, completed when the next
 * record does not fit or it holds maxNumRecords records, and on cuptiActivityFlushAll however
 * full it is.  Records are complete when queued, so a forced flush and a default one deliver
 * the same records: every one queued before the call.  Records sit at 8-byte aligned
 * addresses; validSize counts from the start of the buffer.  A record that finds no buffer
 * (none registered, the request callback gave none, or one too small) is dropped and counted
 * in the queue cuptiActivityGetNumDroppedRecords names it by: its context and stream (kernels,
 * copies, memsets), or the global queue (context NULL) for records tied to no context
 * (external correlation, API records).  The counts have a lock of their own, a leaf taken
 * under either of the others.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cupti_sim.h"

#define ALIGN 8u

static pthread_mutex_t deliver = PTHREAD_MUTEX_INITIALIZER;
static CUpti_BuffersCallbackRequestFunc cb_request;    /* under deliver */
static CUpti_BuffersCallbackCompleteFunc cb_complete;  /* under deliver */
static _Atomic int registered;

/* Dropped records per queue: ctx 0 is the global one (CUDA context ids start at 1). */
typedef struct drop_queue {
    uint64_t ctx;
    uint32_t stream;
    size_t n;
} drop_queue_t;

static struct {
    pthread_mutex_t lock;
    drop_queue_t *q;
    size_t n, cap;
    size_t lost;            /* drops whose queue could not be kept (no memory): the global's */
} drops = { PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0 };

/* The client's buffer being filled; under deliver. */
typedef struct client_buf {
    uint8_t *buf;
    size_t size, pos;       /* pos: next record's offset (aligned), also the valid size */
    size_t max, n;          /* maxNumRecords (0: no limit) and records written */
} client_buf_t;

static client_buf_t cur;

/* Records waiting for delivery, back to back. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t cv;
    uint8_t *buf;
    size_t len, cap, n;
    size_t room, room_recs; /* what the current buffer can still take (set by deliverers) */
    int wake;               /* the delivery thread has work */
} pend = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0, 0, 0, 0, 0, 0 };

static pthread_once_t worker_once = PTHREAD_ONCE_INIT;

size_t sim_cupti_record_size(CUpti_ActivityKind kind)
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

static size_t align_up(size_t x)
{
    return (x + ALIGN - 1) & ~(size_t)(ALIGN - 1);
}

/* Offset of the first record in a buffer: its first 8-byte aligned address. */
static size_t first_offset(const uint8_t *buf)
{
    return align_up((uintptr_t)buf) - (uintptr_t)buf;
}

/* ---------------------------------------------------------------- dropped records */

/* The queue of a record: its context and stream when it has them, else the global one. */
static void queue_of(const uint8_t *rec, uint64_t *ctx, uint32_t *stream)
{
    CUpti_ActivityKind kind = ((const CUpti_Activity *)rec)->kind;
    *ctx = 0, *stream = 0;
    if (kind == CUPTI_ACTIVITY_KIND_KERNEL || kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
        const CUpti_ActivityKernel10 *k = (const void *)rec;
        *ctx = k->contextId, *stream = k->streamId;
    } else if (kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
        const CUpti_ActivityMemcpy6 *c = (const void *)rec;
        *ctx = c->contextId, *stream = c->streamId;
    } else if (kind == CUPTI_ACTIVITY_KIND_MEMSET) {
        const CUpti_ActivityMemset4 *m = (const void *)rec;
        *ctx = m->contextId, *stream = m->streamId;
    }
    if (!*ctx)
        *stream = 0;
}

/* The count of queue (ctx, stream), made when missing; NULL when out of memory.  Under
 * drops.lock. */
static size_t *drop_count(uint64_t ctx, uint32_t stream)
{
    for (size_t i = 0; i < drops.n; i++)
        if (drops.q[i].ctx == ctx && drops.q[i].stream == stream)
            return &drops.q[i].n;
    if (drops.n == drops.cap) {
        size_t cap = drops.cap ? drops.cap * 2 : 16;
        drop_queue_t *q = realloc(drops.q, cap * sizeof(*q));
        if (!q)
            return NULL;
        drops.q = q, drops.cap = cap;
    }
    drops.q[drops.n] = (drop_queue_t){ ctx, stream, 0 };
    return &drops.q[drops.n++].n;
}

/* One record dropped: counted in its queue. */
static void drop(const void *rec)
{
    uint64_t ctx;
    uint32_t stream;
    queue_of(rec, &ctx, &stream);
    pthread_mutex_lock(&drops.lock);
    size_t *n = drop_count(ctx, stream);
    if (n)
        (*n)++;
    else
        drops.lost++;
    pthread_mutex_unlock(&drops.lock);
}

/* Reads and resets the count of queue (ctx, stream). */
static size_t take_drops(uint64_t ctx, uint32_t stream)
{
    size_t out = 0;
    pthread_mutex_lock(&drops.lock);
    for (size_t i = 0; i < drops.n; i++)
        if (drops.q[i].ctx == ctx && drops.q[i].stream == stream) {
            out = drops.q[i].n;
            drops.q[i].n = 0;
        }
    if (!ctx) {
        out += drops.lost;
        drops.lost = 0;
    }
    pthread_mutex_unlock(&drops.lock);
    return out;
}

/* ---------------------------------------------------------------- the queue */

/* The delivery thread has work when the queue no longer fits the current buffer.
 * Under pend.lock. */
static void maybe_wake_locked(void)
{
    if (!pend.wake && pend.n && (pend.len > pend.room || pend.n >= pend.room_recs)) {
        pend.wake = 1;
        pthread_cond_signal(&pend.cv);
    }
}

void sim_cupti_emit(const void *record, size_t size)
{
    if (!atomic_load_explicit(&registered, memory_order_acquire)) {
        drop(record);
        return;
    }
    pthread_mutex_lock(&pend.lock);
    if (pend.len + size > pend.cap) {
        size_t cap = pend.cap ? pend.cap : 64 * 1024;
        while (cap < pend.len + size)
            cap *= 2;
        uint8_t *b = realloc(pend.buf, cap);
        if (!b) {
            pthread_mutex_unlock(&pend.lock);
            drop(record);
            return;
        }
        pend.buf = b;
        pend.cap = cap;
    }
    memcpy(pend.buf + pend.len, record, size);
    pend.len += size;
    pend.n++;
    maybe_wake_locked();
    pthread_mutex_unlock(&pend.lock);
}

/* ---------------------------------------------------------------- delivery (under deliver) */

static void complete_current(void)
{
    if (!cur.buf)
        return;
    uint8_t *buf = cur.buf;
    cur.buf = NULL;
    cb_complete(NULL, 0, buf, cur.size, cur.pos);
}

/* Ask the client for a buffer; 0, or -1 when it declined. */
static int request_buffer(void)
{
    uint8_t *buf = NULL;
    size_t size = 0, max = 0;
    if (!cb_request)
        return -1;                      /* forgotten by cuptiFinalize */
    cb_request(&buf, &size, &max);
    if (!buf)
        return -1;
    cur = (client_buf_t){ buf, size, 0, max, 0 };
    cur.pos = first_offset(buf);
    return 0;
}

static int fits(size_t size)
{
    return cur.pos <= cur.size && size <= cur.size - cur.pos && (!cur.max || cur.n < cur.max);
}

static void place(const uint8_t *rec, size_t size)
{
    if (cur.buf && !fits(size))
        complete_current();
    if (!cur.buf && request_buffer() < 0) {
        drop(rec);
        return;
    }
    if (!fits(size)) {                  /* a fresh buffer too small for this record */
        drop(rec);
        return;
    }
    memcpy(cur.buf + cur.pos, rec, size);
    cur.pos += align_up(size);
    cur.n++;
    if (cur.max && cur.n >= cur.max)
        complete_current();
}

/*
 * Move every queued record into client buffers; with `flush`, complete the current buffer
 * too.  The queue is taken whole and replaced by the previous batch's storage.
 */
static void deliver_all(int flush)
{
    static uint8_t *spare;
    static size_t spare_cap;

    pthread_mutex_lock(&deliver);
    pthread_mutex_lock(&pend.lock);
    uint8_t *batch = pend.buf;
    size_t len = pend.len, cap = pend.cap;
    pend.buf = spare, pend.cap = spare_cap, pend.len = 0, pend.n = 0;
    pthread_mutex_unlock(&pend.lock);

    for (size_t off = 0; off < len;) {
        size_t size = sim_cupti_record_size(((const CUpti_Activity *)(batch + off))->kind);
        if (!size)
            break;                      /* cannot happen: only known kinds are queued */
        place(batch + off, size);
        off += size;
    }
    if (flush)
        complete_current();
    spare = batch, spare_cap = cap;

    pthread_mutex_lock(&pend.lock);
    pend.room = cur.buf && cur.pos <= cur.size ? cur.size - cur.pos : 0;
    pend.room_recs = cur.buf && cur.max ? cur.max - cur.n : cur.buf ? SIZE_MAX : 0;
    maybe_wake_locked();
    pthread_mutex_unlock(&pend.lock);
    pthread_mutex_unlock(&deliver);
}

static void *worker_main(void *unused)
{
    pthread_mutex_lock(&pend.lock);
    for (;;) {
        while (!pend.wake)
            pthread_cond_wait(&pend.cv, &pend.lock);
        pend.wake = 0;
        pthread_mutex_unlock(&pend.lock);
        deliver_all(0);
        pthread_mutex_lock(&pend.lock);
    }
    return NULL;
}

static void start_worker(void)
{
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_create(&t, &attr, worker_main, NULL);
    pthread_attr_destroy(&attr);
}

/* ---------------------------------------------------------------- the public calls */

CUPTI_EXPORT CUptiResult CUPTIAPI
cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc funcBufferRequested,
                               CUpti_BuffersCallbackCompleteFunc funcBufferCompleted)
{
    if (!funcBufferRequested || !funcBufferCompleted)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&deliver);
    cb_request = funcBufferRequested;
    cb_complete = funcBufferCompleted;
    pthread_mutex_unlock(&deliver);
    pthread_once(&worker_once, start_worker);
    atomic_store_explicit(&registered, 1, memory_order_release);
    return CUPTI_SUCCESS;
}

void sim_cupti_buffers_forget(void)
{
    if (!atomic_exchange_explicit(&registered, 0, memory_order_acq_rel))
        return;
    deliver_all(1);
    pthread_mutex_lock(&deliver);
    cb_request = NULL;
    cb_complete = NULL;
    pthread_mutex_unlock(&deliver);
}

CUPTI_EXPORT CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag)
{
    if (!atomic_load_explicit(&registered, memory_order_acquire))
        return CUPTI_ERROR_INVALID_OPERATION;
    deliver_all(1);
    return CUPTI_SUCCESS;
}

CUPTI_EXPORT CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer,
                                                             size_t validBufferSizeBytes,
                                                             CUpti_Activity **record)
{
    if (!buffer || !record)
        return CUPTI_ERROR_INVALID_PARAMETER;
    size_t off = first_offset(buffer);
    if (*record) {
        const uint8_t *prev = (const uint8_t *)*record;
        size_t size = sim_cupti_record_size((*record)->kind);
        if (!size || prev < buffer)
            return CUPTI_ERROR_INVALID_KIND;
        off = (size_t)(prev - buffer) + size;
        off += first_offset(buffer + off);     /* the next 8-byte aligned address */
    }
    if (off >= validBufferSizeBytes)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    CUpti_Activity *next = (CUpti_Activity *)(buffer + off);
    size_t left = validBufferSizeBytes - off;
    if (left < sizeof(*next) || !sim_cupti_record_size(next->kind) ||
        sim_cupti_record_size(next->kind) > left)
        return CUPTI_ERROR_INVALID_KIND;
    *record = next;
    return CUPTI_SUCCESS;
}

/* The queue of context and streamId (context NULL: the global queue, whatever the stream),
 * read and reset.  A handle that is not a live context has no queue: CUPTI_ERROR_INVALID_CONTEXT
 * (CUPTI documents no answer for it). */
CUPTI_EXPORT CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context,
                                                                    uint32_t streamId,
                                                                    size_t *n)
{
    unsigned long long id = 0;
    if (!n)
        return CUPTI_ERROR_INVALID_PARAMETER;
    if (context && cuCtxGetId(context, &id) != CUDA_SUCCESS)
        return CUPTI_ERROR_INVALID_CONTEXT;
    *n = take_drops(id, context ? streamId : 0);
    return CUPTI_SUCCESS;
}
