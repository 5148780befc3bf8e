/* SPDX-License-Identifier: MIT */
/*
 * procaddr.c - cuGetProcAddress and cuGetProcAddress_v2: how cudart, PyTorch, NCCL and
 * Triton reach the driver, so everything they get must be our wrapper where we hook it.
 *
 * The shim does not choose variants itself: it asks the real driver with the caller's exact
 * arguments (name, version, flags, symbolStatus), so the ABI the driver selects is the one
 * the caller gets, and then maps the pointer it returned to our wrapper of that same
 * variant.  The map is built at start-up by resolving every hooked exported name in the
 * driver (real pointer -> hook), sorted by address and searched by bisection; a pointer we
 * do not hook is returned unchanged.  Asked for "cuGetProcAddress" itself, the driver hands
 * out its own lookup, which maps to our wrapper, so the chain stays intercepted.  With
 * ELIXIR_DISABLE the map is empty and every pointer is the driver's.
 */
#include "shim.h"

/* Sort the map by real address (insertion sort: about a hundred entries, no allocation). */
static void sort_map(shim_proc_entry_t *map, unsigned n)
{
    for (unsigned i = 1; i < n; i++) {
        shim_proc_entry_t e = map[i];
        unsigned j = i;

        while (j > 0 && (uintptr_t)map[j - 1].real > (uintptr_t)e.real) {
            map[j] = map[j - 1];
            j--;
        }
        map[j] = e;
    }
}

/*
 * Where a driver exports one function under several hooked names, the map keeps the first
 * hook in hooks.h order (the sort is stable): they are the same code, so any of our wrappers
 * for it behaves identically.
 */
void shim_proc_map_build(shim_driver_t *d)
{
    unsigned n = 0, kept = 0;

    for (unsigned i = 0; i < SHIM_NHOOKS; i++) {
        if (d->fn[i]) {
            d->map[n].real = d->fn[i];
            d->map[n++].hook = i;
        }
    }
    sort_map(d->map, n);
    for (unsigned i = 0; i < n; i++)
        if (kept == 0 || d->map[kept - 1].real != d->map[i].real)
            d->map[kept++] = d->map[i];
    d->nmap = kept;
}

int shim_proc_find(const shim_driver_t *d, const void *real)
{
    unsigned lo = 0, hi = d->nmap;

    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;

        if ((uintptr_t)d->map[mid].real < (uintptr_t)real)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < d->nmap && d->map[lo].real == real ? (int)d->map[lo].hook : -1;
}

/* The pointer to hand out for the driver's answer `fn`. */
static void *wrap(void *fn)
{
    const shim_driver_t *d = atomic_load_explicit(&shim_drv, memory_order_acquire);
    int hook = d && fn ? shim_proc_find(d, fn) : -1;

    return hook >= 0 ? shim_hook_wrappers[hook] : fn;
}

SHIM_EXPORT CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn,
                                                 int cudaVersion, cuuint64_t flags,
                                                 CUdriverProcAddressQueryResult *symbolStatus)
{
    SHIM_ENTER(cuGetProcAddress_v2, real);
    CUresult r = real(symbol, pfn, cudaVersion, flags, symbolStatus);

    if (r == CUDA_SUCCESS && pfn)
        *pfn = wrap(*pfn);
    SHIM_TRACE(INIT, "cuGetProcAddress_v2(%s, %d, %llu) = %d", symbol ? symbol : "(null)",
               cudaVersion, (unsigned long long)flags, (int)r);
    return r;
}

SHIM_EXPORT CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                              cuuint64_t flags)
{
    SHIM_ENTER(cuGetProcAddress, real);
    CUresult r = real(symbol, pfn, cudaVersion, flags);

    if (r == CUDA_SUCCESS && pfn)
        *pfn = wrap(*pfn);
    SHIM_TRACE(INIT, "cuGetProcAddress(%s, %d, %llu) = %d", symbol ? symbol : "(null)",
               cudaVersion, (unsigned long long)flags, (int)r);
    return r;
}
