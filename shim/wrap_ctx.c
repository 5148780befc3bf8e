/* SPDX-License-Identifier: MIT */
/*
 * wrap_ctx.c - wrappers of context, primary-context and stream teardown, in both ABIs, and of
 * module and library unloads.
 *
 * Residency records the uses of application streams lazily (by operation count, with no
 * event), so before the driver destroys a stream, or a context with its streams, an event is
 * recorded for the uses still uncovered (res_stream_destroy, res_ctx_destroy).  It also
 * caches kernels' parameter layouts and the device of each thread's context: after code or a
 * context went away those caches are invalidated (res_code_unload), since a new kernel or
 * context may get a freed handle's address.
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

TEARDOWN_WRAPPER(cuCtxDestroy, CUcontext, res_ctx_destroy())
TEARDOWN_WRAPPER(cuCtxDestroy_v2, CUcontext, res_ctx_destroy())
/* Releasing the last reference destroys the primary context; resetting always does. */
TEARDOWN_WRAPPER(cuDevicePrimaryCtxRelease, CUdevice, res_ctx_destroy())
TEARDOWN_WRAPPER(cuDevicePrimaryCtxRelease_v2, CUdevice, res_ctx_destroy())
TEARDOWN_WRAPPER(cuDevicePrimaryCtxReset, CUdevice, res_ctx_destroy())
TEARDOWN_WRAPPER(cuDevicePrimaryCtxReset_v2, CUdevice, res_ctx_destroy())
TEARDOWN_WRAPPER(cuModuleUnload, CUmodule, (void)0)
TEARDOWN_WRAPPER(cuLibraryUnload, CUlibrary, (void)0)

SHIM_EXPORT CUresult CUDAAPI cuStreamDestroy(CUstream hStream)
{
    SHIM_ENTER(cuStreamDestroy, real);
    res_stream_destroy(hStream);
    return real(hStream);
}

SHIM_EXPORT CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream)
{
    SHIM_ENTER(cuStreamDestroy_v2, real);
    res_stream_destroy(hStream);
    return real(hStream);
}
