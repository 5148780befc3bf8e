/* SPDX-License-Identifier: MIT */
/*
 * shim.h - libelixir.so's internal header.
 *
 * What the shim's files share, grouped under the file that defines it: the hook enum and the
 * typed declarations generated from hooks.h, start-up and the real driver (init.c), the
 * wrappers' entry macro, the operation descriptors the copy and launch wrappers fill in
 * (the interface residency and tracing will consume), options, log and statistics.
 *
 * How a wrapper reads (see wrap_*.c):
 *
 *     SHIM_EXPORT CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr)
 *     {
 *         SHIM_ENTER(cuMemFree_v2, real);      // lazy start-up, call counted, real pointer
 *         ...                                  // where arena/residency/tracing plug in
 *         return real(dptr);                   // the driver's result, unchanged
 *     }
 */
#ifndef SHIM_H
#define SHIM_H

/* Use the driver's exported names literally (cuMemAlloc_v2, cuMemcpy_ptds, the legacy
 * cuCtxDestroy): without this cuda.h renames them to the current default variants. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "hooks.h"

#define SHIM_EXPORT __attribute__((visibility("default")))
#define SHIM_LIKELY(x) __builtin_expect(!!(x), 1)
#define SHIM_UNLIKELY(x) __builtin_expect(!!(x), 0)
/* For the per-launch path: a helper inlined into each caller, and the rare branch kept out
 * of line (so that the common one saves and restores fewer registers). */
#define SHIM_ALWAYS_INLINE inline __attribute__((always_inline))
#define SHIM_COLD __attribute__((cold, noinline))
#define SHIM_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
/* Code that may run before a sanitizer runtime has started (the dlsym fast path: sanitizer
 * runtimes look up their interceptors' targets with dlsym while they initialise). */
#define SHIM_NO_SANITIZE __attribute__((no_sanitize("address", "undefined", "thread")))
/* Thread-local state that must not allocate on first use (static TLS block). */
#define SHIM_TLS __thread __attribute__((tls_model("initial-exec")))

/* ------------------------------------------------------------ generated from hooks.h */

typedef enum shim_hook {
#define X(sym, base, ver, pt) SHIM_HOOK_##sym,
    SHIM_HOOKS(X)
#undef X
    SHIM_NHOOKS
} shim_hook_t;

typedef enum shim_call {
#define X(sym, base, ver, pt) SHIM_CALL_##sym,
    SHIM_DRIVER_CALLS(X)
#undef X
    SHIM_NCALLS
} shim_call_t;

/* shim_pfn_<symbol>_t: the variant's prototype, from cudaTypedefs.h. */
#define X(sym, base, ver, pt) typedef PFN_##base##_v##ver##pt shim_pfn_##sym##_t;
SHIM_HOOKS(X)
SHIM_DRIVER_CALLS(X)
#undef X

/* Every wrapper declared with the driver's prototype and exported: a wrapper whose
 * parameters differ from the PFN typedef does not compile. */
#define X(sym, base, ver, pt) SHIM_EXPORT __typeof__(*(shim_pfn_##sym##_t)0) sym;
SHIM_HOOKS(X)
#undef X

/* ------------------------------------------------------------ hooks.c */

extern const char *const shim_hook_names[SHIM_NHOOKS];
extern const char *const shim_call_names[SHIM_NCALLS];
extern void *const shim_hook_wrappers[SHIM_NHOOKS];   /* our wrapper of each hook */
extern const unsigned char shim_hook_per_thread[SHIM_NHOOKS]; /* _ptsz/_ptds variants */

/* The hook exported as `name`, or -1.  Allocation-free, uninstrumented: safe before
 * start-up and before a sanitizer runtime has started. */
int shim_hook_find(const char *name);

/* strcmp(a, b) == 0 without calling strcmp, which a sanitizer intercepts. */
SHIM_NO_SANITIZE static inline int shim_same_name(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

/* ------------------------------------------------------------ wrap_nccl.c */

/* The NCCL entry point (hooks_nccl.h) exported as `name`, or -1; like shim_hook_find. */
int shim_nccl_find(const char *name);
/* The dlsym override's answer for NCCL entry point h: our wrapper of what the real dlsym
 * finds (remembered as the real function), or that itself with ELIXIR_DISABLE. */
void *shim_nccl_lookup(void *(*rdlsym)(void *, const char *), void *handle, const char *name,
                       int h);
/* Calls of NCCL entry point h so far (-1: no such entry point); the calls in the statistics;
 * zero them (a forked child). */
long long shim_nccl_calls(int h);
void shim_nccl_stats_print(void);
void shim_nccl_stats_reset(void);

/* ------------------------------------------------------------ init.c */

typedef struct shim_proc_entry {
    const void *real;       /* the driver's function */
    unsigned hook;          /* our wrapper of it: shim_hook_wrappers[hook] */
} shim_proc_entry_t;

/* The real driver, resolved once and never changed after it is published. */
typedef struct shim_driver {
    int ok;                         /* 0: no driver could be opened; every wrapper fails */
    void *handle;                   /* libcuda.so.1 */
    void *fn[SHIM_NHOOKS];          /* the driver's hooked entry points, NULL where missing */
    void *call[SHIM_NCALLS];        /* functions the shim calls itself */
    uint64_t (*sim_clock)(void);    /* the simulator's virtual clock (ns); NULL on a real driver */
    unsigned nmap;                  /* entries of map; 0 with ELIXIR_DISABLE */
    shim_proc_entry_t map[SHIM_NHOOKS]; /* real -> hook, sorted by real (procaddr.c) */
} shim_driver_t;

extern shim_driver_t *_Atomic shim_drv;

/* Start the shim (options, log, driver) once; returns the driver, or NULL when called
 * again from inside start-up on the same thread. */
const shim_driver_t *shim_init(void);
void *shim_enter_slow(shim_hook_t h);
/* The result of a hooked call whose driver function is missing (logged once per hook). */
CUresult shim_missing(shim_hook_t h);
/* ELIXIR_DISABLE, readable at any time, before start-up included (no allocation). */
int shim_disabled(void);
/* Does `addr` lie inside libelixir.so? */
int shim_is_own(const void *addr);

/* The kinds of launch, as the statistics count them. */
#define SHIM_LAUNCH_KINDS(X)                                                                   \
    X(KERNEL, "kernel") X(KERNEL_EX, "kernel-ex") X(COOPERATIVE, "cooperative")               \
    X(MULTI_DEVICE, "multi-device") X(LEGACY, "legacy") X(GRAPH, "graph")

typedef enum shim_launch_kind {
#define X(e, name) SHIM_LAUNCH_##e,
    SHIM_LAUNCH_KINDS(X)
#undef X
    SHIM_NLAUNCH_KINDS
} shim_launch_kind_t;

/* stats.c: the calling thread's call count per hook and launch count per kind.  Only the
 * owner writes them (a load and a store, no locked instruction); once it has joined the list
 * of threads (state 1) other threads read them to sum a hook's calls (shim_stat_calls_of) or
 * the launches, and at its exit they are added to the totals (state -1: later calls count
 * there, as do calls that found no room on the list). */
typedef struct shim_calls {
    _Atomic unsigned long long n[SHIM_NHOOKS];
    _Atomic unsigned long long launches[SHIM_NLAUNCH_KINDS];
    int state;                      /* 0: not joined yet; 1: on the list; -1: counts globally */
} shim_calls_t;

extern SHIM_TLS shim_calls_t shim_stat_calls;
/* A call of h by a thread whose state is not 1 (joins the list first, when it may). */
void shim_stat_call_slow(shim_hook_t h);
/* Calls of hook h so far, by every thread. */
unsigned long long shim_stat_calls_of(shim_hook_t h);

/* Count a call of hook h and return its real function (NULL when the driver has none). */
static inline void *shim_enter(shim_hook_t h)
{
    shim_driver_t *d = atomic_load_explicit(&shim_drv, memory_order_acquire);
    shim_calls_t *c = &shim_stat_calls;

    if (SHIM_LIKELY(c->state > 0))
        atomic_store_explicit(&c->n[h], atomic_load_explicit(&c->n[h], memory_order_relaxed) + 1,
                              memory_order_relaxed);
    else
        shim_stat_call_slow(h);
    return SHIM_LIKELY(d) ? d->fn[h] : shim_enter_slow(h);
}

/* First statement of every wrapper: declares `var`, the driver's `sym`, starting the shim on
 * first use; returns from the wrapper when the driver has no such function. */
#define SHIM_ENTER(sym, var)                                                                   \
    shim_pfn_##sym##_t var = (shim_pfn_##sym##_t)shim_enter(SHIM_HOOK_##sym);               \
    if (!var)                                                                                  \
        return shim_missing(SHIM_HOOK_##sym)

/* The driver's function c of SHIM_DRIVER_CALLS, for the shim's own use; NULL when missing
 * or before start-up. */
static inline void *shim_driver_fn(shim_call_t c)
{
    const shim_driver_t *d = atomic_load_explicit(&shim_drv, memory_order_acquire);

    return d ? d->call[c] : NULL;
}

#define SHIM_DRIVER_CALL(sym) ((shim_pfn_##sym##_t)shim_driver_fn(SHIM_CALL_##sym))

/* ------------------------------------------------------------ dlsym.c */

/* The C library's dlsym, found with dlvsym; NULL if it cannot be found. */
void *(*shim_real_dlsym(void))(void *, const char *);

/* ------------------------------------------------------------ procaddr.c */

/* Fill d->map from d->fn (every hooked name resolved in the real driver). */
void shim_proc_map_build(shim_driver_t *d);
/* The wrapper hook of a driver function pointer, or -1 when we do not hook it. */
int shim_proc_find(const shim_driver_t *d, const void *real);

/* ------------------------------------------------------------ wrap_copy.c, wrap_launch.c */

/* Statistics kinds; X(ENUM, name). */
#define SHIM_COPY_KINDS(X)                                                                     \
    X(UNIFIED, "unified") X(HTOD, "htod") X(DTOH, "dtoh") X(DTOD, "dtod") X(PEER, "peer")     \
    X(ARRAY, "array") X(2D, "2d") X(3D, "3d") X(3D_PEER, "3d-peer") X(BATCH, "batch")          \
    X(MEMSET, "memset")

typedef enum shim_copy_kind {
#define X(e, name) SHIM_COPY_##e,
    SHIM_COPY_KINDS(X)
#undef X
    SHIM_NCOPY_KINDS
} shim_copy_kind_t;

/*
 * One copy or memset as the wrapper saw it: what residency must make accessible before the
 * driver is called and what the tracer records after.  Linear operands are in dst/src with
 * `bytes`; structured ones (2D, 3D, batches) point at the application's descriptor.
 */
typedef struct shim_copy {
    shim_hook_t hook;
    shim_copy_kind_t kind;
    CUdeviceptr dst, src;       /* device (or unified) operands; 0 where host or array */
    size_t bytes;               /* bytes written at dst */
    CUstream stream;            /* the stream; 0 for synchronous calls */
    const void *desc;           /* CUDA_MEMCPY2D, _3D, _3D_PEER, or CUDA_MEMCPY3D_BATCH_OP[] */
    const CUdeviceptr *dsts, *srcs; /* cuMemcpyBatchAsync: count destinations and sources */
    const size_t *sizes;        /* cuMemcpyBatchAsync: count sizes */
    size_t count;               /* entries of a batch */
    unsigned value, elem;       /* memsets: the value and its size (1, 2 or 4 bytes) */
    size_t pitch, rows;         /* 2D memsets: the pitch and rows (bytes: to the last's end) */
    void *res;                  /* residency's state between copy_begin and copy_end */
    uint64_t op;                /* the trace's operation id; 0: not recorded */
} shim_copy_t;

/* One kernel launch or graph launch, for residency and the tracer. */
typedef struct shim_launch {
    shim_hook_t hook;
    shim_launch_kind_t kind;
    CUfunction f;               /* kernel (or CUkernel cast to CUfunction); NULL for graphs */
    void **params;              /* kernelParams */
    void **extra;               /* extra (CU_LAUNCH_PARAM_BUFFER_POINTER form) */
    CUstream stream;
    const void *desc;           /* CUlaunchConfig, CUDA_LAUNCH_PARAMS[], or the CUgraphExec */
    void *res;                  /* residency's state between launch_begin and launch_end */
    uint64_t op;                /* the trace's operation id; 0: not recorded */
} shim_launch_t;

/* ------------------------------------------------------------ res.c */

/*
 * Residency.  Each res_* entry point that can serve a call returns 1 and stores the call's
 * result in *r; it returns 0 when the call is not the shim's to serve (shim disabled, no
 * context, memory outside every arena), and the wrapper passes it to the driver.
 */
int res_alloc(CUdeviceptr *dptr, size_t bytes, CUresult *r);
/* cuMemAllocAsync on stream s: served from the arena of s's device while the device's current
 * pool is its default one; otherwise 0, with the application's own pool in *own (or NULL). */
int res_alloc_async(CUdeviceptr *dptr, size_t bytes, CUstream s, CUmemoryPool *own,
                    CUresult *r);
int res_free(CUdeviceptr dptr, CUresult *r);
/* cuMemFreeAsync: the range goes back once stream s (ptds: the _ptsz ABI) reaches the free. */
int res_free_async(CUdeviceptr dptr, CUstream s, int ptds, CUresult *r);
int res_owns(CUdeviceptr p);
/* cuIpcGetMemHandle: arena memory is pinned resident (1); res_ipc_failed warns once when the
 * driver refuses it (legacy IPC does not export VMM memory). */
int res_ipc_pin(CUdeviceptr p);
void res_ipc_failed(CUdeviceptr p, CUresult r);
/* The application's own device memory, charged to the GPU budget (arena chunks are evicted
 * to make room), never moved: cuMemCreate/cuMemRelease call `real` themselves; its pools are
 * charged around cuMemAllocFromPoolAsync and re-read after a trim, forgotten at a destroy. */
CUresult res_vmm_create(shim_pfn_cuMemCreate_t real, CUmemGenericAllocationHandle *handle,
                        size_t size, const CUmemAllocationProp *prop, unsigned long long flags);
CUresult res_vmm_release(shim_pfn_cuMemRelease_t real, CUmemGenericAllocationHandle h);
void res_vmm_retained(CUmemGenericAllocationHandle h);
void res_pool_alloc_begin(CUmemoryPool pool, size_t bytes);
void res_pool_alloc_end(CUmemoryPool pool, CUresult r, CUdeviceptr p);
void res_pool_changed(CUmemoryPool pool, int destroy);
int res_meminfo(size_t *free_b, size_t *total, CUresult *r);
int res_pointer_attribute(void *data, CUpointer_attribute a, CUdeviceptr p, CUresult *r);
/* 1 when p lies in an allocation of an arena (what the application allocated), else 0. */
int res_allocated(CUdeviceptr p);
int res_address_range(CUdeviceptr *base, size_t *size, CUdeviceptr p, CUresult *r);
/* Around the driver call of a launch or copy: make what it reaches resident (begin), and
 * record its use (end).  begin holds the device's residency lock until end.  begin returns
 * CUDA_SUCCESS, or CUDA_ERROR_OUT_OF_MEMORY where evicted chunks are unmapped and those the
 * operation reaches cannot all come back into GPU memory: the wrapper then passes that to
 * end and returns it without calling the driver (which would enqueue work that faults, and
 * lose the context). */
CUresult res_launch_begin(shim_launch_t *l);
void res_launch_end(shim_launch_t *l, CUresult r);
/*
 * The usual launch without the general machinery: kernel f (not NULL) with kernelParams
 * `params` (not NULL) and no `extra`, on stream s (ptds: the _ptsz ABI); `traced`: recorded
 * (its argument words go to the tracer, as res_launch_begin gives them).  When every chunk
 * its arguments reach is in GPU memory and nothing has to move or wait (res_launch.c,
 * fast_collect), res_launch_fast records their use by the launch and returns the device's
 * residency lock, held: the wrapper releases it (shim_unlock) once the driver returned.  A
 * use recorded for a launch the driver then refused only makes a later eviction of those
 * chunks wait for the stream's work up to there.  NULL: nothing was taken, and the launch
 * goes through res_launch_begin.
 */
struct shim_lock *res_launch_fast(CUfunction f, void **params, CUstream s, int ptds,
                                  int traced);
/* While res_ptime_fast_on is not 0, some device times a fast launch of the iteration the
 * plan profiles (res_plan_time.c): the wrapper calls res_plan_fast_done(lock, r) once the
 * driver returned r for its launch, before it releases the lock res_launch_fast returned. */
extern _Atomic int res_ptime_fast_on;
void res_plan_fast_done(struct shim_lock *fast, CUresult r);
CUresult res_copy_begin(shim_copy_t *c);
void res_copy_end(shim_copy_t *c, CUresult r);
/* Around a stream memory operation on stream s (ptds: the _ptsz ABI) naming the words at
 * p[0, n) (res_launch.c): begin makes the chunks holding those in an arena addressable and
 * holds them; end, after the driver returned r, keeps them held until the operation is done
 * on its stream (released at once when r is an error).  begin returns NULL when it holds
 * nothing. */
void *res_memop_begin(CUstream s, int ptds, const CUdeviceptr *p, uint32_t n);
void res_memop_end(void *held, CUstream s, int ptds, CUresult r);
/* An NCCL call as residency sees it (res_nccl.c). */
typedef struct res_nccl_op {
    const char *name;           /* its kind ("allReduce", ...): one string per kind */
    uint64_t ptr[2], bytes[2];  /* its send and receive ranges (ptr 0: none; bytes 0: the
                                 * whole allocation) */
    int recv_whole;             /* it writes its whole receive range on every rank */
    int device;                 /* its communicator's device (-1: unknown), whose context NCCL
                                 * makes current to enqueue on a default stream */
} res_nccl_op_t;
/* How an NCCL call went (res_nccl_end): failed (its work perhaps enqueued before the error);
 * its work enqueued when it returned; accepted, its work perhaps enqueued later
 * (ncclInProgress); nothing run (ncclGroupSimulateEnd). */
enum { RES_NCCL_FAILED, RES_NCCL_DONE, RES_NCCL_PENDING, RES_NCCL_NOTHING };
/* Around an NCCL call on stream s: begin makes the chunks of its ranges usable and holds them
 * (and, with the plan, makes the call an operation of the iteration); end, once the call (or
 * its group's outermost ncclGroupEnd) returned, records their use on the stream unless `how`
 * is RES_NCCL_NOTHING and releases them; res_nccl_group_end ends a group's calls h[0, n), in
 * the order they were made.  begin returns NULL when nothing is held. */
typedef struct res_nccl res_nccl_t;
res_nccl_t *res_nccl_begin(const res_nccl_op_t *op, CUstream s);
void res_nccl_end(res_nccl_t *h, int how);
/* A call NCCL answered ncclInProgress: its device time is not taken (its work is enqueued
 * later); h stays held until res_nccl_end(h, RES_NCCL_DONE), once NCCL enqueued it. */
void res_nccl_untime(res_nccl_t *h);
void res_nccl_group_end(res_nccl_t *const *h, size_t n, int how);
/* Around a call into NCCL's own function: 1 before it, 0 after it returned. */
void res_nccl_library(int enter);
/* Before the driver destroys stream s, or a context (or resets a primary context): uses
 * recorded lazily on their streams get their event while the streams exist.  ctx: the
 * context cuCtxDestroy destroys, or the primary context a reset or release may destroy (NULL
 * when none is known); an arena set up in it gives up its own streams and events there
 * (home_lost in res_use.c).  `frees`: ctx certainly goes (cuCtxDestroy, a reset), and the
 * memory allocated in it with it (res_free_ctx). */
void res_stream_destroy(CUstream s);
void res_ctx_destroy(CUcontext ctx, int frees);
/* After a primary context release destroyed ctx, which res_ctx_destroy(ctx, 0) prepared for:
 * the memory allocated in it goes. */
void res_ctx_freed(CUcontext ctx);
/* After a module or library unload, a context destroyed or reset: cached kernel parameter
 * layouts and context -> device pairs may be stale. */
void res_code_unload(void);
/* After a host synchronisation succeeded: other devices' operations that hold chunks and are
 * done release them (res_foreign.c). */
void res_host_synced(void);
/* A host synchronisation: a barrier for the plan's iteration detector (res_plan.c). */
void res_plan_barrier(void);
/* The program's host synchronisation succeeded: of stream s (cuStreamSynchronize), or, with
 * `all`, of everything in context ctx (cuCtxSynchronize; NULL: the current one), which the
 * profiles being recorded note for the cost model (pol_sync_t in policy/policy.h). */
void res_plan_synced(CUcontext ctx, CUstream s, int all);
/* After the driver destroyed a stream: stream -> device pairs may be stale (res_stream_destroy
 * retires them before the call too, so none made meanwhile outlives it). */
void res_stream_gone(void);
/* After the driver enabled (on) or disabled the current context's access to context peer's
 * memory: the same for the current device on the arena of the peer's device. */
void res_peer_access(CUcontext peer, int on);
/* Around a stream capture: begin before the driver begins one, end once the driver reports
 * that one ended (or failed to begin). */
void res_capture_begin(void);
void res_capture_end(void);
/* 1 while a stream capture may be open in the process (between res_capture_begin and _end):
 * then an API call the capture mode may forbid (an event query or synchronisation, a stream
 * created) must wait. */
int res_capture_open(void);
/* ELIXIR_STATS lines of every device set up: lead = 1, what matters first (migrations each
 * way, evictions, the host's time blocked on migrations and its share of the run_s seconds
 * the process has run, or none when run_s <= 0; budgets and peaks); lead = 0, the rest. */
void res_stats_print(double run_s, int lead);
void res_after_fork(void);

/* ------------------------------------------------------------------------ trace*.c */

/*
 * Recording into ELIXIR_TRACE (trace.c and the trace_*.c files beside it; device times of the
 * profiled iterations in trace_time.c).  shim_trace_on is 1 while a trace is being recorded: the wrappers test it
 * once (SHIM_TRACING) and only then take the traced path, which calls, in this order,
 * shim_trace_launch_begin (or _copy_begin), residency's begin, shim_trace_issue, the driver,
 * shim_trace_launch_end (or _copy_end), residency's end.  Every other function here may be
 * called at any time and does nothing unless a trace is being recorded.
 */
extern _Atomic int shim_trace_on;
#define SHIM_TRACING()                                                                         \
    __builtin_expect(atomic_load_explicit(&shim_trace_on, memory_order_relaxed), 0)

/* Tiers and eviction reasons as the trace writes them (trc_tier_t, TRC_EVICT_*). */
enum { SHIM_TIER_GPU, SHIM_TIER_PEER, SHIM_TIER_HOST, SHIM_TIER_NVME };
enum { SHIM_EVICT_FOR_LAUNCH = 1, SHIM_EVICT_FOR_COPY, SHIM_EVICT_FOR_ALLOC, SHIM_EVICT_PLAN };

/* init.c: with the driver's table, before it is published (once per process; nothing
 * unless ELIXIR_TRACE is set): 0, or -1 where the trace cannot be recorded (reported: the
 * caller stops the program); at exit (registered with atexit by start); in a forked child
 * (which records nothing). */
int shim_trace_start(const shim_driver_t *d);
void shim_trace_stop(void);
void shim_trace_after_fork(void);
/* The wrappers' traced path (see above).  begin gives the operation its id (l->op, c->op; 0
 * when it is not recorded); issue starts its device timing, end records it. */
void shim_trace_launch_begin(shim_launch_t *l);
void shim_trace_copy_begin(shim_copy_t *c);
/* 1 while the profiled iterations run (their operations are timed). */
extern _Atomic int shim_trace_timed;
void shim_trace_issue_timed(uint64_t op, CUstream s, shim_hook_t h);
static inline void shim_trace_issue(uint64_t op, CUstream s, shim_hook_t h)
{
    if (__builtin_expect(atomic_load_explicit(&shim_trace_timed, memory_order_relaxed), 0))
        shim_trace_issue_timed(op, s, h);
}
void shim_trace_launch_end(const shim_launch_t *l, CUresult r);
void shim_trace_copy_end(const shim_copy_t *c, CUresult r);
/* res_launch.c, for a recorded launch it collects: where its argument words may point (the
 * arena [lo, lo + span)), and base_of(ctx, word), the base of the allocation holding such a
 * word (0: none). */
typedef struct shim_trace_arena {
    uint64_t lo, span;
    uint64_t (*base_of)(void *ctx, uint64_t word);
    void *ctx;
} shim_trace_arena_t;
/* res_launch.c, between begin and end of a recorded launch: a batch of n argument words
 * (words; each in a's arena names an allocation), when there are more than one batch holds.
 * The answers are cached per thread until the next allocation or free, so base_of is rarely
 * asked. */
void shim_trace_words(const uint64_t *words, size_t n, const shim_trace_arena_t *a);
/* res_launch.c, once per recorded launch it collected, after its argument words: the
 * current context and its device (just looked up by residency, so that the launch's record
 * need not ask again) and the last batch of argument words (n may be 0), as for
 * shim_trace_words.  One call where three would do, since every launch makes it. */
void shim_trace_launch_args(CUcontext ctx, int device, const uint64_t *words, size_t n,
                            const shim_trace_arena_t *a);
/* res_launch.c, for a recorded copy or memset it collects: the context and device it concerns
 * (its stream's), as shim_trace_launch_args gives them for a launch. */
void shim_trace_op_ctx(CUcontext ctx, int device);
/* res_launch.c, after shim_trace_launch_args: n argument words that point into other
 * devices' arenas, each in a's span naming an allocation (never kept in the per-thread
 * memos of argument lists: they are not the launch's list). */
void shim_trace_peer_words(const uint64_t *words, size_t n, const shim_trace_arena_t *a);
/* A host synchronisation that succeeded, of stream s as hook h names it (SHIM_SYNC_STREAM:
 * cuStreamSynchronize), of context ctx (SHIM_SYNC_CONTEXT: cuCtxSynchronize; NULL: the current
 * one) or of an event (SHIM_SYNC_EVENT): a hint for the iteration detector, and a SYNC
 * record. */
enum { SHIM_SYNC_STREAM = 1, SHIM_SYNC_CONTEXT = 2, SHIM_SYNC_EVENT = 3 };
void shim_trace_sync(int kind, CUstream s, CUcontext ctx, shim_hook_t h);
/* Before the driver destroys stream s: its number is given up, so that a later stream that
 * gets its handle gets a number of its own; returns it for shim_trace_stream_kept, which
 * gives it back when the driver refused to destroy s. */
uint64_t shim_trace_stream_destroy(CUstream s);
void shim_trace_stream_kept(CUstream s, uint64_t no);
/* Before the driver may destroy context ctx (a created context, or device dev's primary
 * context), or when ctx is NULL every context of device dev: the device times of their
 * operations still pending are read while their events exist. */
void shim_trace_ctx_destroy(CUcontext ctx, int dev);

/* Residency's events.  alloc returns the allocation's id (0 when not recording); free takes
 * the base given to alloc.  Times are shim_trace_now(); tiers SHIM_TIER_*; chunk is the
 * chunk's index in its device's arena; cause the operation that needed the move
 * (shim_trace_current_op(), 0 for none).  eviction's alloc_base is the base of the
 * allocation owning the chunk, 0 for a chunk shared by small allocations; its reason is a
 * SHIM_EVICT_*, or 0 to take it from what the thread is doing (a launch, a copy or memset,
 * else an allocation).  An allocation's device is SHIM_DEVICE_HOST for pinned host memory
 * (cuMemHostAlloc, cuMemAllocHost).  memory gives the bytes of device's arena resident in
 * each tier, after every change. */
#define SHIM_DEVICE_HOST (-1)       /* the device of pinned host memory (shim_trace_alloc) */
uint64_t shim_trace_alloc(int device, uint64_t base, uint64_t size);
/* Around shim_trace_alloc, when the program may be a Python interpreter: begin reads the
 * calling thread's Python frames (tracer/pyframes.h), which the allocation's call site then
 * carries, and end forgets them.  begin may take the GIL and run Python code: it must be
 * called before any lock of the shim is taken.  Pairs nest (the outer pair's frames). */
void shim_trace_site_begin(void);
void shim_trace_site_end(void);
void shim_trace_free(uint64_t base);
void shim_trace_migration(int device, uint64_t chunk, uint64_t bytes, int from, int to,
                          uint64_t start, uint64_t end, uint64_t cause);
void shim_trace_eviction(int device, uint64_t chunk, uint64_t alloc_base, uint64_t bytes,
                         int from, int to, unsigned reason);
void shim_trace_memory(int device, const uint64_t bytes[4]);
/* The planned policy at work (trace_plan.c; format 1.5, the guard's verdict 1.6).
 * planned_move: a move the plan issued (res_flight.c), recorded as a MIGRATION flagged
 * planned once its copy is seen complete: issued and done are the trace's clock when its copy
 * was issued and when the shim saw it complete, move the id from shim_trace_move_begin.
 * mapping: one remap (unmap, map, set access of one chunk) the shim made for a move, the
 * plan's (planned) or the reactive engine's, that took ns on the trace's clock (the
 * simulator's virtual clock, which charges VMM calls as the driver takes them); summed per
 * device into MAPPING records at each iteration mark and at exit.  plan: a plan made
 * (res_plan.c); follow: one iteration that followed it, as the next begins; guard: the
 * guard's verdict on a plan (res_plan_guard.c). */
void shim_trace_planned_move(int device, uint64_t chunk, uint64_t bytes, int from, int to,
                             uint64_t issued, uint64_t done, uint64_t move);
/* Around the copy of a planned move on stream s of context ctx: begin returns a handle for
 * end (NULL: not timed) and the move's id in *move (0: none), which planned_move is given;
 * the copy's device times come as a TIMING record naming it. */
void *shim_trace_move_begin(CUcontext ctx, CUstream s, uint64_t *move);
void shim_trace_move_end(void *handle, CUresult r, CUstream s);
void shim_trace_mapping(int device, int planned, uint64_t ns);
typedef struct shim_trace_plan {
    uint64_t plan, iteration, ops, buffers, moves;
    uint64_t predicted_ns, bound_ns, compute_ns, bytes_in, bytes_out, planning_ns;
    uint64_t again;                 /* the plan predicted again (the same moves), or 0 */
} shim_trace_plan_t;
void shim_trace_plan(int device, const shim_trace_plan_t *p);
typedef struct shim_trace_follow {
    uint64_t plan, iteration, foreseen, unforeseen, missed, moves, chunks, left;
    int partial;                        /* the iteration in progress (trc_follow_t.partial) */
} shim_trace_follow_t;
void shim_trace_follow(int device, const shim_trace_follow_t *f);
/* The guard's verdict on plan `plan` (res_plan_guard.c), as iteration `iteration` begins. */
typedef struct shim_trace_guard {
    uint64_t plan, iteration, planned_ns, reactive_ns, limit;
    int dropped;
} shim_trace_guard_t;
void shim_trace_guard(int device, const shim_trace_guard_t *g);
/* res_plan.c, as the trace closes (while still recording): the FOLLOW record of the
 * iteration in progress on each device that follows a plan. */
void res_plan_trace_end(void);
/* Device `device`'s budgets from now on: its GPU budget, and the process's host budget. */
void shim_trace_budget(int device, uint64_t gpu, uint64_t host);
/* An NCCL operation NCCL accepted (wrap_nccl.c): its name ("allReduce", ...), buffers, the
 * larger of its send and receive sizes, communicator, root or peer (-1: none), stream and
 * device (-1: not known).  Recorded at level all, like launches. */
void shim_trace_nccl(const char *op, uint64_t send, uint64_t recv, uint64_t bytes, uint64_t comm,
                     int peer, CUstream s, int device);
/* The trace's clock (ns; CUPTI's or the simulator's virtual clock when in use); the id of
 * the operation the calling thread is preparing (between begin and end), else 0. */
uint64_t shim_trace_now(void);
uint64_t shim_trace_current_op(void);

/* For the tracer: bumped when code or contexts go away (res.c's res_code_gen).  Inline: the
 * tracer reads it on every launch. */
extern _Atomic unsigned res_code_gen;
static inline unsigned res_code_generation(void)
{
    return atomic_load_explicit(&res_code_gen, memory_order_acquire);
}

/* ------------------------------------------------------------ options.c */

/* X(NAME, TYPE, default, description): the environment variable is ELIXIR_<NAME>. */
#define SHIM_OPTIONS(X)                                                                        \
    X(DISABLE, BOOL, "0",                                                                      \
      "1: pure pass-through; dlsym and cuGetProcAddress hand out the driver's own pointers")   \
    X(VERBOSE, BOOL, "0", "1: print every option at start-up")                                 \
    X(LOG, LEVEL, "warn", "log level: error, warn, info or trace")                             \
    X(LOG_SUBSYS, SUBSYS, "ALL",                                                               \
      "subsystems logged at info and trace: INIT,ALLOC,LAUNCH,COPY,RES or ALL; ^ excludes")    \
    X(LOG_FILE, PATH, "",                                                                      \
      "log to this file instead of stderr; %p is the process id, %h the host name")            \
    X(STATS, BOOL, "0", "1: print allocation, launch and copy statistics at exit")             \
    X(GPU_MEMORY, MEMORY, "auto",                                                              \
      "GPU memory budget: a size (K/M/G/T) of at most the free memory, or N% of the device "   \
      "(held to the free memory), at least one chunk (the allocation granularity, 2 MiB "      \
      "typical); auto: free memory less a reserve for the driver and libraries")               \
    X(HOST_MEMORY, MEMORY, "auto",                                                             \
      "pinned host memory budget of the process: a size (K/M/G/T) or N% of the memory it may " \
      "use (physical, or its cgroup's limit); auto: half, shared by LOCAL_WORLD_SIZE procs")   \
    X(MEMINFO, MEMINFO, "virtual",                                                             \
      "what cuMemGetInfo reports: virtual (all budgets together) or physical (the device)")    \
    X(POLICY, POLICY, "plan",                                                                  \
      "how residency moves memory: reactive (least recently used, on demand) or plan (profile "\
      "one iteration, plan its moves, issue them ahead; the reactive engine serves the rest)") \
    X(REACH, REACH, "forward",                                                                 \
      "what a kernel's pointer into an allocation of several chunks reaches: forward (its "   \
      "chunk to the allocation's end come into GPU memory; the chunks before it stay usable " \
      "where they are) or allocation (every chunk of it comes in)")                            \
    X(HOST_VMM, AUTO_BOOL, "auto",                                                             \
      "evicted memory in host memory: 1: mapped at its address through VMM (a pointer into it "\
      "stays valid; the program stops where the device cannot); 0: unmapped, copied to and "   \
      "from pinned host pieces (a pointer only kept in device memory then faults); auto: 1 "   \
      "where the device can")                                                                  \
    X(PLAN_UNMAP, AUTO_BOOL, "auto",                                                         \
      "1: the plan's evictions of memory whose every use the shim saw leave its address "      \
      "unmapped (half the mapping calls; a pointer only kept in device memory then faults); "  \
      "0: evicted memory stays mapped; auto: 1 when ELIXIR_NVME_PATH is set (the same rule)") \
    X(PLAN_SLACK, PLAN_SLACK, "auto",                                                          \
      "GPU chunks the plan leaves free, taken by moves in while evictions' copies still run "  \
      "(evictions that stay mapped only): auto (the planner tries 0, 2 and 4 and keeps the "   \
      "fastest predicted), or a whole number from 0 to 4096")                                  \
    X(PLAN_GUARD, RATIO, "1.1",                                                                \
      "the plan is dropped, and the reactive engine serves the device from then on, where "   \
      "the shorter of two iterations that followed it took more than this times the "         \
      "reactive one profiled before it: a ratio from 0.01 to 100; 0: the plan is always "     \
      "kept")                                                                                  \
    X(TRACE, PATH, "",                                                                         \
      "record a trace into this file (%p is the process id, %h the host name); created "      \
      "0600, never overwritten: if it exists, NAME.1.EXT, NAME.2.EXT ... is used instead")     \
    X(TRACE_LEVEL, TRACE_LEVEL, "all",                                                         \
      "what the trace keeps after the profiled iterations: summary (process, devices, "       \
      "options, iterations, migrations, evictions, memory), allocs (also allocations and "    \
      "frees with call sites) or all (also every launch, copy, memset and NCCL call)")        \
    X(TRACE_DEPTH, DEPTH, "16", "call-site frames recorded per allocation; 0: no call sites")  \
    X(PROFILE_WARMUP, COUNT, "1", "iterations skipped before the profiled ones")               \
    X(PROFILE_ITERATIONS, COUNT, "1",                                                          \
      "iterations profiled in detail, every launch, copy and memset with its device times")   \
    X(CUPTI, CUPTI, "auto",                                                                    \
      "device times of profiled iterations: auto (load libcupti), off (CUDA events), or the "  \
      "path of a libcupti to load")                                                            \
    X(CUPTI_BUFFER, SIZE, "1M",                                                                \
      "bytes of each activity buffer given to CUPTI; a record that does not fit one is "      \
      "dropped (and counted)")                                                                 \
    X(NVME_PATH, PATH, "",                                                                     \
      "the NVMe tier's swap area: a directory (an unnamed file in it), a regular file or a "  \
      "block device; unset: no NVMe tier")                                                     \
    X(NVME_MEMORY, MEMORY, "auto",                                                             \
      "bytes of the swap area: a size, or N% of what the file system can spare; auto: a "     \
      "file's or device's size, in a directory this process's share of what the file system " \
      "can spare less a margin (ELIXIR_NVME_SHARE)")                                           \
    X(NVME_SHARE, NVME_SHARE, "auto",                                                          \
      "processes expected to share the NVMe directory, this one included: 1 to 4096; auto: "  \
      "the launcher's count of local processes (LOCAL_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_SIZE, " \
      "MPI_LOCALNRANKS), else 1")                                                              \
    X(NVME_VERIFY, BOOL, "0", "1: keep a CRC32C per NVMe slot and check it on every read")     \
    X(NVME_QUEUE_DEPTH, NVME_DEPTH, "16", "NVMe requests in flight: 1 to 4096")               \
    X(NVME_BLOCK, NVME_BLOCK, "512K",                                                         \
      "bytes per NVMe request, and the piece a chunk moves in: a power of two from 4K to 1G, " \
      "capped at the chunk")                                                                   \
    X(NVME_ENGINE, NVME_ENGINE, "auto",                                                        \
      "NVMe I/O: auto (io_uring, else pread/pwrite threads), io_uring or psync")             \
    X(NVME_FAULT, PATH, "",                                                                    \
      "test only: make the Nth NVMe request fail, write:N:KIND, read:N:KIND or any:N:KIND "   \
      "(KIND: eio, enospc, erofs, short, reap, stuck, again; corrupt for reads)")

typedef enum shim_opt {
#define X(name, type, def, desc) SHIM_OPT_##name,
    SHIM_OPTIONS(X)
#undef X
    SHIM_NOPTS
} shim_opt_t;

typedef enum shim_mem_kind { SHIM_MEM_AUTO, SHIM_MEM_BYTES, SHIM_MEM_PERCENT } shim_mem_kind_t;

typedef struct shim_mem {
    shim_mem_kind_t kind;
    uint64_t bytes;             /* SHIM_MEM_BYTES */
    double percent;             /* SHIM_MEM_PERCENT: (0, 100] */
} shim_mem_t;

enum { SHIM_MEMINFO_VIRTUAL, SHIM_MEMINFO_PHYSICAL };
enum { SHIM_AUTO = 2 };                 /* an AUTO_BOOL option's auto (else 0 or 1) */
enum { SHIM_SLACK_AUTO = -1 };          /* ELIXIR_PLAN_SLACK=auto (else 0 to 4096 chunks) */
enum { SHIM_TRACE_SUMMARY, SHIM_TRACE_ALLOCS, SHIM_TRACE_ALL };      /* ELIXIR_TRACE_LEVEL */
enum { SHIM_CUPTI_AUTO, SHIM_CUPTI_OFF, SHIM_CUPTI_PATH };           /* ELIXIR_CUPTI */

/* Read every ELIXIR_* option from the environment; once per process, before the log. */
void shim_options_load(void);
/* The exit status of a program stopped by bad configuration (a bad ELIXIR_* value, a typo
 * of an option's name, a budget under one chunk). */
#define SHIM_EXIT_CONFIG 1
/* Report bad values and typos of option names, once each (after the log is configured), and
 * return how many there were: the caller stops the program when that is not 0 (with
 * ELIXIR_DISABLE=1 they are warnings and 0 is returned).  When there were none and
 * ELIXIR_VERBOSE=1, print the version and every option. */
int shim_options_report(void);
/* Values: BOOL, LEVEL, SUBSYS (bit mask), MEMINFO, TRACE_LEVEL, DEPTH, COUNT, CUPTI and SIZE
 * options are integers; every option has its text (CUPTI: the path when it is one). */
long shim_opt_int(shim_opt_t o);
const char *shim_opt_str(shim_opt_t o);
/* The option's name after "ELIXIR_" ("TRACE_LEVEL"). */
const char *shim_opt_name(shim_opt_t o);
shim_mem_t shim_opt_mem(shim_opt_t o);
/* The BOOL option o parsed straight from `environ` without reporting anything: usable
 * before start-up; a bad value reads as the default. */
int shim_opt_peek_bool(shim_opt_t o);
/* Parse "auto", a size ("512M", K/M/G/T powers of 1024) or a percentage in (0, 100]
 * ("80%", "12.5%"); 0 or -EINVAL. */
int shim_parse_mem(const char *s, shim_mem_t *out);

/* ------------------------------------------------------------ log.c */

enum { SHIM_LOG_ERROR, SHIM_LOG_WARN, SHIM_LOG_INFO, SHIM_LOG_TRACE };

#define SHIM_SUBSYSTEMS(X) X(INIT) X(ALLOC) X(LAUNCH) X(COPY) X(RES)

enum {
#define X(name) SHIM_SUB_BIT_##name,
    SHIM_SUBSYSTEMS(X)
#undef X
    SHIM_NSUBSYS
};
enum {
#define X(name) SHIM_SUB_##name = 1u << SHIM_SUB_BIT_##name,
    SHIM_SUBSYSTEMS(X)
#undef X
};
#define SHIM_SUB_ALL ((1u << SHIM_NSUBSYS) - 1)

extern const char *const shim_subsys_names[SHIM_NSUBSYS];
extern _Atomic int shim_log_level;
extern _Atomic unsigned shim_log_mask;

/* Errors and warnings always pass the subsystem filter; info and trace must match it. */
static inline int shim_log_on(int level, unsigned sub)
{
    if (level > atomic_load_explicit(&shim_log_level, memory_order_relaxed))
        return 0;
    return level <= SHIM_LOG_WARN ||
           (atomic_load_explicit(&shim_log_mask, memory_order_relaxed) & sub) != 0;
}

void shim_log_write(int level, unsigned sub, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* A line with only the "elixir:" prefix, whatever the level (option listing, statistics). */
void shim_log_plain(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A configuration error that stops the program: "elixir: error: " and the message, on stderr
 * whatever the level and ELIXIR_LOG_FILE say (and in the log file too when there is one). */
void shim_log_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Apply ELIXIR_LOG, ELIXIR_LOG_SUBSYS and ELIXIR_LOG_FILE (after shim_options_load). */
void shim_log_configure(void);
/* Expand %p (process id), %h (host name) and %% of a file name pattern (ELIXIR_LOG_FILE,
 * ELIXIR_TRACE) into out; 0 or -ENAMETOOLONG. */
int shim_expand_name(const char *pat, char *out, size_t size);
/* In a forked child: reopen a log file whose name holds the process id. */
void shim_log_after_fork(void);

/* Nothing is formatted unless the level and subsystem are enabled; usable as one statement. */
#define SHIM_LOG(level, sub, ...)                                                              \
    do {                                                                                       \
        if (shim_log_on(level, SHIM_SUB_##sub))                                               \
            shim_log_write(level, SHIM_SUB_##sub, __FILE__, __LINE__, __VA_ARGS__);          \
    } while (0)
#define SHIM_ERROR(sub, ...) SHIM_LOG(SHIM_LOG_ERROR, sub, __VA_ARGS__)
#define SHIM_WARN(sub, ...) SHIM_LOG(SHIM_LOG_WARN, sub, __VA_ARGS__)
#define SHIM_INFO(sub, ...) SHIM_LOG(SHIM_LOG_INFO, sub, __VA_ARGS__)
#define SHIM_TRACE(sub, ...) SHIM_LOG(SHIM_LOG_TRACE, sub, __VA_ARGS__)

/* ------------------------------------------------------------ stats.c */

/* bytes as text in buf: "512 B", "4.0 KiB", "1.5 MiB", "60.0 GiB", "2.0 TiB"; returns buf. */
const char *shim_fmt_size(uint64_t bytes, char buf[32]);

void shim_stat_alloc(uint64_t bytes);
void shim_stat_free(uint64_t bytes);
void shim_stat_copy(shim_copy_kind_t kind, uint64_t bytes);
/* A launch of `kind` that the driver took, by a thread whose state is not 1. */
void shim_stat_launch_slow(shim_launch_kind_t kind);
/* A launch of `kind` that the driver took (inline: every launch counts one). */
static inline void shim_stat_launch(shim_launch_kind_t kind)
{
    shim_calls_t *c = &shim_stat_calls;

    if (SHIM_LIKELY(c->state > 0))
        atomic_store_explicit(&c->launches[kind],
                              atomic_load_explicit(&c->launches[kind], memory_order_relaxed) + 1,
                              memory_order_relaxed);
    else
        shim_stat_launch_slow(kind);
}
/*
 * Host time by what it went to, measured only while ELIXIR_STATS is on (shim_host_timing, set
 * once the options are read), on the driver's clock (shim_ht_now): the application's launches
 * and copies (memsets too), whole and in the driver, its synchronisations, and the driver
 * calls residency makes (its migrations' copies and mapping calls, the events that order them
 * and cover last uses, its waits), within those wrappers and the others.  A measure begins
 * with shim_ht_begin (0 when off) and ends with shim_ht_end.
 */
typedef enum shim_ht {
    SHIM_HT_LAUNCH,         /* the application's launches, the whole wrapper */
    SHIM_HT_LAUNCH_DRV,     /* ... of which the driver's launch call */
    SHIM_HT_COPY,           /* the application's copies and memsets, the whole wrapper */
    SHIM_HT_COPY_DRV,       /* ... of which the driver's call */
    SHIM_HT_SYNC_APP,       /* the application's synchronisations (waits for the GPU) */
    SHIM_HT_MOVE_COPY,      /* residency's copies of migrations, issued */
    SHIM_HT_MAP,            /* cuMemMap, cuMemUnmap, cuMemSetAccess */
    SHIM_HT_PHYS,           /* cuMemCreate, cuMemRelease */
    SHIM_HT_RECORD,         /* cuEventRecord */
    SHIM_HT_QUERY,          /* cuEventQuery */
    SHIM_HT_STREAM_WAIT,    /* cuStreamWaitEvent */
    SHIM_HT_SYNC,           /* cuEventSynchronize, cuStreamSynchronize, cuCtxSynchronize */
    SHIM_NHT
} shim_ht_t;
extern int shim_host_timing;
/* ns on the simulator's virtual host clock where the driver is the simulator (the time the
 * job takes there), else CLOCK_MONOTONIC. */
uint64_t shim_ht_now(void);
void shim_ht_add(shim_ht_t k, uint64_t t0);
static inline uint64_t shim_ht_begin(void)
{
    /* (the clock plus one: never 0 while on, though the simulator's clock starts at 0) */
    return SHIM_UNLIKELY(shim_host_timing) ? shim_ht_now() + 1 : 0;
}
static inline void shim_ht_end(shim_ht_t k, uint64_t t0)
{
    if (SHIM_UNLIKELY(t0 != 0))
        shim_ht_add(k, t0);
}
/* Is ELIXIR_STATS on (worth extra work such as finding the size of a freed block)? */
int shim_stats_enabled(void);
/* Forget everything counted (a forked child starts from zero). */
void shim_stats_reset(void);
/* Print the statistics once, if ELIXIR_STATS asked for them. */
void shim_stats_print(void);

#endif /* SHIM_H */
