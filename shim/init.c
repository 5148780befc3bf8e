/* SPDX-License-Identifier: MIT */
/*
 * init.c - start-up of libelixir.so: options, log, and the real driver behind the wrappers.
 *
 * libelixir.so is preloaded into programs that may never touch CUDA, and its dlsym runs
 * while the process is still being loaded, so nothing happens at load time: the constructor
 * only notes that the C runtime is up.  The first wrapper call (or cuGetProcAddress) starts
 * the shim:
 *   1. configure: options from `environ`, the log, fork handlers; once, under cfg_lock,
 *      which is never held across a call into the dynamic loader.  Bad configuration stops
 *      the program here (exit status SHIM_EXIT_CONFIG, options.c);
 *   2. open the driver: dlopen("libcuda.so.1") (RTLD_NOLOAD first), check it is not this
 *      library, resolve every hooked name and every SHIM_DRIVER_CALLS name in it, and build
 *      the map behind cuGetProcAddress (skipped with ELIXIR_DISABLE).  No lock is held: the
 *      loader takes its own lock, and a library constructor running under that lock may call
 *      a wrapper on another thread; holding ours here could deadlock against it.  Threads
 *      that race through this step each build a driver table; the first one published with
 *      compare-and-swap wins, the others discard theirs.
 * A wrapper called on the thread that is inside step 2 (the driver's own start-up calling
 * back into a hooked name) does not wait for itself: it finds the next definition of its
 * symbol after this library and calls that.
 *
 * Between the two steps the trace is started (shim_trace_start: once per process, nothing
 * unless ELIXIR_TRACE is set), before the driver is published so that every operation of
 * every thread is recorded; its own calls into hooked names, and CUPTI's, take the step-2
 * path above.  It registers an atexit handler: at exit the trace is closed first (atexit
 * handlers run before the destructors of shared objects, so libcuda and libcupti are still
 * there), then shim_unload prints the statistics.
 *
 * Fork: the child keeps the published driver (the same mappings), unlocks cfg_lock, starts
 * its statistics from zero, reopens a per-process log file, and records no trace (the
 * parent's stays the parent's).  Residency forgets the arenas set up in the parent (CUDA
 * cannot be used in a child of a process that initialised it) and sets up a device's arena
 * afresh in a child forked before CUDA was initialised, which may use CUDA.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include "shim.h"

shim_driver_t *_Atomic shim_drv;

static pthread_mutex_t cfg_lock = PTHREAD_MUTEX_INITIALIZER;
static int cfg_done;                    /* under cfg_lock */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static SHIM_TLS int in_init;            /* this thread is opening the driver */
static _Atomic int disabled = -1;       /* ELIXIR_DISABLE; -1 until read */
static _Atomic(const void *) own_base;  /* load address of libelixir.so */
static _Atomic unsigned char missing_warned[SHIM_NHOOKS];
static shim_driver_t no_driver;         /* published when libcuda.so.1 cannot be used */

static void fork_prepare(void)
{
    pthread_mutex_lock(&cfg_lock);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&cfg_lock);
}

static void fork_child(void)
{
    pthread_mutex_unlock(&cfg_lock);
    in_init = 0;
    shim_stats_reset();
    res_after_fork();
    shim_log_after_fork();
    shim_trace_after_fork();
}

static void register_atfork(void)
{
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

int shim_disabled(void)
{
    int v = atomic_load_explicit(&disabled, memory_order_relaxed);

    if (v < 0) {
        v = shim_opt_peek_bool(SHIM_OPT_DISABLE);
        atomic_store_explicit(&disabled, v, memory_order_relaxed);
    }
    return v;
}

int shim_is_own(const void *addr)
{
    const void *base = atomic_load_explicit(&own_base, memory_order_relaxed);
    Dl_info info;

    if (!base) {
        if (!dladdr((void *)shim_is_own, &info))
            return 0;
        base = info.dli_fbase;
        atomic_store_explicit(&own_base, base, memory_order_relaxed);
    }
    return dladdr(addr, &info) && info.dli_fbase == base;
}

/* Options and log, once per process.  Bad configuration (shim_options_report) stops the
 * program here, inside its first CUDA call and before the driver is opened: exit() with
 * SHIM_EXIT_CONFIG, after cfg_lock is released, so that the program's atexit handlers and
 * stdio buffers run as in any exit (a CUDA call they make on this thread goes straight to
 * the driver, as calls made during start-up do). */
static void configure(void)
{
    int errors = 0;

    pthread_once(&atfork_once, register_atfork);
    pthread_mutex_lock(&cfg_lock);
    if (!cfg_done) {
        shim_options_load();
        shim_log_configure();
        errors = shim_options_report();
        shim_host_timing = shim_opt_int(SHIM_OPT_STATS) != 0;
        cfg_done = 1;
    }
    pthread_mutex_unlock(&cfg_lock);
    if (errors)
        exit(SHIM_EXIT_CONFIG);
}

/* libcuda.so.1 as a handle, checked to be a driver other than this library; NULL if none. */
static void *open_libcuda(void *(*rdlsym)(void *, const char *))
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
    void *probe;

    if (!h)
        h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h) {
        SHIM_ERROR(INIT, "cannot load libcuda.so.1: %s", dlerror());
        return NULL;
    }
    probe = rdlsym(h, "cuInit");
    if (!probe || shim_is_own(probe)) {
        SHIM_ERROR(INIT, "libcuda.so.1 is not a CUDA driver (it resolves to %s)",
                   probe ? "libelixir.so itself" : "a library without cuInit");
        dlclose(h);
        return NULL;
    }
    return h;
}

/* A function of the driver, or NULL when it has none (never one of our own wrappers). */
static void *resolve(void *(*rdlsym)(void *, const char *), void *h, const char *name)
{
    void *p = rdlsym(h, name);

    return p && !shim_is_own(p) ? p : NULL;
}

/* A new driver table, or NULL when libcuda.so.1 cannot be used. */
static shim_driver_t *open_driver(void)
{
    void *(*rdlsym)(void *, const char *) = shim_real_dlsym();
    shim_driver_t *d;
    void *h;

    if (!rdlsym || !(h = open_libcuda(rdlsym)))
        return NULL;
    d = calloc(1, sizeof(*d));
    if (!d) {
        dlclose(h);
        return NULL;
    }
    d->ok = 1;
    d->handle = h;
    for (int i = 0; i < SHIM_NHOOKS; i++)
        d->fn[i] = resolve(rdlsym, h, shim_hook_names[i]);
    for (int i = 0; i < SHIM_NCALLS; i++)
        d->call[i] = resolve(rdlsym, h, shim_call_names[i]);
    /* Only the simulator exports its virtual clock (sim/include/simcuda.h). */
    *(void **)&d->sim_clock = resolve(rdlsym, h, "sim_activity_clock");
    if (!shim_disabled())
        shim_proc_map_build(d);
    return d;
}

/* Make d the driver unless another thread got there first; returns the published one. */
static shim_driver_t *publish(shim_driver_t *d)
{
    shim_driver_t *expected = NULL;
    shim_driver_t *mine = d ? d : &no_driver;

    if (atomic_compare_exchange_strong_explicit(&shim_drv, &expected, mine,
                                                memory_order_acq_rel, memory_order_acquire))
        return mine;
    if (d) {
        dlclose(d->handle);
        free(d);
    }
    return expected;
}

const shim_driver_t *shim_init(void)
{
    shim_driver_t *d = atomic_load_explicit(&shim_drv, memory_order_acquire);

    if (d)
        return d;
    if (in_init)
        return NULL;
    in_init = 1;
    configure();
    shim_driver_t *mine = open_driver();
    if (mine && shim_trace_start(mine) < 0)
        exit(SHIM_EXIT_CONFIG);         /* (ELIXIR_TRACE cannot be recorded: reported) */
    d = publish(mine);
    in_init = 0;
    if (d->ok)
        SHIM_INFO(INIT, "started: %d entry points hooked, %u in the cuGetProcAddress map%s",
                  SHIM_NHOOKS, d->nmap, shim_disabled() ? " (ELIXIR_DISABLE: pass-through)" : "");
    return d;
}

/*
 * Hook h called before the driver is published: start the shim, or, on the thread that is
 * starting it (the driver's start-up calling a hooked name), use the next definition of the
 * symbol after this library.
 */
void *shim_enter_slow(shim_hook_t h)
{
    const shim_driver_t *d = shim_init();
    void *(*rdlsym)(void *, const char *);
    void *p;

    if (d)
        return d->fn[h];
    rdlsym = shim_real_dlsym();
    p = rdlsym ? rdlsym(RTLD_NEXT, shim_hook_names[h]) : NULL;
    return p && !shim_is_own(p) ? p : NULL;
}

CUresult shim_missing(shim_hook_t h)
{
    const shim_driver_t *d = atomic_load_explicit(&shim_drv, memory_order_acquire);

    if (!d || !d->ok)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!atomic_exchange_explicit(&missing_warned[h], 1, memory_order_relaxed))
        SHIM_WARN(INIT, "the driver has no %s; the call fails with CUDA_ERROR_NOT_FOUND",
                  shim_hook_names[h]);
    return CUDA_ERROR_NOT_FOUND;
}

/* At exit (or when the library is unloaded): the statistics, if asked for. */
__attribute__((destructor)) static void shim_unload(void)
{
    if (atomic_load_explicit(&shim_drv, memory_order_acquire))
        shim_stats_print();
}
