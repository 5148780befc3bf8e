/* SPDX-License-Identifier: MIT */
/*
 * res_copy.c - a copy's operands, read from its description alone: how many it has, the
 * device address each one starts at, the shape of the bytes it reaches from there, and whether
 * it moves any byte at all.
 *
 * A copy names its operands as two addresses and a length, as a 2D or 3D descriptor whose
 * sides may be host memory, device memory or an array, or as a batch of such copies
 * (shim_copy_t, filled by wrap_copy.c).  Nothing here looks at an arena: collecting the chunks
 * the operands reach and making them resident around the driver call is res_launch.c's
 * (collect_copy, res_copy_begin).
 */
#include "res_int.h"

/* The first byte a structured copy's side reaches, when it names device memory (a device or
 * unified address), else 0. */
static CUdeviceptr side_start(CUmemorytype type, CUdeviceptr base, size_t x, size_t y,
                              size_t z, size_t pitch, size_t height)
{
    if (type != CU_MEMORYTYPE_DEVICE && type != CU_MEMORYTYPE_UNIFIED)
        return 0;
    return base + (z * height + y) * pitch + x;
}

/* The destination (side 0) or source (side 1) of 3D descriptor p: a CUDA_MEMCPY3D or a
 * CUDA_MEMCPY3D_PEER, whose fields have the same names. */
#define OPERAND_3D(p, side)                                                                    \
    ((side) ? side_start((p)->srcMemoryType, (p)->srcDevice, (p)->srcXInBytes, (p)->srcY,      \
                         (p)->srcZ, (p)->srcPitch, (p)->srcHeight)                             \
            : side_start((p)->dstMemoryType, (p)->dstDevice, (p)->dstXInBytes, (p)->dstY,      \
                         (p)->dstZ, (p)->dstPitch, (p)->dstHeight))

/* How many operands copy c has: a destination and a source per copy of a batch (none when
 * its arrays are missing: the driver refuses it), else two. */
size_t res_copy_noperands(const shim_copy_t *c)
{
    if (c->kind != SHIM_COPY_BATCH)
        return 2;
    return (c->dsts && c->srcs) || c->desc ? 2 * c->count : 0;
}

/* Operand i of copy c as a device address (0: host memory, an array, or none): the
 * destination (even i) or source (odd i) of its copy i / 2, the first byte a structured
 * descriptor reaches on that side (res_copy_shape says how far it goes). */
CUdeviceptr res_copy_operand(const shim_copy_t *c, size_t i)
{
    int side = (int)(i & 1);
    switch (c->kind) {
    case SHIM_COPY_2D: {
        const CUDA_MEMCPY2D *p = c->desc;
        return side ? side_start(p->srcMemoryType, p->srcDevice, p->srcXInBytes, p->srcY, 0,
                                 p->srcPitch, 0)
                    : side_start(p->dstMemoryType, p->dstDevice, p->dstXInBytes, p->dstY, 0,
                                 p->dstPitch, 0);
    }
    case SHIM_COPY_3D:
        return OPERAND_3D((const CUDA_MEMCPY3D *)c->desc, side);
    case SHIM_COPY_3D_PEER:
        return OPERAND_3D((const CUDA_MEMCPY3D_PEER *)c->desc, side);
    case SHIM_COPY_BATCH: {
        if (!c->desc)                           /* cuMemcpyBatchAsync */
            return side ? c->srcs[i / 2] : c->dsts[i / 2];
        const CUDA_MEMCPY3D_BATCH_OP *op = &((const CUDA_MEMCPY3D_BATCH_OP *)c->desc)[i / 2];
        const CUmemcpy3DOperand *o = side ? &op->src : &op->dst;
        return o->type == CU_MEMCPY_OPERAND_TYPE_POINTER ? o->op.ptr.ptr : 0;
    }
    default:
        return side ? c->src : c->dst;
    }
}

static shape_t rows_shape(uint64_t width, uint64_t rows, uint64_t depth, uint64_t pitch,
                          uint64_t height)
{
    return (shape_t){ width, rows, depth, pitch, height };
}

/* The shape operand i of copy c reaches from its first byte (res_copy_operand): it may run on
 * past the allocation holding that byte, into the next ones. */
shape_t res_copy_shape(const shim_copy_t *c, size_t i)
{
    int side = (int)(i & 1);
    switch (c->kind) {
    case SHIM_COPY_2D: {
        const CUDA_MEMCPY2D *p = c->desc;
        return rows_shape(p->WidthInBytes, p->Height, 1, side ? p->srcPitch : p->dstPitch, 0);
    }
    case SHIM_COPY_3D: {
        const CUDA_MEMCPY3D *p = c->desc;
        return side ? rows_shape(p->WidthInBytes, p->Height, p->Depth, p->srcPitch, p->srcHeight)
                    : rows_shape(p->WidthInBytes, p->Height, p->Depth, p->dstPitch, p->dstHeight);
    }
    case SHIM_COPY_3D_PEER: {
        const CUDA_MEMCPY3D_PEER *p = c->desc;
        return side ? rows_shape(p->WidthInBytes, p->Height, p->Depth, p->srcPitch, p->srcHeight)
                    : rows_shape(p->WidthInBytes, p->Height, p->Depth, p->dstPitch, p->dstHeight);
    }
    case SHIM_COPY_BATCH: {
        if (!c->desc)                           /* cuMemcpyBatchAsync */
            return rows_shape(c->sizes ? c->sizes[i / 2] : 0, 1, 1, 0, 0);
        const CUDA_MEMCPY3D_BATCH_OP *op = &((const CUDA_MEMCPY3D_BATCH_OP *)c->desc)[i / 2];
        const CUmemcpy3DOperand *o = side ? &op->src : &op->dst;
        const CUextent3D *e = &op->extent;
        size_t len = o->op.ptr.rowLength ? o->op.ptr.rowLength : e->width;
        size_t rows = o->op.ptr.layerHeight ? o->op.ptr.layerHeight : e->height;
        return rows_shape(e->width, e->height, e->depth, len, rows);     /* 1-byte elements */
    }
    default:
        return rows_shape(c->bytes, 1, 1, 0, 0);
    }
}

/* Does the copy of operand i of structured or batched copy c move any byte?  One that moves
 * none reaches nothing, whatever its operands name. */
int res_copy_moves(const shim_copy_t *c, size_t i)
{
    if (c->kind != SHIM_COPY_BATCH)
        return c->bytes != 0;
    if (!c->desc)                               /* cuMemcpyBatchAsync */
        return c->sizes && c->sizes[i / 2];
    const CUextent3D *e = &((const CUDA_MEMCPY3D_BATCH_OP *)c->desc)[i / 2].extent;
    return e->width && e->height && e->depth;
}
