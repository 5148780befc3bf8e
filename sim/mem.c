/* SPDX-License-Identifier: MIT */
/*
 * mem.c - the address registry, device allocations (cuMemAlloc), pinned and registered host
 * memory, pointer queries and IPC handles of device memory.
 *
 * Device memory is host memory in the same address space (unified addressing).  Each device
 * has a reserved arena of address space four times its capacity; cuMemAlloc takes page-granular
 * ranges from it with a next-fit cursor, so freed addresses are not handed out again soon and
 * a use after free faults (freed pages go back to PROT_NONE).  Every range the simulator hands
 * out is recorded in one sorted registry, which answers "what is this pointer" for copies,
 * launches and cuPointerGetAttribute.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sim.h"

#define PAGE 4096ull

pthread_rwlock_t sim_reg_lock = PTHREAD_RWLOCK_INITIALIZER;
static sim_range_t *ranges;         /* sorted by base, disjoint */
static size_t nranges, cap_ranges;
static _Atomic uint64_t next_buffer_id = 1;

uint64_t sim_next_buffer_id(void)
{
    return atomic_fetch_add(&next_buffer_id, 1);
}

void *sim_map_anon(void *addr, size_t size, int prot)
{
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | (addr ? MAP_FIXED : 0);
    void *p = mmap(addr, size, prot, flags, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* Index of the first range whose end is above addr. */
static size_t lower_bound(uint64_t addr)
{
    size_t lo = 0, hi = nranges;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (ranges[mid].base + ranges[mid].size <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

sim_range_t *sim_range_lookup_locked(uint64_t addr)
{
    size_t i = lower_bound(addr);
    if (i < nranges && ranges[i].base <= addr)
        return &ranges[i];
    return NULL;
}

int sim_range_add(const sim_range_t *r)
{
    int err = 0;
    pthread_rwlock_wrlock(&sim_reg_lock);
    size_t i = lower_bound(r->base);
    if (i < nranges && ranges[i].base < r->base + r->size) {
        err = -EEXIST;
    } else if (nranges == cap_ranges) {
        size_t cap = cap_ranges ? cap_ranges * 2 : 256;
        sim_range_t *n = realloc(ranges, cap * sizeof(*n));
        if (!n)
            err = -ENOMEM;
        else {
            ranges = n;
            cap_ranges = cap;
        }
    }
    if (!err) {
        memmove(&ranges[i + 1], &ranges[i], (nranges - i) * sizeof(*ranges));
        ranges[i] = *r;
        nranges++;
    }
    pthread_rwlock_unlock(&sim_reg_lock);
    return err;
}

#define ANY_KIND (~0u)
#define KIND(k) (1u << (k))

/*
 * Remove the range based exactly at `base` when its kind is in the mask `kinds`, copying the
 * record to *out (may be NULL).  One critical section, so two threads freeing the same
 * pointer cannot both succeed.  Returns 0 or -ENOENT.
 */
static int take_range(uint64_t base, unsigned kinds, sim_range_t *out)
{
    int err = -ENOENT;
    pthread_rwlock_wrlock(&sim_reg_lock);
    size_t i = lower_bound(base);
    if (i < nranges && ranges[i].base == base && (kinds & KIND(ranges[i].kind))) {
        if (out)
            *out = ranges[i];
        memmove(&ranges[i], &ranges[i + 1], (nranges - i - 1) * sizeof(*ranges));
        nranges--;
        err = 0;
    }
    pthread_rwlock_unlock(&sim_reg_lock);
    return err;
}

int sim_range_remove(uint64_t base, sim_range_t *out)
{
    return take_range(base, ANY_KIND, out);
}

int sim_range_find(uint64_t addr, sim_range_t *out)
{
    pthread_rwlock_rdlock(&sim_reg_lock);
    sim_range_t *r = sim_range_lookup_locked(addr);
    if (r && out)
        *out = *r;
    pthread_rwlock_unlock(&sim_reg_lock);
    return r ? 0 : -ENOENT;
}

/* The device holding a VMM allocation, or -1 for host-located memory. */
static int phys_device(const struct sim_phys *p)
{
    const CUmemAllocationProp *prop = sim_vmm_phys_prop(p);
    return prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? prop->location.id : -1;
}

int sim_ptr_info(uint64_t addr, sim_ptr_info_t *out)
{
    memset(out, 0, sizeof(*out));
    pthread_rwlock_rdlock(&sim_reg_lock);
    sim_range_t *r = sim_range_lookup_locked(addr);
    if (r) {
        out->kind = r->kind;
        out->device = r->device;
        out->base = r->base;
        out->size = r->size;
        out->mapped = 1;
        out->access = ~0u;
        if (r->kind == SIM_RANGE_RESERVED) {
            const sim_mapping_t *m = sim_vmm_lookup(r, addr);
            out->mapped = m != NULL;
            out->access = m ? m->access : 0;
            out->base = m ? m->va : r->base;
            out->size = m ? m->size : r->size;
            out->host_location = m ? sim_vmm_phys_is_host(m->phys) : 0;
            out->device = m ? phys_device(m->phys) : -1;
        }
    }
    pthread_rwlock_unlock(&sim_reg_lock);
    return r ? 0 : -ENOENT;
}

/* ---------------------------------------------------------------- device arena */

typedef struct block {
    uint64_t off, size;
} block_t;

typedef struct arena_index {
    block_t *blocks;    /* live blocks sorted by offset */
    size_t n, cap;
} arena_index_t;

static arena_index_t *arena_idx;     /* one per device, under arena_lock */
static pthread_mutex_t arena_lock = PTHREAD_MUTEX_INITIALIZER;

/* First gap of `size` bytes at or after `from` (offsets), or UINT64_MAX. */
static uint64_t find_gap(const arena_index_t *ix, uint64_t from, uint64_t size, uint64_t limit,
                         size_t *pos)
{
    uint64_t at = from;
    size_t i = 0;
    while (i < ix->n && ix->blocks[i].off + ix->blocks[i].size <= from)
        i++;
    for (; i <= ix->n; i++) {
        uint64_t next = i < ix->n ? ix->blocks[i].off : limit;
        if (next >= at && next - at >= size) {
            *pos = i;
            return at;
        }
        if (i < ix->n && ix->blocks[i].off + ix->blocks[i].size > at)
            at = ix->blocks[i].off + ix->blocks[i].size;
    }
    return UINT64_MAX;
}

static int index_insert(arena_index_t *ix, size_t pos, uint64_t off, uint64_t size)
{
    if (ix->n == ix->cap) {
        size_t cap = ix->cap ? ix->cap * 2 : 64;
        block_t *b = realloc(ix->blocks, cap * sizeof(*b));
        if (!b)
            return -ENOMEM;
        ix->blocks = b;
        ix->cap = cap;
    }
    memmove(&ix->blocks[pos + 1], &ix->blocks[pos], (ix->n - pos) * sizeof(block_t));
    ix->blocks[pos] = (block_t){ off, size };
    ix->n++;
    return 0;
}

/*
 * Take `size` bytes (a multiple of PAGE) of address space from the arena of `device` and
 * make them accessible.  The caller has charged the capacity.  Returns 0 or -ENOMEM.
 */
int sim_device_alloc(int device, uint64_t size, uint64_t *out)
{
    sim_device_t *d = &sim_devs[device];
    size_t pos;
    int err = -ENOMEM;

    pthread_mutex_lock(&arena_lock);
    if (!arena_idx)
        arena_idx = calloc((size_t)sim_ndevs, sizeof(*arena_idx));
    if (arena_idx) {
        arena_index_t *ix = &arena_idx[device];
        uint64_t off = find_gap(ix, d->arena_next, size, d->arena_size, &pos);
        if (off == UINT64_MAX)
            off = find_gap(ix, 0, size, d->arena_size, &pos);
        if (off != UINT64_MAX && index_insert(ix, pos, off, size) == 0) {
            d->arena_next = off + size;
            *out = (uint64_t)(uintptr_t)d->arena + off;
            err = 0;
        }
    }
    pthread_mutex_unlock(&arena_lock);
    if (!err && !sim_map_anon((void *)(uintptr_t)*out, size, PROT_READ | PROT_WRITE)) {
        sim_device_free(device, *out, 0);
        err = -ENOMEM;
    }
    return err;
}

/* Return a range to the arena; its pages are dropped and made inaccessible. */
void sim_device_free(int device, uint64_t base, uint64_t size)
{
    sim_device_t *d = &sim_devs[device];
    uint64_t off = base - (uint64_t)(uintptr_t)d->arena;

    if (size)
        sim_map_anon((void *)(uintptr_t)base, size, PROT_NONE);
    pthread_mutex_lock(&arena_lock);
    arena_index_t *ix = &arena_idx[device];
    for (size_t i = 0; i < ix->n; i++)
        if (ix->blocks[i].off == off) {
            memmove(&ix->blocks[i], &ix->blocks[i + 1], (ix->n - i - 1) * sizeof(block_t));
            ix->n--;
            break;
        }
    pthread_mutex_unlock(&arena_lock);
}

/* ---------------------------------------------------------------- cuMemAlloc family */

/* Allocate `bytes` of device memory of `kind` for the current context. */
CUresult sim_alloc_device(uint64_t bytes, int kind, struct CUmemPoolHandle_st *pool, int device,
                          CUdeviceptr *dptr)
{
    uint64_t size = (bytes + PAGE - 1) & ~(PAGE - 1), base;
    CUcontext ctx = sim_ctx_current();

    if (sim_reserve_charge(device, size) < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (sim_device_alloc(device, size, &base) < 0) {
        sim_reserve_uncharge(device, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    sim_range_t r = { .base = base, .size = size, .kind = kind, .device = device, .ctx = ctx,
                      .buffer_id = sim_next_buffer_id(), .pool = pool };
    if (sim_range_add(&r) < 0) {
        sim_device_free(device, base, size);
        sim_reserve_uncharge(device, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *dptr = (CUdeviceptr)base;
    return CUDA_SUCCESS;
}

/*
 * Release the device allocation based at `base`: of kind `want_kind`, or with want_kind 0 of
 * any device-memory kind (cuMemAlloc, pool, module global).  No synchronisation here.
 */
CUresult sim_free_device(uint64_t base, int want_kind)
{
    sim_range_t r;
    unsigned kinds = want_kind ? KIND(want_kind)
                               : KIND(SIM_RANGE_DEVICE) | KIND(SIM_RANGE_POOL) |
                                     KIND(SIM_RANGE_GLOBAL);
    if (take_range(base, kinds, &r) < 0)
        return CUDA_ERROR_INVALID_VALUE;
    sim_race_forget_range(r.base, r.size);
    sim_device_free(r.device, r.base, r.size);
    sim_reserve_uncharge(r.device, r.size);
    if (r.kind == SIM_RANGE_POOL)
        sim_pool_note_free(r.pool, r.size);
    return CUDA_SUCCESS;
}

/* The host time of a cuMemAlloc or cuMemFree of `bytes` (SIM_COST_ALLOC_US, simcuda.h). */
static void alloc_cost(uint64_t bytes)
{
    sim_alloc_cost(SIM_COST_ALLOC_US + SIM_COST_ALLOC_US_MIB * (double)bytes / (1 << 20));
}

SIM_API CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    CUcontext ctx;
    CUresult r = sim_ctx_get(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    if (!dptr || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    r = sim_alloc_device(bytesize, SIM_RANGE_DEVICE, NULL, ctx->device, dptr);
    if (r == CUDA_SUCCESS)
        alloc_cost(bytesize);
    return r;
}

SIM_API CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width,
                                            size_t height, unsigned int elemSize)
{
    CUcontext ctx;
    CUresult r = sim_ctx_get(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    if (!dptr || !pitch || width == 0 || height == 0 ||
        (elemSize != 4 && elemSize != 8 && elemSize != 16))
        return CUDA_ERROR_INVALID_VALUE;
    size_t p = (width + 511) & ~(size_t)511;
    if (height > SIZE_MAX / p)
        return CUDA_ERROR_INVALID_VALUE;
    r = sim_alloc_device((uint64_t)p * height, SIM_RANGE_DEVICE, NULL, ctx->device, dptr);
    if (r == CUDA_SUCCESS) {
        *pitch = p;
        alloc_cost((uint64_t)p * height);
    }
    return r;
}

/* The allocation names its context, so no context need be current: the real driver (580)
 * frees it then too (the docs do not ask for one).  A current context must be usable. */
SIM_API CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr)
{
    CUresult r = sim_check_init();
    if (r == CUDA_SUCCESS && sim_ctx_current())
        r = sim_ctx_get(NULL);
    if (r != CUDA_SUCCESS)
        return r;
    if (dptr == 0)
        return CUDA_SUCCESS;
    sim_range_t rg;
    if (sim_range_find(dptr, &rg) < 0 || rg.base != dptr ||
        (rg.kind != SIM_RANGE_DEVICE && rg.kind != SIM_RANGE_POOL))
        return CUDA_ERROR_INVALID_VALUE;
    if (sim_on_executor())
        return CUDA_ERROR_NOT_PERMITTED;
    if (rg.kind == SIM_RANGE_POOL) {
        /* Documented: no implicit synchronisation for stream-ordered allocations; the caller
         * must have ordered every use before the free, which the race checker verifies. */
        sim_host_access(rg.base, rg.size, 1, "cuMemFree");
    } else {
        /* Like the real driver, freeing waits for work that may still use the memory. */
        sim_wait_all();
    }
    r = sim_free_device((uint64_t)dptr, rg.kind);
    if (r == CUDA_SUCCESS && rg.kind == SIM_RANGE_DEVICE)
        alloc_cost(rg.size);
    return r;
}

/*
 * Free what context ctx allocated with cuMemAlloc / cuMemAllocPitch, cuMemAllocHost and
 * cuMemHostAlloc, and unregister what it registered with cuMemHostRegister (portable or not:
 * CU_MEMHOSTREGISTER_PORTABLE makes other contexts take the range as pinned, the registering
 * context still owns it): destroying a context (cuCtxDestroy) or resetting a primary one
 * (cuDevicePrimaryCtxReset, the last cuDevicePrimaryCtxRelease) frees its resources.  Memory
 * of the virtual memory management API and of pools belongs to no context and stays.  The
 * caller has waited for the context's work.
 */
void sim_mem_free_ctx(CUcontext ctx)
{
    unsigned kinds = KIND(SIM_RANGE_DEVICE) | KIND(SIM_RANGE_HOST) | KIND(SIM_RANGE_REGISTERED);
    uint64_t from = 0;      /* ranges below it have been looked at */
    for (;;) {
        uint64_t base = 0;
        int found = 0;
        pthread_rwlock_rdlock(&sim_reg_lock);
        for (size_t i = lower_bound(from); i < nranges && !found; i++)
            if (ranges[i].ctx == ctx && (kinds & KIND(ranges[i].kind))) {
                base = ranges[i].base;
                found = 1;
            }
        pthread_rwlock_unlock(&sim_reg_lock);
        if (!found)
            return;
        from = base;
        sim_range_t rg;
        if (take_range(base, kinds, &rg) < 0)
            continue;   /* freed meanwhile by another thread */
        sim_race_forget_range(rg.base, rg.size);
        if (rg.kind == SIM_RANGE_REGISTERED) {
            sim_pinned_uncharge(rg.size);   /* the application's memory, pageable again */
        } else if (rg.kind == SIM_RANGE_HOST) {
            munmap((void *)(uintptr_t)rg.base, rg.size);
            sim_pinned_uncharge(rg.size);
        } else {
            sim_device_free(rg.device, rg.base, rg.size);
            sim_reserve_uncharge(rg.device, rg.size);
        }
    }
}

/* ---------------------------------------------------------------- IPC */

/* What a simulated CUipcMemHandle holds: the allocation it names. */
typedef struct ipc_handle {
    uint32_t magic;
    int32_t device;
    uint64_t buffer_id, base, size;
} ipc_handle_t;

#define IPC_MAGIC 0x43504953u

/*
 * cuIpcGetMemHandle exports the base of a cuMemAlloc allocation, the only memory legacy IPC
 * takes (CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE is 1 for it alone): a pointer inside
 * an allocation, stream-ordered (pool) memory, VMM mappings and host memory are
 * CUDA_ERROR_INVALID_VALUE, the driver's answer for them.  The handle names the allocation;
 * opening one in another process (cuIpcOpenMemHandle) is not simulated.
 */
SIM_API CUresult CUDAAPI cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
    sim_range_t rg;
    CUresult r = sim_ctx_get(NULL);
    if (r != CUDA_SUCCESS)
        return r;
    if (!pHandle || sim_range_find(dptr, &rg) < 0 || rg.kind != SIM_RANGE_DEVICE ||
        rg.base != dptr)
        return CUDA_ERROR_INVALID_VALUE;
    ipc_handle_t h = { .magic = IPC_MAGIC, .device = rg.device, .buffer_id = rg.buffer_id,
                       .base = rg.base, .size = rg.size };
    memset(pHandle, 0, sizeof(*pHandle));
    memcpy(pHandle->reserved, &h, sizeof(h));
    return CUDA_SUCCESS;
}

/* Either output may be NULL, as the real driver allows (it answers CUDA_SUCCESS for a NULL
 * free, a NULL total and both): only the values asked for are written. */
SIM_API CUresult CUDAAPI cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
    CUcontext ctx;
    CUresult r = sim_ctx_get(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    sim_device_t *d = &sim_devs[ctx->device];
    uint64_t used = atomic_load(&d->used);
    if (total)
        *total = d->total;
    if (free_bytes)
        *free_bytes = used > d->total ? 0 : d->total - used;
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize,
                                                 CUdeviceptr dptr)
{
    sim_ptr_info_t info;
    CUresult r = sim_ctx_get(NULL);
    if (r != CUDA_SUCCESS)
        return r;
    if (sim_ptr_info(dptr, &info) < 0 || info.kind == SIM_RANGE_HOST ||
        info.kind == SIM_RANGE_REGISTERED || !info.mapped)
        return CUDA_ERROR_NOT_FOUND;
    if (pbase)
        *pbase = (CUdeviceptr)info.base;
    if (psize)
        *psize = info.size;
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- pinned host memory */

SIM_API CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags)
{
    CUcontext ctx;
    CUresult r = sim_ctx_get(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    if (!pp || bytesize == 0 ||
        (flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                             CU_MEMHOSTALLOC_WRITECOMBINED)))
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t size = (bytesize + PAGE - 1) & ~(PAGE - 1);
    if (size < bytesize || sim_pinned_charge(size) < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        sim_pinned_uncharge(size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    sim_range_t rg = { .base = (uint64_t)(uintptr_t)p, .size = size, .kind = SIM_RANGE_HOST,
                       .device = ctx->device, .ctx = ctx, .flags = flags,
                       .buffer_id = sim_next_buffer_id() };
    if (sim_range_add(&rg) < 0) {
        munmap(p, size);
        sim_pinned_uncharge(size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *pp = p;
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    return cuMemHostAlloc(pp, bytesize, 0);
}

SIM_API CUresult CUDAAPI cuMemFreeHost(void *p)
{
    sim_range_t rg;
    CUresult r = sim_ctx_get(NULL);
    if (r != CUDA_SUCCESS)
        return r;
    if (sim_range_find((uint64_t)(uintptr_t)p, &rg) < 0 || rg.kind != SIM_RANGE_HOST ||
        rg.base != (uint64_t)(uintptr_t)p)
        return CUDA_ERROR_INVALID_VALUE;
    if (sim_on_executor())
        return CUDA_ERROR_NOT_PERMITTED;
    sim_wait_all();
    if (take_range(rg.base, KIND(SIM_RANGE_HOST), &rg) < 0)
        return CUDA_ERROR_INVALID_VALUE;
    sim_race_forget_range(rg.base, rg.size);
    munmap(p, rg.size);
    sim_pinned_uncharge(rg.size);
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuMemHostGetFlags(unsigned int *pFlags, void *p)
{
    sim_range_t rg;
    CUresult r = sim_ctx_get(NULL);
    if (r != CUDA_SUCCESS)
        return r;
    /* Documented to fail for anything but cuMemAllocHost / cuMemHostAlloc memory. */
    if (!pFlags || sim_range_find((uint64_t)(uintptr_t)p, &rg) < 0 || rg.kind != SIM_RANGE_HOST)
        return CUDA_ERROR_INVALID_VALUE;
    /* With unified addressing every pinned allocation is mapped, whatever the flags said. */
    *pFlags = rg.flags | CU_MEMHOSTALLOC_DEVICEMAP;
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int flags)
{
    CUcontext ctx;
    CUresult r = sim_ctx_get(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    unsigned ok = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                  CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
    if (!p || bytesize == 0 || (flags & ~ok))
        return CUDA_ERROR_INVALID_VALUE;
    sim_range_t rg = { .base = (uint64_t)(uintptr_t)p, .size = bytesize,
                       .kind = SIM_RANGE_REGISTERED, .device = ctx->device, .ctx = ctx,
                       .flags = flags, .buffer_id = sim_next_buffer_id() };
    if (sim_pinned_charge(bytesize) < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    int err = sim_range_add(&rg);
    if (err)
        sim_pinned_uncharge(bytesize);
    if (err == -EEXIST)
        return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    return err ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuMemHostRegister(void *p, size_t bytesize, unsigned int flags)
{
    return cuMemHostRegister_v2(p, bytesize, flags);
}

SIM_API CUresult CUDAAPI cuMemHostUnregister(void *p)
{
    sim_range_t rg;
    CUresult r = sim_ctx_get(NULL);
    if (r != CUDA_SUCCESS)
        return r;
    if (sim_range_find((uint64_t)(uintptr_t)p, &rg) < 0 || rg.kind != SIM_RANGE_REGISTERED ||
        rg.base != (uint64_t)(uintptr_t)p)
        return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    sim_wait_all();
    if (take_range(rg.base, KIND(SIM_RANGE_REGISTERED), &rg) < 0)
        return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    sim_pinned_uncharge(rg.size);
    sim_race_forget_range(rg.base, rg.size);
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p,
                                                      unsigned int flags)
{
    sim_range_t rg;
    CUresult r = sim_ctx_get(NULL);
    if (r != CUDA_SUCCESS)
        return r;
    if (!pdptr || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (sim_range_find((uint64_t)(uintptr_t)p, &rg) < 0 ||
        (rg.kind != SIM_RANGE_HOST && rg.kind != SIM_RANGE_REGISTERED))
        return CUDA_ERROR_INVALID_VALUE;
    *pdptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- pointer attributes */

static size_t attr_size(CUpointer_attribute a)
{
    switch (a) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: return sizeof(CUcontext);
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: return sizeof(unsigned int);
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: return sizeof(CUdeviceptr);
    case CU_POINTER_ATTRIBUTE_HOST_POINTER: return sizeof(void *);
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: return sizeof(int);
    case CU_POINTER_ATTRIBUTE_BUFFER_ID: return sizeof(unsigned long long);
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: return sizeof(int);
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: return sizeof(int);
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE: return sizeof(int);
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: return sizeof(CUdeviceptr);
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: return sizeof(size_t);
    case CU_POINTER_ATTRIBUTE_MAPPED: return sizeof(int);
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES: return sizeof(unsigned long long);
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE: return sizeof(int);
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS: return sizeof(unsigned long long);
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: return sizeof(CUmemoryPool);
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE: return sizeof(size_t);
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR: return sizeof(void *);
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID: return sizeof(unsigned long long);
    case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE: return sizeof(int);
    default: return 0;
    }
}

static void put(void *data, CUpointer_attribute a, uint64_t v)
{
    size_t n = attr_size(a);
    if (n == sizeof(uint64_t)) {
        memcpy(data, &v, n);
    } else {
        uint32_t w = (uint32_t)v;
        memcpy(data, &w, sizeof(w));
    }
}

/* What the attribute queries need to know about one address, taken under the registry lock. */
typedef struct ptr_desc {
    sim_range_t rg;             /* the allocation, registration or reservation */
    int mapped;                 /* 0 only for a reserved address with nothing mapped there */
    int host;                   /* backed by host memory */
    int device;                 /* device holding the memory (-1: host-located VMM memory) */
    uint64_t map_base, map_size;    /* the mapping (VMM), else the allocation */
    uint64_t block_id;          /* the physical allocation's id */
    unsigned handle_types;      /* VMM: handle types the allocation was created with */
    unsigned access, writable;  /* per-device bit masks */
} ptr_desc_t;

static void describe_mapping(ptr_desc_t *d, const sim_mapping_t *m)
{
    const CUmemAllocationProp *prop = sim_vmm_phys_prop(m->phys);
    d->mapped = 1;
    d->host = sim_vmm_phys_is_host(m->phys);
    d->device = phys_device(m->phys);
    d->map_base = m->va;
    d->map_size = m->size;
    d->block_id = sim_vmm_phys_id(m->phys);
    d->handle_types = prop->requestedHandleTypes;
    d->access = m->access;
    d->writable = m->writable;
}

/* Describe the address ptr; -ENOENT when the simulator never handed it out. */
static int describe(uint64_t ptr, ptr_desc_t *d)
{
    memset(d, 0, sizeof(*d));
    pthread_rwlock_rdlock(&sim_reg_lock);
    const sim_range_t *r = sim_range_lookup_locked(ptr);
    if (r) {
        d->rg = *r;
        d->rg.maps = NULL;
        d->rg.pages = NULL;
        d->mapped = 1;
        d->host = r->kind == SIM_RANGE_HOST || r->kind == SIM_RANGE_REGISTERED;
        d->device = r->device;
        d->map_base = r->base;
        d->map_size = r->size;
        d->block_id = r->buffer_id;
        d->access = ~0u;
        d->writable = r->kind == SIM_RANGE_REGISTERED && (r->flags & CU_MEMHOSTREGISTER_READ_ONLY)
                      ? 0 : ~0u;
        if (r->kind == SIM_RANGE_RESERVED) {
            const sim_mapping_t *m = sim_vmm_lookup(r, ptr);
            d->mapped = 0;
            d->access = d->writable = 0;
            if (m)
                describe_mapping(d, m);
        }
    }
    pthread_rwlock_unlock(&sim_reg_lock);
    return r ? 0 : -ENOENT;
}

/* CU_POINTER_ATTRIBUTE_ACCESS_FLAGS: what the current context's device may do. */
static uint64_t access_flags(const ptr_desc_t *d)
{
    CUcontext cur = sim_ctx_current();
    int dev = cur ? cur->device : 0;
    if ((d->writable >> dev) & 1)
        return CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE;
    return (d->access >> dev) & 1 ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READ
                                  : CU_POINTER_ATTRIBUTE_ACCESS_FLAG_NONE;
}

/* Host memory is attributed to the device it was allocated against; host-located VMM memory,
 * which was allocated against none, to the current context's device. */
static int device_ordinal(const ptr_desc_t *d)
{
    CUcontext cur = sim_ctx_current();
    return d->device >= 0 ? d->device : cur ? cur->device : 0;
}

/* Attributes that identify the address itself, also for a reserved but unmapped address. */
static int range_value(const ptr_desc_t *d, CUpointer_attribute a, uint64_t *v)
{
    switch (a) {
    /* The mappable range (the reservation for VMM); the mapping has its own attributes. */
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *v = d->rg.base; return 0;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *v = d->rg.size; return 0;
    case CU_POINTER_ATTRIBUTE_MAPPED: *v = (uint64_t)d->mapped; return 0;
    default: return -EINVAL;
    }
}

/* Value of attribute a for a described address ptr; -EINVAL if not applicable. */
static int attr_value(const ptr_desc_t *d, CUpointer_attribute a, CUdeviceptr ptr, uint64_t *v)
{
    int kind = d->rg.kind;

    if (range_value(d, a, v) == 0)
        return 0;
    if (!d->mapped)
        return -EINVAL;
    switch (a) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        *v = kind == SIM_RANGE_RESERVED || kind == SIM_RANGE_POOL ? 0 : (uintptr_t)d->rg.ctx;
        return 0;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *v = d->host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        return 0;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *v = ptr; return 0;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (!d->host)
            return -EINVAL;
        *v = ptr;
        return 0;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: *v = 0; return 0;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID: *v = d->rg.buffer_id; return 0;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: *v = 0; return 0;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *v = (uint64_t)(int64_t)device_ordinal(d); return 0;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE: *v = kind == SIM_RANGE_DEVICE; return 0;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES: *v = d->handle_types; return 0;
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE: *v = 0; return 0;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS: *v = access_flags(d); return 0;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: *v = (uintptr_t)d->rg.pool; return 0;
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE: *v = d->map_size; return 0;
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR: *v = d->map_base; return 0;
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID: *v = d->block_id; return 0;
    case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE: *v = 0; return 0;
    default: return -EINVAL;
    }
}

static int lookup_attr(CUpointer_attribute a, CUdeviceptr ptr, uint64_t *v)
{
    ptr_desc_t d;
    if (describe(ptr, &d) < 0)
        return -ENOENT;
    return attr_value(&d, a, ptr, v);
}

SIM_API CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
                                               CUdeviceptr ptr)
{
    uint64_t v;
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!data || attr_size(attribute) == 0)
        return CUDA_ERROR_INVALID_VALUE;
    /* The device pointer is the one kernels of the current context use: none without one. */
    if (attribute == CU_POINTER_ATTRIBUTE_DEVICE_POINTER && !sim_ctx_current())
        return CUDA_ERROR_INVALID_CONTEXT;
    if (lookup_attr(attribute, ptr, &v) < 0)
        return CUDA_ERROR_INVALID_VALUE;
    put(data, attribute, v);
    return CUDA_SUCCESS;
}

/* Unlike cuPointerGetAttribute, unknown pointers give zero values and CUDA_SUCCESS. */
SIM_API CUresult CUDAAPI cuPointerGetAttributes(unsigned int numAttributes,
                                                CUpointer_attribute *attributes, void **data,
                                                CUdeviceptr ptr)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (numAttributes == 0 || !attributes || !data)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < numAttributes; i++)
        if (attr_size(attributes[i]) == 0 || !data[i])
            return CUDA_ERROR_INVALID_VALUE;
    ptr_desc_t d;
    int known = describe(ptr, &d) == 0;
    for (unsigned i = 0; i < numAttributes; i++) {
        uint64_t v = 0;
        /* The real driver reports device ordinal -2 for an address it does not know. */
        if (!known || attr_value(&d, attributes[i], ptr, &v) < 0)
            v = attributes[i] == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL ? (uint64_t)-2 : 0;
        put(data[i], attributes[i], v);
    }
    return CUDA_SUCCESS;
}
