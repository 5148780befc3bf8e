/* SPDX-License-Identifier: MIT */
/*
 * res_unmapped.c - host chunks whose address is unmapped: what the plan's evictions leave of
 * memory whose every use the shim saw (ELIXIR_PLAN_UNMAP, on by default where an NVMe area is
 * set).
 *
 * Moving a chunk between GPU and host memory where host memory maps (VMM host allocations)
 * swaps the physical memory under its address: cuMemUnmap, cuMemMap and cuMemSetAccess, about
 * 142 us of the host's time per 2 MiB handle out and 123 us back on an H200 (host-located
 * memory costs more to map than device memory).  An eviction that only unmaps costs the unmap
 * (about 33 us), and the prefetch that brings the chunk back maps and sets access (about
 * 65 us) as it does now: a round trip costs 0.37 of that.  The price is
 * DESIGN.md invariant 2's: an operation that reached the chunk without the shim seeing it
 * would fault, so only chunks that were never exposed (chunk_t.exposed: no operation the shim
 * cannot see into ran while they were in use, the rule the NVMe tier follows) are left
 * unmapped, and every operation the shim sees reach one maps it first: a launch brings it into
 * GPU memory where the budget has room, anything else (a copy, another device's operation,
 * a query of the driver's attributes) maps its host memory back at its address; moves copy
 * its contents through its host memory's shadow mapping (res_unmapped_addr: a prefetch, a
 * move to NVMe).  An operation the shim cannot see into exposes every chunk in use and maps
 * every unmapped chunk back first (res_expose).
 *
 * The chunk's host memory keeps its shadow mapping (res_shadow.c), through which its contents
 * are copied in and out; chunk_t.phys is its handle, as for any host chunk.
 */
#include "res_int.h"

/* Is the plan's eviction of chunk c (GPU memory, its copy to host done) to leave it unmapped? */
int res_unmap_ok(const res_dev_t *d, const chunk_t *c)
{
    return d->unmap_on && !c->exposed && !c->stray && !c->pinned && !c->held && !c->waiting;
}

void res_unmapped_mark(res_dev_t *d, uint32_t ci)
{
    d->chunks[ci].unmapped = 1;
    d->nunmapped++;
    d->unmapped_out++;
}

void res_unmapped_clear(res_dev_t *d, uint32_t ci)
{
    if (!d->chunks[ci].unmapped)
        return;
    d->chunks[ci].unmapped = 0;
    d->nunmapped--;
}

CUresult res_unmapped_restore(res_dev_t *d, uint32_t ci)
{
    chunk_t *c = &d->chunks[ci];
    if (!c->unmapped)
        return CUDA_SUCCESS;
    /* (Its host memory may still be the destination of its eviction's copy: flight_early.) */
    res_event_wait(c->use.prior, &d->blocked_s);
    CUdeviceptr va = arena_chunk_addr(d->arena, ci);
    int traced = SHIM_TRACING();
    uint64_t t0 = traced ? shim_trace_now() : 0;
    CUresult r = DRVT(cuMemMap)(va, d->chunk, 0, c->phys, 0);
    if (r == CUDA_SUCCESS && (r = res_set_access(d, va, d->chunk)) != CUDA_SUCCESS)
        DRVT(cuMemUnmap)(va, d->chunk);
    if (traced)
        shim_trace_mapping(d->device, 0, shim_trace_now() - t0);
    if (r != CUDA_SUCCESS) {
        SHIM_WARN(RES, "device %d: cannot map chunk %u's host memory back at its address "
                  "(CUresult %d): an operation that reaches it will fault", d->device, ci, (int)r);
        return r;
    }
    res_unmapped_clear(d, ci);
    d->unmapped_back++;
    return CUDA_SUCCESS;
}

CUresult res_unmapped_addr(res_dev_t *d, uint32_t ci, CUdeviceptr *addr)
{
    chunk_t *c = &d->chunks[ci];
    *addr = arena_chunk_addr(d->arena, ci);
    if (!c->unmapped)
        return CUDA_SUCCESS;
    CUdeviceptr sh = res_shadow_of(d, c->phys);
    if (sh || (sh = res_shadow_add(d, c->phys))) {
        *addr = sh;
        return CUDA_SUCCESS;
    }
    return res_unmapped_restore(d, ci);
}

size_t res_expose(res_dev_t *d)
{
    uint32_t n = (uint32_t)arena_chunk_count(d->arena);
    size_t left = 0;
    if (d->exposed_fresh) {
        for (uint32_t ci = 0; ci < n; ci++)
            if (d->chunks[ci].tier != TIER_NONE)
                d->chunks[ci].exposed = 1;
        d->exposed_fresh = 0;
    }
    for (uint32_t ci = 0; ci < n && d->nunmapped; ci++)
        if (d->chunks[ci].unmapped) {
            res_unmapped_restore(d, ci);
            left += d->chunks[ci].unmapped;
        }
    return left;
}
