/* SPDX-License-Identifier: MIT */
/*
 * res_flight.c - the plan's asynchronous moves: prefetches and evictions in flight on the
 * shim's copy streams, and the memory their copies still use.
 *
 * The plan's moves (res_plan.c) run on the copy streams without the host waiting (flight_t in
 * res_int.h).  Invariant 4 holds by events: an eviction's copy waits for the chunk's last use
 * on its stream, a prefetch swaps the chunk's mapping only when nothing in flight uses it (its
 * last use completed, by query), and every operation that uses a chunk coming in waits for
 * its copy on its own stream (res_flight_use).  Memory a copy still reads or writes is kept
 * aside (pend_t) until its copy completed; GPU memory kept so may go to a prefetch whose copy
 * waits for that copy on the device (pend_take), so that an eviction left unmapped completes
 * once its chunk's last use did, not its copy (flight_early).  Whatever cannot be done so is
 * left to the reactive engine: the plan is a hint.  Where host memory does not map through
 * VMM, a chunk on the host is a pinned piece with its address unmapped: a prefetch maps GPU
 * memory there and copies the piece in, an eviction copies out into a piece and then unmaps.
 * Physical memory is res_phys.c's, the chunk lists res_move.c's, shadow mappings res_shadow.c's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "res_int.h"
#include "res_nvme.h"

static int flight_find(const res_dev_t *d, uint32_t ci)
{
    for (uint32_t i = 0; i < d->nflights; i++)
        if (d->flights[i].ci == ci)
            return (int)i;
    return -1;
}

static int flight_add(res_dev_t *d, uint32_t ci, int in, CUmemGenericAllocationHandle other,
                      use_event_t *ev)
{
    if (d->nflights == d->cap_flights) {
        uint32_t cap = d->cap_flights ? 2 * d->cap_flights : 32;
        flight_t *f = realloc(d->flights, cap * sizeof(*f));
        if (!f)
            return -1;
        d->flights = f;
        d->cap_flights = cap;
    }
    d->flights[d->nflights++] = (flight_t){ .ci = ci, .in = in, .other = other, .ev = ev,
                                            .seq = ++d->flights_added };
    d->chunks[ci].moving = 1;
    return 0;
}

/* Flight i ends.  Flights (and d->pend) stay in the order they came: the first is the oldest,
 * whose copy ends first on its stream, and room-making takes it first, as the plan's cost
 * model does. */
static void flight_del(res_dev_t *d, int i)
{
    d->chunks[d->flights[i].ci].moving = 0;
    d->nflights--;
    memmove(&d->flights[i], &d->flights[i + 1], (d->nflights - (uint32_t)i) * sizeof(flight_t));
}

/* Memory set aside, entry i, is taken or goes back (the order kept, as for flights). */
static void pend_del(res_dev_t *d, uint32_t i)
{
    d->npend--;
    memmove(&d->pend[i], &d->pend[i + 1], (d->npend - i) * sizeof(pend_t));
}

/* Memory h of `tier` goes back once ev completed (at once when it has, or when it cannot be
 * kept aside: the host then waits). */
static void pend_put(res_dev_t *d, int tier, CUmemGenericAllocationHandle h, use_event_t *ev)
{
    if (ev && !res_event_done(ev) && d->npend == d->cap_pend) {
        uint32_t cap = d->cap_pend ? 2 * d->cap_pend : 32;
        pend_t *p = realloc(d->pend, cap * sizeof(*p));
        if (p) {
            d->pend = p;
            d->cap_pend = cap;
        }
    }
    if (ev && !res_event_done(ev) && d->npend < d->cap_pend) {
        d->pend[d->npend++] = (pend_t){ tier, h, res_event_ref(ev) };
        return;
    }
    res_event_wait(ev, &d->blocked_flight_s);
    res_phys_put(d, tier, h);
}

/* The copy stream of evictions, made in d's context at the first; NULL when it cannot be. */
static CUstream out_stream(res_dev_t *d)
{
    CUcontext cur = NULL, popped;
    if (d->out || !d->ctx)
        return d->out;
    int push = DRV(cuCtxGetCurrent)(&cur) == CUDA_SUCCESS && cur != d->ctx &&
               DRV(cuCtxPushCurrent_v2)(d->ctx) == CUDA_SUCCESS;
    if (DRV(cuStreamCreate)(&d->out, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
        d->out = NULL;
    if (push)
        DRV(cuCtxPopCurrent_v2)(&popped);
    return d->out;
}

enum { COPY_DTOD, COPY_HTOD, COPY_DTOH };

/* Enqueue one chunk's copy on stream s, from src to dst (device addresses, except the host
 * piece `host` on the host side of COPY_HTOD and COPY_DTOH); the event after it, or NULL
 * (nothing was enqueued: *issued 0; or the host waited for it).  When tracing, *move: the
 * copy's id in the trace (0: none). */
static use_event_t *copy_on(res_dev_t *d, CUstream s, int kind, CUdeviceptr dst,
                            CUdeviceptr src, void *host, int *issued, uint64_t *move)
{
    void *timed = SHIM_TRACING() ? shim_trace_move_begin(d->ctx, s, move) : NULL;
    CUresult r = kind == COPY_HTOD   ? DRVT(cuMemcpyHtoDAsync_v2)(dst, host, d->chunk, s)
                 : kind == COPY_DTOH ? DRVT(cuMemcpyDtoHAsync_v2)(host, src, d->chunk, s)
                                     : DRVT(cuMemcpyDtoDAsync_v2)(dst, src, d->chunk, s);
    shim_trace_move_end(timed, r, s);
    if (r != CUDA_SUCCESS)
        return NULL;
    *issued = 1;
    return res_record_own(d, s);
}

/* Copy a chunk from memory `from` to memory `to` through their shadow mappings on stream s
 * (as copy_on). */
static use_event_t *copy_shadows(res_dev_t *d, CUmemGenericAllocationHandle from,
                                 CUmemGenericAllocationHandle to, CUstream s, int *issued,
                                 uint64_t *move)
{
    CUdeviceptr src = res_shadow_of(d, from), dst = res_shadow_of(d, to);
    *issued = 0;
    *move = 0;
    if ((!src && !(src = res_shadow_add(d, from))) || (!dst && !(dst = res_shadow_add(d, to))))
        return NULL;
    use_event_t *e = copy_on(d, s, COPY_DTOD, dst, src, NULL, issued, move);
    d->shadow_hits += *issued;
    return e;
}

/* Where host memory does not map (res_dev_t.host_mappable 0): copy chunk ci between its
 * address and the pinned host piece `piece` (in: into the chunk), on stream s (as copy_on). */
static use_event_t *copy_piece(res_dev_t *d, uint32_t ci, CUmemGenericAllocationHandle piece,
                               int in, CUstream s, int *issued, uint64_t *move)
{
    CUdeviceptr va = arena_chunk_addr(d->arena, ci);
    *issued = 0;
    *move = 0;
    return copy_on(d, s, in ? COPY_HTOD : COPY_DTOH, va, va, (void *)(uintptr_t)piece, issued,
                   move);
}

/* Map h at chunk ci's address in place of its memory (nothing in flight uses the chunk). */
static CUresult remap_calls(res_dev_t *d, uint32_t ci, CUmemGenericAllocationHandle h)
{
    CUdeviceptr va = arena_chunk_addr(d->arena, ci);
    CUresult r = DRVT(cuMemUnmap)(va, d->chunk);
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = DRVT(cuMemMap)(va, d->chunk, 0, h, 0)) == CUDA_SUCCESS &&
        (r = res_set_access(d, va, d->chunk)) == CUDA_SUCCESS)
        return r;
    DRVT(cuMemUnmap)(va, d->chunk);
    if (DRVT(cuMemMap)(va, d->chunk, 0, d->chunks[ci].phys, 0) == CUDA_SUCCESS)
        res_set_access(d, va, d->chunk);
    return r;
}

/* Map h at chunk ci's address, where nothing is mapped (an unmapped host chunk coming in). */
static CUresult map_calls(res_dev_t *d, uint32_t ci, CUmemGenericAllocationHandle h)
{
    CUdeviceptr va = arena_chunk_addr(d->arena, ci);
    CUresult r = DRVT(cuMemMap)(va, d->chunk, 0, h, 0);
    if (r == CUDA_SUCCESS && (r = res_set_access(d, va, d->chunk)) != CUDA_SUCCESS)
        DRVT(cuMemUnmap)(va, d->chunk);
    return r;
}

/* Chunk ci's address gets memory h in place of its own (remap_calls), or, `unmap` (an
 * eviction res_unmap_ok allows), only loses its own (res_unmapped.c), or, the chunk being
 * unmapped, gets h (map_calls); its host time traced (shim_trace_mapping) and kept for the
 * planner (res_map_timed). */
static CUresult remap(res_dev_t *d, uint32_t ci, CUmemGenericAllocationHandle h, int unmap)
{
    int traced = SHIM_TRACING(), only_map = d->chunks[ci].unmapped || !d->host_mappable;
    uint64_t t0 = traced ? shim_trace_now() : 0, tm = shim_ht_now();
    CUresult r = unmap ? DRVT(cuMemUnmap)(arena_chunk_addr(d->arena, ci), d->chunk)
                 : only_map ? map_calls(d, ci, h)
                            : remap_calls(d, ci, h);
    if (r == CUDA_SUCCESS)
        res_map_timed(d, unmap ? MAPT_UNMAP : only_map ? MAPT_MAP
                         : d->chunks[ci].tier == TIER_GPU ? MAPT_OUT : MAPT_IN, tm);
    if (traced)
        shim_trace_mapping(d->device, 1, shim_trace_now() - t0);
    return r;
}

/* An eviction's copy is done and nothing in flight uses GPU chunk ci: its address gets host
 * memory h (1), or loses its GPU memory only, where res_unmap_ok allows or host memory does
 * not map (2); 0 when neither could be done. */
static int evicted(res_dev_t *d, uint32_t ci, CUmemGenericAllocationHandle h)
{
    int unmap = !d->host_mappable || res_unmap_ok(d, &d->chunks[ci]);
    if (remap(d, ci, h, unmap) != CUDA_SUCCESS)
        return 0;
    return unmap ? 2 : 1;
}

/* Chunk ci now lives in memory h of `tier` (set_tier), its old memory kept aside until ev. */
static void retier(res_dev_t *d, uint32_t ci, int tier, CUmemGenericAllocationHandle h,
                   use_event_t *ev)
{
    chunk_t *c = &d->chunks[ci];
    CUmemGenericAllocationHandle old = c->phys;
    int from = c->tier;
    res_unlist(d, ci);
    res_account(d, from, tier);
    c->phys = h;
    c->tier = (uint8_t)tier;
    if (tier == TIER_GPU)
        c->lru = ++d->clock;
    res_relist(d, ci);
    pend_put(d, from, old, ev);
}

static int flight_end(res_dev_t *d, int i, int gone, int query);

/* Eviction i is cancelled, its chunk staying where it is: the host copy goes once written
 * (the host waits for the copy first with `wait`). */
static void flight_cancel(res_dev_t *d, int i, int wait)
{
    flight_t f = d->flights[i];
    if (wait)
        res_event_wait(f.ev, &d->blocked_flight_s);
    flight_del(d, i);
    pend_put(d, TIER_HOST, f.other, f.ev);
    res_event_put(d, f.ev);
    d->flights_cancelled++;
}

/* GPU memory aside in d->pend: the first, or with `done_first` the one pend_take takes (one
 * whose copy is done, else the first); -1 when there is none. */
static int pend_gpu(const res_dev_t *d, int done_first)
{
    int take = -1;
    for (uint32_t i = 0; i < d->npend; i++)
        if (d->pend[i].tier == TIER_GPU && (take < 0 || res_event_done(d->pend[i].ev))) {
            take = (int)i;
            if (!done_first || res_event_done(d->pend[i].ev))
                break;
        }
    return take;
}

/* GPU memory a copy still reads or writes (d->pend), for a copy on stream s: s waits for that
 * copy (the host, where it cannot); *ev, the copy's event (a reference: the memory goes back
 * to d->pend with it should the caller not use it).  0, or -1 when there is none. */
static int pend_take(res_dev_t *d, CUstream s, CUmemGenericAllocationHandle *h, use_event_t **ev)
{
    int take = pend_gpu(d, 1);
    if (take < 0)
        return -1;
    pend_t p = d->pend[take];
    pend_del(d, (uint32_t)take);
    if (!res_event_done(p.ev) && DRVT(cuStreamWaitEvent)(s, p.ev->ev, 0) != CUDA_SUCCESS)
        res_event_wait(p.ev, &d->blocked_flight_s);
    *h = p.h;
    *ev = p.ev;
    return 0;
}

/*
 * Eviction i, its copy still running, completes ahead of it where its chunk may be left
 * unmapped (res_unmap_ok) and its copy reads it through the shadow mappings: the host waits
 * for the chunk's last use (not for the copy, which comes after it), and the chunk's address
 * loses its GPU memory, which goes aside until the copy completed (pend_take: a prefetch's
 * copy may write it once the copy read it, ordered on the device).  The chunk's host memory
 * is the copy's destination: what uses the chunk waits for the copy as for a prior use.  0,
 * or -1 when it cannot.
 */
static int flight_early(res_dev_t *d, int i)
{
    flight_t f = d->flights[i];
    chunk_t *c = &d->chunks[f.ci];
    if (f.in || !d->host_mappable || c->tier != TIER_GPU || !res_unmap_ok(d, c) ||
        res_event_done(f.ev))
        return -1;
    res_wait_idle(d, c, &d->blocked_flight_s);
    if (remap(d, f.ci, 0, 1) != CUDA_SUCCESS)
        return -1;
    flight_del(d, i);
    if (SHIM_TRACING())
        shim_trace_planned_move(d->device, f.ci, d->chunk, SHIM_TIER_GPU, SHIM_TIER_HOST,
                                f.issued, shim_trace_now(), f.move);
    retier(d, f.ci, TIER_HOST, f.other, f.ev);
    res_unmapped_mark(d, f.ci);
    c->use.prior = f.ev;                /* (the flight's reference) */
    d->migrations_out++;
    d->bytes_out += d->chunk;
    d->flights_early++;
    return 0;
}

/* Room for one more GPU chunk, taken in the order the plan's cost model takes it
 * (policy/replay.c: room_pop): room already free (res_flights_poll gave back that of the
 * copies done), else a parked chunk, unmapped from its address (res_park_drop), else GPU
 * memory set aside while a copy still uses it (pend_gpu), else the oldest eviction in flight
 * completes ahead of its copy (flight_early) or is waited for.  0 (room), 1 (GPU memory that
 * a copy still uses: pend_take), -1 (none). */
static int flight_room(res_dev_t *d)
{
    while (!res_has_room(d, TIER_GPU)) {
        if (res_park_drop(d) == 0)
            continue;
        if (pend_gpu(d, 0) >= 0)
            return 1;
        int oldest = -1;
        for (uint32_t i = 0; i < d->nflights; i++)
            if (!d->flights[i].in) {
                oldest = (int)i;
                break;
            }
        if (oldest < 0)
            return -1;
        if (flight_early(d, oldest) == 0)
            continue;                   /* (its memory went aside, or back if the copy ended) */
        res_flight_settle(d, d->flights[oldest].ci, 0);
    }
    return 0;
}

/* GPU memory h, taken for a prefetch, goes back: aside until `was` (pend_take's) and ev (the
 * prefetch's copy, where issued) completed. */
static void prefetch_undo(res_dev_t *d, CUmemGenericAllocationHandle h, use_event_t *was,
                          use_event_t *ev)
{
    if (ev || was)
        pend_put(d, TIER_GPU, h, ev ? ev : was);    /* (ev comes after was on its stream) */
    else
        res_phys_put(d, TIER_GPU, h);
    res_event_put(d, was);
    res_event_put(d, ev);
}

int res_prefetch(res_dev_t *d, uint32_t ci)
{
    chunk_t *c = &d->chunks[ci];
    if (c->tier != TIER_HOST || c->moving || c->pinned || c->held || c->waiting || c->stray ||
        !d->stream)
        return -1;
    if (!res_idle_now(d, c))
        return -EBUSY;
    int room = flight_room(d);
    if (room < 0 || c->tier != TIER_HOST)
        return -1;
    CUmemGenericAllocationHandle h;
    use_event_t *was = NULL;
    if (room ? pend_take(d, d->stream, &h, &was) < 0
             : res_phys_get(d, TIER_GPU, &h) != CUDA_SUCCESS)
        return -1;
    int issued;
    uint64_t t0 = SHIM_TRACING() ? shim_trace_now() : 0, move;
    use_event_t *ev;
    if (!d->host_mappable) {
        /* Unmapped with its contents in a host piece: mapped first, then copied into. */
        if (remap(d, ci, h, 0) != CUDA_SUCCESS) {
            prefetch_undo(d, h, was, NULL);
            return -1;
        }
        ev = copy_piece(d, ci, c->phys, 1, d->stream, &issued, &move);
        if (!issued) {
            DRVT(cuMemUnmap)(arena_chunk_addr(d->arena, ci), d->chunk);
            prefetch_undo(d, h, was, NULL);
            return -1;
        }
    } else {
        ev = copy_shadows(d, c->phys, h, d->stream, &issued, &move);
        if (!issued) {
            prefetch_undo(d, h, was, NULL);
            return -1;
        }
        if (remap(d, ci, h, 0) != CUDA_SUCCESS) {
            /* The copy still reads the chunk's host memory, which stays its memory with
             * nothing recording that use: the host waits for the copy. */
            res_event_wait(ev, &d->blocked_flight_s);
            prefetch_undo(d, h, was, ev);
            return -1;
        }
    }
    res_event_put(d, was);
    CUmemGenericAllocationHandle old = c->phys;
    res_unlist(d, ci);
    res_unmapped_clear(d, ci);
    res_account(d, TIER_HOST, TIER_GPU);
    c->phys = h;
    c->tier = TIER_GPU;
    c->lru = ++d->clock;
    res_relist(d, ci);
    d->migrations_in++;
    d->bytes_in += d->chunk;
    d->prefetches++;
    if (!ev || flight_add(d, ci, 1, old, ev) < 0) {
        res_event_wait(ev, &d->blocked_flight_s);   /* the host waits: nothing is in flight */
        pend_put(d, TIER_HOST, old, ev);
        res_event_put(d, ev);
        if (SHIM_TRACING())
            shim_trace_planned_move(d->device, ci, d->chunk, SHIM_TIER_HOST, SHIM_TIER_GPU, t0,
                                    shim_trace_now(), move);
        return 0;
    }
    d->flights[d->nflights - 1].issued = t0;
    d->flights[d->nflights - 1].move = move;
    /* A free or a migration of the chunk waits for the copy as for a use (res_wait_idle). */
    c->use.prior = res_event_ref(ev);
    return 0;
}

int res_evict_async(res_dev_t *d, uint32_t ci, uint32_t serial)
{
    chunk_t *c = &d->chunks[ci];
    int i = c->moving ? flight_find(d, ci) : -1;
    if (i >= 0 && d->flights[i].in)
        flight_end(d, i, 0, 0);         /* its prefetch, used since: done first */
    if (c->tier != TIER_GPU || c->moving || c->pinned || c->held || c->waiting)
        return -1;
    if (serial && c->seen == serial)
        return -EBUSY;
    if (!res_has_room(d, TIER_HOST) || !out_stream(d))
        return -1;
    CUmemGenericAllocationHandle h;
    if (res_phys_get(d, TIER_HOST, &h) != CUDA_SUCCESS)
        return -1;
    int issued = 0;
    use_event_t *ev = NULL;
    uint64_t t0 = SHIM_TRACING() ? shim_trace_now() : 0, move = 0;
    /* (What the copy comes after.) */
    const use_saw_t use = res_use_saw(&c->use), fence = res_use_saw(&d->fence);
    if (res_stream_after_use(d, d->out, c) == 0)
        ev = d->host_mappable ? copy_shadows(d, c->phys, h, d->out, &issued, &move)
                              : copy_piece(d, ci, h, 0, d->out, &issued, &move);
    if (!issued) {
        res_phys_put(d, TIER_HOST, h);
        return -1;
    }
    d->evictions_async++;
    if (!ev || flight_add(d, ci, 0, h, ev) < 0) {
        /* The host waited for the copy (or waits now): the eviction completes at once. */
        res_event_wait(ev, &d->blocked_flight_s);
        int done = res_idle_since(d, c, &use, &fence) ? evicted(d, ci, h) : 0;
        if (done) {
            if (SHIM_TRACING())
                shim_trace_planned_move(d->device, ci, d->chunk, SHIM_TIER_GPU, SHIM_TIER_HOST,
                                        t0, shim_trace_now(), move);
            retier(d, ci, TIER_HOST, h, NULL);
            if (done == 2 && d->host_mappable)
                res_unmapped_mark(d, ci);
            d->migrations_out++;
            d->bytes_out += d->chunk;
        } else {
            res_phys_put(d, TIER_HOST, h);
        }
        res_event_put(d, ev);
        return 0;
    }
    d->flights[d->nflights - 1].issued = t0;
    d->flights[d->nflights - 1].move = move;
    d->flights[d->nflights - 1].use = use;
    d->flights[d->nflights - 1].fence = fence;
    return 0;
}

/* Move i of d's flights ends (its copy complete, or waited for by the host unless `query`):
 * 1 when it ended, 0 when it is still running (query only). */
static int flight_end(res_dev_t *d, int i, int gone, int query)
{
    flight_t f = d->flights[i];
    chunk_t *c = &d->chunks[f.ci];
    int done;
    if (!f.in && gone) {
        /* Cancelled by res_flight_settle: its copy still reads the chunk's GPU memory, which
         * the caller may park or give back (a free: res_park, res_unback) or move on (to
         * NVMe), with nothing ordered after the copy; so the host waits for it first. */
        flight_cancel(d, i, 1);
        return 1;
    }
    if (!res_event_done(f.ev)) {
        if (query)
            return 0;
        res_event_wait(f.ev, &d->blocked_flight_s);
        d->flights_waited++;
    }
    flight_del(d, i);
    if (f.in) {
        if (SHIM_TRACING())
            shim_trace_planned_move(d->device, f.ci, d->chunk, SHIM_TIER_HOST, SHIM_TIER_GPU,
                                    f.issued, shim_trace_now(), f.move);
        res_phys_put(d, TIER_HOST, f.other);
    } else if (c->tier == TIER_GPU && res_idle_since(d, c, &f.use, &f.fence) &&
               (done = evicted(d, f.ci, f.other))) {
        if (SHIM_TRACING())
            shim_trace_planned_move(d->device, f.ci, d->chunk, SHIM_TIER_GPU, SHIM_TIER_HOST,
                                    f.issued, shim_trace_now(), f.move);
        retier(d, f.ci, TIER_HOST, f.other, NULL);
        if (done == 2 && d->host_mappable)
            res_unmapped_mark(d, f.ci);
        d->migrations_out++;
        d->bytes_out += d->chunk;
    } else {
        res_phys_put(d, TIER_HOST, f.other);    /* used meanwhile: it stays */
        d->flights_cancelled++;
    }
    res_event_put(d, f.ev);
    return 1;
}

void res_flight_settle(res_dev_t *d, uint32_t ci, int gone)
{
    int i = flight_find(d, ci);
    if (i >= 0)
        flight_end(d, i, gone, 0);
    else
        res_nvme_flight_settle(d, ci, gone);    /* (an NVMe move, or none) */
}

int res_flight_in_since(const res_dev_t *d, uint32_t ci, uint64_t seq)
{
    int i = flight_find(d, ci);
    return i >= 0 && d->flights[i].in && d->flights[i].seq > seq;
}

int res_flight_out(const res_dev_t *d, uint32_t ci)
{
    int i = flight_find(d, ci);
    return i >= 0 && !d->flights[i].in;
}

void res_flight_keep(res_dev_t *d, uint32_t ci)
{
    int i = flight_find(d, ci);
    if (i >= 0 && !d->flights[i].in) {
        /* Its copy still reads the chunk, which the caller's use may write unordered with it:
         * the host waits for the copy first. */
        res_event_wait(d->flights[i].ev, &d->blocked_flight_s);
        flight_cancel(d, i, 0);
    } else if (i < 0) {
        res_nvme_flight_settle(d, ci, 1);       /* (a move out stays: see there) */
    }
}

void res_flights_wait_for(res_dev_t *d, const collect_t *k)
{
    for (size_t i = 0; i < k->n && (d->nflights || d->nvme_flights); i++) {
        uint32_t ci = k->ids[i];
        res_flight_keep(d, ci);
        if (d->chunks[ci].moving)
            res_flight_settle(d, ci, 0);
    }
}

void res_flight_use(res_dev_t *d, uint32_t ci, CUstream s, int ptds)
{
    int i = flight_find(d, ci);
    if (i < 0) {
        res_nvme_flight_use(d, ci, s, ptds);    /* (an NVMe move, or none) */
        return;
    }
    if (!d->flights[i].in) {
        /* An eviction: cancelled, the chunk may be written, once its copy read it (s waits
         * for the copy, or the host where s cannot).  Until s's use is recorded (after the
         * operation is enqueued, or never where it is refused), nothing else orders what
         * comes next for the chunk after that copy: another thread that takes its GPU memory
         * meanwhile (a victim while this one waits without the lock) would hand it on with
         * the copy still reading it.  The copy becomes part of the chunk's use. */
        use_event_t *ev = d->flights[i].ev;
        use_t *u = &d->chunks[ci].use;
        if (s == CU_STREAM_PER_THREAD || (!s && ptds) ||
            DRVT(cuStreamWaitEvent)(s, ev->ev, 0) != CUDA_SUCCESS)
            res_event_wait(ev, &d->blocked_flight_s);
        else if (!u->prior && !res_event_done(ev))
            u->prior = res_event_ref(ev);
        else if (!res_event_done(ev))
            res_event_wait(ev, &d->blocked_flight_s);   /* (a prior already: rare) */
        flight_cancel(d, i, 0);         /* (the chunk's memory stays, used after the copy) */
        return;
    }
    if (flight_end(d, i, 0, 1))
        return;                         /* a prefetch whose copy is done */
    if (s == CU_STREAM_PER_THREAD || (!s && ptds) ||
        DRVT(cuStreamWaitEvent)(s, d->flights[i].ev->ev, 0) != CUDA_SUCCESS)
        flight_end(d, i, 0, 0);         /* the host waits where the stream cannot */
}

int res_flight_room(res_dev_t *d)
{
    int i = pend_gpu(d, 1);
    if (i >= 0) {
        pend_t p = d->pend[i];
        pend_del(d, (uint32_t)i);
        res_event_wait(p.ev, &d->blocked_flight_s);
        res_phys_put(d, p.tier, p.h);
        res_event_put(d, p.ev);
        return 0;
    }
    for (uint32_t k = 0; k < d->nflights; k++)
        if (!d->flights[k].in) {
            if (flight_early(d, (int)k) < 0)
                flight_end(d, (int)k, 0, 0);
            return 0;
        }
    return -1;
}

void res_flights_poll(res_dev_t *d)
{
    uint32_t kept = 0;
    for (uint32_t i = 0; i < d->npend; i++) {      /* (compacted in one pass, in order) */
        pend_t p = d->pend[i];
        if (!res_event_done(p.ev)) {
            d->pend[kept++] = p;
            continue;
        }
        res_phys_put(d, p.tier, p.h);
        res_event_put(d, p.ev);
    }
    d->npend = kept;
    for (uint32_t i = 0; i < d->nflights;)
        if (!flight_end(d, (int)i, 0, 1))
            i++;
    if (d->nvme_flights)
        res_nvme_flights_poll(d);
}

void res_flights_drain(res_dev_t *d)
{
    if (d->nvme_flights)
        res_nvme_flights_drain(d);
    while (d->nflights)
        flight_end(d, (int)d->nflights - 1, 0, 0);     /* (newest first: no shifting) */
    while (d->npend) {
        pend_t p = d->pend[--d->npend];
        res_event_wait(p.ev, &d->blocked_flight_s);
        res_phys_put(d, p.tier, p.h);
        res_event_put(d, p.ev);
    }
}
