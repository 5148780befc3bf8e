/* SPDX-License-Identifier: MIT */
/*
 * copy_batch.c - batched copies: cuMemcpyBatchAsync and cuMemcpy3DBatchAsync, in the CUDA 12.8
 * ABI (a `failIdx` before the stream) and the CUDA 13.0 one (_v2), each with its per-thread
 * variant (_ptsz).
 *
 * A batch is checked whole before anything is submitted, so a call that fails has done
 * nothing.  Then each copy becomes one copy operation on the stream, in list order, built as
 * cuMemcpyAsync builds its own (copy.c): the host-side rules (a pageable source staged at the
 * call, copies into pageable memory and host-to-host copies waited for), faults, the virtual
 * clock and the race checker see a batch as that many asynchronous copies.  Running them in
 * list order is one of the orders the driver may choose; copies that depend on each other are
 * undefined behaviour there and are not reported here.
 *
 * Source access order: STREAM reads the source in stream order.  DURING_API_CALL and ANY
 * ("can be out of stream order and the accesses can happen even after the API call returns")
 * read it at the call, one of the times either allows: the source is staged as a pageable one
 * would be, and the read is a host access for the race checker, so a batch that promised no
 * earlier work touches its source, and broke that promise, is reported.  The destination is
 * always written in stream order.
 *
 * Errors: CUDA_ERROR_INVALID_VALUE for the documented rules and for the legacy default stream;
 * an ARRAY operand is CUDA_ERROR_NOT_SUPPORTED (the simulator has no CUDA arrays, and no handle
 * a program holds can be one); a capturing stream is CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, and
 * the capture stays valid, as CUDA 13 drivers are reported to do (rapidsai/rmm issue 2518: the
 * batch is missing from a graph that ends and launches without error).
 *
 * The 12.8 ABI's failIdx ("the index of the copy where a failure was encountered ... SIZE_MAX
 * if the error doesn't pertain to any specific copy") is written whatever the result, as the
 * real driver (580, CUDA 13) writes it: SIZE_MAX on success and for an error about no one
 * copy, which includes a bad attribute entry (an access order or flag in attrs[k]: the entry
 * is wrong, not a copy, and the driver answers SIZE_MAX there too); the copy's index for an
 * error in one copy or one 3D operation.
 */
#include <errno.h>
#include <stdlib.h>

#include "sim.h"

/* The copy flags this header defines; others are refused. */
#define KNOWN_FLAGS ((unsigned)CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE)

typedef struct entry {
    sim_op_t *op;
    int wait;               /* the host waits for it (sim_copy_op_new) */
} entry_t;

/* A batch being built: its stream, its operations, and the copy an error is about. */
typedef struct batch {
    const char *name;       /* entry point, for logs and the race checker */
    CUstream s;
    entry_t *ops;
    size_t n;
    size_t fail;            /* SIZE_MAX: no one copy */
} batch_t;

static int order_valid(CUmemcpySrcAccessOrder o)
{
    return o == CU_MEMCPY_SRC_ACCESS_ORDER_STREAM ||
           o == CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL || o == CU_MEMCPY_SRC_ACCESS_ORDER_ANY;
}

/* Resolve the stream of a batch: any stream but the legacy default one. */
static CUresult batch_stream(CUstream h, int ptds, CUstream *out)
{
    CUresult r = sim_stream_resolve(h, ptds, out);
    if (r == CUDA_SUCCESS && (*out)->kind == SIM_STREAM_LEGACY)
        r = CUDA_ERROR_INVALID_VALUE;
    return r;
}

/* Start a batch of up to n copies on s. */
static CUresult batch_begin(batch_t *b, const char *name, CUstream s, size_t n)
{
    *b = (batch_t){ .name = name, .s = s, .fail = SIZE_MAX };
    CUresult r = sim_capture_decline(s, name);
    if (r != CUDA_SUCCESS)
        return r;
    b->ops = n <= SIZE_MAX / sizeof(entry_t) ? malloc(n * sizeof(entry_t)) : NULL;
    return b->ops ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

static void batch_abandon(batch_t *b)
{
    for (size_t i = 0; i < b->n; i++)
        sim_op_discard(b->ops[i].op);
    free(b->ops);
    b->ops = NULL;
    b->n = 0;
}

/* The host read the source of c just now: tell the race checker, row by row for a few rows and
 * as one span for more, as the executor reports a copy's rows. */
static void host_read(const sim_copy_t *c, const char *what)
{
    if (c->height * c->depth > 16 || c->spitch == c->width) {
        uint64_t rows = (c->depth - 1) * c->sheight + c->height - 1;
        uint64_t end = c->src + rows * c->spitch + c->width;
        sim_host_access(c->src, end - c->src, 0, what);
        return;
    }
    for (size_t z = 0; z < c->depth; z++)
        for (size_t y = 0; y < c->height; y++)
            sim_host_access(c->src + (z * c->sheight + y) * c->spitch, c->width, 0, what);
}

/*
 * Read op's source at the call where the access order or the driver's pageable rule says so.
 * An unreadable pageable source is CUDA_ERROR_INVALID_VALUE, as for cuMemcpyAsync; any other
 * unreadable source (freed device memory) poisons the copy, which then faults in stream order
 * as a copy from that memory does.
 */
static CUresult stage_source(sim_op_t *op, CUmemcpySrcAccessOrder order, const char *what)
{
    sim_copy_t *c = &op->u.copy;
    int during = order == CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL ||
                 order == CU_MEMCPY_SRC_ACCESS_ORDER_ANY;
    int pageable = c->src_where == SIM_WHERE_PAGEABLE;
    uint64_t at = 0;

    if (op->poison || !(during || (pageable && c->dst_where == SIM_WHERE_DEVICE)))
        return CUDA_SUCCESS;
    int err = sim_copy_stage(op, &at);
    if (err == 0) {
        if (during)
            host_read(c, what);
        return CUDA_SUCCESS;
    }
    if (err == -ENOMEM)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (pageable)
        return CUDA_ERROR_INVALID_VALUE;
    free(c->staging);
    c->staging = NULL;
    op->poison = at;
    return CUDA_SUCCESS;
}

/* Add copy i of the batch, described by c and read in `order`. */
static CUresult batch_add(batch_t *b, size_t i, const sim_copy_t *c, CUmemcpySrcAccessOrder order)
{
    int wait;
    if (c->width == 0)
        return CUDA_SUCCESS;
    sim_op_t *op = sim_copy_op_new(c, b->s->ctx->device, 1, &wait);
    CUresult r = op ? stage_source(op, order, b->name) : CUDA_ERROR_OUT_OF_MEMORY;
    if (r != CUDA_SUCCESS) {
        sim_op_discard(op);
        b->fail = i;
        return r;
    }
    b->ops[b->n++] = (entry_t){ op, wait };
    return CUDA_SUCCESS;
}

/* Submit every copy of the batch in order (one API call for the activity observer), then
 * wait for those the host must wait for. */
static CUresult batch_submit(batch_t *b)
{
    uint64_t seq = 0, wait_seq = 0;
    CUresult r = CUDA_SUCCESS;

    sim_activity_call_begin();
    for (size_t i = 0; i < b->n; i++) {
        if (r != CUDA_SUCCESS) {
            sim_op_discard(b->ops[i].op);
            continue;
        }
        r = sim_submit(b->s, b->ops[i].op, &seq);
        if (r == CUDA_SUCCESS && b->ops[i].wait && seq)
            wait_seq = seq;
    }
    sim_activity_call_end();
    free(b->ops);
    b->ops = NULL;
    if (r == CUDA_SUCCESS && wait_seq)
        r = sim_wait_seq(b->s, wait_seq, 1);
    return r;
}

/* The end of a batch call that got to r: every copy submitted when r is CUDA_SUCCESS; else
 * nothing is queued.  *fail_idx (when asked for) names the copy the error is about: SIZE_MAX
 * on success and for an error about no one copy. */
static CUresult batch_end(batch_t *b, CUresult r, size_t *fail_idx)
{
    if (r == CUDA_SUCCESS)
        r = batch_submit(b);
    else
        batch_abandon(b);
    if (fail_idx)
        *fail_idx = r == CUDA_SUCCESS ? SIZE_MAX : b->fail;
    return r;
}

/* ---------------------------------------------------------------- cuMemcpyBatchAsync */

/* The attribute rules of cuMemcpyBatchAsync.  A bad entry is about no one copy (failIdx
 * SIZE_MAX, as on the real driver), even when it applies to a single one. */
static CUresult check_attrs(size_t count, const CUmemcpyAttributes *attrs, const size_t *idxs,
                            size_t n)
{
    if (!attrs || !idxs || n == 0 || n > count || idxs[0] != 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t k = 0; k < n; k++) {
        if (idxs[k] >= count || (k > 0 && idxs[k] <= idxs[k - 1]))
            return CUDA_ERROR_INVALID_VALUE;
        if (!order_valid(attrs[k].srcAccessOrder) || (attrs[k].flags & ~KNOWN_FLAGS))
            return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

static CUresult batch_1d(const CUdeviceptr *dsts, const CUdeviceptr *srcs, const size_t *sizes,
                         size_t count, const CUmemcpyAttributes *attrs, const size_t *idxs,
                         size_t nattrs, size_t *fail_idx, CUstream h, int ptds)
{
    static const char name[] = "cuMemcpyBatchAsync";
    batch_t b = { .fail = SIZE_MAX };
    CUstream s;
    CUresult r = batch_stream(h, ptds, &s);
    if (r == CUDA_SUCCESS && (count == 0 || !dsts || !srcs || !sizes))
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        r = check_attrs(count, attrs, idxs, nattrs);
    if (r == CUDA_SUCCESS)
        r = batch_begin(&b, name, s, count);
    for (size_t i = 0, k = 0; r == CUDA_SUCCESS && i < count; i++) {
        if (k + 1 < nattrs && idxs[k + 1] == i)
            k++;
        sim_copy_t c = { .dst = dsts[i], .src = srcs[i], .width = sizes[i], .height = 1,
                         .depth = 1, .dpitch = sizes[i], .spitch = sizes[i], .dheight = 1,
                         .sheight = 1 };
        r = batch_add(&b, i, &c, attrs[k].srcAccessOrder);
    }
    return batch_end(&b, r, fail_idx);
}

SIM_API CUresult CUDAAPI cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
                                            size_t count, CUmemcpyAttributes *attrs,
                                            size_t *attrsIdxs, size_t numAttrs, size_t *failIdx,
                                            CUstream hStream)
{
    return batch_1d(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, hStream, 0);
}

SIM_API CUresult CUDAAPI cuMemcpyBatchAsync_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs,
                                                 size_t *sizes, size_t count,
                                                 CUmemcpyAttributes *attrs, size_t *attrsIdxs,
                                                 size_t numAttrs, size_t *failIdx,
                                                 CUstream hStream)
{
    return batch_1d(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, hStream, 1);
}

SIM_API CUresult CUDAAPI cuMemcpyBatchAsync_v2(CUdeviceptr *dsts, CUdeviceptr *srcs,
                                               size_t *sizes, size_t count,
                                               CUmemcpyAttributes *attrs, size_t *attrsIdxs,
                                               size_t numAttrs, CUstream hStream)
{
    return batch_1d(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, NULL, hStream, 0);
}

SIM_API CUresult CUDAAPI cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs,
                                                    size_t *sizes, size_t count,
                                                    CUmemcpyAttributes *attrs, size_t *attrsIdxs,
                                                    size_t numAttrs, CUstream hStream)
{
    return batch_1d(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, NULL, hStream, 1);
}

/* ---------------------------------------------------------------- cuMemcpy3DBatchAsync */

/*
 * One operand of a 3D batch copy of extent e: its first byte, row pitch and rows per layer
 * (element size 1; rowLength and layerHeight are 0 for tightly packed, else at least the
 * extent's width and height).
 */
static CUresult operand(const CUmemcpy3DOperand *o, const CUextent3D *e, uint64_t *ptr,
                        size_t *pitch, size_t *rows)
{
    size_t span;
    if (o->type == CU_MEMCPY_OPERAND_TYPE_ARRAY)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (o->type != CU_MEMCPY_OPERAND_TYPE_POINTER)
        return CUDA_ERROR_INVALID_VALUE;
    size_t len = o->op.ptr.rowLength, height = o->op.ptr.layerHeight;
    if ((len && len < e->width) || (height && height < e->height))
        return CUDA_ERROR_INVALID_VALUE;
    *ptr = o->op.ptr.ptr;
    *pitch = len ? len : e->width;
    *rows = height ? height : e->height;
    if (__builtin_mul_overflow(*pitch, *rows, &span) ||
        __builtin_mul_overflow(span, e->depth, &span))
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* Validate one operation of a 3D batch and describe it as a copy. */
static CUresult describe_op(const CUDA_MEMCPY3D_BATCH_OP *op, sim_copy_t *c)
{
    const CUextent3D *e = &op->extent;
    if (!order_valid(op->srcAccessOrder) || (op->flags & ~KNOWN_FLAGS) ||
        e->width == 0 || e->height == 0 || e->depth == 0)
        return CUDA_ERROR_INVALID_VALUE;
    *c = (sim_copy_t){ .width = e->width, .height = e->height, .depth = e->depth };
    CUresult r = operand(&op->src, e, &c->src, &c->spitch, &c->sheight);
    return r == CUDA_SUCCESS ? operand(&op->dst, e, &c->dst, &c->dpitch, &c->dheight) : r;
}

static CUresult batch_3d(size_t n, const CUDA_MEMCPY3D_BATCH_OP *ops, size_t *fail_idx,
                         unsigned long long flags, CUstream h, int ptds)
{
    static const char name[] = "cuMemcpy3DBatchAsync";
    batch_t b = { .fail = SIZE_MAX };
    sim_copy_t c;
    CUstream s;
    CUresult r = batch_stream(h, ptds, &s);
    if (r == CUDA_SUCCESS && (n == 0 || !ops || flags != 0))
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        r = batch_begin(&b, name, s, n);
    for (size_t i = 0; r == CUDA_SUCCESS && i < n; i++) {
        if ((r = describe_op(&ops[i], &c)) != CUDA_SUCCESS)
            b.fail = i;
        else
            r = batch_add(&b, i, &c, ops[i].srcAccessOrder);
    }
    return batch_end(&b, r, fail_idx);
}

SIM_API CUresult CUDAAPI cuMemcpy3DBatchAsync(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList,
                                              size_t *failIdx, unsigned long long flags,
                                              CUstream hStream)
{
    return batch_3d(numOps, opList, failIdx, flags, hStream, 0);
}

SIM_API CUresult CUDAAPI cuMemcpy3DBatchAsync_ptsz(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList,
                                                   size_t *failIdx, unsigned long long flags,
                                                   CUstream hStream)
{
    return batch_3d(numOps, opList, failIdx, flags, hStream, 1);
}

SIM_API CUresult CUDAAPI cuMemcpy3DBatchAsync_v2(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList,
                                                 unsigned long long flags, CUstream hStream)
{
    return batch_3d(numOps, opList, NULL, flags, hStream, 0);
}

SIM_API CUresult CUDAAPI cuMemcpy3DBatchAsync_v2_ptsz(size_t numOps,
                                                      CUDA_MEMCPY3D_BATCH_OP *opList,
                                                      unsigned long long flags, CUstream hStream)
{
    return batch_3d(numOps, opList, NULL, flags, hStream, 1);
}
