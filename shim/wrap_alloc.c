/* SPDX-License-Identifier: MIT */
/*
 * wrap_alloc.c - wrappers of allocation, free, memory information and pointer queries, and
 * of the application's own virtual memory management and IPC.
 *
 * Residency (res.c) serves cuMemAlloc* from its arena instead of the driver, takes frees
 * back (cuMemFreeAsync in stream order), reports the virtual capacity through cuMemGetInfo
 * and answers pointer queries for arena memory.  The application's own device memory
 * (cuMemCreate, its memory pools) is charged to the GPU budget and never moved, and arena
 * memory exported through IPC is pinned resident.  Each wrapper counts what it saw.
 */
#include "shim.h"

/* The size of the block at dptr as the driver rounded it, for statistics only: 0 unless
 * ELIXIR_STATS is on (the query is an extra driver call). */
static size_t block_size(CUdeviceptr dptr)
{
    shim_pfn_cuMemGetAddressRange_v2_t range;
    CUdeviceptr base;
    size_t size = 0;

    if (!dptr || !shim_stats_enabled())
        return 0;
    if (res_owns(dptr)) {
        CUresult r;
        return res_address_range(&base, &size, dptr, &r) && r == CUDA_SUCCESS ? size : 0;
    }
    range = SHIM_DRIVER_CALL(cuMemGetAddressRange_v2);
    if (!range || range(&base, &size, dptr) != CUDA_SUCCESS)
        return 0;
    return size;
}

/* Does the calling thread have a context the driver takes (current, not destroyed)? */
static int context_usable(void)
{
    shim_pfn_cuCtxGetDevice_t get = SHIM_DRIVER_CALL(cuCtxGetDevice);
    CUdevice dev;

    return get && get(&dev) == CUDA_SUCCESS;
}

/* While a trace is recorded: an allocation the driver served (a pool's, or one the arena
 * passed on), on the current context's device; residency records its own. */
static void trace_driver_alloc(CUdeviceptr p, size_t bytes)
{
    shim_pfn_cuCtxGetDevice_t get = SHIM_DRIVER_CALL(cuCtxGetDevice);
    CUdevice dev = 0;

    if (!res_owns(p) && get && get(&dev) == CUDA_SUCCESS) {
        shim_trace_site_begin();
        shim_trace_alloc(dev, p, bytes);
        shim_trace_site_end();
    }
}

/* After an allocation call: count it (the driver's size where known) and trace it. */
static CUresult alloc_done(shim_hook_t h, CUresult r, const CUdeviceptr *dptr, size_t bytes)
{
    size_t size = r == CUDA_SUCCESS ? block_size(*dptr) : 0;

    if (r == CUDA_SUCCESS)
        shim_stat_alloc(size ? size : bytes);
    if (r == CUDA_SUCCESS && SHIM_TRACING())
        trace_driver_alloc(*dptr, bytes);
    SHIM_TRACE(ALLOC, "%s(%zu bytes) = %d, 0x%llx", shim_hook_names[h], bytes, (int)r,
               r == CUDA_SUCCESS ? (unsigned long long)*dptr : 0ull);
    return r;
}

/* After a free call (by the driver when `driver`, else by residency, which records its own
 * frees): count it and trace it; returns r. */
static CUresult free_done(shim_hook_t h, CUresult r, CUdeviceptr dptr, size_t bytes, int driver)
{
    if (r == CUDA_SUCCESS && dptr)
        shim_stat_free(bytes);
    if (r == CUDA_SUCCESS && dptr && driver && SHIM_TRACING())
        shim_trace_free(dptr);
    SHIM_TRACE(ALLOC, "%s(0x%llx) = %d", shim_hook_names[h], (unsigned long long)dptr, (int)r);
    return r;
}

SHIM_EXPORT CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    SHIM_ENTER(cuMemAlloc_v2, real);
    CUresult r;

    if (!res_alloc(dptr, bytesize, &r))
        r = real(dptr, bytesize);
    return alloc_done(SHIM_HOOK_cuMemAlloc_v2, r, dptr, bytesize);
}

SHIM_EXPORT CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch,
                                                size_t WidthInBytes, size_t Height,
                                                unsigned int ElementSizeBytes)
{
    SHIM_ENTER(cuMemAllocPitch_v2, real);
    CUresult r;
    /* Rows aligned to 512 bytes, the pitch alignment the driver itself uses. */
    size_t pitch = (WidthInBytes + 511) & ~(size_t)511;

    if (!pPitch || WidthInBytes == 0 || Height == 0 || pitch < WidthInBytes ||
        (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16) ||
        Height > SIZE_MAX / pitch || !res_alloc(dptr, pitch * Height, &r))
        r = real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    else if (r == CUDA_SUCCESS)
        *pPitch = pitch;

    return alloc_done(SHIM_HOOK_cuMemAllocPitch_v2, r, dptr,
                      r == CUDA_SUCCESS ? *pPitch * Height : 0);
}

/* cuMemAllocAsync (either ABI): served at once from the arena of hStream's device, available
 * before hStream reaches it, which is more than stream order promises; a pool the application
 * made current there is its own, which the driver serves, charged as cuMemAllocFromPoolAsync's
 * are. */
static CUresult alloc_async(shim_hook_t h, shim_pfn_cuMemAllocAsync_t real, CUdeviceptr *dptr,
                            size_t bytesize, CUstream hStream)
{
    CUmemoryPool own;
    CUresult r;

    if (res_alloc_async(dptr, bytesize, hStream, &own, &r))
        return alloc_done(h, r, dptr, bytesize);
    res_pool_alloc_begin(own, bytesize);
    r = real(dptr, bytesize, hStream);
    res_pool_alloc_end(own, r, r == CUDA_SUCCESS ? *dptr : 0);
    return alloc_done(h, r, dptr, bytesize);
}

SHIM_EXPORT CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    SHIM_ENTER(cuMemAllocAsync, real);
    return alloc_async(SHIM_HOOK_cuMemAllocAsync, real, dptr, bytesize, hStream);
}

SHIM_EXPORT CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                                  CUstream hStream)
{
    SHIM_ENTER(cuMemAllocAsync_ptsz, real);
    return alloc_async(SHIM_HOOK_cuMemAllocAsync_ptsz, real, dptr, bytesize, hStream);
}

SHIM_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
                                                     CUmemoryPool pool, CUstream hStream)
{
    SHIM_ENTER(cuMemAllocFromPoolAsync, real);

    /* The application's own pool: its growth is charged to the GPU budget. */
    res_pool_alloc_begin(pool, bytesize);
    CUresult r = real(dptr, bytesize, pool, hStream);
    res_pool_alloc_end(pool, r, r == CUDA_SUCCESS ? *dptr : 0);
    return alloc_done(SHIM_HOOK_cuMemAllocFromPoolAsync, r, dptr, bytesize);
}

SHIM_EXPORT CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                                          CUmemoryPool pool, CUstream hStream)
{
    SHIM_ENTER(cuMemAllocFromPoolAsync_ptsz, real);

    res_pool_alloc_begin(pool, bytesize);
    CUresult r = real(dptr, bytesize, pool, hStream);
    res_pool_alloc_end(pool, r, r == CUDA_SUCCESS ? *dptr : 0);
    return alloc_done(SHIM_HOOK_cuMemAllocFromPoolAsync_ptsz, r, dptr, bytesize);
}

SHIM_EXPORT CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool)
{
    SHIM_ENTER(cuMemPoolDestroy, real);

    res_pool_changed(pool, 1);
    return real(pool);
}

SHIM_EXPORT CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    SHIM_ENTER(cuMemPoolTrimTo, real);
    CUresult r = real(pool, minBytesToKeep);

    res_pool_changed(pool, 0);
    return r;
}

SHIM_EXPORT CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr)
{
    SHIM_ENTER(cuMemFree_v2, real);
    size_t bytes = block_size(dptr);
    CUresult r;

    int driver = !res_free(dptr, &r);
    if (driver)
        r = real(dptr);
    return free_done(SHIM_HOOK_cuMemFree_v2, r, dptr, bytes, driver);
}

SHIM_EXPORT CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    SHIM_ENTER(cuMemFreeAsync, real);
    size_t bytes = block_size(dptr);
    CUresult r;

    /* Arena memory: the range goes back once hStream reaches the free. */
    int driver = !res_free_async(dptr, hStream, 0, &r);
    if (driver)
        r = real(dptr, hStream);
    return free_done(SHIM_HOOK_cuMemFreeAsync, r, dptr, bytes, driver);
}

SHIM_EXPORT CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    SHIM_ENTER(cuMemFreeAsync_ptsz, real);
    size_t bytes = block_size(dptr);
    CUresult r;

    int driver = !res_free_async(dptr, hStream, 1, &r);
    if (driver)
        r = real(dptr, hStream);
    return free_done(SHIM_HOOK_cuMemFreeAsync_ptsz, r, dptr, bytes, driver);
}

/* Pinned host memory: the driver's, only recorded while a trace is (device "host"). */
static CUresult host_alloc_done(shim_hook_t h, CUresult r, void *const *pp, size_t bytes)
{
    if (r == CUDA_SUCCESS && SHIM_TRACING()) {
        shim_trace_site_begin();
        shim_trace_alloc(SHIM_DEVICE_HOST, (uint64_t)(uintptr_t)*pp, bytes);
        shim_trace_site_end();
    }
    SHIM_TRACE(ALLOC, "%s(%zu bytes) = %d, %p", shim_hook_names[h], bytes, (int)r,
               r == CUDA_SUCCESS ? *pp : NULL);
    return r;
}

SHIM_EXPORT CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    SHIM_ENTER(cuMemHostAlloc, real);
    return host_alloc_done(SHIM_HOOK_cuMemHostAlloc, real(pp, bytesize, Flags), pp, bytesize);
}

SHIM_EXPORT CUresult CUDAAPI cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    SHIM_ENTER(cuMemAllocHost_v2, real);
    return host_alloc_done(SHIM_HOOK_cuMemAllocHost_v2, real(pp, bytesize), pp, bytesize);
}

SHIM_EXPORT CUresult CUDAAPI cuMemFreeHost(void *p)
{
    SHIM_ENTER(cuMemFreeHost, real);
    CUresult r = real(p);

    if (r == CUDA_SUCCESS && p && SHIM_TRACING())
        shim_trace_free((uint64_t)(uintptr_t)p);
    SHIM_TRACE(ALLOC, "cuMemFreeHost(%p) = %d", p, (int)r);
    return r;
}

SHIM_EXPORT CUresult CUDAAPI cuMemGetInfo_v2(size_t *free, size_t *total)
{
    SHIM_ENTER(cuMemGetInfo_v2, real);
    CUresult r;

    /* The virtual capacity (every budget) unless ELIXIR_MEMINFO=physical. */
    return res_meminfo(free, total, &r) ? r : real(free, total);
}

SHIM_EXPORT CUresult CUDAAPI cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize,
                                                     CUdeviceptr dptr)
{
    SHIM_ENTER(cuMemGetAddressRange_v2, real);
    CUresult r;

    /* Arena memory: the application's allocation, not the arena's reservation.  The call
     * needs a current context, as the driver's does: without one (or with a destroyed one)
     * the driver's error is the answer. */
    return context_usable() && res_address_range(pbase, psize, dptr, &r)
               ? r
               : real(pbase, psize, dptr);
}

SHIM_EXPORT CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
                                                   CUdeviceptr ptr)
{
    SHIM_ENTER(cuPointerGetAttribute, real);
    CUresult r;

    if (data && res_pointer_attribute(data, attribute, ptr, &r))
        return r;
    return real(data, attribute, ptr);
}

SHIM_EXPORT CUresult CUDAAPI cuPointerGetAttributes(unsigned int numAttributes,
                                                    CUpointer_attribute *attributes, void **data,
                                                    CUdeviceptr ptr)
{
    SHIM_ENTER(cuPointerGetAttributes, real);
    CUresult r = CUDA_SUCCESS;

    /* (A list the driver refuses whatever the pointer is the driver's to refuse.) */
    if (!res_owns(ptr) || !numAttributes || !attributes || !data)
        return real(numAttributes, attributes, data, ptr);
    /* An arena address in no allocation (freed): what the driver lists for an address it never
     * handed out (cuda.h: default values, and no error), asked for one, the null pointer. */
    if (!res_allocated(ptr))
        return real(numAttributes, attributes, data, 0);
    /* Arena memory: ours where we answer, the driver's (for the mapping) for the rest.  A
     * host pointer is listed as NULL: the list form reports no error for it. */
    for (unsigned i = 0; i < numAttributes && r == CUDA_SUCCESS; i++)
        if (!data[i] || !res_pointer_attribute(data[i], attributes[i], ptr, &r))
            r = real(1, &attributes[i], &data[i], ptr);
        else if (attributes[i] == CU_POINTER_ATTRIBUTE_HOST_POINTER)
            r = CUDA_SUCCESS;
    return r;
}

SHIM_EXPORT CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                         const CUmemAllocationProp *prop,
                                         unsigned long long flags)
{
    SHIM_ENTER(cuMemCreate, real);

    /* Device memory is charged to the GPU budget until released; it is never moved. */
    return res_vmm_create(real, handle, size, prop, flags);
}

SHIM_EXPORT CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle)
{
    SHIM_ENTER(cuMemRelease, real);

    return res_vmm_release(real, handle);
}

SHIM_EXPORT CUresult CUDAAPI cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle,
                                                         void *addr)
{
    SHIM_ENTER(cuMemRetainAllocationHandle, real);
    CUresult r = real(handle, addr);

    /* One more reference to release before the application's memory is given back. */
    if (r == CUDA_SUCCESS)
        res_vmm_retained(*handle);
    return r;
}

SHIM_EXPORT CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                                      CUmemGenericAllocationHandle handle,
                                      unsigned long long flags)
{
    SHIM_ENTER(cuMemMap, real);
    /* The application's own mapping: its memory was charged when it was created. */
    return real(ptr, size, offset, handle, flags);
}

SHIM_EXPORT CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    SHIM_ENTER(cuMemUnmap, real);
    return real(ptr, size);
}

SHIM_EXPORT CUresult CUDAAPI cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
    SHIM_ENTER(cuIpcGetMemHandle, real);

    /* Arena memory is pinned resident whatever the driver answers (res_ipc_pin). */
    int ours = res_ipc_pin(dptr);
    CUresult r = real(pHandle, dptr);
    if (ours && r != CUDA_SUCCESS)
        res_ipc_failed(dptr, r);
    return r;
}

SHIM_EXPORT CUresult CUDAAPI cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle,
                                                unsigned int Flags)
{
    SHIM_ENTER(cuIpcOpenMemHandle, real);
    /* Another process's memory, mapped by the driver outside every arena: never moved. */
    return real(pdptr, handle, Flags);
}

SHIM_EXPORT CUresult CUDAAPI cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle,
                                                   unsigned int Flags)
{
    SHIM_ENTER(cuIpcOpenMemHandle_v2, real);
    return real(pdptr, handle, Flags);
}
