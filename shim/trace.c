/* SPDX-License-Identifier: MIT */
/*
 * trace.c - recording what the program does into the trace file named by ELIXIR_TRACE.
 *
 * Start-up (shim_trace_start, with the real driver, before it is published) creates the file
 * through the tracer's recorder (0600, never overwriting one: when the name exists, the next
 * of NAME.1.EXT, NAME.2.EXT ... is used and said in the log; trace_name.c), chooses the clock, records the process and the options;
 * a device is described the first time something happens on it.  From then on every launch,
 * copy and memset is given an operation id and recorded with its stream (a small number:
 * 0 for the legacy stream, then one per stream, and one per thread for per-thread default
 * streams; a handle that the driver gives a new stream after cuStreamDestroy gets a new
 * number, but not one whose stream went with its context), device
 * and, for launches, the function (its name interned once per handle and code generation,
 * cached per thread) and the ids of the allocations its arguments reach (res_launch.c hands
 * over the argument words with the context: shim_trace_launch_args); residency reports
 * allocations, frees, migrations, evictions and memory per tier through the shim_trace_*
 * hooks.  Allocation ids come from one counter, and a table from base address to id lets
 * launches and evictions name allocations.
 *
 * Iterations are found by iter.c from the sequence of launches, with copies between host and
 * device and host synchronisations as barriers.  Iterations [ELIXIR_PROFILE_WARMUP,
 * + ELIXIR_PROFILE_ITERATIONS) are profiled: every operation gets its device times
 * (trace_time.c).  After them, ELIXIR_TRACE_LEVEL decides what is kept.
 *
 * The clock: CUPTI's when CUPTI is in use, so that host and device times agree; otherwise,
 * when the driver is the simulator, the simulator's virtual clock (the same one its CUPTI
 * stand-in reports), and the header says the times are virtual; otherwise CLOCK_MONOTONIC.
 * The simulator is recognised by a symbol that only it exports, sim_activity_clock (the
 * activity interface its CUPTI stand-in attaches to), looked up in the driver's library.
 *
 * Cost: nothing when ELIXIR_TRACE is unset but one test of shim_trace_on per wrapper.  When
 * recording, an operation takes no lock but the detector's (biased to the thread that keeps
 * launching, lock.h: plain stores while that thread launches) and the allocation table's spin
 * lock on a cache miss: per-thread state (op id blocks, caches of function names, of
 * argument words -> allocation ids, of whole argument lists -> sorted allocation id lists
 * and of the last stream's number) and the recorder's per-thread buffer.
 * Closing (at exit) waits for every thread to leave the operation it is recording; a forked
 * child abandons the recorder and records nothing.
 */
#include <dlfcn.h>
#include <errno.h>
#include <libunwind.h>
#include <limits.h>
#include <link.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../policy/iter.h"
#include "lock.h"
#include "trace_int.h"

_Static_assert((int)SHIM_TIER_GPU == (int)TRC_TIER_GPU &&
               (int)SHIM_TIER_PEER == (int)TRC_TIER_PEER &&
               (int)SHIM_TIER_HOST == (int)TRC_TIER_HOST &&
               (int)SHIM_TIER_NVME == (int)TRC_TIER_NVME, "SHIM_TIER_* are the trace's tiers");
_Static_assert(SHIM_DEVICE_HOST == TRC_DEVICE_HOST, "pinned host memory's device");
_Static_assert((int)SHIM_EVICT_FOR_LAUNCH == (int)TRC_EVICT_FOR_LAUNCH &&
               (int)SHIM_EVICT_FOR_COPY == (int)TRC_EVICT_FOR_COPY &&
               (int)SHIM_EVICT_FOR_ALLOC == (int)TRC_EVICT_FOR_ALLOC &&
               (int)SHIM_EVICT_PLAN == (int)TRC_EVICT_PLAN, "SHIM_EVICT_* are the trace's reasons");

#define FCACHE 256              /* function names cached per thread */
#define WCACHE 512              /* argument words -> allocation ids cached per thread */
#define MEMO 16                 /* argument lists -> allocation id lists cached per thread */
#define MEMO_WORDS 32           /* the longest argument list (in words) such a cache holds */
#define MEMO_MIN 4              /* the shortest: below it the word cache is as quick */
#define OP_BLOCK 64             /* operation ids a thread takes at once */
#define STREAMS 4096            /* stream handles numbered without a lock (more: T.over) */
#define STREAM_UNKNOWN 0xffffffffu
#define STREAM_GONE 0           /* a handle's number when its stream was destroyed */
#define MAX_TRACE_DEVICES 64
#define CLOSE_WAIT_NS 2000000000ull

enum { WIN_BEFORE, WIN_OPEN, WIN_AFTER };

typedef struct fslot {
    CUfunction f;
    unsigned gen;
    uint32_t id;
} fslot_t;

/* An argument word and the allocation it points into (0: none), valid while no allocation
 * was made or freed since (gen). */
typedef struct wslot {
    uint64_t word, gen, id;
} wslot_t;

/* The allocations a whole argument list reaches (ids sorted, without repeats), valid while
 * no allocation was made or freed since (gen) and for the arena [lo, ...).  Kernels are
 * launched again and again with the same arguments: such a launch costs one comparison. */
typedef struct memo {
    uint64_t gen, lo;
    uint32_t nwords, nids;
    uint64_t words[MEMO_WORDS];
    uint64_t ids[MEMO_WORDS];
} memo_t;

/* One thread's recording state, found through tls_self (and a key, to free it at exit). */
typedef struct tstate {
    struct tstate *next;            /* every thread's state, under states_lock */
    _Atomic int busy;               /* inside an operation or hook: closing waits */
    int depth;                      /* nesting of busy (owner only) */
    uint64_t next_op, end_op;       /* this thread's block of operation ids */
    uint64_t op;                    /* the operation being prepared; 0: none */
    int launch;                     /* it is a launch (else a copy or memset) */
    uint64_t time;                  /* its host time */
    uint32_t func;                  /* a launch's function (string id) */
    void *timing;                   /* trace_time.c's handle of the operation */
    uint64_t *ids;                  /* ids of the allocations the launch reaches */
    const uint64_t *hit_ids;        /* instead of ids when a memo answered: its own (not NULL) */
    uint32_t nids, cap;
    int unsorted;                   /* ids not in ascending order */
    uint64_t ptds;                  /* the number of this thread's per-thread stream */
    _Atomic(CUstream) last_s;       /* the last stream handle numbered, and its number (a
                                     * stream's destruction clears it, from any thread) */
    uint64_t last_sno;
    CUcontext ctx;                  /* last context seen, its device, the code generation */
    int ctx_dev;
    unsigned ctx_gen;
    int ctx_known;                  /* ctx is the operation's (shim_trace_launch_args, _op_ctx) */
    fslot_t fcache[FCACHE];
    wslot_t wcache[WCACHE];
    memo_t memo[MEMO];              /* by the launch's function */
    int py_nest;                    /* shim_trace_site_begin's nesting */
    int npy;                        /* the Python frames it read, for the call site */
    trc_pyraw_t py[TRC_PY_DEPTH];
} tstate_t;

/* Driver functions only the tracer uses, found in the driver's library at start-up. */
typedef struct trace_drv {
    PFN_cuFuncGetName_v12030 func_name;
    PFN_cuKernelGetName_v12030 kernel_name;
    PFN_cuDeviceGet_v2000 device_get;
    PFN_cuDeviceGetName_v2000 device_name;
    PFN_cuDeviceTotalMem_v3020 device_mem;
    PFN_cuEventElapsedTime_v2000 elapsed;
    uint64_t (*sim_clock)(void);
} trace_drv_t;

/* A tiny lock for the allocation table: held for a few loads and stores. */
typedef struct spin {
    atomic_flag f;
} spin_t;

_Atomic int shim_trace_on;
_Atomic int shim_trace_timed;       /* T.window == WIN_OPEN, for the wrappers */
trc_rec_t *shim_trace_rec;

static struct {
    trace_drv_t drv;
    _Atomic(trace_clock_t) clock;
    int sim, level, depth;
    long warmup, profile;
    _Atomic int closing;
    _Atomic int write_failed;       /* a write error stopped recording (rec_failed said so) */
    int asym;                       /* membarrier registered: enter() needs no fence */
    _Atomic int window;             /* WIN_* */
    int64_t win_end;                /* first iteration after the window */
    _Atomic int64_t retire_at;      /* iteration at which CUPTI is retired (0: none due) */
    pthread_mutex_t win_lock;
    _Atomic uint64_t op_blocks, alloc_next, stream_next;
    _Atomic uint64_t alloc_gen;     /* allocations and frees so far (word caches) */
    pthread_key_t key;
    pthread_mutex_t states_lock;
    tstate_t *states;
    shim_lock_t iter_lock;          /* the detector's: taken at every recorded launch */
    iter_t *iter;
    spin_t alloc_lock;
    uint64_t *akeys, *avals;        /* allocation base -> id, open addressing */
    size_t acap, an;
    pthread_mutex_t stream_lock;
    _Atomic uintptr_t skeys[STREAMS];
    _Atomic uint64_t svals[STREAMS];
    struct {                        /* handles beyond skeys (stream_lock) */
        uintptr_t *keys;
        _Atomic uint64_t *vals;
        size_t cap, n;
    } over;
    _Atomic uint64_t devices;       /* bit d: device d was described */
    _Atomic uint32_t hook_ids[SHIM_NHOOKS];
    uintptr_t own_lo, own_hi;       /* libelixir.so's mapped range */
} T = {
    .win_lock = PTHREAD_MUTEX_INITIALIZER,
    .states_lock = PTHREAD_MUTEX_INITIALIZER,
    .iter_lock = SHIM_LOCK_INIT,
    .alloc_lock = { ATOMIC_FLAG_INIT },
    .stream_lock = PTHREAD_MUTEX_INITIALIZER,
};

static SHIM_TLS tstate_t *tls_self;

/* ---------------------------------------------------------------- small helpers */

static void spin_lock(spin_t *s)
{
    while (atomic_flag_test_and_set_explicit(&s->f, memory_order_acquire))
        sched_yield();
}

static void spin_unlock(spin_t *s)
{
    atomic_flag_clear_explicit(&s->f, memory_order_release);
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The trace's clock, read inline where every operation reads it (acquire: a clock installed
 * while recording, shim_timing_retire's, reads what was set before it). */
static inline uint64_t now(void)
{
    trace_clock_t c = atomic_load_explicit(&T.clock, memory_order_acquire);
    return c ? c() : mono_ns();
}

uint64_t shim_trace_now(void)
{
    return now();
}

/* The recorder's clock: the one chosen at start-up (set before anything is recorded). */
static uint64_t rec_clock(void)
{
    return shim_trace_now();
}

static uint64_t hash_ptr(uint64_t p)
{
    return (p * 0x9E3779B97F4A7C15ull) >> 32;
}

/* ---------------------------------------------------------------- threads */

static void thread_gone(void *arg)
{
    tstate_t *th = arg;

    pthread_mutex_lock(&T.states_lock);
    for (tstate_t **p = &T.states; *p; p = &(*p)->next)
        if (*p == th) {
            *p = th->next;
            break;
        }
    pthread_mutex_unlock(&T.states_lock);
    tls_self = NULL;
    free(th->ids);
    free(th);
}

/* The calling thread's state, made on its first use; NULL when out of memory. */
static __attribute__((noinline)) tstate_t *self_new(void)
{
    tstate_t *th = calloc(1, sizeof(*th));

    if (!th)
        return NULL;
    th->ctx_dev = -1;
    pthread_mutex_lock(&T.states_lock);
    th->next = T.states;
    T.states = th;
    pthread_mutex_unlock(&T.states_lock);
    pthread_setspecific(T.key, th);
    tls_self = th;
    return th;
}

/* The calling thread's state, made on first use; NULL when out of memory. */
static inline tstate_t *self(void)
{
    tstate_t *th = tls_self;

    return __builtin_expect(th != NULL, 1) ? th : self_new();
}

/*
 * Enter an operation or hook: the thread's state, marked busy, or NULL when not recording.
 * busy is stored before `closing` is read and closing is stored before busy is read, so
 * either the closer waits for this thread or this thread sees it closing.  The order is a
 * full fence on both sides: here only a compiler barrier when the process registered for
 * membarrier (T.asym), since the closer then makes every running thread execute a full
 * fence (close_fence) between its store and its reads; else both sides sequentially
 * consistent.
 */
static inline tstate_t *enter(void)
{
    tstate_t *th = SHIM_TRACING() ? self() : NULL;

    if (!th)
        return NULL;
    if (th->depth++ == 0) {
        if (__builtin_expect(T.asym, 1)) {
            atomic_store_explicit(&th->busy, 1, memory_order_relaxed);
            atomic_signal_fence(memory_order_seq_cst);
        } else {
            atomic_store(&th->busy, 1);
        }
    }
    if (atomic_load(&T.closing) || !atomic_load_explicit(&shim_trace_on, memory_order_acquire)) {
        if (--th->depth == 0)
            atomic_store_explicit(&th->busy, 0, memory_order_release);
        return NULL;
    }
    return th;
}

static void leave(tstate_t *th)
{
    if (--th->depth == 0)
        atomic_store_explicit(&th->busy, 0, memory_order_release);
}

static void device_seen(int dev);

int shim_trace_enter(int device)
{
    tstate_t *th = enter();

    if (th)
        device_seen(device);
    return th != NULL;
}

void shim_trace_exit(void)
{
    leave(tls_self);
}

static inline uint64_t op_new(tstate_t *th);

uint64_t shim_trace_new_id(void)
{
    tstate_t *th = enter();
    uint64_t id = th ? op_new(th) : 0;

    if (th)
        leave(th);
    return id;
}

/* The thread's next block of OP_BLOCK operation ids. */
static __attribute__((noinline)) void op_block(tstate_t *th)
{
    uint64_t base = atomic_fetch_add_explicit(&T.op_blocks, OP_BLOCK, memory_order_relaxed);

    th->next_op = base + 1;
    th->end_op = base + 1 + OP_BLOCK;
}

/* A new operation id: from the thread's block, a new block every OP_BLOCK ids. */
static inline uint64_t op_new(tstate_t *th)
{
    if (__builtin_expect(th->next_op == th->end_op, 0))
        op_block(th);
    return th->next_op++;
}

/* ---------------------------------------------------------------- levels */

void shim_trace_emit(const trc_event_t *ev)
{
    trc_rec_t *rec = shim_trace_rec;

    if (!rec)
        return;
    if (atomic_load_explicit(&T.window, memory_order_relaxed) == WIN_AFTER) {
        switch (ev->type) {
        case TRC_EV_LAUNCH:
        case TRC_EV_COPY:
        case TRC_EV_MEMSET:
        case TRC_EV_NCCL:
            if (T.level < SHIM_TRACE_ALL)
                return;
            break;
        case TRC_EV_ALLOC:
        case TRC_EV_FREE:
            if (T.level < SHIM_TRACE_ALLOCS)
                return;
            break;
        default:
            break;
        }
    }
    trc_rec_event(rec, ev);
}

/* Records ev, which kept() let through just before. */
static void record_kept(const trc_event_t *ev)
{
    trc_rec_t *rec = shim_trace_rec;

    if (rec)
        trc_rec_event(rec, ev);
}

/* Would an event of this type be kept now? (Saves work on dropped ones.) */
static int kept(trc_type_t type)
{
    if (atomic_load_explicit(&T.window, memory_order_relaxed) != WIN_AFTER)
        return 1;
    if (type == TRC_EV_ALLOC || type == TRC_EV_FREE)
        return T.level >= SHIM_TRACE_ALLOCS;
    return T.level >= SHIM_TRACE_ALL;
}

/* ---------------------------------------------------------------- devices and names */

static long intern(const char *s)
{
    long id = trc_rec_string(shim_trace_rec, s);
    return id > 0 ? id : 0;
}

/* Describe device `dev` the first time it is seen. */
static void device_seen(int dev)
{
    if (dev < 0 || dev >= MAX_TRACE_DEVICES)
        return;
    uint64_t bit = 1ull << dev;
    if (atomic_load_explicit(&T.devices, memory_order_relaxed) & bit ||
        atomic_fetch_or(&T.devices, bit) & bit)
        return;
    CUdevice d = dev;
    char name[256] = "?";
    size_t mem = 0;
    int major = 0, minor = 0, sms = 0;
    shim_pfn_cuDeviceGetAttribute_t attr = SHIM_DRIVER_CALL(cuDeviceGetAttribute);
    if (T.drv.device_get)
        T.drv.device_get(&d, dev);
    if (T.drv.device_name && T.drv.device_name(name, sizeof(name), d) != CUDA_SUCCESS)
        snprintf(name, sizeof(name), "?");
    if (T.drv.device_mem)
        T.drv.device_mem(&mem, d);
    if (attr) {
        attr(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d);
        attr(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d);
        attr(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d);
    }
    trc_event_t ev = { .type = TRC_EV_DEVICE, .time = shim_trace_now() };
    ev.u.device = (trc_device_t){ .device = dev, .name_id = (uint32_t)intern(name),
                                  .total_mem = mem, .cc_major = (uint32_t)major,
                                  .cc_minor = (uint32_t)minor, .sm_count = (uint32_t)sms };
    shim_trace_emit(&ev);
}

/* The device of the current context (cached per thread), or -1. */
static int current_device(tstate_t *th)
{
    CUcontext ctx = NULL;
    shim_pfn_cuCtxGetCurrent_t get = SHIM_DRIVER_CALL(cuCtxGetCurrent);
    shim_pfn_cuCtxGetDevice_t dev = SHIM_DRIVER_CALL(cuCtxGetDevice);
    unsigned gen = res_code_generation();
    CUdevice d;

    if (!get || get(&ctx) != CUDA_SUCCESS || !ctx)
        return -1;
    if (ctx == th->ctx && gen == th->ctx_gen)
        return th->ctx_dev;
    th->ctx = ctx;
    th->ctx_gen = gen;
    th->ctx_dev = dev && dev(&d) == CUDA_SUCCESS ? (int)d : -1;
    device_seen(th->ctx_dev);
    return th->ctx_dev;
}

/* current_device's cache refreshed with what residency just looked up: ctx on device. */
static __attribute__((noinline)) void ctx_changed(tstate_t *th, CUcontext ctx, int device)
{
    th->ctx = ctx;
    th->ctx_gen = res_code_generation();
    th->ctx_dev = device;
    device_seen(device);
}

/* The operation's context and device, from residency (the stream's, for an operation on a
 * stream other than a default one).  They also refresh current_device's cache when they
 * differ from it; one that only grew stale (a new code generation) is left for
 * current_device to ask again. */
static inline void launch_ctx(tstate_t *th, CUcontext ctx, int device)
{
    if (!ctx)
        return;
    if (__builtin_expect(ctx != th->ctx || device != th->ctx_dev, 0))
        ctx_changed(th, ctx, device);
    th->ctx_known = 1;
}

/* The string id of a hook's name (launches without a kernel: graphs). */
static uint32_t hook_name_id(shim_hook_t h)
{
    uint32_t id = atomic_load_explicit(&T.hook_ids[h], memory_order_relaxed);

    if (!id) {
        id = (uint32_t)intern(shim_hook_names[h]);
        atomic_store_explicit(&T.hook_ids[h], id, memory_order_relaxed);
    }
    return id;
}

/* The name of kernel f (a CUfunction, or a CUkernel passed as one), interned.  Out of line:
 * asked once per handle and thread. */
static __attribute__((noinline)) uint32_t kernel_name_id(CUfunction f)
{
    const char *name = NULL;

    if (!T.drv.func_name || T.drv.func_name(&name, f) != CUDA_SUCCESS || !name) {
        name = NULL;
        if (T.drv.kernel_name && T.drv.kernel_name(&name, (CUkernel)f) != CUDA_SUCCESS)
            name = NULL;
    }
    return (uint32_t)intern(name ? name : "?");
}

/* The function of launch l as a string id, through the thread's cache (handle + code
 * generation: a handle that new code reuses after an unload is asked again). */
static uint32_t func_id(tstate_t *th, const shim_launch_t *l)
{
    CUfunction f = l->f;

    if (l->kind == SHIM_LAUNCH_MULTI_DEVICE && l->desc)
        f = ((const CUDA_LAUNCH_PARAMS *)l->desc)->function;
    if (!f)
        return hook_name_id(l->hook);
    unsigned gen = res_code_generation();
    fslot_t *s = &th->fcache[hash_ptr((uint64_t)(uintptr_t)f) % FCACHE];
    if (s->f == f && s->gen == gen)
        return s->id;
    *s = (fslot_t){ f, gen, kernel_name_id(f) };
    return s->id;
}

/* ---------------------------------------------------------------- streams */

/* Slot of key in T.over (stream_lock held, T.over.cap > 0): its own, or the empty one where
 * it would go. */
static size_t over_slot(uintptr_t key)
{
    size_t i = hash_ptr(key) & (T.over.cap - 1);

    while (T.over.keys[i] && T.over.keys[i] != key)
        i = (i + 1) & (T.over.cap - 1);
    return i;
}

/* Room for one more key in T.over (stream_lock held); 0 or -ENOMEM. */
static int over_grow(void)
{
    if (T.over.cap && (T.over.n + 1) * 2 <= T.over.cap)
        return 0;
    size_t ocap = T.over.cap, cap = ocap ? ocap * 2 : 256;
    uintptr_t *ok = T.over.keys, *k = calloc(cap, sizeof(*k));
    _Atomic uint64_t *ov = T.over.vals, *v = calloc(cap, sizeof(*v));
    if (!k || !v) {
        free(k);
        free(v);
        return -ENOMEM;
    }
    T.over.keys = k;
    T.over.vals = v;
    T.over.cap = cap;
    for (size_t i = 0; i < ocap; i++)
        if (ok[i]) {
            size_t j = over_slot(ok[i]);
            T.over.keys[j] = ok[i];
            atomic_init(&T.over.vals[j], atomic_load_explicit(&ov[i], memory_order_relaxed));
        }
    free(ok);
    free(ov);
    return 0;
}

/* The slot of key in the table, or of the empty entry where it would go, from slot `start`
 * on (stream_lock held, or a reader that checks under it what it did not find); STREAMS when
 * the table is full. */
static unsigned stream_slot(uintptr_t key, unsigned start)
{
    for (unsigned p = 0, i = start; p < STREAMS; p++, i = (i + 1) % STREAMS) {
        uintptr_t k = atomic_load_explicit(&T.skeys[i], memory_order_acquire);
        if (k == key || k == 0)
            return i;
    }
    return STREAMS;
}

/* Where key's number is kept (stream_lock held), or NULL when it has none. */
static _Atomic uint64_t *stream_val(uintptr_t key)
{
    unsigned i = stream_slot(key, (unsigned)(hash_ptr(key) % STREAMS));

    if (i < STREAMS)
        return atomic_load_explicit(&T.skeys[i], memory_order_relaxed) == key ? &T.svals[i]
                                                                              : NULL;
    i = T.over.cap ? (unsigned)over_slot(key) : 0;
    return T.over.cap && T.over.keys[i] == key ? &T.over.vals[i] : NULL;
}

/* The number of key kept in T.over, for a handle that found no room in the table (stream_lock
 * held): made when it has none.  Such a handle takes the lock at each lookup. */
static uint64_t over_number(uintptr_t key)
{
    _Atomic uint64_t *v = stream_val(key);
    uint64_t no = v ? atomic_load_explicit(v, memory_order_relaxed) : STREAM_GONE;

    if (no != STREAM_GONE)
        return no;
    if (!v) {
        if (over_grow() < 0)
            return STREAM_UNKNOWN;
        size_t i = over_slot(key);
        T.over.keys[i] = key;
        T.over.n++;
        v = &T.over.vals[i];
    }
    no = atomic_fetch_add(&T.stream_next, 1) + 1;
    atomic_store_explicit(v, no, memory_order_relaxed);
    return no;
}

/* The number of key, made when it has none (a new handle, or one whose stream was
 * destroyed): in the table, or in T.over when the table is full. */
static uint64_t stream_insert(uintptr_t key, unsigned start)
{
    uint64_t no;

    pthread_mutex_lock(&T.stream_lock);
    unsigned i = stream_slot(key, start);
    if (i == STREAMS) {
        no = over_number(key);
    } else if ((no = atomic_load_explicit(&T.svals[i], memory_order_relaxed)) == STREAM_GONE) {
        /* (An empty entry's value is STREAM_GONE too.) */
        no = atomic_fetch_add(&T.stream_next, 1) + 1;
        atomic_store_explicit(&T.svals[i], no, memory_order_relaxed);
        atomic_store_explicit(&T.skeys[i], key, memory_order_release);
    }
    pthread_mutex_unlock(&T.stream_lock);
    return no;
}

/* The number of stream handle s from the table.  Keys are never removed, so readers need no
 * lock: a key is published (release) after its value.  A handle whose stream was destroyed,
 * or that is not in the table, is numbered under the lock.  Out of line: stream_no asks only
 * when its memo misses. */
static __attribute__((noinline)) uint64_t stream_lookup(CUstream s)
{
    uintptr_t key = (uintptr_t)s;
    unsigned start = (unsigned)(hash_ptr(key) % STREAMS);
    for (unsigned p = 0, i = start; p < STREAMS; p++, i = (i + 1) % STREAMS) {
        uintptr_t k = atomic_load_explicit(&T.skeys[i], memory_order_acquire);
        if (k == key) {
            uint64_t no = atomic_load_explicit(&T.svals[i], memory_order_relaxed);
            if (no != STREAM_GONE)
                return no;
            break;
        }
        if (k == 0)
            break;
    }
    return stream_insert(key, start);
}

/* The small number of stream s as hook h names it.  The thread keeps the last one it looked
 * up (a training loop launches on one stream mostly); the stream's destruction clears that
 * memo (shim_trace_stream_destroy), since the handle's number changes only then. */
static inline uint64_t stream_no(tstate_t *th, CUstream s, shim_hook_t h)
{
    if (s == CU_STREAM_LEGACY || (!s && !shim_hook_per_thread[h]))
        return 0;
    if (!s || s == CU_STREAM_PER_THREAD) {
        if (!th->ptds)
            th->ptds = atomic_fetch_add(&T.stream_next, 1) + 1;
        return th->ptds;
    }
    if (s != atomic_load_explicit(&th->last_s, memory_order_relaxed)) {
        th->last_sno = stream_lookup(s);
        atomic_store_explicit(&th->last_s, s, memory_order_relaxed);
    }
    return th->last_sno;
}

uint64_t shim_trace_stream_destroy(CUstream s)
{
    tstate_t *th = enter();
    uint64_t no;

    if (!th)
        return STREAM_GONE;
    if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) {
        leave(th);
        return STREAM_GONE;
    }
    pthread_mutex_lock(&T.stream_lock);
    _Atomic uint64_t *v = stream_val((uintptr_t)s);
    no = v ? atomic_exchange_explicit(v, STREAM_GONE, memory_order_relaxed) : STREAM_GONE;
    pthread_mutex_unlock(&T.stream_lock);
    /* Every thread's memo of it too (a thread's next use of the handle, by a new stream,
     * happens after this returns). */
    pthread_mutex_lock(&T.states_lock);
    for (tstate_t *t = T.states; t; t = t->next) {
        CUstream want = s;
        atomic_compare_exchange_strong_explicit(&t->last_s, &want, NULL, memory_order_relaxed,
                                                memory_order_relaxed);
    }
    pthread_mutex_unlock(&T.states_lock);
    shim_timing_stream_gone();
    leave(th);
    return no;
}

void shim_trace_ctx_destroy(CUcontext ctx, int dev)
{
    tstate_t *th = enter();

    if (!th)
        return;
    /* (Not while a capture may be open: the waits would invalidate it.) */
    if (!res_capture_open())
        shim_timing_ctx_gone(ctx, dev);
    leave(th);
}

void shim_trace_stream_kept(CUstream s, uint64_t no)
{
    tstate_t *th = no != STREAM_GONE ? enter() : NULL;

    if (!th)
        return;
    pthread_mutex_lock(&T.stream_lock);
    _Atomic uint64_t *v = stream_val((uintptr_t)s);
    uint64_t gone = STREAM_GONE;
    if (v)      /* unless a use meanwhile numbered it again */
        atomic_compare_exchange_strong_explicit(v, &gone, no, memory_order_relaxed,
                                                memory_order_relaxed);
    pthread_mutex_unlock(&T.stream_lock);
    leave(th);
}

/* ---------------------------------------------------------------- allocation ids */

/* Slot of base in the table (alloc_lock held): its own, or the empty one where it would go. */
static size_t aslot(uint64_t base)
{
    size_t i = hash_ptr(base) & (T.acap - 1);

    while (T.akeys[i] && T.akeys[i] != base)
        i = (i + 1) & (T.acap - 1);
    return i;
}

/* Room for one more entry (alloc_lock held); 0 or -ENOMEM. */
static int agrow(void)
{
    if (T.acap && (T.an + 1) * 2 <= T.acap)
        return 0;
    size_t ocap = T.acap, cap = ocap ? ocap * 2 : 1024;
    uint64_t *ok = T.akeys, *ov = T.avals;
    uint64_t *k = calloc(cap, sizeof(*k)), *v = calloc(cap, sizeof(*v));
    if (!k || !v) {
        free(k);
        free(v);
        return -ENOMEM;
    }
    T.akeys = k;
    T.avals = v;
    T.acap = cap;
    for (size_t i = 0; i < ocap; i++)
        if (ok[i]) {
            size_t j = aslot(ok[i]);
            T.akeys[j] = ok[i];
            T.avals[j] = ov[i];
        }
    free(ok);
    free(ov);
    return 0;
}

/* In the table's values beside the id: the allocation's ALLOC record was kept, so its FREE
 * is kept too, whatever the level by then (ELIXIR_TRACE_LEVEL=summary drops allocations made
 * after the profiled iterations, not the end of those made before). */
#define ALLOC_KEPT (1ull << 63)

static uint64_t aget(uint64_t base)
{
    if (!T.acap || !base)
        return 0;
    size_t i = aslot(base);
    return T.akeys[i] ? T.avals[i] & ~ALLOC_KEPT : 0;
}

/* Removes base (linear probing: later entries of its run move back); its id (with
 * ALLOC_KEPT), or 0. */
static uint64_t adel(uint64_t base)
{
    if (!T.acap || !base)
        return 0;
    size_t i = aslot(base), mask = T.acap - 1;
    uint64_t id = T.avals[i];
    if (!T.akeys[i])
        return 0;
    T.akeys[i] = 0;
    T.an--;
    for (size_t j = (i + 1) & mask; T.akeys[j]; j = (j + 1) & mask) {
        size_t home = hash_ptr(T.akeys[j]) & mask;
        /* Move j back to i when its home is not within (i, j] (cyclically). */
        if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
            T.akeys[i] = T.akeys[j];
            T.avals[i] = T.avals[j];
            T.akeys[j] = 0;
            i = j;
        }
    }
    return id;
}

/* ---------------------------------------------------------------- call sites */

static int own_range(struct dl_phdr_info *info, size_t size, void *arg)
{
    uintptr_t base = (uintptr_t)arg;

    (void)size;
    if (info->dlpi_addr != base)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t lo = base + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (!T.own_lo || lo < T.own_lo)
            T.own_lo = lo;
        if (hi > T.own_hi)
            T.own_hi = hi;
    }
    return 1;
}

/* The range libelixir.so is mapped at, to tell its frames from the caller's. */
static void find_own_range(void)
{
    Dl_info info;

    if (dladdr((void *)find_own_range, &info) && info.dli_fbase)
        dl_iterate_phdr(own_range, info.dli_fbase);
}

/* The first return address outside libelixir.so: where the program called the shim. */
static __attribute__((noinline)) const void *shim_caller(void)
{
    void *raw[32];
    int n = unw_backtrace(raw, 32), k = 0;

    while (k < n && (uintptr_t)raw[k] >= T.own_lo && (uintptr_t)raw[k] < T.own_hi)
        k++;
    return k < n ? (const char *)raw[k] - 1 : NULL;
}

/*
 * The calling thread's Python frames into py (their count; 0 when it runs no Python).  A
 * thread that holds the GIL is read at once.  One that released it is read, taking the GIL,
 * only when ctypes called the shim straight from Python: then nothing of the program between
 * Python and the shim can hold a lock that the GIL's holder might be waiting for (in an
 * extension, the thread may hold one of its own locks, as PyTorch's caching allocator does
 * around cudaMalloc, while a thread holding the GIL waits for that lock to free a tensor:
 * waiting for the GIL there would deadlock the program).
 */
static int py_frames(trc_pyraw_t *py)
{
    int st = trc_py_thread();

    if (st == TRC_PY_NONE)
        return 0;
    return trc_py_capture(py, TRC_PY_DEPTH, st == TRC_PY_RELEASED &&
                                                trc_py_ffi_caller(shim_caller()));
}

void shim_trace_site_begin(void)
{
    trc_pyraw_t py[TRC_PY_DEPTH];

    if (!SHIM_TRACING() || !T.depth)
        return;
    int n = py_frames(py);             /* with no state of ours held: it may block, or exit */
    tstate_t *th = enter();
    if (!th)
        return;
    if (th->py_nest++ == 0) {
        memcpy(th->py, py, (size_t)n * sizeof(py[0]));
        th->npy = n;
    }
    leave(th);
}

void shim_trace_site_end(void)
{
    tstate_t *th = enter();

    if (!th)
        return;
    if (th->py_nest > 0 && --th->py_nest == 0)
        th->npy = 0;
    leave(th);
}

/*
 * The call site of the allocation being recorded: the stack from the first frame outside
 * libelixir.so (the application's, or its runtime's), at most ELIXIR_TRACE_DEPTH frames,
 * with the Python frames shim_trace_site_begin read, if any.
 * Frame i of this unwind is frame i + 1 of the recorder's (whose frame 0 is itself).
 */
static __attribute__((noinline)) uint32_t call_site(const tstate_t *th)
{
    void *raw[64];
    int n = unw_backtrace(raw, 64), k = 0;

    while (k < n && (uintptr_t)raw[k] >= T.own_lo && (uintptr_t)raw[k] < T.own_hi)
        k++;
    long id = k < n ? trc_rec_stack_py(shim_trace_rec, k, T.depth, th->py, th->npy)
              : th->npy ? trc_rec_stack_py(shim_trace_rec, 0, 0, th->py, th->npy) : 0;
    return id > 0 ? (uint32_t)id : 0;
}

/* ---------------------------------------------------------------- iterations */

/* CUPTI has nothing left to time (T.win_lock held): its clock is given up too. */
static void retire_cupti(int64_t cur)
{
    atomic_store(&T.retire_at, 0);
    trace_clock_t c = shim_timing_retire();
    if (!c)
        return;
    atomic_store_explicit(&T.clock, c, memory_order_release);
    SHIM_INFO(INIT, "trace: CUPTI released at iteration %lld (the trace's clock carries on "
              "from its last time)", (long long)cur);
}

/* After iteration `cur` began: open or close the profiling window, and retire CUPTI an
 * iteration after it closed. */
static void window_at(int64_t cur)
{
    pthread_mutex_lock(&T.win_lock);
    int w = atomic_load(&T.window);
    if (w == WIN_BEFORE && cur >= T.warmup) {
        T.win_end = cur + T.profile;
        if (T.profile > 0) {
            atomic_store(&T.window, WIN_OPEN);
            atomic_store(&shim_trace_timed, 1);
            shim_timing_window(1);
            SHIM_INFO(INIT, "trace: profiling iterations %lld to %lld", (long long)cur,
                      (long long)T.win_end - 1);
        } else {
            atomic_store(&T.window, WIN_AFTER);
            retire_cupti(cur);
        }
    } else if (w == WIN_OPEN && cur >= T.win_end) {
        atomic_store(&T.window, WIN_AFTER);
        atomic_store(&shim_trace_timed, 0);
        shim_timing_window(0);
        atomic_store(&T.retire_at, cur + 1);
        SHIM_INFO(INIT, "trace: profiling done at iteration %lld", (long long)cur);
    } else if (w == WIN_AFTER && atomic_load(&T.retire_at) && cur >= atomic_load(&T.retire_at)) {
        retire_cupti(cur); /* the window's last operations, and their records, are done */
    }
    pthread_mutex_unlock(&T.win_lock);
}

/* The iterations one launch revealed: recorded, and the profiling window moved. */
static __attribute__((noinline)) void iterations(const iter_mark_t *marks, int n)
{
    for (int i = 0; i < n; i++) {
        trc_event_t ev = { .type = TRC_EV_ITERATION, .time = marks[i].time };
        ev.u.iteration.index = marks[i].index;
        shim_trace_emit(&ev);
    }
    shim_trace_mapping_flush();
    if (atomic_load_explicit(&T.window, memory_order_relaxed) != WIN_AFTER ||
        atomic_load_explicit(&T.retire_at, memory_order_relaxed))
        window_at((int64_t)marks[n - 1].index);
}

/* A launch of function `func` at `time`: the iterations it reveals. */
static void detect(uint32_t func, uint64_t time)
{
    iter_mark_t marks[ITER_MAX_MARKS];

    shim_lock(&T.iter_lock);
    int n = iter_launch(T.iter, func, time, marks);
    shim_unlock(&T.iter_lock);
    if (__builtin_expect(n > 0, 0))
        iterations(marks, n);
}

static void barrier(void)
{
    shim_lock(&T.iter_lock);
    iter_barrier(T.iter);
    shim_unlock(&T.iter_lock);
}

void shim_trace_sync(void)
{
    tstate_t *th = enter();

    if (!th)
        return;
    barrier();
    leave(th);
}

/* ---------------------------------------------------------------- operations */

/* Common start of an operation: id, time; NULL when not recording. */
static inline tstate_t *op_begin(uint64_t *op)
{
    tstate_t *th = enter();

    *op = 0;
    if (!th)
        return NULL;
    *op = th->op = op_new(th);
    th->time = now();
    th->nids = 0;
    th->hit_ids = NULL;
    th->unsorted = 0;
    th->ctx_known = 0;
    th->timing = NULL;
    if (atomic_load_explicit(&shim_timing_pending, memory_order_relaxed))
        shim_timing_poll();
    return th;
}

void shim_trace_launch_begin(shim_launch_t *l)
{
    tstate_t *th = op_begin(&l->op);

    if (!th)
        return;
    th->launch = 1;
    th->func = func_id(th, l);
    detect(th->func, th->time);
}

/* The trace's kind of copy c: from its hook, its descriptor, or (unified addressing) which
 * operands lie in residency's arenas. */
static uint32_t copy_kind(const shim_copy_t *c)
{
    switch (c->kind) {
    case SHIM_COPY_HTOD: return TRC_COPY_HTOD;
    case SHIM_COPY_DTOH: return TRC_COPY_DTOH;
    case SHIM_COPY_DTOD: return TRC_COPY_DTOD;
    case SHIM_COPY_PEER:
    case SHIM_COPY_3D_PEER: return TRC_COPY_PEER;
    case SHIM_COPY_UNIFIED: {
        int d = c->dst && res_owns(c->dst), s = c->src && res_owns(c->src);
        return d && s ? TRC_COPY_DTOD : d ? TRC_COPY_HTOD : s ? TRC_COPY_DTOH : TRC_COPY_UNKNOWN;
    }
    case SHIM_COPY_2D:
    case SHIM_COPY_3D: {
        /* The descriptor names each side's memory type. */
        const CUDA_MEMCPY2D *p2 = c->desc;
        const CUDA_MEMCPY3D *p3 = c->desc;
        if (!c->desc)
            return TRC_COPY_UNKNOWN;
        CUmemorytype s = c->kind == SHIM_COPY_2D ? p2->srcMemoryType : p3->srcMemoryType;
        CUmemorytype d = c->kind == SHIM_COPY_2D ? p2->dstMemoryType : p3->dstMemoryType;
        int sh = s == CU_MEMORYTYPE_HOST, dh = d == CU_MEMORYTYPE_HOST;
        return sh && dh ? TRC_COPY_HTOH : sh ? TRC_COPY_HTOD : dh ? TRC_COPY_DTOH
                                                                 : TRC_COPY_DTOD;
    }
    default:
        break;
    }
    if (c->hook == SHIM_HOOK_cuMemcpyHtoA_v2 || c->hook == SHIM_HOOK_cuMemcpyHtoA_v2_ptds ||
        c->hook == SHIM_HOOK_cuMemcpyHtoAAsync_v2 || c->hook == SHIM_HOOK_cuMemcpyHtoAAsync_v2_ptsz)
        return TRC_COPY_HTOD;
    if (c->hook == SHIM_HOOK_cuMemcpyAtoH_v2 || c->hook == SHIM_HOOK_cuMemcpyAtoH_v2_ptds ||
        c->hook == SHIM_HOOK_cuMemcpyAtoHAsync_v2 || c->hook == SHIM_HOOK_cuMemcpyAtoHAsync_v2_ptsz)
        return TRC_COPY_DTOH;
    return c->kind == SHIM_COPY_ARRAY ? TRC_COPY_DTOD : TRC_COPY_UNKNOWN;
}

void shim_trace_copy_begin(shim_copy_t *c)
{
    tstate_t *th = op_begin(&c->op);

    if (!th)
        return;
    th->launch = 0;
    if (c->kind == SHIM_COPY_MEMSET)
        return;
    uint32_t k = copy_kind(c);
    /* Data in or out (a batch uploaded, a loss read back): a barrier for the detector. */
    if (k == TRC_COPY_HTOD || k == TRC_COPY_DTOH || k == TRC_COPY_HTOH)
        barrier();
}

/* shim_trace_issue while shim_trace_timed is set (the window decides: the flag is only how
 * the wrappers avoid a call outside it). */
void shim_trace_issue_timed(uint64_t op, CUstream s, shim_hook_t h)
{
    tstate_t *th = tls_self;

    if (op && th && atomic_load_explicit(&T.window, memory_order_relaxed) == WIN_OPEN)
        th->timing = shim_timing_before(op, s, h, th->ctx_known ? th->ctx : NULL);
}

/* Room for n ids in th->ids (at least 64); 0, or -1 when out of memory. */
static int ids_room(tstate_t *th, uint32_t n)
{
    uint32_t cap = th->cap ? th->cap : 64;

    if (n <= th->cap)
        return 0;
    while (cap < n)
        cap *= 2;
    uint64_t *ids = realloc(th->ids, cap * sizeof(*ids));
    if (!ids)
        return -1;
    th->ids = ids;
    th->cap = cap;
    return 0;
}

/* Adds allocation id to the launch's list (the same id twice in a row only once). */
static inline void add_id(tstate_t *th, uint64_t id)
{
    if (th->nids && th->ids[th->nids - 1] >= id) {
        if (th->ids[th->nids - 1] == id)
            return;
        th->unsorted = 1;
    }
    if (__builtin_expect(th->nids == th->cap, 0) && ids_room(th, th->nids + 1) < 0)
        return;
    th->ids[th->nids++] = id;
}

/* Sorts the launch's ids, which are out of order, ascending and drops repeats. */
static void sort_unsorted(tstate_t *th)
{
    uint64_t *a = th->ids;
    uint32_t u = 0;

    for (uint32_t i = 1; i < th->nids; i++) {
        uint64_t v = a[i];
        uint32_t j = i;
        for (; j > 0 && a[j - 1] > v; j--)
            a[j] = a[j - 1];
        a[j] = v;
    }
    for (uint32_t i = 0; i < th->nids; i++)
        if (!u || a[u - 1] != a[i])
            a[u++] = a[i];
    th->nids = u;
    th->unsorted = 0;
}

/* The launch's ids ascending, without repeats (usually they are already: arguments tend to
 * come in allocation order); the ids added after stay in order. */
static inline void sort_ids(tstate_t *th)
{
    if (th->unsorted)
        sort_unsorted(th);
}

static wslot_t *wslot(tstate_t *th, uint64_t word)
{
    return &th->wcache[((word >> 4) * 0x9E3779B97F4A7C15ull) >> 55];
}

/* The allocation id of argument word `word`, not cached in w (or stale): from the table
 * (src->base_of names the base), then cached in w. */
static __attribute__((noinline)) uint64_t word_miss(wslot_t *w, uint64_t word,
                                                   const shim_trace_arena_t *src)
{
    uint64_t base = src->base_of(src->ctx, word);
    spin_lock(&T.alloc_lock);
    uint64_t gen = atomic_load_explicit(&T.alloc_gen, memory_order_relaxed);
    uint64_t id = base ? aget(base) : 0;
    spin_unlock(&T.alloc_lock);
    *w = (wslot_t){ word, gen, id };
    return id;
}

/* The allocation id of an argument word: from the thread's cache while no allocation was
 * made or freed since it was cached (gen), else word_miss. */
static inline uint64_t word_id(tstate_t *th, uint64_t word, uint64_t gen,
                               const shim_trace_arena_t *src)
{
    wslot_t *w = wslot(th, word);

    if (w->word == word && w->gen == gen)
        return w->id;
    return word_miss(w, word, src);
}

/* The memo of th's launch for an argument list of `size` bytes, when one may hold it (the
 * list is the launch's first, and short enough); else NULL. */
static memo_t *memo_of(tstate_t *th, size_t size)
{
    if (th->nids || size > MEMO_WORDS * 8 || size < MEMO_MIN * 8 || size % 8 || !th->launch)
        return NULL;
    return &th->memo[hash_ptr(th->func) % MEMO];
}

/* Does m hold the answer for these words?  Then the launch's ids are m's, read in place
 * (th->hit_ids): the memo stays as it is until the thread's next launch. */
static int memo_hit(tstate_t *th, const memo_t *m, const void *buf, size_t size, uint64_t gen,
                    uint64_t lo)
{
    if (m->gen != gen || m->lo != lo || m->nwords * 8 != size || memcmp(m->words, buf, size))
        return 0;
    th->hit_ids = m->ids;
    th->nids = m->nids;
    th->unsorted = 0;
    return 1;
}

/* More words after a memo answered (a list given in batches; the memo answers only a first
 * one): the memo's ids copied into th->ids, where the rest are added. */
static __attribute__((noinline)) void memo_unhit(tstate_t *th)
{
    const uint64_t *ids = th->hit_ids;

    th->hit_ids = NULL;
    if (th->nids && ids_room(th, th->nids) < 0) {
        th->nids = 0;
        return;
    }
    if (th->nids)
        memcpy(th->ids, ids, th->nids * sizeof(*th->ids));
}

/* Keeps the launch's ids (sorted once here, so that a hit needs no sorting) for these words
 * in m. */
static void memo_keep(tstate_t *th, memo_t *m, const void *buf, size_t size, uint64_t gen,
                      uint64_t lo)
{
    sort_ids(th);
    if (th->nids > MEMO_WORDS) {        /* cannot happen (one id per word at most), but */
        m->nwords = 0;                  /* then the memo matches nothing */
        return;
    }
    m->gen = gen;
    m->lo = lo;
    m->nwords = (uint32_t)(size / 8);
    m->nids = th->nids;
    memcpy(m->words, buf, size);
    if (th->nids)
        memcpy(m->ids, th->ids, th->nids * sizeof(*th->ids));
}

/* The ids of the allocations the words at buf (n of them) reach, added to the launch's
 * (cached answers valid at allocation generation gen). */
static inline void words_ids(tstate_t *th, const void *buf, size_t n, uint64_t gen,
                             const shim_trace_arena_t *src)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t v, id;
        memcpy(&v, (const char *)buf + 8 * i, 8);
        if (v - src->lo < src->span && (id = word_id(th, v, gen, src)) != 0)
            add_id(th, id);
    }
}

/* launch_words for a list long enough for the memo of the launch's function: the whole list
 * compared at once, else word by word (and then remembered). */
static __attribute__((noinline)) void memo_words(tstate_t *th, const uint64_t *words, size_t n,
                                                 uint64_t gen, const shim_trace_arena_t *src)
{
    size_t size = n * 8;
    memo_t *m = memo_of(th, size);

    if (m && memo_hit(th, m, words, size, gen, src->lo))
        return;
    words_ids(th, words, n, gen, src);
    if (m)
        memo_keep(th, m, words, size, gen, src->lo);
}

/* The ids of the allocations n argument words reach, added to the launch's: word by word for
 * a short list, else through memo_words. */
static SHIM_ALWAYS_INLINE void launch_words(tstate_t *th, const uint64_t *words, size_t n,
                                            const shim_trace_arena_t *src)
{
    uint64_t gen = atomic_load_explicit(&T.alloc_gen, memory_order_relaxed);

    if (__builtin_expect(th->hit_ids != NULL, 0))
        memo_unhit(th);
    if (n < MEMO_MIN)
        words_ids(th, words, n, gen, src);
    else
        memo_words(th, words, n, gen, src);
}

void shim_trace_words(const uint64_t *words, size_t n, const shim_trace_arena_t *a)
{
    tstate_t *th = tls_self;

    if (th && th->op)
        launch_words(th, words, n, a);
}

void shim_trace_peer_words(const uint64_t *words, size_t n, const shim_trace_arena_t *a)
{
    tstate_t *th = tls_self;

    if (!th || !th->op)
        return;
    if (th->hit_ids)
        memo_unhit(th);
    words_ids(th, words, n, atomic_load_explicit(&T.alloc_gen, memory_order_relaxed), a);
}

void shim_trace_op_ctx(CUcontext ctx, int device)
{
    tstate_t *th = tls_self;

    if (th && th->op)
        launch_ctx(th, ctx, device);
}

void shim_trace_launch_args(CUcontext ctx, int device, const uint64_t *words, size_t n,
                            const shim_trace_arena_t *a)
{
    tstate_t *th = tls_self;

    if (!th || !th->op)
        return;
    launch_ctx(th, ctx, device);
    if (n)
        launch_words(th, words, n, a);
}

/* Common end: device times, then the thread leaves the operation. */
static void op_end(tstate_t *th, CUresult r, CUstream s, shim_hook_t h)
{
    if (th->timing)
        shim_timing_after(th->timing, r, s, h);
    th->timing = NULL;
    th->op = 0;
    leave(th);
}

void shim_trace_launch_end(const shim_launch_t *l, CUresult r)
{
    tstate_t *th = tls_self;

    if (!l->op || !th)
        return;
    if (r == CUDA_SUCCESS && kept(TRC_EV_LAUNCH)) {
        /* Only the launch member is set (and read), field by field: zeroing the whole union
         * costs more than the rest of the record. */
        trc_event_t ev;
        ev.type = TRC_EV_LAUNCH;
        ev.offset = 0;
        ev.time = th->time;
        trc_launch_t *la = &ev.u.launch;
        la->id = l->op;
        la->func_id = th->func;
        la->stream = stream_no(th, l->stream, l->hook);
        la->device = th->ctx_known ? th->ctx_dev : current_device(th);
        la->span = (trc_span_t){ 0 };  /* times come later, in a TIMING record */
        sort_ids(th);
        la->nallocs = th->nids;
        la->allocs = th->hit_ids ? th->hit_ids : th->ids;
        la->func = NULL;
        record_kept(&ev);
    }
    op_end(th, r, l->stream, l->hook);
}

void shim_trace_copy_end(const shim_copy_t *c, CUresult r)
{
    tstate_t *th = tls_self;

    if (!c->op || !th)
        return;
    if (r == CUDA_SUCCESS && kept(TRC_EV_COPY)) {
        trc_event_t ev = { .time = th->time };
        uint64_t stream = stream_no(th, c->stream, c->hook);
        int dev = th->ctx_known ? th->ctx_dev : current_device(th);
        if (c->kind == SHIM_COPY_MEMSET) {
            ev.type = TRC_EV_MEMSET;
            ev.u.memset = (trc_memset_t){ .dst = c->dst, .bytes = c->bytes, .stream = stream,
                                          .value = c->value, .elem_size = c->elem,
                                          .device = dev, .id = c->op };
        } else {
            ev.type = TRC_EV_COPY;
            ev.u.copy = (trc_copy_t){ .kind = copy_kind(c), .src = c->src, .dst = c->dst,
                                      .bytes = c->bytes, .stream = stream, .device = dev,
                                      .id = c->op };
        }
        shim_trace_emit(&ev);
    }
    op_end(th, r, c->stream, c->hook);
}

uint64_t shim_trace_current_op(void)
{
    tstate_t *th = tls_self;
    return th ? th->op : 0;
}

/* ---------------------------------------------------------------- residency's events */

uint64_t shim_trace_alloc(int device, uint64_t base, uint64_t size)
{
    tstate_t *th = enter();

    if (!th)
        return 0;
    uint64_t id = atomic_fetch_add(&T.alloc_next, 1) + 1;
    int keep = kept(TRC_EV_ALLOC);
    spin_lock(&T.alloc_lock);
    if (agrow() == 0) {
        size_t i = aslot(base);
        T.an += !T.akeys[i];
        T.akeys[i] = base;
        T.avals[i] = id | (keep ? ALLOC_KEPT : 0);
    }
    atomic_fetch_add_explicit(&T.alloc_gen, 1, memory_order_relaxed);
    spin_unlock(&T.alloc_lock);
    device_seen(device);
    if (keep) {
        trc_event_t ev = { .type = TRC_EV_ALLOC, .time = shim_trace_now() };
        ev.u.alloc = (trc_alloc_t){ .id = id, .device = device, .addr = base, .size = size,
                                    .stack_id = T.depth ? call_site(th) : 0 };
        record_kept(&ev);
    }
    leave(th);
    return id;
}

void shim_trace_free(uint64_t base)
{
    tstate_t *th = enter();

    if (!th)
        return;
    spin_lock(&T.alloc_lock);
    uint64_t id = adel(base);
    atomic_fetch_add_explicit(&T.alloc_gen, 1, memory_order_relaxed);
    spin_unlock(&T.alloc_lock);
    if (id & ALLOC_KEPT) {
        trc_event_t ev = { .type = TRC_EV_FREE, .time = shim_trace_now() };
        ev.u.free.id = id & ~ALLOC_KEPT;
        record_kept(&ev);
    }
    leave(th);
}

void shim_trace_migration(int device, uint64_t chunk, uint64_t bytes, int from, int to,
                          uint64_t start, uint64_t end, uint64_t cause)
{
    tstate_t *th = enter();

    if (!th)
        return;
    device_seen(device);
    trc_event_t ev = { .type = TRC_EV_MIGRATION, .time = shim_trace_now() };
    ev.u.migration = (trc_migration_t){ .chunk = chunk, .bytes = bytes, .from = (uint32_t)from,
                                        .to = (uint32_t)to, .device = device, .start = start,
                                        .end = end >= start ? end : start, .cause = cause };
    shim_trace_emit(&ev);
    leave(th);
}

void shim_trace_eviction(int device, uint64_t chunk, uint64_t alloc_base, uint64_t bytes,
                         int from, int to, unsigned reason)
{
    tstate_t *th = enter();

    if (!th)
        return;
    device_seen(device);
    spin_lock(&T.alloc_lock);
    uint64_t alloc = aget(alloc_base);
    spin_unlock(&T.alloc_lock);
    if (!reason)
        reason = !th->op ? SHIM_EVICT_FOR_ALLOC
                 : th->launch ? SHIM_EVICT_FOR_LAUNCH : SHIM_EVICT_FOR_COPY;
    trc_event_t ev = { .type = TRC_EV_EVICTION, .time = shim_trace_now() };
    ev.u.eviction = (trc_eviction_t){ .chunk = chunk, .alloc = alloc, .bytes = bytes,
                                      .from = (uint32_t)from, .to = (uint32_t)to,
                                      .reason = reason };
    shim_trace_emit(&ev);
    leave(th);
}

void shim_trace_memory(int device, const uint64_t bytes[4])
{
    tstate_t *th = enter();

    if (!th)
        return;
    device_seen(device);
    trc_event_t ev = { .type = TRC_EV_MEMORY, .time = shim_trace_now() };
    ev.u.memory.device = device;
    memcpy(ev.u.memory.bytes, bytes, sizeof(ev.u.memory.bytes));
    shim_trace_emit(&ev);
    leave(th);
}

void shim_trace_budget(int device, uint64_t gpu, uint64_t host)
{
    tstate_t *th = enter();

    if (!th)
        return;
    device_seen(device);
    trc_event_t ev = { .type = TRC_EV_BUDGET, .time = shim_trace_now() };
    ev.u.budget = (trc_budget_t){ .device = device };
    ev.u.budget.bytes[TRC_TIER_GPU] = gpu;
    ev.u.budget.bytes[TRC_TIER_HOST] = host;
    shim_trace_emit(&ev);
    leave(th);
}

/* ---------------------------------------------------------------- start-up */

/* Reads a small file whole (NUL bytes become spaces), into buf; its length. */
static size_t read_small(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, cap - 1, f) : 0;

    if (f)
        fclose(f);
    while (n > 0 && buf[n - 1] == '\0')
        n--;
    for (size_t i = 0; i < n; i++)
        if (buf[i] == '\0')
            buf[i] = ' ';
    buf[n] = '\0';
    return n;
}

static void record_process(void)
{
    char exe[PATH_MAX] = "", cmd[4096], host[256] = "";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

    exe[n > 0 ? n : 0] = '\0';
    read_small("/proc/self/cmdline", cmd, sizeof(cmd));
    gethostname(host, sizeof(host) - 1);
    trc_event_t ev = { .type = TRC_EV_PROCESS, .time = shim_trace_now() };
    ev.u.process = (trc_process_t){ .pid = (uint32_t)getpid(), .ppid = (uint32_t)getppid(),
                                    .exe_id = (uint32_t)intern(exe),
                                    .cmdline_id = (uint32_t)intern(cmd),
                                    .host_id = (uint32_t)intern(host) };
    shim_trace_emit(&ev);
}

extern char **environ;

/* Is the environment entry e ("ELIXIR_NAME=value") one of the option table's? */
static int in_table(const char *e)
{
    for (int o = 0; o < SHIM_NOPTS; o++) {
        size_t len = strlen(shim_opt_name(o));
        if (strncmp(e + 7, shim_opt_name(o), len) == 0 && e[7 + len] == '=')
            return 1;
    }
    return 0;
}

/* The option snapshot: every option of the table with its value, then every other ELIXIR_*
 * variable of the environment (the simulator's, a newer shim's) as it is. */
static void record_options(void)
{
    enum { MAX_OPTS = 256 };
    trc_option_t opts[MAX_OPTS];
    uint32_t n = 0;
    char name[128];

    for (int o = 0; o < SHIM_NOPTS && n < MAX_OPTS; o++) {
        snprintf(name, sizeof(name), "ELIXIR_%s", shim_opt_name(o));
        opts[n++] = (trc_option_t){ .name_id = (uint32_t)intern(name),
                                    .value_id = (uint32_t)intern(shim_opt_str(o)) };
    }
    for (char **e = environ; e && *e && n < MAX_OPTS; e++) {
        const char *eq = strchr(*e, '=');
        if (strncmp(*e, "ELIXIR_", 7) != 0 || !eq || in_table(*e) ||
            (size_t)(eq - *e) >= sizeof(name))
            continue;
        snprintf(name, sizeof(name), "%.*s", (int)(eq - *e), *e);
        opts[n++] = (trc_option_t){ .name_id = (uint32_t)intern(name),
                                    .value_id = (uint32_t)intern(eq + 1) };
    }
    trc_event_t ev = { .type = TRC_EV_OPTIONS, .time = shim_trace_now() };
    ev.u.options = (trc_options_t){ .count = n, .opts = opts };
    shim_trace_emit(&ev);
}

/* A driver function by name, from the driver's own library (never one of our wrappers). */
static void *drv_sym(const shim_driver_t *d, const char *name)
{
    void *(*rdlsym)(void *, const char *) = shim_real_dlsym();
    void *p = rdlsym ? rdlsym(d->handle, name) : NULL;

    return p && !shim_is_own(p) ? p : NULL;
}

static void resolve_driver(const shim_driver_t *d)
{
    *(void **)&T.drv.func_name = drv_sym(d, "cuFuncGetName");
    *(void **)&T.drv.kernel_name = drv_sym(d, "cuKernelGetName");
    *(void **)&T.drv.device_get = drv_sym(d, "cuDeviceGet");
    *(void **)&T.drv.device_name = drv_sym(d, "cuDeviceGetName");
    *(void **)&T.drv.device_mem = drv_sym(d, "cuDeviceTotalMem_v2");
    *(void **)&T.drv.elapsed = drv_sym(d, "cuEventElapsedTime_v2");
    if (!T.drv.elapsed)
        *(void **)&T.drv.elapsed = drv_sym(d, "cuEventElapsedTime");
    /* Only the simulator exports its virtual clock (sim/include/simcuda.h). */
    *(void **)&T.drv.sim_clock = drv_sym(d, "sim_activity_clock");
}

static void at_exit(void)
{
    shim_trace_stop();
}

/* Options and the state that does not depend on the file. */
static int prepare(void)
{
    T.level = (int)shim_opt_int(SHIM_OPT_TRACE_LEVEL);
    T.depth = (int)shim_opt_int(SHIM_OPT_TRACE_DEPTH);
    T.warmup = shim_opt_int(SHIM_OPT_PROFILE_WARMUP);
    T.profile = shim_opt_int(SHIM_OPT_PROFILE_ITERATIONS);
    find_own_range();
    if (pthread_key_create(&T.key, thread_gone) != 0)
        return -ENOMEM;
    return iter_create(&T.iter);
}

/* The recorder is open: the device times' source (and CUPTI's clock), the first records,
 * the exit handler, then recording on. */
static void begin_recording(trc_rec_t *rec, const char *path)
{
    shim_trace_rec = rec;
    T.asym = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
    trace_clock_t cupti = shim_timing_open(T.drv.elapsed, T.clock);
    if (cupti)
        T.clock = cupti;
    record_process();
    record_options();
    trc_rec_flush_thread(rec);
    if (T.warmup == 0)
        window_at(0);
    atexit(at_exit);
    atomic_store(&shim_trace_on, 1);
    SHIM_INFO(INIT, "trace: recording to %s (level %s, call sites %d frames, %s clock)", path,
              shim_opt_str(SHIM_OPT_TRACE_LEVEL), T.depth,
              cupti ? "CUPTI's" : T.sim ? "the simulator's virtual" : "the monotonic");
}

/* The recorder met a write error and stopped (from whichever thread met it). */
static void rec_failed(int err)
{
    atomic_store(&T.write_failed, 1);
    SHIM_WARN(INIT, "trace: writing the trace (ELIXIR_TRACE=%s) failed: %s; recording has "
              "stopped, and the file keeps what was written before (readable, without its END "
              "record)", shim_opt_str(SHIM_OPT_TRACE), strerror(-err));
}

#define TRACE_NAMES_MAX 10000      /* names tried, trace.elx then trace.1.elx ... */

/* The recorder on a new file named by the ELIXIR_TRACE pattern (trace_name.c), its name in
 * name: an existing file is never overwritten, the next name is tried instead, and a name
 * other than the first is said in the log.  0 or a negative errno. */
static int open_unique(const char *pattern, const trc_rec_config_t *cfg, trc_rec_t **rec,
                       char *name, size_t cap)
{
    char first[PATH_MAX], escaped[2 * PATH_MAX];
    int rc = -EEXIST;

    for (unsigned n = 0; rc == -EEXIST && n < TRACE_NAMES_MAX; n++) {
        if ((rc = shim_trace_name(pattern, n, name, cap)) < 0)
            return rc;
        if (n == 0)
            snprintf(first, sizeof(first), "%s", name);
        size_t e = 0;                   /* the recorder expands '%' again: escape it */
        for (const char *p = name; *p && e + 2 < sizeof(escaped); p++)
            e += (size_t)snprintf(escaped + e, sizeof(escaped) - e, *p == '%' ? "%%%%" : "%c",
                                  *p);
        rc = trc_rec_open(escaped, cfg, rec);
        if (rc == 0 && n > 0)
            SHIM_WARN(INIT, "ELIXIR_TRACE=%s: %s exists (never overwritten); recording to %s",
                      pattern, first, name);
    }
    return rc;
}

static void start(const shim_driver_t *d)
{
    const char *path = shim_opt_str(SHIM_OPT_TRACE);
    trc_rec_t *rec;

    if (!path[0] || !d->ok)
        return;
    if (shim_disabled()) {
        SHIM_WARN(INIT, "ELIXIR_TRACE=%s is ignored: ELIXIR_DISABLE=1 turns the shim off", path);
        return;
    }
    resolve_driver(d);
    T.sim = T.drv.sim_clock != NULL;
    T.clock = T.sim ? T.drv.sim_clock : mono_ns;
    trc_rec_config_t cfg = { .flags = T.sim ? TRC_FLAG_VIRTUAL_TIME : 0, .clock = rec_clock,
                             .on_error = rec_failed };
    char name[PATH_MAX];
    int rc = prepare();
    if (rc == 0)
        rc = open_unique(path, &cfg, &rec, name, sizeof(name));
    if (rc < 0)
        SHIM_WARN(INIT, "ELIXIR_TRACE=%s: cannot record: %s", path, strerror(-rc));
    else
        begin_recording(rec, name);
}

/*
 * Once per process, before the driver is published, so that no thread can issue an operation
 * before recording is on.  Threads that race here wait for the one starting the trace, but
 * not for ever: one of them may be inside a library constructor, holding the dynamic
 * loader's lock that the start (dlopen of CUPTI) needs; after a second it goes on, and its
 * first operations may be missed.
 */
void shim_trace_start(const shim_driver_t *d)
{
    static _Atomic int state;       /* 0: not started, 1: starting, 2: done */
    int zero = 0;

    if (atomic_compare_exchange_strong(&state, &zero, 1)) {
        start(d);
        atomic_store(&state, 2);
        return;
    }
    for (uint64_t t0 = mono_ns(); atomic_load(&state) != 2 && mono_ns() - t0 < 1000000000u;)
        sched_yield();
}

/* ---------------------------------------------------------------- exit and fork */

/* After `closing` was stored: the closer's half of enter()'s fence (see there).  Once the
 * process registered (T.asym, set at start-up before any thread records) the barrier cannot
 * fail; should it, the closer goes on as it would without the barrier, and the wait for
 * busy threads still sees every thread that entered before closing was stored and became
 * visible to it. */
static void close_fence(void)
{
    if (T.asym && syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0)
        SHIM_WARN(INIT, "trace: membarrier failed at exit: %s", strerror(errno));
}

/* Waits until no thread is inside an operation; 0, or -ETIMEDOUT after CLOSE_WAIT_NS. */
static int wait_idle(void)
{
    uint64_t t0 = mono_ns();
    tstate_t *me = tls_self;
    int idle = 0;

    while (!idle && mono_ns() - t0 < CLOSE_WAIT_NS) {
        idle = 1;
        pthread_mutex_lock(&T.states_lock);
        for (tstate_t *th = T.states; th; th = th->next)
            if (th != me && atomic_load(&th->busy))
                idle = 0;
        pthread_mutex_unlock(&T.states_lock);
        if (!idle)
            sched_yield();
    }
    return idle ? 0 : -ETIMEDOUT;
}

void shim_trace_stop(void)
{
    if (atomic_load(&shim_trace_on))
        res_plan_trace_end();
    if (!atomic_exchange(&shim_trace_on, 0))
        return;
    atomic_store(&T.closing, 1);
    close_fence();
    int idle = wait_idle();
    trace_clock_t after = shim_timing_stop();
    if (after)
        T.clock = after;
    if (idle < 0) {
        /* A thread is still inside the driver: leave the recorder to it, write what we have. */
        SHIM_WARN(INIT, "trace: a thread is still recording at exit; the trace is left "
                  "unfinished (readable, without its END record)");
        trc_rec_flush(shim_trace_rec);
        return;
    }
    shim_trace_mapping_flush();
    trc_rec_t *rec = shim_trace_rec;
    shim_trace_rec = NULL;
    int rc = trc_rec_close(rec);
    if (rc < 0 && !atomic_load(&T.write_failed))
        SHIM_WARN(INIT, "trace: writing the trace failed: %s", strerror(-rc));
}

void shim_trace_after_fork(void)
{
    if (!shim_trace_rec)
        return;
    atomic_store(&shim_trace_on, 0);
    atomic_store(&T.closing, 1);
    trc_rec_abandon(shim_trace_rec);
    shim_trace_rec = NULL;
    shim_timing_after_fork();
    atomic_store(&T.clock, NULL);       /* CUPTI's clock was the parent's (now() falls back) */
    pthread_mutex_init(&T.states_lock, NULL);
    pthread_mutex_init(&T.win_lock, NULL);
    pthread_mutex_init(&T.stream_lock, NULL);
    T.iter_lock = (shim_lock_t)SHIM_LOCK_INIT;
    atomic_flag_clear(&T.alloc_lock.f);
}

void shim_trace_nccl(const char *op, uint64_t send, uint64_t recv, uint64_t bytes, uint64_t comm,
                     int peer, CUstream s, int device)
{
    tstate_t *th = enter();

    if (!th)
        return;
    if (kept(TRC_EV_NCCL)) {
        device_seen(device);
        trc_event_t ev = { .type = TRC_EV_NCCL, .time = shim_trace_now() };
        ev.u.nccl = (trc_nccl_t){ .op_id = (uint32_t)intern(op), .send = send, .recv = recv,
                                  .bytes = bytes, .comm = comm, .peer = peer,
                                  .stream = stream_no(th, s, SHIM_HOOK_cuLaunchKernel),
                                  .device = device };
        shim_trace_emit(&ev);
    }
    leave(th);
}
