/* SPDX-License-Identifier: MIT */
/*
 * res_move.c - chunks of the residency tiers: backed as they come into use, parked or
 * unbacked as they go out of it, migrated, evicted and pinned (the physical memory under
 * them, its budgets and spares, is res_phys.c's).
 *
 * Each chunk in use is backed by exactly one physical allocation.  Where the device maps host
 * memory through VMM, both tiers are mapped at the chunk's address: moving a chunk copies into
 * new memory of the target tier through its shadow mapping (or mapped at a staging address),
 * after the chunk's last use, then swaps the mappings under the chunk's address.  Where it
 * cannot (no host VMM), a chunk in host memory lives in a piece of plain pinned host memory
 * and its address is unmapped: eviction copies it out and unmaps, and every operation that
 * reaches it maps GPU memory back and copies it in first (res_reach).  On failure the source
 * stays mapped and authoritative (DESIGN.md invariant 5).
 *
 * Eviction takes the least recently used GPU chunk that the operation being prepared does
 * not need, in O(1): evictable GPU chunks sit on an intrusive list in order of last use
 * (res_touch moves a chunk to its tail), chunks in host memory on a second list.  Pinned
 * chunks are on neither and never move again.
 *
 * Peer access the application enables between contexts is mirrored onto the arenas: every
 * mapping of a device's arena also grants the devices in res_peers[device] (set_access), as
 * the driver's own memory would be reachable from them.
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "res_int.h"
#include "res_nvme.h"
#include "res_ptime.h"

/* ---------------------------------------------------------------- small helpers */

double res_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

CUmemAllocationProp res_prop_for(const res_dev_t *d, int tier)
{
    CUmemAllocationProp p = { .type = CU_MEM_ALLOCATION_TYPE_PINNED };
    if (tier == TIER_GPU) {
        p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        p.location.id = d->device;
    } else {
        p.location = d->host_loc;
    }
    return p;
}

_Atomic uint32_t res_peers[MAX_DEVICES];

/* Access to [va, +size) of d's arena, newly mapped: for d's device, and for the devices that
 * have peer access to it.  Should the driver refuse the peers, d's own device still gets it. */
CUresult res_set_access(res_dev_t *d, CUdeviceptr va, uint64_t size)
{
    CUmemAccessDesc a[MAX_DEVICES];
    uint32_t peers = atomic_load_explicit(&res_peers[d->device], memory_order_relaxed);
    int n = 1;

    a[0] = (CUmemAccessDesc){ { CU_MEM_LOCATION_TYPE_DEVICE, d->device },
                              CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
    for (int i = 0; i < MAX_DEVICES; i++)
        if ((peers >> i & 1) && i != d->device)
            a[n++] = (CUmemAccessDesc){ { CU_MEM_LOCATION_TYPE_DEVICE, i },
                                        CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
    CUresult r = DRVT(cuMemSetAccess)(va, size, a, (size_t)n);
    if (r != CUDA_SUCCESS && n > 1) {
        static _Atomic int warned;
        if (!atomic_exchange(&warned, 1))
            SHIM_WARN(RES, "device %d's memory: its peers cannot be given access (%d); only "
                      "device %d has it (said once)", d->device, (int)r, d->device);
        r = DRVT(cuMemSetAccess)(va, size, a, 1);
    }
    return r;
}

/* Is chunk c's memory mapped at its address (both tiers where host memory maps, and parked
 * chunks, whose access must follow the peers' as a new mapping's would)? */
static int mapped(const res_dev_t *d, const chunk_t *c)
{
    return c->tier == TIER_GPU || c->parked ||
           (c->tier == TIER_HOST && d->host_mappable && !c->unmapped);
}

/* Grant (on) or take back device `dev`'s access to every mapped chunk of o's arena (o's lock
 * held), in runs of consecutive chunks; taking back leaves the chunks that dev's operations
 * hold or pinned (res_launch.c, "operands on other devices"). */
static void peer_apply(res_dev_t *o, int dev, int on)
{
    CUmemAccessDesc a = { .location = { CU_MEM_LOCATION_TYPE_DEVICE, dev },
                          .flags = on ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                                      : CU_MEM_ACCESS_FLAGS_PROT_NONE };
    uint32_t n = (uint32_t)(o->size / o->chunk), run = 0;
    int failed = 0;

    for (uint32_t ci = 0; ci <= n; ci++) {
        const chunk_t *c = ci < n ? &o->chunks[ci] : NULL;
        if (c && mapped(o, c) && (on || !res_granted(o, dev, ci))) {
            run++;
            continue;
        }
        if (run && DRVT(cuMemSetAccess)(arena_chunk_addr(o->arena, ci - run),
                                       (size_t)run * o->chunk, &a, 1) != CUDA_SUCCESS)
            failed = 1;
        run = 0;
    }
    if (failed)
        SHIM_WARN(RES, "device %d: access to device %d's memory could not be %s everywhere",
                  dev, o->device, on ? "granted" : "taken back");
}

void res_peer_access(CUcontext peer, int on)
{
    CUdevice me, dev;
    CUcontext popped;

    if (shim_disabled() || DRV(cuCtxGetDevice)(&me) != CUDA_SUCCESS || me < 0 ||
        me >= MAX_DEVICES || DRV(cuCtxPushCurrent_v2)(peer) != CUDA_SUCCESS)
        return;
    if (DRV(cuCtxGetDevice)(&dev) == CUDA_SUCCESS && dev >= 0 && dev < MAX_DEVICES &&
        dev != me) {
        res_dev_t *o = &res_devs[dev];
        /* The bit first: an arena set up meanwhile maps its chunks with it already. */
        if (on)
            atomic_fetch_or(&res_peers[dev], 1u << me);
        else
            atomic_fetch_and(&res_peers[dev], ~(1u << me));
        if (atomic_load_explicit((_Atomic int *)&o->ready, memory_order_acquire) > 0) {
            shim_lock(&o->lock);
            if (!on)
                res_foreign_drain(o, 0);    /* holds of operations done take their access */
            peer_apply(o, me, on);
            shim_unlock(&o->lock);
        }
        SHIM_INFO(RES, "device %d %s access to device %d's arena", me,
                  on ? "has" : "no longer has", dev);
    }
    DRV(cuCtxPopCurrent_v2)(&popped);
}

/* ---------------------------------------------------------------- chunk lists */

static void list_add(res_dev_t *d, clist_t *l, uint32_t ci)
{
    chunk_t *c = &d->chunks[ci];
    c->prev = l->tail;
    c->next = 0;
    if (l->tail)
        d->chunks[l->tail - 1].next = ci + 1;
    else
        l->head = ci + 1;
    l->tail = ci + 1;
    l->n++;
}

static void list_del(res_dev_t *d, clist_t *l, uint32_t ci)
{
    chunk_t *c = &d->chunks[ci];
    if (c->prev)
        d->chunks[c->prev - 1].next = c->next;
    else
        l->head = c->next;
    if (c->next)
        d->chunks[c->next - 1].prev = c->prev;
    else
        l->tail = c->prev;
    c->prev = c->next = 0;
    l->n--;
}

/* The list chunk c belongs on, from its state: evictable GPU chunks on the LRU list, host
 * chunks on the host list, parked ones on the parked list, the others (pinned or held on the
 * GPU, not in use) on none. */
static clist_t *list_of(res_dev_t *d, const chunk_t *c)
{
    if (c->parked)
        return &d->parked;
    if (c->tier == TIER_GPU)
        return c->pinned || c->held ? NULL : &d->lru;
    return c->tier == TIER_HOST ? &d->host : NULL;
}

/* Chunk ci's bytes leave tier `from` and join tier `to` (TIER_NONE: neither); the trace gets
 * the device's new bytes per tier. */
void res_account(res_dev_t *d, int from, int to)
{
    if (from != TIER_NONE)
        d->resident[from] -= d->chunk;
    if (to != TIER_NONE)
        d->resident[to] += d->chunk;
    if (SHIM_TRACING()) {
        uint64_t b[4] = { 0 };
        b[SHIM_TIER_GPU] = d->resident[TIER_GPU];
        b[SHIM_TIER_HOST] = d->resident[TIER_HOST];
        b[SHIM_TIER_NVME] = d->resident[TIER_NVME];
        shim_trace_memory(d->device, b);
    }
}

static int trace_tier(int tier)
{
    return tier == TIER_GPU ? SHIM_TIER_GPU : SHIM_TIER_HOST;
}

void res_unlist(res_dev_t *d, uint32_t ci)
{
    clist_t *l = list_of(d, &d->chunks[ci]);
    if (l)
        list_del(d, l, ci);
}

void res_relist(res_dev_t *d, uint32_t ci)
{
    clist_t *l = list_of(d, &d->chunks[ci]);
    if (l)
        list_add(d, l, ci);
}

void res_lru_to_tail(res_dev_t *d, uint32_t ci)
{
    list_del(d, &d->lru, ci);
    list_add(d, &d->lru, ci);
}

/* ---------------------------------------------------------------- chunks in and out of use */

CUresult res_back(res_dev_t *d, uint32_t ci, int tier)
{
    chunk_t *c = &d->chunks[ci];
    CUresult r = tier == TIER_HOST && !d->host_mappable
                     ? res_phys_get(d, tier, &c->phys)     /* contents undefined: nothing to copy */
                     : res_map_new(d, tier, arena_chunk_addr(d->arena, ci), &c->phys);
    if (r != CUDA_SUCCESS)
        return r;
    c->tier = (uint8_t)tier;
    c->lru = ++d->clock;
    res_relist(d, ci);
    res_account(d, TIER_NONE, tier);
    return CUDA_SUCCESS;
}

/* Chunk ci's bookkeeping as it goes out of use: off its list and its tier's count, unpinned,
 * its grants and use records dropped, its state cleared (a waiter's mark too:
 * res_idle_unlocked looks again).  Its memory is the caller's business. */
static void out_of_use(res_dev_t *d, uint32_t ci)
{
    chunk_t *c = &d->chunks[ci];
    res_unlist(d, ci);
    res_account(d, c->tier, TIER_NONE);
    if (c->pinned)
        d->pinned--;
    if (c->held)
        d->nheld--;                     /* (its holders' res_unhold then finds none) */
    for (int i = 0; i < MAX_DEVICES; i++)
        if (d->grants[i])
            d->grants[i][ci] = 0;
    res_use_clear(d, &c->use);
    res_unmapped_clear(d, ci);
    memset(c, 0, sizeof(*c));
}

void res_unback(res_dev_t *d, uint32_t ci)
{
    chunk_t *c = &d->chunks[ci];
    if (SHIM_UNLIKELY(c->moving))
        res_flight_settle(d, ci, 1);
    if (c->tier == TIER_NVME) {
        res_nvme_release(d, ci);        /* its slot (res_nvme.c) */
    } else {
        if (mapped(d, c)) {
            DRVT(cuMemUnmap)(arena_chunk_addr(d->arena, ci), d->chunk);  /* access goes too */
        } else if (c->unmapped && c->use.prior && !res_event_done(c->use.prior)) {
            /* Its host memory is still the destination of its eviction's copy, which completed
             * ahead of it (flight_early) and which the program's stream order does not cover:
             * the copy began after the chunk's last use, so a free after that use may come
             * first (release_chunk waits for nothing then).  Reused now, the memory would take
             * the late copy's bytes over its new contents. */
            res_event_wait(c->use.prior, &d->blocked_free_s);
            d->flights_early_freed++;
        }
        res_chunk_phys_put(d, c);
    }
    out_of_use(d, ci);
}

/*
 * Parked chunks.  A training job frees and allocates the same sizes every step, and the arena
 * hands a freed range out again at the same addresses (arena.h, "Placement"); unmapping a
 * chunk when it falls out of use and mapping it again when it comes back costs a real driver
 * about 60 us per 2 MiB chunk (cuMemUnmap, cuMemMap, cuMemSetAccess: batching them over a
 * range saves nothing), against nothing at all for a chunk that simply stays mapped.  So a
 * GPU chunk that falls out of use stays mapped and charged to the budget, parked, on the parked
 * list; cuMemGetInfo and the arena's statistics count it free.  Its contents are dead: when
 * GPU memory is wanted for anything else, parked chunks go first, before any chunk in use is
 * evicted (make_room, res_make_bytes), unmapped without a copy or a wait.
 */

/* Device access that other devices' operations were granted to chunk ci (res_dev_t.grants)
 * goes with its allocation: a parked chunk keeps only what a new mapping would get (d's device
 * and its peers: set_access).  The grants themselves are forgotten by out_of_use. */
static void grants_revoke(res_dev_t *d, uint32_t ci)
{
    uint32_t peers = atomic_load_explicit(&res_peers[d->device], memory_order_relaxed);
    CUmemAccessDesc a = { .flags = CU_MEM_ACCESS_FLAGS_PROT_NONE };
    for (int i = 0; i < MAX_DEVICES; i++) {
        if (!d->grants[i] || !d->grants[i][ci] || (peers >> i & 1))
            continue;
        a.location = (CUmemLocation){ CU_MEM_LOCATION_TYPE_DEVICE, i };
        DRVT(cuMemSetAccess)(arena_chunk_addr(d->arena, ci), d->chunk, &a, 1);
    }
}

void res_park(res_dev_t *d, uint32_t ci)
{
    chunk_t *c = &d->chunks[ci];
    if (SHIM_UNLIKELY(c->moving))
        res_flight_settle(d, ci, 1);
    CUmemGenericAllocationHandle h = c->phys;
    /* (GPU memory above the budget, after pinning went beyond it, goes back at once.) */
    if (c->tier != TIER_GPU || res_gpu_charged(d) > d->gpu_budget) {
        res_unback(d, ci);
        return;
    }
    grants_revoke(d, ci);
    out_of_use(d, ci);
    c->phys = h;
    c->parked = 1;
    res_relist(d, ci);
}

void res_unpark(res_dev_t *d, uint32_t ci)
{
    chunk_t *c = &d->chunks[ci];
    res_unlist(d, ci);
    c->parked = 0;
    c->tier = TIER_GPU;
    c->lru = ++d->clock;
    res_relist(d, ci);
    res_account(d, TIER_NONE, TIER_GPU);
    d->parked_reused++;
}

/* Unmap the parked chunk that fell out of use first, its memory to the spares (or back to the
 * driver); 0, or -1 when there is none.  Inside arena_alloc the chunks of the allocation being
 * placed are in use already: those parked ones are about to be reused, and are skipped. */
int res_park_drop(res_dev_t *d)
{
    for (uint32_t i = d->parked.head; i; i = d->chunks[i - 1].next) {
        chunk_t *c = &d->chunks[i - 1];
        if (arena_chunk_in_use(d->arena, i - 1))
            continue;
        CUmemGenericAllocationHandle h = c->phys;
        DRVT(cuMemUnmap)(arena_chunk_addr(d->arena, i - 1), d->chunk);
        list_del(d, &d->parked, i - 1);
        memset(c, 0, sizeof(*c));
        res_phys_put(d, TIER_GPU, h);
        d->parked_dropped++;
        return 0;
    }
    return -1;
}

/* ---------------------------------------------------------------- migration */

/* Each copy below is enqueued on d->stream and waited for by the host at once; while the plan
 * profiles an iteration, two events around it time the link (res_ptime_link_*). */

/* Host memory mapped: copy chunk ci into new memory of `tier`, through its shadow mapping
 * (made now if it has none), else mapped at the staging address, then swap the mappings under
 * the chunk's own address; *h receives the new memory. */
static CUresult swap_mapped(res_dev_t *d, uint32_t ci, int tier, CUmemGenericAllocationHandle *h)
{
    chunk_t *c = &d->chunks[ci];
    CUdeviceptr va = arena_chunk_addr(d->arena, ci), dst, src;

    /* An unmapped host chunk (res_unmapped.c) is copied from its shadow mapping, and its new
     * memory only mapped; mapped back first where it has none. */
    CUresult r = res_unmapped_addr(d, ci, &src);
    if (r != CUDA_SUCCESS)
        return r;
    int unmapped = c->unmapped;
    r = res_phys_get(d, tier, h);
    if (r != CUDA_SUCCESS)
        return r;
    if ((dst = res_shadow_of(d, *h)) != 0 || (dst = res_shadow_add(d, *h)) != 0) {
        d->shadow_hits++;
    } else if ((r = res_map_at(d, d->staging, *h)) != CUDA_SUCCESS) {
        res_phys_put(d, tier, *h);
        return r;
    }
    int staged = dst == 0;
    dst = staged ? d->staging : dst;
    res_wait_idle(d, c, &d->blocked_s);
    int timed = res_ptime_link_begin(d);
    r = DRVT(cuMemcpyDtoDAsync_v2)(dst, src, d->chunk, d->stream);
    r = res_ptime_link_wait(d, timed, r, tier == TIER_GPU);
    if (staged)
        DRVT(cuMemUnmap)(d->staging, d->chunk);
    int mapped_new = 0, traced = r == CUDA_SUCCESS && SHIM_TRACING();
    uint64_t t0 = traced ? shim_trace_now() : 0, tm = shim_ht_now();
    if (r == CUDA_SUCCESS && (unmapped || (r = DRVT(cuMemUnmap)(va, d->chunk)) == CUDA_SUCCESS)) {
        r = DRVT(cuMemMap)(va, d->chunk, 0, *h, 0);
        mapped_new = r == CUDA_SUCCESS;
        if (mapped_new)
            r = res_set_access(d, va, d->chunk);
    }
    if (r == CUDA_SUCCESS)
        res_map_timed(d, unmapped ? MAPT_MAP : tier == TIER_GPU ? MAPT_IN : MAPT_OUT, tm);
    if (traced)
        shim_trace_mapping(d->device, 0, shim_trace_now() - t0);
    if (r != CUDA_SUCCESS) {
        /* The source stays authoritative (invariant 5): the new memory leaves the chunk's
         * address before it goes back (a spare still mapped there would be handed out under
         * it), and the source is mapped back if it was unmapped. */
        if (mapped_new)
            DRVT(cuMemUnmap)(va, d->chunk);
        res_phys_put(d, tier, *h);
        if (!unmapped && DRVT(cuMemMap)(va, d->chunk, 0, c->phys, 0) == CUDA_SUCCESS)
            res_set_access(d, va, d->chunk);
    }
    return r;
}

/* No host mapping: copy GPU chunk ci into a pinned host piece (*h; the swap piece when
 * `swap`), then unmap its address.  Unmapping is a host write: it comes after the host waited
 * for the copy and the last uses. */
static CUresult unmap_out(res_dev_t *d, uint32_t ci, CUmemGenericAllocationHandle *h, int swap)
{
    CUdeviceptr va = arena_chunk_addr(d->arena, ci);
    if (!d->swap && !d->swap_owed)
        res_piece_alloc(d, &d->swap);           /* (a failure is seen at res_swap_take) */
    CUresult r = swap ? (res_swap_take(d, h) == 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY)
                      : res_phys_get(d, TIER_HOST, h);
    if (r != CUDA_SUCCESS)
        return r;
    res_wait_idle(d, &d->chunks[ci], &d->blocked_s);
    int timed = res_ptime_link_begin(d);
    r = DRVT(cuMemcpyDtoHAsync_v2)(res_piece(*h), va, d->chunk, d->stream);
    r = res_ptime_link_wait(d, timed, r, 0);
    uint64_t tm = shim_ht_now();
    if (r == CUDA_SUCCESS && (r = DRVT(cuMemUnmap)(va, d->chunk)) == CUDA_SUCCESS)
        res_map_timed(d, MAPT_UNMAP, tm);
    if (r != CUDA_SUCCESS)
        res_phys_put(d, TIER_HOST, *h);      /* the GPU copy stays authoritative */
    return r;
}

/* No host mapping: map GPU memory (*h) at unmapped chunk ci's address and copy its contents
 * in from its host piece.  Nothing can use an unmapped chunk, so nothing is waited for. */
static CUresult map_in(res_dev_t *d, uint32_t ci, CUmemGenericAllocationHandle *h)
{
    CUdeviceptr va = arena_chunk_addr(d->arena, ci);
    CUresult r = res_phys_get(d, TIER_GPU, h);
    if (r != CUDA_SUCCESS)
        return r;
    uint64_t tm = shim_ht_now();
    if ((r = res_map_at(d, va, *h)) != CUDA_SUCCESS) {
        res_phys_put(d, TIER_GPU, *h);
        return r;
    }
    res_map_timed(d, MAPT_MAP, tm);
    int timed = res_ptime_link_begin(d);
    r = DRVT(cuMemcpyHtoDAsync_v2)(va, res_piece(d->chunks[ci].phys), d->chunk, d->stream);
    r = res_ptime_link_wait(d, timed, r, 1);
    if (r != CUDA_SUCCESS) {
        DRVT(cuMemUnmap)(va, d->chunk);       /* the host piece stays authoritative */
        res_phys_put(d, TIER_GPU, *h);
    }
    return r;
}

/* Chunk ci now lives in memory h of `tier`: its old memory goes back, it changes lists. */
static void set_tier(res_dev_t *d, uint32_t ci, int tier, CUmemGenericAllocationHandle h)
{
    chunk_t *c = &d->chunks[ci];
    res_unlist(d, ci);
    res_chunk_phys_put(d, c);
    res_unmapped_clear(d, ci);          /* (its new memory is mapped) */
    res_account(d, c->tier, tier);
    c->phys = h;
    c->stray = 0;
    c->tier = (uint8_t)tier;
    if (tier == TIER_GPU)
        c->lru = ++d->clock;        /* brought in for a use: the most recently used */
    res_relist(d, ci);
}

CUresult res_migrate(res_dev_t *d, uint32_t ci, int tier, int swap)
{
    CUmemGenericAllocationHandle h;
    if (SHIM_UNLIKELY(d->chunks[ci].moving))
        res_flight_settle(d, ci, 0);
    int from = d->chunks[ci].tier;
    if (from == tier)
        return CUDA_SUCCESS;
    if (!d->stream && (res_home_current(d) < 0 || !d->stream))
        return CUDA_ERROR_INVALID_CONTEXT;     /* no context to copy in (res_home) */
    uint64_t start = SHIM_TRACING() ? shim_trace_now() : 0;
    CUresult r = d->host_mappable ? swap_mapped(d, ci, tier, &h)
                 : tier == TIER_HOST ? unmap_out(d, ci, &h, swap)
                                     : map_in(d, ci, &h);
    if (r != CUDA_SUCCESS)
        return r;
    if (SHIM_TRACING())
        shim_trace_migration(d->device, ci, d->chunk, trace_tier(from), trace_tier(tier), start,
                             shim_trace_now(), shim_trace_current_op());
    set_tier(d, ci, tier, h);
    if (tier == TIER_HOST) {
        d->migrations_out++;
        d->bytes_out += d->chunk;
    } else {
        d->migrations_in++;
        d->bytes_in += d->chunk;
    }
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- eviction */

/* The least recently used evictable GPU chunk not collected by operation `serial` (0: any),
 * or UINT32_MAX.  Only the operation's own chunks are skipped on the way.  While a plan is
 * followed, the one of the least recently used that the plan uses again last. */
static uint32_t victim(res_dev_t *d, uint32_t serial)
{
    if (SHIM_UNLIKELY(d->plan != NULL)) {
        uint32_t v = res_plan_victim(d, serial);
        if (v != UINT32_MAX)
            return v;
    }
    for (uint32_t i = d->lru.head; i; i = d->chunks[i - 1].next)
        if (serial == 0 || d->chunks[i - 1].seen != serial)
            return i - 1;
    return UINT32_MAX;
}

/* The base of the allocation that owns chunk ci, or 0 for a slab chunk (shared by small
 * allocations): a large allocation starts at its first chunk's address. */
static uint64_t owner_base(const res_dev_t *d, uint32_t ci)
{
    const chunk_t *c = &d->chunks[ci];
    arena_info_t info;
    uint64_t first = arena_chunk_addr(d->arena, c->span_first);
    if (arena_lookup(d->arena, first, &info) != 0 || info.base != first ||
        arena_small_class(d->arena, info.size))
        return 0;
    return first;
}

/* Evict one chunk to host memory for operation `serial`; with the host budget used up, into
 * the swap piece when `swap` (a chunk that leaves host memory is about to refill it).  With
 * `gap`, the host waits for the victim's last use without d's lock (res_idle_unlocked).  0,
 * 1 when nothing was evicted because things changed while the lock was dropped (the caller
 * looks again), or -ENOMEM. */
static int evict_one(res_dev_t *d, uint32_t serial, int swap, int gap)
{
    int via_swap = !res_has_room(d, TIER_HOST);
    if (via_swap && (!swap || d->host_mappable))
        return -ENOMEM;
    uint32_t v = victim(d, serial);
    if (v == UINT32_MAX)
        return -ENOMEM;
    if (gap) {
        int w = res_idle_unlocked(d, v, &d->blocked_s);
        if (w < 0 || (w > 0 && !res_has_room(d, TIER_HOST)))
            return 1;
    }
    if (res_migrate(d, v, TIER_HOST, via_swap) != CUDA_SUCCESS)
        return -ENOMEM;
    if (SHIM_TRACING())
        shim_trace_eviction(d->device, v, owner_base(d, v), d->chunk, SHIM_TIER_GPU,
                            SHIM_TIER_HOST, 0);
    d->evictions_forced++;
    SHIM_TRACE(RES, "evicted chunk %u to host%s", v, d->host_mappable ? "" : " (unmapped)");
    return 0;
}

/* Memory is short: first take back what frees and the application's pools no longer hold
 * (never from inside an arena call, which deferred frees would re-enter), and the GPU memory
 * that came free again (res_gpu_regrow). */
static void reclaim(res_dev_t *d)
{
    res_gpu_regrow(d);
    if (d->deferred && !d->arena_busy)
        res_deferred_drain(d, 0);
    if (d->npools)
        res_pools_sync(d);
    if (d->foreign_holds)
        res_foreign_drain(d, 0);
    if (d->nflights || d->npend)
        res_flights_poll(d);
}

/* Evict one chunk for operation `serial` (evict_one); when nothing is left to evict, chunks
 * that other devices' operations hold are waited for and released, and it tries again.  0,
 * 1 (evict_one's "look again"), or -ENOMEM. */
static int evict_or_wait(res_dev_t *d, uint32_t serial, int gap)
{
    int r = evict_one(d, serial, 0, gap);
    if (r >= 0)
        return r;
    return d->foreign_holds && res_foreign_drain(d, 1) ? evict_one(d, serial, 0, gap) : -ENOMEM;
}

/* Do n more chunks fit in the GPU budget (spares first, as res_has_room counts them: for one
 * chunk the two agree)? */
static int room_for(const res_dev_t *d, uint32_t n)
{
    uint64_t fresh = n > (uint32_t)d->nspare[0] ? n - (uint32_t)d->nspare[0] : 0;
    return res_gpu_charged(d) + fresh * d->chunk <= d->gpu_budget;
}

/* Of n chunks about to come into use, how many need room when the parked chunks stay: each
 * parked one is either taken back into use by them or unmapped to make room for one of them. */
static uint32_t beyond_parked(const res_dev_t *d, uint32_t n)
{
    return n > d->parked.n ? n - d->parked.n : 0;
}

/* Make room for n more GPU chunks: parked chunks go first, then chunks in use are evicted to
 * host memory (with `gap`, see evict_one: after GAP_TRIES evictions abandoned because their
 * victims were used again meanwhile, the rest wait under the lock, so that threads that keep
 * using chunks cannot starve this one).  With `keep_parked`, parked chunks stay and count as
 * room (beyond_parked): the allocation about to enter the arena may take them back, and the
 * arena's callbacks unmap those it does not, which costs no wait.  0 or -ENOMEM. */
#define GAP_TRIES 4

static int make_room(res_dev_t *d, uint32_t serial, uint32_t n, int gap, int keep_parked)
{
    int abandoned = 0;
    if (!room_for(d, keep_parked ? beyond_parked(d, n) : n))
        reclaim(d);
    while (!room_for(d, keep_parked ? beyond_parked(d, n) : n)) {
        if (!keep_parked && res_park_drop(d) == 0)
            continue;
        if ((d->nflights || d->npend) && res_flight_room(d) == 0)
            continue;
        if (d->nvme_flights && res_nvme_flight_room(d, serial) == 0)
            continue;
        int r = evict_or_wait(d, serial, gap);
        if (r < 0)
            return -ENOMEM;
        if (r > 0 && ++abandoned == GAP_TRIES)
            gap = 0;
    }
    return 0;
}

int res_make_room(res_dev_t *d, uint32_t serial)
{
    return make_room(d, serial, 1, 0, 0);
}

void res_make_room_for(res_dev_t *d, uint32_t n)
{
    uint64_t most = d->gpu_budget / d->chunk;
    make_room(d, 0, n > most ? (uint32_t)most : n, 1, 1);
}

int res_make_bytes(res_dev_t *d, uint64_t bytes)
{
    int gap = 1, abandoned = 0;
    reclaim(d);
    for (;;) {
        res_spares_release(d, TIER_GPU);
        if (res_gpu_charged(d) + bytes <= d->gpu_budget)
            return 0;
        if (res_park_drop(d) == 0)
            continue;
        if ((d->nflights || d->npend) && res_flight_room(d) == 0)
            continue;
        if (d->nvme_flights && res_nvme_flight_room(d, 0) == 0)
            continue;
        int r = evict_or_wait(d, 0, gap);
        if (r < 0)
            return -ENOMEM;
        if (r > 0 && ++abandoned == GAP_TRIES)
            gap = 0;                    /* as make_room: the rest wait under the lock */
    }
}

/* ---------------------------------------------------------------- bringing chunks in */

int res_bring_in(res_dev_t *d, uint32_t ci, uint32_t serial, int must, int gap)
{
    const chunk_t *c = &d->chunks[ci];
    CUresult r;
    if (c->held && !must)
        return 0;
    /* A second try when the driver refused the GPU chunk (the budget then came down). */
    for (int tries = 0; tries < 2; tries++) {
        if (make_room(d, serial, 1, gap, 0) < 0) {
            if (!must)
                return -ENOMEM;
            evict_one(d, serial, 1, 0); /* trade places through the swap piece if it can */
        }
        /* Brought in, held or freed meanwhile (or a deferred free completed): as it is. */
        if (c->tier != TIER_HOST || (c->held && !must))
            return 0;
        r = res_migrate(d, ci, TIER_GPU, 0);
        if (r != CUDA_ERROR_OUT_OF_MEMORY)
            break;
    }
    return r == CUDA_SUCCESS ? 0 : -ENOMEM;
}
