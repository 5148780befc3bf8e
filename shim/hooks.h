/* SPDX-License-Identifier: MIT */
/*
 * hooks.h - the one list of driver entry points that libelixir.so intercepts.
 *
 * SHIM_HOOKS(X) calls X(symbol, base, version, per_thread) once per hooked entry point:
 *   symbol      the name the driver exports for this ABI variant (cuMemAlloc_v2);
 *   base        the name cuGetProcAddress is asked for (cuMemAlloc);
 *   version     the CUDA version that introduced the variant, as in cudaTypedefs.h (3020);
 *   per_thread  empty, _ptds or _ptsz: the per-thread-default-stream variant.
 * PFN_<base>_v<version><per_thread> in cudaTypedefs.h is then the variant's prototype.
 *
 * Everything else is generated from this list: the hook enum and name table (hooks.c), the
 * typed declarations every wrapper is checked against (shim.h), the real-function table
 * filled at start-up (init.c), the map from the driver's pointers to our wrappers behind
 * cuGetProcAddress (procaddr.c), the dlsym filter (dlsym.c) and the linker version script
 * that exports exactly these names (libelixir.map.in).  Adding an entry point means adding
 * one line here and writing its wrapper; the build fails until the wrapper exists and its
 * parameters match the PFN typedef.
 *
 * SHIM_DRIVER_CALLS(X), same columns, lists the driver functions the shim calls for its own
 * purposes without intercepting them; they are resolved from the real driver with the hooks.
 *
 * This header holds macros only, so the build can run it through the preprocessor alone.
 */
#ifndef SHIM_HOOKS_H
#define SHIM_HOOKS_H

/* Allocation, free, the application's pools and memory information: residency takes these
 * over (res.c, res_app.c). */
#define SHIM_HOOKS_ALLOC(X)                                                                     \
    X(cuMemAlloc_v2, cuMemAlloc, 3020, )                                                        \
    X(cuMemAllocPitch_v2, cuMemAllocPitch, 3020, )                                              \
    X(cuMemAllocAsync, cuMemAllocAsync, 11020, )                                                \
    X(cuMemAllocAsync_ptsz, cuMemAllocAsync, 11020, _ptsz)                                      \
    X(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, 11020, )                                \
    X(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync, 11020, _ptsz)                      \
    X(cuMemFree_v2, cuMemFree, 3020, )                                                          \
    X(cuMemFreeAsync, cuMemFreeAsync, 11020, )                                                  \
    X(cuMemFreeAsync_ptsz, cuMemFreeAsync, 11020, _ptsz)                                        \
    X(cuMemHostAlloc, cuMemHostAlloc, 2020, )                                                   \
    X(cuMemAllocHost_v2, cuMemAllocHost, 3020, )                                                \
    X(cuMemFreeHost, cuMemFreeHost, 2000, )                                                     \
    X(cuMemPoolDestroy, cuMemPoolDestroy, 11020, )                                              \
    X(cuMemPoolTrimTo, cuMemPoolTrimTo, 11020, )                                                \
    X(cuMemGetInfo_v2, cuMemGetInfo, 3020, )                                                    \
    X(cuMemGetAddressRange_v2, cuMemGetAddressRange, 3020, )                                    \
    X(cuPointerGetAttribute, cuPointerGetAttribute, 4000, )                                     \
    X(cuPointerGetAttributes, cuPointerGetAttributes, 7000, )

/* The application's own virtual memory management and IPC: charged to the budget, pinned. */
#define SHIM_HOOKS_VMM(X)                                                                       \
    X(cuMemCreate, cuMemCreate, 10020, )                                                        \
    X(cuMemRelease, cuMemRelease, 10020, )                                                      \
    X(cuMemRetainAllocationHandle, cuMemRetainAllocationHandle, 11000, )                        \
    X(cuMemMap, cuMemMap, 10020, )                                                              \
    X(cuMemUnmap, cuMemUnmap, 10020, )                                                          \
    X(cuIpcGetMemHandle, cuIpcGetMemHandle, 4010, )                                             \
    X(cuIpcOpenMemHandle, cuIpcOpenMemHandle, 4010, )                                           \
    X(cuIpcOpenMemHandle_v2, cuIpcOpenMemHandle, 11000, )

/* Context, stream and primary-context teardown, in both ABIs, and module and library unloads
 * (which may free a kernel handle that residency caches the parameter layout of). */
#define SHIM_HOOKS_TEARDOWN(X)                                                                  \
    X(cuCtxDestroy, cuCtxDestroy, 2000, )                                                       \
    X(cuCtxDestroy_v2, cuCtxDestroy, 4000, )                                                    \
    X(cuStreamDestroy, cuStreamDestroy, 2000, )                                                 \
    X(cuStreamDestroy_v2, cuStreamDestroy, 4000, )                                              \
    X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease, 7000, )                             \
    X(cuDevicePrimaryCtxRelease_v2, cuDevicePrimaryCtxRelease, 11000, )                         \
    X(cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset, 7000, )                                 \
    X(cuDevicePrimaryCtxReset_v2, cuDevicePrimaryCtxReset, 11000, )                            \
    X(cuModuleUnload, cuModuleUnload, 2000, )                                                   \
    X(cuLibraryUnload, cuLibraryUnload, 12000, )

/* Host synchronisations, both ABIs of cuCtxSynchronize (CUDA 13's takes the context): each
 * that succeeds is a barrier for the recording's iteration detector (wrap_ctx.c). */
#define SHIM_HOOKS_SYNC(X)                                                                      \
    X(cuCtxSynchronize, cuCtxSynchronize, 2000, )                                               \
    X(cuCtxSynchronize_v2, cuCtxSynchronize, 13000, )                                           \
    X(cuStreamSynchronize, cuStreamSynchronize, 2000, )                                         \
    X(cuStreamSynchronize_ptsz, cuStreamSynchronize, 7000, _ptsz)                               \
    X(cuEventSynchronize, cuEventSynchronize, 2000, )

/* Every launch form, CUDA graphs and stream capture. */
#define SHIM_HOOKS_LAUNCH(X)                                                                    \
    X(cuLaunchKernel, cuLaunchKernel, 4000, )                                                   \
    X(cuLaunchKernel_ptsz, cuLaunchKernel, 7000, _ptsz)                                         \
    X(cuLaunchKernelEx, cuLaunchKernelEx, 11060, )                                              \
    X(cuLaunchKernelEx_ptsz, cuLaunchKernelEx, 11060, _ptsz)                                    \
    X(cuLaunchCooperativeKernel, cuLaunchCooperativeKernel, 9000, )                             \
    X(cuLaunchCooperativeKernel_ptsz, cuLaunchCooperativeKernel, 9000, _ptsz)                   \
    X(cuLaunchCooperativeKernelMultiDevice, cuLaunchCooperativeKernelMultiDevice, 9000, )       \
    X(cuLaunch, cuLaunch, 2000, )                                                               \
    X(cuLaunchGrid, cuLaunchGrid, 2000, )                                                       \
    X(cuLaunchGridAsync, cuLaunchGridAsync, 2000, )                                             \
    X(cuGraphLaunch, cuGraphLaunch, 10000, )                                                    \
    X(cuGraphLaunch_ptsz, cuGraphLaunch, 10000, _ptsz)                                          \
    X(cuStreamBeginCapture, cuStreamBeginCapture, 10000, )                                      \
    X(cuStreamBeginCapture_ptsz, cuStreamBeginCapture, 10000, _ptsz)                            \
    X(cuStreamBeginCapture_v2, cuStreamBeginCapture, 10010, )                                   \
    X(cuStreamBeginCapture_v2_ptsz, cuStreamBeginCapture, 10010, _ptsz)                         \
    X(cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph, 12030, )                        \
    X(cuStreamBeginCaptureToGraph_ptsz, cuStreamBeginCaptureToGraph, 12030, _ptsz)             \
    X(cuStreamEndCapture, cuStreamEndCapture, 10000, )                                          \
    X(cuStreamEndCapture_ptsz, cuStreamEndCapture, 10000, _ptsz)

/* Linear copies: unified, peer and explicit directions, synchronous and asynchronous. */
#define SHIM_HOOKS_COPY(X)                                                                      \
    X(cuMemcpy, cuMemcpy, 4000, )                                                               \
    X(cuMemcpy_ptds, cuMemcpy, 7000, _ptds)                                                     \
    X(cuMemcpyAsync, cuMemcpyAsync, 4000, )                                                     \
    X(cuMemcpyAsync_ptsz, cuMemcpyAsync, 7000, _ptsz)                                           \
    X(cuMemcpyPeer, cuMemcpyPeer, 4000, )                                                       \
    X(cuMemcpyPeer_ptds, cuMemcpyPeer, 7000, _ptds)                                             \
    X(cuMemcpyPeerAsync, cuMemcpyPeerAsync, 4000, )                                             \
    X(cuMemcpyPeerAsync_ptsz, cuMemcpyPeerAsync, 7000, _ptsz)                                   \
    X(cuMemcpyHtoD_v2, cuMemcpyHtoD, 3020, )                                                    \
    X(cuMemcpyHtoD_v2_ptds, cuMemcpyHtoD, 7000, _ptds)                                          \
    X(cuMemcpyDtoH_v2, cuMemcpyDtoH, 3020, )                                                    \
    X(cuMemcpyDtoH_v2_ptds, cuMemcpyDtoH, 7000, _ptds)                                          \
    X(cuMemcpyDtoD_v2, cuMemcpyDtoD, 3020, )                                                    \
    X(cuMemcpyDtoD_v2_ptds, cuMemcpyDtoD, 7000, _ptds)                                          \
    X(cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync, 3020, )                                          \
    X(cuMemcpyHtoDAsync_v2_ptsz, cuMemcpyHtoDAsync, 7000, _ptsz)                                \
    X(cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync, 3020, )                                          \
    X(cuMemcpyDtoHAsync_v2_ptsz, cuMemcpyDtoHAsync, 7000, _ptsz)                                \
    X(cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync, 3020, )                                          \
    X(cuMemcpyDtoDAsync_v2_ptsz, cuMemcpyDtoDAsync, 7000, _ptsz)

/* Copies to, from and between CUDA arrays. */
#define SHIM_HOOKS_COPY_ARRAY(X)                                                                \
    X(cuMemcpyDtoA_v2, cuMemcpyDtoA, 3020, )                                                    \
    X(cuMemcpyDtoA_v2_ptds, cuMemcpyDtoA, 7000, _ptds)                                          \
    X(cuMemcpyAtoD_v2, cuMemcpyAtoD, 3020, )                                                    \
    X(cuMemcpyAtoD_v2_ptds, cuMemcpyAtoD, 7000, _ptds)                                          \
    X(cuMemcpyHtoA_v2, cuMemcpyHtoA, 3020, )                                                    \
    X(cuMemcpyHtoA_v2_ptds, cuMemcpyHtoA, 7000, _ptds)                                          \
    X(cuMemcpyAtoH_v2, cuMemcpyAtoH, 3020, )                                                    \
    X(cuMemcpyAtoH_v2_ptds, cuMemcpyAtoH, 7000, _ptds)                                          \
    X(cuMemcpyAtoA_v2, cuMemcpyAtoA, 3020, )                                                    \
    X(cuMemcpyAtoA_v2_ptds, cuMemcpyAtoA, 7000, _ptds)                                          \
    X(cuMemcpyHtoAAsync_v2, cuMemcpyHtoAAsync, 3020, )                                          \
    X(cuMemcpyHtoAAsync_v2_ptsz, cuMemcpyHtoAAsync, 7000, _ptsz)                                \
    X(cuMemcpyAtoHAsync_v2, cuMemcpyAtoHAsync, 3020, )                                          \
    X(cuMemcpyAtoHAsync_v2_ptsz, cuMemcpyAtoHAsync, 7000, _ptsz)

/* Copies described by a structure: 2D, 3D, 3D peer and the batched forms. */
#define SHIM_HOOKS_COPY_DESC(X)                                                                 \
    X(cuMemcpy2D_v2, cuMemcpy2D, 3020, )                                                        \
    X(cuMemcpy2D_v2_ptds, cuMemcpy2D, 7000, _ptds)                                              \
    X(cuMemcpy2DUnaligned_v2, cuMemcpy2DUnaligned, 3020, )                                      \
    X(cuMemcpy2DUnaligned_v2_ptds, cuMemcpy2DUnaligned, 7000, _ptds)                            \
    X(cuMemcpy2DAsync_v2, cuMemcpy2DAsync, 3020, )                                              \
    X(cuMemcpy2DAsync_v2_ptsz, cuMemcpy2DAsync, 7000, _ptsz)                                    \
    X(cuMemcpy3D_v2, cuMemcpy3D, 3020, )                                                        \
    X(cuMemcpy3D_v2_ptds, cuMemcpy3D, 7000, _ptds)                                              \
    X(cuMemcpy3DAsync_v2, cuMemcpy3DAsync, 3020, )                                              \
    X(cuMemcpy3DAsync_v2_ptsz, cuMemcpy3DAsync, 7000, _ptsz)                                    \
    X(cuMemcpy3DPeer, cuMemcpy3DPeer, 4000, )                                                   \
    X(cuMemcpy3DPeer_ptds, cuMemcpy3DPeer, 7000, _ptds)                                         \
    X(cuMemcpy3DPeerAsync, cuMemcpy3DPeerAsync, 4000, )                                         \
    X(cuMemcpy3DPeerAsync_ptsz, cuMemcpy3DPeerAsync, 7000, _ptsz)                               \
    X(cuMemcpyBatchAsync, cuMemcpyBatchAsync, 12080, )                                          \
    X(cuMemcpyBatchAsync_ptsz, cuMemcpyBatchAsync, 12080, _ptsz)                                \
    X(cuMemcpyBatchAsync_v2, cuMemcpyBatchAsync, 13000, )                                       \
    X(cuMemcpyBatchAsync_v2_ptsz, cuMemcpyBatchAsync, 13000, _ptsz)                             \
    X(cuMemcpy3DBatchAsync, cuMemcpy3DBatchAsync, 12080, )                                      \
    X(cuMemcpy3DBatchAsync_ptsz, cuMemcpy3DBatchAsync, 12080, _ptsz)                            \
    X(cuMemcpy3DBatchAsync_v2, cuMemcpy3DBatchAsync, 13000, )                                   \
    X(cuMemcpy3DBatchAsync_v2_ptsz, cuMemcpy3DBatchAsync, 13000, _ptsz)

/* Memsets, 1D and 2D, of 8, 16 and 32-bit values. */
#define SHIM_HOOKS_MEMSET(X)                                                                    \
    X(cuMemsetD8_v2, cuMemsetD8, 3020, )                                                        \
    X(cuMemsetD8_v2_ptds, cuMemsetD8, 7000, _ptds)                                              \
    X(cuMemsetD16_v2, cuMemsetD16, 3020, )                                                      \
    X(cuMemsetD16_v2_ptds, cuMemsetD16, 7000, _ptds)                                            \
    X(cuMemsetD32_v2, cuMemsetD32, 3020, )                                                      \
    X(cuMemsetD32_v2_ptds, cuMemsetD32, 7000, _ptds)                                            \
    X(cuMemsetD2D8_v2, cuMemsetD2D8, 3020, )                                                    \
    X(cuMemsetD2D8_v2_ptds, cuMemsetD2D8, 7000, _ptds)                                          \
    X(cuMemsetD2D16_v2, cuMemsetD2D16, 3020, )                                                  \
    X(cuMemsetD2D16_v2_ptds, cuMemsetD2D16, 7000, _ptds)                                        \
    X(cuMemsetD2D32_v2, cuMemsetD2D32, 3020, )                                                  \
    X(cuMemsetD2D32_v2_ptds, cuMemsetD2D32, 7000, _ptds)                                        \
    X(cuMemsetD8Async, cuMemsetD8Async, 3020, )                                                 \
    X(cuMemsetD8Async_ptsz, cuMemsetD8Async, 7000, _ptsz)                                       \
    X(cuMemsetD16Async, cuMemsetD16Async, 3020, )                                               \
    X(cuMemsetD16Async_ptsz, cuMemsetD16Async, 7000, _ptsz)                                     \
    X(cuMemsetD32Async, cuMemsetD32Async, 3020, )                                               \
    X(cuMemsetD32Async_ptsz, cuMemsetD32Async, 7000, _ptsz)                                     \
    X(cuMemsetD2D8Async, cuMemsetD2D8Async, 3020, )                                             \
    X(cuMemsetD2D8Async_ptsz, cuMemsetD2D8Async, 7000, _ptsz)                                   \
    X(cuMemsetD2D16Async, cuMemsetD2D16Async, 3020, )                                           \
    X(cuMemsetD2D16Async_ptsz, cuMemsetD2D16Async, 7000, _ptsz)                                 \
    X(cuMemsetD2D32Async, cuMemsetD2D32Async, 3020, )                                           \
    X(cuMemsetD2D32Async_ptsz, cuMemsetD2D32Async, 7000, _ptsz)

/* Stream memory operations, v1 and v2 ABIs: the chunks of the words they name are held until
 * they are done (wrap_memop.c). */
#define SHIM_HOOKS_MEMOP(X)                                                                     \
    X(cuStreamWaitValue32, cuStreamWaitValue32, 8000, )                                         \
    X(cuStreamWaitValue32_ptsz, cuStreamWaitValue32, 8000, _ptsz)                               \
    X(cuStreamWaitValue32_v2, cuStreamWaitValue32, 11070, )                                     \
    X(cuStreamWaitValue32_v2_ptsz, cuStreamWaitValue32, 11070, _ptsz)                           \
    X(cuStreamWaitValue64, cuStreamWaitValue64, 9000, )                                         \
    X(cuStreamWaitValue64_ptsz, cuStreamWaitValue64, 9000, _ptsz)                               \
    X(cuStreamWaitValue64_v2, cuStreamWaitValue64, 11070, )                                     \
    X(cuStreamWaitValue64_v2_ptsz, cuStreamWaitValue64, 11070, _ptsz)                           \
    X(cuStreamWriteValue32, cuStreamWriteValue32, 8000, )                                       \
    X(cuStreamWriteValue32_ptsz, cuStreamWriteValue32, 8000, _ptsz)                             \
    X(cuStreamWriteValue32_v2, cuStreamWriteValue32, 11070, )                                   \
    X(cuStreamWriteValue32_v2_ptsz, cuStreamWriteValue32, 11070, _ptsz)                         \
    X(cuStreamWriteValue64, cuStreamWriteValue64, 9000, )                                       \
    X(cuStreamWriteValue64_ptsz, cuStreamWriteValue64, 9000, _ptsz)                             \
    X(cuStreamWriteValue64_v2, cuStreamWriteValue64, 11070, )                                   \
    X(cuStreamWriteValue64_v2_ptsz, cuStreamWriteValue64, 11070, _ptsz)                         \
    X(cuStreamBatchMemOp, cuStreamBatchMemOp, 8000, )                                           \
    X(cuStreamBatchMemOp_ptsz, cuStreamBatchMemOp, 8000, _ptsz)                                 \
    X(cuStreamBatchMemOp_v2, cuStreamBatchMemOp, 11070, )                                       \
    X(cuStreamBatchMemOp_v2_ptsz, cuStreamBatchMemOp, 11070, _ptsz)

/* Peer access, which residency mirrors onto the arenas' mappings (a pointer into another
 * device's arena that the shim does not see then reaches it as it would without the shim). */
#define SHIM_HOOKS_PEER(X)                                                                      \
    X(cuCtxEnablePeerAccess, cuCtxEnablePeerAccess, 4000, )                                     \
    X(cuCtxDisablePeerAccess, cuCtxDisablePeerAccess, 4000, )

/* The entry point lookup itself, so that everything it hands out stays intercepted. */
#define SHIM_HOOKS_PROC(X)                                                                      \
    X(cuGetProcAddress, cuGetProcAddress, 11030, )                                              \
    X(cuGetProcAddress_v2, cuGetProcAddress, 12000, )

#define SHIM_HOOKS(X)                                                                           \
    SHIM_HOOKS_ALLOC(X)                                                                         \
    SHIM_HOOKS_VMM(X)                                                                           \
    SHIM_HOOKS_TEARDOWN(X)                                                                      \
    SHIM_HOOKS_PEER(X)                                                                          \
    SHIM_HOOKS_SYNC(X)                                                                          \
    SHIM_HOOKS_LAUNCH(X)                                                                        \
    SHIM_HOOKS_COPY(X)                                                                          \
    SHIM_HOOKS_COPY_ARRAY(X)                                                                    \
    SHIM_HOOKS_COPY_DESC(X)                                                                     \
    SHIM_HOOKS_MEMSET(X)                                                                        \
    SHIM_HOOKS_MEMOP(X)                                                                         \
    SHIM_HOOKS_PROC(X)

/* Driver functions the shim itself calls (never intercepted). */
#define SHIM_DRIVER_CALLS(X)                                                                    \
    X(cuMemGetAddressRange_v2, cuMemGetAddressRange, 3020, )                                    \
    X(cuCtxGetCurrent, cuCtxGetCurrent, 4000, )                                                 \
    X(cuCtxGetDevice, cuCtxGetDevice, 2000, )                                                   \
    X(cuCtxPushCurrent_v2, cuCtxPushCurrent, 4000, )                                            \
    X(cuCtxPopCurrent_v2, cuCtxPopCurrent, 4000, )                                              \
    X(cuDeviceGetAttribute, cuDeviceGetAttribute, 2000, )                                       \
    X(cuMemAddressReserve, cuMemAddressReserve, 10020, )                                        \
    X(cuMemAddressFree, cuMemAddressFree, 10020, )                                              \
    X(cuMemGetAllocationGranularity, cuMemGetAllocationGranularity, 10020, )                    \
    X(cuMemSetAccess, cuMemSetAccess, 10020, )                                                  \
    X(cuStreamCreate, cuStreamCreate, 2000, )                                                   \
    X(cuStreamDestroy_v2, cuStreamDestroy, 4000, )                                              \
    X(cuStreamSynchronize, cuStreamSynchronize, 2000, )                                         \
    X(cuStreamQuery, cuStreamQuery, 2000, )                                                     \
    X(cuStreamWaitEvent, cuStreamWaitEvent, 3020, )                                             \
    X(cuStreamGetCtx, cuStreamGetCtx, 9020, )                                                   \
    X(cuStreamGetCtx_ptsz, cuStreamGetCtx, 9020, _ptsz)                                         \
    X(cuStreamGetId, cuStreamGetId, 12000, )                                                    \
    X(cuStreamGetId_ptsz, cuStreamGetId, 12000, _ptsz)                                          \
    X(cuStreamIsCapturing, cuStreamIsCapturing, 10000, )                                        \
    X(cuStreamIsCapturing_ptsz, cuStreamIsCapturing, 10000, _ptsz)                              \
    X(cuEventCreate, cuEventCreate, 2000, )                                                     \
    X(cuEventRecord, cuEventRecord, 2000, )                                                     \
    X(cuEventRecord_ptsz, cuEventRecord, 7000, _ptsz)                                           \
    X(cuEventQuery, cuEventQuery, 2000, )                                                       \
    X(cuEventSynchronize, cuEventSynchronize, 2000, )                                           \
    X(cuEventDestroy_v2, cuEventDestroy, 4000, )                                                \
    X(cuEventElapsedTime_v2, cuEventElapsedTime, 12080, )                                       \
    X(cuEventElapsedTime, cuEventElapsedTime, 2000, )                                           \
    X(cuFuncGetParamInfo, cuFuncGetParamInfo, 12040, )                                          \
    X(cuKernelGetParamInfo, cuKernelGetParamInfo, 12040, )                                      \
    X(cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync, 3020, )                                          \
    X(cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync, 3020, )                                          \
    X(cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync, 3020, )                                          \
    X(cuMemHostAlloc, cuMemHostAlloc, 2020, )                                                   \
    X(cuMemFreeHost, cuMemFreeHost, 2000, )                                                     \
    X(cuMemHostRegister_v2, cuMemHostRegister, 6050, )                                          \
    X(cuMemHostUnregister, cuMemHostUnregister, 4000, )                                         \
    X(cuMemPoolGetAttribute, cuMemPoolGetAttribute, 11020, )                                    \
    X(cuDeviceGetMemPool, cuDeviceGetMemPool, 11020, )                                          \
    X(cuDeviceGetDefaultMemPool, cuDeviceGetDefaultMemPool, 11020, )                            \
    X(cuMemCreate, cuMemCreate, 10020, )                                                        \
    X(cuMemMap, cuMemMap, 10020, )                                                              \
    X(cuMemUnmap, cuMemUnmap, 10020, )                                                          \
    X(cuMemRelease, cuMemRelease, 10020, )                                                      \
    X(cuMemGetInfo_v2, cuMemGetInfo, 3020, )                                                    \
    X(cuPointerGetAttribute, cuPointerGetAttribute, 4000, )                                     \
    X(cuThreadExchangeStreamCaptureMode, cuThreadExchangeStreamCaptureMode, 10010, )            \
    X(cuCtxSynchronize, cuCtxSynchronize, 2000, )                                               \
    X(cuDevicePrimaryCtxGetState, cuDevicePrimaryCtxGetState, 7000, )                          \
    X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, 7000, )                              \
    X(cuDevicePrimaryCtxRelease_v2, cuDevicePrimaryCtxRelease, 11000, )

#endif /* SHIM_HOOKS_H */
