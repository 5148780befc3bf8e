/* SPDX-License-Identifier: MIT */
/*
 * res.c - residency: the arena's physical memory, and reactive paging between GPU memory and
 * pinned host memory.
 *
 * Every application allocation lives in one arena per device, a range reserved with
 * cuMemAddressReserve and divided into chunks of the allocation granularity (arena.c lays the
 * allocations out).  Each chunk in use is backed by exactly one physical allocation, mapped
 * at the chunk's address: device memory while the GPU budget allows, otherwise host memory
 * created with cuMemCreate(CU_MEM_LOCATION_TYPE_HOST), mapped at the same address, so every
 * page stays reachable from the device and a pointer never changes (DESIGN.md invariants 2
 * and 3).  Moving a chunk copies it into the new physical memory through a staging address,
 * then swaps the mappings under the chunk's address.
 *
 * The reactive engine: before a launch, the chunks its pointer arguments reach are brought
 * into GPU memory, evicting the least recently used chunks that the launch does not need.
 * After a launch or copy, the operation becomes the last use of each chunk it touched.  That
 * use costs no driver call: it is the stream's operation count (tick), and an event is
 * recorded on the stream only when a migration, release or free must wait for the use
 * (stream order then puts the event after it; cover()).  Earlier uses on other streams that
 * may still run are joined, on the shim's join stream, into one event the chunk also keeps.
 * The per-thread default stream, which no other thread can record on later, and every stream
 * while a capture may be open, record an event at once instead.  A chunk is only remapped or
 * released after the host has waited for its last use (invariant 4).  A launch whose
 * pointers cannot all be seen, and any graph launch, becomes a fence: every chunk waits for
 * it.  Work captured into a graph is not run when it is captured: nothing is brought in or
 * recorded for it then.
 *
 * One mutex per device guards this state.  It is held across the driver calls of a migration
 * (including the host waits on last uses), which DESIGN.md invariant 7 forbids: see
 * docs/ARCHITECTURE.md ("Departures").
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arena.h"
#include "shim.h"

#define MAX_DEVICES 16
#define RESERVE_MIN (64ull << 20)
#define SPARES 8            /* physical chunks kept per tier for the next migration */
#define MAX_STREAMS 64      /* application streams whose uses are recorded lazily, per device */
#define KCACHE 256          /* kernels whose parameter layout is cached, per device */
#define KPROBE 8            /* slots of the layout cache tried per kernel */
#define INLINE_IDS 32       /* chunks an operation collects without allocating */

enum { TIER_NONE, TIER_GPU, TIER_HOST };

typedef struct use_event {
    CUevent ev;
    int refs;                       /* uses, stream slots and joins naming it */
    uint32_t joined;                /* serial of the operation that last joined it */
    struct use_event *next_free;
} use_event_t;

/*
 * The last use of a chunk (or of unknown memory: the fence), recorded without an event: the
 * operation counter (tick) of the stream slot where it was enqueued.  An event is recorded on
 * that stream only when something must wait for the use (cover()).  `prior` covers earlier
 * uses on other streams that may still run; the per-thread default stream, which no other
 * thread can record on later, only ever appears there.
 */
typedef struct use {
    uint16_t slot;                  /* 1 + stream slot of the last use; 0: none */
    uint64_t tick;                  /* the slot's tick at that use */
    use_event_t *prior;             /* earlier uses elsewhere, or NULL */
} use_t;

/* An application stream whose uses are recorded lazily. */
typedef struct strm {
    CUstream s;                     /* the handle (the legacy stream of the arena's context) */
    int live;                       /* 1: in use; -1: destroyed (ev covers all it ran); 0: free */
    uint64_t tick;                  /* operations recorded on it */
    uint64_t covered;               /* ticks up to this one complete before ev (NULL: done) */
    use_event_t *ev;
} strm_t;

/* A kernel's parameter sizes, read once with cuFuncGetParamInfo (see kparams()). */
typedef struct kparams {
    CUfunction f;
    unsigned gen;                   /* code_gen when read */
    unsigned n;                     /* parameters; 0: unknown, the arguments are opaque */
    uint32_t *sizes;
} kparams_t;

typedef struct chunk {
    uint8_t tier;
    uint32_t seen;                  /* serial of the last launch that collected it */
    CUmemGenericAllocationHandle phys;
    use_t use;                      /* last use */
    uint64_t lru;                   /* stamp of the last use */
    /* The chunks of the allocation that owns this one: [span_first, +span_n); a slab chunk
     * (shared by small allocations) spans only itself.  Set by res_alloc; see collect_ptr. */
    uint32_t span_first, span_n;
} chunk_t;

typedef struct res_dev {
    int ready;                      /* 1: set up; -1: set-up failed, pass everything through */
    int device;
    CUcontext ctx;
    pthread_mutex_t lock;
    arena_t *arena;
    uint64_t base, size, chunk;
    int chunk_shift;                /* log2(chunk) when a power of two, else -1 */
    chunk_t *chunks;
    CUdeviceptr staging;            /* one chunk of address space for migrations */
    CUstream stream;                /* the shim's own copy stream */
    CUstream join;                  /* where last uses on different streams are joined */
    uint64_t gpu_budget, host_budget, gpu_used, host_used, gpu_peak, host_peak;
    int host_mappable;              /* VMM host allocations supported */
    use_t fence;                    /* a use of unknown memory: every chunk waits for it */
    strm_t streams[MAX_STREAMS];
    unsigned nstreams, last_slot;
    kparams_t kcache[KCACHE];
    CUmemGenericAllocationHandle spare[2][SPARES];  /* unmapped physical chunks, per tier */
    int nspare[2];
    use_event_t *free_events;
    uint64_t clock;                 /* LRU stamps */
    uint32_t serial;
    uint64_t migrations_out, migrations_in, bytes_out, bytes_in, evictions_forced;
    double blocked_s, blocked_free_s;   /* host waits of migrations, of frees and releases */
} res_dev_t;

static res_dev_t devs[MAX_DEVICES];
static pthread_mutex_t setup_lock = PTHREAD_MUTEX_INITIALIZER;
/* Stream captures that may be open (begun through the shim, not seen to end).  While any is,
 * every use is recorded with an event at once, so that no stream has uses left to cover that
 * could be capturing by the time they are covered (an event recorded then would be captured). */
static _Atomic int captures;
/* Bumped whenever code or contexts go away (module or library unload, context destroyed or
 * reset): cached kernel layouts and the per-thread context -> device cache are then stale. */
static _Atomic unsigned code_gen = 1;

#define DRV(sym) SHIM_DRIVER_CALL(sym)

/* ---------------------------------------------------------------- small helpers */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static CUmemAllocationProp prop_for(int tier, int device)
{
    CUmemAllocationProp p = { .type = CU_MEM_ALLOCATION_TYPE_PINNED };
    if (tier == TIER_GPU) {
        p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        p.location.id = device;
    } else {
        p.location.type = CU_MEM_LOCATION_TYPE_HOST;
        p.location.id = 0;
    }
    return p;
}

static CUresult set_access(res_dev_t *d, CUdeviceptr va, uint64_t size)
{
    CUmemAccessDesc a = { .location = { CU_MEM_LOCATION_TYPE_DEVICE, d->device },
                          .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
    return DRV(cuMemSetAccess)(va, size, &a, 1);
}

static void charge(res_dev_t *d, int tier, int64_t bytes);

/*
 * Physical chunks of a tier: a few unmapped ones are kept (they stay charged to the tier's
 * budget) so that a migration usually reuses memory rather than creating and releasing it,
 * which costs the driver far more than the copy.
 */
static int has_room(const res_dev_t *d, int tier)
{
    if (tier == TIER_GPU)
        return d->nspare[0] || d->gpu_used + d->chunk <= d->gpu_budget;
    return d->host_mappable && (d->nspare[1] || d->host_used + d->chunk <= d->host_budget);
}

static CUresult phys_get(res_dev_t *d, int tier, CUmemGenericAllocationHandle *h)
{
    int t = tier == TIER_GPU ? 0 : 1;
    if (d->nspare[t]) {
        *h = d->spare[t][--d->nspare[t]];
        return CUDA_SUCCESS;
    }
    CUmemAllocationProp p = prop_for(tier, d->device);
    CUresult r = DRV(cuMemCreate)(h, d->chunk, &p, 0);
    if (r == CUDA_SUCCESS)
        charge(d, tier, (int64_t)d->chunk);
    return r;
}

static void phys_put(res_dev_t *d, int tier, CUmemGenericAllocationHandle h)
{
    int t = tier == TIER_GPU ? 0 : 1;
    if (d->nspare[t] < SPARES) {
        d->spare[t][d->nspare[t]++] = h;
        return;
    }
    DRV(cuMemRelease)(h);
    charge(d, tier, -(int64_t)d->chunk);
}

/* Physical memory of `tier` mapped and accessible at va. */
static CUresult map_new(res_dev_t *d, int tier, CUdeviceptr va, CUmemGenericAllocationHandle *h)
{
    CUresult r = phys_get(d, tier, h);
    if (r != CUDA_SUCCESS)
        return r;
    r = DRV(cuMemMap)(va, d->chunk, 0, *h, 0);
    if (r == CUDA_SUCCESS && (r = set_access(d, va, d->chunk)) != CUDA_SUCCESS)
        DRV(cuMemUnmap)(va, d->chunk);
    if (r != CUDA_SUCCESS)
        phys_put(d, tier, *h);
    return r;
}

static void charge(res_dev_t *d, int tier, int64_t bytes)
{
    if (tier == TIER_GPU) {
        d->gpu_used += bytes;
        if (d->gpu_used > d->gpu_peak)
            d->gpu_peak = d->gpu_used;
    } else if (tier == TIER_HOST) {
        d->host_used += bytes;
        if (d->host_used > d->host_peak)
            d->host_peak = d->host_used;
    }
}

/* ---------------------------------------------------------------- last-use events */

static use_event_t *event_get(res_dev_t *d)
{
    use_event_t *e = d->free_events;
    if (e) {
        d->free_events = e->next_free;
    } else {
        e = calloc(1, sizeof(*e));
        if (!e || DRV(cuEventCreate)(&e->ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
            free(e);
            return NULL;
        }
    }
    e->refs = 1;
    e->joined = 0;
    return e;
}

/* Drop one reference to e; the last one returns it to the free list. */
static void event_put(res_dev_t *d, use_event_t *e)
{
    if (e && --e->refs <= 0) {
        e->next_free = d->free_events;
        d->free_events = e;
    }
}

static use_event_t *event_ref(use_event_t *e)
{
    if (e)
        e->refs++;
    return e;
}

/*
 * The shim's own event queries and host waits are potentially unsafe calls: in a thread whose
 * capture mode is GLOBAL they would invalidate a global-mode capture that any thread has open.
 * While a capture may be open the calling thread is switched to RELAXED mode around them (and
 * back), as the CUDA documentation advises allocators to do.
 */
typedef struct relax {
    int on;
    CUstreamCaptureMode mode;
} relax_t;

static inline relax_t relax_begin(void)
{
    relax_t r = { 0, CU_STREAM_CAPTURE_MODE_RELAXED };
    if (__builtin_expect(atomic_load_explicit(&captures, memory_order_acquire) > 0, 0) &&
        DRV(cuThreadExchangeStreamCaptureMode) &&
        DRV(cuThreadExchangeStreamCaptureMode)(&r.mode) == CUDA_SUCCESS)
        r.on = 1;
    return r;
}

static inline void relax_end(relax_t r)
{
    if (r.on)
        DRV(cuThreadExchangeStreamCaptureMode)(&r.mode);
}

/* The host waits for e unless it is done; the time blocked is added to *blocked. */
static void wait_event(use_event_t *e, double *blocked)
{
    if (!e || DRV(cuEventQuery)(e->ev) == CUDA_SUCCESS)
        return;
    double t0 = now_s();
    DRV(cuEventSynchronize)(e->ev);
    *blocked += now_s() - t0;
}

/* An event recorded now on st's stream; NULL when none could be, after the host waited for
 * the stream (or the context) instead. */
static use_event_t *record_slot(res_dev_t *d, const strm_t *st)
{
    /* The legacy stream is the current context's: make it the arena's for the record. */
    int legacy = !st->s || st->s == CU_STREAM_LEGACY;
    CUcontext popped;
    if (legacy && DRV(cuCtxPushCurrent_v2)(d->ctx) != CUDA_SUCCESS)
        legacy = 0;
    use_event_t *e = event_get(d);
    if (!e || DRV(cuEventRecord)(e->ev, st->s) != CUDA_SUCCESS) {
        event_put(d, e);
        if (DRV(cuStreamSynchronize)(st->s) != CUDA_SUCCESS)
            DRV(cuCtxSynchronize)();
        e = NULL;
    }
    if (legacy)
        DRV(cuCtxPopCurrent_v2)(&popped);
    return e;
}

/*
 * An event that completes after every operation up to `tick` on stream slot i: the slot's
 * cached event when it covers that far, else one recorded now (stream order puts it after
 * them), which then covers everything enqueued so far.  NULL when there is nothing to wait
 * for.  A slot is never capturing here: while captures may be open nothing is left to cover.
 */
static use_event_t *cover(res_dev_t *d, unsigned i, uint64_t tick)
{
    strm_t *st = &d->streams[i];
    if (tick <= st->covered)
        return st->ev;
    use_event_t *e = record_slot(d, st);
    event_put(d, st->ev);
    st->ev = e;
    st->covered = st->tick;
    return e;
}

/* Forget a use (after it is known to be done, or when its chunk is released). */
static void use_clear(res_dev_t *d, use_t *u)
{
    event_put(d, u->prior);
    memset(u, 0, sizeof(*u));
}

/* The host waits until use u is done; then it is forgotten. */
static void wait_use(res_dev_t *d, use_t *u, double *blocked)
{
    if (u->slot)
        wait_event(cover(d, u->slot - 1u, u->tick), blocked);
    wait_event(u->prior, blocked);
    use_clear(d, u);
}

/* The host waits until nothing in flight can use chunk c (its last use and the fence). */
static void wait_idle(res_dev_t *d, chunk_t *c, double *blocked)
{
    wait_use(d, &c->use, blocked);
    wait_use(d, &d->fence, blocked);
}

/* ---------------------------------------------------------------- application streams */

/* Take a slot for stream s: a new one, or one of a destroyed stream whose work is done
 * (its ticks stay monotonic, so older uses of the slot read as covered); -1 when none. */
static int stream_take(res_dev_t *d, CUstream s)
{
    unsigned i = d->nstreams;
    if (i == MAX_STREAMS)
        for (i = 0; i < MAX_STREAMS; i++)
            if (d->streams[i].live < 0 &&
                (!d->streams[i].ev || DRV(cuEventQuery)(d->streams[i].ev->ev) == CUDA_SUCCESS))
                break;
    if (i == MAX_STREAMS)
        return -1;
    if (i == d->nstreams)
        d->nstreams++;
    strm_t *st = &d->streams[i];
    event_put(d, st->ev);
    st->ev = NULL;
    st->covered = st->tick;
    st->s = s;
    st->live = 1;
    return (int)i;
}

/*
 * The slot recording uses of stream s lazily, or -1 when s is recorded with an event at once:
 * the per-thread default stream (per_thread: the call's ABI makes NULL mean it), which another
 * thread cannot record on later; the legacy stream of a context other than the arena's; a
 * full table.
 */
static int stream_slot(res_dev_t *d, CUstream s, int per_thread, CUcontext ctx)
{
    if (s == CU_STREAM_PER_THREAD || (per_thread && !s))
        return -1;
    if ((!s || s == CU_STREAM_LEGACY) && ctx != d->ctx)
        return -1;
    strm_t *last = &d->streams[d->last_slot];
    if (last->live > 0 && last->s == s)
        return (int)d->last_slot;
    for (unsigned i = 0; i < d->nstreams; i++)
        if (d->streams[i].live > 0 && d->streams[i].s == s) {
            d->last_slot = i;
            return (int)i;
        }
    int i = stream_take(d, s);
    if (i >= 0)
        d->last_slot = (unsigned)i;
    return i;
}

/* Record an event for every use still uncovered on the device's streams (stream s only,
 * unless s is NULL and all is set), and mark s destroyed. */
static void cover_streams(res_dev_t *d, CUstream s, int all)
{
    for (unsigned i = 0; i < d->nstreams; i++) {
        strm_t *st = &d->streams[i];
        if (st->live <= 0 || (!all && st->s != s))
            continue;
        if (st->tick > st->covered)
            cover(d, i, st->tick);
        if (!all)
            st->live = -1;
    }
}

/* cover_streams() on every device set up. */
static void cover_all(CUstream s, int all)
{
    for (int i = 0; i < MAX_DEVICES; i++) {
        res_dev_t *d = &devs[i];
        if (atomic_load_explicit((_Atomic int *)&d->ready, memory_order_acquire) <= 0)
            continue;
        pthread_mutex_lock(&d->lock);
        cover_streams(d, s, all);
        pthread_mutex_unlock(&d->lock);
    }
}

void res_stream_destroy(CUstream s)
{
    if (s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD)
        cover_all(s, 0);
}

/* A context is about to be destroyed or reset: the driver waits for its work, but the uses
 * recorded on its streams are covered first all the same (conservative: a destroyed stream's
 * handle may come back for a new stream).  Which streams are the context's is not known, so
 * every stream's uses are covered. */
void res_ctx_destroy(void)
{
    cover_all(NULL, 1);
}

/* After code or a context went away: cached kernel layouts and devices are forgotten. */
void res_code_unload(void)
{
    atomic_fetch_add_explicit(&code_gen, 1, memory_order_acq_rel);
}

/* Before a capture begins: from now on uses are recorded at once, and what is left to
 * cover is covered while no stream of ours can be capturing it. */
void res_capture_begin(void)
{
    atomic_fetch_add_explicit(&captures, 1, memory_order_acq_rel);
    cover_all(NULL, 1);
}

void res_capture_end(void)
{
    atomic_fetch_sub_explicit(&captures, 1, memory_order_acq_rel);
}

/* ---------------------------------------------------------------- migration */

/* Copy chunk ci into new physical memory of `tier` and swap the mappings under its address. */
static CUresult migrate(res_dev_t *d, uint32_t ci, int tier)
{
    chunk_t *c = &d->chunks[ci];
    CUdeviceptr va = arena_chunk_addr(d->arena, ci);
    CUmemGenericAllocationHandle h;

    CUresult r = map_new(d, tier, d->staging, &h);
    if (r != CUDA_SUCCESS)
        return r;
    wait_idle(d, c, &d->blocked_s);
    r = DRV(cuMemcpyDtoDAsync_v2)(d->staging, va, d->chunk, d->stream);
    if (r == CUDA_SUCCESS)
        r = DRV(cuStreamSynchronize)(d->stream);
    DRV(cuMemUnmap)(d->staging, d->chunk);
    if (r == CUDA_SUCCESS) {
        DRV(cuMemUnmap)(va, d->chunk);
        r = DRV(cuMemMap)(va, d->chunk, 0, h, 0);
        if (r == CUDA_SUCCESS)
            r = set_access(d, va, d->chunk);
    }
    if (r != CUDA_SUCCESS) {
        /* The source stays authoritative (invariant 5): put it back if it was unmapped. */
        phys_put(d, tier, h);
        if (DRV(cuMemMap)(va, d->chunk, 0, c->phys, 0) == CUDA_SUCCESS)
            set_access(d, va, d->chunk);
        return r;
    }
    phys_put(d, c->tier, c->phys);
    if (tier == TIER_HOST) {
        d->migrations_out++;
        d->bytes_out += d->chunk;
    } else {
        d->migrations_in++;
        d->bytes_in += d->chunk;
    }
    c->phys = h;
    c->tier = (uint8_t)tier;
    return CUDA_SUCCESS;
}

/* The least recently used GPU chunk not collected by launch `serial`, or UINT32_MAX. */
static uint32_t victim(res_dev_t *d, uint32_t serial)
{
    uint32_t best = UINT32_MAX, n = arena_chunk_count(d->arena);
    for (uint32_t i = 0; i < n; i++) {
        chunk_t *c = &d->chunks[i];
        if (c->tier == TIER_GPU && (serial == 0 || c->seen != serial) &&
            (best == UINT32_MAX || c->lru < d->chunks[best].lru))
            best = i;
    }
    return best;
}

/* Make room for one more GPU chunk by evicting to host memory; 0 or -ENOMEM. */
static int make_room(res_dev_t *d, uint32_t serial)
{
    while (!has_room(d, TIER_GPU)) {
        if (!has_room(d, TIER_HOST))
            return -ENOMEM;
        uint32_t v = victim(d, serial);
        if (v == UINT32_MAX || migrate(d, v, TIER_HOST) != CUDA_SUCCESS)
            return -ENOMEM;
        d->evictions_forced++;
        SHIM_TRACE(RES, "evicted chunk %u to host", v);
    }
    return 0;
}

/* ---------------------------------------------------------------- arena callbacks */

/* A chunk came into use: back it with GPU memory, or host memory when the GPU is full. */
static int back_chunk(void *ctx, uint32_t ci)
{
    res_dev_t *d = ctx;
    chunk_t *c = &d->chunks[ci];
    CUdeviceptr va = arena_chunk_addr(d->arena, ci);
    int tier = make_room(d, 0) == 0 ? TIER_GPU : TIER_HOST;

    if (tier == TIER_HOST && !has_room(d, TIER_HOST))
        return -ENOMEM;
    if (map_new(d, tier, va, &c->phys) != CUDA_SUCCESS)
        return -ENOMEM;
    c->tier = (uint8_t)tier;
    c->lru = ++d->clock;
    return 0;
}

/* A chunk fell out of use: once nothing in flight uses it, give its memory back. */
static int release_chunk(void *ctx, uint32_t ci)
{
    res_dev_t *d = ctx;
    chunk_t *c = &d->chunks[ci];

    wait_idle(d, c, &d->blocked_free_s);
    DRV(cuMemUnmap)(arena_chunk_addr(d->arena, ci), d->chunk);
    phys_put(d, c->tier, c->phys);
    use_clear(d, &c->use);
    memset(c, 0, sizeof(*c));
    return 0;
}

/* ---------------------------------------------------------------- set-up */

static uint64_t round_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

static uint64_t budget(shim_opt_t o, uint64_t whole, uint64_t automatic)
{
    shim_mem_t m = shim_opt_mem(o);
    if (m.kind == SHIM_MEM_BYTES)
        return m.bytes;
    if (m.kind == SHIM_MEM_PERCENT)
        return (uint64_t)((double)whole * m.percent / 100.0);
    return automatic;
}

/* Budgets from the options; the GPU default keeps a reserve for the driver and libraries. */
static void set_budgets(res_dev_t *d)
{
    size_t free_b = 0, total = 0;
    DRV(cuMemGetInfo_v2)(&free_b, &total);
    uint64_t reserve = total / 10 > RESERVE_MIN ? total / 10 : RESERVE_MIN;
    uint64_t automatic = free_b > reserve ? free_b - reserve : free_b / 2;
    d->gpu_budget = budget(SHIM_OPT_GPU_MEMORY, total, automatic) / d->chunk * d->chunk;
    uint64_t ram = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
    d->host_budget = budget(SHIM_OPT_HOST_MEMORY, ram, ram / 2) / d->chunk * d->chunk;
}

static int setup(res_dev_t *d, int device, CUcontext ctx)
{
    CUmemAllocationProp p = prop_for(TIER_GPU, device);
    size_t gran = 0;
    int host_vmm = 0;

    d->device = device;
    d->ctx = ctx;
    pthread_mutex_init(&d->lock, NULL);
    if (DRV(cuMemGetAllocationGranularity)(&gran, &p, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) !=
            CUDA_SUCCESS || gran == 0)
        return -1;
    d->chunk = gran;
    d->chunk_shift = (gran & (gran - 1)) == 0 ? __builtin_ctzll(gran) : -1;
    DRV(cuDeviceGetAttribute)(&host_vmm, CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                              device);
    d->host_mappable = host_vmm;
    set_budgets(d);
    d->size = round_up(2 * (d->gpu_budget + d->host_budget) + d->chunk, d->chunk);
    CUdeviceptr base;
    if (DRV(cuMemAddressReserve)(&base, d->size + d->chunk, d->chunk, 0, 0) != CUDA_SUCCESS)
        return -1;
    d->base = base;
    d->staging = d->base + d->size;
    if (arena_create(d->base, d->size, d->chunk, &d->arena) < 0)
        return -1;
    arena_set_release(d->arena, release_chunk);
    d->chunks = calloc(arena_chunk_count(d->arena), sizeof(chunk_t));
    if (!d->chunks || DRV(cuStreamCreate)(&d->stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
        DRV(cuStreamCreate)(&d->join, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
        return -1;
    SHIM_INFO(RES, "device %d: GPU budget %llu MiB, host budget %llu MiB, chunk %llu KiB%s",
              device, (unsigned long long)(d->gpu_budget >> 20),
              (unsigned long long)(d->host_budget >> 20), (unsigned long long)(d->chunk >> 10),
              d->host_mappable ? "" : ", no host mapping: nothing is evicted");
    return 0;
}

/* The device of the current context ctx, cached per thread for the last context seen;
 * code_gen tells when contexts went away (a new one may then have the same address). */
static int ctx_device(CUcontext ctx, CUdevice *dev)
{
    static SHIM_TLS CUcontext last_ctx;
    static SHIM_TLS CUdevice last_dev;
    static SHIM_TLS unsigned last_gen;
    unsigned gen = atomic_load_explicit(&code_gen, memory_order_acquire);

    if (ctx == last_ctx && gen == last_gen) {
        *dev = last_dev;
        return 0;
    }
    if (DRV(cuCtxGetDevice)(dev) != CUDA_SUCCESS)
        return -1;
    last_ctx = ctx;
    last_dev = *dev;
    last_gen = gen;
    return 0;
}

/* The residency state of the current context's device (the context in *ctxp when not NULL);
 * NULL when the shim cannot serve it (the caller then passes the call to the driver, whose
 * answer is the right one). */
static res_dev_t *current_dev(CUcontext *ctxp)
{
    CUcontext ctx = NULL;
    CUdevice dev;
    if (shim_disabled() || !DRV(cuCtxGetCurrent) || DRV(cuCtxGetCurrent)(&ctx) != CUDA_SUCCESS ||
        !ctx || ctx_device(ctx, &dev) != 0 || dev < 0 || dev >= MAX_DEVICES)
        return NULL;
    if (ctxp)
        *ctxp = ctx;
    res_dev_t *d = &devs[dev];
    if (atomic_load_explicit((_Atomic int *)&d->ready, memory_order_acquire) == 0) {
        pthread_mutex_lock(&setup_lock);
        if (d->ready == 0) {
            int ok = setup(d, dev, ctx) == 0;
            if (!ok)
                SHIM_WARN(RES, "device %d: cannot set up the arena; allocations pass through",
                          dev);
            atomic_store_explicit((_Atomic int *)&d->ready, ok ? 1 : -1, memory_order_release);
        }
        pthread_mutex_unlock(&setup_lock);
    }
    return d->ready > 0 ? d : NULL;
}

/* The device whose arena holds p, or NULL. */
static res_dev_t *owner(CUdeviceptr p)
{
    for (int i = 0; i < MAX_DEVICES; i++) {
        res_dev_t *d = &devs[i];
        if (atomic_load_explicit((_Atomic int *)&d->ready, memory_order_acquire) > 0 &&
            p >= d->base && p < d->base + d->size)
            return d;
    }
    return NULL;
}

/* ---------------------------------------------------------------- allocation */

/*
 * Can a request of whole chunks never fit in every budget together, even once the empty slab
 * chunks are released?  Such a request fails at once, before anything is evicted (or host
 * memory created) for it.  A small request may fit in a slab: never judged here.
 */
static int beyond_capacity(res_dev_t *d, size_t bytes)
{
    arena_stats_t st;
    if (arena_small_class(d->arena, bytes))
        return 0;
    arena_stats(d->arena, &st);
    uint64_t cap = d->gpu_budget + (d->host_mappable ? d->host_budget : 0);
    uint64_t held = st.chunk_bytes - (uint64_t)st.cached_chunks * d->chunk;
    return bytes > cap || round_up(bytes, d->chunk) > (cap > held ? cap - held : 0);
}

/* Every chunk of a new allocation names the allocation's chunks (see collect_ptr).  Large
 * allocations own their chunks and a slab chunk holds only small allocations, so a stamp
 * stays right for as long as any allocation in the chunk lives. */
static void stamp_span(res_dev_t *d, const arena_info_t *info)
{
    for (uint32_t i = 0; i < info->nchunks; i++) {
        chunk_t *c = &d->chunks[info->first_chunk + i];
        c->span_first = info->first_chunk;
        c->span_n = info->nchunks;
    }
}

int res_alloc(CUdeviceptr *dptr, size_t bytes, CUresult *r)
{
    res_dev_t *d = current_dev(NULL);
    arena_info_t info;
    if (!d)
        return 0;
    if (!dptr || bytes == 0) {
        *r = CUDA_ERROR_INVALID_VALUE;
        return 1;
    }
    pthread_mutex_lock(&d->lock);
    relax_t rx = relax_begin();
    int err = -ENOMEM;
    if (!beyond_capacity(d, bytes)) {
        err = arena_alloc(d->arena, bytes, back_chunk, d, &info);
        if (err && arena_trim(d->arena, release_chunk, d) > 0)
            err = arena_alloc(d->arena, bytes, back_chunk, d, &info);
    }
    if (!err)
        stamp_span(d, &info);
    relax_end(rx);
    pthread_mutex_unlock(&d->lock);
    *r = err ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
    if (!err)
        *dptr = (CUdeviceptr)info.base;
    return 1;
}

int res_free(CUdeviceptr dptr, CUresult *r)
{
    res_dev_t *d = owner(dptr);
    CUcontext cur = NULL;
    arena_info_t info;
    /* With no context current the driver's answer (CUDA_ERROR_INVALID_CONTEXT) is the one. */
    if (!d || DRV(cuCtxGetCurrent)(&cur) != CUDA_SUCCESS || !cur)
        return 0;
    pthread_mutex_lock(&d->lock);
    relax_t rx = relax_begin();
    /* Like the driver's cuMemFree, wait for work that may still use the memory: a sub-chunk
     * range may be handed out again at once. */
    if (arena_lookup(d->arena, dptr, &info) == 0 && info.base == dptr)
        for (uint32_t i = 0; i < info.nchunks; i++)
            wait_idle(d, &d->chunks[info.first_chunk + i], &d->blocked_free_s);
    int err = arena_free(d->arena, dptr, release_chunk, d, &info);
    relax_end(rx);
    pthread_mutex_unlock(&d->lock);
    *r = err ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    return 1;
}

int res_owns(CUdeviceptr p)
{
    return owner(p) != NULL;
}

int res_meminfo(size_t *free_b, size_t *total, CUresult *r)
{
    if (shim_opt_int(SHIM_OPT_MEMINFO) == SHIM_MEMINFO_PHYSICAL)
        return 0;
    res_dev_t *d = current_dev(NULL);
    arena_stats_t st;
    if (!d)
        return 0;
    if (!free_b || !total) {
        *r = CUDA_ERROR_INVALID_VALUE;
        return 1;
    }
    pthread_mutex_lock(&d->lock);
    arena_stats(d->arena, &st);
    uint64_t cap = d->gpu_budget + (d->host_mappable ? d->host_budget : 0);
    pthread_mutex_unlock(&d->lock);
    *total = cap;
    *free_b = st.chunk_bytes < cap ? cap - st.chunk_bytes : 0;
    *r = CUDA_SUCCESS;
    return 1;
}

int res_address_range(CUdeviceptr *base, size_t *size, CUdeviceptr p, CUresult *r)
{
    res_dev_t *d = owner(p);
    arena_info_t info;
    if (!d)
        return 0;
    pthread_mutex_lock(&d->lock);
    int found = arena_lookup(d->arena, p, &info) == 0;
    pthread_mutex_unlock(&d->lock);
    *r = found ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
    if (found && base)
        *base = info.base;
    if (found && size)
        *size = info.size;
    return 1;
}

/* Pointer attributes of arena memory: device memory of the arena's device.  When *r is an
 * error, *data holds the value cuPointerGetAttributes lists for the attribute. */
int res_pointer_attribute(void *data, CUpointer_attribute a, CUdeviceptr p, CUresult *r)
{
    res_dev_t *d = owner(p);
    arena_info_t info;
    if (!d)
        return 0;
    pthread_mutex_lock(&d->lock);
    int found = arena_lookup(d->arena, p, &info) == 0;
    pthread_mutex_unlock(&d->lock);
    *r = CUDA_SUCCESS;
    switch (a) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: *(CUcontext *)data = d->ctx; break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *(unsigned *)data = CU_MEMORYTYPE_DEVICE; break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *(CUdeviceptr *)data = p; break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        /* Device memory has no host pointer, wherever its chunk lies at the moment. */
        *(void **)data = NULL;
        *r = CUDA_ERROR_INVALID_VALUE;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data = d->device; break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(int *)data = 0; break;
    case CU_POINTER_ATTRIBUTE_MAPPED: *(int *)data = found; break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(CUdeviceptr *)data = info.base; break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data = info.size; break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID: *(unsigned long long *)data = info.base; break;
    default: return 0;     /* the driver answers the rest for the arena's mapping */
    }
    if (!found && a != CU_POINTER_ATTRIBUTE_MAPPED)
        *r = CUDA_ERROR_INVALID_VALUE;
    return 1;
}

/* ---------------------------------------------------------------- launches and copies */

/* What one launch or copy reaches; one per thread, reused (no allocation per operation). */
typedef struct collect {
    res_dev_t *d;
    CUcontext ctx;                  /* the current context */
    uint32_t serial;
    uint32_t *ids;                  /* inline_ids, or a heap array beyond INLINE_IDS */
    size_t n, cap;
    int unknown;                    /* some argument could not be inspected */
    int capturing;                  /* the stream captures: the work is not run now */
    int busy;                       /* this thread's collect is in use */
    uint32_t inline_ids[INLINE_IDS];
} collect_t;

static SHIM_TLS collect_t thread_collect;

/* Start collecting an operation on d: the thread's collect (a heap one if it is in use),
 * with d's lock taken; NULL when out of memory. */
static collect_t *collect_open(res_dev_t *d, CUcontext ctx)
{
    collect_t *k = &thread_collect;
    if (k->busy && !(k = calloc(1, sizeof(*k))))
        return NULL;
    k->busy = 1;
    k->d = d;
    k->ctx = ctx;
    k->ids = k->inline_ids;
    k->n = 0;
    k->cap = INLINE_IDS;
    k->unknown = k->capturing = 0;
    pthread_mutex_lock(&d->lock);
    k->serial = ++d->serial ? d->serial : ++d->serial;
    return k;
}

/* Release d's lock and the collect. */
static void collect_close(collect_t *k)
{
    pthread_mutex_unlock(&k->d->lock);
    if (k->ids != k->inline_ids)
        free(k->ids);
    k->ids = NULL;
    k->busy = 0;
    if (k != &thread_collect)
        free(k);
}

/* Room for twice as many chunk ids; 0, or -1 (the operation then counts as unknown). */
static int collect_grow(collect_t *k)
{
    size_t cap = k->cap * 2;
    uint32_t *ids = malloc(cap * sizeof(*ids));
    if (!ids) {
        k->unknown = 1;
        return -1;
    }
    memcpy(ids, k->ids, k->n * sizeof(*ids));
    if (k->ids != k->inline_ids)
        free(k->ids);
    k->ids = ids;
    k->cap = cap;
    return 0;
}

static inline void collect_chunk(collect_t *k, uint32_t ci)
{
    chunk_t *c = &k->d->chunks[ci];
    if (c->seen == k->serial)
        return;
    c->seen = k->serial;
    if (k->n < k->cap || collect_grow(k) == 0)
        k->ids[k->n++] = ci;
}

/*
 * Every chunk of the allocation containing p, when p lies in a chunk in use.  Read from the
 * chunk's span stamp, not arena_lookup: a value that points into a chunk in use but into no
 * allocation (the slack of a slot, a freed slot, a word that only looks like a pointer)
 * collects the chunk too, which costs residency and a recorded use, never correctness.
 */
static inline void collect_ptr(collect_t *k, uint64_t p)
{
    res_dev_t *d = k->d;
    uint64_t off = p - d->base;
    if (off >= d->size)
        return;
    uint32_t ci = (uint32_t)(d->chunk_shift >= 0 ? off >> d->chunk_shift : off / d->chunk);
    const chunk_t *c = &d->chunks[ci];
    if (c->tier == TIER_NONE || c->seen == k->serial)
        return;
    if (c->span_n <= 1) {
        collect_chunk(k, ci);
        return;
    }
    for (uint32_t i = 0, first = c->span_first, n = c->span_n; i < n; i++)
        collect_chunk(k, first + i);
}

/* Scan every 8-byte word of a parameter value for arena pointers. */
static void collect_words(collect_t *k, const void *buf, size_t size)
{
    for (size_t off = 0; off + 8 <= size; off += 8) {
        uint64_t v;
        memcpy(&v, (const char *)buf + off, 8);
        collect_ptr(k, v);
    }
}

/* Read f's parameter sizes from the driver into kp (n = 0 when it has none to give). */
static void kparams_read(CUfunction f, kparams_t *kp)
{
    size_t off, size, cap = 0;
    kp->n = 0;
    for (unsigned i = 0; DRV(cuFuncGetParamInfo)(f, i, &off, &size) == CUDA_SUCCESS; i++) {
        if (i == cap) {
            cap = cap ? cap * 2 : 8;
            uint32_t *sizes = realloc(kp->sizes, cap * sizeof(*sizes));
            if (!sizes) {
                kp->n = 0;          /* read as opaque: the launch becomes a fence */
                return;
            }
            kp->sizes = sizes;
        }
        kp->sizes[i] = (uint32_t)size;
        kp->n = i + 1;
    }
}

/*
 * The parameter layout of kernel f, read once and cached on d, keyed by the handle and
 * code_gen: a module or library unload and a context teardown bump code_gen, so a handle
 * that new code reuses is read again.  When the probed slots are all taken by live kernels
 * the layout is read into *tmp (whose sizes the caller frees).
 */
static const kparams_t *kparams(res_dev_t *d, CUfunction f, kparams_t *tmp)
{
    unsigned gen = atomic_load_explicit(&code_gen, memory_order_acquire);
    unsigned h = (unsigned)(((uint64_t)(uintptr_t)f * 0x9E3779B97F4A7C15ull) >> 40);
    kparams_t *kp = tmp;

    for (unsigned p = 0; p < KPROBE; p++) {
        kparams_t *e = &d->kcache[(h + p) % KCACHE];
        if (e->f == f && e->gen == gen)
            return e;
        if (kp == tmp && (!e->f || e->gen != gen))
            kp = e;
    }
    if (kp == tmp)
        tmp->sizes = NULL;
    kp->f = f;
    kp->gen = gen;
    kparams_read(f, kp);
    return kp;
}

static void collect_params(collect_t *k, const shim_launch_t *l)
{
    kparams_t tmp;
    const kparams_t *kp = kparams(k->d, l->f, &tmp);

    if (kp->n == 0)
        k->unknown = 1;             /* no parameter information: the arguments are opaque */
    for (unsigned i = 0; i < kp->n; i++)
        collect_words(k, l->params[i], kp->sizes[i]);
    if (kp == &tmp)
        free(tmp.sizes);
}

static void collect_launch(collect_t *k, const shim_launch_t *l)
{
    if (!l->f) {
        k->unknown = 1;                 /* a graph: its nodes are not inspected */
        return;
    }
    if (l->extra) {
        for (size_t i = 0; l->extra[i] != CU_LAUNCH_PARAM_END && i < 64; i += 2)
            if (l->extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
                size_t size = 0;
                for (size_t j = 0; l->extra[j] != CU_LAUNCH_PARAM_END && j < 64; j += 2)
                    if (l->extra[j] == CU_LAUNCH_PARAM_BUFFER_SIZE)
                        size = *(size_t *)l->extra[j + 1];
                collect_words(k, l->extra[i + 1], size);
            }
        return;
    }
    if (l->params)
        collect_params(k, l);
}

/* Bring the collected chunks into GPU memory, as far as the budget allows. */
static void bring_in(res_dev_t *d, collect_t *k)
{
    for (size_t i = 0; i < k->n; i++) {
        chunk_t *c = &d->chunks[k->ids[i]];
        if (c->tier != TIER_HOST)
            continue;
        if (make_room(d, k->serial) < 0)
            break;                      /* still mapped in host memory: slower, still right */
        migrate(d, k->ids[i], TIER_GPU);
    }
}

/*
 * Does stream s capture (or refuse the question)?  Captured work runs only when its graph is
 * launched, so nothing is made resident for it and no use is recorded now.  No capture can be
 * open while none was begun through the shim: then the driver is not asked.
 */
static int capturing(CUstream s, int ptds)
{
    if (atomic_load_explicit(&captures, memory_order_acquire) == 0)
        return 0;
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult r = ptds ? DRV(cuStreamIsCapturing_ptsz)(s, &st) : DRV(cuStreamIsCapturing)(s, &st);
    return r != CUDA_SUCCESS || st != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* An event recorded now on the operation's stream (which is not capturing), or NULL. */
static use_event_t *record_now(res_dev_t *d, CUstream s, int ptds)
{
    use_event_t *e = event_get(d);
    if (e && (ptds ? DRV(cuEventRecord_ptsz)(e->ev, s) : DRV(cuEventRecord)(e->ev, s)) ==
                 CUDA_SUCCESS)
        return e;
    event_put(d, e);
    return NULL;
}

/* Make the join stream wait for o, unless o is done (once per operation k); if the join
 * stream cannot wait, the host does.  Returns 1 when the join stream waits for o. */
static int join_one(res_dev_t *d, collect_t *k, use_event_t *o, use_event_t *e)
{
    if (!o || o == e || o->joined == k->serial)
        return 0;
    o->joined = k->serial;
    if (DRV(cuEventQuery)(o->ev) == CUDA_SUCCESS)
        return 0;                       /* done: nothing left of it to cover */
    if (DRV(cuStreamWaitEvent)(d->join, o->ev, 0) == CUDA_SUCCESS)
        return 1;
    DRV(cuEventSynchronize)(o->ev);
    return 0;
}

/* Does the operation's new use (lazy on stream slot `slot`, or an event when slot < 0)
 * replace what u holds, so that the two must be joined?  A lazy use on u's own stream
 * covers u's use by stream order. */
static int join_needed(const use_t *u, int slot)
{
    return slot < 0 ? u->slot || u->prior : u->slot && u->slot != slot + 1;
}

/* Join on the join stream what u holds (see join_needed); returns the waits enqueued. */
static int join_use(res_dev_t *d, collect_t *k, use_t *u, use_event_t *e)
{
    int n = 0;
    if (u->slot)
        n += join_one(d, k, cover(d, u->slot - 1u, u->tick), e);
    return n + join_one(d, k, u->prior, e);
}

/* An event on the join stream after the joined uses and e (when not NULL), as a new
 * reference; when that fails the host waits for the join stream and e is returned. */
static use_event_t *join_record(res_dev_t *d, use_event_t *e)
{
    use_event_t *j = event_get(d);
    if (j && (!e || DRV(cuStreamWaitEvent)(d->join, e->ev, 0) == CUDA_SUCCESS) &&
        DRV(cuEventRecord)(j->ev, d->join) == CUDA_SUCCESS)
        return j;
    event_put(d, j);
    DRV(cuStreamSynchronize)(d->join);  /* no join event: wait here for what it covers */
    return event_ref(e);
}

/* After the operation: u's last use is the operation's (see finish); j covers what u held
 * when the two had to be joined (join_needed, evaluated before any use changes). */
static inline void use_set(res_dev_t *d, use_t *u, int slot, uint64_t tick, use_event_t *j)
{
    if (slot < 0 || join_needed(u, slot)) {
        event_put(d, u->prior);
        u->prior = event_ref(j);
    }
    u->slot = (uint16_t)(slot + 1);
    u->tick = tick;
}

/* Join what the operation's uses hold where its new use replaces it (see join_needed);
 * returns the waits enqueued on the join stream. */
static int join_op(res_dev_t *d, collect_t *k, int slot, use_event_t *e)
{
    int n = 0;
    for (size_t i = 0; i < k->n; i++) {
        use_t *u = &d->chunks[k->ids[i]].use;
        if (join_needed(u, slot))
            n += join_use(d, k, u, e);
    }
    if (k->unknown && join_needed(&d->fence, slot))
        n += join_use(d, k, &d->fence, e);
    return n;
}

/*
 * After the operation was enqueued on stream s: its chunks' (and, when it reached unknown
 * memory, the fence's) last use is now.  On a stream with a slot that is a tick, no event;
 * otherwise an event recorded at once.  A chunk used on several streams keeps its earlier
 * uses elsewhere in `prior`, joined on the join stream into one event, so that a migration
 * waits for all of them.
 */
static void finish(res_dev_t *d, collect_t *k, CUstream s, int ptds)
{
    int lazy = atomic_load_explicit(&captures, memory_order_acquire) == 0;
    int slot = lazy ? stream_slot(d, s, ptds, k->ctx) : -1;
    use_event_t *e = slot < 0 ? record_now(d, s, ptds) : NULL;
    if (slot < 0 && !e)
        return;
    int n = join_op(d, k, slot, e);
    use_event_t *j = n ? join_record(d, e) : event_ref(e);
    uint64_t tick = slot >= 0 ? ++d->streams[slot].tick : 0;
    for (size_t i = 0; i < k->n; i++) {
        chunk_t *c = &d->chunks[k->ids[i]];
        use_set(d, &c->use, slot, tick, j);
        c->lru = ++d->clock;
    }
    if (k->unknown)
        use_set(d, &d->fence, slot, tick, j);
    event_put(d, j);
    event_put(d, e);
}

/* Which device's arena an operation concerns: the current one, if it has an arena. */
static res_dev_t *active_dev(CUcontext *ctx)
{
    for (int i = 0; i < MAX_DEVICES; i++)
        if (atomic_load_explicit((_Atomic int *)&devs[i].ready, memory_order_acquire) > 0)
            return current_dev(ctx);
    return NULL;
}

void res_launch_begin(shim_launch_t *l)
{
    CUcontext ctx = NULL;
    res_dev_t *d = active_dev(&ctx);
    collect_t *k;
    l->res = NULL;
    if (!d || !(k = collect_open(d, ctx)))
        return;
    relax_t rx = relax_begin();
    collect_launch(k, l);
    k->capturing = capturing(l->stream, shim_hook_per_thread[l->hook]);
    if (!k->capturing)
        bring_in(d, k);
    relax_end(rx);
    l->res = k;             /* the lock stays held until res_launch_end */
}

/* The end of an operation k on stream s: record its use if the driver took it. */
static void op_end(collect_t *k, CUresult r, CUstream s, shim_hook_t h)
{
    if (r == CUDA_SUCCESS && !k->capturing) {
        relax_t rx = relax_begin();
        finish(k->d, k, s, shim_hook_per_thread[h]);
        relax_end(rx);
    }
    collect_close(k);
}

void res_launch_end(shim_launch_t *l, CUresult r)
{
    if (l->res)
        op_end(l->res, r, l->stream, l->hook);
    l->res = NULL;
}

void res_copy_begin(shim_copy_t *c)
{
    CUcontext ctx = NULL;
    res_dev_t *d = active_dev(&ctx);
    collect_t *k;
    c->res = NULL;
    if (!d || !(k = collect_open(d, ctx)))
        return;
    collect_ptr(k, c->dst);
    collect_ptr(k, c->src);
    if (c->desc || c->count)
        k->unknown = 1;     /* structured and batched copies: operands not decoded */
    k->capturing = capturing(c->stream, shim_hook_per_thread[c->hook]);
    c->res = k;
}

void res_copy_end(shim_copy_t *c, CUresult r)
{
    if (c->res)
        op_end(c->res, r, c->stream, c->hook);
    c->res = NULL;
}

/* ---------------------------------------------------------------- statistics */

void res_stats_print(void)
{
    for (int i = 0; i < MAX_DEVICES; i++) {
        res_dev_t *d = &devs[i];
        if (d->ready <= 0)
            continue;
        arena_stats_t st;
        arena_stats(d->arena, &st);
        shim_log_plain("device %d: allocations %llu live, %llu peak; GPU peak %llu MiB of %llu, "
                       "host peak %llu MiB of %llu", d->device,
                       (unsigned long long)st.live_allocs, (unsigned long long)st.peak_live_allocs,
                       (unsigned long long)(d->gpu_peak >> 20),
                       (unsigned long long)(d->gpu_budget >> 20),
                       (unsigned long long)(d->host_peak >> 20),
                       (unsigned long long)(d->host_budget >> 20));
        shim_log_plain("device %d: migrations to host %llu (%llu MiB), to GPU %llu (%llu MiB), "
                       "evictions forced %llu, blocked on migrations %.3f s, blocked on frees "
                       "%.3f s", d->device,
                       (unsigned long long)d->migrations_out,
                       (unsigned long long)(d->bytes_out >> 20),
                       (unsigned long long)d->migrations_in,
                       (unsigned long long)(d->bytes_in >> 20),
                       (unsigned long long)d->evictions_forced, d->blocked_s,
                       d->blocked_free_s);
    }
}

/* In a forked child the driver is unusable: forget every arena, serve nothing. */
void res_after_fork(void)
{
    for (int i = 0; i < MAX_DEVICES; i++)
        devs[i].ready = -1;
}
