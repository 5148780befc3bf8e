/* SPDX-License-Identifier: MIT */
/*
 * copy_batch.h - the four ABIs of the batched copies, for the copy_batch* tests.  Each entry
 * point is looked up with cuGetProcAddress_v2 as cudart looks it up (CUDA version 12080 or
 * 13000, default or per-thread stream), must be the exported variant the real driver returns
 * for that request, and is called through one signature: the 12.8 ABI takes a failIdx before
 * the stream, the 13.0 one (_v2) does not.
 */
#ifndef COPY_BATCH_H
#define COPY_BATCH_H

#include <dlfcn.h>
#include <string.h>

#include <cudaTypedefs.h>

#include "simtest.h"

typedef struct cb_abi {
    const char *label;
    int version;                    /* 12080 or 13000 */
    int per_thread;                 /* CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM */
    const char *sym, *sym3d;        /* the exported names the lookups must give */
    PFN_cuMemcpyBatchAsync_v12080 v1;
    PFN_cuMemcpy3DBatchAsync_v12080 v1_3d;
    PFN_cuMemcpyBatchAsync_v13000 v2;
    PFN_cuMemcpy3DBatchAsync_v13000 v2_3d;
} cb_abi_t;

#define CB_NABIS 4

static cb_abi_t cb_abis[CB_NABIS] = {
    { "12.8", 12080, 0, "cuMemcpyBatchAsync", "cuMemcpy3DBatchAsync", 0, 0, 0, 0 },
    { "12.8 per-thread", 12080, 1, "cuMemcpyBatchAsync_ptsz", "cuMemcpy3DBatchAsync_ptsz",
      0, 0, 0, 0 },
    { "13.0", 13000, 0, "cuMemcpyBatchAsync_v2", "cuMemcpy3DBatchAsync_v2", 0, 0, 0, 0 },
    { "13.0 per-thread", 13000, 1, "cuMemcpyBatchAsync_v2_ptsz", "cuMemcpy3DBatchAsync_v2_ptsz",
      0, 0, 0, 0 },
};

/* cuGetProcAddress_v2(name) for ABI a; the result must be the exported symbol `want`. */
static inline void *cb_proc(const cb_abi_t *a, const char *name, const char *want)
{
    cuuint64_t flags = a->per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                                     : CU_GET_PROC_ADDRESS_DEFAULT;
    CUdriverProcAddressQueryResult status;
    void *fn = NULL;
    Dl_info info;

    CHECK_CU(cuGetProcAddress_v2(name, &fn, a->version, flags, &status));
    EXPECT(fn && status == CU_GET_PROC_ADDRESS_SUCCESS, "%s at %d: no entry point", name,
           a->version);
    EXPECT(dladdr(fn, &info) && info.dli_sname && strcmp(info.dli_sname, want) == 0,
           "%s at %d (%s): got %s, expected %s", name, a->version, a->label,
           info.dli_sname ? info.dli_sname : "(none)", want);
    return fn;
}

/* Look up every ABI's two entry points. */
static inline void cb_lookup(void)
{
    for (int i = 0; i < CB_NABIS; i++) {
        cb_abi_t *a = &cb_abis[i];
        void *p = cb_proc(a, "cuMemcpyBatchAsync", a->sym);
        void *p3 = cb_proc(a, "cuMemcpy3DBatchAsync", a->sym3d);
        if (a->version == 12080) {
            memcpy(&a->v1, &p, sizeof(p));
            memcpy(&a->v1_3d, &p3, sizeof(p3));
        } else {
            memcpy(&a->v2, &p, sizeof(p));
            memcpy(&a->v2_3d, &p3, sizeof(p3));
        }
    }
}

/* cuMemcpyBatchAsync through ABI a.  The 12.8 ABI is given `fail` as its failIdx; the 13.0
 * ABI has none and leaves *fail alone. */
static inline CUresult cb_copy(const cb_abi_t *a, CUdeviceptr *dsts, CUdeviceptr *srcs,
                               size_t *sizes, size_t count, CUmemcpyAttributes *attrs,
                               size_t *idxs, size_t nattrs, size_t *fail, CUstream s)
{
    if (a->version == 12080)
        return a->v1(dsts, srcs, sizes, count, attrs, idxs, nattrs, fail, s);
    return a->v2(dsts, srcs, sizes, count, attrs, idxs, nattrs, s);
}

/* cuMemcpy3DBatchAsync through ABI a, failIdx as for cb_copy. */
static inline CUresult cb_copy3d(const cb_abi_t *a, size_t n, CUDA_MEMCPY3D_BATCH_OP *ops,
                                 size_t *fail, unsigned long long flags, CUstream s)
{
    if (a->version == 12080)
        return a->v1_3d(n, ops, fail, flags, s);
    return a->v2_3d(n, ops, flags, s);
}

/* An attribute entry with source access order `order` and no flags. */
static inline CUmemcpyAttributes cb_attr(CUmemcpySrcAccessOrder order)
{
    CUmemcpyAttributes at;
    memset(&at, 0, sizeof(at));
    at.srcAccessOrder = order;
    return at;
}

/* A pointer operand: ptr, row length and layer height in bytes (0: tightly packed). */
static inline CUmemcpy3DOperand cb_ptr(CUdeviceptr ptr, size_t row_length, size_t layer_height)
{
    CUmemcpy3DOperand o;
    memset(&o, 0, sizeof(o));
    o.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
    o.op.ptr.ptr = ptr;
    o.op.ptr.rowLength = row_length;
    o.op.ptr.layerHeight = layer_height;
    return o;
}

static inline CUdeviceptr cb_host(const void *p)
{
    return (CUdeviceptr)(uintptr_t)p;
}

#endif /* COPY_BATCH_H */
