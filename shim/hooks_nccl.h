/* SPDX-License-Identifier: MIT */
/*
 * hooks_nccl.h - the NCCL entry points libelixir.so wraps, one list that generates the
 * wrappers' table (wrap_nccl.c), the dlsym override's lookup and the exported names of the
 * version script (libelixir.map.in).  No NCCL header is needed to read it.
 *
 * X(sym): exported and wrapped: the operations whose buffers must be resident (collectives,
 * sends, receives), the group calls that delay their enqueueing or end the group, and the
 * calls that tell when a non-blocking communicator's operations are enqueued (its state
 * polled to ncclSuccess) or drop them (abort, destroy, finalize).  The
 * profiling aliases (pnccl*) are not wrapped: a tool calling them means to reach NCCL itself.
 */
#ifndef SHIM_HOOKS_NCCL_H
#define SHIM_HOOKS_NCCL_H

#define SHIM_NCCL_HOOKS(X)                                                                     \
    X(ncclAllReduce) X(ncclBroadcast) X(ncclBcast) X(ncclReduce) X(ncclAllGather)              \
    X(ncclReduceScatter) X(ncclAlltoAll) X(ncclGather) X(ncclScatter) X(ncclSend) X(ncclRecv)  \
    X(ncclGroupStart) X(ncclGroupEnd) X(ncclGroupSimulateEnd) X(ncclCommGetAsyncError)      \
    X(ncclCommAbort) X(ncclCommDestroy) X(ncclCommFinalize)

/* NCCL functions the shim calls itself, resolved the same way, never exported. */
#define SHIM_NCCL_CALLS(X) X(ncclCommCount) X(ncclCommCuDevice)

#endif
