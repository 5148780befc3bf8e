/* SPDX-License-Identifier: MIT */
/*
 * res_pin.c - pinning and reach: chunks mapped back into GPU memory where something outside
 * the shim's view needs them there (res_map_back), pinned there for good where an address
 * escapes (res_pin, everything at once when an operation cannot be seen into), held for an
 * operation that does not record its use (res_hold), and the chunks an operation reaches
 * made resident before it is enqueued (res_reach_away).
 */
#include <errno.h>

#include "res_int.h"
#include "res_nvme.h"

/* res_bring_in with `must`, where the chunk is unmapped: a chunk left unmapped is reported, with
 * what follows from it (`then`). */
static void map_back_or_warn(res_dev_t *d, uint32_t ci, const char *then)
{
    if (res_bring_in(d, ci, 0, 1, 0) < 0 && d->chunks[ci].tier == TIER_HOST)
        SHIM_WARN(RES, "device %d: cannot map chunk %u back into GPU memory: %s", d->device, ci,
                  then);
}

void res_map_back(res_dev_t *d, uint32_t ci)
{
    res_nvme_back(d, ci);
    if (d->chunks[ci].unmapped)
        res_unmapped_restore(d, ci);
    if (d->chunks[ci].tier == TIER_HOST && !d->host_mappable)
        map_back_or_warn(d, ci, "the driver answers the query for unmapped memory");
}

static void pin(res_dev_t *d, uint32_t ci)
{
    if (d->chunks[ci].pinned)
        return;
    if (SHIM_UNLIKELY(d->chunks[ci].moving))
        res_flight_keep(d, ci);         /* (an eviction is cancelled: it stays mapped) */
    if (SHIM_UNLIKELY(d->chunks[ci].moving))
        res_flight_settle(d, ci, 0);
    res_unlist(d, ci);
    d->chunks[ci].pinned = 1;
    d->pinned++;
    d->pins++;
    res_relist(d, ci);
}

void res_hold(res_dev_t *d, uint32_t ci)
{
    /* (Its holder's use is not recorded: an eviction in flight is cancelled, so that the chunk
     * stays where its holder finds it, mapped.) */
    if (SHIM_UNLIKELY(d->chunks[ci].moving))
        res_flight_keep(d, ci);
    if (SHIM_UNLIKELY(d->chunks[ci].moving))
        res_flight_settle(d, ci, 0);
    res_unlist(d, ci);
    if (d->chunks[ci].held++ == 0)
        d->nheld++;
    res_relist(d, ci);
}

void res_unhold(res_dev_t *d, uint32_t ci)
{
    if (!d->chunks[ci].held)
        return;
    res_unlist(d, ci);
    if (--d->chunks[ci].held == 0)
        d->nheld--;
    res_relist(d, ci);
}

void res_pin(res_dev_t *d, uint32_t ci)
{
    chunk_t *c = &d->chunks[ci];
    if (c->pinned || c->tier == TIER_NONE)
        return;
    res_nvme_back(d, ci);
    if (c->tier == TIER_HOST && d->host_mappable)
        res_bring_in(d, ci, 0, 0, 0);
    else if (c->tier == TIER_HOST)
        map_back_or_warn(d, ci, "an operation the shim does not see that reaches it will fault");
    res_nvme_back(d, ci);               /* (the room made for it may have sent it to NVMe) */
    if (c->unmapped)
        res_unmapped_restore(d, ci);    /* (it stayed on the host) */
    if (c->tier != TIER_NONE)       /* (making room may have completed a deferred free) */
        pin(d, ci);
}

/*
 * Before an operation whose reach the shim cannot see (a launch with opaque arguments, a
 * graph launch, a structured or batched copy) on a device whose evicted chunks are unmapped:
 * every chunk comes back into GPU memory and is pinned there for good, not only while the
 * operation may run.  An unseen use may leave an address where the shim never looks (in
 * device memory, in a graph's nodes, in a library's state), so a later operation that looks
 * fully visible may still follow it: only memory whose every use was seen may be unmapped
 * (DESIGN.md invariant 2).  The cost is one pass over the chunks not yet pinned, so each
 * chunk is pinned once in its life and a fence with nothing left to pin costs three tests
 * (and, while other operations hold chunks, a pass to find them: pin_held); chunks that come
 * into use later may be evicted again until the next such operation.
 * Evictable GPU chunks are pinned first, so that bringing the host ones back evicts nothing.
 */
/* The chunks held by operations in flight, on no list, pinned where they are (one pass over
 * the arena, made only while some chunk is held): in GPU memory, since where evicted chunks
 * are unmapped every operation brings back what it holds.  Returns how many were pinned. */
static uint32_t pin_held(res_dev_t *d)
{
    uint32_t n = 0, left = d->nheld, count = (uint32_t)arena_chunk_count(d->arena);
    for (uint32_t ci = 0; ci < count && left; ci++) {
        chunk_t *c = &d->chunks[ci];
        if (!c->held)
            continue;
        left--;
        if (c->tier == TIER_GPU && !c->pinned) {
            pin(d, ci);
            n++;
        }
    }
    return n;
}

static void pin_everything(res_dev_t *d)
{
    if (!d->lru.n && !d->host.n && !d->nheld)
        return;
    uint32_t gpu = d->lru.n, host = d->host.n;
    uint64_t pins = d->pins;
    while (d->lru.head)
        pin(d, d->lru.head - 1);
    for (uint32_t i = d->host.head, next; i; i = next) {
        next = d->chunks[i - 1].next;
        if (d->chunks[i - 1].pinned)
            continue;                   /* one that could not come back, seen again */
        CUresult r = res_migrate(d, i - 1, TIER_GPU, 0);   /* nothing is left to evict */
        if (r != CUDA_SUCCESS)
            SHIM_WARN(RES, "device %d: cannot map chunk %u back into GPU memory (CUresult "
                      "%d): an operation that reaches it will fault", d->device, i - 1, (int)r);
        pin(d, i - 1);
    }
    uint32_t held = d->nheld ? pin_held(d) : 0;
    if (d->pins == pins)
        return;                         /* (held chunks pinned by an earlier fence) */
    d->fences_pinned++;
    SHIM_INFO(RES, "device %d: an operation the shim cannot see into pinned %u GPU, %u host and "
              "%u held chunks resident", d->device, gpu, host, held);
}

/* The unmapped host chunks operation k reaches are mapped back (those a launch could not
 * bring into GPU memory, and every one a copy reaches): the count that stays unmapped (the
 * driver refused to map it back; the operation must not be enqueued). */
static size_t unmapped_reached(res_dev_t *d, collect_t *k)
{
    size_t left = 0;
    for (size_t i = 0; d->nunmapped && i < k->n; i++)
        if (d->chunks[k->ids[i]].unmapped) {
            res_unmapped_restore(d, k->ids[i]);
            left += d->chunks[k->ids[i]].unmapped;
        }
    return left;
}

/* -ENOMEM with a warning when `unmapped` of k's chunks stay unmapped, else 0. */
static int still_unmapped(const res_dev_t *d, size_t unmapped, const char *what,
                          const char *then)
{
    if (!unmapped)
        return 0;
    SHIM_WARN(RES, "device %d: %s reaches %zu chunks that could not be mapped back: %s",
              d->device, what, unmapped, then);
    return -ENOMEM;
}

/*
 * Make what operation k reaches usable by the device before it is enqueued.  Where host
 * memory is mapped, chunks on the host are brought into GPU memory as far as the budget
 * allows when `promote` (launches; not the chunks behind a kernel's pointers,
 * res_collect_behind, which it most likely does not touch), and left where they are otherwise
 * (copies read them in place).  Where it is not, every collected chunk on the host must come
 * back, and an operation that reached unknown memory pins everything (pin_everything).  With `gap`, the
 * evictions for them wait for their victims' last uses without d's lock: where evicted
 * chunks stay mapped another thread may meanwhile move k's chunks too, which only leaves them
 * in mapped host memory; where they are unmapped k's chunks are held until all are back, so
 * that none is unmapped again before the operation is enqueued.  Where they are unmapped and
 * some cannot come back (what the operation reaches does not fit in GPU memory at once), the
 * operation is refused: -ENOMEM, reported with `what` (the operation) and `then` (what
 * follows), and the wrapper returns CUDA_ERROR_OUT_OF_MEMORY rather than enqueue work that
 * would fault and take the context with it.
 */
int res_reach_away(res_dev_t *d, collect_t *k, int promote, int gap, const char *what,
                   const char *then)
{
    int must = !d->host_mappable;
    uint64_t seq = d->flights_added;    /* (the flights added from here: see below) */
    if (d->nvme_on && res_nvme_reach(d, k) < 0) {     /* (chunks on NVMe: res_nvme.c) */
        SHIM_WARN(RES, "device %d: %s reaches chunks on NVMe that cannot come back: %s",
                  d->device, what, then);
        return -ENOMEM;
    }
    if (k->unknown && d->unmap_on &&    /* (every unmapped chunk mapped back) */
        still_unmapped(d, res_expose(d), what, then) < 0)
        return -ENOMEM;
    if (!must && !promote)
        return still_unmapped(d, unmapped_reached(d, k), what, then);
    if (must && k->unknown)
        pin_everything(d);
    gap = gap && !d->arena_busy;
    if (gap && must)
        for (size_t i = 0; i < k->n; i++)
            res_hold(d, k->ids[i]);
    for (size_t i = 0; i < k->n; i++)
        if (d->chunks[k->ids[i]].tier == TIER_HOST && !res_collect_behind(k, k->ids[i]) &&
            res_bring_in(d, k->ids[i], k->serial, must, gap) < 0 && !must)
            break;
    if (gap && must)
        for (size_t i = 0; i < k->n; i++)
            res_unhold(d, k->ids[i]);
    /* (While the lock was dropped, another thread's plan may have started evicting some of
     * k's chunks, or sending some of its host chunks to NVMe: those moves are cancelled, as a
     * use cancels them, once the host waited for their copies; or prefetching some, whose
     * copies the host waits for, as pin() does: k's stream was ordered after the prefetches
     * before (settle in res_plan.c), not after these.) */
    for (size_t i = 0; gap && i < k->n; i++)
        if (SHIM_UNLIKELY(d->chunks[k->ids[i]].moving) &&
            (d->chunks[k->ids[i]].tier == TIER_GPU || d->chunks[k->ids[i]].tier == TIER_HOST)) {
            res_flight_keep(d, k->ids[i]);
            if (d->chunks[k->ids[i]].moving && res_flight_in_since(d, k->ids[i], seq))
                res_flight_settle(d, k->ids[i], 0);
        }
    /* (Bringing chunks in, or another thread while the lock was dropped, may have sent some
     * of k's host chunks to NVMe: back they come, under the lock held until it is enqueued.) */
    if (d->nvme_on && res_nvme_reach(d, k) < 0)
        return -ENOMEM;
    if (still_unmapped(d, unmapped_reached(d, k), what, then) < 0)
        return -ENOMEM;
    size_t left = 0;
    for (size_t i = 0; must && i < k->n; i++)
        left += d->chunks[k->ids[i]].tier == TIER_HOST;
    if (!left)
        return 0;
    SHIM_WARN(RES, "device %d: %s reaches %zu chunks (%zu MiB), of which %zu cannot come back "
              "into GPU memory (budget %llu MiB): %s", d->device, what, k->n,
              (k->n * d->chunk) >> 20, left, (unsigned long long)(d->gpu_budget >> 20), then);
    return -ENOMEM;
}
