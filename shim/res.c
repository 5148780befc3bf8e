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
 * After a launch or copy, an event recorded on its stream becomes the last use of each chunk
 * it touched (joined, on the shim's join stream, with earlier uses on other streams that may
 * still run); a chunk is only remapped or released after the host has waited for its last use
 * (invariant 4).  A launch whose pointers cannot all be seen, and any graph launch, becomes a
 * fence: every chunk waits for it.  Work captured into a graph is not run when it is
 * captured: nothing is brought in or recorded for it then.
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

enum { TIER_NONE, TIER_GPU, TIER_HOST };

typedef struct use_event {
    CUevent ev;
    int refs;                       /* chunks (and the fence) naming it as their last use */
    CUstream stream;                /* where it was recorded */
    int ptds;                       /* recorded with the per-thread default stream ABI */
    uint32_t joined;                /* serial of the operation that last joined it */
    struct use_event *next_free;
} use_event_t;

typedef struct chunk {
    uint8_t tier;
    uint32_t seen;                  /* serial of the last launch that collected it */
    CUmemGenericAllocationHandle phys;
    use_event_t *last;              /* last use, or NULL */
    uint64_t lru;                   /* stamp of the last use */
} chunk_t;

typedef struct res_dev {
    int ready;                      /* 1: set up; -1: set-up failed, pass everything through */
    int device;
    CUcontext ctx;
    pthread_mutex_t lock;
    arena_t *arena;
    uint64_t base, size, chunk;
    chunk_t *chunks;
    CUdeviceptr staging;            /* one chunk of address space for migrations */
    CUstream stream;                /* the shim's own copy stream */
    CUstream join;                  /* where last uses on different streams are joined */
    uint64_t gpu_budget, host_budget, gpu_used, host_used, gpu_peak, host_peak;
    int host_mappable;              /* VMM host-located memory supported */
    use_event_t *fence;             /* a use of unknown memory: every chunk waits for it */
    CUmemGenericAllocationHandle spare[2][SPARES];  /* unmapped physical chunks, per tier */
    int nspare[2];
    use_event_t *free_events;
    uint64_t clock;                 /* LRU stamps */
    uint32_t serial;
    uint64_t migrations_out, migrations_in, bytes_out, bytes_in, evictions_forced;
    double blocked_s;
} res_dev_t;

static res_dev_t devs[MAX_DEVICES];
static pthread_mutex_t setup_lock = PTHREAD_MUTEX_INITIALIZER;

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
    e->refs = 0;
    e->joined = 0;
    return e;
}

static void event_put(res_dev_t *d, use_event_t *e)
{
    if (e && --e->refs <= 0) {
        e->next_free = d->free_events;
        d->free_events = e;
    }
}

static void set_last(res_dev_t *d, chunk_t *c, use_event_t *e)
{
    e->refs++;
    event_put(d, c->last);
    c->last = e;
    c->lru = ++d->clock;
}

/* Were a and b recorded on one stream, so that b's completion implies a's?  The per-thread
 * default stream is a different stream in each thread: never assumed the same. */
static int same_stream(const use_event_t *a, const use_event_t *b)
{
    int per_thread = (a->ptds && !a->stream) || a->stream == CU_STREAM_PER_THREAD;
    return a->stream == b->stream && a->ptds == b->ptds && !per_thread;
}

/* The host waits until nothing in flight can use chunk c (its last use and the fence). */
static void wait_idle(res_dev_t *d, chunk_t *c)
{
    use_event_t *ev[2] = { c->last, d->fence };
    for (int i = 0; i < 2; i++) {
        if (!ev[i] || DRV(cuEventQuery)(ev[i]->ev) == CUDA_SUCCESS)
            continue;
        double t0 = now_s();
        DRV(cuEventSynchronize)(ev[i]->ev);
        d->blocked_s += now_s() - t0;
    }
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
    wait_idle(d, c);
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

    wait_idle(d, c);
    DRV(cuMemUnmap)(arena_chunk_addr(d->arena, ci), d->chunk);
    phys_put(d, c->tier, c->phys);
    event_put(d, c->last);
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

/* The residency state of the current context's device; NULL when the shim cannot serve it
 * (the caller then passes the call to the driver, whose answer is the right one). */
static res_dev_t *current_dev(void)
{
    CUcontext ctx = NULL;
    CUdevice dev;
    if (shim_disabled() || !DRV(cuCtxGetCurrent) || DRV(cuCtxGetCurrent)(&ctx) != CUDA_SUCCESS ||
        !ctx || DRV(cuCtxGetDevice)(&dev) != CUDA_SUCCESS || dev < 0 || dev >= MAX_DEVICES)
        return NULL;
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

int res_alloc(CUdeviceptr *dptr, size_t bytes, CUresult *r)
{
    res_dev_t *d = current_dev();
    arena_info_t info;
    if (!d)
        return 0;
    if (!dptr || bytes == 0) {
        *r = CUDA_ERROR_INVALID_VALUE;
        return 1;
    }
    pthread_mutex_lock(&d->lock);
    int err = -ENOMEM;
    if (!beyond_capacity(d, bytes)) {
        err = arena_alloc(d->arena, bytes, back_chunk, d, &info);
        if (err && arena_trim(d->arena, release_chunk, d) > 0)
            err = arena_alloc(d->arena, bytes, back_chunk, d, &info);
    }
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
    /* Like the driver's cuMemFree, wait for work that may still use the memory: a sub-chunk
     * range may be handed out again at once. */
    if (arena_lookup(d->arena, dptr, &info) == 0 && info.base == dptr)
        for (uint32_t i = 0; i < info.nchunks; i++)
            wait_idle(d, &d->chunks[info.first_chunk + i]);
    int err = arena_free(d->arena, dptr, release_chunk, d, &info);
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
    res_dev_t *d = current_dev();
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

typedef struct collect {
    res_dev_t *d;
    uint32_t serial;
    uint32_t *ids;
    size_t n, cap;
    int unknown;            /* some argument could not be inspected */
    int capturing;          /* the stream captures: the work is not run now */
} collect_t;

static void collect_chunk(collect_t *k, uint32_t ci)
{
    chunk_t *c = &k->d->chunks[ci];
    if (c->seen == k->serial)
        return;
    c->seen = k->serial;
    if (k->n == k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 64;
        uint32_t *ids = realloc(k->ids, cap * sizeof(*ids));
        if (!ids) {
            k->unknown = 1;
            return;
        }
        k->ids = ids;
        k->cap = cap;
    }
    k->ids[k->n++] = ci;
}

/* Every chunk of the allocation containing p (when p is in the arena). */
static void collect_ptr(collect_t *k, uint64_t p)
{
    arena_info_t info;
    if (p < k->d->base || p >= k->d->base + k->d->size ||
        arena_lookup(k->d->arena, p, &info) < 0)
        return;
    for (uint32_t i = 0; i < info.nchunks; i++)
        collect_chunk(k, info.first_chunk + i);
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
    for (size_t i = 0; l->params; i++) {
        size_t off, size;
        if (DRV(cuFuncGetParamInfo)(l->f, i, &off, &size) != CUDA_SUCCESS) {
            if (i == 0)
                k->unknown = 1;     /* no parameter information: the arguments are opaque */
            break;
        }
        collect_words(k, l->params[i], size);
    }
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

static int hook_per_thread(shim_hook_t h)
{
    const char *n = shim_hook_names[h];
    size_t len = strlen(n);
    return len > 5 && (strcmp(n + len - 5, "_ptsz") == 0 || strcmp(n + len - 5, "_ptds") == 0);
}

/*
 * Does stream s capture (or refuse the question)?  Captured work runs only when its graph is
 * launched, so nothing is made resident for it and no use is recorded now; a migration would
 * also make host waits (cuEventQuery, cuEventSynchronize), potentially unsafe calls that
 * invalidate a global-mode capture of this thread.
 */
static int capturing(CUstream s, int ptds)
{
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult r = ptds ? DRV(cuStreamIsCapturing_ptsz)(s, &st) : DRV(cuStreamIsCapturing)(s, &st);
    return r != CUDA_SUCCESS || st != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* Record the operation's last use on its stream (which is not capturing). */
static use_event_t *record_use(res_dev_t *d, CUstream s, int ptds)
{
    use_event_t *e = event_get(d);
    if (!e)
        return NULL;
    CUresult r = ptds ? DRV(cuEventRecord_ptsz)(e->ev, s) : DRV(cuEventRecord)(e->ev, s);
    if (r != CUDA_SUCCESS) {
        e->refs = 1;
        event_put(d, e);
        return NULL;
    }
    e->stream = s;
    e->ptds = ptds;
    return e;
}

/* Return an event that nothing names as its last use to the free list. */
static void drop_unused(res_dev_t *d, use_event_t *e)
{
    if (e && e->refs == 0) {
        e->refs = 1;
        event_put(d, e);
    }
}

/* Make the join stream wait for o, unless o is done (once per operation k); if the join
 * stream cannot wait, the host does.  Returns 1 when the join stream waits for o. */
static int join_one(res_dev_t *d, collect_t *k, use_event_t *o, use_event_t *e)
{
    if (!o || o == e || o->joined == k->serial || same_stream(o, e))
        return 0;
    o->joined = k->serial;
    if (DRV(cuEventQuery)(o->ev) == CUDA_SUCCESS)
        return 0;                       /* done: e alone covers what is left */
    if (DRV(cuStreamWaitEvent)(d->join, o->ev, 0) == CUDA_SUCCESS)
        return 1;
    DRV(cuEventSynchronize)(o->ev);
    return 0;
}

/*
 * A chunk has one last use, but work on several streams may use it at once (slots of one
 * chunk, or one allocation, used from different streams).  The operation's new last use e
 * must therefore also cover the previous last uses recorded on other streams (and the old
 * fence when the operation becomes the fence): they are joined with e on the join stream,
 * and the event recorded there replaces them.  Returns e when there is nothing to join.
 */
static use_event_t *join_uses(res_dev_t *d, collect_t *k, use_event_t *e)
{
    int n = 0;
    for (size_t i = 0; i < k->n; i++)
        n += join_one(d, k, d->chunks[k->ids[i]].last, e);
    if (k->unknown)
        n += join_one(d, k, d->fence, e);
    if (n == 0)
        return e;
    use_event_t *j = event_get(d);
    if (j && DRV(cuStreamWaitEvent)(d->join, e->ev, 0) == CUDA_SUCCESS &&
        DRV(cuEventRecord)(j->ev, d->join) == CUDA_SUCCESS) {
        j->stream = d->join;
        j->ptds = 0;
        return j;
    }
    drop_unused(d, j);
    DRV(cuStreamSynchronize)(d->join);  /* no join event: wait here for what it covers */
    return e;
}

/* After the operation was enqueued: its chunks' last use is now. */
static void finish(res_dev_t *d, collect_t *k, CUstream s, int ptds)
{
    use_event_t *e = k->capturing ? NULL : record_use(d, s, ptds);
    if (e) {
        use_event_t *j = join_uses(d, k, e);
        for (size_t i = 0; i < k->n; i++)
            set_last(d, &d->chunks[k->ids[i]], j);
        if (k->unknown) {
            j->refs++;
            event_put(d, d->fence);
            d->fence = j;
        }
        drop_unused(d, e);
        if (j != e)
            drop_unused(d, j);
    }
    free(k->ids);
}

/* Which device's arena an operation concerns: the current one, if it has an arena. */
static res_dev_t *active_dev(void)
{
    for (int i = 0; i < MAX_DEVICES; i++)
        if (atomic_load_explicit((_Atomic int *)&devs[i].ready, memory_order_acquire) > 0)
            return current_dev();
    return NULL;
}

void res_launch_begin(shim_launch_t *l)
{
    res_dev_t *d = active_dev();
    l->res = NULL;
    if (!d)
        return;
    collect_t *k = calloc(1, sizeof(*k));
    if (!k)
        return;
    pthread_mutex_lock(&d->lock);
    k->d = d;
    k->serial = ++d->serial ? d->serial : ++d->serial;
    collect_launch(k, l);
    k->capturing = capturing(l->stream, hook_per_thread(l->hook));
    if (!k->capturing)
        bring_in(d, k);
    l->res = k;             /* the lock stays held until res_launch_end */
}

void res_launch_end(shim_launch_t *l, CUresult r)
{
    collect_t *k = l->res;
    if (!k)
        return;
    res_dev_t *d = k->d;
    if (r == CUDA_SUCCESS)
        finish(d, k, l->stream, hook_per_thread(l->hook));
    else
        free(k->ids);
    pthread_mutex_unlock(&d->lock);
    free(k);
    l->res = NULL;
}

void res_copy_begin(shim_copy_t *c)
{
    res_dev_t *d = active_dev();
    c->res = NULL;
    if (!d)
        return;
    collect_t *k = calloc(1, sizeof(*k));
    if (!k)
        return;
    pthread_mutex_lock(&d->lock);
    k->d = d;
    k->serial = ++d->serial ? d->serial : ++d->serial;
    collect_ptr(k, c->dst);
    collect_ptr(k, c->src);
    if (c->desc || c->count)
        k->unknown = 1;     /* structured and batched copies: operands not decoded */
    k->capturing = capturing(c->stream, hook_per_thread(c->hook));
    c->res = k;
}

void res_copy_end(shim_copy_t *c, CUresult r)
{
    collect_t *k = c->res;
    if (!k)
        return;
    res_dev_t *d = k->d;
    if (r == CUDA_SUCCESS)
        finish(d, k, c->stream, hook_per_thread(c->hook));
    else
        free(k->ids);
    pthread_mutex_unlock(&d->lock);
    free(k);
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
                       "evictions forced %llu, blocked on migrations %.3f s", d->device,
                       (unsigned long long)d->migrations_out,
                       (unsigned long long)(d->bytes_out >> 20),
                       (unsigned long long)d->migrations_in,
                       (unsigned long long)(d->bytes_in >> 20),
                       (unsigned long long)d->evictions_forced, d->blocked_s);
    }
}

/* In a forked child the driver is unusable: forget every arena, serve nothing. */
void res_after_fork(void)
{
    for (int i = 0; i < MAX_DEVICES; i++)
        devs[i].ready = -1;
}
