/* SPDX-License-Identifier: MIT */
/*
 * context.c - contexts: primary and created ones, the per-thread context stack, and the
 * sticky error state a context enters after a fault.
 *
 * A context owns its legacy default stream and a list of its streams.  Context structures
 * are never freed (a destroyed context keeps its magic and is marked destroyed), so a stale
 * handle is an error instead of a use after free; they stay on one list for the life of the
 * process (which also tells a leak checker they are kept on purpose).
 *
 * A destroyed context, passed in or current to a thread, is CUDA_ERROR_CONTEXT_IS_DESTROYED
 * ("the context current to the calling thread has been destroyed using cuCtxDestroy"; and
 * cuCtxDestroy: "If ctx is current to other threads, then ctx will remain current to those
 * threads, and attempting to access ctx from those threads will result in the error
 * CUDA_ERROR_CONTEXT_IS_DESTROYED"), as the real driver answers it (580, CUDA 13): for
 * cuCtxSynchronize_v2, cuCtxDestroy, cuCtxGetId and the peer calls given one, and for every
 * call that needs the current context.  Passing a destroyed context is undefined behaviour
 * ("doing so will result in undefined behavior"): cuCtxPushCurrent and cuCtxSetCurrent refuse
 * one the same way, where the real driver answers CUDA_SUCCESS and then corrupts its heap at
 * the next pop or set; cuCtxGetApiVersion and cuCtxGetDevice_v2 given one keep answering
 * CUDA_ERROR_INVALID_CONTEXT (the real driver's answer for the first).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define STACK_MAX 64

static _Thread_local CUcontext ctx_stack[STACK_MAX];
static _Thread_local int ctx_depth;
static _Atomic uint64_t next_ctx_id = 1;
static _Atomic(CUcontext) all_contexts;
static pthread_mutex_t peer_lock = PTHREAD_MUTEX_INITIALIZER;    /* writes of ctx->peers */

CUcontext sim_ctx_current(void)
{
    return ctx_depth ? ctx_stack[ctx_depth - 1] : NULL;
}

/* A context handle: CUDA_ERROR_INVALID_CONTEXT unless it is one, and
 * CUDA_ERROR_CONTEXT_IS_DESTROYED once cuCtxDestroy destroyed it. */
static CUresult ctx_handle(CUcontext ctx)
{
    if (!ctx || ctx->magic != SIM_CTX_MAGIC)
        return CUDA_ERROR_INVALID_CONTEXT;
    return ctx->destroyed ? CUDA_ERROR_CONTEXT_IS_DESTROYED : CUDA_SUCCESS;
}

CUresult sim_ctx_check(CUcontext ctx)
{
    CUresult r = ctx_handle(ctx);
    if (r != CUDA_SUCCESS)
        return r;
    int sticky = atomic_load(&ctx->sticky);
    return sticky ? (CUresult)sticky : CUDA_SUCCESS;
}

CUresult sim_ctx_get(CUcontext *out)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    CUcontext ctx = sim_ctx_current();
    if (!ctx)
        return CUDA_ERROR_INVALID_CONTEXT;
    r = sim_ctx_check(ctx);
    if (r == CUDA_SUCCESS && out)
        *out = ctx;
    return r;
}

void sim_ctx_fault(CUcontext ctx, CUresult err)
{
    int expected = 0;
    atomic_compare_exchange_strong(&ctx->sticky, &expected, (int)err);
}

static void default_limits(CUcontext ctx)
{
    memset(ctx->limits, 0, sizeof(ctx->limits));
    ctx->limits[CU_LIMIT_STACK_SIZE] = 1024;
    ctx->limits[CU_LIMIT_PRINTF_FIFO_SIZE] = 1 << 20;
    ctx->limits[CU_LIMIT_MALLOC_HEAP_SIZE] = 8 << 20;
    ctx->limits[CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT] = 2048;
    ctx->limits[CU_LIMIT_MAX_L2_FETCH_GRANULARITY] = 64;
}

static CUstream new_legacy_stream(CUcontext ctx)
{
    CUstream s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->magic = SIM_STREAM_MAGIC;
    s->kind = SIM_STREAM_LEGACY;
    s->ctx = ctx;
    s->refs = 1;
    s->race_tid = sim_race_new_thread();
    return s;
}

CUresult sim_ctx_create(int device, unsigned flags, int primary, CUcontext *out)
{
    CUcontext ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        return CUDA_ERROR_OUT_OF_MEMORY;
    ctx->magic = SIM_CTX_MAGIC;
    ctx->device = device;
    ctx->flags = flags;
    ctx->is_primary = primary;
    ctx->id = atomic_fetch_add(&next_ctx_id, 1);
    default_limits(ctx);
    ctx->legacy = new_legacy_stream(ctx);
    if (!ctx->legacy) {
        free(ctx);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    ctx->all_next = atomic_load(&all_contexts);
    while (!atomic_compare_exchange_weak(&all_contexts, &ctx->all_next, ctx))
        ;
    *out = ctx;
    return CUDA_SUCCESS;
}

static CUresult push(CUcontext ctx)
{
    if (ctx_depth == STACK_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    ctx_stack[ctx_depth++] = ctx;
    return CUDA_SUCCESS;
}

/* Create a context current to the calling thread (all cuCtxCreate ABIs end here). */
static CUresult ctx_create_current(CUcontext *pctx, unsigned flags, CUdevice dev)
{
    CUresult r = sim_device_get(dev, NULL);
    if (r != CUDA_SUCCESS)
        return r;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (flags & ~(unsigned)(CU_CTX_FLAGS_MASK))
        return CUDA_ERROR_INVALID_VALUE;
    r = sim_ctx_create(dev, flags, 0, pctx);
    if (r == CUDA_SUCCESS)
        r = push(*pctx);
    return r;
}

SIM_API CUresult CUDAAPI cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return ctx_create_current(pctx, flags, dev);
}

SIM_API CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return ctx_create_current(pctx, flags, dev);
}

SIM_API CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *params,
                                        int numParams, unsigned int flags, CUdevice dev)
{
    if (numParams < 0 || (numParams > 0 && !params))
        return CUDA_ERROR_INVALID_VALUE;
    return ctx_create_current(pctx, flags, dev);
}

SIM_API CUresult CUDAAPI cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params,
                                        unsigned int flags, CUdevice dev)
{
    if (params && (params->execAffinityParams || params->cigParams))
        return CUDA_ERROR_NOT_SUPPORTED;
    return ctx_create_current(pctx, flags, dev);
}

/* Remove every occurrence of ctx from the calling thread's stack. */
static void unstack(CUcontext ctx)
{
    int j = 0;
    for (int i = 0; i < ctx_depth; i++)
        if (ctx_stack[i] != ctx)
            ctx_stack[j++] = ctx_stack[i];
    ctx_depth = j;
}

/*
 * Reset a primary context, its work done: "destroy all allocations and reset all state on the
 * primary context" (cuDevicePrimaryCtxReset; also the last cuDevicePrimaryCtxRelease, after
 * which the context "will be destroyed").  Its streams and events are destroyed (a later use
 * of their handles is CUDA_ERROR_INVALID_HANDLE, as for any destroyed handle), its memory is
 * freed (registrations of host memory undone), its modules unloaded, its limits and peer
 * access are back to their defaults.  The handle stays the device's primary context: the
 * next retain activates it again.  Its implicit streams (the legacy and per-thread default
 * streams) stay.
 */
static void primary_reset(CUcontext ctx)
{
    pthread_mutex_lock(&sim_lock);
    for (CUevent e = ctx->events, next; e; e = next) {
        next = e->ctx_next;
        if (!e->destroyed) {
            e->destroyed = 1;
            sim_event_unref_locked(e);
        }
    }
    for (CUstream s = ctx->streams, next; s; s = next) {
        next = s->ctx_next;
        if (s->kind == SIM_STREAM_USER && !s->destroyed) {
            s->destroyed = 1;
            sim_stream_unref_locked(s);
        }
    }
    default_limits(ctx);
    pthread_mutex_unlock(&sim_lock);
    pthread_mutex_lock(&peer_lock);
    for (int i = 0; i < SIM_MAX_PEERS; i++)
        atomic_store_explicit(&ctx->peers[i], NULL, memory_order_release);
    pthread_mutex_unlock(&peer_lock);
    sim_module_free_ctx(ctx);
    sim_mem_free_ctx(ctx);
}

SIM_API CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = ctx_handle(ctx)) != CUDA_SUCCESS)
        return r;
    if (ctx->is_primary)
        return CUDA_ERROR_INVALID_CONTEXT;
    sim_ctx_wait_idle(ctx);
    ctx->destroyed = 1;
    unstack(ctx);
    sim_module_free_ctx(ctx);   /* "Destroys and cleans up all resources associated with */
    sim_mem_free_ctx(ctx);      /* the context", modules and registrations included */
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuCtxDestroy(CUcontext ctx)
{
    return cuCtxDestroy_v2(ctx);
}

SIM_API CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = ctx_handle(ctx)) != CUDA_SUCCESS)
        return r;
    return push(ctx);
}

SIM_API CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx)
{
    return cuCtxPushCurrent_v2(ctx);
}

SIM_API CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext *pctx)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!ctx_depth)
        return CUDA_ERROR_INVALID_CONTEXT;
    CUcontext ctx = ctx_stack[--ctx_depth];
    if (pctx)
        *pctx = ctx;
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx)
{
    return cuCtxPopCurrent_v2(pctx);
}

SIM_API CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!ctx) {
        if (ctx_depth)
            ctx_depth--;
        return CUDA_SUCCESS;
    }
    if ((r = ctx_handle(ctx)) != CUDA_SUCCESS)
        return r;
    if (ctx_depth)
        ctx_stack[ctx_depth - 1] = ctx;
    else
        ctx_stack[ctx_depth++] = ctx;
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = sim_ctx_current();
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- peer access */


int sim_ctx_peer_enabled(CUcontext ctx, CUcontext peer)
{
    for (int i = 0; i < SIM_MAX_PEERS; i++)
        if (atomic_load_explicit(&ctx->peers[i], memory_order_acquire) == peer)
            return 1;
    return 0;
}

/* The current context and a valid peer other than it, in *cur; else the error to return. */
static CUresult peer_pair(CUcontext peer, CUcontext *cur)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    *cur = sim_ctx_current();
    if ((r = ctx_handle(*cur)) != CUDA_SUCCESS || (r = ctx_handle(peer)) != CUDA_SUCCESS)
        return r;
    return peer == *cur ? CUDA_ERROR_INVALID_CONTEXT : CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
    CUcontext cur;
    CUresult r = peer_pair(peerContext, &cur);
    if (r != CUDA_SUCCESS)
        return r;
    if (Flags)
        return CUDA_ERROR_INVALID_VALUE;
    if (cur->device == peerContext->device)     /* what cuDeviceCanAccessPeer answers */
        return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
    pthread_mutex_lock(&peer_lock);
    r = CUDA_ERROR_TOO_MANY_PEERS;
    if (sim_ctx_peer_enabled(cur, peerContext))
        r = CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    for (int i = 0; i < SIM_MAX_PEERS && r == CUDA_ERROR_TOO_MANY_PEERS; i++)
        if (!atomic_load_explicit(&cur->peers[i], memory_order_relaxed)) {
            atomic_store_explicit(&cur->peers[i], peerContext, memory_order_release);
            r = CUDA_SUCCESS;
        }
    pthread_mutex_unlock(&peer_lock);
    return r;
}

SIM_API CUresult CUDAAPI cuCtxDisablePeerAccess(CUcontext peerContext)
{
    CUcontext cur;
    CUresult r = peer_pair(peerContext, &cur);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&peer_lock);
    r = CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
    for (int i = 0; i < SIM_MAX_PEERS; i++)
        if (atomic_load_explicit(&cur->peers[i], memory_order_relaxed) == peerContext) {
            atomic_store_explicit(&cur->peers[i], NULL, memory_order_release);
            r = CUDA_SUCCESS;
        }
    pthread_mutex_unlock(&peer_lock);
    return r;
}

SIM_API CUresult CUDAAPI cuCtxGetDevice(CUdevice *device)
{
    CUcontext ctx;
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    ctx = sim_ctx_current();
    if (!ctx)
        return CUDA_ERROR_INVALID_CONTEXT;
    *device = ctx->device;
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
    if (!ctx)
        return cuCtxGetDevice(device);
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (ctx->magic != SIM_CTX_MAGIC || ctx->destroyed)
        return CUDA_ERROR_INVALID_CONTEXT;
    *device = ctx->device;
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuCtxGetFlags(unsigned int *flags)
{
    CUcontext ctx = sim_ctx_current();
    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    if (!ctx)
        return CUDA_ERROR_INVALID_CONTEXT;
    *flags = ctx->flags;
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuCtxSetFlags(unsigned int flags)
{
    CUcontext ctx = sim_ctx_current();
    if (!ctx)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (flags & ~(unsigned)CU_CTX_FLAGS_MASK)
        return CUDA_ERROR_INVALID_VALUE;
    ctx->flags = flags;
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
    if (!ctx)
        ctx = sim_ctx_current();
    if (!ctxId)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = ctx_handle(ctx);
    if (r != CUDA_SUCCESS)
        return r;
    *ctxId = ctx->id;
    return CUDA_SUCCESS;
}

/* A destroyed context: CUDA_ERROR_CONTEXT_IS_DESTROYED when it is the current one, but
 * CUDA_ERROR_INVALID_CONTEXT when passed in, as the real driver answers. */
SIM_API CUresult CUDAAPI cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
    int explicit = ctx != NULL;
    if (!ctx)
        ctx = sim_ctx_current();
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = ctx_handle(ctx);
    if (r == CUDA_ERROR_CONTEXT_IS_DESTROYED && explicit)
        r = CUDA_ERROR_INVALID_CONTEXT;
    if (r != CUDA_SUCCESS)
        return r;
    *version = 13000;
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuCtxGetStreamPriorityRange(int *least, int *greatest)
{
    CUresult r = sim_ctx_get(NULL);
    if (r != CUDA_SUCCESS)
        return r;
    if (least)
        *least = 0;
    if (greatest)
        *greatest = -5;
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuCtxGetLimit(size_t *value, CUlimit limit)
{
    CUcontext ctx;
    CUresult r = sim_ctx_get(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    if (!value || (unsigned)limit >= SIM_ARRAY_LEN(ctx->limits))
        return CUDA_ERROR_INVALID_VALUE;
    *value = ctx->limits[limit];
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuCtxSetLimit(CUlimit limit, size_t value)
{
    CUcontext ctx;
    CUresult r = sim_ctx_get(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    if ((unsigned)limit >= SIM_ARRAY_LEN(ctx->limits))
        return CUDA_ERROR_INVALID_VALUE;
    ctx->limits[limit] = value;
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuCtxGetCacheConfig(CUfunc_cache *config)
{
    CUresult r = sim_ctx_get(NULL);
    if (r != CUDA_SUCCESS)
        return r;
    if (!config)
        return CUDA_ERROR_INVALID_VALUE;
    *config = CU_FUNC_CACHE_PREFER_NONE;
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuCtxSetCacheConfig(CUfunc_cache config)
{
    return sim_ctx_get(NULL);
}

SIM_API CUresult CUDAAPI cuCtxSynchronize(void)
{
    CUcontext ctx;
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    ctx = sim_ctx_current();
    if ((r = ctx_handle(ctx)) != CUDA_SUCCESS)
        return r;
    if (sim_on_executor())
        return CUDA_ERROR_NOT_PERMITTED;
    if ((r = sim_capture_ctx_sync(ctx)) != CUDA_SUCCESS)
        return r;
    return sim_ctx_wait_idle(ctx);
}

/* CUDA 13 ABI: synchronise the given context (NULL: the current one). */
SIM_API CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!ctx)
        return cuCtxSynchronize();
    if ((r = ctx_handle(ctx)) != CUDA_SUCCESS)
        return r;
    if (sim_on_executor())
        return CUDA_ERROR_NOT_PERMITTED;
    if ((r = sim_capture_ctx_sync(ctx)) != CUDA_SUCCESS)
        return r;
    return sim_ctx_wait_idle(ctx);
}

/* ---------------------------------------------------------------- primary contexts */

SIM_API CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    sim_device_t *d;
    CUresult r = sim_device_get(dev, &d);
    if (r != CUDA_SUCCESS)
        return r;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    /* Created outside sim_lock: creation takes the race checker's lock, which is always
     * taken before sim_lock, never after.  */
    static pthread_mutex_t create_lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&create_lock);
    if (!d->primary) {
        CUcontext ctx;
        r = sim_ctx_create(dev, d->primary_flags, 1, &ctx);
        if (r == CUDA_SUCCESS) {
            pthread_mutex_lock(&sim_lock);
            d->primary = ctx;
            pthread_mutex_unlock(&sim_lock);
        }
    }
    pthread_mutex_unlock(&create_lock);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_lock);
    d->primary_refs++;
    *pctx = d->primary;
    pthread_mutex_unlock(&sim_lock);
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    sim_device_t *d;
    CUresult r = sim_device_get(dev, &d);
    if (r != CUDA_SUCCESS)
        return r;
    if (sim_on_executor())      /* it may have to wait for the context's work */
        return CUDA_ERROR_NOT_PERMITTED;
    pthread_mutex_lock(&sim_lock);
    int last = 0;
    if (d->primary_refs == 0)
        r = CUDA_ERROR_INVALID_CONTEXT;
    else
        last = --d->primary_refs == 0;
    CUcontext ctx = d->primary;
    pthread_mutex_unlock(&sim_lock);
    if (last) {
        /* "If there are no more references to the primary context it will be destroyed,
         * regardless of how many threads it is current to." */
        sim_ctx_wait_idle(ctx);
        primary_reset(ctx);
    }
    return r;
}

SIM_API CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
    return cuDevicePrimaryCtxRelease_v2(dev);
}

SIM_API CUresult CUDAAPI cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
    sim_device_t *d;
    CUresult r = sim_device_get(dev, &d);
    if (r != CUDA_SUCCESS)
        return r;
    if (flags & ~(unsigned)CU_CTX_FLAGS_MASK)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    d->primary_flags = flags;
    if (d->primary)
        d->primary->flags = flags;
    pthread_mutex_unlock(&sim_lock);
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
    return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}

SIM_API CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    sim_device_t *d;
    CUresult r = sim_device_get(dev, &d);
    if (r != CUDA_SUCCESS)
        return r;
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_lock);
    *flags = d->primary_flags;
    *active = d->primary_refs > 0;
    pthread_mutex_unlock(&sim_lock);
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    sim_device_t *d;
    CUresult r = sim_device_get(dev, &d);
    if (r != CUDA_SUCCESS)
        return r;
    /* A sticky fault survives a reset: on a GPU the process must be restarted. */
    if (!d->primary)
        return CUDA_SUCCESS;
    if (sim_on_executor())
        return CUDA_ERROR_NOT_PERMITTED;
    r = sim_ctx_wait_idle(d->primary);
    primary_reset(d->primary);
    return r;
}

SIM_API CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev)
{
    return cuDevicePrimaryCtxReset_v2(dev);
}
