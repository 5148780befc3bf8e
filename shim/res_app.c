/* SPDX-License-Identifier: MIT */
/*
 * res_app.c - the application's own device memory charged to the GPU budget: what it creates
 * with cuMemCreate (res_vmm_create, res_vmm_release) and what its memory pools reserve
 * (res_pool_*).  Neither is an arena range: the driver serves it, and it is never moved.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "res_int.h"

/*
 * Device memory the application creates itself (cuMemCreate with a DEVICE location) is
 * charged to that device's GPU budget from creation to release, and never moved.  Arena
 * chunks are evicted to make room first; when they cannot be, the call still goes to the
 * driver, which has the last word.  The sizes are kept in an open-addressing table keyed by
 * handle (0 marks a free slot), since the driver gives no size for a handle, with the
 * handle's references: cuMemRetainAllocationHandle hands out the same handle again, and the
 * memory is given back at the release of the last one.
 */
typedef struct app_mem {
    CUmemGenericAllocationHandle h;
    uint64_t size;
    int device;
    unsigned refs;                  /* the handle's references: creation, retains */
} app_mem_t;

static pthread_mutex_t app_lock = PTHREAD_MUTEX_INITIALIZER;
static app_mem_t *app_tab;
static size_t app_cap, app_n;

static size_t app_slot(CUmemGenericAllocationHandle h)
{
    return (size_t)((h * 0x9E3779B97F4A7C15ull) >> 20) & (app_cap - 1);
}

static int app_grow(void);

/* Add an entry (app_lock held); 0 or -ENOMEM. */
static int app_put(app_mem_t m)
{
    if ((app_n + 1) * 2 > app_cap && app_grow() < 0)
        return -ENOMEM;
    size_t i = app_slot(m.h);
    while (app_tab[i].h)
        i = (i + 1) & (app_cap - 1);
    app_tab[i] = m;
    app_n++;
    return 0;
}

static int app_grow(void)
{
    size_t old_cap = app_cap;
    app_mem_t *old = app_tab, *tab = calloc(old_cap ? old_cap * 2 : 64, sizeof(*tab));
    if (!tab)
        return -ENOMEM;
    app_tab = tab;
    app_cap = old_cap ? old_cap * 2 : 64;
    app_n = 0;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].h)
            app_put(old[i]);
    free(old);
    return 0;
}

/* The slot of h's entry (app_lock held), or SIZE_MAX. */
static size_t app_find(CUmemGenericAllocationHandle h)
{
    if (!app_cap || !h)
        return SIZE_MAX;
    size_t i = app_slot(h);
    while (app_tab[i].h && app_tab[i].h != h)
        i = (i + 1) & (app_cap - 1);
    return app_tab[i].h ? i : SIZE_MAX;
}

/* Remove and return the entry of h (app_lock held); 0 when there is none.  The entries after
 * it in its probe run shift back, so no slot is ever marked deleted. */
static int app_take(CUmemGenericAllocationHandle h, app_mem_t *out)
{
    size_t i = app_find(h);
    if (i == SIZE_MAX)
        return 0;
    *out = app_tab[i];
    for (size_t j = (i + 1) & (app_cap - 1); app_tab[j].h; j = (j + 1) & (app_cap - 1)) {
        size_t home = app_slot(app_tab[j].h);
        /* j's entry may move to i when its home slot is not in (i, j], cyclically */
        if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
            app_tab[i] = app_tab[j];
            i = j;
        }
    }
    app_tab[i].h = 0;
    app_n--;
    return 1;
}

/* Charge `bytes` (signed) of the application's memory to d; app: cuMemCreate, else pools. */
static void app_charge(res_dev_t *d, int app, int64_t bytes)
{
    uint64_t *used = app ? &d->app_used : &d->pool_used, *peak = app ? &d->app_peak
                                                                      : &d->pool_peak;
    *used += (uint64_t)bytes;
    if (*used > *peak)
        *peak = *used;
}

/* Charge `size` bytes created at prop's location when it is a device with an arena, evicting
 * to make room; the device, or -1 when nothing was charged. */
static int vmm_charge(size_t size, const CUmemAllocationProp *prop)
{
    if (!prop || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE || size == 0)
        return -1;
    res_dev_t *d = res_dev_of(prop->location.id);
    if (!d)
        return -1;
    shim_lock(&d->lock);
    relax_t rx = relax_begin();
    if (res_make_bytes(d, size) < 0)
        SHIM_INFO(RES, "device %d: no room in the budget for %zu bytes of the application's "
                  "own memory", d->device, size);
    app_charge(d, 1, (int64_t)size);
    relax_end(rx);
    shim_unlock(&d->lock);
    return d->device;
}

static void vmm_uncharge(int device, uint64_t size)
{
    res_dev_t *d = &res_devs[device];
    shim_lock(&d->lock);
    app_charge(d, 1, -(int64_t)size);
    shim_unlock(&d->lock);
}

CUresult res_vmm_create(shim_pfn_cuMemCreate_t real, CUmemGenericAllocationHandle *handle,
                        size_t size, const CUmemAllocationProp *prop, unsigned long long flags)
{
    int device = shim_disabled() ? -1 : vmm_charge(size, prop);
    CUresult r = real(handle, size, prop, flags);
    int kept = 0;
    if (device < 0)
        return r;
    if (r == CUDA_SUCCESS && *handle) {
        pthread_mutex_lock(&app_lock);
        kept = app_put((app_mem_t){ *handle, size, device, 1 }) == 0;
        pthread_mutex_unlock(&app_lock);
    }
    if (!kept)
        vmm_uncharge(device, size);
    return r;
}

/* Handle h of the application's memory was handed out again (cuMemRetainAllocationHandle). */
void res_vmm_retained(CUmemGenericAllocationHandle h)
{
    pthread_mutex_lock(&app_lock);
    size_t i = app_find(h);
    if (i != SIZE_MAX)
        app_tab[i].refs++;
    pthread_mutex_unlock(&app_lock);
}

/* The last reference's entry leaves the table before the driver releases h, so that a handle
 * value the driver hands out again at once is never taken for it. */
CUresult res_vmm_release(shim_pfn_cuMemRelease_t real, CUmemGenericAllocationHandle h)
{
    app_mem_t m = { 0 };
    pthread_mutex_lock(&app_lock);
    size_t i = app_find(h);
    int found = i != SIZE_MAX && app_tab[i].refs == 1 && app_take(h, &m);
    if (i != SIZE_MAX && !found)
        app_tab[i].refs--;              /* the driver may refuse: then the count is off by one */
    pthread_mutex_unlock(&app_lock);
    CUresult r = real(h);
    if (!found)
        return r;
    if (r != CUDA_SUCCESS) {
        pthread_mutex_lock(&app_lock);
        int kept = app_put(m) == 0;
        pthread_mutex_unlock(&app_lock);
        if (kept)
            return r;
    }
    vmm_uncharge(m.device, m.size);
    return r;
}

/*
 * The application's own memory pools (cuMemAllocFromPoolAsync): what a pool reserves from
 * the device (CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) is charged to the budget of the device
 * of the current context.  Before an allocation that the pool's free memory cannot hold,
 * arena chunks are evicted to make room for it; after it, the charge follows the pool's
 * reserve, and it follows it again whenever memory is short (pools give memory back at the
 * driver's will), at a trim and when the pool is destroyed.  A pool whose memory turns out
 * not to be this device's (another device's, the host's) is remembered as such, uncharged.
 */
static app_pool_t *pool_entry(res_dev_t *d, CUmemoryPool pool, int add)
{
    for (unsigned i = 0; i < d->npools; i++)
        if (d->pools[i].pool == pool)
            return &d->pools[i];
    if (!add)
        return NULL;
    if (d->npools == d->cap_pools) {
        unsigned cap = d->cap_pools ? d->cap_pools * 2 : 4;
        app_pool_t *p = realloc(d->pools, cap * sizeof(*p));
        if (!p)
            return NULL;
        d->pools = p;
        d->cap_pools = cap;
    }
    d->pools[d->npools] = (app_pool_t){ .pool = pool };
    return &d->pools[d->npools++];
}

static uint64_t pool_attr(CUmemoryPool pool, CUmemPool_attribute a, int *ok)
{
    cuuint64_t v = 0;
    *ok = DRV(cuMemPoolGetAttribute)(pool, a, &v) == CUDA_SUCCESS;
    return v;
}

/* The charge of pool entry p follows the pool's reserve (d locked); returns the charge. */
static uint64_t pool_sync(res_dev_t *d, app_pool_t *p)
{
    int ok;
    uint64_t reserved = pool_attr(p->pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &ok);
    if (ok && p->mine >= 0) {
        app_charge(d, 0, (int64_t)(reserved - p->charged));
        p->charged = reserved;
    }
    return p->charged;
}

/* Forget pool entry p, giving back its charge (d locked). */
static void pool_drop(res_dev_t *d, app_pool_t *p)
{
    app_charge(d, 0, -(int64_t)p->charged);
    *p = d->pools[--d->npools];
}

void res_pools_sync(res_dev_t *d)
{
    for (unsigned i = 0; i < d->npools; i++)
        pool_sync(d, &d->pools[i]);
}

void res_pool_alloc_begin(CUmemoryPool pool, size_t bytes)
{
    res_dev_t *d = pool ? res_current_dev(NULL) : NULL;
    app_pool_t *p;
    int ok;
    if (!d)
        return;
    shim_lock(&d->lock);
    relax_t rx = relax_begin();
    if ((p = pool_entry(d, pool, 1)) != NULL && p->mine >= 0) {
        uint64_t reserved = pool_sync(d, p);
        uint64_t used = pool_attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &ok);
        if (ok && (reserved < used || reserved - used < bytes))
            res_make_bytes(d, bytes);       /* the pool must grow: room for it first */
    }
    relax_end(rx);
    shim_unlock(&d->lock);
}

/* Is the pool memory at p this device's? */
static int device_memory(const res_dev_t *d, CUdeviceptr p)
{
    unsigned type = 0;
    int ordinal = -1;
    return DRV(cuPointerGetAttribute)(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) ==
               CUDA_SUCCESS && type == CU_MEMORYTYPE_DEVICE &&
           DRV(cuPointerGetAttribute)(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p) ==
               CUDA_SUCCESS && ordinal == d->device;
}

void res_pool_alloc_end(CUmemoryPool pool, CUresult r, CUdeviceptr p)
{
    res_dev_t *d = pool ? res_current_dev(NULL) : NULL;
    app_pool_t *e;
    if (!d)
        return;
    shim_lock(&d->lock);
    if ((e = pool_entry(d, pool, 0)) != NULL) {
        if (r == CUDA_SUCCESS && !e->mine)
            e->mine = device_memory(d, p) ? 1 : -1;
        if (e->mine < 0) {
            app_charge(d, 0, -(int64_t)e->charged);     /* not this device's memory */
            e->charged = 0;
        }
        pool_sync(d, e);
    }
    shim_unlock(&d->lock);
}

/* Before cuMemPoolDestroy (destroy = 1) or after cuMemPoolTrimTo: forget or re-read pool. */
void res_pool_changed(CUmemoryPool pool, int destroy)
{
    for (int i = 0; i < MAX_DEVICES; i++) {
        res_dev_t *d = &res_devs[i];
        app_pool_t *p;
        if (!res_dev_ready(d))
            continue;
        shim_lock(&d->lock);
        if ((p = pool_entry(d, pool, 0)) != NULL) {
            if (destroy)
                pool_drop(d, p);
            else
                pool_sync(d, p);
        }
        shim_unlock(&d->lock);
    }
}
