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
 *
 * This file keeps the recording's state (trace_int.h) and threads, levels, devices, call
 * sites and iterations; stream numbers are trace_stream.c's, operations, allocation ids and
 * residency's events trace_ops.c's, start-up, exit and fork trace_start.c's.
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

_Atomic int shim_trace_on;
_Atomic int shim_trace_timed;       /* trace_st.window == WIN_OPEN, for the wrappers */
trc_rec_t *shim_trace_rec;

trace_state_t trace_st = {
    .win_lock = PTHREAD_MUTEX_INITIALIZER,
    .states_lock = PTHREAD_MUTEX_INITIALIZER,
    .iter_lock = SHIM_LOCK_INIT,
    .alloc_lock = { ATOMIC_FLAG_INIT },
    .stream_lock = PTHREAD_MUTEX_INITIALIZER,
};

SHIM_TLS tstate_t *trace_tls_self;

/* ---------------------------------------------------------------- small helpers */

uint64_t trace_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t shim_trace_now(void)
{
    return trace_now();
}

/* ---------------------------------------------------------------- threads */

void trace_thread_gone(void *arg)
{
    tstate_t *th = arg;

    pthread_mutex_lock(&trace_st.states_lock);
    for (tstate_t **p = &trace_st.states; *p; p = &(*p)->next)
        if (*p == th) {
            *p = th->next;
            break;
        }
    pthread_mutex_unlock(&trace_st.states_lock);
    trace_tls_self = NULL;
    free(th->ids);
    free(th->offs);
    free(th);
}

/* The calling thread's state, made on its first use; NULL when out of memory. */
__attribute__((noinline)) tstate_t *trace_self_new(void)
{
    tstate_t *th = calloc(1, sizeof(*th));

    if (!th)
        return NULL;
    th->ctx_dev = -1;
    pthread_mutex_lock(&trace_st.states_lock);
    th->next = trace_st.states;
    trace_st.states = th;
    pthread_mutex_unlock(&trace_st.states_lock);
    pthread_setspecific(trace_st.key, th);
    trace_tls_self = th;
    return th;
}


int shim_trace_enter(int device)
{
    tstate_t *th = trace_enter();

    if (th)
        trace_device_seen(device);
    return th != NULL;
}

void shim_trace_exit(void)
{
    trace_leave(trace_tls_self);
}


uint64_t shim_trace_new_id(void)
{
    tstate_t *th = trace_enter();
    uint64_t id = th ? trace_op_new(th) : 0;

    if (th)
        trace_leave(th);
    return id;
}

/* The thread's next block of OP_BLOCK operation ids. */
__attribute__((noinline)) void trace_op_block(tstate_t *th)
{
    uint64_t base = atomic_fetch_add_explicit(&trace_st.op_blocks, OP_BLOCK, memory_order_relaxed);

    th->next_op = base + 1;
    th->end_op = base + 1 + OP_BLOCK;
}

/* ---------------------------------------------------------------- levels */

void shim_trace_emit(const trc_event_t *ev)
{
    trc_rec_t *rec = shim_trace_rec;

    if (!rec)
        return;
    if (atomic_load_explicit(&trace_st.window, memory_order_relaxed) == WIN_AFTER) {
        switch (ev->type) {
        case TRC_EV_LAUNCH:
        case TRC_EV_COPY:
        case TRC_EV_MEMSET:
        case TRC_EV_NCCL:
            if (trace_st.level < SHIM_TRACE_ALL)
                return;
            break;
        case TRC_EV_ALLOC:
        case TRC_EV_FREE:
            if (trace_st.level < SHIM_TRACE_ALLOCS)
                return;
            break;
        default:
            break;
        }
    }
    trc_rec_event(rec, ev);
}

/* Records ev, which trace_kept() let through just before. */
void trace_record_kept(const trc_event_t *ev)
{
    trc_rec_t *rec = shim_trace_rec;

    if (rec)
        trc_rec_event(rec, ev);
}

/* Would an event of this type be kept now? (Saves work on dropped ones.) */
int trace_kept(trc_type_t type)
{
    if (atomic_load_explicit(&trace_st.window, memory_order_relaxed) != WIN_AFTER)
        return 1;
    if (type == TRC_EV_ALLOC || type == TRC_EV_FREE)
        return trace_st.level >= SHIM_TRACE_ALLOCS;
    return trace_st.level >= SHIM_TRACE_ALL;
}

/* ---------------------------------------------------------------- devices and names */

long trace_intern(const char *s)
{
    long id = trc_rec_string(shim_trace_rec, s);
    return id > 0 ? id : 0;
}

/* Describe device `dev` the first time it is seen. */
void trace_device_seen(int dev)
{
    if (dev < 0 || dev >= MAX_TRACE_DEVICES)
        return;
    uint64_t bit = 1ull << dev;
    if (atomic_load_explicit(&trace_st.devices, memory_order_relaxed) & bit ||
        atomic_fetch_or(&trace_st.devices, bit) & bit)
        return;
    CUdevice d = dev;
    char name[256] = "?";
    size_t mem = 0;
    int major = 0, minor = 0, sms = 0;
    shim_pfn_cuDeviceGetAttribute_t attr = SHIM_DRIVER_CALL(cuDeviceGetAttribute);
    if (trace_st.drv.device_get)
        trace_st.drv.device_get(&d, dev);
    if (trace_st.drv.device_name && trace_st.drv.device_name(name, sizeof(name), d) != CUDA_SUCCESS)
        snprintf(name, sizeof(name), "?");
    if (trace_st.drv.device_mem)
        trace_st.drv.device_mem(&mem, d);
    if (attr) {
        attr(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d);
        attr(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d);
        attr(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d);
    }
    trc_event_t ev = { .type = TRC_EV_DEVICE, .time = shim_trace_now() };
    ev.u.device = (trc_device_t){ .device = dev, .name_id = (uint32_t)trace_intern(name),
                                  .total_mem = mem, .cc_major = (uint32_t)major,
                                  .cc_minor = (uint32_t)minor, .sm_count = (uint32_t)sms };
    shim_trace_emit(&ev);
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
        if (!trace_st.own_lo || lo < trace_st.own_lo)
            trace_st.own_lo = lo;
        if (hi > trace_st.own_hi)
            trace_st.own_hi = hi;
    }
    return 1;
}

/* The range libelixir.so is mapped at, to tell its frames from the caller's. */
void trace_find_own_range(void)
{
    Dl_info info;

    if (dladdr((void *)trace_find_own_range, &info) && info.dli_fbase)
        dl_iterate_phdr(own_range, info.dli_fbase);
}

/* The first return address outside libelixir.so: where the program called the shim. */
static __attribute__((noinline)) const void *shim_caller(void)
{
    void *raw[32];
    int n = unw_backtrace(raw, 32), k = 0;

    while (k < n && (uintptr_t)raw[k] >= trace_st.own_lo && (uintptr_t)raw[k] < trace_st.own_hi)
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

    if (!SHIM_TRACING() || !trace_st.depth)
        return;
    int n = py_frames(py);             /* with no state of ours held: it may block, or exit */
    tstate_t *th = trace_enter();
    if (!th)
        return;
    if (th->py_nest++ == 0) {
        memcpy(th->py, py, (size_t)n * sizeof(py[0]));
        th->npy = n;
    }
    trace_leave(th);
}

void shim_trace_site_end(void)
{
    tstate_t *th = trace_enter();

    if (!th)
        return;
    if (th->py_nest > 0 && --th->py_nest == 0)
        th->npy = 0;
    trace_leave(th);
}

/*
 * The call site of the allocation being recorded: the stack from the first frame outside
 * libelixir.so (the application's, or its runtime's), at most ELIXIR_TRACE_DEPTH frames,
 * with the Python frames shim_trace_site_begin read, if any.
 * Frame i of this unwind is frame i + 1 of the recorder's (whose frame 0 is itself).
 */
__attribute__((noinline)) uint32_t trace_call_site(const tstate_t *th)
{
    void *raw[64];
    int n = unw_backtrace(raw, 64), k = 0;

    while (k < n && (uintptr_t)raw[k] >= trace_st.own_lo && (uintptr_t)raw[k] < trace_st.own_hi)
        k++;
    long id = k < n ? trc_rec_stack_py(shim_trace_rec, k, trace_st.depth, th->py, th->npy)
              : th->npy ? trc_rec_stack_py(shim_trace_rec, 0, 0, th->py, th->npy) : 0;
    return id > 0 ? (uint32_t)id : 0;
}

/* ---------------------------------------------------------------- iterations */

/* CUPTI has nothing left to time (trace_st.win_lock held): its clock is given up too. */
static void retire_cupti(int64_t cur)
{
    atomic_store(&trace_st.retire_at, 0);
    trace_clock_t c = shim_timing_retire();
    if (!c)
        return;
    atomic_store_explicit(&trace_st.clock, c, memory_order_release);
    SHIM_INFO(INIT, "trace: CUPTI released at iteration %lld (the trace's clock carries on "
              "from its last time)", (long long)cur);
}

/* After iteration `cur` began: open or close the profiling window, and retire CUPTI an
 * iteration after it closed. */
void trace_window_at(int64_t cur)
{
    pthread_mutex_lock(&trace_st.win_lock);
    int w = atomic_load(&trace_st.window);
    if (w == WIN_BEFORE && cur >= trace_st.warmup) {
        trace_st.win_end = cur + trace_st.profile;
        if (trace_st.profile > 0) {
            atomic_store(&trace_st.window, WIN_OPEN);
            atomic_store(&shim_trace_timed, 1);
            shim_timing_window(1);
            SHIM_INFO(INIT, "trace: profiling iterations %lld to %lld", (long long)cur,
                      (long long)trace_st.win_end - 1);
        } else {
            atomic_store(&trace_st.window, WIN_AFTER);
            retire_cupti(cur);
        }
    } else if (w == WIN_OPEN && cur >= trace_st.win_end) {
        atomic_store(&trace_st.window, WIN_AFTER);
        atomic_store(&shim_trace_timed, 0);
        shim_timing_window(0);
        atomic_store(&trace_st.retire_at, cur + 1);
        SHIM_INFO(INIT, "trace: profiling done at iteration %lld", (long long)cur);
    } else if (w == WIN_AFTER && atomic_load(&trace_st.retire_at) &&
               cur >= atomic_load(&trace_st.retire_at)) {
        retire_cupti(cur); /* the window's last operations, and their records, are done */
    }
    pthread_mutex_unlock(&trace_st.win_lock);
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
    if (atomic_load_explicit(&trace_st.window, memory_order_relaxed) != WIN_AFTER ||
        atomic_load_explicit(&trace_st.retire_at, memory_order_relaxed))
        trace_window_at((int64_t)marks[n - 1].index);
}

/* A launch of function `func` at `time`: the iterations it reveals. */
void trace_detect(uint32_t func, uint64_t time)
{
    iter_mark_t marks[ITER_MAX_MARKS];

    shim_lock(&trace_st.iter_lock);
    int n = iter_launch(trace_st.iter, func, time, marks);
    shim_unlock(&trace_st.iter_lock);
    if (__builtin_expect(n > 0, 0))
        iterations(marks, n);
}

void trace_barrier(void)
{
    shim_lock(&trace_st.iter_lock);
    iter_barrier(trace_st.iter);
    shim_unlock(&trace_st.iter_lock);
}
