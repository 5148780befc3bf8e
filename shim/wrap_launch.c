/* SPDX-License-Identifier: MIT */
/*
 * wrap_launch.c - wrappers of every launch form, of graph launches and of stream capture.
 *
 * Each launch wrapper describes the launch in a shim_launch_t (kernel, arguments, stream,
 * config) and calls launch_begin before the driver and launch_end after it.  launch_begin is
 * where residency makes every allocation the launch may touch accessible (invariant 1), or
 * refuses the launch (its result is then returned without the driver: see shim.h).  The
 * usual launch (kernelParams, untraced) first tries residency's fast path, res_launch_fast,
 * which needs no descriptor and gives way to launch_begin whenever anything has to be done;
 * when it takes the launch, it returns the device's lock, which the wrapper drops after the
 * driver call (launch_fast_end).
 * While a trace is recorded (one test of shim_trace_on) the wrapper takes the traced path
 * instead: the tracer gives the launch its id before residency (whose migrations name it as
 * their cause), starts its device timing just before the driver call (inside the profiled
 * iterations) and records it just after.  The _ptsz variants differ only
 * in the driver function called, so the two share the descriptor and the plug points.
 */
#include "lock.h"
#include "shim.h"

/* Before the driver enqueues the launch: CUDA_SUCCESS, or the call's result without the
 * driver (res_launch_begin refused the launch). */
static inline CUresult launch_begin(shim_launch_t *l)
{
    return res_launch_begin(l);
}

/* The driver returned r for launch l: counted and logged; returns r. */
static SHIM_ALWAYS_INLINE CUresult launch_logged(shim_launch_t l, CUresult r)
{
    if (r == CUDA_SUCCESS)
        shim_stat_launch(l.kind);
    SHIM_TRACE(LAUNCH, "%s(%p, stream %p) = %d", shim_hook_names[l.hook], (void *)l.f,
               (void *)l.stream, (int)r);
    return r;
}

/* Launch l begun without the general machinery, when it can be (l by value, so that the
 * usual launch builds no descriptor; forms without kernelParams never ask). */
static SHIM_ALWAYS_INLINE shim_lock_t *launch_fast(shim_launch_t l)
{
    return l.f && l.params && !l.extra
               ? res_launch_fast(l.f, l.params, l.stream, shim_hook_per_thread[l.hook], l.op != 0)
               : NULL;
}

/* After the driver returned r for a launch that res_launch_fast took: its lock released (its
 * time taken first while the plan profiles the iteration). */
static SHIM_ALWAYS_INLINE void launch_fast_end(shim_lock_t *fast, CUresult r)
{
    if (SHIM_UNLIKELY(atomic_load_explicit(&res_ptime_fast_on, memory_order_relaxed)))
        res_plan_fast_done(fast, r);
    shim_unlock(fast);
}

/* After the driver returned r for the launch; returns r unchanged. */
static inline CUresult launch_end(shim_launch_t *l, CUresult r)
{
    res_launch_end(l, r);
    return launch_logged(*l, r);
}

/* The descriptor of a launch through wrapper `sym` (the trailing initialisers). */
#define LAUNCH_DESC(sym, ...) ((shim_launch_t){ .hook = SHIM_HOOK_##sym, __VA_ARGS__ })

/* Defines wrapper `sym`: enter, describe the launch (the trailing initialisers), forward,
 * through residency's fast path where it can; while recording a trace, with the tracer around
 * residency and the driver.  With ELIXIR_STATS the untraced path is sym_timed, which also
 * measures the host time of the whole and of the driver's call (shim_ht_t). */
#define LAUNCH_WRAPPER(sym, params, args, ...)                                                 \
    static __attribute__((noinline)) CUresult sym##_timed params                               \
    {                                                                                          \
        shim_pfn_##sym##_t real = (shim_pfn_##sym##_t)                                         \
            atomic_load_explicit(&shim_drv, memory_order_acquire)->fn[SHIM_HOOK_##sym];        \
        uint64_t t0 = shim_ht_begin(), td;                                                     \
        shim_lock_t *fast = launch_fast(LAUNCH_DESC(sym, __VA_ARGS__));                        \
        shim_launch_t l = LAUNCH_DESC(sym, __VA_ARGS__);                                       \
        CUresult no = fast ? CUDA_SUCCESS : launch_begin(&l);                                  \
        td = no ? 0 : shim_ht_begin();                                                         \
        CUresult r = no ? no : real args;                                                      \
        shim_ht_end(SHIM_HT_LAUNCH_DRV, td);                                                   \
        if (fast) {                                                                            \
            launch_fast_end(fast, r);                                                          \
            r = launch_logged(l, r);                                                           \
        } else {                                                                               \
            r = launch_end(&l, r);                                                             \
        }                                                                                      \
        shim_ht_end(SHIM_HT_LAUNCH, t0);                                                       \
        return r;                                                                              \
    }                                                                                          \
    SHIM_EXPORT CUresult CUDAAPI sym params                                                    \
    {                                                                                          \
        SHIM_ENTER(sym, real);                                                                 \
        shim_lock_t *fast;                                                                     \
        if (SHIM_UNLIKELY(shim_host_timing) && !SHIM_TRACING() &&                              \
            atomic_load_explicit(&shim_drv, memory_order_relaxed))                             \
            return sym##_timed args;        /* (real is the driver table's: shim_enter) */     \
        if (!SHIM_TRACING()) {                                                                 \
            if ((fast = launch_fast(LAUNCH_DESC(sym, __VA_ARGS__)))) {                         \
                CUresult r = real args;                                                        \
                launch_fast_end(fast, r);                                                      \
                return launch_logged(LAUNCH_DESC(sym, __VA_ARGS__), r);                        \
            }                                                                                  \
            shim_launch_t l = LAUNCH_DESC(sym, __VA_ARGS__);                                   \
            CUresult no = launch_begin(&l);                                                    \
            return launch_end(&l, no ? no : real args);                                        \
        }                                                                                      \
        shim_launch_t l = LAUNCH_DESC(sym, __VA_ARGS__);                                       \
        uint64_t t0 = shim_ht_begin();                                                         \
        shim_trace_launch_begin(&l);                                                           \
        fast = launch_fast(l);                                                                 \
        CUresult no = fast ? CUDA_SUCCESS : launch_begin(&l);                                  \
        shim_trace_issue(l.op, l.stream, l.hook);                                              \
        uint64_t td = no ? 0 : shim_ht_begin();                                                \
        CUresult r = no ? no : real args;                                                      \
        shim_ht_end(SHIM_HT_LAUNCH_DRV, td);                                                   \
        shim_trace_launch_end(&l, r);                                                          \
        if (!fast) {                                                                           \
            r = launch_end(&l, r);                                                             \
        } else {                                                                               \
            launch_fast_end(fast, r);                                                          \
            r = launch_logged(l, r);                                                           \
        }                                                                                      \
        shim_ht_end(SHIM_HT_LAUNCH, t0);                                                       \
        return r;                                                                              \
    }

#define KERNEL_PARAMS                                                                          \
    (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,        \
     unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                   \
     unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
#define KERNEL_ARGS                                                                            \
    (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,        \
     hStream, kernelParams, extra)

LAUNCH_WRAPPER(cuLaunchKernel, KERNEL_PARAMS, KERNEL_ARGS, .kind = SHIM_LAUNCH_KERNEL, .f = f,
               .params = kernelParams, .extra = extra, .stream = hStream)
LAUNCH_WRAPPER(cuLaunchKernel_ptsz, KERNEL_PARAMS, KERNEL_ARGS, .kind = SHIM_LAUNCH_KERNEL,
               .f = f, .params = kernelParams, .extra = extra, .stream = hStream)

#define KERNEL_EX_PARAMS                                                                       \
    (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
#define KERNEL_EX_ARGS (config, f, kernelParams, extra)

LAUNCH_WRAPPER(cuLaunchKernelEx, KERNEL_EX_PARAMS, KERNEL_EX_ARGS, .kind = SHIM_LAUNCH_KERNEL_EX,
               .f = f, .params = kernelParams, .extra = extra,
               .stream = config ? config->hStream : NULL, .desc = config)
LAUNCH_WRAPPER(cuLaunchKernelEx_ptsz, KERNEL_EX_PARAMS, KERNEL_EX_ARGS,
               .kind = SHIM_LAUNCH_KERNEL_EX, .f = f, .params = kernelParams, .extra = extra,
               .stream = config ? config->hStream : NULL, .desc = config)

#define COOPERATIVE_PARAMS                                                                     \
    (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,        \
     unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                   \
     unsigned int sharedMemBytes, CUstream hStream, void **kernelParams)
#define COOPERATIVE_ARGS                                                                       \
    (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes,        \
     hStream, kernelParams)

LAUNCH_WRAPPER(cuLaunchCooperativeKernel, COOPERATIVE_PARAMS, COOPERATIVE_ARGS,
               .kind = SHIM_LAUNCH_COOPERATIVE, .f = f, .params = kernelParams,
               .stream = hStream)
LAUNCH_WRAPPER(cuLaunchCooperativeKernel_ptsz, COOPERATIVE_PARAMS, COOPERATIVE_ARGS,
               .kind = SHIM_LAUNCH_COOPERATIVE, .f = f, .params = kernelParams,
               .stream = hStream)

LAUNCH_WRAPPER(cuLaunchCooperativeKernelMultiDevice,
               (CUDA_LAUNCH_PARAMS *launchParamsList, unsigned int numDevices, unsigned int flags),
               (launchParamsList, numDevices, flags), .kind = SHIM_LAUNCH_MULTI_DEVICE,
               .desc = launchParamsList)

/* The pre-4.0 forms take their arguments from cuParamSet*; residency cannot see them, so
 * what they touch relies on invariant 2 (every page stays mapped). */
LAUNCH_WRAPPER(cuLaunch, (CUfunction f), (f), .kind = SHIM_LAUNCH_LEGACY, .f = f)
LAUNCH_WRAPPER(cuLaunchGrid, (CUfunction f, int grid_width, int grid_height),
               (f, grid_width, grid_height), .kind = SHIM_LAUNCH_LEGACY, .f = f)
LAUNCH_WRAPPER(cuLaunchGridAsync, (CUfunction f, int grid_width, int grid_height, CUstream hStream),
               (f, grid_width, grid_height, hStream), .kind = SHIM_LAUNCH_LEGACY, .f = f,
               .stream = hStream)

LAUNCH_WRAPPER(cuGraphLaunch, (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream),
               .kind = SHIM_LAUNCH_GRAPH, .stream = hStream, .desc = hGraphExec)
LAUNCH_WRAPPER(cuGraphLaunch_ptsz, (CUgraphExec hGraphExec, CUstream hStream),
               (hGraphExec, hStream), .kind = SHIM_LAUNCH_GRAPH, .stream = hStream,
               .desc = hGraphExec)

/*
 * Stream capture: work captured into a graph runs later, whenever the graph is launched,
 * without passing through the launch wrappers.  Residency is told when a capture may begin
 * and when one ended (res_capture_begin/_end): while one may be open it records uses with
 * events at once and relaxes the calling thread's capture mode around its own waits.
 */
#define CAPTURE_BEGIN_WRAPPER(sym, params, args)                                               \
    SHIM_EXPORT CUresult CUDAAPI sym params                                                   \
    {                                                                                          \
        SHIM_ENTER(sym, real);                                                                 \
        res_capture_begin();                                                                   \
        CUresult r = real args;                                                                \
        if (r != CUDA_SUCCESS)                                                                 \
            res_capture_end();                                                                 \
        return r;                                                                              \
    }

CAPTURE_BEGIN_WRAPPER(cuStreamBeginCapture, (CUstream hStream), (hStream))
CAPTURE_BEGIN_WRAPPER(cuStreamBeginCapture_ptsz, (CUstream hStream), (hStream))
CAPTURE_BEGIN_WRAPPER(cuStreamBeginCapture_v2, (CUstream hStream, CUstreamCaptureMode mode),
                      (hStream, mode))
CAPTURE_BEGIN_WRAPPER(cuStreamBeginCapture_v2_ptsz,
                      (CUstream hStream, CUstreamCaptureMode mode), (hStream, mode))

#define TO_GRAPH_PARAMS                                                                        \
    (CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies,                        \
     const CUgraphEdgeData *dependencyData, size_t numDependencies, CUstreamCaptureMode mode)
#define TO_GRAPH_ARGS (hStream, hGraph, dependencies, dependencyData, numDependencies, mode)

CAPTURE_BEGIN_WRAPPER(cuStreamBeginCaptureToGraph, TO_GRAPH_PARAMS, TO_GRAPH_ARGS)
CAPTURE_BEGIN_WRAPPER(cuStreamBeginCaptureToGraph_ptsz, TO_GRAPH_PARAMS, TO_GRAPH_ARGS)

/* A capture ends when cuStreamEndCapture returns the graph or reports it invalidated; other
 * errors (wrong stream, wrong thread, no capture) leave any capture open. */
#define CAPTURE_END_WRAPPER(sym)                                                               \
    SHIM_EXPORT CUresult CUDAAPI sym(CUstream hStream, CUgraph *phGraph)                       \
    {                                                                                          \
        SHIM_ENTER(sym, real);                                                                 \
        CUresult r = real(hStream, phGraph);                                                   \
        if (r == CUDA_SUCCESS || r == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)                   \
            res_capture_end();                                                                 \
        return r;                                                                              \
    }

CAPTURE_END_WRAPPER(cuStreamEndCapture)
CAPTURE_END_WRAPPER(cuStreamEndCapture_ptsz)
