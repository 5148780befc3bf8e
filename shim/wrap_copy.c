/* SPDX-License-Identifier: MIT */
/*
 * wrap_copy.c - wrappers of every copy and memset: unified, peer, explicit direction,
 * arrays, 2D, 3D and batches; synchronous and asynchronous; default and per-thread streams.
 *
 * Each wrapper describes the operation in a shim_copy_t and calls copy_begin before the
 * driver and copy_end after it: copy_begin is where residency makes the operands accessible,
 * or refuses the copy (its result is then returned without the driver: see shim.h).
 * While a trace is recorded the wrapper takes the traced path, as the launch wrappers do
 * (wrap_launch.c): the tracer gives the operation its id first, times it around the driver
 * call and records it after.  A wrapper is one COPY_WRAPPER line: its
 * parameters, the arguments passed on, and the descriptor's fields.  The parameter lists are
 * checked against cudaTypedefs.h by the declarations in shim.h.
 */
#include "shim.h"

/* Before the driver enqueues the copy or memset: CUDA_SUCCESS, or the call's result without
 * the driver (res_copy_begin refused the copy). */
static inline CUresult copy_begin(shim_copy_t *c)
{
    return res_copy_begin(c);
}

/* After the driver returned r; returns r unchanged. */
static inline CUresult copy_end(shim_copy_t *c, CUresult r)
{
    res_copy_end(c, r);
    if (r == CUDA_SUCCESS)
        shim_stat_copy(c->kind, c->bytes);
    SHIM_TRACE(COPY, "%s(dst 0x%llx, src 0x%llx, %zu bytes, stream %p) = %d",
               shim_hook_names[c->hook], (unsigned long long)c->dst,
               (unsigned long long)c->src, c->bytes, (void *)c->stream, (int)r);
    return r;
}

static size_t bytes_2d(const CUDA_MEMCPY2D *p)
{
    return p ? p->WidthInBytes * p->Height : 0;
}

static size_t bytes_3d(const CUDA_MEMCPY3D *p)
{
    return p ? p->WidthInBytes * p->Height * p->Depth : 0;
}

static size_t bytes_3d_peer(const CUDA_MEMCPY3D_PEER *p)
{
    return p ? p->WidthInBytes * p->Height * p->Depth : 0;
}

static size_t bytes_batch(const size_t *sizes, size_t count)
{
    size_t sum = 0;

    for (size_t i = 0; sizes && i < count; i++)
        sum += sizes[i];
    return sum;
}

/* Elements of a 3D batch (bytes where both operands are pointers). */
static size_t bytes_3d_batch(const CUDA_MEMCPY3D_BATCH_OP *ops, size_t count)
{
    size_t sum = 0;

    for (size_t i = 0; ops && i < count; i++)
        sum += ops[i].extent.width * ops[i].extent.height * ops[i].extent.depth;
    return sum;
}

/* Defines wrapper `sym`: enter, describe the copy (the trailing initialisers), forward;
 * while recording a trace, with the tracer around residency and the driver. */
#define COPY_WRAPPER(sym, params, args, ...)                                                   \
    SHIM_EXPORT CUresult CUDAAPI sym params                                                   \
    {                                                                                          \
        SHIM_ENTER(sym, real);                                                                 \
        shim_copy_t c = { .hook = SHIM_HOOK_##sym, __VA_ARGS__ };                              \
        uint64_t t0 = shim_ht_begin();                                                         \
        if (SHIM_TRACING()) {                                                                  \
            shim_trace_copy_begin(&c);                                                         \
            CUresult no = copy_begin(&c);                                                      \
            shim_trace_issue(c.op, c.stream, c.hook);                                          \
            uint64_t td = no ? 0 : shim_ht_begin();                                            \
            CUresult r = no ? no : real args;                                                  \
            shim_ht_end(SHIM_HT_COPY_DRV, td);                                                 \
            shim_trace_copy_end(&c, r);                                                        \
            r = copy_end(&c, r);                                                               \
            shim_ht_end(SHIM_HT_COPY, t0);                                                     \
            return r;                                                                          \
        }                                                                                      \
        CUresult no = copy_begin(&c), r;                                                       \
        if (SHIM_LIKELY(!t0))                                                                  \
            return copy_end(&c, no ? no : real args);                                          \
        uint64_t td = no ? 0 : shim_ht_begin();                                                \
        r = no ? no : real args;                                                               \
        shim_ht_end(SHIM_HT_COPY_DRV, td);                                                     \
        r = copy_end(&c, r);                                                                   \
        shim_ht_end(SHIM_HT_COPY, t0);                                                         \
        return r;                                                                              \
    }

/* ------------------------------------------------------------ unified and peer */

#define UNIFIED_PARAMS (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
#define UNIFIED_ASYNC_PARAMS (CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
#define PEER_PARAMS                                                                            \
    (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext, \
     size_t ByteCount)
#define PEER_ASYNC_PARAMS                                                                      \
    (CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice, CUcontext srcContext, \
     size_t ByteCount, CUstream hStream)
#define PEER_ARGS (dstDevice, dstContext, srcDevice, srcContext, ByteCount)
#define PEER_ASYNC_ARGS (dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream)

COPY_WRAPPER(cuMemcpy, UNIFIED_PARAMS, (dst, src, ByteCount), .kind = SHIM_COPY_UNIFIED,
             .dst = dst, .src = src, .bytes = ByteCount)
COPY_WRAPPER(cuMemcpy_ptds, UNIFIED_PARAMS, (dst, src, ByteCount), .kind = SHIM_COPY_UNIFIED,
             .dst = dst, .src = src, .bytes = ByteCount)
COPY_WRAPPER(cuMemcpyAsync, UNIFIED_ASYNC_PARAMS, (dst, src, ByteCount, hStream),
             .kind = SHIM_COPY_UNIFIED, .dst = dst, .src = src, .bytes = ByteCount,
             .stream = hStream)
COPY_WRAPPER(cuMemcpyAsync_ptsz, UNIFIED_ASYNC_PARAMS, (dst, src, ByteCount, hStream),
             .kind = SHIM_COPY_UNIFIED, .dst = dst, .src = src, .bytes = ByteCount,
             .stream = hStream)
COPY_WRAPPER(cuMemcpyPeer, PEER_PARAMS, PEER_ARGS, .kind = SHIM_COPY_PEER, .dst = dstDevice,
             .src = srcDevice, .bytes = ByteCount)
COPY_WRAPPER(cuMemcpyPeer_ptds, PEER_PARAMS, PEER_ARGS, .kind = SHIM_COPY_PEER,
             .dst = dstDevice, .src = srcDevice, .bytes = ByteCount)
COPY_WRAPPER(cuMemcpyPeerAsync, PEER_ASYNC_PARAMS, PEER_ASYNC_ARGS, .kind = SHIM_COPY_PEER,
             .dst = dstDevice, .src = srcDevice, .bytes = ByteCount, .stream = hStream)
COPY_WRAPPER(cuMemcpyPeerAsync_ptsz, PEER_ASYNC_PARAMS, PEER_ASYNC_ARGS,
             .kind = SHIM_COPY_PEER, .dst = dstDevice, .src = srcDevice, .bytes = ByteCount,
             .stream = hStream)

/* ------------------------------------------------------------ explicit directions */

#define HTOD_PARAMS (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
#define DTOH_PARAMS (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
#define DTOD_PARAMS (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
#define HTOD_ASYNC_PARAMS                                                                      \
    (CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream)
#define DTOH_ASYNC_PARAMS (void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
#define DTOD_ASYNC_PARAMS                                                                      \
    (CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)

COPY_WRAPPER(cuMemcpyHtoD_v2, HTOD_PARAMS, (dstDevice, srcHost, ByteCount),
             .kind = SHIM_COPY_HTOD, .dst = dstDevice, .bytes = ByteCount)
COPY_WRAPPER(cuMemcpyHtoD_v2_ptds, HTOD_PARAMS, (dstDevice, srcHost, ByteCount),
             .kind = SHIM_COPY_HTOD, .dst = dstDevice, .bytes = ByteCount)
COPY_WRAPPER(cuMemcpyDtoH_v2, DTOH_PARAMS, (dstHost, srcDevice, ByteCount),
             .kind = SHIM_COPY_DTOH, .src = srcDevice, .bytes = ByteCount)
COPY_WRAPPER(cuMemcpyDtoH_v2_ptds, DTOH_PARAMS, (dstHost, srcDevice, ByteCount),
             .kind = SHIM_COPY_DTOH, .src = srcDevice, .bytes = ByteCount)
COPY_WRAPPER(cuMemcpyDtoD_v2, DTOD_PARAMS, (dstDevice, srcDevice, ByteCount),
             .kind = SHIM_COPY_DTOD, .dst = dstDevice, .src = srcDevice, .bytes = ByteCount)
COPY_WRAPPER(cuMemcpyDtoD_v2_ptds, DTOD_PARAMS, (dstDevice, srcDevice, ByteCount),
             .kind = SHIM_COPY_DTOD, .dst = dstDevice, .src = srcDevice, .bytes = ByteCount)
COPY_WRAPPER(cuMemcpyHtoDAsync_v2, HTOD_ASYNC_PARAMS, (dstDevice, srcHost, ByteCount, hStream),
             .kind = SHIM_COPY_HTOD, .dst = dstDevice, .bytes = ByteCount, .stream = hStream)
COPY_WRAPPER(cuMemcpyHtoDAsync_v2_ptsz, HTOD_ASYNC_PARAMS,
             (dstDevice, srcHost, ByteCount, hStream), .kind = SHIM_COPY_HTOD,
             .dst = dstDevice, .bytes = ByteCount, .stream = hStream)
COPY_WRAPPER(cuMemcpyDtoHAsync_v2, DTOH_ASYNC_PARAMS, (dstHost, srcDevice, ByteCount, hStream),
             .kind = SHIM_COPY_DTOH, .src = srcDevice, .bytes = ByteCount, .stream = hStream)
COPY_WRAPPER(cuMemcpyDtoHAsync_v2_ptsz, DTOH_ASYNC_PARAMS,
             (dstHost, srcDevice, ByteCount, hStream), .kind = SHIM_COPY_DTOH,
             .src = srcDevice, .bytes = ByteCount, .stream = hStream)
COPY_WRAPPER(cuMemcpyDtoDAsync_v2, DTOD_ASYNC_PARAMS, (dstDevice, srcDevice, ByteCount, hStream),
             .kind = SHIM_COPY_DTOD, .dst = dstDevice, .src = srcDevice, .bytes = ByteCount,
             .stream = hStream)
COPY_WRAPPER(cuMemcpyDtoDAsync_v2_ptsz, DTOD_ASYNC_PARAMS,
             (dstDevice, srcDevice, ByteCount, hStream), .kind = SHIM_COPY_DTOD,
             .dst = dstDevice, .src = srcDevice, .bytes = ByteCount, .stream = hStream)

/* ------------------------------------------------------------ arrays */

#define DTOA_PARAMS (CUarray dstArray, size_t dstOffset, CUdeviceptr srcDevice, size_t ByteCount)
#define ATOD_PARAMS (CUdeviceptr dstDevice, CUarray srcArray, size_t srcOffset, size_t ByteCount)
#define HTOA_PARAMS (CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount)
#define ATOH_PARAMS (void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount)
#define ATOA_PARAMS                                                                            \
    (CUarray dstArray, size_t dstOffset, CUarray srcArray, size_t srcOffset, size_t ByteCount)
#define HTOA_ASYNC_PARAMS                                                                      \
    (CUarray dstArray, size_t dstOffset, const void *srcHost, size_t ByteCount, CUstream hStream)
#define ATOH_ASYNC_PARAMS                                                                      \
    (void *dstHost, CUarray srcArray, size_t srcOffset, size_t ByteCount, CUstream hStream)

COPY_WRAPPER(cuMemcpyDtoA_v2, DTOA_PARAMS, (dstArray, dstOffset, srcDevice, ByteCount),
             .kind = SHIM_COPY_ARRAY, .src = srcDevice, .bytes = ByteCount)
COPY_WRAPPER(cuMemcpyDtoA_v2_ptds, DTOA_PARAMS, (dstArray, dstOffset, srcDevice, ByteCount),
             .kind = SHIM_COPY_ARRAY, .src = srcDevice, .bytes = ByteCount)
COPY_WRAPPER(cuMemcpyAtoD_v2, ATOD_PARAMS, (dstDevice, srcArray, srcOffset, ByteCount),
             .kind = SHIM_COPY_ARRAY, .dst = dstDevice, .bytes = ByteCount)
COPY_WRAPPER(cuMemcpyAtoD_v2_ptds, ATOD_PARAMS, (dstDevice, srcArray, srcOffset, ByteCount),
             .kind = SHIM_COPY_ARRAY, .dst = dstDevice, .bytes = ByteCount)
COPY_WRAPPER(cuMemcpyHtoA_v2, HTOA_PARAMS, (dstArray, dstOffset, srcHost, ByteCount),
             .kind = SHIM_COPY_ARRAY, .bytes = ByteCount)
COPY_WRAPPER(cuMemcpyHtoA_v2_ptds, HTOA_PARAMS, (dstArray, dstOffset, srcHost, ByteCount),
             .kind = SHIM_COPY_ARRAY, .bytes = ByteCount)
COPY_WRAPPER(cuMemcpyAtoH_v2, ATOH_PARAMS, (dstHost, srcArray, srcOffset, ByteCount),
             .kind = SHIM_COPY_ARRAY, .bytes = ByteCount)
COPY_WRAPPER(cuMemcpyAtoH_v2_ptds, ATOH_PARAMS, (dstHost, srcArray, srcOffset, ByteCount),
             .kind = SHIM_COPY_ARRAY, .bytes = ByteCount)
COPY_WRAPPER(cuMemcpyAtoA_v2, ATOA_PARAMS, (dstArray, dstOffset, srcArray, srcOffset, ByteCount),
             .kind = SHIM_COPY_ARRAY, .bytes = ByteCount)
COPY_WRAPPER(cuMemcpyAtoA_v2_ptds, ATOA_PARAMS,
             (dstArray, dstOffset, srcArray, srcOffset, ByteCount), .kind = SHIM_COPY_ARRAY,
             .bytes = ByteCount)
COPY_WRAPPER(cuMemcpyHtoAAsync_v2, HTOA_ASYNC_PARAMS,
             (dstArray, dstOffset, srcHost, ByteCount, hStream), .kind = SHIM_COPY_ARRAY,
             .bytes = ByteCount, .stream = hStream)
COPY_WRAPPER(cuMemcpyHtoAAsync_v2_ptsz, HTOA_ASYNC_PARAMS,
             (dstArray, dstOffset, srcHost, ByteCount, hStream), .kind = SHIM_COPY_ARRAY,
             .bytes = ByteCount, .stream = hStream)
COPY_WRAPPER(cuMemcpyAtoHAsync_v2, ATOH_ASYNC_PARAMS,
             (dstHost, srcArray, srcOffset, ByteCount, hStream), .kind = SHIM_COPY_ARRAY,
             .bytes = ByteCount, .stream = hStream)
COPY_WRAPPER(cuMemcpyAtoHAsync_v2_ptsz, ATOH_ASYNC_PARAMS,
             (dstHost, srcArray, srcOffset, ByteCount, hStream), .kind = SHIM_COPY_ARRAY,
             .bytes = ByteCount, .stream = hStream)

/* ------------------------------------------------------------ 2D, 3D, 3D peer */

COPY_WRAPPER(cuMemcpy2D_v2, (const CUDA_MEMCPY2D *pCopy), (pCopy), .kind = SHIM_COPY_2D,
             .bytes = bytes_2d(pCopy), .desc = pCopy)
COPY_WRAPPER(cuMemcpy2D_v2_ptds, (const CUDA_MEMCPY2D *pCopy), (pCopy), .kind = SHIM_COPY_2D,
             .bytes = bytes_2d(pCopy), .desc = pCopy)
COPY_WRAPPER(cuMemcpy2DUnaligned_v2, (const CUDA_MEMCPY2D *pCopy), (pCopy),
             .kind = SHIM_COPY_2D, .bytes = bytes_2d(pCopy), .desc = pCopy)
COPY_WRAPPER(cuMemcpy2DUnaligned_v2_ptds, (const CUDA_MEMCPY2D *pCopy), (pCopy),
             .kind = SHIM_COPY_2D, .bytes = bytes_2d(pCopy), .desc = pCopy)
COPY_WRAPPER(cuMemcpy2DAsync_v2, (const CUDA_MEMCPY2D *pCopy, CUstream hStream),
             (pCopy, hStream), .kind = SHIM_COPY_2D, .bytes = bytes_2d(pCopy), .desc = pCopy,
             .stream = hStream)
COPY_WRAPPER(cuMemcpy2DAsync_v2_ptsz, (const CUDA_MEMCPY2D *pCopy, CUstream hStream),
             (pCopy, hStream), .kind = SHIM_COPY_2D, .bytes = bytes_2d(pCopy), .desc = pCopy,
             .stream = hStream)
COPY_WRAPPER(cuMemcpy3D_v2, (const CUDA_MEMCPY3D *pCopy), (pCopy), .kind = SHIM_COPY_3D,
             .bytes = bytes_3d(pCopy), .desc = pCopy)
COPY_WRAPPER(cuMemcpy3D_v2_ptds, (const CUDA_MEMCPY3D *pCopy), (pCopy), .kind = SHIM_COPY_3D,
             .bytes = bytes_3d(pCopy), .desc = pCopy)
COPY_WRAPPER(cuMemcpy3DAsync_v2, (const CUDA_MEMCPY3D *pCopy, CUstream hStream),
             (pCopy, hStream), .kind = SHIM_COPY_3D, .bytes = bytes_3d(pCopy), .desc = pCopy,
             .stream = hStream)
COPY_WRAPPER(cuMemcpy3DAsync_v2_ptsz, (const CUDA_MEMCPY3D *pCopy, CUstream hStream),
             (pCopy, hStream), .kind = SHIM_COPY_3D, .bytes = bytes_3d(pCopy), .desc = pCopy,
             .stream = hStream)
COPY_WRAPPER(cuMemcpy3DPeer, (const CUDA_MEMCPY3D_PEER *pCopy), (pCopy),
             .kind = SHIM_COPY_3D_PEER, .bytes = bytes_3d_peer(pCopy), .desc = pCopy)
COPY_WRAPPER(cuMemcpy3DPeer_ptds, (const CUDA_MEMCPY3D_PEER *pCopy), (pCopy),
             .kind = SHIM_COPY_3D_PEER, .bytes = bytes_3d_peer(pCopy), .desc = pCopy)
COPY_WRAPPER(cuMemcpy3DPeerAsync, (const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream),
             (pCopy, hStream), .kind = SHIM_COPY_3D_PEER, .bytes = bytes_3d_peer(pCopy),
             .desc = pCopy, .stream = hStream)
COPY_WRAPPER(cuMemcpy3DPeerAsync_ptsz, (const CUDA_MEMCPY3D_PEER *pCopy, CUstream hStream),
             (pCopy, hStream), .kind = SHIM_COPY_3D_PEER, .bytes = bytes_3d_peer(pCopy),
             .desc = pCopy, .stream = hStream)

/* ------------------------------------------------------------ batches (CUDA 12.8 and 13.0 ABIs) */

#define BATCH_V1_PARAMS                                                                        \
    (CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,                        \
     CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, size_t *failIdx,           \
     CUstream hStream)
#define BATCH_V1_ARGS (dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, hStream)
#define BATCH_V2_PARAMS                                                                        \
    (CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes, size_t count,                        \
     CUmemcpyAttributes *attrs, size_t *attrsIdxs, size_t numAttrs, CUstream hStream)
#define BATCH_V2_ARGS (dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, hStream)
#define BATCH_FIELDS                                                                         \
    .kind = SHIM_COPY_BATCH, .dsts = dsts, .srcs = srcs, .sizes = sizes, .count = count,       \
    .bytes = bytes_batch(sizes, count), .stream = hStream

COPY_WRAPPER(cuMemcpyBatchAsync, BATCH_V1_PARAMS, BATCH_V1_ARGS, BATCH_FIELDS)
COPY_WRAPPER(cuMemcpyBatchAsync_ptsz, BATCH_V1_PARAMS, BATCH_V1_ARGS, BATCH_FIELDS)
COPY_WRAPPER(cuMemcpyBatchAsync_v2, BATCH_V2_PARAMS, BATCH_V2_ARGS, BATCH_FIELDS)
COPY_WRAPPER(cuMemcpyBatchAsync_v2_ptsz, BATCH_V2_PARAMS, BATCH_V2_ARGS, BATCH_FIELDS)

#define BATCH3D_V1_PARAMS                                                                      \
    (size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, size_t *failIdx, unsigned long long flags, \
     CUstream hStream)
#define BATCH3D_V1_ARGS (numOps, opList, failIdx, flags, hStream)
#define BATCH3D_V2_PARAMS                                                                      \
    (size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList, unsigned long long flags, CUstream hStream)
#define BATCH3D_V2_ARGS (numOps, opList, flags, hStream)
#define BATCH3D_FIELDS                                                                       \
    .kind = SHIM_COPY_BATCH, .desc = opList, .count = numOps,                                  \
    .bytes = bytes_3d_batch(opList, numOps), .stream = hStream

COPY_WRAPPER(cuMemcpy3DBatchAsync, BATCH3D_V1_PARAMS, BATCH3D_V1_ARGS, BATCH3D_FIELDS)
COPY_WRAPPER(cuMemcpy3DBatchAsync_ptsz, BATCH3D_V1_PARAMS, BATCH3D_V1_ARGS, BATCH3D_FIELDS)
COPY_WRAPPER(cuMemcpy3DBatchAsync_v2, BATCH3D_V2_PARAMS, BATCH3D_V2_ARGS, BATCH3D_FIELDS)
COPY_WRAPPER(cuMemcpy3DBatchAsync_v2_ptsz, BATCH3D_V2_PARAMS, BATCH3D_V2_ARGS, BATCH3D_FIELDS)

/* ------------------------------------------------------------ memsets */

#define MEMSET_PARAMS(T) (CUdeviceptr dstDevice, T value, size_t N)
#define MEMSET_ASYNC_PARAMS(T) (CUdeviceptr dstDevice, T value, size_t N, CUstream hStream)
#define MEMSET2D_PARAMS(T)                                                                     \
    (CUdeviceptr dstDevice, size_t dstPitch, T value, size_t Width, size_t Height)
#define MEMSET2D_ASYNC_PARAMS(T)                                                               \
    (CUdeviceptr dstDevice, size_t dstPitch, T value, size_t Width, size_t Height,            \
     CUstream hStream)
#define MEMSET_ARGS (dstDevice, value, N)
#define MEMSET_ASYNC_ARGS (dstDevice, value, N, hStream)
#define MEMSET2D_ARGS (dstDevice, dstPitch, value, Width, Height)
#define MEMSET2D_ASYNC_ARGS (dstDevice, dstPitch, value, Width, Height, hStream)
/* Bytes written: N elements of `size` bytes, or Height rows of `pitch` bytes (the last row
 * only up to Width elements; none when the rows are empty). */
#define MEMSET_FIELDS(size)                                                                    \
    .kind = SHIM_COPY_MEMSET, .dst = dstDevice, .bytes = (N) * (size), .value = value,         \
    .elem = (size)
#define MEMSET2D_FIELDS(size)                                                                  \
    .kind = SHIM_COPY_MEMSET, .dst = dstDevice,                                                \
    .bytes = Height && Width ? (Height - 1) * dstPitch + Width * (size) : 0, .value = value,   \
    .elem = (size), .pitch = dstPitch, .rows = Width ? Height : 0

COPY_WRAPPER(cuMemsetD8_v2, MEMSET_PARAMS(unsigned char), MEMSET_ARGS, MEMSET_FIELDS(1))
COPY_WRAPPER(cuMemsetD8_v2_ptds, MEMSET_PARAMS(unsigned char), MEMSET_ARGS, MEMSET_FIELDS(1))
COPY_WRAPPER(cuMemsetD16_v2, MEMSET_PARAMS(unsigned short), MEMSET_ARGS, MEMSET_FIELDS(2))
COPY_WRAPPER(cuMemsetD16_v2_ptds, MEMSET_PARAMS(unsigned short), MEMSET_ARGS, MEMSET_FIELDS(2))
COPY_WRAPPER(cuMemsetD32_v2, MEMSET_PARAMS(unsigned int), MEMSET_ARGS, MEMSET_FIELDS(4))
COPY_WRAPPER(cuMemsetD32_v2_ptds, MEMSET_PARAMS(unsigned int), MEMSET_ARGS, MEMSET_FIELDS(4))
COPY_WRAPPER(cuMemsetD2D8_v2, MEMSET2D_PARAMS(unsigned char), MEMSET2D_ARGS, MEMSET2D_FIELDS(1))
COPY_WRAPPER(cuMemsetD2D8_v2_ptds, MEMSET2D_PARAMS(unsigned char), MEMSET2D_ARGS,
             MEMSET2D_FIELDS(1))
COPY_WRAPPER(cuMemsetD2D16_v2, MEMSET2D_PARAMS(unsigned short), MEMSET2D_ARGS,
             MEMSET2D_FIELDS(2))
COPY_WRAPPER(cuMemsetD2D16_v2_ptds, MEMSET2D_PARAMS(unsigned short), MEMSET2D_ARGS,
             MEMSET2D_FIELDS(2))
COPY_WRAPPER(cuMemsetD2D32_v2, MEMSET2D_PARAMS(unsigned int), MEMSET2D_ARGS, MEMSET2D_FIELDS(4))
COPY_WRAPPER(cuMemsetD2D32_v2_ptds, MEMSET2D_PARAMS(unsigned int), MEMSET2D_ARGS,
             MEMSET2D_FIELDS(4))
COPY_WRAPPER(cuMemsetD8Async, MEMSET_ASYNC_PARAMS(unsigned char), MEMSET_ASYNC_ARGS,
             MEMSET_FIELDS(1), .stream = hStream)
COPY_WRAPPER(cuMemsetD8Async_ptsz, MEMSET_ASYNC_PARAMS(unsigned char), MEMSET_ASYNC_ARGS,
             MEMSET_FIELDS(1), .stream = hStream)
COPY_WRAPPER(cuMemsetD16Async, MEMSET_ASYNC_PARAMS(unsigned short), MEMSET_ASYNC_ARGS,
             MEMSET_FIELDS(2), .stream = hStream)
COPY_WRAPPER(cuMemsetD16Async_ptsz, MEMSET_ASYNC_PARAMS(unsigned short), MEMSET_ASYNC_ARGS,
             MEMSET_FIELDS(2), .stream = hStream)
COPY_WRAPPER(cuMemsetD32Async, MEMSET_ASYNC_PARAMS(unsigned int), MEMSET_ASYNC_ARGS,
             MEMSET_FIELDS(4), .stream = hStream)
COPY_WRAPPER(cuMemsetD32Async_ptsz, MEMSET_ASYNC_PARAMS(unsigned int), MEMSET_ASYNC_ARGS,
             MEMSET_FIELDS(4), .stream = hStream)
COPY_WRAPPER(cuMemsetD2D8Async, MEMSET2D_ASYNC_PARAMS(unsigned char), MEMSET2D_ASYNC_ARGS,
             MEMSET2D_FIELDS(1), .stream = hStream)
COPY_WRAPPER(cuMemsetD2D8Async_ptsz, MEMSET2D_ASYNC_PARAMS(unsigned char), MEMSET2D_ASYNC_ARGS,
             MEMSET2D_FIELDS(1), .stream = hStream)
COPY_WRAPPER(cuMemsetD2D16Async, MEMSET2D_ASYNC_PARAMS(unsigned short), MEMSET2D_ASYNC_ARGS,
             MEMSET2D_FIELDS(2), .stream = hStream)
COPY_WRAPPER(cuMemsetD2D16Async_ptsz, MEMSET2D_ASYNC_PARAMS(unsigned short),
             MEMSET2D_ASYNC_ARGS, MEMSET2D_FIELDS(2), .stream = hStream)
COPY_WRAPPER(cuMemsetD2D32Async, MEMSET2D_ASYNC_PARAMS(unsigned int), MEMSET2D_ASYNC_ARGS,
             MEMSET2D_FIELDS(4), .stream = hStream)
COPY_WRAPPER(cuMemsetD2D32Async_ptsz, MEMSET2D_ASYNC_PARAMS(unsigned int), MEMSET2D_ASYNC_ARGS,
             MEMSET2D_FIELDS(4), .stream = hStream)
