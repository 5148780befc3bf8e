/* SPDX-License-Identifier: MIT */
/*
 * activity.c - which activity kinds are collected, and the records the simulator's reports
 * become.
 *
 * Enabling the first kind attaches the stand-in to the simulator (sim_activity_attach);
 * disabling the last detaches it, so a program that profiled only its first iterations pays
 * nothing afterwards.  An operation is recorded when its kind was enabled at the API call
 * that submitted it: work launched before cuptiActivityDisable still produces its record when
 * it completes, work launched after does not.  Each API call that submits a kernel, copy or
 * memset gets a correlation id; every node of a graph launch shares the launch's.
 *
 * With CUPTI_ACTIVITY_KIND_DRIVER enabled such a call also gets a CUpti_ActivityAPI record,
 * made when it submits, preceded by its external correlation records (external.c).  As in
 * CUPTI, external correlation records accompany API records only: with DRIVER off, none are
 * made even when EXTERNAL_CORRELATION is on.  The stand-in sees only the calls that submit
 * work, so other driver calls get no API record, and it does not know which function made
 * the call: cbid is CUPTI_DRIVER_TRACE_CBID_INVALID and start = end.
 *
 * Kernel names in records point into a table of interned strings that lives as long as the
 * process (the library is never unloaded: it is linked with -z nodelete).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

#include "cupti_sim.h"

#define KERNEL_BITS (SIM_CUPTI_BIT(CUPTI_ACTIVITY_KIND_KERNEL) | \
                     SIM_CUPTI_BIT(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL))
#define EXT_BIT SIM_CUPTI_BIT(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION)
#define API_BIT SIM_CUPTI_BIT(CUPTI_ACTIVITY_KIND_DRIVER)
#define SUPPORTED (KERNEL_BITS | EXT_BIT | API_BIT | SIM_CUPTI_BIT(CUPTI_ACTIVITY_KIND_MEMCPY) | \
                   SIM_CUPTI_BIT(CUPTI_ACTIVITY_KIND_MEMSET))

static _Atomic uint64_t enabled;
static pthread_mutex_t enable_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint32_t next_corr;
static _Atomic int64_t next_grid;

uint64_t sim_cupti_enabled(void)
{
    return atomic_load_explicit(&enabled, memory_order_acquire);
}

/* ---------------------------------------------------------------- interned kernel names */

static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static char **names;            /* open addressing, power-of-two capacity */
static size_t names_cap, names_n;

static size_t name_hash(const char *s)
{
    size_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int names_grow(void)
{
    size_t cap = names_cap ? names_cap * 2 : 256;
    char **t = calloc(cap, sizeof(*t));
    if (!t)
        return -1;
    for (size_t i = 0; i < names_cap; i++) {
        if (!names[i])
            continue;
        size_t j = name_hash(names[i]) & (cap - 1);
        while (t[j])
            j = (j + 1) & (cap - 1);
        t[j] = names[i];
    }
    free(names);
    names = t;
    names_cap = cap;
    return 0;
}

/* A copy of s that stays valid for the life of the process; NULL when out of memory. */
static const char *intern(const char *s)
{
    const char *out = NULL;
    pthread_mutex_lock(&names_lock);
    if (names_n * 2 >= names_cap && names_grow() < 0)
        goto done;
    size_t i = name_hash(s) & (names_cap - 1);
    while (names[i] && strcmp(names[i], s) != 0)
        i = (i + 1) & (names_cap - 1);
    if (!names[i] && (names[i] = strdup(s)) != NULL)
        names_n++;
    out = names[i];
done:
    pthread_mutex_unlock(&names_lock);
    return out;
}

/* ---------------------------------------------------------------- records */

static uint8_t memory_kind(int sim_memory)
{
    switch (sim_memory) {
    case SIM_MEMORY_PAGEABLE: return CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
    case SIM_MEMORY_PINNED: return CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
    case SIM_MEMORY_DEVICE: return CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    default: return CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN;
    }
}

static uint8_t copy_kind(int sim_copy)
{
    switch (sim_copy) {
    case SIM_COPY_HTOD: return CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    case SIM_COPY_DTOH: return CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
    case SIM_COPY_DTOD: return CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
    case SIM_COPY_PTOP: return CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
    case SIM_COPY_HTOH: return CUPTI_ACTIVITY_MEMCPY_KIND_HTOH;
    default: return CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN;
    }
}

/* A kernel is a CONCURRENT_KERNEL record when only that kind is enabled, else a KERNEL one. */
static void emit_kernel(const sim_activity_t *a)
{
    CUpti_ActivityKernel10 k;
    uint64_t m = sim_cupti_enabled();
    memset(&k, 0, sizeof(k));
    k.kind = (m & KERNEL_BITS) == SIM_CUPTI_BIT(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
             ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL : CUPTI_ACTIVITY_KIND_KERNEL;
    k.start = a->start;
    k.end = a->end;
    k.completed = a->end;
    k.queued = k.submitted = CUPTI_TIMESTAMP_UNKNOWN;
    k.deviceId = (uint32_t)a->device;
    k.contextId = (uint32_t)a->context_id;
    k.streamId = (uint32_t)a->stream_id;
    k.gridX = (int32_t)a->grid[0], k.gridY = (int32_t)a->grid[1], k.gridZ = (int32_t)a->grid[2];
    k.blockX = (int32_t)a->block[0], k.blockY = (int32_t)a->block[1];
    k.blockZ = (int32_t)a->block[2];
    k.dynamicSharedMemory = (int32_t)a->shared_bytes;
    k.correlationId = a->correlation;
    k.gridId = atomic_fetch_add(&next_grid, 1) + 1;
    k.name = a->name ? intern(a->name) : NULL;
    k.launchType = CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR;
    k.channelType = CUPTI_CHANNEL_TYPE_COMPUTE;
    sim_cupti_emit(&k, sizeof(k));
}

static void emit_memcpy(const sim_activity_t *a)
{
    CUpti_ActivityMemcpy6 c;
    memset(&c, 0, sizeof(c));
    c.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    c.copyKind = copy_kind(a->copy_kind);
    c.srcKind = memory_kind(a->src_memory);
    c.dstKind = memory_kind(a->dst_memory);
    c.flags = a->async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0;
    c.bytes = a->bytes;
    c.start = a->start;
    c.end = a->end;
    c.deviceId = (uint32_t)a->device;
    c.contextId = (uint32_t)a->context_id;
    c.streamId = (uint32_t)a->stream_id;
    c.correlationId = a->correlation;
    c.channelType = a->copy_kind == SIM_COPY_DTOD ? CUPTI_CHANNEL_TYPE_COMPUTE
                                                  : CUPTI_CHANNEL_TYPE_ASYNC_MEMCPY;
    c.copyCount = 1;
    sim_cupti_emit(&c, sizeof(c));
}

static void emit_memset(const sim_activity_t *a)
{
    CUpti_ActivityMemset4 s;
    memset(&s, 0, sizeof(s));
    s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    s.value = a->value;
    s.bytes = a->bytes;
    s.start = a->start;
    s.end = a->end;
    s.deviceId = (uint32_t)a->device;
    s.contextId = (uint32_t)a->context_id;
    s.streamId = (uint32_t)a->stream_id;
    s.correlationId = a->correlation;
    s.flags = a->async ? CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC : 0;
    s.memoryKind = memory_kind(a->dst_memory);
    s.channelType = CUPTI_CHANNEL_TYPE_COMPUTE;
    sim_cupti_emit(&s, sizeof(s));
}

/* The driver API record of the calling thread's submitting call. */
static void emit_api(uint32_t corr)
{
    CUpti_ActivityAPI r;
    memset(&r, 0, sizeof(r));
    r.kind = CUPTI_ACTIVITY_KIND_DRIVER;
    r.cbid = CUPTI_DRIVER_TRACE_CBID_INVALID;
    r.start = r.end = sim_activity_clock();
    r.processId = (uint32_t)getpid();
    r.threadId = (uint32_t)gettid();
    r.correlationId = corr;
    sim_cupti_emit(&r, sizeof(r));
}

/* ---------------------------------------------------------------- the simulator's observer */

static uint64_t kind_bits(int sim_kind)
{
    switch (sim_kind) {
    case SIM_ACTIVITY_KERNEL: return KERNEL_BITS;
    case SIM_ACTIVITY_MEMCPY: return SIM_CUPTI_BIT(CUPTI_ACTIVITY_KIND_MEMCPY);
    case SIM_ACTIVITY_MEMSET: return SIM_CUPTI_BIT(CUPTI_ACTIVITY_KIND_MEMSET);
    default: return 0;
    }
}

static uint32_t new_correlation(void)
{
    uint32_t c;
    do
        c = atomic_fetch_add(&next_corr, 1) + 1;
    while (c == 0);
    return c;
}

/* Submitting thread: give the call its id, and its external correlation and API records,
 * on first use. */
static int on_submit(void *ctx, int kind, uint32_t *corr)
{
    uint64_t m = sim_cupti_enabled();
    int want = (m & kind_bits(kind)) != 0;
    int api = (m & API_BIT) != 0;
    if (!want && !api)
        return 0;
    if (*corr == 0) {
        *corr = new_correlation();
        if (api && (m & EXT_BIT) && sim_cupti_ext_pushed())
            sim_cupti_ext_emit(*corr);
        if (api)
            emit_api(*corr);
    }
    return want;
}

/* Executor thread: the record is built and queued; nothing here calls the client. */
static void on_complete(void *ctx, const sim_activity_t *a)
{
    switch (a->kind) {
    case SIM_ACTIVITY_KERNEL: emit_kernel(a); break;
    case SIM_ACTIVITY_MEMCPY: emit_memcpy(a); break;
    case SIM_ACTIVITY_MEMSET: emit_memset(a); break;
    default: break;
    }
}

static const sim_activity_ops_t observer = { NULL, on_submit, on_complete };

/* ---------------------------------------------------------------- enable and disable */

/* Kinds outside the enum are INVALID_KIND; kinds the stand-in does not collect cannot be
 * enabled (NOT_COMPATIBLE) and disabling them does nothing. */
static CUptiResult set_kind(CUpti_ActivityKind kind, int on)
{
    if ((int)kind <= (int)CUPTI_ACTIVITY_KIND_INVALID || kind >= CUPTI_ACTIVITY_KIND_COUNT)
        return CUPTI_ERROR_INVALID_KIND;
    if ((unsigned)kind >= 64 || !(SUPPORTED & SIM_CUPTI_BIT(kind)))
        return on ? CUPTI_ERROR_NOT_COMPATIBLE : CUPTI_SUCCESS;
    CUptiResult r = CUPTI_SUCCESS;
    pthread_mutex_lock(&enable_lock);
    uint64_t was = atomic_load(&enabled);
    uint64_t now = on ? was | SIM_CUPTI_BIT(kind) : was & ~SIM_CUPTI_BIT(kind);
    if (!was && now && sim_activity_attach(&observer) != 0)
        r = CUPTI_ERROR_NOT_COMPATIBLE;     /* another observer holds the simulator */
    else
        atomic_store_explicit(&enabled, now, memory_order_release);
    if (r == CUPTI_SUCCESS && was && !now)
        sim_activity_detach(&observer);
    pthread_mutex_unlock(&enable_lock);
    return r;
}

void sim_cupti_activity_off(void)
{
    pthread_mutex_lock(&enable_lock);
    if (atomic_exchange(&enabled, 0))
        sim_activity_detach(&observer);
    pthread_mutex_unlock(&enable_lock);
}

CUPTI_EXPORT CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind)
{
    return set_kind(kind, 1);
}

CUPTI_EXPORT CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind)
{
    return set_kind(kind, 0);
}

CUPTI_EXPORT CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t *timestamp)
{
    if (!timestamp)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *timestamp = sim_activity_clock();
    return CUPTI_SUCCESS;
}
