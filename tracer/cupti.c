/* SPDX-License-Identifier: MIT */
/*
 * cupti.c - device timings from CUPTI's activity API (cupti.h), loaded with dlopen.
 *
 * Opening loads the library (RTLD_NOW | RTLD_LOCAL: never linked, never unloaded), resolves
 * every entry point it needs, subscribes first (CUPTI admits one subscriber per process, so a
 * running profiler is detected here) and registers the buffer callbacks.  The caller pushes
 * its operation id around each launch, copy or memset as an external correlation id of kind
 * CUSTOM0; CUPTI then emits an external-correlation record naming the CUDA correlation id of
 * that call, and later a kernel, memcpy or memset record with the same correlation id and the
 * device times.  The two may arrive in either order and in different buffers, so each waits in
 * a map for the other: external ids by correlation id (kept after a match, since every node of
 * a graph launch shares one correlation id), activity records by correlation id (dropped once
 * matched).  The maps are bounded: each has two generations of a fixed size, and when the
 * current one fills, the older one, with whatever never matched in it (work launched without
 * an id pushed), is forgotten.
 *
 * CUPTI drops the records it finds no buffer for (the request callback gave none, or one too
 * small) and counts them per queue: the global one (context NULL), and one per context and
 * stream.  The count of the global queue is read after each completed buffer, as CUPTI's
 * documentation of the completion callback suggests, and every queue's (the global one and
 * each stream the caller watched) once more when the client detaches, after the last flush;
 * reading resets a count, so the sums are the drops.  Which operations lost their records is
 * not known.
 *
 * CUPTI's buffer callbacks carry no user pointer, and there is one subscriber per process, so
 * the open client is a global (under g_lock, held while a completed buffer is parsed and the
 * sink is called, never across a CUPTI call).
 */
#include "cupti.h"

#include <cupti.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUF_BYTES (1u << 20)           /* activity buffer handed to CUPTI, by default */
#define MAP_SLOTS 4096u                /* per generation; a power of two */
#define EXT_KIND CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0

/* ------------------------------------------------------------------ the library */

typedef struct api {
    __typeof__(cuptiSubscribe) *subscribe;
    __typeof__(cuptiUnsubscribe) *unsubscribe;
    __typeof__(cuptiActivityRegisterCallbacks) *register_callbacks;
    __typeof__(cuptiActivityEnable) *enable;
    __typeof__(cuptiActivityDisable) *disable;
    __typeof__(cuptiActivityFlushAll) *flush_all;
    __typeof__(cuptiActivityGetNextRecord) *next_record;
    __typeof__(cuptiActivityPushExternalCorrelationId) *push;
    __typeof__(cuptiActivityPopExternalCorrelationId) *pop;
    __typeof__(cuptiGetTimestamp) *timestamp;
    __typeof__(cuptiGetResultString) *result_string;
    __typeof__(cuptiFinalize) *finalize;           /* optional: NULL where missing */
    __typeof__(cuptiActivityGetNumDroppedRecords) *dropped;    /* optional, as finalize */
} api_t;

static const struct sym {
    const char *name;
    size_t off;
} syms[] = {
    { "cuptiSubscribe", offsetof(api_t, subscribe) },
    { "cuptiUnsubscribe", offsetof(api_t, unsubscribe) },
    { "cuptiActivityRegisterCallbacks", offsetof(api_t, register_callbacks) },
    { "cuptiActivityEnable", offsetof(api_t, enable) },
    { "cuptiActivityDisable", offsetof(api_t, disable) },
    { "cuptiActivityFlushAll", offsetof(api_t, flush_all) },
    { "cuptiActivityGetNextRecord", offsetof(api_t, next_record) },
    { "cuptiActivityPushExternalCorrelationId", offsetof(api_t, push) },
    { "cuptiActivityPopExternalCorrelationId", offsetof(api_t, pop) },
    { "cuptiGetTimestamp", offsetof(api_t, timestamp) },
    { "cuptiGetResultString", offsetof(api_t, result_string) },
};

/* The kinds collected while enabled; MEMCPY2 (peer copies) only where the library has it.
 * DRIVER is there for the external correlation records alone: CUPTI makes one only before a
 * driver or runtime API record, so without API records none come and no activity can be
 * matched to an operation (on_record skips the API records themselves). */
static const CUpti_ActivityKind kinds[] = {
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_DRIVER,
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
};

/* ------------------------------------------------------------------ correlation maps */

typedef struct slot {
    uint32_t corr;                     /* 0: empty */
    int kind, done;                    /* activity: trc_cupti_sink_t kind; done when matched */
    uint64_t a, b;                     /* external id, or start and end */
} slot_t;

/* Two generations of MAP_SLOTS slots: gen[0] is filled (to half) then becomes gen[1]. */
typedef struct cmap {
    slot_t *gen[2];
    uint32_t count;
} cmap_t;

/* A queue of CUPTI's dropped-record counts: a context and a stream id. */
typedef struct queue {
    void *ctx;
    uint32_t stream;
} queue_t;

struct trc_cupti {
    api_t api;
    CUpti_SubscriberHandle sub;
    int detached;                      /* trc_cupti_detach: no CUPTI call any more */
    trc_cupti_sink_t sink;
    void *ctx;
    int enabled;
    cmap_t ext, act;                   /* under g_lock */
    queue_t *queues;                   /* watched (trc_cupti_watch), under g_lock */
    size_t nqueues, cap_queues;
    uint64_t dropped;                  /* read from CUPTI, not yet taken; under g_lock */
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static trc_cupti_t *g_active;
/* The open client's cuptiActivityGetNumDroppedRecords (NULL: none), for the completion
 * callback, which reads it outside g_lock; the library is never unloaded. */
static __typeof__(cuptiActivityGetNumDroppedRecords) *_Atomic g_dropped_fn;
static _Atomic size_t g_buf_bytes = BUF_BYTES;   /* trc_cupti_buffer_size */

/* Linear probing from corr's home slot; a generation is never more than half full, so every
 * probe chain ends at an empty slot.  One corr may hold several slots (several activities
 * of one graph launch waiting for their external record). */
static uint32_t home(uint32_t corr)
{
    return corr * 2654435761u & (MAP_SLOTS - 1);
}

/* The first unmatched entry for corr, in the current generation then the older one; NULL. */
static slot_t *map_find(cmap_t *m, uint32_t corr)
{
    for (int g = 0; g < 2 && m->gen[g]; g++)
        for (uint32_t i = home(corr); m->gen[g][i].corr; i = (i + 1) & (MAP_SLOTS - 1))
            if (m->gen[g][i].corr == corr && !m->gen[g][i].done)
                return &m->gen[g][i];
    return NULL;
}

/* A new entry for corr in the current generation, which is turned over (the older one
 * forgotten) when half full; NULL when out of memory (the record is lost, as CUPTI drops
 * records it has no buffer for). */
static slot_t *map_put(cmap_t *m, uint32_t corr)
{
    if (!m->gen[0] || m->count >= MAP_SLOTS / 2) {
        slot_t *fresh = m->gen[1] ? m->gen[1] : malloc(MAP_SLOTS * sizeof(slot_t));
        if (!fresh)
            return NULL;
        memset(fresh, 0, MAP_SLOTS * sizeof(slot_t));
        m->gen[1] = m->gen[0];
        m->gen[0] = fresh;
        m->count = 0;
    }
    uint32_t i = home(corr);
    while (m->gen[0][i].corr)
        i = (i + 1) & (MAP_SLOTS - 1);
    m->count++;
    m->gen[0][i] = (slot_t){ .corr = corr };
    return &m->gen[0][i];
}

static void map_free(cmap_t *m)
{
    free(m->gen[0]);
    free(m->gen[1]);
}

/* ------------------------------------------------------------------ records */

/* An external correlation record: reports the activities waiting for it, and stays for any
 * that come later (the nodes of a graph launch share its correlation id). */
static void on_external(trc_cupti_t *c, const CUpti_ActivityExternalCorrelation *r)
{
    slot_t *act;
    if (r->externalKind != EXT_KIND || r->correlationId == 0)
        return;
    while ((act = map_find(&c->act, r->correlationId))) {
        act->done = 1;
        c->sink(c->ctx, r->externalId, act->kind, act->a, act->b);
    }
    slot_t *s = map_put(&c->ext, r->correlationId);
    if (s)
        s->a = r->externalId;
}

/* A kernel, memcpy or memset: reported now when its external id is known, else kept. */
static void on_activity(trc_cupti_t *c, uint32_t corr, int kind, uint64_t start, uint64_t end)
{
    if (corr == 0 || (start == 0 && end == 0) || end < start)
        return; /* no correlation, or times CUPTI could not collect */
    slot_t *ext = map_find(&c->ext, corr);
    if (ext) {
        c->sink(c->ctx, ext->a, kind, start, end);
        return;
    }
    slot_t *s = map_put(&c->act, corr);
    if (s)
        s->kind = kind, s->a = start, s->b = end;
}

static void on_record(trc_cupti_t *c, const CUpti_Activity *r)
{
    switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const CUpti_ActivityKernel10 *k = (const void *)r;
        on_activity(c, k->correlationId, 0, k->start, k->end);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *m = (const void *)r;
        on_activity(c, m->correlationId, 1, m->start, m->end);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
        const CUpti_ActivityMemcpyPtoP4 *m = (const void *)r;
        on_activity(c, m->correlationId, 1, m->start, m->end);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const CUpti_ActivityMemset4 *m = (const void *)r;
        on_activity(c, m->correlationId, 2, m->start, m->end);
        break;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
        on_external(c, (const void *)r);
        break;
    default: break;
    }
}

/* ------------------------------------------------------------------ buffer callbacks */

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    size_t bytes = atomic_load_explicit(&g_buf_bytes, memory_order_relaxed);
    *buffer = aligned_alloc(8, (bytes + 7) & ~(size_t)7);
    *size = *buffer ? bytes : 0;
    *max_records = 0;
}

/* CUPTI's thread (or the one in cuptiActivityFlushAll): parse, call the sink, free; then
 * the drops of the buffer's queue (ctx and stream: NULL and 0, the global queue, since CUDA
 * 6.0) are added up. */
static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer,
                                      size_t size, size_t valid)
{
    CUpti_Activity *r = NULL;
    size_t lost = 0;
    (void)size;
    pthread_mutex_lock(&g_lock);
    trc_cupti_t *c = g_active;
    while (c && valid && c->api.next_record(buffer, valid, &r) == CUPTI_SUCCESS)
        on_record(c, r);
    pthread_mutex_unlock(&g_lock);
    free(buffer);
    __typeof__(cuptiActivityGetNumDroppedRecords) *fn = atomic_load(&g_dropped_fn);
    if (!fn || fn(ctx, stream, &lost) != CUPTI_SUCCESS || !lost)
        return;
    pthread_mutex_lock(&g_lock);
    if (g_active)
        g_active->dropped += lost;
    pthread_mutex_unlock(&g_lock);
}

static void CUPTIAPI no_callback(void *userdata, CUpti_CallbackDomain domain,
                                 CUpti_CallbackId cbid, const void *data)
{
    (void)userdata, (void)domain, (void)cbid, (void)data;
}

/* ------------------------------------------------------------------ opening */

__attribute__((format(printf, 3, 4))) static void say(char *why, size_t len, const char *fmt,
                                                     ...)
{
    va_list ap;
    if (!why || !len)
        return;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
}

static const char *result_name(const trc_cupti_t *c, CUptiResult r)
{
    const char *s = NULL;
    if (c->api.result_string(r, &s) != CUPTI_SUCCESS || !s)
        return "unknown CUPTI result";
    return s;
}

/* Loads lib (or the default names); the handle, or NULL with why filled. */
static void *load(const char *lib, char *why, size_t len)
{
    static const char *const names[] = { "libcupti.so", "libcupti.so.13" };
    void *h = NULL;
    if (lib)
        h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    for (size_t i = 0; !lib && !h && i < sizeof(names) / sizeof(names[0]); i++)
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h)
        say(why, len, "CUPTI not loaded (%s): %s", lib ? lib : "libcupti.so, libcupti.so.13",
            dlerror());
    return h;
}

/* Every entry point, or -ENOENT naming the first one missing. */
static int resolve(void *h, api_t *api, const char *lib, char *why, size_t len)
{
    for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
        void *p = dlsym(h, syms[i].name);
        if (!p) {
            say(why, len, "CUPTI not usable: %s has no %s", lib ? lib : "libcupti.so",
                syms[i].name);
            return -ENOENT;
        }
        memcpy((char *)api + syms[i].off, &p, sizeof(p));
    }
    *(void **)&api->finalize = dlsym(h, "cuptiFinalize");
    *(void **)&api->dropped = dlsym(h, "cuptiActivityGetNumDroppedRecords");
    return 0;
}

/* Subscribes, then registers the buffer callbacks; -EBUSY when another subscriber holds
 * CUPTI, -EIO for any other failure. */
static int attach(trc_cupti_t *c, char *why, size_t len)
{
    CUptiResult r = c->api.subscribe(&c->sub, no_callback, NULL);
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        say(why, len, "CUPTI already has a subscriber (a profiler or another tool is attached:"
            " %s); device times will not come from CUPTI", result_name(c, r));
        return -EBUSY;
    }
    if (r != CUPTI_SUCCESS) {
        say(why, len, "cuptiSubscribe failed: %s", result_name(c, r));
        return -EIO;
    }
    r = c->api.register_callbacks(buffer_requested, buffer_completed);
    if (r != CUPTI_SUCCESS) {
        say(why, len, "cuptiActivityRegisterCallbacks failed: %s", result_name(c, r));
        c->api.unsubscribe(c->sub);
        return -EIO;
    }
    return 0;
}

int trc_cupti_open(const char *lib, trc_cupti_sink_t sink, void *ctx, trc_cupti_t **out,
                   char *why, size_t why_len)
{
    Dl_info info;
    *out = NULL;
    if (!sink)
        return -EINVAL;
    void *h = load(lib, why, why_len);
    if (!h)
        return -ENOENT;
    trc_cupti_t *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->sink = sink;
    c->ctx = ctx;
    int rc = resolve(h, &c->api, lib, why, why_len);
    if (rc == 0)
        rc = attach(c, why, why_len);
    if (rc < 0) {
        free(c); /* the library stays loaded: it may have started threads */
        return rc;
    }
    pthread_mutex_lock(&g_lock);
    g_active = c;
    atomic_store(&g_dropped_fn, c->api.dropped);
    pthread_mutex_unlock(&g_lock);
    if (dladdr((void *)c->api.subscribe, &info) && info.dli_fname)
        say(why, why_len, "CUPTI from %s", info.dli_fname);
    *out = c;
    return 0;
}

/* ------------------------------------------------------------------ use */

static void disable_kinds(trc_cupti_t *c)
{
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        c->api.disable(kinds[i]);
    c->api.disable(CUPTI_ACTIVITY_KIND_MEMCPY2);
}

/* External correlation first, so that no activity is collected without its id. */
static int enable_kinds(trc_cupti_t *c)
{
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (c->api.enable(kinds[i]) != CUPTI_SUCCESS) {
            disable_kinds(c);
            return -EIO;
        }
    (void)c->api.enable(CUPTI_ACTIVITY_KIND_MEMCPY2); /* optional: peer copies */
    return 0;
}

int trc_cupti_enable(trc_cupti_t *c, int on)
{
    if (!on == !c->enabled)
        return 0;
    if (on) {
        int rc = enable_kinds(c);
        c->enabled = rc == 0;
        return rc;
    }
    disable_kinds(c);
    c->enabled = 0;
    return trc_cupti_flush(c);
}

void trc_cupti_push(trc_cupti_t *c, uint64_t op)
{
    c->api.push(EXT_KIND, op);
}

void trc_cupti_pop(trc_cupti_t *c)
{
    uint64_t last;
    c->api.pop(EXT_KIND, &last);
}

uint64_t trc_cupti_now(trc_cupti_t *c)
{
    uint64_t t = 0;
    return c->api.timestamp(&t) == CUPTI_SUCCESS ? t : 0;
}

int trc_cupti_flush(trc_cupti_t *c)
{
    return c->api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS ? 0 : -EIO;
}

void trc_cupti_buffer_size(size_t bytes)
{
    atomic_store_explicit(&g_buf_bytes, bytes ? bytes : BUF_BYTES, memory_order_relaxed);
}

void trc_cupti_watch(trc_cupti_t *c, void *ctx, uint32_t stream)
{
    pthread_mutex_lock(&g_lock);
    size_t i = 0;
    while (i < c->nqueues && (c->queues[i].ctx != ctx || c->queues[i].stream != stream))
        i++;
    if (i == c->nqueues && c->nqueues < TRC_CUPTI_MAX_QUEUES) {
        if (c->nqueues == c->cap_queues) {
            size_t cap = c->cap_queues ? 2 * c->cap_queues : 16;
            queue_t *q = realloc(c->queues, cap * sizeof(*q));
            if (q)
                c->queues = q, c->cap_queues = cap;
        }
        if (c->nqueues < c->cap_queues)
            c->queues[c->nqueues++] = (queue_t){ ctx, stream };
    }
    pthread_mutex_unlock(&g_lock);
}

/* Reads the global queue's and every watched queue's drops (CUPTI calls, so not under g_lock:
 * the list is copied first; queues are only ever added) into c->dropped.  A context that is
 * gone answers with an error, and counts nothing. */
static void read_drops(trc_cupti_t *c)
{
    size_t lost = 0, sum = 0, n;
    if (!c->api.dropped)
        return;
    if (c->api.dropped(NULL, 0, &lost) == CUPTI_SUCCESS)
        sum += lost;
    pthread_mutex_lock(&g_lock);
    n = c->nqueues;
    queue_t *q = n ? malloc(n * sizeof(*q)) : NULL;
    if (q)
        memcpy(q, c->queues, n * sizeof(*q));
    pthread_mutex_unlock(&g_lock);
    for (size_t i = 0; q && i < n; i++)
        if (c->api.dropped(q[i].ctx, q[i].stream, &lost) == CUPTI_SUCCESS)
            sum += lost;
    free(q);
    pthread_mutex_lock(&g_lock);
    c->dropped += sum;
    pthread_mutex_unlock(&g_lock);
}

uint64_t trc_cupti_dropped(trc_cupti_t *c)
{
    if (!c->detached)
        read_drops(c);
    pthread_mutex_lock(&g_lock);
    uint64_t n = c->dropped;
    c->dropped = 0;
    pthread_mutex_unlock(&g_lock);
    return n;
}

/* cuptiFinalize takes CUPTI out of the process: after the subscription alone is given up,
 * CUPTI stays attached to the driver and a launch still costs about a microsecond more on an
 * H100 (bench/shim_launch: 1.27x against 1.04x for a trace that never loaded CUPTI). */
void trc_cupti_detach(trc_cupti_t *c)
{
    if (c->detached)
        return;
    trc_cupti_enable(c, 0);
    trc_cupti_flush(c);
    read_drops(c);                     /* the last ones: every record is delivered or dropped */
    c->api.unsubscribe(c->sub);
    if (c->api.finalize)
        c->api.finalize();
    c->detached = 1;
}

void trc_cupti_close(trc_cupti_t *c)
{
    if (!c)
        return;
    trc_cupti_detach(c);
    pthread_mutex_lock(&g_lock);
    if (g_active == c) {
        g_active = NULL;
        atomic_store(&g_dropped_fn, NULL);
    }
    map_free(&c->ext);
    map_free(&c->act);
    free(c->queues);
    pthread_mutex_unlock(&g_lock);
    free(c);
}
