/* SPDX-License-Identifier: MIT */
/*
 * trace_int.h - what the recording's files share: trace.c (threads, levels, devices, call
 * sites, iterations), trace_stream.c (stream numbers), trace_ops.c (operations and
 * residency's events), trace_start.c (start-up, exit and fork), trace_name.c (the file's
 * name), trace_plan.c (the plan's records) and trace_time.c (device times of the profiled
 * iterations).  Nothing else includes it.
 */
#ifndef ELIXIR_TRACE_INT_H
#define ELIXIR_TRACE_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include "../policy/iter.h"
#include "lock.h"
#include "shim.h"
/* By path: CUDA's include directory, searched before tracer/, has a cupti.h of its own. */
#include "../tracer/cupti.h"
#include "../tracer/record.h"

typedef uint64_t (*trace_clock_t)(void);

/* ---------------------------------------------------------------- trace.c */

/* The recorder while recording (set before shim_trace_on, cleared after it). */
extern trc_rec_t *shim_trace_rec;
/* Records ev unless the level drops its type (ELIXIR_TRACE_LEVEL after the profiled
 * iterations); ev->time must be set. */
void shim_trace_emit(const trc_event_t *ev);

/* For the other files' hooks: enter returns 1 while recording (device described when first
 * seen; shim_trace_exit must follow), 0 when not recording. */
int shim_trace_enter(int device);
void shim_trace_exit(void);

/* ---------------------------------------------------------------- the recording's state
 *
 * Shared by trace.c (threads, levels, devices, call sites, iterations), trace_stream.c (stream
 * numbers), trace_ops.c (operations, allocation ids, residency's events) and trace_start.c
 * (start-up, exit and fork); defined in trace.c.
 */

#define FCACHE 256              /* function names cached per thread */
#define WCACHE 512              /* argument words -> allocation ids cached per thread */
#define MEMO 16                 /* argument lists -> allocation id lists cached per thread */
#define MEMO_WORDS 32           /* the longest argument list (in words) such a cache holds */
#define MEMO_MIN 4              /* the shortest: below it the word cache is as quick */
#define OP_BLOCK 64             /* operation ids a thread takes at once */
#define STREAMS 4096            /* stream handles numbered without a lock (more: trace_st.over) */
#define STREAM_UNKNOWN 0xffffffffu
#define STREAM_GONE 0           /* a handle's number when its stream was destroyed */
#define MAX_TRACE_DEVICES 64

enum { WIN_BEFORE, WIN_OPEN, WIN_AFTER };

typedef struct fslot {
    CUfunction f;
    unsigned gen;
    uint32_t id;
} fslot_t;

/* An argument word, the allocation it points into (0: none) and its offset there, valid
 * while no allocation was made or freed since (gen). */
typedef struct wslot {
    uint64_t word, gen, id, off;
} wslot_t;

/* The allocations a whole argument list reaches (ids sorted, without repeats, each with the
 * lowest offset of the list's pointers into it), valid while no allocation was made or freed
 * since (gen) and for the arena [lo, ...).  Kernels are launched again and again with the
 * same arguments: such a launch costs one comparison. */
typedef struct memo {
    uint64_t gen, lo;
    uint32_t nwords, nids;
    uint64_t words[MEMO_WORDS];
    uint64_t ids[MEMO_WORDS];
    uint64_t offs[MEMO_WORDS];
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
    uint64_t *offs;                 /* per id: the lowest offset of its pointers there */
    const uint64_t *hit_ids;        /* instead of ids when a memo answered: its own (not NULL) */
    const uint64_t *hit_offs;       /* and its offsets */
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

typedef struct trace_state {
    trace_drv_t drv;
    _Atomic(trace_clock_t) clock;
    int sim, level, depth;
    long warmup, profile;
    _Atomic int closing;
    _Atomic int write_failed;       /* a write error stopped recording (rec_failed said so) */
    int asym;                       /* membarrier registered: trace_enter() needs no fence */
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
} trace_state_t;

extern trace_state_t trace_st;
/* The calling thread's state; NULL before its first operation. */
extern SHIM_TLS tstate_t *trace_tls_self;

/* CLOCK_MONOTONIC in ns. */
uint64_t trace_mono_ns(void);

/* The trace's clock, read inline where every operation reads it (acquire: a clock installed
 * while recording, shim_timing_retire's, reads what was set before it). */
static inline uint64_t trace_now(void)
{
    trace_clock_t c = atomic_load_explicit(&trace_st.clock, memory_order_acquire);
    return c ? c() : trace_mono_ns();
}

static inline uint64_t trace_hash_ptr(uint64_t p)
{
    return (p * 0x9E3779B97F4A7C15ull) >> 32;
}

/* The key's destructor: a thread's state freed as it exits. */
void trace_thread_gone(void *arg);
/* The calling thread's state, made on its first use; NULL when out of memory. */
__attribute__((noinline)) tstate_t *trace_self_new(void);

/* The calling thread's state, made on first use; NULL when out of memory. */
static inline tstate_t *trace_self(void)
{
    tstate_t *th = trace_tls_self;

    return __builtin_expect(th != NULL, 1) ? th : trace_self_new();
}

/*
 * Enter an operation or hook: the thread's state, marked busy, or NULL when not recording.
 * busy is stored before `closing` is read and closing is stored before busy is read, so
 * either the closer waits for this thread or this thread sees it closing.  The order is a
 * full fence on both sides: here only a compiler barrier when the process registered for
 * membarrier (trace_st.asym), since the closer then makes every running thread execute a full
 * fence (close_fence) between its store and its reads; else both sides sequentially
 * consistent.
 */
static inline tstate_t *trace_enter(void)
{
    tstate_t *th = SHIM_TRACING() ? trace_self() : NULL;

    if (!th)
        return NULL;
    if (th->depth++ == 0) {
        if (__builtin_expect(trace_st.asym, 1)) {
            atomic_store_explicit(&th->busy, 1, memory_order_relaxed);
            atomic_signal_fence(memory_order_seq_cst);
        } else {
            atomic_store(&th->busy, 1);
        }
    }
    if (atomic_load(&trace_st.closing) ||
        !atomic_load_explicit(&shim_trace_on, memory_order_acquire)) {
        if (--th->depth == 0)
            atomic_store_explicit(&th->busy, 0, memory_order_release);
        return NULL;
    }
    return th;
}

static inline void trace_leave(tstate_t *th)
{
    if (--th->depth == 0)
        atomic_store_explicit(&th->busy, 0, memory_order_release);
}

/* The thread's next block of OP_BLOCK operation ids. */
__attribute__((noinline)) void trace_op_block(tstate_t *th);

/* A new operation id: from the thread's block, a new block every OP_BLOCK ids. */
static inline uint64_t trace_op_new(tstate_t *th)
{
    if (__builtin_expect(th->next_op == th->end_op, 0))
        trace_op_block(th);
    return th->next_op++;
}

/* Records ev, which trace_kept() let through just before. */
void trace_record_kept(const trc_event_t *ev);
/* Would an event of this type be kept now? (Saves work on dropped ones.) */
int trace_kept(trc_type_t type);
/* The string id of s in the trace (0 when it could not be recorded). */
long trace_intern(const char *s);
/* Describe device `dev` the first time it is seen. */
void trace_device_seen(int dev);
/* The range libelixir.so is mapped at, to tell its frames from the caller's. */
void trace_find_own_range(void);
/*
 * The call site of the allocation being recorded: the stack from the first frame outside
 * libelixir.so (the application's, or its runtime's), at most ELIXIR_TRACE_DEPTH frames,
 * with the Python frames shim_trace_site_begin read, if any.
 * Frame i of this unwind is frame i + 1 of the recorder's (whose frame 0 is itself).
 */
__attribute__((noinline)) uint32_t trace_call_site(const tstate_t *th);
/* After iteration `cur` began: open or close the profiling window, and retire CUPTI an
 * iteration after it closed. */
void trace_window_at(int64_t cur);
/* A launch of function `func` at `time`: the iterations it reveals. */
void trace_detect(uint32_t func, uint64_t time);
/* A barrier for the iteration detector (a copy between host and device, a host
 * synchronisation). */
void trace_barrier(void);

/* ---------------------------------------------------------------- trace_stream.c */

/* The number of stream handle s from the table.  Keys are never removed, so readers need no
 * lock: a key is published (release) after its value.  A handle whose stream was destroyed,
 * or that is not in the table, is numbered under the lock.  Out of line: trace_stream_no asks only
 * when its memo misses. */
__attribute__((noinline)) uint64_t trace_stream_lookup(CUstream s);

/* The small number of stream s as hook h names it.  The thread keeps the last one it looked
 * up (a training loop launches on one stream mostly); the stream's destruction clears that
 * memo (shim_trace_stream_destroy), since the handle's number changes only then. */
static inline uint64_t trace_stream_no(tstate_t *th, CUstream s, shim_hook_t h)
{
    if (s == CU_STREAM_LEGACY || (!s && !shim_hook_per_thread[h]))
        return 0;
    if (!s || s == CU_STREAM_PER_THREAD) {
        if (!th->ptds)
            th->ptds = atomic_fetch_add(&trace_st.stream_next, 1) + 1;
        return th->ptds;
    }
    if (s != atomic_load_explicit(&th->last_s, memory_order_relaxed)) {
        th->last_sno = trace_stream_lookup(s);
        atomic_store_explicit(&th->last_s, s, memory_order_relaxed);
    }
    return th->last_sno;
}

/* ---------------------------------------------------------------- trace_plan.c */

/* Emits a MAPPING record for every device with remaps since its last one (an iteration mark,
 * and at exit while the recorder is still open). */
void shim_trace_mapping_flush(void);

/* ---------------------------------------------------------------- trace_name.c */

/* The trace file's n-th name from the ELIXIR_TRACE pattern into out (cap bytes): %p is the
 * process id, %h the host name, %% a '%'; n > 0 puts ".n" before the extension of the file's
 * name (the names tried when the previous ones exist).  0 or -ENAMETOOLONG. */
int shim_trace_name(const char *pattern, unsigned n, char *out, size_t cap);

/* ---------------------------------------------------------------- trace_time.c */

/* Chooses where device times come from (ELIXIR_CUPTI; CUPTI's activity or CUDA events) and
 * says so in the log, once.  elapsed: the driver's cuEventElapsedTime (NULL: no events
 * timing); base: the trace's clock until now, which carries CUPTI's on once it is retired.
 * *clock: CUPTI's clock when CUPTI is in use, else NULL.  Returns 0, or -1 when ELIXIR_CUPTI
 * names a library that does not load or is no CUPTI (reported as fatal: the caller stops the
 * program); CUPTI missing under auto, or held by another tool, falls back to events. */
int shim_timing_open(PFN_cuEventElapsedTime_v2000 elapsed, trace_clock_t base,
                     trace_clock_t *clock);
/* The profiled iterations begin (1) or end (0). */
void shim_timing_window(int open);
/* Around the driver call of operation op on stream s (hook h) of context ctx (NULL: the
 * current one): before returns a handle for after (NULL when not timed). */
void *shim_timing_before(uint64_t op, CUstream s, shim_hook_t h, CUcontext ctx);
void shim_timing_after(void *handle, CUresult r, CUstream s, shim_hook_t h);
/* The copy of a planned move (id: its move id) on stream s of context ctx, timed by a pair of
 * events whatever the operations' source, when ctx has a fresh reference; else NULL, and the
 * next poll makes one (never waits: called under residency's lock).  after records the second
 * event (handle not NULL); the pair's TIMING record names the move id. */
void *shim_timing_move_before(uint64_t id, CUcontext ctx, CUstream s);
void shim_timing_move_after(void *handle, CUresult r, CUstream s);
/* For trace_plan.c: a new id from the operation id counter (0 when not recording). */
uint64_t shim_trace_new_id(void);
/* Records the times of operations whose events have completed (never waits); nothing to do
 * while shim_timing_pending (event pairs not yet read) is 0, which callers test inline. */
extern _Atomic unsigned shim_timing_pending;
void shim_timing_poll(void);
/* Before context ctx, or when ctx is NULL the primary context of device dev, may be destroyed:
 * the pairs of those contexts (of every context of dev, for a primary one) are waited for
 * and read, and their events and streams destroyed while the contexts exist; a context that
 * lives on gets new ones when it is timed again. */
void shim_timing_ctx_gone(CUcontext ctx, int dev);
/* A stream is being destroyed: its handle may name another stream from now on. */
void shim_timing_stream_gone(void);
/* Once the profiled iterations' records have all come (an iteration after them): CUPTI's
 * records flushed, its subscription given up, and its clock replaced, since reading it costs
 * a call into the library per event; the client stays open, as a thread may be reading its
 * clock.  Returns the clock to use from now on (CUPTI's last time carried on by the
 * monotonic clock), or NULL to keep the current one. */
trace_clock_t shim_timing_retire(void);
/* At exit: the last times (waiting for their events), then CUPTI retired and closed; returns
 * the clock to use from now on, or NULL to keep the current one. */
trace_clock_t shim_timing_stop(void);
void shim_timing_after_fork(void);

#endif
