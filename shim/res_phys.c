/* SPDX-License-Identifier: MIT */
/*
 * res_phys.c - physical memory of the residency tiers: chunk-sized VMM allocations (or, where
 * host memory cannot be mapped through VMM, pieces of pinned host memory) made, charged to
 * the budgets and given back; the spare chunks kept per tier for the next migration, and the
 * swap piece; budgets that come down when the driver refuses memory within them and go back
 * up when it is there again.  Which chunk lives in which memory, and moving it, is
 * res_move.c's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "res_int.h"
#include "res_nvme.h"

static void charge(res_dev_t *d, int tier, int64_t bytes)
{
    if (tier == TIER_GPU) {
        d->gpu_used += bytes;
        if (d->gpu_used > d->gpu_peak)
            d->gpu_peak = d->gpu_used;
    } else if (tier == TIER_HOST) {
        atomic_fetch_add(&res_host.used, (uint64_t)bytes);     /* (wraps down for bytes < 0) */
        d->host_used += bytes;
        if (d->host_used > d->host_peak)
            d->host_peak = d->host_used;
    }
}

uint64_t res_gpu_charged(const res_dev_t *d)
{
    return d->gpu_used + d->app_used + d->pool_used;
}

/* A chunk-sized piece of pinned host memory, allocated in the arena's context (a context the
 * application destroys would take its pinned memory with it), usable from every context. */
CUresult res_piece_alloc(res_dev_t *d, CUmemGenericAllocationHandle *h)
{
    CUcontext popped;
    void *p = NULL;
    int pushed = DRV(cuCtxPushCurrent_v2)(d->ctx) == CUDA_SUCCESS;
    CUresult r = DRV(cuMemHostAlloc)(&p, d->chunk, CU_MEMHOSTALLOC_PORTABLE);
    if (pushed)
        DRV(cuCtxPopCurrent_v2)(&popped);
    *h = (CUmemGenericAllocationHandle)(uintptr_t)p;
    return r;
}

/* New physical memory of a tier: a VMM allocation, or a piece of pinned host memory where
 * host memory cannot be mapped through VMM. */
static CUresult phys_create(res_dev_t *d, int tier, CUmemGenericAllocationHandle *h)
{
    if (tier == TIER_HOST && !d->host_mappable)
        return res_piece_alloc(d, h);
    CUmemAllocationProp p = res_prop_for(d, tier);
    return DRVT(cuMemCreate)(h, d->chunk, &p, 0);
}

CUresult res_map_at(res_dev_t *d, CUdeviceptr va, CUmemGenericAllocationHandle h)
{
    CUresult r = DRVT(cuMemMap)(va, d->chunk, 0, h, 0);
    if (r == CUDA_SUCCESS && (r = res_set_access(d, va, d->chunk)) != CUDA_SUCCESS)
        DRVT(cuMemUnmap)(va, d->chunk);
    return r;
}

static void phys_release(res_dev_t *d, int tier, CUmemGenericAllocationHandle h)
{
    CUcontext popped;
    if (tier == TIER_HOST && !d->host_mappable) {
        int pushed = DRV(cuCtxPushCurrent_v2)(d->ctx) == CUDA_SUCCESS;
        DRV(cuMemFreeHost)(res_piece(h));
        if (pushed)
            DRV(cuCtxPopCurrent_v2)(&popped);
    } else {
        res_shadow_drop(d, h);
        DRVT(cuMemRelease)(h);
    }
    charge(d, tier, -(int64_t)d->chunk);
}

/*
 * A budget that came down (budget_shrink) goes back up when the memory is there again.  When
 * a budget has no room for a chunk, at most every REGROW_MS milliseconds, the shim looks:
 * - GPU: the device's free memory (cuMemGetInfo).  The budget rises to what the shim holds
 *   plus that memory (for the automatic budget, less the reserve, by the default's rule over
 *   the two together), never above the budget it was set up with.
 * - Host: it pins one chunk beyond the budget.  If the system gives it, the budget is back to
 *   the one set up (a later refusal brings it down again), and the chunk is kept as a spare.
 * A look costs one driver call; memory that comes back is used within REGROW_MS of the next
 * shortage.
 */
#define REGROW_MS 100

/* The GPU budget's look at free memory, when one is due (memory short, d locked). */
void res_gpu_regrow(res_dev_t *d)
{
    size_t free_b = 0, total = 0;
    CUcontext popped;
    if (d->gpu_budget >= d->gpu_budget_set || !d->ctx)
        return;                         /* (no context: the device's memory cannot be asked) */
    double now = res_now_s();
    if (now < d->regrow_at)
        return;
    d->regrow_at = now + REGROW_MS / 1e3;
    int pushed = DRV(cuCtxPushCurrent_v2)(d->ctx) == CUDA_SUCCESS;
    CUresult r = DRV(cuMemGetInfo_v2)(&free_b, &total);
    if (pushed)
        DRV(cuCtxPopCurrent_v2)(&popped);
    if (r != CUDA_SUCCESS)
        return;
    /* The default's rule over what the shim could hold (its own and the free memory), so that
     * a later look with nothing changed finds the same budget, not half of what is left. */
    uint64_t could = res_gpu_charged(d) + free_b;
    uint64_t to = (d->gpu_budget_auto ? res_gpu_headroom(could, total) : could) / d->chunk *
                  d->chunk;
    to = to < d->gpu_budget_set ? to : d->gpu_budget_set;
    if (to <= d->gpu_budget)
        return;
    SHIM_INFO(RES, "device %d: GPU memory is free again; the budget is back up to %llu MiB "
              "(set up with %llu MiB)", d->device, (unsigned long long)(to >> 20),
              (unsigned long long)(d->gpu_budget_set >> 20));
    d->gpu_budget = to;
    if (SHIM_TRACING())
        shim_trace_budget(d->device, d->gpu_budget, atomic_load(&res_host.budget));
}

/* The host budget's try at pinning beyond it, when one is due (no room, d locked): 1 when
 * the budget is back up, with the chunk pinned as a spare, else 0. */
static int host_regrow(res_dev_t *d)
{
    uint64_t set = atomic_load(&res_host.budget_set), now = atomic_load(&res_host.budget);
    CUmemGenericAllocationHandle h;
    if (now >= set)
        return 0;
    uint64_t ms = (uint64_t)(res_now_s() * 1e3), at = atomic_load(&res_host.regrow_at_ms);
    if (ms < at || !atomic_compare_exchange_strong(&res_host.regrow_at_ms, &at, ms + REGROW_MS))
        return 0;               /* (not due, or another device claimed this look) */
    if (phys_create(d, TIER_HOST, &h) != CUDA_SUCCESS)
        return 0;
    charge(d, TIER_HOST, (int64_t)d->chunk);
    while (now < set && !atomic_compare_exchange_weak(&res_host.budget, &now, set))
        ;
    SHIM_INFO(RES, "device %d: the system pins host memory again; the host budget is back up "
              "to %llu MiB", d->device, (unsigned long long)(set >> 20));
    if (SHIM_TRACING())
        shim_trace_budget(d->device, d->gpu_budget, set);
    res_phys_put(d, TIER_HOST, h);
    return 1;
}

void res_budgets_regrow(res_dev_t *d)
{
    res_gpu_regrow(d);
    host_regrow(d);
}

/*
 * The driver refused a chunk of `tier` that its budget allowed.  GPU: memory outside the
 * budget (the driver's own, libraries', other processes') took the rest of the device.  Host:
 * the system has no more memory to pin.  The budget comes down to what is charged to it now
 * (the host budget, the process's, to what every device holds), so that the next chunk
 * evicts another first (GPU) or does not fit (host), and cuMemGetInfo no longer counts what
 * cannot be had; the first time for each budget, the log says so.
 */
static void budget_shrink(res_dev_t *d, int tier)
{
    int gpu = tier == TIER_GPU;
    uint64_t before = gpu ? d->gpu_budget : atomic_load(&res_host.budget);
    uint64_t now = (gpu ? res_gpu_charged(d) : atomic_load(&res_host.used)) / d->chunk * d->chunk;
    if (now >= before)
        return;
    if (gpu ? !d->gpu_shrunk : !atomic_exchange(&res_host.shrunk, 1))
        SHIM_WARN(RES, "device %d: the driver has no %s memory left within the %llu MiB "
                  "%sbudget (%s); the budget is now %llu MiB", d->device,
                  gpu ? "GPU" : "page-locked host", (unsigned long long)(before >> 20),
                  gpu ? "" : "host ",
                  gpu ? "memory outside it is in use" : "the system has no more to pin",
                  (unsigned long long)(now >> 20));
    if (gpu) {
        d->gpu_shrunk = 1;
        d->gpu_budget = now;
        d->regrow_at = res_now_s() + REGROW_MS / 1e3;
    } else {
        atomic_store(&res_host.regrow_at_ms, (uint64_t)(res_now_s() * 1e3) + REGROW_MS);
        while (now < before && !atomic_compare_exchange_weak(&res_host.budget, &before, now))
            ;
    }
    if (SHIM_TRACING())
        shim_trace_budget(d->device, d->gpu_budget, atomic_load(&res_host.budget));
}

CUresult res_phys_get(res_dev_t *d, int tier, CUmemGenericAllocationHandle *h)
{
    int t = tier == TIER_GPU ? 0 : 1;
    if (d->nspare[t]) {
        *h = d->spare[t][--d->nspare[t]];
        return CUDA_SUCCESS;
    }
    CUresult r = phys_create(d, tier, h);
    if (r == CUDA_SUCCESS)
        charge(d, tier, (int64_t)d->chunk);
    else if (r == CUDA_ERROR_OUT_OF_MEMORY)
        budget_shrink(d, tier);
    return r;
}

/*
 * Physical chunks of a tier: unmapped ones are kept (they stay charged to the tier's budget)
 * so that a migration usually reuses memory rather than creating and releasing it, which
 * costs the driver far more than the copy: up to SPARES of the GPU's, and HOST_SPARES of host
 * memory, as many as a plan's iteration gives back and takes again (host memory that another
 * device wants goes back at once).
 */
int res_has_room(res_dev_t *d, int tier)
{
    /* A spare is room only within the budget: chunks pinned beyond it leave spares when they
     * go, which must not keep the device over budget for good. */
    if (tier == TIER_GPU)
        return (d->nspare[0] && res_gpu_charged(d) <= d->gpu_budget) ||
               res_gpu_charged(d) + d->chunk <= d->gpu_budget;
    if (d->nspare[1])
        return 1;
    /* The host budget is shared: without room, the other devices are asked to give back the
     * host memory they free (res_phys_put), until this one finds room again. */
    int room = atomic_load(&res_host.used) + d->chunk <= atomic_load(&res_host.budget) ||
               host_regrow(d) || (d->nvme_on && res_nvme_room(d));
    unsigned me = 1u << d->device;
    unsigned wanted = atomic_load_explicit(&res_host.wanted, memory_order_relaxed);
    if (!room && !(wanted & me))
        atomic_fetch_or(&res_host.wanted, me);
    else if (room && (wanted & me))
        atomic_fetch_and(&res_host.wanted, ~me);
    return room;
}

/*
 * The swap piece (devices without host mapping): one pinned host piece outside the host
 * budget, so that a chunk that must come back while both budgets are full can trade places
 * with a victim: the victim goes out into the swap piece, and the piece the incoming chunk
 * leaves becomes the swap piece (res_phys_put).  The number of charged pieces equals the
 * chunks on the host plus the spares throughout, so the budgets hold.  It is made at the first
 * eviction, before the first piece the budget counts, so that it is there when the system
 * pins no more (budget_shrink) and the budgets are full.
 */
int res_swap_take(res_dev_t *d, CUmemGenericAllocationHandle *h)
{
    if (!d->swap && !d->swap_owed && res_piece_alloc(d, &d->swap) != CUDA_SUCCESS)
        return -ENOMEM;
    if (!d->swap)
        return -ENOMEM;
    *h = d->swap;
    d->swap = 0;
    d->swap_owed = 1;
    return 0;
}

/* Give the spare chunks of a tier back to the driver (their budget becomes free). */
void res_spares_release(res_dev_t *d, int tier)
{
    int t = tier == TIER_GPU ? 0 : 1;
    while (d->nspare[t])
        phys_release(d, tier, d->spare[t][--d->nspare[t]]);
}

/* (The swap piece carries no charge of its own: see res_swap_take.) */
void res_pieces_drop(res_dev_t *d)
{
    CUcontext popped;
    if (d->host_mappable)
        return;
    res_spares_release(d, TIER_HOST);
    if (d->swap) {
        int pushed = DRV(cuCtxPushCurrent_v2)(d->ctx) == CUDA_SUCCESS;
        DRV(cuMemFreeHost)(res_piece(d->swap));
        if (pushed)
            DRV(cuCtxPopCurrent_v2)(&popped);
        d->swap = 0;
    }
}

/*
 * (d locked, nothing in flight on old's streams.)  Pinned memory is freed with the context it
 * was allocated in, but a host piece is plain host memory to the CPU: its contents are copied
 * with memcpy into a piece of d's new context, and the old piece freed in old.  While d has no
 * context (none of the device was found alive: home_lost), nothing can be pinned, and the
 * chunks the arena still holds (stream-ordered allocations, which belong to no context,
 * other contexts' allocations, empty slab chunks kept for reuse) would be lost with old: their
 * contents go into stray pieces, plain host memory, keeping the chunk's host charge, until a
 * context is adopted (res_home) and they move into its pinned memory.  No migration touches a
 * stray piece meanwhile, since none is made without a context; one that stays stray after
 * that (no pinned memory) is copied in from pageable memory, and freed with free().
 */
uint32_t res_pieces_rehome(res_dev_t *d, CUcontext old)
{
    CUcontext popped;
    uint32_t left = 0;
    for (uint32_t ci = 0, n = arena_chunk_count(d->arena); ci < n && !d->host_mappable; ci++) {
        chunk_t *c = &d->chunks[ci];
        CUmemGenericAllocationHandle h = 0;
        if (c->tier != TIER_HOST || (c->stray ? !d->ctx : !old))
            continue;                   /* (where it is already, or nowhere better to go) */
        if (d->ctx ? res_piece_alloc(d, &h) != CUDA_SUCCESS
                   : !(h = (CUmemGenericAllocationHandle)(uintptr_t)malloc(d->chunk))) {
            left += !c->stray;
            continue;
        }
        memcpy(res_piece(h), res_piece(c->phys), d->chunk);
        if (c->stray) {
            free(res_piece(c->phys));
        } else {
            int pushed = DRV(cuCtxPushCurrent_v2)(old) == CUDA_SUCCESS;
            DRV(cuMemFreeHost)(res_piece(c->phys));
            if (pushed)
                DRV(cuCtxPopCurrent_v2)(&popped);
        }
        c->phys = h;
        c->stray = !d->ctx;
    }
    return left;
}

/* Chunk c's memory goes back: a stray piece to the C library, with its charge; anything else
 * as the memory of its tier does (res_phys_put). */
void res_chunk_phys_put(res_dev_t *d, const chunk_t *c)
{
    if (!c->stray) {
        res_phys_put(d, c->tier, c->phys);
        return;
    }
    free(res_piece(c->phys));
    charge(d, TIER_HOST, -(int64_t)d->chunk);
}

void res_phys_put(res_dev_t *d, int tier, CUmemGenericAllocationHandle h)
{
    int t = tier == TIER_GPU ? 0 : 1;
    if (tier == TIER_HOST && d->swap_owed) {
        d->swap = h;                    /* keeps its charge: the victim's piece has none */
        d->swap_owed = 0;
        return;
    }
    int others = (atomic_load(&res_host.wanted) & ~(1u << d->device)) != 0;
    if (d->nspare[t] < (t ? HOST_SPARES : SPARES) &&
        (tier == TIER_GPU ? res_gpu_charged(d) <= d->gpu_budget : !others)) {
        d->spare[t][d->nspare[t]++] = h;
        return;
    }
    /* (GPU memory above the budget goes back at once; host memory another device wants, with
     * the spares) */
    phys_release(d, tier, h);
    if (tier == TIER_HOST && others)
        res_spares_release(d, TIER_HOST);
}

/* Physical memory of `tier` mapped and accessible at va. */
CUresult res_map_new(res_dev_t *d, int tier, CUdeviceptr va, CUmemGenericAllocationHandle *h)
{
    CUresult r = res_phys_get(d, tier, h);
    if (r != CUDA_SUCCESS)
        return r;
    r = res_map_at(d, va, *h);
    if (r != CUDA_SUCCESS)
        res_phys_put(d, tier, *h);
    return r;
}
