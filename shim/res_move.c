/* SPDX-License-Identifier: MIT */
/*
 * res_move.c - physical memory of the residency tiers, migrations and eviction.
 *
 * Each chunk in use is backed by exactly one physical allocation mapped at its address.
 * Moving a chunk maps new memory of the target tier at a staging address, waits for the
 * chunk's last use, copies, then swaps the mappings under the chunk's address; on failure
 * the source stays mapped and authoritative (DESIGN.md invariant 5).  Eviction takes the
 * least recently used GPU chunk that the operation being prepared does not need.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "res_int.h"

/* ---------------------------------------------------------------- small helpers */

double res_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

CUmemAllocationProp res_prop_for(int tier, int device)
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
int res_has_room(const res_dev_t *d, int tier)
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
    CUmemAllocationProp p = res_prop_for(tier, d->device);
    CUresult r = DRV(cuMemCreate)(h, d->chunk, &p, 0);
    if (r == CUDA_SUCCESS)
        charge(d, tier, (int64_t)d->chunk);
    return r;
}

void res_phys_put(res_dev_t *d, int tier, CUmemGenericAllocationHandle h)
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
CUresult res_map_new(res_dev_t *d, int tier, CUdeviceptr va, CUmemGenericAllocationHandle *h)
{
    CUresult r = phys_get(d, tier, h);
    if (r != CUDA_SUCCESS)
        return r;
    r = DRV(cuMemMap)(va, d->chunk, 0, *h, 0);
    if (r == CUDA_SUCCESS && (r = set_access(d, va, d->chunk)) != CUDA_SUCCESS)
        DRV(cuMemUnmap)(va, d->chunk);
    if (r != CUDA_SUCCESS)
        res_phys_put(d, tier, *h);
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

/* ---------------------------------------------------------------- migration */

/* Copy chunk ci into new physical memory of `tier` and swap the mappings under its address. */
CUresult res_migrate(res_dev_t *d, uint32_t ci, int tier)
{
    chunk_t *c = &d->chunks[ci];
    CUdeviceptr va = arena_chunk_addr(d->arena, ci);
    CUmemGenericAllocationHandle h;

    CUresult r = res_map_new(d, tier, d->staging, &h);
    if (r != CUDA_SUCCESS)
        return r;
    res_wait_idle(d, c, &d->blocked_s);
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
        res_phys_put(d, tier, h);
        if (DRV(cuMemMap)(va, d->chunk, 0, c->phys, 0) == CUDA_SUCCESS)
            set_access(d, va, d->chunk);
        return r;
    }
    res_phys_put(d, c->tier, c->phys);
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
int res_make_room(res_dev_t *d, uint32_t serial)
{
    while (!res_has_room(d, TIER_GPU)) {
        if (!res_has_room(d, TIER_HOST))
            return -ENOMEM;
        uint32_t v = victim(d, serial);
        if (v == UINT32_MAX || res_migrate(d, v, TIER_HOST) != CUDA_SUCCESS)
            return -ENOMEM;
        d->evictions_forced++;
        SHIM_TRACE(RES, "evicted chunk %u to host", v);
    }
    return 0;
}
