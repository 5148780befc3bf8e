/* SPDX-License-Identifier: MIT */
/*
 * pool.c - stream-ordered allocation: memory pools, cuMemAllocAsync and cuMemFreeAsync.
 *
 * An allocation is made at once from the device (and counted in its pool); the free is an
 * operation on the stream, so the memory goes away only when the stream reaches it, and a
 * later use of the pointer in any stream faults.  Pools keep usage statistics and attributes
 * but cache nothing: released memory goes straight back to the device, and leaves the pool's
 * statistics when it does (sim_pool_note_free, called by mem.c).
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define POOL_MAGIC 0x4c4f4f50u

struct CUmemPoolHandle_st {
    uint32_t magic;
    int device;
    CUmemPoolProps props;
    uint64_t used, used_high, threshold;
    int reuse[3];
};

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

static struct CUmemPoolHandle_st *pool_new(int device, const CUmemPoolProps *props)
{
    struct CUmemPoolHandle_st *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->magic = POOL_MAGIC;
    p->device = device;
    p->props = *props;
    p->reuse[0] = p->reuse[1] = p->reuse[2] = 1;
    return p;
}

/* The default pool of a device, created on first use. */
static CUmemoryPool default_pool(int device)
{
    sim_device_t *d = &sim_devs[device];
    pthread_mutex_lock(&pool_lock);
    if (!d->default_pool) {
        CUmemPoolProps props = { .allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                                 .location = { CU_MEM_LOCATION_TYPE_DEVICE, device } };
        d->default_pool = pool_new(device, &props);
    }
    if (!d->current_pool)
        d->current_pool = d->default_pool;
    CUmemoryPool p = d->current_pool;
    pthread_mutex_unlock(&pool_lock);
    return p;
}

static int pool_valid(CUmemoryPool p)
{
    return p && p->magic == POOL_MAGIC;
}

/* `size` bytes of pool memory went back to the device (the pool may have been destroyed). */
void sim_pool_note_free(struct CUmemPoolHandle_st *pool, uint64_t size)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool_lock);
    pool->used -= size < pool->used ? size : pool->used;
    pthread_mutex_unlock(&pool_lock);
}

SIM_API CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    CUresult r = sim_device_get(dev, NULL);
    if (r != CUDA_SUCCESS)
        return r;
    if (!pool_out)
        return CUDA_ERROR_INVALID_VALUE;
    default_pool(dev);
    *pool_out = sim_devs[dev].default_pool;
    return *pool_out ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

SIM_API CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    CUresult r = sim_device_get(dev, NULL);
    if (r != CUDA_SUCCESS)
        return r;
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    *pool = default_pool(dev);
    return *pool ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

SIM_API CUresult CUDAAPI cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
    CUresult r = sim_device_get(dev, NULL);
    if (r != CUDA_SUCCESS)
        return r;
    if (!pool_valid(pool) || pool->device != dev)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&pool_lock);
    sim_devs[dev].current_pool = pool;
    pthread_mutex_unlock(&pool_lock);
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!pool || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        props->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (sim_device_get(props->location.id, NULL) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_DEVICE;
    *pool = pool_new(props->location.id, props);
    return *pool ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

SIM_API CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool)
{
    if (!pool_valid(pool) || pool == sim_devs[pool->device].default_pool)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&pool_lock);
    if (sim_devs[pool->device].current_pool == pool)
        sim_devs[pool->device].current_pool = sim_devs[pool->device].default_pool;
    pthread_mutex_unlock(&pool_lock);
    /* Outstanding allocations stay valid until freed; the handle just stops working. */
    pool->magic = 0;
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    return pool_valid(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SIM_API CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                                               void *value)
{
    if (!pool_valid(pool) || !value)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&pool_lock);
    CUresult r = CUDA_SUCCESS;
    if (attr >= CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES &&
        attr <= CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES)
        pool->reuse[attr - 1] = *(int *)value != 0;
    else if (attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
        pool->threshold = *(cuuint64_t *)value;
    else if ((attr == CU_MEMPOOL_ATTR_USED_MEM_HIGH || attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) &&
             *(cuuint64_t *)value == 0)
        pool->used_high = pool->used;   /* "can only be reset to zero": it restarts from now */
    else
        r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&pool_lock);
    return r;
}

SIM_API CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                                               void *value)
{
    if (!pool_valid(pool) || !value)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&pool_lock);
    CUresult r = CUDA_SUCCESS;
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        *(int *)value = pool->reuse[attr - 1];
        break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: *(cuuint64_t *)value = pool->threshold; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *(cuuint64_t *)value = pool->used; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: *(cuuint64_t *)value = pool->used_high; break;
    default: r = CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_unlock(&pool_lock);
    return r;
}

/* ---------------------------------------------------------------- allocation */

static CUresult alloc_async(CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream h,
                            int ptds)
{
    CUstream s;
    CUresult r = sim_stream_resolve(h, ptds, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (!dptr || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (s->capture)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (!pool)
        pool = default_pool(s->ctx->device);
    if (!pool_valid(pool))
        return CUDA_ERROR_INVALID_VALUE;
    r = sim_alloc_device(size, SIM_RANGE_POOL, pool, pool->device, dptr);
    sim_range_t rg;
    if (r == CUDA_SUCCESS && sim_range_find(*dptr, &rg) == 0) {
        /* Count what the device gave (whole pages), which is what the free gives back. */
        pthread_mutex_lock(&pool_lock);
        pool->used += rg.size;
        if (pool->used > pool->used_high)
            pool->used_high = pool->used;
        pthread_mutex_unlock(&pool_lock);
    }
    return r;
}

SIM_API CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t size, CUstream h)
{
    return alloc_async(dptr, size, NULL, h, 0);
}

SIM_API CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t size, CUstream h)
{
    return alloc_async(dptr, size, NULL, h, 1);
}

SIM_API CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t size,
                                                 CUmemoryPool pool, CUstream h)
{
    return pool ? alloc_async(dptr, size, pool, h, 0) : CUDA_ERROR_INVALID_VALUE;
}

SIM_API CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t size,
                                                      CUmemoryPool pool, CUstream h)
{
    return pool ? alloc_async(dptr, size, pool, h, 1) : CUDA_ERROR_INVALID_VALUE;
}

static CUresult free_async(CUdeviceptr dptr, CUstream h, int ptds)
{
    CUstream s;
    sim_range_t rg;
    CUresult r = sim_stream_resolve(h, ptds, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (sim_range_find(dptr, &rg) < 0 || rg.base != dptr || rg.kind != SIM_RANGE_POOL)
        return CUDA_ERROR_INVALID_VALUE;
    if (s->capture)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    sim_op_t *op = sim_op_new(SIM_OP_FREE);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->u.free.base = rg.base;
    op->u.free.size = rg.size;
    op->u.free.device = rg.device;
    return sim_submit(s, op, NULL);
}

SIM_API CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream h)
{
    return free_async(dptr, h, 0);
}

SIM_API CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream h)
{
    return free_async(dptr, h, 1);
}
