/* SPDX-License-Identifier: MIT */
/*
 * vmm.c - virtual memory management: reserve, create, map, set access, unmap, release.
 *
 * Held to the documented rules, strictly: allocation sizes and mapped addresses and sizes are
 * multiples of the 2 MiB granularity (a reservation's size need only be whole host pages, as
 * documented; it is always granularity-aligned), cuMemMap maps at offset 0 onto an unmapped
 * part of one reservation, cuMemUnmap takes whole mappings only, nothing is accessible before
 * cuMemSetAccess.  Physical memory is a memfd (device-located ones are charged to the device's
 * capacity) mapped with MAP_FIXED; reserved but unmapped address space is PROT_NONE, so a
 * stray access faults.  An unmap is a host write in the race checker: unmapping while
 * unsynchronised work may still use the range is reported like any other race.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sim.h"

#define GRANULARITY (2ull << 20)

#define PHYS_MAGIC 0x53594850u

/* Charge a VMM call that reached `dev` device-located and `host` host-located physical
 * allocations over `size` bytes: CALL + HANDLE x dev + HOST_HANDLE x host + GRANULE x granules
 * (HOST_GRANULE when it reached host memory alone), SIM_COST_* in simcuda.h. */
#define VMM_COST(CALL, dev, host, size)                                                      \
    sim_alloc_cost(SIM_COST_##CALL##_CALL_US + SIM_COST_##CALL##_HANDLE_US * (double)(dev) + \
                   SIM_COST_HOST_##CALL##_HANDLE_US * (double)(host) +                     \
                   ((host) && !(dev) ? SIM_COST_HOST_##CALL##_GRANULE_US                    \
                                     : SIM_COST_##CALL##_GRANULE_US) *                      \
                       (double)((size) / GRANULARITY))

/* sim_vmm_calls: how often each call was made, whatever it returned. */
static struct {
    _Atomic uint64_t create, map, set_access, unmap, release;
} calls;

SIM_API void sim_vmm_calls(sim_vmm_calls_t *out)
{
    out->create = atomic_load_explicit(&calls.create, memory_order_relaxed);
    out->map = atomic_load_explicit(&calls.map, memory_order_relaxed);
    out->set_access = atomic_load_explicit(&calls.set_access, memory_order_relaxed);
    out->unmap = atomic_load_explicit(&calls.unmap, memory_order_relaxed);
    out->release = atomic_load_explicit(&calls.release, memory_order_relaxed);
}

/* sim_vmm_fail: one injected failure per call, at an address (cuMemMap, cuMemSetAccess,
 * cuMemUnmap) or at the next call (ptr 0); armed while `result` is not CUDA_SUCCESS. */
enum { FAIL_CREATE, FAIL_MAP, FAIL_SET_ACCESS, FAIL_UNMAP, FAIL_RELEASE, FAILS };
static const char *const fail_names[FAILS] = { "cuMemCreate", "cuMemMap", "cuMemSetAccess",
                                               "cuMemUnmap", "cuMemRelease" };
static struct {
    pthread_mutex_t lock;
    CUdeviceptr ptr[FAILS];
    CUresult result[FAILS];
} fails = { .lock = PTHREAD_MUTEX_INITIALIZER };

SIM_API int sim_vmm_fail(const char *call, uint64_t ptr, int result)
{
    for (int i = 0; call && i < FAILS; i++)
        if (strcmp(call, fail_names[i]) == 0) {
            if (ptr && (i == FAIL_CREATE || i == FAIL_RELEASE))
                return -EINVAL;
            pthread_mutex_lock(&fails.lock);
            int waiting = fails.result[i] != CUDA_SUCCESS;
            fails.ptr[i] = (CUdeviceptr)ptr;
            fails.result[i] = (CUresult)result;
            pthread_mutex_unlock(&fails.lock);
            return result == CUDA_SUCCESS && waiting;
        }
    return -EINVAL;
}

/* The failure armed for call i at ptr (disarmed as it is returned), or CUDA_SUCCESS. */
static CUresult injected(int i, CUdeviceptr ptr)
{
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&fails.lock);
    if (fails.result[i] != CUDA_SUCCESS && (!fails.ptr[i] || fails.ptr[i] == ptr)) {
        r = fails.result[i];
        fails.result[i] = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&fails.lock);
    return r;
}

struct sim_phys {
    uint32_t magic;             /* PHYS_MAGIC while the memory exists, then 0 */
    int fd;
    uint64_t size;
    int refs;                   /* the handles plus each mapping; under sim_reg_lock */
    int handles;                /* the application's: cuMemCreate and each retain */
    CUmemAllocationProp prop;
    uint64_t id;
    struct sim_phys *next_free; /* on phys_free */
};

/* Structs of memory that is gone, kept for the next cuMemCreate (under sim_reg_lock): never
 * returned to malloc, so that a handle the application uses after releasing it reads a dead
 * struct (or one reused for a later handle, as the driver reuses handle values), never freed
 * memory. */
static struct sim_phys *phys_free;

/* sim_vmm_lookup, inlined where a launch asks for every pointer argument. */
static inline const sim_mapping_t *lookup(const sim_range_t *r, uint64_t addr)
{
    if (r->pages) {
        uint64_t off = addr - r->base;
        uint32_t i = off < r->size ? r->pages[off / GRANULARITY] : 0;
        return i ? &r->maps[i - 1] : NULL;
    }
    size_t lo = 0, hi = r->nmaps;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (r->maps[mid].va + r->maps[mid].size <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < r->nmaps && r->maps[lo].va <= addr)
        return &r->maps[lo];
    return NULL;
}

const sim_mapping_t *sim_vmm_lookup(const sim_range_t *r, uint64_t addr)
{
    return lookup(r, addr);
}

int sim_launch_denied(uint64_t addr, CUcontext ctx)
{
    int dev = ctx->device, denied = 0;
    pthread_rwlock_rdlock(&sim_reg_lock);
    const sim_range_t *r = sim_range_lookup_locked(addr);
    if (r && r->kind == SIM_RANGE_RESERVED) {
        const sim_mapping_t *m = lookup(r, addr);
        denied = m && !((m->access >> dev) & 1);
    } else if (r && r->kind == SIM_RANGE_DEVICE && r->device != dev) {
        denied = !sim_ctx_peer_enabled(ctx, r->ctx);
    }
    pthread_rwlock_unlock(&sim_reg_lock);
    return denied;
}

uint64_t sim_host_bytes(uint64_t addr, uint64_t bytes)
{
    uint64_t end = addr + bytes, host = 0;
    pthread_rwlock_rdlock(&sim_reg_lock);
    while (addr < end) {
        const sim_range_t *r = sim_range_lookup_locked(addr);
        if (!r)
            break;
        uint64_t stop = r->base + r->size;
        int in_host = r->kind == SIM_RANGE_HOST || r->kind == SIM_RANGE_REGISTERED;
        if (r->kind == SIM_RANGE_RESERVED) {
            const sim_mapping_t *m = lookup(r, addr);
            stop = m ? m->va + m->size : (addr / GRANULARITY + 1) * GRANULARITY;
            in_host = m && sim_vmm_phys_is_host(m->phys);
        }
        stop = stop < end ? stop : end;
        host += in_host ? stop - addr : 0;
        addr = stop;
    }
    pthread_rwlock_unlock(&sim_reg_lock);
    return host;
}

int sim_vmm_phys_is_host(const struct sim_phys *p)
{
    return p->prop.location.type != CU_MEM_LOCATION_TYPE_DEVICE;
}

const CUmemAllocationProp *sim_vmm_phys_prop(const struct sim_phys *p)
{
    return &p->prop;
}

uint64_t sim_vmm_phys_id(const struct sim_phys *p)
{
    return p->id;
}

static int aligned(uint64_t v)
{
    return v % GRANULARITY == 0;
}

/* ---------------------------------------------------------------- properties */

/* A HOST or HOST_NUMA location, which only a device with host VMM support takes. */
static int host_location(const CUmemAllocationProp *prop)
{
    return prop->location.type == CU_MEM_LOCATION_TYPE_HOST ||
           prop->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA;
}

/*
 * Validate allocation properties for cuMemCreate and cuMemGetAllocationGranularity.  HOST
 * allocations are not IPC capable, so they may request no handle type; HOST_NUMA_CURRENT is
 * not a valid location for cuMemCreate; the simulated host has one NUMA node, id 0.  With
 * ELIXIR_SIM_HOST_VMM=0 the devices report no host VMM support
 * (CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED and its HOST_NUMA sibling
 * are 0) and host locations are CUDA_ERROR_NOT_SUPPORTED, the driver's answer for an
 * operation the device does not support.
 */
static CUresult check_prop(const CUmemAllocationProp *prop)
{
    if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    if (host_location(prop) && !sim_cfg.host_vmm)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (prop->location.type == CU_MEM_LOCATION_TYPE_HOST)
        return prop->requestedHandleTypes ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    if (prop->requestedHandleTypes & ~(unsigned)CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_NOT_SUPPORTED;
    switch (prop->location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
        return sim_device_get(prop->location.id, NULL) == CUDA_SUCCESS ? CUDA_SUCCESS
                                                                      : CUDA_ERROR_INVALID_DEVICE;
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
        return prop->location.id == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

SIM_API CUresult CUDAAPI cuMemGetAllocationGranularity(size_t *granularity,
                                                       const CUmemAllocationProp *prop,
                                                       CUmemAllocationGranularity_flags option)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!granularity || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
                         option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
        return CUDA_ERROR_INVALID_VALUE;
    /* The docs do not say what the type must be here; the driver (580, on an H100) answers
     * for CU_MEM_ALLOCATION_TYPE_INVALID as for PINNED, the one type cuMemCreate takes. */
    CUmemAllocationProp p;
    if (prop && prop->type == CU_MEM_ALLOCATION_TYPE_INVALID) {
        p = *prop;
        p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        prop = &p;
    }
    r = check_prop(prop);
    if (r == CUDA_SUCCESS)
        *granularity = GRANULARITY;
    return r;
}

/* ---------------------------------------------------------------- reservations */

SIM_API CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                             CUdeviceptr addr, unsigned long long flags)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    /* Documented: size and address hint multiples of the host page size, the alignment a
     * power of two (or 0).  Reservations are always at least granularity-aligned. */
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    if (!ptr || size == 0 || size % page || addr % page || flags != 0 ||
        (alignment & (alignment - 1)))
        return CUDA_ERROR_INVALID_VALUE;
    size_t align = alignment > GRANULARITY ? alignment : GRANULARITY;
    if (size > SIZE_MAX - align)
        return CUDA_ERROR_OUT_OF_MEMORY;
    char *p = sim_map_anon(NULL, size + align, PROT_NONE);
    if (!p)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t base = ((uint64_t)(uintptr_t)p + align - 1) & ~(uint64_t)(align - 1);
    if (base > (uint64_t)(uintptr_t)p)
        munmap(p, base - (uint64_t)(uintptr_t)p);
    uint64_t tail = (uint64_t)(uintptr_t)p + size + align - (base + size);
    if (tail)
        munmap((void *)(uintptr_t)(base + size), tail);
    sim_range_t rg = { .base = base, .size = size, .kind = SIM_RANGE_RESERVED, .device = -1,
                       .buffer_id = sim_next_buffer_id() };
    if (sim_range_add(&rg) < 0) {
        munmap((void *)(uintptr_t)base, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *ptr = (CUdeviceptr)base;
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    sim_range_t rg;
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_rwlock_wrlock(&sim_reg_lock);
    sim_range_t *p = sim_range_lookup_locked(ptr);
    int ok = p && p->kind == SIM_RANGE_RESERVED && p->base == ptr && p->size == size &&
             p->nmaps == 0;
    pthread_rwlock_unlock(&sim_reg_lock);
    if (!ok)
        return CUDA_ERROR_INVALID_VALUE;
    sim_range_remove(ptr, &rg);
    free(rg.maps);
    free(rg.pages);
    sim_race_forget_range(rg.base, rg.size);
    munmap((void *)(uintptr_t)rg.base, rg.size);
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- physical memory */

SIM_API CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                     const CUmemAllocationProp *prop, unsigned long long flags)
{
    CUresult r = sim_check_init();
    atomic_fetch_add_explicit(&calls.create, 1, memory_order_relaxed);
    if (r != CUDA_SUCCESS || (r = injected(FAIL_CREATE, 0)) != CUDA_SUCCESS)
        return r;
    if (!handle || size == 0 || !aligned(size) || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    r = check_prop(prop);
    if (r != CUDA_SUCCESS)
        return r;
    int on_device = prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE;
    if (on_device ? sim_reserve_charge(prop->location.id, size) < 0 : sim_pinned_charge(size) < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_rwlock_wrlock(&sim_reg_lock);
    struct sim_phys *ph = phys_free;
    if (ph)
        phys_free = ph->next_free;
    pthread_rwlock_unlock(&sim_reg_lock);
    if (ph)
        memset(ph, 0, sizeof(*ph));
    else
        ph = calloc(1, sizeof(*ph));
    int fd = memfd_create("elixir-sim-memory", MFD_CLOEXEC);
    if (!ph || fd < 0 || ftruncate(fd, (off_t)size) < 0) {
        if (fd >= 0)
            close(fd);
        if (ph) {                   /* back to the dead ones: a stale handle may name it */
            pthread_rwlock_wrlock(&sim_reg_lock);
            ph->next_free = phys_free;
            phys_free = ph;
            pthread_rwlock_unlock(&sim_reg_lock);
        }
        if (on_device)
            sim_reserve_uncharge(prop->location.id, size);
        else
            sim_pinned_uncharge(size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    ph->magic = PHYS_MAGIC;
    ph->fd = fd;
    ph->size = size;
    ph->refs = 1;
    ph->handles = 1;
    ph->prop = *prop;
    ph->id = sim_next_buffer_id();
    *handle = (CUmemGenericAllocationHandle)(uintptr_t)ph;
    VMM_COST(CREATE, on_device, !on_device, size);
    return CUDA_SUCCESS;
}

/* Drop a reference (under sim_reg_lock); the last one frees the memory. */
/*
 * Physical memory as the race checker keys it: bit 63 set (no address the simulator hands out
 * has it), the allocation's id (unique for the process's life, 27 bits) and the offset (36
 * bits: 64 GiB per allocation at most; the simulator's devices are smaller).
 */
#define PHYS_KEY(id) ((1ull << 63) | (((id) & ((1ull << 27) - 1)) << 36))

size_t sim_vmm_phys_pieces(uint64_t addr, uint64_t len, sim_phys_piece_t *out, size_t max)
{
    size_t n = 0;
    uint64_t end = addr + len;
    pthread_rwlock_rdlock(&sim_reg_lock);
    const sim_range_t *rg = len ? sim_range_lookup_locked(addr) : NULL;
    if (rg && rg->kind == SIM_RANGE_RESERVED && end <= rg->base + rg->size) {
        for (uint64_t at = addr; at < end; n++) {
            if (n == max)
                break;                  /* (the caller asks again for the rest) */
            const sim_mapping_t *m = lookup(rg, at);
            if (!m) {
                n = 0;                  /* (a hole, a fault the access checks report) */
                break;
            }
            uint64_t stop = m->va + m->size < end ? m->va + m->size : end;
            out[n] = (sim_phys_piece_t){ PHYS_KEY(m->phys->id) + (at - m->va), stop - at };
            at = stop;
        }
    }
    pthread_rwlock_unlock(&sim_reg_lock);
    return n;
}

void sim_vmm_name_bytes(uint64_t addr, uint64_t len, char *buf, size_t size)
{
    if (addr >> 63)
        snprintf(buf, size, "[physical allocation %" PRIu64 " +0x%" PRIx64 "..+%" PRIu64 ")",
                 (addr >> 36) & ((UINT64_C(1) << 27) - 1), addr & ((UINT64_C(1) << 36) - 1), len);
    else
        snprintf(buf, size, "[0x%" PRIx64 "..+%" PRIu64 ")", addr, len);
}

/* Physical memory gone whose histories the race checker still holds (under sim_reg_lock). */
#define DEAD_MAX 64
static struct {
    uint64_t key[DEAD_MAX], size[DEAD_MAX];
    size_t n;
} dead;

void sim_vmm_forget_dead(void)
{
    uint64_t key[DEAD_MAX], size[DEAD_MAX];
    pthread_rwlock_wrlock(&sim_reg_lock);
    size_t n = dead.n;
    memcpy(key, dead.key, n * sizeof(*key));
    memcpy(size, dead.size, n * sizeof(*size));
    dead.n = 0;
    pthread_rwlock_unlock(&sim_reg_lock);
    for (size_t i = 0; i < n; i++)
        sim_race_forget_range(key[i], size[i]);
}

static void phys_unref(struct sim_phys *ph)
{
    if (--ph->refs > 0)
        return;
    if (dead.n < DEAD_MAX) {            /* (beyond, its history stays: its key is not reused) */
        dead.key[dead.n] = PHYS_KEY(ph->id);
        dead.size[dead.n++] = ph->size;
    }
    close(ph->fd);
    ph->magic = 0;
    if (ph->prop.location.type == CU_MEM_LOCATION_TYPE_DEVICE)
        sim_reserve_uncharge(ph->prop.location.id, ph->size);
    else
        sim_pinned_uncharge(ph->size);
    ph->next_free = phys_free;
    phys_free = ph;
}

/* The allocation behind a handle, or NULL for a value that is not a handle the application
 * holds (never one, or released: its mappings may still keep the memory). */
static struct sim_phys *phys_of(CUmemGenericAllocationHandle h)
{
    struct sim_phys *ph = (struct sim_phys *)(uintptr_t)h;
    return ph && ph->magic == PHYS_MAGIC && ph->handles > 0 ? ph : NULL;
}

SIM_API CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle)
{
    CUresult r = sim_check_init();
    atomic_fetch_add_explicit(&calls.release, 1, memory_order_relaxed);
    if (r != CUDA_SUCCESS || (r = injected(FAIL_RELEASE, 0)) != CUDA_SUCCESS)
        return r;
    pthread_rwlock_wrlock(&sim_reg_lock);
    struct sim_phys *ph = phys_of(handle);
    size_t size = ph ? ph->size : 0;
    int host_mem = ph && sim_vmm_phys_is_host(ph);
    if (ph) {
        ph->handles--;
        phys_unref(ph);
    }
    pthread_rwlock_unlock(&sim_reg_lock);
    if (!ph)
        return CUDA_ERROR_INVALID_VALUE;
    sim_vmm_forget_dead();
    VMM_COST(RELEASE, !host_mem, host_mem, size);
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- map and unmap */

/*
 * The granule index of a reservation (sim_range_t.pages): kernel launches look up every
 * pointer argument, and a binary search over thousands of mappings would make pointers into
 * VMM memory cost more than pointers from cuMemAlloc.  Kept for reservations of up to
 * PAGES_MAX granules (4 bytes each); larger ones are searched.
 */
#define PAGES_MAX (16u << 20)

/* Index mappings [from, nmaps) of rg, creating the index (of every mapping) when missing. */
static void pages_index(sim_range_t *rg, size_t from)
{
    if (!rg->pages) {
        if (rg->size / GRANULARITY > PAGES_MAX ||
            !(rg->pages = calloc(rg->size / GRANULARITY, sizeof(*rg->pages))))
            return;
        from = 0;
    }
    for (size_t i = from; i < rg->nmaps; i++) {
        uint64_t first = (rg->maps[i].va - rg->base) / GRANULARITY;
        for (uint64_t g = 0; g < rg->maps[i].size / GRANULARITY; g++)
            rg->pages[first + g] = (uint32_t)(i + 1);
    }
}

/* [va, va + size) of rg is no longer mapped. */
static void pages_clear(sim_range_t *rg, uint64_t va, uint64_t size)
{
    if (rg->pages)
        memset(&rg->pages[(va - rg->base) / GRANULARITY], 0,
               size / GRANULARITY * sizeof(*rg->pages));
}

static int insert_mapping(sim_range_t *rg, const sim_mapping_t *m)
{
    if (rg->nmaps == rg->capmaps) {
        size_t cap = rg->capmaps ? rg->capmaps * 2 : 8;
        sim_mapping_t *n = realloc(rg->maps, cap * sizeof(*n));
        if (!n)
            return -ENOMEM;
        rg->maps = n;
        rg->capmaps = cap;
    }
    size_t i = 0;
    while (i < rg->nmaps && rg->maps[i].va < m->va)
        i++;
    memmove(&rg->maps[i + 1], &rg->maps[i], (rg->nmaps - i) * sizeof(*m));
    rg->maps[i] = *m;
    rg->nmaps++;
    pages_index(rg, i);
    return 0;
}

/* Is [va, va+size) inside rg and free of mappings? */
static int range_free(const sim_range_t *rg, uint64_t va, uint64_t size)
{
    if (va < rg->base || va + size > rg->base + rg->size)
        return 0;
    for (size_t i = 0; i < rg->nmaps; i++)
        if (rg->maps[i].va < va + size && va < rg->maps[i].va + rg->maps[i].size)
            return 0;
    return 1;
}

SIM_API CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                                  CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    CUresult r = sim_check_init();
    atomic_fetch_add_explicit(&calls.map, 1, memory_order_relaxed);
    if (r != CUDA_SUCCESS || (r = injected(FAIL_MAP, ptr)) != CUDA_SUCCESS)
        return r;
    struct sim_phys *ph = phys_of(handle);
    if (ph && offset != 0)
        return CUDA_ERROR_NOT_SUPPORTED;    /* "currently must be zero"; so the driver says */
    if (!ph || flags != 0 || size == 0 || !aligned(ptr) || !aligned(size) || size > ph->size)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_rwlock_wrlock(&sim_reg_lock);
    sim_range_t *rg = sim_range_lookup_locked(ptr);
    if (!rg || rg->kind != SIM_RANGE_RESERVED || !range_free(rg, ptr, size)) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else if (mmap((void *)(uintptr_t)ptr, size, PROT_NONE,
                    MAP_SHARED | MAP_FIXED | MAP_POPULATE, ph->fd, 0) ==
               MAP_FAILED) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        sim_mapping_t m = { .va = ptr, .size = size, .phys = ph };
        if (insert_mapping(rg, &m) < 0) {
            sim_map_anon((void *)(uintptr_t)ptr, size, PROT_NONE);
            r = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            ph->refs++;
        }
    }
    pthread_rwlock_unlock(&sim_reg_lock);
    if (r == CUDA_SUCCESS)
        VMM_COST(MAP, !sim_vmm_phys_is_host(ph), sim_vmm_phys_is_host(ph), size);
    return r;
}

/* Index range [*first, *last] of mappings exactly covering [va, va+size); -1 if not. */
static int whole_mappings(const sim_range_t *rg, uint64_t va, uint64_t size, size_t *first,
                          size_t *last)
{
    size_t i = 0;
    while (i < rg->nmaps && rg->maps[i].va < va)
        i++;
    if (i == rg->nmaps || rg->maps[i].va != va)
        return -1;
    *first = i;
    uint64_t end = va;
    for (; i < rg->nmaps && rg->maps[i].va == end && end < va + size; i++)
        end += rg->maps[i].size;
    if (end != va + size)
        return -1;
    *last = i - 1;
    return 0;
}

/* How many of the mappings first..last of rg are of host-located memory. */
static size_t on_host(const sim_range_t *rg, size_t first, size_t last)
{
    size_t n = 0;
    for (size_t i = first; i <= last; i++)
        n += (size_t)sim_vmm_phys_is_host(rg->maps[i].phys);
    return n;
}

SIM_API CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    size_t first, last;
    CUresult r = sim_check_init();
    atomic_fetch_add_explicit(&calls.unmap, 1, memory_order_relaxed);
    if (r != CUDA_SUCCESS || (r = injected(FAIL_UNMAP, ptr)) != CUDA_SUCCESS)
        return r;
    if (size == 0 || !aligned(ptr) || !aligned(size))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_rwlock_wrlock(&sim_reg_lock);
    sim_range_t *rg = sim_range_lookup_locked(ptr);
    if (!rg || rg->kind != SIM_RANGE_RESERVED || whole_mappings(rg, ptr, size, &first, &last)) {
        pthread_rwlock_unlock(&sim_reg_lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    sim_map_anon((void *)(uintptr_t)ptr, size, PROT_NONE);
    size_t host = on_host(rg, first, last);
    for (size_t i = first; i <= last; i++)
        phys_unref(rg->maps[i].phys);
    memmove(&rg->maps[first], &rg->maps[last + 1],
            (rg->nmaps - last - 1) * sizeof(sim_mapping_t));
    rg->nmaps -= last - first + 1;
    pages_clear(rg, ptr, size);
    pages_index(rg, first);
    pthread_rwlock_unlock(&sim_reg_lock);
    sim_host_access(ptr, size, 1, "cuMemUnmap");
    sim_vmm_forget_dead();
    VMM_COST(UNMAP, last - first + 1 - host, host, size);
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- access */

static CUresult check_desc(const CUmemAccessDesc *d)
{
    if (d->flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && d->flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
        d->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
        return CUDA_ERROR_INVALID_VALUE;
    if (d->location.type == CU_MEM_LOCATION_TYPE_DEVICE)
        return sim_device_get(d->location.id, NULL) == CUDA_SUCCESS ? CUDA_SUCCESS
                                                                   : CUDA_ERROR_INVALID_DEVICE;
    if (d->location.type == CU_MEM_LOCATION_TYPE_HOST ||
        d->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA)
        return CUDA_SUCCESS;
    return CUDA_ERROR_INVALID_VALUE;
}

static void apply_desc(sim_mapping_t *m, const CUmemAccessDesc *d)
{
    if (d->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return;     /* host access: the simulator's memory is always host-visible */
    unsigned bit = 1u << d->location.id;
    m->access &= ~bit;
    m->writable &= ~bit;
    if (d->flags & CU_MEM_ACCESS_FLAGS_PROT_READ)
        m->access |= bit;
    if (d->flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
        m->writable |= bit;
}

/* HOST_NUMA access may be granted only to memory that was itself created HOST_NUMA. */
static int numa_access_ok(const sim_range_t *rg, size_t first, size_t last,
                          const CUmemAccessDesc *desc, size_t count)
{
    for (size_t j = 0; j < count; j++) {
        if (desc[j].location.type != CU_MEM_LOCATION_TYPE_HOST_NUMA)
            continue;
        for (size_t i = first; i <= last; i++)
            if (rg->maps[i].phys->prop.location.type != CU_MEM_LOCATION_TYPE_HOST_NUMA)
                return 0;
    }
    return 1;
}

SIM_API CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                                        size_t count)
{
    size_t first, last;
    CUresult r = sim_check_init();
    atomic_fetch_add_explicit(&calls.set_access, 1, memory_order_relaxed);
    if (r != CUDA_SUCCESS || (r = injected(FAIL_SET_ACCESS, ptr)) != CUDA_SUCCESS)
        return r;
    if (!desc || count == 0 || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++)
        if ((r = check_desc(&desc[i])) != CUDA_SUCCESS)
            return r;
    pthread_rwlock_wrlock(&sim_reg_lock);
    sim_range_t *rg = sim_range_lookup_locked(ptr);
    if (!rg || rg->kind != SIM_RANGE_RESERVED || whole_mappings(rg, ptr, size, &first, &last) ||
        !numa_access_ok(rg, first, last, desc, count)) {
        pthread_rwlock_unlock(&sim_reg_lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (size_t i = first; i <= last; i++) {
        sim_mapping_t *m = &rg->maps[i];
        for (size_t j = 0; j < count; j++)
            apply_desc(m, &desc[j]);
        int prot = m->writable ? PROT_READ | PROT_WRITE : m->access ? PROT_READ : PROT_NONE;
        mprotect((void *)(uintptr_t)m->va, m->size, prot);
    }
    size_t host = on_host(rg, first, last);
    pthread_rwlock_unlock(&sim_reg_lock);
    VMM_COST(ACCESS, last - first + 1 - host, host, size);
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location,
                                        CUdeviceptr ptr)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!flags || !location || location->type != CU_MEM_LOCATION_TYPE_DEVICE ||
        sim_device_get(location->id, NULL) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_rwlock_rdlock(&sim_reg_lock);
    sim_range_t *rg = sim_range_lookup_locked(ptr);
    const sim_mapping_t *m = rg && rg->kind == SIM_RANGE_RESERVED ? sim_vmm_lookup(rg, ptr) : NULL;
    if (m) {
        unsigned bit = 1u << location->id;
        *flags = (m->writable & bit) ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                 : (m->access & bit) ? CU_MEM_ACCESS_FLAGS_PROT_READ
                                     : CU_MEM_ACCESS_FLAGS_PROT_NONE;
    }
    pthread_rwlock_unlock(&sim_reg_lock);
    return m ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---------------------------------------------------------------- handles */

SIM_API CUresult CUDAAPI cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle,
                                                     void *addr)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_rwlock_wrlock(&sim_reg_lock);
    sim_range_t *rg = sim_range_lookup_locked((uint64_t)(uintptr_t)addr);
    const sim_mapping_t *m =
        rg && rg->kind == SIM_RANGE_RESERVED ? sim_vmm_lookup(rg, (uint64_t)(uintptr_t)addr) : NULL;
    if (m) {
        m->phys->refs++;
        m->phys->handles++;
        *handle = (CUmemGenericAllocationHandle)(uintptr_t)m->phys;
    }
    pthread_rwlock_unlock(&sim_reg_lock);
    return m ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SIM_API CUresult CUDAAPI cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
                                                                CUmemGenericAllocationHandle h)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!prop || !phys_of(h))
        return CUDA_ERROR_INVALID_VALUE;
    *prop = phys_of(h)->prop;
    return CUDA_SUCCESS;
}
