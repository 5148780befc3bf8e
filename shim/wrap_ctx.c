/* SPDX-License-Identifier: MIT */
/*
 * wrap_ctx.c - wrappers of context, primary-context and stream teardown, in both ABIs, of
 * module and library unloads, of peer access, and of the host synchronisations.
 *
 * Residency records the uses of application streams lazily (by operation count, with no
 * event), so before the driver destroys a stream, or a context with its streams, an event is
 * recorded for the uses still uncovered (res_stream_destroy, res_ctx_destroy), and the
 * memory the application allocated in a context goes with it (before cuCtxDestroy or a
 * reset; after a release, once the driver says it destroyed the primary context).  It also
 * caches kernels' parameter layouts and the device of each thread's context: after code or a
 * context went away those caches are invalidated (res_code_unload), since a new kernel or
 * context may get a freed handle's address; likewise the per-thread stream -> device memo of
 * launches, retired before and after a stream is destroyed (res_stream_destroy,
 * res_stream_gone); and the recording's number of a destroyed stream is given up
 * (shim_trace_stream_destroy), and the device times still pending of a context about to be
 * destroyed are read while its events exist (shim_trace_ctx_destroy).
 *
 * A host synchronisation (cuCtxSynchronize in both ABIs, cuStreamSynchronize, its _ptsz
 * variant, cuEventSynchronize) is where a training step usually ends, so the recording's
 * iteration detector takes one that succeeded as a barrier (shim_trace_sync), and where
 * other devices' operations that held chunks are likely done (res_host_synced).  The call
 * itself is the driver's, unchanged: it blocks as long and returns what the driver returns,
 * errors included (a synchronisation refused because a stream is capturing, an invalid
 * handle); a failed one is no barrier.  The shim's own waits call the driver directly, never these.
 */
#include "shim.h"

/* Defines wrapper `sym` of a teardown call taking `type arg`: `before` runs before the
 * driver, res_code_unload() after it. */
#define TEARDOWN_WRAPPER(sym, type, before)                                                    \
    SHIM_EXPORT CUresult CUDAAPI sym(type arg)                                                 \
    {                                                                                          \
        SHIM_ENTER(sym, real);                                                                 \
        before;                                                                                \
        CUresult r = real(arg);                                                                \
        res_code_unload();                                                                     \
        return r;                                                                              \
    }

/* Is device dev's primary context active: 1, 0, or -1 when the driver does not say. */
static int primary_state(CUdevice dev)
{
    unsigned flags;
    int active = 0;
    shim_pfn_cuDevicePrimaryCtxGetState_t state =
        SHIM_DRIVER_CALL(cuDevicePrimaryCtxGetState);

    if (!state || state(dev, &flags, &active) != CUDA_SUCCESS)
        return -1;
    return active != 0;
}

/* Device dev's primary context while it is active, else NULL.  Its handle is had by retaining
 * it and releasing that reference again, which leaves the application's count as it was (and
 * is never the last reference, so destroys nothing). */
static CUcontext active_primary(CUdevice dev)
{
    CUcontext p = NULL;
    shim_pfn_cuDevicePrimaryCtxRetain_t retain = SHIM_DRIVER_CALL(cuDevicePrimaryCtxRetain);
    shim_pfn_cuDevicePrimaryCtxRelease_v2_t release =
        SHIM_DRIVER_CALL(cuDevicePrimaryCtxRelease_v2);

    if (!retain || !release || primary_state(dev) != 1 || retain(&p, dev) != CUDA_SUCCESS)
        return NULL;
    release(dev);
    return p;
}

/* Before context ctx (NULL: device dev's primary context) may be destroyed.  A primary
 * context keeps its handle through a reset, so the arena, should it live there, is told which
 * context goes (res_ctx_destroy): a reset always destroys its state, and a release may be the
 * last reference, which the driver does not tell (the arena then gives up its streams and
 * events there all the same, and takes up the context current at its next operation).
 * `frees`: ctx certainly goes, and the memory allocated in it with it.  Returns ctx. */
static CUcontext ctx_teardown(CUcontext ctx, CUdevice dev, int frees)
{
    if (!ctx)
        ctx = active_primary(dev);      /* NULL: none active, nothing of it left to go */
    if (SHIM_TRACING())
        shim_trace_ctx_destroy(ctx, dev);
    res_ctx_destroy(ctx, frees);
    return ctx;
}

/* Will cuCtxDestroy destroy ctx, and the memory made in it?  Not a context the driver does not
 * take (pushing it fails), nor a device's primary context, whose destruction the driver
 * refuses with CUDA_ERROR_INVALID_CONTEXT (a primary context goes by release or reset). */
static int destroys(CUcontext ctx)
{
    shim_pfn_cuCtxPushCurrent_v2_t push = SHIM_DRIVER_CALL(cuCtxPushCurrent_v2);
    shim_pfn_cuCtxPopCurrent_v2_t pop = SHIM_DRIVER_CALL(cuCtxPopCurrent_v2);
    shim_pfn_cuCtxGetDevice_t get = SHIM_DRIVER_CALL(cuCtxGetDevice);
    CUcontext popped;
    CUdevice dev;

    if (!ctx || !push || !pop || !get || push(ctx) != CUDA_SUCCESS)
        return 0;
    int known = get(&dev) == CUDA_SUCCESS;
    pop(&popped);
    return known && active_primary(dev) != ctx;
}

/* cuCtxDestroy of a context it destroys, and a reset, take the memory made in it. */
TEARDOWN_WRAPPER(cuCtxDestroy, CUcontext, ctx_teardown(arg, -1, destroys(arg)))
TEARDOWN_WRAPPER(cuCtxDestroy_v2, CUcontext, ctx_teardown(arg, -1, destroys(arg)))
TEARDOWN_WRAPPER(cuDevicePrimaryCtxReset, CUdevice, ctx_teardown(NULL, arg, 1))
TEARDOWN_WRAPPER(cuDevicePrimaryCtxReset_v2, CUdevice, ctx_teardown(NULL, arg, 1))

/* Both ABIs of cuDevicePrimaryCtxRelease: releasing the last reference destroys the primary
 * context and the memory allocated in it, which the driver does not tell beforehand.  So it
 * is prepared for as a destruction that keeps the memory (ctx_teardown without `frees`), and
 * once the driver released it, a context no longer active was the last reference's: the
 * memory goes then (res_ctx_freed).  Where the driver does not say, the memory stays. */
static CUresult primary_release(CUresult (*real)(CUdevice), CUdevice dev)
{
    CUcontext p = ctx_teardown(NULL, dev, 0);
    CUresult r = real(dev);

    if (r == CUDA_SUCCESS && p && primary_state(dev) == 0)
        res_ctx_freed(p);
    res_code_unload();
    return r;
}

SHIM_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
    SHIM_ENTER(cuDevicePrimaryCtxRelease, real);
    return primary_release(real, dev);
}

SHIM_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    SHIM_ENTER(cuDevicePrimaryCtxRelease_v2, real);
    return primary_release(real, dev);
}

TEARDOWN_WRAPPER(cuModuleUnload, CUmodule, (void)0)
TEARDOWN_WRAPPER(cuLibraryUnload, CUlibrary, (void)0)

/* Both ABIs of cuStreamDestroy: `real` destroys s.  The recording gives up s's stream number
 * first, since the driver may hand s to a new stream as soon as it is destroyed. */
static CUresult stream_destroy(CUresult (*real)(CUstream), CUstream s)
{
    uint64_t no = SHIM_TRACING() ? shim_trace_stream_destroy(s) : 0;

    res_stream_destroy(s);
    CUresult r = real(s);
    if (r != CUDA_SUCCESS && no)
        shim_trace_stream_kept(s, no);
    res_stream_gone();
    return r;
}

SHIM_EXPORT CUresult CUDAAPI cuStreamDestroy(CUstream hStream)
{
    SHIM_ENTER(cuStreamDestroy, real);
    return stream_destroy(real, hStream);
}

SHIM_EXPORT CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream)
{
    SHIM_ENTER(cuStreamDestroy_v2, real);
    return stream_destroy(real, hStream);
}

/* Peer access: the driver's call, then, when it succeeded, the same access mirrored onto
 * the peer device's arena (res_peer_access). */
SHIM_EXPORT CUresult CUDAAPI cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
    SHIM_ENTER(cuCtxEnablePeerAccess, real);
    CUresult r = real(peerContext, Flags);
    if (r == CUDA_SUCCESS)
        res_peer_access(peerContext, 1);
    return r;
}

SHIM_EXPORT CUresult CUDAAPI cuCtxDisablePeerAccess(CUcontext peerContext)
{
    SHIM_ENTER(cuCtxDisablePeerAccess, real);
    CUresult r = real(peerContext);
    if (r == CUDA_SUCCESS)
        res_peer_access(peerContext, 0);
    return r;
}

/* Defines wrapper `sym` of a host synchronisation with parameter list `params`, passing
 * `args` to the driver; a success is a barrier for the iteration detector, and `noted`
 * (a res_plan_synced call, or nothing) tells the plan's profile; the trace records it as
 * `kind` (SHIM_SYNC_*) of stream `s` or context `c`. */
#define SYNC_WRAPPER(sym, params, args, noted, kind, s, c)                                     \
    SHIM_EXPORT CUresult CUDAAPI sym params                                                    \
    {                                                                                          \
        SHIM_ENTER(sym, real);                                                                 \
        uint64_t t0 = shim_ht_begin();                                                         \
        CUresult r = real args;                                                                \
        shim_ht_end(SHIM_HT_SYNC_APP, t0);                                                     \
        if (r == CUDA_SUCCESS) {                                                               \
            res_host_synced();                                                                 \
            res_plan_barrier();                                                                \
            noted;                                                                             \
            if (SHIM_TRACING())                                                                \
                shim_trace_sync(kind, s, c, SHIM_HOOK_##sym);                                  \
        }                                                                                      \
        return r;                                                                              \
    }

SYNC_WRAPPER(cuCtxSynchronize, (void), (), res_plan_synced(NULL, NULL, 1), SHIM_SYNC_CONTEXT,
             NULL, NULL)
SYNC_WRAPPER(cuCtxSynchronize_v2, (CUcontext ctx), (ctx), res_plan_synced(ctx, NULL, 1),
             SHIM_SYNC_CONTEXT, NULL, ctx)
SYNC_WRAPPER(cuStreamSynchronize, (CUstream hStream), (hStream),
             res_plan_synced(NULL, hStream, 0), SHIM_SYNC_STREAM, hStream, NULL)
SYNC_WRAPPER(cuStreamSynchronize_ptsz, (CUstream hStream), (hStream),
             res_plan_synced(NULL, hStream, 0), SHIM_SYNC_STREAM, hStream, NULL)
/* (Which stream an event waited for is not known here: the cost model does not see it.) */
SYNC_WRAPPER(cuEventSynchronize, (CUevent hEvent), (hEvent), (void)0, SHIM_SYNC_EVENT, NULL,
             NULL)
