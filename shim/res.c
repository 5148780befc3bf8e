/* SPDX-License-Identifier: MIT */
/*
 * res.c - residency: the arena of each device, its budgets, and the entry points that serve
 * allocations, frees, cuMemGetInfo, pointer attributes and IPC of arena memory (res_app.c
 * charges the application's own device memory to the budget).
 *
 * Every application allocation lives in one arena per device, a range reserved with
 * cuMemAddressReserve and divided into chunks of the allocation granularity (arena.c lays the
 * allocations out).  Each chunk in use is backed by exactly one physical allocation: device
 * memory while the GPU budget allows, otherwise host memory.  Where the device maps host
 * memory through VMM (cuMemCreate with a HOST location), that memory is mapped at the same
 * address, so every page stays reachable from the device and a pointer never changes
 * (DESIGN.md invariants 2 and 3); where it does not, the chunk's contents go to plain pinned
 * host memory and its address is unmapped until an operation needs it again.  res_move.c
 * moves chunks, res_use.c tracks their last uses, and res_launch.c makes what a launch or
 * copy reaches resident before it is enqueued.
 *
 * One lock per device (shim_lock_t, lock.h) guards this state.  It is held across the driver's
 * launch and the copy of a migration; the long host waits (an eviction's wait for its victim,
 * a free, a copy with a host side) drop it.  DESIGN.md invariant 7 forbids holding it across a
 * call that can block on the GPU: docs/ARCHITECTURE.md ("As built vs DESIGN.md") lists what
 * still does.
 */
#include <errno.h>
#include <stdlib.h>

#include "res_int.h"
#include "res_nvme.h"

res_dev_t res_devs[MAX_DEVICES];
static pthread_mutex_t setup_lock = PTHREAD_MUTEX_INITIALIZER;
_Atomic int res_captures;
_Atomic int res_arenas;
res_host_t res_host;
_Atomic uint64_t res_span_lo, res_span_len;
_Atomic unsigned res_code_gen = 1;
_Atomic unsigned res_stream_gen = 1;

/* ---------------------------------------------------------------- arena callbacks */

/* A chunk came into use: a parked one as it is, others backed with GPU memory, or host
 * memory when the GPU is full. */
static int back_chunk(void *ctx, uint32_t ci)
{
    res_dev_t *d = ctx;
    d->exposed_fresh = 1;               /* (not exposed yet: res_expose) */
    d->slab_fresh = ci + 1;             /* (a slab's, when the allocation is small) */
    if (d->chunks[ci].parked) {
        res_unpark(d, ci);
        return 0;
    }
    int tier = res_make_room(d, 0) == 0 ? TIER_GPU : TIER_HOST;

    if (tier == TIER_HOST && !res_has_room(d, TIER_HOST))
        return -ENOMEM;
    CUresult r = res_back(d, ci, tier);
    if (r == CUDA_ERROR_OUT_OF_MEMORY && tier == TIER_GPU) {
        /* The driver refused it within the budget, which came down: evict, or use the host. */
        tier = res_make_room(d, 0) == 0 ? TIER_GPU : TIER_HOST;
        r = tier == TIER_HOST && !res_has_room(d, TIER_HOST) ? CUDA_ERROR_OUT_OF_MEMORY
                                                               : res_back(d, ci, tier);
    }
    return r == CUDA_SUCCESS ? 0 : -ENOMEM;
}

/*
 * A chunk fell out of use: once nothing in flight uses it, it is parked (its GPU memory stays
 * mapped for the arena's next use of it) or gives its memory back.  When the frees that
 * released it were stream-ordered ones whose point the stream has passed (d->freed_in_order),
 * nothing may use it any more ("the allocation must not be accessed after stream execution
 * reaches the free", cuda.h), so nothing is waited for: the uses recorded on it, and the fence
 * of operations the shim cannot see into, are the application's earlier work, which stream
 * order put before the free.  Waiting for them would hold d's lock for as long as unrelated
 * work runs (a graph launched since, which is a fence).  Holds of other devices' operations
 * are released all the same (their events are done by the same order).
 */
static int release_chunk(void *ctx, uint32_t ci)
{
    res_dev_t *d = ctx;
    chunk_t *c = &d->chunks[ci];

    if (!d->freed_in_order)
        res_wait_idle(d, c, &d->blocked_free_s);
    else if (c->held && d->foreign_holds)
        res_foreign_wait(d, ci, &d->blocked_free_s);
    if (d->plan)
        res_plan_slab(d, ci, 0);        /* (a large allocation's chunks: nothing there) */
    res_park(d, ci);
    return 0;
}

/* The arena calls that report chunks through the callbacks above: while one runs, nothing
 * may re-enter the arena (res_make_room leaves deferred frees alone then). */
static int arena_do_alloc(res_dev_t *d, size_t bytes, arena_info_t *info)
{
    d->arena_busy = 1;
    d->slab_fresh = 0;
    int err = arena_alloc(d->arena, bytes, back_chunk, d, info);
    if (err && arena_trim(d->arena, release_chunk, d) > 0) {
        d->slab_fresh = 0;
        err = arena_alloc(d->arena, bytes, back_chunk, d, info);
    }
    d->arena_busy = 0;
    if (!err && d->plan) {
        if (!arena_small_class(d->arena, info->size))
            res_plan_alloc(d, info->base, info->size);
        else if (d->slab_fresh)
            res_plan_slab(d, d->slab_fresh - 1, 1);
    }
    return err;
}

static int arena_do_free(res_dev_t *d, CUdeviceptr p, arena_info_t *info)
{
    if (d->plan)
        res_plan_free(d, p);
    d->arena_busy = 1;
    int err = arena_free(d->arena, p, release_chunk, d, info);
    d->arena_busy = 0;
    if (!err && d->tags_n)
        res_tag_drop(d, p);
    return err;
}

/* ---------------------------------------------------------------- set-up */

static uint64_t round_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

static int attribute(CUdevice_attribute a, int device)
{
    int v = 0;
    return DRV(cuDeviceGetAttribute)(&v, a, device) == CUDA_SUCCESS ? v : 0;
}

/* Where host chunks can be mapped through VMM: a HOST location, else the device's host NUMA
 * node; host_mappable = 0 when neither is supported or ELIXIR_HOST_VMM=0 (evicted chunks are
 * then unmapped).  -ERANGE (reported) where ELIXIR_HOST_VMM=1 asks for what the device cannot
 * do. */
static int host_location(res_dev_t *d)
{
    long want = shim_opt_int(SHIM_OPT_HOST_VMM);
    d->host_mappable = 1;
    if (want == 0) {
        d->host_mappable = 0;
    } else if (attribute(CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                         d->device)) {
        d->host_loc = (CUmemLocation){ .type = CU_MEM_LOCATION_TYPE_HOST, .id = 0 };
    } else if (attribute(CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                         d->device)) {
        int node = attribute(CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, d->device);
        d->host_loc = (CUmemLocation){ .type = CU_MEM_LOCATION_TYPE_HOST_NUMA,
                                       .id = node > 0 ? node : 0 };
    } else {
        d->host_mappable = 0;
    }
    if (want == 1 && !d->host_mappable) {
        SHIM_ERROR(RES, "ELIXIR_HOST_VMM=1: device %d cannot map host memory through VMM (its "
                   "HOST and HOST_NUMA virtual memory management attributes are 0); give auto "
                   "or 0 (evicted memory unmapped in pinned host pieces); the program stops "
                   "(exit status %d)", d->device, SHIM_EXIT_CONFIG);
        return -ERANGE;
    }
    return 0;
}

static int setup(res_dev_t *d, int device, CUcontext ctx)
{
    size_t gran = 0;

    d->device = device;
    d->ctx = ctx;
    d->lock = (shim_lock_t)SHIM_LOCK_INIT;
    CUmemAllocationProp p = res_prop_for(d, TIER_GPU);
    if (DRV(cuMemGetAllocationGranularity)(&gran, &p, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) !=
            CUDA_SUCCESS || gran == 0)
        return -1;
    d->chunk = gran;
    d->chunk_shift = (gran & (gran - 1)) == 0 ? __builtin_ctzll(gran) : -1;
    if (host_location(d) < 0)
        return -ERANGE;
    if (DRV(cuDeviceGetDefaultMemPool)(&d->default_pool, device) != CUDA_SUCCESS)
        d->default_pool = NULL;
    if (res_set_budgets(d) < 0)
        return -ERANGE;
    res_policy_plan = shim_opt_int(SHIM_OPT_POLICY) == 1;
    uint64_t nvme;                      /* (0 without ELIXIR_NVME_PATH) */
    if (res_nvme_setup(d, &nvme) < 0)
        return -ERANGE;
    long unmap = shim_opt_int(SHIM_OPT_PLAN_UNMAP);
    d->unmap_on = res_policy_plan && d->host_mappable &&
                  (unmap == SHIM_AUTO ? shim_opt_str(SHIM_OPT_NVME_PATH)[0] != 0 : unmap == 1);
    d->reach_forward = d->host_mappable && shim_opt_int(SHIM_OPT_REACH) == 1;
    d->size = round_up(2 * (d->gpu_budget + atomic_load(&res_host.budget) + nvme) + d->chunk,
                       d->chunk);
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
              (unsigned long long)(atomic_load(&res_host.budget) >> 20),
              (unsigned long long)(d->chunk >> 10),
              d->host_mappable ? "" : shim_opt_int(SHIM_OPT_HOST_VMM) == 0
                                          ? ", ELIXIR_HOST_VMM=0: evicted chunks are unmapped"
                                          : ", no host mapping: evicted chunks are unmapped");
    if (SHIM_TRACING())
        shim_trace_budget(device, d->gpu_budget, atomic_load(&res_host.budget));
    return 0;
}

/* Widen the span of all arenas to d's (setup_lock held).  Relaxed: a pointer into d's arena
 * reaches another thread only after an allocation there, which this store happens before. */
static void span_add(const res_dev_t *d)
{
    uint64_t lo = atomic_load_explicit(&res_span_lo, memory_order_relaxed);
    uint64_t hi = lo + atomic_load_explicit(&res_span_len, memory_order_relaxed);
    int first = atomic_load(&res_arenas) == 0;
    if (first || d->base < lo)
        lo = d->base;
    if (first || d->base + d->size > hi)
        hi = d->base + d->size;
    atomic_store_explicit(&res_span_lo, lo, memory_order_relaxed);
    atomic_store_explicit(&res_span_len, hi - lo, memory_order_relaxed);
}

/* The residency state of context ctx's device (ctx current), set up on first use; NULL when
 * the shim cannot serve it. */
static res_dev_t *ctx_dev(CUcontext ctx)
{
    CUdevice dev;
    if (shim_disabled() || DRV(cuCtxGetDevice)(&dev) != CUDA_SUCCESS || dev < 0 ||
        dev >= MAX_DEVICES)
        return NULL;
    res_dev_t *d = &res_devs[dev];
    if (atomic_load_explicit((_Atomic int *)&d->ready, memory_order_acquire) == 0) {
        pthread_mutex_lock(&setup_lock);
        if (d->ready == 0) {
            int rc = setup(d, dev, ctx), ok = rc == 0;
            if (rc == -ERANGE) {                /* a budget under one chunk, host VMM asked
                                                 * of a device without, an NVMe tier that
                                                 * cannot be had: reported */
                atomic_store_explicit((_Atomic int *)&d->ready, -1, memory_order_release);
                pthread_mutex_unlock(&setup_lock);
                exit(SHIM_EXIT_CONFIG);
            }
            if (!ok)
                SHIM_WARN(RES, "device %d: cannot set up the arena; allocations pass through",
                          dev);
            atomic_store_explicit((_Atomic int *)&d->ready, ok ? 1 : -1, memory_order_release);
            if (ok) {
                span_add(d);
                atomic_fetch_add(&res_arenas, 1);
            }
        }
        pthread_mutex_unlock(&setup_lock);
    }
    if (d->ready > 0 && !res_dev_ctx(d))
        res_home(d, ctx);               /* the arena's context was destroyed */
    return d->ready > 0 ? d : NULL;
}

SHIM_TLS res_ctx_memo_t res_ctx_memo;

/* ctx_dev(ctx) for the current context ctx, through the thread's memo. */
static res_dev_t *memo_dev(CUcontext ctx)
{
    unsigned gen = atomic_load_explicit(&res_code_gen, memory_order_acquire);
    res_dev_t *d = res_ctx_memo.d;
    if (ctx == res_ctx_memo.ctx && gen == res_ctx_memo.gen && d && res_dev_ready(d))
        return d;
    d = ctx_dev(ctx);
    res_ctx_memo = (res_ctx_memo_t){ ctx, gen, d };
    return d;
}

res_dev_t *res_current_dev(CUcontext *ctxp)
{
    shim_pfn_cuCtxGetCurrent_t get = DRV(cuCtxGetCurrent);
    CUcontext ctx = NULL;
    if (!get || get(&ctx) != CUDA_SUCCESS || !ctx)
        return NULL;
    if (ctxp)
        *ctxp = ctx;
    return memo_dev(ctx);
}

res_dev_t *res_ctx_dev(CUcontext ctx)
{
    CUcontext cur = NULL, popped;
    if (!ctx || DRV(cuCtxGetCurrent)(&cur) != CUDA_SUCCESS)
        return NULL;
    if (ctx == cur)
        return memo_dev(ctx);
    if (DRV(cuCtxPushCurrent_v2)(ctx) != CUDA_SUCCESS)
        return NULL;
    res_dev_t *d = ctx_dev(ctx);
    DRV(cuCtxPopCurrent_v2)(&popped);
    return d;
}

res_dev_t *res_dev_of(int device)
{
    if (device < 0 || device >= MAX_DEVICES)
        return NULL;
    if (res_dev_ready(&res_devs[device]))
        return &res_devs[device];
    res_dev_t *d = res_current_dev(NULL);
    return d && d->device == device ? d : NULL;
}

res_dev_t *res_owner(CUdeviceptr p)
{
    for (int i = 0; i < MAX_DEVICES; i++) {
        res_dev_t *d = &res_devs[i];
        if (res_dev_ready(d) && p >= d->base && p < d->base + d->size)
            return d;
    }
    return NULL;
}

/* ---------------------------------------------------------------- allocation */

/* Every budget together (the NVMe tier's too): what cuMemGetInfo reports as the total. */
static uint64_t capacity(const res_dev_t *d)
{
    return d->gpu_budget + atomic_load(&res_host.budget) + res_nvme_capacity(d);
}

/* Bytes of the capacity in use: arena chunks and the application's own device memory. */
static uint64_t held(const res_dev_t *d, const arena_stats_t *st)
{
    return st->chunk_bytes + d->app_used + d->pool_used;
}

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
    uint64_t cap = capacity(d);
    uint64_t used = held(d, &st) - (uint64_t)st.cached_chunks * d->chunk;
    return bytes > cap || round_up(bytes, d->chunk) > (cap > used ? cap - used : 0);
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

/*
 * The host waits for every stream-ordered free pending on d now, with d's lock dropped
 * meanwhile (d locked on entry and on return, no other lock held, outside arena calls), then
 * the frees that are done go back to the arena.  The events are held by reference while the
 * lock is dropped, since another thread may take their frees back meanwhile.  Returns how
 * many frees went back.
 */
static unsigned deferred_wait_unlocked(res_dev_t *d)
{
    size_t n = 0, i = 0;
    if (d->arena_busy)
        return 0;
    for (const deferred_t *f = d->deferred; f; f = f->next)
        n++;
    use_event_t **ev = n ? malloc(n * sizeof(*ev)) : NULL;
    if (!ev)
        return res_deferred_drain(d, 1);    /* (no room to list them: waits under the lock) */
    for (const deferred_t *f = d->deferred; f; f = f->next)
        ev[i++] = res_event_ref(f->ev);
    res_events_wait_unlocked(d, ev, n, &d->blocked_free_s);
    for (i = 0; i < n; i++)
        res_event_put(d, ev[i]);
    free(ev);
    return res_deferred_drain(d, 0);
}

/* Allocate from d's arena (d locked, no other lock held): frees that completed go back
 * first, budgets that came down may go back up when a large request is beyond them, the
 * plan's moves due before the next operation are issued (they make the room the plan gave
 * this allocation; a request then refused beyond capacity has only issued them early), a
 * large request's room is made before the arena is entered (res_make_room_for: made before
 * the plan's moves, the reactive engine would evict the chunks those moves evict and leave
 * them nothing to do), and when the request does not fit, the host waits for the frees still
 * pending (without the lock: deferred_wait_unlocked) and tries again. */
static int alloc_locked(res_dev_t *d, size_t bytes, arena_info_t *info)
{
    if (d->deferred)
        res_deferred_drain(d, 0);
    if (res_budgets_down(d) && beyond_capacity(d, bytes))
        res_budgets_regrow(d);
    if (d->plan)
        res_plan_due(d);
    if (!arena_small_class(d->arena, bytes) && !beyond_capacity(d, bytes))
        res_make_room_for(d, (uint32_t)(round_up(bytes, d->chunk) / d->chunk));
    int err = beyond_capacity(d, bytes) ? -ENOMEM : arena_do_alloc(d, bytes, info);
    if (err && d->deferred && deferred_wait_unlocked(d) > 0)
        err = beyond_capacity(d, bytes) ? -ENOMEM : arena_do_alloc(d, bytes, info);
    return err;
}

/* An allocation of `bytes` from d's arena into *dptr, made in context ctx and, when it is
 * stream-ordered, standing for one from pool `pool` (NULL otherwise); its result in *r. */
static void alloc_on(res_dev_t *d, CUdeviceptr *dptr, size_t bytes, CUcontext ctx,
                     CUmemoryPool pool, CUresult *r)
{
    arena_info_t info;
    if (!dptr || bytes == 0) {
        *r = CUDA_ERROR_INVALID_VALUE;
        return;
    }
    int site = SHIM_TRACING();
    if (site)
        shim_trace_site_begin();            /* before any lock: it may take the GIL */
    shim_lock(&d->lock);
    relax_t rx = relax_begin();
    int err = alloc_locked(d, bytes, &info);
    if (!err)
        stamp_span(d, &info);
    if (!err && (ctx != d->ctx || pool))
        res_tag_origin(d, info.base, ctx != d->ctx ? ctx : NULL, pool);
    if (!err && SHIM_TRACING())
        shim_trace_alloc(d->device, info.base, bytes);
    relax_end(rx);
    shim_unlock(&d->lock);
    if (site)
        shim_trace_site_end();
    *r = err ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
    if (!err)
        *dptr = (CUdeviceptr)info.base;
}

int res_alloc(CUdeviceptr *dptr, size_t bytes, CUresult *r)
{
    CUcontext ctx = NULL;
    res_dev_t *d = res_current_dev(&ctx);
    if (!d)
        return 0;
    alloc_on(d, dptr, bytes, ctx, NULL, r);
    return 1;
}

/*
 * cuMemAllocAsync: "the allocation comes from the memory pool current to the stream's device"
 * (cuda.h), which need not be the current context's.  While that pool is the device's default
 * one, the arena of the stream's device serves the allocation (set up if the device has none
 * yet), tagged with the pool and the stream's context for the pointer queries.  A pool the
 * application made current (cuDeviceSetMemPool) is its own, with its own properties and
 * counts: 0, with the pool in *own, and the driver serves it from there.  0 with *own NULL
 * when the shim cannot serve the stream's device.
 */
int res_alloc_async(CUdeviceptr *dptr, size_t bytes, CUstream s, CUmemoryPool *own,
                    CUresult *r)
{
    CUcontext ctx = res_stream_ctx(s);
    res_dev_t *d = ctx ? res_ctx_dev(ctx) : NULL;
    CUmemoryPool pool = NULL;
    *own = NULL;
    if (!d)
        return 0;
    if (DRV(cuDeviceGetMemPool)(&pool, d->device) != CUDA_SUCCESS)
        pool = NULL;                        /* (no pools: the arena serves it all the same) */
    else if (pool != d->default_pool) {
        *own = pool;
        return 0;
    }
    alloc_on(d, dptr, bytes, ctx, pool, r);
    return 1;
}

/* The pending free of the allocation at base, or NULL. */
static deferred_t *deferred_find(const res_dev_t *d, uint64_t base)
{
    for (deferred_t *f = d->deferred; f; f = f->next)
        if (f->base == base)
            return f;
    return NULL;
}

/* Is dptr the base of a live allocation of d that no free is pending for? */
static int live_base(const res_dev_t *d, CUdeviceptr dptr, arena_info_t *info)
{
    return arena_lookup(d->arena, dptr, info) == 0 && info->base == dptr &&
           !deferred_find(d, dptr);
}

/* Free the allocation at dptr now (d locked, no other lock held): like the driver's
 * cuMemFree, the host first waits for work that may still use it, since a sub-chunk range may
 * be handed out again at once.  It waits once without d's lock (res_idle_unlocked), looking
 * at the allocation again when something changed meanwhile, and so for the stream memory
 * operations that hold its chunks (whose waits another thread may release only by a call
 * that takes the lock); what is left to wait for after that (uses made meanwhile, as in a
 * slab chunk that other allocations share, and other devices' holds) it waits for under the
 * lock.  0 or -EINVAL. */
static int free_now(res_dev_t *d, CUdeviceptr dptr)
{
    arena_info_t info;
    int waited = 0, held = 0;
again:
    if (!live_base(d, dptr, &info))
        return -EINVAL;
    if (!held && d->foreign_holds &&
        res_memop_wait_unlocked(d, info.first_chunk, info.nchunks, &d->blocked_free_s)) {
        held = 1;
        goto again;
    }
    for (uint32_t i = 0; i < info.nchunks && !waited; i++)
        if (res_idle_unlocked(d, info.first_chunk + i, &d->blocked_free_s) < 0) {
            waited = 1;
            goto again;
        }
    for (uint32_t i = 0; i < info.nchunks; i++)
        res_wait_idle(d, &d->chunks[info.first_chunk + i], &d->blocked_free_s);
    if (SHIM_TRACING())
        shim_trace_free(dptr);
    return arena_do_free(d, dptr, &info);
}

/* The arena owning dptr, when the shim serves a stream-ordered free of it: with no context
 * current the driver's answer is the one. */
static res_dev_t *free_owner(CUdeviceptr dptr)
{
    CUcontext cur = NULL;
    res_dev_t *d = res_owner(dptr);
    return d && DRV(cuCtxGetCurrent)(&cur) == CUDA_SUCCESS && cur ? d : NULL;
}

/* A free needs no current context: the allocation names its own, and the real driver frees
 * with none current too.  Then the arena's context is pushed for the waits and unmapping. */
int res_free(CUdeviceptr dptr, CUresult *r)
{
    CUcontext cur = NULL, popped;
    res_dev_t *d = res_owner(dptr);
    if (!d)
        return 0;
    CUcontext home = res_dev_ctx(d);
    int pushed = DRV(cuCtxGetCurrent)(&cur) == CUDA_SUCCESS && !cur && home &&
                 DRV(cuCtxPushCurrent_v2)(home) == CUDA_SUCCESS;
    shim_lock(&d->lock);
    relax_t rx = relax_begin();
    if (d->deferred)
        res_deferred_drain(d, 0);
    int err = free_now(d, dptr);
    relax_end(rx);
    shim_unlock(&d->lock);
    if (pushed)
        DRV(cuCtxPopCurrent_v2)(&popped);
    *r = err ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    return 1;
}

/* ---------------------------------------------------------------- context destruction */

/*
 * Destroying a context frees "memory allocations by cuMemAlloc(), cuMemAllocHost(), ... and
 * cuMemAllocPitch()" made in it, but not cuMemAllocAsync's, which "are not associated with
 * any CUDA context" (cuda.h, cuCtxDestroy); a primary context reset "destroys all
 * allocations" the same way.  Every context of a device allocates from the device's one
 * arena, whose memory (cuMemCreate) no context takes with it, so the arena frees them itself:
 * each live allocation made in ctx (its tag's context, else the arena's) that stands for no
 * pool's and has no free pending, as cuMemFree would (free_now: the host waits for its uses,
 * each recorded on a stream that still exists).  Afterwards it is unknown to the pointer
 * queries, counted neither against the budgets nor in the statistics, and a free of it
 * fails, as under the driver.
 */
unsigned res_free_ctx(res_dev_t *d, CUcontext ctx)
{
    arena_info_t info;
    unsigned n = 0;
    if (!ctx || d->arena_busy)
        return 0;
    /* (free_now may drop d's lock: the walk goes on from the next address, not from a
     * position in the arena) */
    for (uint64_t at = d->base; arena_next(d->arena, at, &info) == 0; at = info.base + 1) {
        const alloc_tag_t *t = res_tag_of(d, info.base);
        if ((t && t->ctx ? t->ctx : d->ctx) != ctx || (t && t->pool) ||
            deferred_find(d, info.base))
            continue;
        if (free_now(d, info.base) == 0) {
            shim_stat_free(info.size);  /* (what block_size counted at its allocation) */
            n++;
        }
    }
    if (n)
        SHIM_INFO(RES, "device %d: %u allocations freed with the context they were made in",
                  d->device, n);
    return n;
}

/* ---------------------------------------------------------------- stream-ordered frees */

/*
 * cuMemFreeAsync of arena memory (d locked): the allocation goes back once an event recorded
 * now on stream s completes, which stream order puts after the work enqueued on s so far;
 * until then its range is not handed out again.  A free captured into a graph happens only
 * when (and each time) the graph runs, so the allocation is kept for the life of the process:
 * the graph may run its earlier nodes on it any number of times (graph memory keeps fixed
 * addresses), and the shim does not see graphs destroyed.  0 or -EINVAL.
 */
static int free_async(res_dev_t *d, CUdeviceptr dptr, CUstream s, int ptds)
{
    arena_info_t info;
    if (!live_base(d, dptr, &info))
        return -EINVAL;
    if (res_stream_capturing(s, ptds)) {
        d->frees_captured++;
        if (SHIM_TRACING())
            shim_trace_free(dptr);
        SHIM_INFO(RES, "device %d: 0x%llx freed in a stream capture stays allocated", d->device,
                  (unsigned long long)dptr);
        return 0;
    }
    deferred_t *f = malloc(sizeof(*f));
    use_event_t *e = f ? res_record(d, s, ptds, res_stream_ctx(s)) : NULL;
    if (!e) {
        free(f);
        return free_now(d, dptr);       /* no event: the host waits instead */
    }
    if (SHIM_TRACING())
        shim_trace_free(dptr);          /* what the application sees: freed now */
    int own = s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD;
    *f = (deferred_t){ .base = dptr, .s = own ? s : NULL, .ev = e };
    if (!d->deferred)
        d->deferred_end = &d->deferred;
    *d->deferred_end = f;
    d->deferred_end = &f->next;
    d->frees_deferred++;
    return 0;
}

int res_free_async(CUdeviceptr dptr, CUstream s, int ptds, CUresult *r)
{
    res_dev_t *d = free_owner(dptr);
    if (!d)
        return 0;
    shim_lock(&d->lock);
    relax_t rx = relax_begin();
    int err = free_async(d, dptr, s, ptds);
    relax_end(rx);
    shim_unlock(&d->lock);
    *r = err ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    return 1;
}

/* Is stream s among the n streams known to have a free pending (blocked)? */
static int blocked(CUstream const *streams, unsigned n, CUstream s)
{
    for (unsigned i = 0; s && i < n; i++)
        if (streams[i] == s)
            return 1;
    return 0;
}

/* The frees are in the order they were made, and the events of one stream complete in that
 * order: once one is found pending, the later ones of its stream are not asked about. */
unsigned res_deferred_drain(res_dev_t *d, int wait)
{
    CUstream pending[8];
    unsigned n = 0, npending = 0;
    if (d->arena_busy)
        return 0;
    for (deferred_t **p = &d->deferred; *p;) {
        deferred_t *f = *p;
        if (wait) {
            res_event_wait(f->ev, &d->blocked_free_s);
        } else if (blocked(pending, npending, f->s) || !res_event_done(f->ev)) {
            if (f->s && npending < SHIM_ARRAY_LEN(pending) && !blocked(pending, npending, f->s))
                pending[npending++] = f->s;
            p = &f->next;
            continue;
        }
        *p = f->next;
        if (d->deferred_end == &f->next)
            d->deferred_end = p;
        d->freed_in_order = 1;
        arena_do_free(d, f->base, NULL);
        d->freed_in_order = 0;
        res_event_put(d, f->ev);
        free(f);
        n++;
    }
    return n;
}

/* ---------------------------------------------------------------- queries */

int res_owns(CUdeviceptr p)
{
    return res_owner(p) != NULL;
}

int res_meminfo(size_t *free_b, size_t *total, CUresult *r)
{
    if (shim_opt_int(SHIM_OPT_MEMINFO) == SHIM_MEMINFO_PHYSICAL)
        return 0;
    res_dev_t *d = res_current_dev(NULL);
    arena_stats_t st;
    if (!d)
        return 0;
    shim_lock(&d->lock);
    relax_t rx = relax_begin();
    if (d->deferred)
        res_deferred_drain(d, 0);       /* frees that completed count as free */
    if (d->npools)
        res_pools_sync(d);
    relax_end(rx);
    arena_stats(d->arena, &st);
    /* Empty slab chunks kept for the next small allocations are free memory: a request for
     * them is served (beyond_capacity), and the driver counts freed memory free at once. */
    uint64_t cap = capacity(d), used = held(d, &st) - (uint64_t)st.cached_chunks * d->chunk;
    shim_unlock(&d->lock);
    if (total)                          /* either may be NULL, as the driver allows */
        *total = cap;
    if (free_b)
        *free_b = used < cap ? cap - used : 0;
    *r = CUDA_SUCCESS;
    return 1;
}

/* Does p lie in an allocation of d's arena?  Its base and size into *info when it does, and
 * when tag is not NULL what the shim knows of it into *tag: its context, its pool, and its
 * buffer ID when `id` (else 0). */
static int allocated(res_dev_t *d, CUdeviceptr p, arena_info_t *info, alloc_tag_t *tag, int id)
{
    shim_lock(&d->lock);
    int found = arena_lookup(d->arena, p, info) == 0;
    if (found && tag) {
        const alloc_tag_t *t = res_tag_of(d, info->base);
        tag->ctx = t && t->ctx ? t->ctx : d->ctx;
        tag->pool = t ? t->pool : NULL;
        tag->id = id ? res_buffer_id(d, info->base) : 0;
    }
    shim_unlock(&d->lock);
    return found;
}

int res_allocated(CUdeviceptr p)
{
    res_dev_t *d = res_owner(p);
    arena_info_t info;
    return d && allocated(d, p, &info, NULL, 0);
}

int res_address_range(CUdeviceptr *base, size_t *size, CUdeviceptr p, CUresult *r)
{
    res_dev_t *d = res_owner(p);
    arena_info_t info;
    if (!d)
        return 0;
    int found = allocated(d, p, &info, NULL, 0);
    *r = found ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
    if (found && base)
        *base = info.base;
    if (found && size)
        *size = info.size;
    return 1;
}

/* Is a context current in the calling thread? */
static int has_context(void)
{
    CUcontext cur = NULL;
    return DRV(cuCtxGetCurrent)(&cur) == CUDA_SUCCESS && cur;
}

/* Without host mapping, the chunk holding p is mapped again if it was evicted. */
static void map_back(res_dev_t *d, CUdeviceptr p)
{
    shim_lock(&d->lock);
    relax_t rx = relax_begin();
    res_map_back(d, arena_chunk_of(d->arena, p));
    relax_end(rx);
    shim_unlock(&d->lock);
}

/*
 * Pointer attributes of arena memory: device memory of the arena's device.  When *r is an
 * error, *data holds the value cuPointerGetAttributes lists for the attribute.  An address in
 * no allocation (freed, or never handed out) is the application's to see as the driver sees
 * an address it never handed out: CUDA_ERROR_INVALID_VALUE whatever the attribute, *data
 * untouched.  The driver is not asked, since what it knows there is the arena's reservation
 * and the chunks the shim keeps mapped in it.
 */
int res_pointer_attribute(void *data, CUpointer_attribute a, CUdeviceptr p, CUresult *r)
{
    res_dev_t *d = res_owner(p);
    arena_info_t info;
    alloc_tag_t tag;
    if (!d)
        return 0;
    if (!allocated(d, p, &info, &tag, a == CU_POINTER_ATTRIBUTE_BUFFER_ID)) {
        *r = CUDA_ERROR_INVALID_VALUE;
        return 1;
    }
    *r = CUDA_SUCCESS;
    switch (a) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: *(CUcontext *)data = tag.ctx; break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *(unsigned *)data = CU_MEMORYTYPE_DEVICE; break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        /* Device memory has no host pointer, wherever its chunk lies at the moment. */
        *(void **)data = NULL;
        *r = CUDA_ERROR_INVALID_VALUE;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data = d->device; break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(int *)data = 0; break;
    case CU_POINTER_ATTRIBUTE_MAPPED: *(int *)data = 1; break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(CUdeviceptr *)data = info.base; break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data = info.size; break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID: *(unsigned long long *)data = tag.id; break;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: *(CUmemoryPool *)data = tag.pool; break;
    /* Arena memory is VMM memory, which legacy IPC does not take (see res_ipc_pin). */
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE: *(int *)data = 0; break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        /* The address kernels of the current context use; without one current, the driver's
         * answer (cuda.h: CUDA_ERROR_INVALID_CONTEXT), which is the same for the arena. */
        if (has_context()) {
            *(CUdeviceptr *)data = p;
            break;
        }
        /* fall through */
    default:
        /* The driver answers the rest, for the arena's mapping: it must exist. */
        if (!d->host_mappable || d->nunmapped || d->nvme_on)
            map_back(d, p);
        return 0;
    }
    return 1;
}

/* ---------------------------------------------------------------- IPC */

/*
 * cuIpcGetMemHandle on arena memory.  Legacy IPC exports cuMemAlloc memory only; arena memory
 * is VMM memory (cuMemCreate + cuMemMap), for which the driver's answer is an error
 * (CUDA_ERROR_INVALID_VALUE), where without the shim the same call on cuMemAlloc memory
 * would succeed.  No sound way around it exists: the handle is the driver's to define and
 * the process that opens it need not run the shim.  The allocation is pinned resident
 * before the driver is asked (another process could map it as soon as a handle exists) and
 * stays pinned whatever the answer; the wrapper passes the driver's answer on
 * (res_ipc_failed).  Returns 1 for arena memory, else 0.
 */
int res_ipc_pin(CUdeviceptr p)
{
    res_dev_t *d = res_owner(p);
    arena_info_t info;
    if (!d)
        return 0;
    shim_lock(&d->lock);
    relax_t rx = relax_begin();
    if (arena_lookup(d->arena, p, &info) == 0)
        for (uint32_t i = 0; i < info.nchunks; i++)
            res_pin(d, info.first_chunk + i);
    relax_end(rx);
    shim_unlock(&d->lock);
    return 1;
}

void res_ipc_failed(CUdeviceptr p, CUresult r)
{
    static _Atomic int warned;
    if (atomic_exchange(&warned, 1))
        return;
    SHIM_WARN(RES, "cuIpcGetMemHandle(0x%llx) failed (CUresult %d): memory allocated under "
              "the shim is virtual-memory-managed, which legacy CUDA IPC does not export; "
              "run with ELIXIR_DISABLE=1 to share cuMemAlloc memory through CUDA IPC",
              (unsigned long long)p, (int)r);
}

/* ---------------------------------------------------------------- devices */

res_dev_t *res_active_dev_slow(CUcontext ctx)
{
    for (int i = 0; i < MAX_DEVICES; i++)
        if (res_dev_ready(&res_devs[i]))
            return memo_dev(ctx);
    return NULL;
}

/* In a forked child the driver is unusable if the parent had initialised it, as it had for
 * every arena set up: those are forgotten and serve nothing.  A device never set up stays
 * so: a child forked before cuInit may initialise CUDA and use it, and is served like any
 * process (where the parent had initialised CUDA, the driver refuses the set-up's calls). */
void res_after_fork(void)
{
    for (int i = 0; i < MAX_DEVICES; i++)
        if (res_devs[i].ready != 0)
            res_devs[i].ready = -1;
}
