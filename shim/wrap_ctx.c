/* SPDX-License-Identifier: MIT */
/*
 * wrap_ctx.c - wrappers of context, primary-context and stream teardown, in both ABIs.
 *
 * Residency keeps per-context state (chunks, its own copy streams, events) and per-stream
 * state (the last use of each chunk), which must be settled before the driver destroys what
 * it refers to: the comment before each driver call names the function that does it.
 */
#include "shim.h"

SHIM_EXPORT CUresult CUDAAPI cuCtxDestroy(CUcontext ctx)
{
    SHIM_ENTER(cuCtxDestroy, real);
    /* res_ctx_destroy(ctx) drains and drops the context's residency state first */
    return real(ctx);
}

SHIM_EXPORT CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx)
{
    SHIM_ENTER(cuCtxDestroy_v2, real);
    /* res_ctx_destroy(ctx) drains and drops the context's residency state first */
    return real(ctx);
}

SHIM_EXPORT CUresult CUDAAPI cuStreamDestroy(CUstream hStream)
{
    SHIM_ENTER(cuStreamDestroy, real);
    /* res_stream_destroy(hStream) forgets the stream's last uses once its work is ordered */
    return real(hStream);
}

SHIM_EXPORT CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream)
{
    SHIM_ENTER(cuStreamDestroy_v2, real);
    /* res_stream_destroy(hStream) forgets the stream's last uses once its work is ordered */
    return real(hStream);
}

SHIM_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
    SHIM_ENTER(cuDevicePrimaryCtxRelease, real);
    /* res_primary_release(dev) drops the residency state if this was the last reference */
    return real(dev);
}

SHIM_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    SHIM_ENTER(cuDevicePrimaryCtxRelease_v2, real);
    /* res_primary_release(dev) drops the residency state if this was the last reference */
    return real(dev);
}

SHIM_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev)
{
    SHIM_ENTER(cuDevicePrimaryCtxReset, real);
    /* res_primary_reset(dev) drops every allocation of the primary context */
    return real(dev);
}

SHIM_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    SHIM_ENTER(cuDevicePrimaryCtxReset_v2, real);
    /* res_primary_reset(dev) drops every allocation of the primary context */
    return real(dev);
}
