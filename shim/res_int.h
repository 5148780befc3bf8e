/* SPDX-License-Identifier: MIT */
/*
 * res_int.h - what the residency files share: the per-device state (chunks, streams, last
 * uses, budgets), the operation being collected, and the functions one file offers the
 * others.  res.c sets devices up and serves allocations (res_budget.c sets the budgets,
 * res_app.c charges the application's own memory); res_phys.c owns physical memory,
 * res_move.c migrations and eviction (res_shadow.c the shadow mappings, res_pin.c pinning
 * and reach); res_use.c last uses, events and application streams; res_launch.c what
 * launches and copies reach (res_copy.c a copy's operands, res_fence.c a graph launch's fence
 * on the other devices).  Nothing outside these files includes it.
 */
#ifndef ELIXIR_RES_INT_H
#define ELIXIR_RES_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "arena.h"
#include "lock.h"
#include "res_drv.h"
#include "shim.h"

#define MAX_DEVICES 16
#define RESERVE_MIN (64ull << 20)
#define SPARES 64           /* GPU chunks kept unmapped for the next migration */
#define HOST_SPARES 1024    /* host chunks kept so: an iteration's swing of host use in the
                             * plan's steady state, made and released each time otherwise */
#define MAX_STREAMS 64      /* application streams whose uses are recorded lazily, per device */
#define KCACHE 256          /* kernels whose parameter layout is cached, per device */
#define KPROBE 8            /* slots of the layout cache tried per kernel */
#define INLINE_IDS 32       /* chunks an operation collects without allocating */
#define BEHIND_SPANS 8      /* a launch's allocations with chunks behind (collect_t.behind) */

enum { TIER_NONE, TIER_GPU, TIER_HOST, TIER_NVME };  /* NVME: res_nvme.c */

typedef struct use_event {
    CUevent ev;
    CUcontext ctx;                  /* its context: it is recorded on that context's streams */
    int refs;                       /* uses, stream slots and joins naming it */
    uint32_t joined;                /* serial of the operation that last joined it */
    uint64_t gen;                   /* which taking of it this is (event_get): a use saved
                                     * earlier tells a recycled event apart (res_use_saw) */
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

/* A use as saved when a copy was ordered after it (res_use_saw): the use, and which taking
 * of its prior event it named (a done event goes back to a free list, then names later uses). */
typedef struct use_saw {
    use_t use;
    uint64_t prior_gen;
} use_saw_t;

/* An application stream whose uses are recorded lazily. */
#define COVER_RING 8        /* a stream's earlier events kept for the uses they cover */

typedef struct strm {
    CUstream s;                     /* the handle (the legacy stream of the arena's context) */
    CUcontext ctx;                  /* its context, whose events it records */
    int live;                       /* 1: in use; -1: destroyed (ev covers all it ran); 0: free */
    uint64_t tick;                  /* operations recorded on it */
    uint64_t covered;               /* ticks up to this one complete before ev (NULL: done) */
    use_event_t *ev;
    /* the events recorded on it before ev, oldest first, each with the ticks it covers: a
     * wait for an earlier use takes the first that covers it, not ev (cover()) */
    struct { uint64_t covered; use_event_t *ev; } ring[COVER_RING];
    uint32_t nring;
} strm_t;

/* A kernel's parameter sizes, read once with cuFuncGetParamInfo (see kparams()). */
typedef struct kparams {
    CUfunction f;
    unsigned gen;                   /* code_gen when read */
    unsigned n;                     /* parameters; 0: unknown, the arguments are opaque */
    int words;                      /* 1 <= n <= INLINE_IDS, every parameter one 8-byte word */
    uint32_t *sizes;
} kparams_t;

/*
 * One chunk of an arena (64 bytes).  `phys` is its physical memory: a VMM handle mapped at
 * the chunk's address, except for a TIER_HOST chunk of a device without host VMM mapping
 * (res_dev_t.host_mappable = 0), where it is the address of the pinned host piece holding
 * the chunk's contents while its address is unmapped (pinned memory of the arena's context;
 * plain host memory, a stray piece, while the arena has no context to pin it in: see
 * res_pieces_rehome), and of a TIER_NVME chunk, its slot in the swap area (res_nvme.c; its
 * address unmapped).  A parked chunk is out of use (tier
 * TIER_NONE, as the arena sees it) but keeps the GPU memory it had mapped and accessible at
 * its address, so that the arena's next use of it costs no driver call (res_park).
 */
typedef struct chunk {
    uint8_t tier;
    uint8_t pinned : 1;             /* never evicted again (res_pin) */
    uint8_t waiting : 1;            /* its eviction waits without the lock (res_idle_unlocked) */
    uint8_t parked : 1;             /* out of use, its GPU memory still mapped (d->parked) */
    uint8_t stray : 1;              /* its host piece is plain host memory (malloc) */
    uint8_t exposed : 1;            /* an operation the shim cannot see into ran while it was
                                     * in use: never goes to NVMe (res_nvme.c) */
    uint8_t moving : 1;             /* an asynchronous move is in flight (d->flights) */
    uint8_t unmapped : 1;           /* TIER_HOST, host_mappable, its address unmapped: the
                                     * plan evicted it, every use seen (res_unmapped.c) */
    uint16_t held;                  /* not evicted while > 0: operations in flight (res_hold) */
    uint32_t seen;                  /* serial of the last launch that collected it */
    CUmemGenericAllocationHandle phys;
    use_t use;                      /* last use */
    uint64_t lru;                   /* stamp of the last use */
    /* The chunks of the allocation that owns this one: [span_first, +span_n); a slab chunk
     * (shared by small allocations) spans only itself.  Set by res_alloc; see collect_ptr. */
    uint32_t span_first, span_n;
    uint32_t prev, next;            /* 1 + neighbours on its list (res_move.c); 0: none */
} chunk_t;

_Static_assert(sizeof(chunk_t) == 64, "a chunk fills one cache line");

/* A list of chunks threaded through chunk_t.prev/next, oldest first (indices + 1; 0: none). */
typedef struct clist {
    uint32_t head, tail, n;
} clist_t;

/*
 * An asynchronous move of one chunk (res_move.c, "asynchronous moves"), issued by the plan
 * (res_plan.c).  A prefetch (in) has already swapped the chunk's mapping to its new GPU
 * memory, which the copy on d->stream is still filling: every operation that uses the chunk
 * waits for `ev` on its stream first, and `other` (the host memory it left, which the copy
 * reads) is released once ev completed.  An eviction (out) leaves the chunk mapped to its GPU
 * memory while the copy on d->out fills `other` (host memory) after the chunk's last use; once
 * ev completed the mapping swaps to `other` and the GPU memory goes back.  A use of a chunk
 * being evicted cancels the eviction (it may write the chunk).
 */
typedef struct flight {
    uint32_t ci;
    int in;
    CUmemGenericAllocationHandle other;
    use_event_t *ev;
    uint64_t issued, move;          /* when tracing: the trace's clock when its copy was
                                     * issued, and its move id (shim_trace_move_begin) */
    use_saw_t use, fence;           /* an eviction: the chunk's last use and the fence its
                                     * copy was ordered after (res_idle_since) */
    uint64_t seq;                   /* res_dev_t.flights_added when it was added */
} flight_t;

/* The mapping calls of a chunk's move, by kind, as res_dev_t.map_ns times them: its address
 * remapped from GPU to host memory (out) or back (in); only unmapped (out); only mapped, where
 * it was unmapped (in). */
enum { MAPT_OUT, MAPT_IN, MAPT_UNMAP, MAPT_MAP, MAPT_KINDS };

/* Memory that a copy still reads or writes: back to its tier once ev completed. */
typedef struct pend {
    int tier;
    CUmemGenericAllocationHandle h;
    use_event_t *ev;
} pend_t;

struct res_plan;
typedef struct res_ptime res_ptime_t;

/* A free that waits for an event recorded on the freeing stream (cuMemFreeAsync). */
typedef struct deferred {
    uint64_t base;                  /* the allocation */
    CUstream s;                     /* the freeing stream (NULL for default streams) */
    use_event_t *ev;
    struct deferred *next;
} deferred_t;

/* One of the application's own memory pools: its growth is charged to the GPU budget of the
 * device it allocates on (res.c, "the application's own memory"). */
typedef struct app_pool {
    CUmemoryPool pool;
    uint64_t charged;               /* the pool's reserved bytes charged to the budget */
    int mine;                       /* its memory is this device's: 1, not: -1, not known: 0 */
} app_pool_t;

/* What the shim keeps of one allocation of the arena beyond its place (res_tag.c): only for
 * those that need it, keyed by the allocation's base. */
typedef struct alloc_tag {
    uint64_t base;                  /* 0: a free slot of the table */
    uint64_t id;                    /* its buffer ID, once one was asked for; else 0 */
    CUcontext ctx;                  /* the context it was allocated in; NULL: the arena's */
    CUmemoryPool pool;              /* stream-ordered: the pool it stands for; else NULL */
} alloc_tag_t;

typedef struct res_dev {
    /* What every launch reads and writes, together in the first two cache lines. */
    _Alignas(64) int ready;         /* 1: set up; -1: set-up failed, pass everything through */
    int device;
    CUcontext ctx;
    shim_lock_t lock;               /* the device's residency lock (lock.h) */
    uint64_t base, size;
    int chunk_shift;                /* log2(chunk) when a power of two, else -1 */
    uint32_t serial;
    chunk_t *chunks;
    uint64_t clock;                 /* LRU stamps */
    unsigned nstreams, last_slot;
    unsigned cover_slot;            /* 1 + the stream slot whose last operation gets an event
                                     * before the next one (res_use_cover_flush) */
    clist_t lru;                    /* GPU chunks that may be evicted, least recently used first */
    /* The rest. */
    arena_t *arena;
    uint64_t chunk;
    CUdeviceptr staging;            /* one chunk of address space for migrations */
    CUstream stream;                /* the shim's own copy stream */
    CUstream join;                  /* where last uses on different streams are joined */
    uint64_t gpu_budget, gpu_used, host_used, gpu_peak, host_peak;
    int gpu_shrunk;                 /* the driver refused GPU memory within the budget */
    uint64_t gpu_budget_set;        /* the budget as set up; it comes back up to this at most */
    int gpu_budget_auto;            /* it is the default (free memory less a reserve) */
    double regrow_at;               /* looks at free memory again from then (res_phys.c) */
    uint64_t resident[4];           /* bytes of chunks in use per TIER_* (traced as MEMORY) */
    uint64_t app_used, app_peak;    /* the application's own device memory (cuMemCreate) */
    uint64_t pool_used, pool_peak;  /* growth of the application's own pools */
    CUmemoryPool default_pool;      /* the device's default memory pool (NULL: none) */
    int host_mappable;              /* VMM host allocations supported; else evictions unmap */
    CUmemLocation host_loc;         /* where host chunks are created when host_mappable */
    clist_t host;                   /* chunks in host memory, in the order they were evicted */
    clist_t parked;                 /* parked chunks, in the order they fell out of use */
    uint32_t pinned;                /* chunks pinned resident */
    uint32_t nheld;                 /* chunks held (res_hold) by operations in flight */
    int arena_busy;                 /* inside an arena call: deferred frees wait */
    int freed_in_order;             /* the arena call releases what stream-ordered frees
                                     * gave back: nothing left may use it (release_chunk) */
    deferred_t *deferred;           /* cuMemFreeAsync frees waiting, oldest first */
    deferred_t **deferred_end;      /* where the next one goes */
    app_pool_t *pools;              /* the application's pools seen allocating on this device */
    unsigned npools, cap_pools;
    use_t fence;                    /* a use of unknown memory: every chunk waits for it */
    strm_t streams[MAX_STREAMS];
    kparams_t kcache[KCACHE];
    CUmemGenericAllocationHandle spare[2][HOST_SPARES]; /* unmapped physical chunks, per
                                                         * tier (SPARES, HOST_SPARES) */
    int nspare[2];
    /* Migration targets' shadow mappings (res_shadow.c): a handle that received a migration
     * stays mapped, accessible, at its own slot of the `shadow` reservation. */
    CUdeviceptr shadow;             /* 0: not reserved yet */
    int shadow_off;                 /* the reservation failed: staging only */
    uint32_t shadow_slots, shadow_top;  /* slots reserved; slots ever handed out */
    uint32_t *shadow_free, nshadow_free;    /* slots given back */
    CUmemGenericAllocationHandle *sh_keys;  /* handle -> 1 + slot, open addressing */
    uint32_t *sh_vals, sh_cap, sh_n;
    uint64_t shadow_hits;           /* migrations copied to a target's shadow mapping */
    CUmemGenericAllocationHandle swap;  /* no host mapping: the swap piece (res_phys.c) */
    int swap_owed;                  /* the swap piece is out: the next host piece put refills it */
    use_event_t *free_events;
    alloc_tag_t *tags;              /* allocation tags, open addressing by base (res_tag.c) */
    uint32_t tags_cap, tags_n;
    struct foreign_hold *foreign_holds; /* other devices' operations' holds (res_foreign.c) */
    /* Per other device, per chunk: how many of its operations hold the chunk, RES_GRANT_FOR_GOOD
     * once a captured one pinned it; allocated at the device's first (res_launch.c).  A device
     * whose counts could not be allocated is in grants_lost. */
    uint32_t *grants[MAX_DEVICES];
    uint32_t grants_lost;
    uint64_t migrations_out, migrations_in, bytes_out, bytes_in, evictions_forced;
    uint64_t pins, frees_deferred, frees_captured, fences_pinned;
    uint64_t refused;               /* operations refused: what they reach did not fit */
    uint64_t parked_reused, parked_dropped; /* parked chunks taken back into use, unmapped */
    double blocked_s, blocked_free_s;   /* host waits of migrations, of frees and releases */
    int nvme_on;                    /* the NVMe tier serves this device (res_nvme.c) */
    int unmap_on;                   /* the plan's evictions may unmap (res_unmapped.c) */
    int reach_forward;              /* ELIXIR_REACH=forward where host memory maps (collect_t) */
    uint32_t nunmapped;             /* host chunks whose address is unmapped (chunk.unmapped) */
    int exposed_fresh;              /* chunks came into use since every chunk was exposed */
    uint32_t slab_fresh;            /* 1 + the slab chunk that the allocation being placed
                                     * brought into use (back_chunk), for res_plan_slab */
    uint64_t unmapped_out, unmapped_back;   /* evictions that unmapped; chunks mapped back */
    uint64_t nvme_out, nvme_in;     /* chunks written to NVMe, read back */
    uint32_t nvme_flights;          /* the plan's NVMe moves in flight (res_plan_nvme.c) */
    /* Asynchronous moves (res_move.c) and the plan that issues them (res_plan.c). */
    CUstream out;                   /* the copy stream of evictions (made at the first) */
    flight_t *flights;
    uint32_t nflights, cap_flights;
    uint64_t flights_added;         /* flights ever added: flight_t.seq */
    pend_t *pend;
    uint32_t npend, cap_pend;
    struct res_plan *plan;          /* NULL: ELIXIR_POLICY=reactive, or not planned yet */
    res_ptime_t *ptime;             /* the profile's device times (res_plan_time.c) */
    uint64_t prefetches, evictions_async, flights_cancelled, flights_waited, flights_early;
    uint64_t flights_early_freed;   /* of those, chunks freed before the copy ended: waited for */
    double blocked_flight_s;        /* host waits for moves in flight */
    /* The host time of moves' mapping calls (res_map_timed), for the planner's costs. */
    uint64_t map_ns[MAPT_KINDS], map_n[MAPT_KINDS];
} res_dev_t;

/* Adds the mapping calls of one move of kind k, begun at t0 (shim_ht_now), to d's. */
static inline void res_map_timed(res_dev_t *d, int k, uint64_t t0)
{
    d->map_ns[k] += shim_ht_now() - t0;
    d->map_n[k]++;
}

_Static_assert(offsetof(res_dev_t, arena) <= 128, "a launch's fields span two cache lines");


extern res_dev_t res_devs[MAX_DEVICES];
/* Stream captures that may be open (begun through the shim, not seen to end).  While any is,
 * every use is recorded with an event at once, so that no stream has uses left to cover that
 * could be capturing by the time they are covered (an event recorded then would be captured). */
extern _Atomic int res_captures;
/* Devices with an arena set up. */
extern _Atomic int res_arenas;
/* The host budget is the process's, shared by every device's arena (ELIXIR_HOST_MEMORY is
 * one figure for the job): set with the first arena, it comes down when the system pins no
 * more (budget_shrink) and back up to budget_set when it does again (host_regrow);
 * `used` is what every device's host chunks and spares take (res_phys.c: charge).  A device
 * checks and charges under its own lock only, so devices paging at once may overshoot it by a
 * chunk each.  A device that finds no room says so in `wanted` (until it finds room), and
 * the others then give back the host memory they free, spares included, instead of keeping
 * it. */
typedef struct res_host {
    _Atomic uint64_t budget, used;
    _Atomic uint64_t budget_set;        /* as set up */
    _Atomic int shrunk;                 /* the driver refused pinned memory within it */
    _Atomic uint64_t regrow_at_ms;      /* tries pinning beyond it again from then */
    _Atomic unsigned wanted;            /* bit d: device d found no room (until it does) */
} res_host_t;
extern res_host_t res_host;
/* The address range every arena lies in, [res_span_lo, +res_span_len) (gaps included): a
 * word outside the current device's arena but inside it may point into another's. */
extern _Atomic uint64_t res_span_lo, res_span_len;
/* Bit i of res_peers[o]: device i has peer access to device o's memory (the application
 * enabled it: res_peer_access), so o's arena is mapped for device i too (res_move.c). */
extern _Atomic uint32_t res_peers[MAX_DEVICES];
/* Bumped whenever code or contexts go away (module or library unload, context destroyed or
 * reset): cached kernel layouts and the per-thread context -> device cache are then stale. */
extern _Atomic unsigned res_code_gen;
/* Bumped whenever a stream may have gone away (stream or context destroyed, code unloaded):
 * the per-thread stream -> device memo (res_launch.c) is then stale. */
extern _Atomic unsigned res_stream_gen;

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
    if (__builtin_expect(atomic_load_explicit(&res_captures, memory_order_acquire) > 0, 0) &&
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

/* What one launch or copy reaches; one per thread, reused (no allocation per operation). */
typedef struct collect {
    res_dev_t *d;
    CUcontext ctx;                  /* the current context */
    uint32_t serial;
    uint32_t *ids;                  /* inline_ids, or a heap array beyond INLINE_IDS */
    size_t n, cap;
    int unknown;                    /* some argument could not be inspected */
    int away;                       /* some chunk collected was not in GPU memory */
    int in_place;                   /* the plan lets it run where its chunks are (res_plan_op) */
    int cover;                      /* the plan evicts a chunk it used last: an event after it
                                     * (res_plan_op, res_use_cover_flush) */
    int capturing;                  /* the stream captures: the work is not run now */
    int detected;                   /* the iteration detector saw the launch (res_launch_fast) */
    int busy;                       /* this thread's collect is in use */
    uint32_t inline_ids[INLINE_IDS];
    /* Words that point into other devices' arenas (a launch's or a batch's; heap, rare), and
     * what was taken of them on those devices (res_launch.c, "operands on other devices").
     * All zero whenever the collect is not in use: whoever sets them clears them. */
    uint64_t *others;
    uint32_t nothers, cap_others;
    void *foreign;
    uint32_t fenced;                /* bit i: device i's lock held for a graph launch, whose
                                     * fence it gets at the end (res_fence.c) */
    uint32_t timed, timed_gen;      /* 1 + the profiled operation this is, to be timed, and
                                     * its profile (res_plan_time.c); 0: none */
    /* Chunks [first, lo) of a launch's allocation lie before every pointer it passes into it:
     * collected, but neither brought into GPU memory for it nor profiled (collect_forward). */
    int forward;                    /* collecting a launch's arguments (d->reach_forward) */
    uint32_t nbehind;
    struct { uint32_t first, lo; } behind[BEHIND_SPANS];
} collect_t;

/* Does chunk ci lie before every pointer operation k passed into its allocation? */
static inline int res_collect_behind(const collect_t *k, uint32_t ci)
{
    for (uint32_t i = 0; i < k->nbehind; i++)
        if (ci >= k->behind[i].first && ci < k->behind[i].lo)
            return 1;
    return 0;
}

_Static_assert(MAX_DEVICES <= 32, "collect_t.fenced has a bit per device");

/* ---------------------------------------------------------------- res.c */
/* The calling thread's last current context and the device state it resolved to (NULL: none
 * the shim serves).  res_code_gen tells when contexts went away (a new one may then have the
 * same address); a forked child sees its devices not ready. */
typedef struct res_ctx_memo {
    CUcontext ctx;
    unsigned gen;
    res_dev_t *d;
} res_ctx_memo_t;

extern SHIM_TLS res_ctx_memo_t res_ctx_memo;

/* res_active_dev past the thread's memo, for the current context ctx: its device if it has an
 * arena, set up (and remembered) on first use while some device has one. */
res_dev_t *res_active_dev_slow(CUcontext ctx);

/* Which device's arena an operation concerns (its context in *ctx): the current one, if it
 * has an arena; NULL otherwise.  Every launch asks: one driver call and the thread's memo;
 * none while no device has an arena (nothing allocated yet, or ELIXIR_DISABLE). */
static inline res_dev_t *res_active_dev(CUcontext *ctx)
{
    if (atomic_load_explicit(&res_arenas, memory_order_acquire) == 0)
        return NULL;
    shim_pfn_cuCtxGetCurrent_t get = DRV(cuCtxGetCurrent);
    res_dev_t *d = res_ctx_memo.d;
    if (!get || get(ctx) != CUDA_SUCCESS || !*ctx)
        return NULL;
    if (*ctx == res_ctx_memo.ctx && d &&
        res_ctx_memo.gen == atomic_load_explicit(&res_code_gen, memory_order_acquire) &&
        atomic_load_explicit((_Atomic int *)&d->ready, memory_order_acquire) > 0)
        return d;
    return res_active_dev_slow(*ctx);
}
/* The residency state of context ctx's device, whether ctx is current or not (it is made
 * current meanwhile when it is not), set up on first use as for the current context; NULL
 * when the shim cannot serve it. */
res_dev_t *res_ctx_dev(CUcontext ctx);
/* The device whose arena holds p, or NULL. */
res_dev_t *res_owner(CUdeviceptr p);
/* Is d's arena set up (its state usable)? */
static inline int res_dev_ready(const res_dev_t *d)
{
    return atomic_load_explicit((_Atomic int *)&d->ready, memory_order_acquire) > 0;
}
/* The residency state of the current context's device (the context in *ctxp when not NULL);
 * NULL when the shim cannot serve it (the caller then passes the call to the driver, whose
 * answer is the right one). */
res_dev_t *res_current_dev(CUcontext *ctxp);
/* The residency state of device ordinal `device`: set up already, or set up now when it is
 * the current context's device; NULL otherwise. */
res_dev_t *res_dev_of(int device);
/* Free the deferred frees whose stream passed them (all of them, waiting, when `wait`);
 * returns how many were freed.  Not while d->arena_busy. */
unsigned res_deferred_drain(res_dev_t *d, int wait);
/* Context ctx is about to be destroyed (d locked, no other lock held, outside arena calls):
 * d's allocations made in it, stream-ordered ones aside, are freed; returns how many. */
unsigned res_free_ctx(res_dev_t *d, CUcontext ctx);
/* Allocation tags (res_tag.c), d locked.  The tag of the allocation at base, or NULL. */
const alloc_tag_t *res_tag_of(const res_dev_t *d, uint64_t base);
/* The allocation at base was made in context ctx (NULL: the arena's) and, when it is
 * stream-ordered, stands for an allocation from pool `pool`. */
void res_tag_origin(res_dev_t *d, uint64_t base, CUcontext ctx, CUmemoryPool pool);
/* The allocation at base left the arena: its tag goes. */
void res_tag_drop(res_dev_t *d, uint64_t base);
/* The buffer ID of the allocation at base (CU_POINTER_ATTRIBUTE_BUFFER_ID). */
uint64_t res_buffer_id(res_dev_t *d, uint64_t base);
/* d's context is about to change (d locked): the allocations made in it are tagged with it. */
void res_tags_own(res_dev_t *d);
/* Bring the charges of d's application pools up to date (they shrink at the driver's will). */
void res_pools_sync(res_dev_t *d);
/* Of a device's free memory (cuMemGetInfo's free and total), what the default GPU budget
 * takes: all but a reserve for the driver and libraries (a tenth, RESERVE_MIN at least), or
 * half when less is free. */
uint64_t res_gpu_headroom(uint64_t free_b, uint64_t total);
/* Budgets from the options; the GPU default keeps a reserve for the driver and libraries.
 * A GPU budget beyond the device's free memory could never be backed (the driver would
 * refuse chunks the budget still allows, and nothing would be evicted for them), nor a host
 * budget beyond the memory the process may use: a size given beyond either, or a budget
 * under one chunk, is bad configuration, reported: -ERANGE (else 0); a percentage of the
 * device is held to its free memory.  The host budget is set with the first arena
 * (res_host, under the set-up lock). */
int res_set_budgets(res_dev_t *d);

/* ---------------------------------------------------------------- res_phys.c */
/* Device memory charged to d's GPU budget: arena chunks, the application's own. */
uint64_t res_gpu_charged(const res_dev_t *d);
int res_has_room(res_dev_t *d, int tier);
/* Budgets that came down go back up where the memory is there again (at most every 100 ms:
 * see res_gpu_regrow, host_regrow); d locked.  Memory short calls it. */
void res_budgets_regrow(res_dev_t *d);
/* Is d's GPU budget or the host budget below the one set up? */
static inline int res_budgets_down(const res_dev_t *d)
{
    return d->gpu_budget < d->gpu_budget_set ||
           atomic_load_explicit(&res_host.budget, memory_order_relaxed) <
               atomic_load_explicit(&res_host.budget_set, memory_order_relaxed);
}
void res_phys_put(res_dev_t *d, int tier, CUmemGenericAllocationHandle h);
/* No host mapping (d locked): the spare pinned host pieces and the swap piece, which are
 * memory of d's context, go back before that context is destroyed. */
void res_pieces_drop(res_dev_t *d);
/* No host mapping (d locked): the pieces of d's host chunks, pinned memory of context `old`
 * (about to be destroyed; NULL: none of them is) and stray pieces, move into pinned memory of
 * d's context, or, while d has none, the pinned ones into stray pieces; returns how many of
 * old's could not (no memory), whose contents go with `old`. */
uint32_t res_pieces_rehome(res_dev_t *d, CUcontext old);
CUresult res_map_new(res_dev_t *d, int tier, CUdeviceptr va, CUmemGenericAllocationHandle *h);
/* The pinned host piece of an unmapped host chunk (a chunk_t.phys of a device without host
 * mapping). */
static inline void *res_piece(CUmemGenericAllocationHandle h)
{
    return (void *)(uintptr_t)h;
}
/* For res_move.c (d locked): a chunk-sized piece of pinned host memory, made in d's context;
 * the swap piece taken for an eviction into it (0, or -ENOMEM when there is none); the spare
 * chunks of `tier` given back to the driver; chunk c's memory given back as its tier's (a
 * stray piece to the C library); the GPU budget's look at free memory, when one is due. */
CUresult res_piece_alloc(res_dev_t *d, CUmemGenericAllocationHandle *h);
int res_swap_take(res_dev_t *d, CUmemGenericAllocationHandle *h);
void res_spares_release(res_dev_t *d, int tier);
void res_chunk_phys_put(res_dev_t *d, const chunk_t *c);
void res_gpu_regrow(res_dev_t *d);

/* ---------------------------------------------------------------- res_move.c */
double res_now_s(void);
/* Properties of d's physical chunks of `tier` (a host tier only where host memory maps). */
CUmemAllocationProp res_prop_for(const res_dev_t *d, int tier);
/* Back chunk ci, coming into use, with memory of `tier` and put it on its list. */
CUresult res_back(res_dev_t *d, uint32_t ci, int tier);
/* Chunk ci goes out of use: unmapped, off its list, its memory back to the spares. */
void res_unback(res_dev_t *d, uint32_t ci);
/* Chunk ci goes out of use, nothing in flight using it: in GPU memory (and the device within
 * its budget) it stays mapped, parked, until the arena uses it again (res_unpark) or its
 * memory is wanted elsewhere; otherwise res_unback. */
void res_park(res_dev_t *d, uint32_t ci);
/* Parked chunk ci comes into use again, in GPU memory as it was: no driver call. */
void res_unpark(res_dev_t *d, uint32_t ci);
int res_make_room(res_dev_t *d, uint32_t serial);
/* Evict until `bytes` more fit in the GPU budget with no spare chunk held, waiting for the
 * victims without d's lock as make_room does (d locked, no other lock held, outside arena
 * calls); 0 or -ENOMEM. */
int res_make_bytes(res_dev_t *d, uint64_t bytes);
/* Before an allocation of n chunks enters the arena (whose callbacks must not drop d's lock):
 * room in GPU memory for as many of them as the budget holds, as far as evicting makes it,
 * the evictions waiting for their victims without the lock (d locked, no other lock held).
 * The callbacks then find the room; where none could be made they do as before (evict under
 * the lock, or start chunks on the host). */
void res_make_room_for(res_dev_t *d, uint32_t n);
/* Evictable GPU chunk ci, not the LRU list's tail, becomes its tail. */
void res_lru_to_tail(res_dev_t *d, uint32_t ci);

#define RES_GRANT_FOR_GOOD UINT32_MAX

/* Must device dev keep its access to chunk ci of o (o locked): do operations of dev hold it,
 * or did a captured one pin it?  Without counts for dev: does anything hold or pin it. */
static inline int res_granted(const res_dev_t *o, int dev, uint32_t ci)
{
    const uint32_t *g = o->grants[dev];
    return g ? g[ci] != 0 : o->chunks[ci].held || o->chunks[ci].pinned;
}

/* Is chunk c on the LRU list (evictable: in GPU memory, neither pinned nor held)? */
static inline int res_on_lru(const chunk_t *c)
{
    return c->tier == TIER_GPU && !c->pinned && !c->held;
}

/* Chunk ci, if on the LRU list, becomes its tail (the most recently used). */
static inline void res_lru_last(res_dev_t *d, uint32_t ci)
{
    if (res_on_lru(&d->chunks[ci]) && d->lru.tail != ci + 1)
        res_lru_to_tail(d, ci);
}

/* Chunk ci was used now: most recently used. */
static inline void res_touch(res_dev_t *d, uint32_t ci)
{
    d->chunks[ci].lru = ++d->clock;
    res_lru_last(d, ci);
}

/* Do the chunks ids[0, n) that are on the LRU list already end it, in this order (the chunks
 * of an operation with the same arguments as the last one to use them)?  Then touching them
 * in turn would leave the list as it is. */
static SHIM_ALWAYS_INLINE int res_lru_ends_with(const res_dev_t *d, const uint32_t *ids, size_t n)
{
    uint32_t at = d->lru.tail;
    for (size_t i = n; i > 0; i--) {
        const chunk_t *c = &d->chunks[ids[i - 1]];
        if (res_on_lru(c)) {
            if (at != ids[i - 1] + 1)
                return 0;
            at = c->prev;
        }
    }
    return 1;
}

/* Chunks ids[0, n) (and the fence, when the operation reached unknown memory) were last used
 * now: at the next tick of stream slot `slot`, and touched in turn (res_touch; the list moves
 * are skipped where they would change nothing).  Only where none of their uses needs a join
 * (the caller checked).  An id may come twice. */
static SHIM_ALWAYS_INLINE void res_use_tick(res_dev_t *d, const uint32_t *ids, size_t n,
                                            int unknown, int slot)
{
    uint64_t tick = ++d->streams[slot].tick, clock = d->clock;
    for (size_t i = 0; i < n; i++) {
        chunk_t *c = &d->chunks[ids[i]];
        c->use.slot = (uint16_t)(slot + 1);
        c->use.tick = tick;
        c->lru = ++clock;
    }
    d->clock = clock;
    if (n == 1 || !res_lru_ends_with(d, ids, n))
        for (size_t i = 0; i < n; i++)
            res_lru_last(d, ids[i]);
    if (unknown) {
        d->fence.slot = (uint16_t)(slot + 1);
        d->fence.tick = tick;
    }
}
/* Map unmapped chunk ci back (devices without host mapping), for a query about its mapping. */
void res_map_back(res_dev_t *d, uint32_t ci);
/* Hold chunk ci where it is until the matching res_unhold: off the LRU list, never chosen
 * for eviction (an operation between its residency check and the use it records). */
void res_hold(res_dev_t *d, uint32_t ci);
void res_unhold(res_dev_t *d, uint32_t ci);
/* Pin chunk ci resident: never evicted again; brought into GPU memory if it can be. */
void res_pin(res_dev_t *d, uint32_t ci);
/* Make what operation k reaches usable before it is enqueued (see the definition of
 * res_reach_away); nothing to do while every chunk it collected is in GPU memory, unless it
 * reached unknown memory on a device whose evicted chunks are unmapped.  `gap`: evictions may
 * drop d's lock while they wait (only where the caller holds no other lock).  0, or -ENOMEM
 * when a chunk k reaches stayed unmapped (the operation should not be enqueued), which is
 * logged as `what` (the operation) reaching them, and `then`, what follows. */
int res_reach_away(res_dev_t *d, collect_t *k, int promote, int gap, const char *what,
                   const char *then);
static inline int res_reach(res_dev_t *d, collect_t *k, int promote, int gap, const char *what,
                            const char *then)
{
    if (k->away || (k->unknown && (!d->host_mappable || d->nvme_on || d->unmap_on)))
        return res_reach_away(d, k, promote, gap, what, then);
    return 0;
}

/* ---------------------------------------------------------------- res_unmapped.c */
/* Host chunks whose address is unmapped (d locked).  res_unmap_ok: may the plan's eviction of
 * chunk c leave it so?  res_unmapped_mark / _clear: chunk ci became one / is one no more
 * (its tier changes or it goes out of use).  res_unmapped_restore: its host memory mapped back
 * at its address (a failure is logged; the chunk stays unmapped).  res_unmapped_addr: where
 * chunk ci's contents may be copied from or into (*addr): its address, or where it is
 * unmapped its host memory's shadow mapping (mapped back at its address where it has none;
 * the result of that).  res_expose: an operation the shim cannot see into is about to be
 * enqueued: every chunk in use is exposed for good and every unmapped one mapped back; the
 * count that stays unmapped (the driver refused to map it back). */
int res_unmap_ok(const res_dev_t *d, const chunk_t *c);
void res_unmapped_mark(res_dev_t *d, uint32_t ci);
void res_unmapped_clear(res_dev_t *d, uint32_t ci);
CUresult res_unmapped_restore(res_dev_t *d, uint32_t ci);
CUresult res_unmapped_addr(res_dev_t *d, uint32_t ci, CUdeviceptr *addr);
size_t res_expose(res_dev_t *d);

/* For res_flight.c (d locked): a chunk taken off its list and put back on the list of its
 * tier; the resident bytes of a chunk moving between tiers; the shadow mapping of physical
 * memory h (0: none) and one made for it; access to [va, va + size) for the device and its
 * peers; physical memory of `tier` (a spare or new); a parked chunk's memory given up for
 * room (0 when one was, -1 when there was none). */
void res_unlist(res_dev_t *d, uint32_t ci);
void res_relist(res_dev_t *d, uint32_t ci);
void res_account(res_dev_t *d, int from, int to);
CUdeviceptr res_shadow_of(const res_dev_t *d, CUmemGenericAllocationHandle h);
CUdeviceptr res_shadow_add(res_dev_t *d, CUmemGenericAllocationHandle h);
/* (res_phys.c, res_shadow.c) Physical memory h goes back to the driver: its shadow mapping,
 * if any, goes first; memory h mapped and accessible at va (nothing mapped there on
 * failure). */
void res_shadow_drop(res_dev_t *d, CUmemGenericAllocationHandle h);
CUresult res_map_at(res_dev_t *d, CUdeviceptr va, CUmemGenericAllocationHandle h);
/* (res_move.c, res_pin.c) Move chunk ci into memory of `tier` (copying its contents; out into
 * the swap piece when `swap`): a move does not look at the budgets, callers make room first.
 * Bring host chunk ci into GPU memory, evicting chunks that operation `serial` does not need:
 * without room it stays where it is (mapped host memory: slower, still right), unless `must`
 * (its address is unmapped): then it trades places with a victim through the swap piece, or,
 * with no victim, exceeds the GPU budget (the driver has the last word).  0, or -ENOMEM when
 * the chunk stayed on the host.  A held chunk stays where it is unless `must` (returning 0):
 * the operation holding it (another device's, or an NCCL call's) does not record its use,
 * so a migration could not wait for it.  With `gap`, evictions wait for their victims
 * without d's lock, so the chunk is looked at again afterwards. */
CUresult res_migrate(res_dev_t *d, uint32_t ci, int tier, int swap);
int res_bring_in(res_dev_t *d, uint32_t ci, uint32_t serial, int must, int gap);
CUresult res_set_access(res_dev_t *d, CUdeviceptr va, uint64_t size);
CUresult res_phys_get(res_dev_t *d, int tier, CUmemGenericAllocationHandle *h);
int res_park_drop(res_dev_t *d);

/* ---------------------------------------------------------------- res_flight.c */
/* Asynchronous moves (d locked).  res_prefetch: chunk ci, in host memory,
 * starts coming into GPU memory (its mapping swapped at once, see flight_t); 0 when issued,
 * -EBUSY when an operation that may use it has not completed (it may go later), -1 when it
 * was not issued otherwise (no room, a driver error: the reactive engine brings it in when it
 * is used).  res_evict_async: GPU chunk ci starts going out to host memory after its last
 * use; 0, -EBUSY when operation `serial` collected it (0: none keeps it), else -1 likewise. */
int res_prefetch(res_dev_t *d, uint32_t ci);
/* Is chunk ci's eviction to host memory in flight (d locked)?  res_flight_in_since: its
 * prefetch, added after d->flights_added was `seq`? */
int res_flight_out(const res_dev_t *d, uint32_t ci);
int res_flight_in_since(const res_dev_t *d, uint32_t ci, uint64_t seq);
int res_evict_async(res_dev_t *d, uint32_t ci, uint32_t serial);
/* Operation k, about to be enqueued on stream s (ptds: the _ptsz ABI), uses chunk ci, which
 * has a move in flight: a prefetch is waited for by s (or by the host where s cannot), an
 * eviction is cancelled. */
void res_flight_use(res_dev_t *d, uint32_t ci, CUstream s, int ptds);
/* Chunk ci's move in flight ends now: the host waits for it where it must.  `gone`: the chunk
 * goes out of use (freed) or elsewhere, so an eviction is cancelled rather than completed,
 * once its copy stopped reading the chunk's memory (the host waits). */
void res_flight_settle(res_dev_t *d, uint32_t ci, int gone);
/* Chunk ci is about to be used where its use is not ordered by the flight's events: an
 * eviction of it in flight is cancelled once its copy completed (the host waits), so that it
 * stays mapped where it is; a prefetch runs on (an NVMe move completes or stays: see
 * res_nvme_flight_settle). */
void res_flight_keep(res_dev_t *d, uint32_t ci);
/* The moves in flight of the chunks k reaches end on the host (an eviction cancelled, a
 * prefetch completed): for an operation that may read its sources out of stream order (a
 * batched copy, CU_MEMCPY_SRC_ACCESS_ORDER_ANY or during the call), where a stream wait for
 * the move would not order the read. */
void res_flights_wait_for(res_dev_t *d, const collect_t *k);
/* Moves and memory whose copies completed are finished (d locked; queries only). */
void res_flights_poll(res_dev_t *d);
/* GPU room from the plan's moves away, for the reactive engine (d locked), rather than an
 * eviction of its own of a chunk the plan keeps: GPU memory set aside for a copy that reads
 * it (d->pend) comes back once that copy completed, else the oldest eviction in flight
 * completes (ahead of its copy where it may, else the host waits for the copy).  0 when one
 * did (the room may still be short: an eviction used meanwhile stays), -1 when none is in
 * flight. */
int res_flight_room(res_dev_t *d);
/* Every move in flight ends, the host waiting for them (d locked). */
void res_flights_drain(res_dev_t *d);

/* ---------------------------------------------------------------- res_nccl.c */
/* Depth of the calling thread's calls into NCCL's own functions. */
extern SHIM_TLS int res_nccl_depth;
/* Is the calling thread inside NCCL's own function?  The launches it makes there are part of
 * the NCCL call's operation, timed with it, not operations of the plan of their own. */
static inline int res_nccl_inside(void)
{
    return res_nccl_depth > 0;
}

/* ---------------------------------------------------------------- res_plan.c */
/* What an operation of the plan's kinds is, for its signature (res_plan_op). */
enum { PLAN_LAUNCH, PLAN_COPY, PLAN_MEMSET, PLAN_NCCL };
/* ELIXIR_POLICY=plan (read once at start-up). */
extern int res_policy_plan;
/* Operation k (d locked, collected, not yet reached) is about to be enqueued on stream s:
 * recorded while an iteration is profiled, matched against the plan and its moves issued
 * while one is followed; its chunks with moves in flight are settled (res_flight_use).
 * `kind` and `what` (the kernel, or the copy kind) make its signature; `c` is the copy or
 * memset (NULL for a launch), whose operands say which chunks it reads and writes. */
void res_plan_op(res_dev_t *d, collect_t *k, int kind, uintptr_t what, const shim_copy_t *c,
                 CUstream s, int ptds);
/* Launch k of the profile, or of an iteration timed again under the plan, reached and about
 * to be timed (d locked): how many of its chunks lie away from the GPU as it runs, reached
 * over the link, noted (pol_op_t.away, or res_plan_t.away2; res_plan_profile.c; the fast
 * launch path's chunks are all on the GPU).  Whether to time it: 1, or 0 for a launch timed
 * again with the count away the profile timed it with (its time would tell nothing new). */
int res_plan_away(res_dev_t *d, const collect_t *k);
/* How an operation reaches the chunk [lo, hi) of its arena: enum pol_access (res_plan_nccl);
 * 0 where the plan counts it as not reached (a launch's chunk behind its pointers). */
typedef uint8_t (*res_access_fn_t)(const void *arg, uint64_t lo, uint64_t hi);
/* res_plan_op's form for an NCCL call's chunks on d (k, d locked, reached after it), `what`
 * its kind for the signature, acc(arg, ...) how it reaches each chunk: its chunks with moves
 * in flight are settled after the plan's moves before it were issued, so that s waits for
 * the prefetches it needs by events (the host waits for none of them). */
void res_plan_nccl(res_dev_t *d, collect_t *k, uintptr_t what, res_access_fn_t acc,
                   const void *arg, CUstream s);
/* The fast launch path's form: chunks ids[0, n) of a launch of f on s (of context ctx),
 * which res_plan_detect saw first.  1 where the plan evicts a chunk this launch uses last
 * (the caller then sets d->cover_slot: res_use_cover_flush), else 0. */
int res_plan_fast(res_dev_t *d, CUcontext ctx, CUfunction f, const uint32_t *ids, unsigned n,
                  CUstream s);
/* A launch of f for the process's iteration detector.  The fast launch path calls it before
 * taking the device's lock, so that the detector's lock is the only one the thread holds and
 * keeps its bias (lock.h); res_plan_op, for launches it did not see (collect_t.detected). */
void res_plan_detect(CUfunction f);
/* A host synchronisation or a host <-> device copy: a barrier for the iteration detector. */
void res_plan_barrier(void);
/* The GPU chunk a reactive eviction on d takes while a plan is followed (d locked): the one,
 * of the least recently used, that the plan uses again last and that the operation `serial`
 * (0: none) does not reach; UINT32_MAX without a plan to follow (res_plan_victim.c). */
uint32_t res_plan_victim(res_dev_t *d, uint32_t serial);
/* The host chunk the reactive engine sends to NVMe while a plan is followed (d locked): of the
 * oldest in host memory that may_go accepts and the latest operation (d->serial) does not
 * reach, the one the plan's operations reach again last (where they are, too: in place, or
 * behind a kernel's pointer); UINT32_MAX without a plan to follow or such a chunk (then the
 * oldest that may go goes). */
uint32_t res_plan_host_victim(res_dev_t *d, int (*may_go)(const chunk_t *c));
/* An allocation of the arena on d (d locked): [base, +bytes), and one freed. */
void res_plan_alloc(res_dev_t *d, uint64_t base, uint64_t bytes);
void res_plan_free(res_dev_t *d, uint64_t base);
/* An allocation is about to be placed on d (d locked): while a plan is followed, the moves
 * due before the next operation go now, since they make the room the plan gives what the
 * allocation brings into use (a profiled allocation comes before the operation it is born
 * for); that operation then issues none of them again. */
void res_plan_due(res_dev_t *d);
/* Slab chunk ci (of small allocations) came into use for a new allocation (born = 1), or
 * fell out of use (born = 0), d locked: a life of its own in the profile. */
void res_plan_slab(res_dev_t *d, uint32_t ci, int born);
/* d's plan and profile go (d locked: its context is lost, or the process ends). */
void res_plan_drop(res_dev_t *d);
void res_plan_stats(const res_dev_t *d);

/* ---------------------------------------------------------------- res_foreign.c */
/* Take the allocations that words w[0..n) name in arenas for an operation of device d (its
 * context ctx) before it is enqueued: other devices' (every device's, the chunk holding the
 * word only, for a stream memory operation: `memop`), each made addressable, held (pinned
 * for good when `pinned`: the stream captures) and accessible to d.  NULL when nothing was
 * taken, or out of memory (then logged: the operation may fault). */
void *res_foreign_take(res_dev_t *d, CUcontext ctx, const uint64_t *w, uint32_t n, int memop,
                       int pinned);
/* After that operation was issued on stream s (ptds: the _ptsz ABI) and the driver returned
 * r: what res_foreign_take took is released once an event behind it completes (at once when
 * refused; never when pinned). */
void res_foreign_end(void *held, CUstream s, int ptds, CUresult r);
/* Release the holds of other devices' operations on d's chunks (d locked) whose operations
 * are done; with `wait`, after waiting for them all.  Returns 1 when it released any. */
int res_foreign_drain(res_dev_t *d, int wait);
/* res_foreign_drain on every device set up (no device locked). */
void res_foreign_drain_all(int wait);
/* Chunk ci of d (d locked) held by other devices' operations: the host waits for them, and
 * their holds on it go; the time blocked is added to *blocked. */
void res_foreign_wait(res_dev_t *d, uint32_t ci, double *blocked);
/* Chunks [first, +n) of d (d locked) held by stream memory operations not done: the host
 * waits for them without d's lock (a wait may be released only by another thread's call,
 * which takes it); 1 when it waited (things may have changed), else 0. */
int res_memop_wait_unlocked(res_dev_t *d, uint32_t first, uint32_t n, double *blocked);

/* ---------------------------------------------------------------- res_launch.c */
/* Does stream s (ptds: the _ptsz ABI) capture, or refuse the question? */
int res_stream_capturing(CUstream s, int ptds);
/* Into operation k (d's lock held): chunk ci in use, once; every chunk of the allocation
 * holding p when p lies in a chunk in use.  Out of memory, k counts as unknown. */
void res_collect_chunk(collect_t *k, uint32_t ci);
void res_collect_ptr(collect_t *k, uint64_t p);
/* A new collect serial of d (d locked); never 0, which marks no chunk. */
static SHIM_ALWAYS_INLINE uint32_t res_next_serial(res_dev_t *d)
{
    return ++d->serial ? d->serial : ++d->serial;
}

/* ---------------------------------------------------------------- res_copy.c */
/* What one side of a copy reaches from its first byte: `depth` slices of `rows` rows of
 * `width` bytes, rows `pitch` bytes apart, slices `height` rows apart. */
typedef struct shape {
    uint64_t width, rows, depth, pitch, height;
} shape_t;
/* Copy c's operands: how many it has; operand i (the destination for even i, the source for
 * odd i) as a device address, 0 where it is host memory, an array or none; the shape it
 * reaches from that address, which may run past the allocation holding it; does the copy of
 * operand i move any byte (one that moves none reaches nothing)? */
size_t res_copy_noperands(const shim_copy_t *c);
CUdeviceptr res_copy_operand(const shim_copy_t *c, size_t i);
shape_t res_copy_shape(const shim_copy_t *c, size_t i);
int res_copy_moves(const shim_copy_t *c, size_t i);

/* ---------------------------------------------------------------- res_fence.c */
/* Graph launch k (or a launch whose arguments the shim cannot read) on k->d, locked, with
 * more than one arena set up: begin takes every other device's lock as well, in device order,
 * and brings back and pins their chunks where evicted ones are unmapped; end, after the
 * driver returned r for it on stream s, gives each of them the launch as its fence (when the
 * driver took it and it was not captured) and drops their locks. */
SHIM_COLD void res_fence_others_begin(collect_t *k);
SHIM_COLD void res_fence_others_end(collect_t *k, CUresult r, CUstream s, int ptds);

/* ---------------------------------------------------------------- res_use.c */
/* d's context, read without d's lock (NULL while the arena has none: res_home). */
static inline CUcontext res_dev_ctx(res_dev_t *d)
{
    return atomic_load_explicit((_Atomic(CUcontext) *)&d->ctx, memory_order_relaxed);
}
/* d, whose context was destroyed, adopts ctx (current, a context of d's device) for its own
 * streams and events (d not locked); nothing changes when d has a context. */
void res_home(res_dev_t *d, CUcontext ctx);
/* d's context, or, when another thread's cuCtxDestroy took it since the caller found it, the
 * thread's current context when it is one of d's device, adopted (d locked); 0, or -1 when
 * d has none. */
int res_home_current(res_dev_t *d);
void res_use_clear(res_dev_t *d, use_t *u);
void res_wait_idle(res_dev_t *d, chunk_t *c, double *blocked);
/* An event recorded now on the stream of slot d->cover_slot - 1, covering its operations so
 * far, where an operation the plan evicts a chunk after was the last enqueued there (d
 * locked): called before the next operation enqueues anything, so that the eviction waits
 * for that operation alone, not for all the host enqueues by the time it is issued (cover()
 * records its events lazily).  Then d->cover_slot is 0. */
void res_use_cover_flush(res_dev_t *d);
/* The operation just enqueued on stream slot `slot` (or about to be, under d's lock held
 * until the driver took it: the fast launch path) gets that event (d locked); another slot's
 * still due is recorded first. */
void res_use_cover_due(res_dev_t *d, int slot);
/* Chunk ci of d (d locked) is about to move or be freed: while its last use or the fence may
 * still run, the host waits for them with d's lock dropped (DESIGN.md invariant 7), the chunk
 * held meanwhile, and the time is added to *blocked.  0: nothing was running; 1: the host
 * waited, and the chunk is as it was, its use and the fence done and forgotten; -1: it
 * changed meanwhile (used, held, pinned, moved or freed): the caller looks again.  A chunk
 * that another thread waits for so already gives 0 (one waiter owns the mark, so a cleared
 * mark means the chunk was freed).  Only for callers that hold no other lock and are inside
 * no arena call. */
int res_idle_unlocked(res_dev_t *d, uint32_t ci, double *blocked);
/* Is nothing in flight using chunk c (d locked: its last use and the fence done, queried
 * without a wait, and it is not held)?  Then its use is forgotten. */
int res_idle_now(res_dev_t *d, chunk_t *c);
/* res_idle_now for a chunk whose last use and the fence were `use` and `fence` when a copy
 * was ordered after them (res_stream_after_use), the copy now complete: while they still are
 * the chunk's last use and the fence (or were forgotten as done), they are done, though the
 * event that covers them now may be a later one (a stream slot keeps only its latest).  A use
 * since then, of the chunk or of unknown memory, may have written what the copy read: 0. */
int res_idle_since(res_dev_t *d, chunk_t *c, const use_saw_t *use, const use_saw_t *fence);
/* Use u, saved for res_idle_since. */
use_saw_t res_use_saw(const use_t *u);
/* Stream s (of d's context) waits for chunk c's last use and the fence, by events: 0, or -1
 * when it cannot (c is held by an operation whose use is not recorded, or a driver error). */
int res_stream_after_use(res_dev_t *d, CUstream s, chunk_t *c);
void res_finish(res_dev_t *d, collect_t *k, CUstream s, int ptds);
/* An event recorded now on stream s (an application stream of context ctx, ptds: the _ptsz
 * ABI), or NULL. */
use_event_t *res_record(res_dev_t *d, CUstream s, int ptds, CUcontext ctx);
/* An event recorded now on the shim's own stream s (of d's context), after its copies; where
 * the driver records none, the host waits for s instead (or, failing that, for the context)
 * and NULL says that what s was given is done. */
use_event_t *res_record_own(res_dev_t *d, CUstream s);
/* The context of stream s, whose events it records: an ordinary stream's own, the current
 * one for a default stream; NULL when the driver does not say. */
CUcontext res_stream_ctx(CUstream s);
int res_event_done(use_event_t *e);
void res_event_wait(use_event_t *e, double *blocked);
void res_event_put(res_dev_t *d, use_event_t *e);
/* One more reference to e (NULL: none), which keeps it while d's lock is dropped. */
use_event_t *res_event_ref(use_event_t *e);
/* The host waits for events ev[0, n) (NULL entries skipped; the caller holds a reference to
 * each) with d's lock dropped meanwhile (d locked on entry and on return, no other lock
 * held, outside arena calls); the time blocked is added to *blocked. */
void res_events_wait_unlocked(res_dev_t *d, use_event_t *const *ev, size_t n, double *blocked);

#endif
