/* SPDX-License-Identifier: MIT */
/*
 * res.c - residency: the arena of each device, its budgets, and the entry points that serve
 * allocations, frees, cuMemGetInfo and pointer attributes of arena memory.
 *
 * Every application allocation lives in one arena per device, a range reserved with
 * cuMemAddressReserve and divided into chunks of the allocation granularity (arena.c lays the
 * allocations out).  Each chunk in use is backed by exactly one physical allocation, mapped
 * at the chunk's address: device memory while the GPU budget allows, otherwise host memory
 * created with cuMemCreate(CU_MEM_LOCATION_TYPE_HOST), mapped at the same address, so every
 * page stays reachable from the device and a pointer never changes (DESIGN.md invariants 2
 * and 3).  res_move.c moves chunks between the two, res_use.c tracks their last uses, and
 * res_launch.c makes what a launch or copy reaches resident before it is enqueued.
 *
 * One mutex per device guards this state.  It is held across the driver calls of a migration
 * (including the host waits on last uses), which DESIGN.md invariant 7 forbids: see
 * docs/ARCHITECTURE.md ("Departures").
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "res_int.h"

res_dev_t res_devs[MAX_DEVICES];
static pthread_mutex_t setup_lock = PTHREAD_MUTEX_INITIALIZER;
_Atomic int res_captures;
_Atomic unsigned res_code_gen = 1;

/* ---------------------------------------------------------------- arena callbacks */

/* A chunk came into use: back it with GPU memory, or host memory when the GPU is full. */
static int back_chunk(void *ctx, uint32_t ci)
{
    res_dev_t *d = ctx;
    chunk_t *c = &d->chunks[ci];
    CUdeviceptr va = arena_chunk_addr(d->arena, ci);
    int tier = res_make_room(d, 0) == 0 ? TIER_GPU : TIER_HOST;

    if (tier == TIER_HOST && !res_has_room(d, TIER_HOST))
        return -ENOMEM;
    if (res_map_new(d, tier, va, &c->phys) != CUDA_SUCCESS)
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

    res_wait_idle(d, c, &d->blocked_free_s);
    DRV(cuMemUnmap)(arena_chunk_addr(d->arena, ci), d->chunk);
    res_phys_put(d, c->tier, c->phys);
    res_use_clear(d, &c->use);
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
    CUmemAllocationProp p = res_prop_for(TIER_GPU, device);
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
 * res_code_gen tells when contexts went away (a new one may then have the same address). */
static int ctx_device(CUcontext ctx, CUdevice *dev)
{
    static SHIM_TLS CUcontext last_ctx;
    static SHIM_TLS CUdevice last_dev;
    static SHIM_TLS unsigned last_gen;
    unsigned gen = atomic_load_explicit(&res_code_gen, memory_order_acquire);

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
    res_dev_t *d = &res_devs[dev];
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
        res_dev_t *d = &res_devs[i];
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
            res_wait_idle(d, &d->chunks[info.first_chunk + i], &d->blocked_free_s);
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


/* Which device's arena an operation concerns: the current one, if it has an arena. */
res_dev_t *res_active_dev(CUcontext *ctx)
{
    for (int i = 0; i < MAX_DEVICES; i++)
        if (atomic_load_explicit((_Atomic int *)&res_devs[i].ready, memory_order_acquire) > 0)
            return current_dev(ctx);
    return NULL;
}


/* ---------------------------------------------------------------- statistics */

void res_stats_print(void)
{
    for (int i = 0; i < MAX_DEVICES; i++) {
        res_dev_t *d = &res_devs[i];
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
        res_devs[i].ready = -1;
}

