/* SPDX-License-Identifier: MIT */
/*
 * trace_start.c - starting and stopping the recording: start-up creates the trace file, chooses
 * the clock, records the process and the options; closing (at exit) waits for every thread to
 * leave the operation it is recording; a forked child abandons the recorder and records
 * nothing.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "trace_int.h"

#define CLOSE_WAIT_NS 2000000000ull

/* The recorder's clock: the one chosen at start-up (set before anything is recorded). */
static uint64_t rec_clock(void)
{
    return shim_trace_now();
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
                                    .exe_id = (uint32_t)trace_intern(exe),
                                    .cmdline_id = (uint32_t)trace_intern(cmd),
                                    .host_id = (uint32_t)trace_intern(host) };
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
        opts[n++] = (trc_option_t){ .name_id = (uint32_t)trace_intern(name),
                                    .value_id = (uint32_t)trace_intern(shim_opt_str(o)) };
    }
    for (char **e = environ; e && *e && n < MAX_OPTS; e++) {
        const char *eq = strchr(*e, '=');
        if (strncmp(*e, "ELIXIR_", 7) != 0 || !eq || in_table(*e) ||
            (size_t)(eq - *e) >= sizeof(name))
            continue;
        snprintf(name, sizeof(name), "%.*s", (int)(eq - *e), *e);
        opts[n++] = (trc_option_t){ .name_id = (uint32_t)trace_intern(name),
                                    .value_id = (uint32_t)trace_intern(eq + 1) };
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
    *(void **)&trace_st.drv.func_name = drv_sym(d, "cuFuncGetName");
    *(void **)&trace_st.drv.kernel_name = drv_sym(d, "cuKernelGetName");
    *(void **)&trace_st.drv.device_get = drv_sym(d, "cuDeviceGet");
    *(void **)&trace_st.drv.device_name = drv_sym(d, "cuDeviceGetName");
    *(void **)&trace_st.drv.device_mem = drv_sym(d, "cuDeviceTotalMem_v2");
    *(void **)&trace_st.drv.elapsed = drv_sym(d, "cuEventElapsedTime_v2");
    if (!trace_st.drv.elapsed)
        *(void **)&trace_st.drv.elapsed = drv_sym(d, "cuEventElapsedTime");
    /* Only the simulator exports its virtual clock (sim/include/simcuda.h). */
    *(void **)&trace_st.drv.sim_clock = drv_sym(d, "sim_activity_clock");
}

static void at_exit(void)
{
    shim_trace_stop();
}

/* Options and the state that does not depend on the file. */
static int prepare(void)
{
    trace_st.level = (int)shim_opt_int(SHIM_OPT_TRACE_LEVEL);
    trace_st.depth = (int)shim_opt_int(SHIM_OPT_TRACE_DEPTH);
    trace_st.warmup = shim_opt_int(SHIM_OPT_PROFILE_WARMUP);
    trace_st.profile = shim_opt_int(SHIM_OPT_PROFILE_ITERATIONS);
    trace_find_own_range();
    if (pthread_key_create(&trace_st.key, trace_thread_gone) != 0)
        return -ENOMEM;
    return iter_create(&trace_st.iter);
}

/* The recorder is open: CUPTI's clock (cupti, when CUPTI times the profile), the first
 * records, the exit handler, then recording on. */
static void begin_recording(trc_rec_t *rec, const char *path, trace_clock_t cupti)
{
    shim_trace_rec = rec;
    trace_st.asym = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
    if (cupti)
        trace_st.clock = cupti;
    record_process();
    record_options();
    trc_rec_flush_thread(rec);
    if (trace_st.warmup == 0)
        trace_window_at(0);
    atexit(at_exit);
    atomic_store(&shim_trace_on, 1);
    SHIM_INFO(INIT, "trace: recording to %s (level %s, call sites %d frames, %s clock)", path,
              shim_opt_str(SHIM_OPT_TRACE_LEVEL), trace_st.depth,
              cupti ? "CUPTI's" : trace_st.sim ? "the simulator's virtual" : "the monotonic");
}

/* The recorder met a write error and stopped (from whichever thread met it). */
static void rec_failed(int err)
{
    atomic_store(&trace_st.write_failed, 1);
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

/* Recording begins where ELIXIR_TRACE asks for it: 0, or -1 when it cannot (reported). */
static int start(const shim_driver_t *d)
{
    const char *path = shim_opt_str(SHIM_OPT_TRACE);
    trc_rec_t *rec;

    if (!path[0] || !d->ok)
        return 0;
    if (shim_disabled()) {
        SHIM_WARN(INIT, "ELIXIR_TRACE=%s is ignored: ELIXIR_DISABLE=1 turns the shim off", path);
        return 0;
    }
    resolve_driver(d);
    trace_st.sim = trace_st.drv.sim_clock != NULL;
    trace_st.clock = trace_st.sim ? trace_st.drv.sim_clock : trace_mono_ns;
    trc_rec_config_t cfg = { .flags = trace_st.sim ? TRC_FLAG_VIRTUAL_TIME : 0, .clock = rec_clock,
                             .on_error = rec_failed };
    trace_clock_t cupti;
    if (shim_timing_open(trace_st.drv.elapsed, trace_st.clock, &cupti) < 0)
        return -1; /* (a library ELIXIR_CUPTI names does not load: reported, before any file) */
    char name[PATH_MAX];
    int rc = prepare(), prepared = rc == 0;
    if (prepared)
        rc = open_unique(path, &cfg, &rec, name, sizeof(name));
    if (rc < 0) {
        shim_log_fatal("ELIXIR_TRACE=%s: cannot record: %s%s; the program stops (exit status "
                       "%d)", path, strerror(-rc),
                       prepared ? ": expected a file name this process can create" : "",
                       SHIM_EXIT_CONFIG);
        return -1;
    }
    begin_recording(rec, name, cupti);
    return 0;
}

/*
 * Once per process, before the driver is published, so that no thread can issue an operation
 * before recording is on.  Threads that race here wait for the one starting the trace, but
 * not for ever: one of them may be inside a library constructor, holding the dynamic
 * loader's lock that the start (dlopen of CUPTI) needs; after a second it goes on, and its
 * first operations may be missed.
 */
int shim_trace_start(const shim_driver_t *d)
{
    static _Atomic int state;       /* 0: not started, 1: starting, 2: done */
    int zero = 0;

    if (atomic_compare_exchange_strong(&state, &zero, 1)) {
        int rc = start(d);
        atomic_store(&state, 2);
        return rc;
    }
    for (uint64_t t0 = trace_mono_ns();
         atomic_load(&state) != 2 && trace_mono_ns() - t0 < 1000000000u;)
        sched_yield();
    return 0;
}

/* ---------------------------------------------------------------- exit and fork */

/* After `closing` was stored: the closer's half of trace_enter()'s fence (see there).  Once the
 * process registered (trace_st.asym, set at start-up before any thread records) the barrier cannot
 * fail; should it, the closer goes on as it would without the barrier, and the wait for
 * busy threads still sees every thread that entered before closing was stored and became
 * visible to it. */
static void close_fence(void)
{
    if (trace_st.asym && syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0)
        SHIM_WARN(INIT, "trace: membarrier failed at exit: %s", strerror(errno));
}

/* Waits until no thread is inside an operation; 0, or -ETIMEDOUT after CLOSE_WAIT_NS. */
static int wait_idle(void)
{
    uint64_t t0 = trace_mono_ns();
    tstate_t *me = trace_tls_self;
    int idle = 0;

    while (!idle && trace_mono_ns() - t0 < CLOSE_WAIT_NS) {
        idle = 1;
        pthread_mutex_lock(&trace_st.states_lock);
        for (tstate_t *th = trace_st.states; th; th = th->next)
            if (th != me && atomic_load(&th->busy))
                idle = 0;
        pthread_mutex_unlock(&trace_st.states_lock);
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
    atomic_store(&trace_st.closing, 1);
    close_fence();
    int idle = wait_idle();
    trace_clock_t after = shim_timing_stop();
    if (after)
        trace_st.clock = after;
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
    if (rc < 0 && !atomic_load(&trace_st.write_failed))
        SHIM_WARN(INIT, "trace: writing the trace failed: %s", strerror(-rc));
}

void shim_trace_after_fork(void)
{
    if (!shim_trace_rec)
        return;
    atomic_store(&shim_trace_on, 0);
    atomic_store(&trace_st.closing, 1);
    trc_rec_abandon(shim_trace_rec);
    shim_trace_rec = NULL;
    shim_timing_after_fork();
    /* CUPTI's clock was the parent's (trace_now() falls back) */
    atomic_store(&trace_st.clock, NULL);
    pthread_mutex_init(&trace_st.states_lock, NULL);
    pthread_mutex_init(&trace_st.win_lock, NULL);
    pthread_mutex_init(&trace_st.stream_lock, NULL);
    trace_st.iter_lock = (shim_lock_t)SHIM_LOCK_INIT;
    atomic_flag_clear(&trace_st.alloc_lock.f);
}

void shim_trace_nccl(const char *op, uint64_t send, uint64_t recv, uint64_t bytes, uint64_t comm,
                     int peer, CUstream s, int device)
{
    tstate_t *th = trace_enter();

    if (!th)
        return;
    if (trace_kept(TRC_EV_NCCL)) {
        trace_device_seen(device);
        trc_event_t ev = { .type = TRC_EV_NCCL, .time = shim_trace_now() };
        ev.u.nccl = (trc_nccl_t){ .op_id = (uint32_t)trace_intern(op), .send = send, .recv = recv,
                                  .bytes = bytes, .comm = comm, .peer = peer,
                                  .stream = trace_stream_no(th, s, SHIM_HOOK_cuLaunchKernel),
                                  .device = device };
        shim_trace_emit(&ev);
    }
    trace_leave(th);
}
