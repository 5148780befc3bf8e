/* SPDX-License-Identifier: MIT */
/*
 * copy.c - memory copies and memsets: every direction, 1D/2D/3D, peer, sync and async.
 *
 * The direction of a copy is decided by its addresses (unified addressing): device memory,
 * pinned host memory (cuMemHostAlloc, cuMemHostRegister, host-located VMM mappings) or
 * pageable host memory (anything else).  The host-side behaviour follows the driver's
 * "API synchronization behavior" rules: a pageable source is staged at the call so its buffer
 * may be reused at once, copies into pageable memory and host-to-host copies return only when
 * done, the synchronous forms wait where the driver does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

static int in_arena(uint64_t addr, int *owner)
{
    for (int i = 0; i < sim_ndevs; i++) {
        uint64_t base = (uint64_t)(uintptr_t)sim_devs[i].arena;
        if (addr >= base && addr - base < sim_devs[i].arena_size) {
            *owner = i;
            return 1;
        }
    }
    return 0;
}

int sim_where(uint64_t addr, int device, int *owner, uint64_t *bad)
{
    sim_ptr_info_t info;
    *owner = device;
    if (sim_ptr_info(addr, &info) < 0)
        return in_arena(addr, owner) ? SIM_WHERE_DEVICE : SIM_WHERE_PAGEABLE;
    switch (info.kind) {
    case SIM_RANGE_HOST:
    case SIM_RANGE_REGISTERED:
        return SIM_WHERE_PINNED;
    case SIM_RANGE_RESERVED:
        if (!info.mapped || !((info.access >> device) & 1))
            *bad = addr;
        if (info.host_location)
            return SIM_WHERE_PINNED;
        *owner = info.device;
        return SIM_WHERE_DEVICE;
    default:
        *owner = info.device;
        return SIM_WHERE_DEVICE;
    }
}

/* Choose engine and bandwidth; returns whether the host must wait for completion. */
static int plan(sim_copy_t *c, int device, int src_where, int dst_where, int src_dev, int dst_dev,
                int async)
{
    const sim_model_t *m = &sim_cfg.model;
    int pageable = src_where == SIM_WHERE_PAGEABLE || dst_where == SIM_WHERE_PAGEABLE;

    if (src_where != SIM_WHERE_DEVICE && dst_where != SIM_WHERE_DEVICE) {
        c->engine = -1;                             /* host to host: fully synchronous */
        c->gbps = 0;
        return 1;
    }
    if (src_where == SIM_WHERE_DEVICE && dst_where == SIM_WHERE_DEVICE) {
        c->engine = src_dev == dst_dev ? SIM_ENG_COMPUTE : SIM_ENG_PEER;
        c->gbps = src_dev == dst_dev ? m->hbm_gbps / 2
                  : m->nvlink_gbps > 0 ? m->nvlink_gbps
                  : m->h2d_gbps < m->d2h_gbps ? m->h2d_gbps : m->d2h_gbps;
        return 0;
    }
    if (dst_where != SIM_WHERE_DEVICE) {
        c->engine = SIM_ENG_D2H;
        c->gbps = pageable ? m->pageable_gbps : m->d2h_gbps;
        return !async || pageable;      /* into host memory: wait, unless async pinned */
    }
    c->engine = SIM_ENG_H2D;
    c->gbps = pageable ? m->pageable_gbps : m->h2d_gbps;
    return !async && !pageable;                     /* pinned sync H2D waits; pageable is staged */
}

/* Copy a pageable source into a private buffer now, so the caller may reuse it. */
static CUresult stage(sim_copy_t *c)
{
    size_t total = c->width * c->height * c->depth;
    c->staging = malloc(total ? total : 1);
    if (!c->staging)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (size_t z = 0; z < c->depth; z++)
        for (size_t y = 0; y < c->height; y++)
            memcpy((char *)c->staging + (z * c->height + y) * c->width,
                   (const char *)(uintptr_t)(c->src + (z * c->sheight + y) * c->spitch), c->width);
    return CUDA_SUCCESS;
}

typedef struct stage_arg {
    sim_copy_t *c;
    CUresult r;
} stage_arg_t;

static void stage_body(void *arg)
{
    stage_arg_t *a = arg;
    a->r = stage(a->c);
}

int sim_copy_stage(sim_op_t *op, uint64_t *addr)
{
    stage_arg_t a = { &op->u.copy, CUDA_SUCCESS };
    if (sim_guarded(stage_body, &a, addr) < 0)
        return -EFAULT;
    return a.r == CUDA_SUCCESS ? 0 : -ENOMEM;
}

sim_op_t *sim_copy_op_new(const sim_copy_t *in, int device, int async, int *wait)
{
    uint64_t bad = 0;
    int src_dev, dst_dev;
    int sw = sim_where(in->src, device, &src_dev, &bad);
    int dw = sim_where(in->dst, device, &dst_dev, &bad);
    sim_op_t *op = sim_op_new(SIM_OP_COPY);
    if (!op)
        return NULL;
    op->u.copy = *in;
    op->u.copy.staging = NULL;
    op->u.copy.src_where = (signed char)sw;
    op->u.copy.dst_where = (signed char)dw;
    op->u.copy.async = (unsigned char)async;
    op->poison = bad;
    *wait = plan(&op->u.copy, device, sw, dw, src_dev, dst_dev, async);
    return op;
}

/* Submit a copy on stream h (resolved with ptds); waits as the driver would. */
static CUresult submit_copy(CUstream h, int ptds, int async, const sim_copy_t *in)
{
    CUstream s;
    uint64_t fault_at;
    int wait;
    CUresult r = sim_stream_resolve(h, ptds, &s);
    if (r == CUDA_SUCCESS && !async)
        r = sim_capture_unsafe("synchronous copy");
    if (r != CUDA_SUCCESS)
        return r;
    if (in->width == 0 || in->height == 0 || in->depth == 0)
        return CUDA_SUCCESS;
    sim_op_t *op = sim_copy_op_new(in, s->ctx->device, async, &wait);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    const sim_copy_t *c = &op->u.copy;
    if (c->src_where == SIM_WHERE_PAGEABLE && c->dst_where == SIM_WHERE_DEVICE && !op->poison) {
        if (!async && !s->capture &&
            (r = sim_wait_seq(s, sim_stream_tail(s), 1)) != CUDA_SUCCESS) {
            sim_op_discard(op);
            return r;
        }
        int err = sim_copy_stage(op, &fault_at);
        if (err < 0) {
            sim_op_discard(op);
            return err == -ENOMEM ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_VALUE;
        }
    }
    uint64_t seq = 0;
    r = sim_submit(s, op, &seq);
    if (r == CUDA_SUCCESS && wait && seq)
        r = sim_wait_seq(s, seq, 1);
    return r;
}

static sim_copy_t linear(uint64_t dst, uint64_t src, size_t n)
{
    return (sim_copy_t){ .dst = dst, .src = src, .width = n, .height = 1, .depth = 1,
                         .dpitch = n, .spitch = n, .dheight = 1, .sheight = 1 };
}

#define COPY1D(name, dtype, stype, ptds, async)                                              \
    SIM_API CUresult CUDAAPI name(dtype dst, stype src, size_t n)                            \
    {                                                                                        \
        sim_copy_t c = linear((uint64_t)(uintptr_t)dst, (uint64_t)(uintptr_t)src, n);       \
        return submit_copy(NULL, ptds, async, &c);                                           \
    }

#define COPY1D_ASYNC(name, dtype, stype, ptds)                                               \
    SIM_API CUresult CUDAAPI name(dtype dst, stype src, size_t n, CUstream h)                \
    {                                                                                        \
        sim_copy_t c = linear((uint64_t)(uintptr_t)dst, (uint64_t)(uintptr_t)src, n);       \
        return submit_copy(h, ptds, 1, &c);                                                  \
    }

COPY1D(cuMemcpy, CUdeviceptr, CUdeviceptr, 0, 0)
COPY1D(cuMemcpy_ptds, CUdeviceptr, CUdeviceptr, 1, 0)
COPY1D(cuMemcpyHtoD_v2, CUdeviceptr, const void *, 0, 0)
COPY1D(cuMemcpyHtoD_v2_ptds, CUdeviceptr, const void *, 1, 0)
COPY1D(cuMemcpyDtoH_v2, void *, CUdeviceptr, 0, 0)
COPY1D(cuMemcpyDtoH_v2_ptds, void *, CUdeviceptr, 1, 0)
COPY1D(cuMemcpyDtoD_v2, CUdeviceptr, CUdeviceptr, 0, 0)
COPY1D(cuMemcpyDtoD_v2_ptds, CUdeviceptr, CUdeviceptr, 1, 0)
COPY1D_ASYNC(cuMemcpyAsync, CUdeviceptr, CUdeviceptr, 0)
COPY1D_ASYNC(cuMemcpyAsync_ptsz, CUdeviceptr, CUdeviceptr, 1)
COPY1D_ASYNC(cuMemcpyHtoDAsync_v2, CUdeviceptr, const void *, 0)
COPY1D_ASYNC(cuMemcpyHtoDAsync_v2_ptsz, CUdeviceptr, const void *, 1)
COPY1D_ASYNC(cuMemcpyDtoHAsync_v2, void *, CUdeviceptr, 0)
COPY1D_ASYNC(cuMemcpyDtoHAsync_v2_ptsz, void *, CUdeviceptr, 1)
COPY1D_ASYNC(cuMemcpyDtoDAsync_v2, CUdeviceptr, CUdeviceptr, 0)
COPY1D_ASYNC(cuMemcpyDtoDAsync_v2_ptsz, CUdeviceptr, CUdeviceptr, 1)

/* Peer copies: the contexts only name the devices; addresses are unified. */
/*
 * cuMemcpyPeer and cuMemcpy3DPeer are serialised with all pending and future work of the
 * current, source and destination contexts: the host waits for that work before submitting
 * the copy and for the copy (on the current context) after it.
 */
static CUresult serialise(CUcontext a, CUcontext b)
{
    CUcontext cur = sim_ctx_current();
    CUresult r = cur ? sim_ctx_wait_idle(cur) : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS && a && a != cur)
        r = sim_ctx_wait_idle(a);
    if (r == CUDA_SUCCESS && b && b != cur && b != a)
        r = sim_ctx_wait_idle(b);
    return r;
}

static CUresult peer(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n,
                     CUstream h, int ptds, int async)
{
    if (sim_ctx_check(dctx) != CUDA_SUCCESS || sim_ctx_check(sctx) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_CONTEXT;
    sim_copy_t c = linear(dst, src, n);
    CUresult r = async ? CUDA_SUCCESS : serialise(dctx, sctx);
    if (r == CUDA_SUCCESS)
        r = submit_copy(h, ptds, async, &c);
    if (r == CUDA_SUCCESS && !async)
        r = serialise(dctx, sctx);
    return r;
}

SIM_API CUresult CUDAAPI cuMemcpyPeer(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc,
                                      size_t n)
{
    return peer(d, dc, s, sc, n, NULL, 0, 0);
}

SIM_API CUresult CUDAAPI cuMemcpyPeer_ptds(CUdeviceptr d, CUcontext dc, CUdeviceptr s,
                                           CUcontext sc, size_t n)
{
    return peer(d, dc, s, sc, n, NULL, 1, 0);
}

SIM_API CUresult CUDAAPI cuMemcpyPeerAsync(CUdeviceptr d, CUcontext dc, CUdeviceptr s,
                                           CUcontext sc, size_t n, CUstream h)
{
    return peer(d, dc, s, sc, n, h, 0, 1);
}

SIM_API CUresult CUDAAPI cuMemcpyPeerAsync_ptsz(CUdeviceptr d, CUcontext dc, CUdeviceptr s,
                                                CUcontext sc, size_t n, CUstream h)
{
    return peer(d, dc, s, sc, n, h, 1, 1);
}

/* ---------------------------------------------------------------- 2D and 3D */

typedef struct side {
    size_t x, y, z;
    CUmemorytype type;
    const void *host;
    CUdeviceptr device;
    CUarray array;
    size_t pitch, height;
} side_t;

/* Address of a side's first byte, or an error for arrays and bad memory types. */
static CUresult side_addr(const side_t *s, uint64_t *out)
{
    uint64_t base;
    switch (s->type) {
    case CU_MEMORYTYPE_HOST: base = (uint64_t)(uintptr_t)s->host; break;
    case CU_MEMORYTYPE_DEVICE:
    case CU_MEMORYTYPE_UNIFIED: base = s->device; break;
    case CU_MEMORYTYPE_ARRAY: return CUDA_ERROR_NOT_SUPPORTED;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    *out = base + (s->z * s->height + s->y) * s->pitch + s->x;
    return CUDA_SUCCESS;
}

/* Validate a 3D copy between two sides and describe it in *c. */
static CUresult describe3d(const side_t *src, const side_t *dst, size_t width, size_t height,
                           size_t depth, sim_copy_t *c)
{
    *c = (sim_copy_t){ .width = width, .height = height, .depth = depth };
    CUresult r = side_addr(src, &c->src);
    if (r == CUDA_SUCCESS)
        r = side_addr(dst, &c->dst);
    if (r != CUDA_SUCCESS)
        return r;
    if ((height > 1 || depth > 1) &&
        (src->pitch < src->x + width || dst->pitch < dst->x + width))
        return CUDA_ERROR_INVALID_VALUE;
    if (depth > 1 && (src->height < src->y + height || dst->height < dst->y + height))
        return CUDA_ERROR_INVALID_VALUE;
    c->spitch = src->pitch ? src->pitch : width;
    c->dpitch = dst->pitch ? dst->pitch : width;
    c->sheight = src->height ? src->height : height;
    c->dheight = dst->height ? dst->height : height;
    return CUDA_SUCCESS;
}

static CUresult copy3d(const side_t *src, const side_t *dst, size_t width, size_t height,
                       size_t depth, CUstream h, int ptds, int async)
{
    sim_copy_t c;
    CUresult r = describe3d(src, dst, width, height, depth, &c);
    return r == CUDA_SUCCESS ? submit_copy(h, ptds, async, &c) : r;
}

static CUresult copy2d(const CUDA_MEMCPY2D *p, CUstream h, int ptds, int async)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    side_t s = { p->srcXInBytes, p->srcY, 0, p->srcMemoryType, p->srcHost, p->srcDevice,
                 p->srcArray, p->srcPitch, p->Height };
    side_t d = { p->dstXInBytes, p->dstY, 0, p->dstMemoryType, p->dstHost, p->dstDevice,
                 p->dstArray, p->dstPitch, p->Height };
    return copy3d(&s, &d, p->WidthInBytes, p->Height, 1, h, ptds, async);
}

static CUresult copy3d_desc(const CUDA_MEMCPY3D *p, CUstream h, int ptds, int async)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    side_t s = { p->srcXInBytes, p->srcY, p->srcZ, p->srcMemoryType, p->srcHost, p->srcDevice,
                 p->srcArray, p->srcPitch, p->srcHeight };
    side_t d = { p->dstXInBytes, p->dstY, p->dstZ, p->dstMemoryType, p->dstHost, p->dstDevice,
                 p->dstArray, p->dstPitch, p->dstHeight };
    return copy3d(&s, &d, p->WidthInBytes, p->Height, p->Depth, h, ptds, async);
}

static CUresult copy3d_peer(const CUDA_MEMCPY3D_PEER *p, CUstream h, int ptds, int async)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    side_t s = { p->srcXInBytes, p->srcY, p->srcZ, p->srcMemoryType, p->srcHost, p->srcDevice,
                 p->srcArray, p->srcPitch, p->srcHeight };
    side_t d = { p->dstXInBytes, p->dstY, p->dstZ, p->dstMemoryType, p->dstHost, p->dstDevice,
                 p->dstArray, p->dstPitch, p->dstHeight };
    if (async)
        return copy3d(&s, &d, p->WidthInBytes, p->Height, p->Depth, h, ptds, async);
    if ((p->srcContext && sim_ctx_check(p->srcContext) != CUDA_SUCCESS) ||
        (p->dstContext && sim_ctx_check(p->dstContext) != CUDA_SUCCESS))
        return CUDA_ERROR_INVALID_CONTEXT;
    CUresult r = serialise(p->dstContext, p->srcContext);
    if (r == CUDA_SUCCESS)
        r = copy3d(&s, &d, p->WidthInBytes, p->Height, p->Depth, h, ptds, async);
    return r == CUDA_SUCCESS ? serialise(p->dstContext, p->srcContext) : r;
}

CUresult sim_copy_op_build(const CUDA_MEMCPY3D *p, int device, sim_op_t **out)
{
    sim_copy_t c;
    int wait;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    side_t s = { p->srcXInBytes, p->srcY, p->srcZ, p->srcMemoryType, p->srcHost, p->srcDevice,
                 p->srcArray, p->srcPitch, p->srcHeight };
    side_t d = { p->dstXInBytes, p->dstY, p->dstZ, p->dstMemoryType, p->dstHost, p->dstDevice,
                 p->dstArray, p->dstPitch, p->dstHeight };
    CUresult r = describe3d(&s, &d, p->WidthInBytes, p->Height, p->Depth, &c);
    if (r != CUDA_SUCCESS)
        return r;
    *out = sim_copy_op_new(&c, device, 1, &wait);
    return *out ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

SIM_API CUresult CUDAAPI cuMemcpy2D_v2(const CUDA_MEMCPY2D *p) { return copy2d(p, NULL, 0, 0); }
SIM_API CUresult CUDAAPI cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *p) { return copy2d(p, NULL, 1, 0); }
SIM_API CUresult CUDAAPI cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *p) { return copy2d(p, NULL, 0, 0); }
SIM_API CUresult CUDAAPI cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *p) { return copy2d(p, NULL, 1, 0); }
SIM_API CUresult CUDAAPI cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *p, CUstream h) { return copy2d(p, h, 0, 1); }
SIM_API CUresult CUDAAPI cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *p, CUstream h) { return copy2d(p, h, 1, 1); }
SIM_API CUresult CUDAAPI cuMemcpy3D_v2(const CUDA_MEMCPY3D *p) { return copy3d_desc(p, NULL, 0, 0); }
SIM_API CUresult CUDAAPI cuMemcpy3D_v2_ptds(const CUDA_MEMCPY3D *p) { return copy3d_desc(p, NULL, 1, 0); }
SIM_API CUresult CUDAAPI cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D *p, CUstream h) { return copy3d_desc(p, h, 0, 1); }
SIM_API CUresult CUDAAPI cuMemcpy3DAsync_v2_ptsz(const CUDA_MEMCPY3D *p, CUstream h) { return copy3d_desc(p, h, 1, 1); }
SIM_API CUresult CUDAAPI cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER *p) { return copy3d_peer(p, NULL, 0, 0); }
SIM_API CUresult CUDAAPI cuMemcpy3DPeer_ptds(const CUDA_MEMCPY3D_PEER *p) { return copy3d_peer(p, NULL, 1, 0); }
SIM_API CUresult CUDAAPI cuMemcpy3DPeerAsync(const CUDA_MEMCPY3D_PEER *p, CUstream h) { return copy3d_peer(p, h, 0, 1); }
SIM_API CUresult CUDAAPI cuMemcpy3DPeerAsync_ptsz(const CUDA_MEMCPY3D_PEER *p, CUstream h) { return copy3d_peer(p, h, 1, 1); }

/* ---------------------------------------------------------------- memsets */

/* Validate a memset on `device` and build its operation; *where says what dst is. */
static CUresult memset_op(int device, uint64_t dst, unsigned value, unsigned elem, size_t width,
                          size_t height, size_t pitch, int *where, sim_op_t **out)
{
    uint64_t bad = 0;
    int owner;
    if (dst % elem || (height > 1 && (pitch % elem || pitch < width * elem)))
        return CUDA_ERROR_INVALID_VALUE;
    *where = sim_where(dst, device, &owner, &bad);
    if (*where == SIM_WHERE_PAGEABLE)
        return CUDA_ERROR_INVALID_VALUE;
    sim_op_t *op = sim_op_new(SIM_OP_MEMSET);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->u.memset = (sim_memset_t){ dst, value, elem, width, height,
                                   height > 1 ? pitch : width * elem, (signed char)*where, 1 };
    op->poison = bad;
    *out = op;
    return CUDA_SUCCESS;
}

CUresult sim_memset_op_build(int device, uint64_t dst, unsigned value, unsigned elem,
                             size_t width, size_t height, size_t pitch, sim_op_t **out)
{
    int where;
    return memset_op(device, dst, value, elem, width, height, pitch, &where, out);
}

static CUresult submit_memset(CUstream h, int ptds, int async, uint64_t dst, unsigned value,
                              unsigned elem, size_t width, size_t height, size_t pitch)
{
    CUstream s;
    sim_op_t *op;
    int where;
    CUresult r = sim_stream_resolve(h, ptds, &s);
    if (r == CUDA_SUCCESS && !async)
        r = sim_capture_unsafe("synchronous memset");
    if (r != CUDA_SUCCESS)
        return r;
    if (dst % elem || (height > 1 && (pitch % elem || pitch < width * elem)))
        return CUDA_ERROR_INVALID_VALUE;
    if (width == 0 || height == 0)
        return CUDA_SUCCESS;
    r = memset_op(s->ctx->device, dst, value, elem, width, height, pitch, &where, &op);
    if (r != CUDA_SUCCESS)
        return r;
    op->u.memset.async = (unsigned char)async;
    uint64_t seq = 0;
    r = sim_submit(s, op, &seq);
    /* Synchronous memsets wait only when the target is pinned host memory. */
    if (r == CUDA_SUCCESS && !async && where == SIM_WHERE_PINNED && seq)
        r = sim_wait_seq(s, seq, 1);
    return r;
}

#define MEMSET1D(name, vtype, elem, ptds)                                                    \
    SIM_API CUresult CUDAAPI name(CUdeviceptr d, vtype v, size_t n)                          \
    {                                                                                        \
        return submit_memset(NULL, ptds, 0, d, v, elem, n, 1, 0);                            \
    }
#define MEMSET1D_ASYNC(name, vtype, elem, ptds)                                              \
    SIM_API CUresult CUDAAPI name(CUdeviceptr d, vtype v, size_t n, CUstream h)              \
    {                                                                                        \
        return submit_memset(h, ptds, 1, d, v, elem, n, 1, 0);                               \
    }
#define MEMSET2D(name, vtype, elem, ptds)                                                    \
    SIM_API CUresult CUDAAPI name(CUdeviceptr d, size_t pitch, vtype v, size_t w, size_t h)  \
    {                                                                                        \
        return submit_memset(NULL, ptds, 0, d, v, elem, w, h, pitch);                        \
    }
#define MEMSET2D_ASYNC(name, vtype, elem, ptds)                                              \
    SIM_API CUresult CUDAAPI name(CUdeviceptr d, size_t pitch, vtype v, size_t w, size_t h,  \
                                 CUstream s)                                                 \
    {                                                                                        \
        return submit_memset(s, ptds, 1, d, v, elem, w, h, pitch);                           \
    }

MEMSET1D(cuMemsetD8_v2, unsigned char, 1, 0)
MEMSET1D(cuMemsetD8_v2_ptds, unsigned char, 1, 1)
MEMSET1D(cuMemsetD16_v2, unsigned short, 2, 0)
MEMSET1D(cuMemsetD16_v2_ptds, unsigned short, 2, 1)
MEMSET1D(cuMemsetD32_v2, unsigned int, 4, 0)
MEMSET1D(cuMemsetD32_v2_ptds, unsigned int, 4, 1)
MEMSET1D_ASYNC(cuMemsetD8Async, unsigned char, 1, 0)
MEMSET1D_ASYNC(cuMemsetD8Async_ptsz, unsigned char, 1, 1)
MEMSET1D_ASYNC(cuMemsetD16Async, unsigned short, 2, 0)
MEMSET1D_ASYNC(cuMemsetD16Async_ptsz, unsigned short, 2, 1)
MEMSET1D_ASYNC(cuMemsetD32Async, unsigned int, 4, 0)
MEMSET1D_ASYNC(cuMemsetD32Async_ptsz, unsigned int, 4, 1)
MEMSET2D(cuMemsetD2D8_v2, unsigned char, 1, 0)
MEMSET2D(cuMemsetD2D8_v2_ptds, unsigned char, 1, 1)
MEMSET2D(cuMemsetD2D16_v2, unsigned short, 2, 0)
MEMSET2D(cuMemsetD2D16_v2_ptds, unsigned short, 2, 1)
MEMSET2D(cuMemsetD2D32_v2, unsigned int, 4, 0)
MEMSET2D(cuMemsetD2D32_v2_ptds, unsigned int, 4, 1)
MEMSET2D_ASYNC(cuMemsetD2D8Async, unsigned char, 1, 0)
MEMSET2D_ASYNC(cuMemsetD2D8Async_ptsz, unsigned char, 1, 1)
MEMSET2D_ASYNC(cuMemsetD2D16Async, unsigned short, 2, 0)
MEMSET2D_ASYNC(cuMemsetD2D16Async_ptsz, unsigned short, 2, 1)
MEMSET2D_ASYNC(cuMemsetD2D32Async, unsigned int, 4, 0)
MEMSET2D_ASYNC(cuMemsetD2D32Async_ptsz, unsigned int, 4, 1)
