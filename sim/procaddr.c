/* SPDX-License-Identifier: MIT */
/*
 * procaddr.c - cuGetProcAddress: driver entry points by base name, CUDA version and flags.
 *
 * This is how the CUDA runtime, PyTorch, NCCL and Triton reach the driver, so it must hand back
 * exactly the variant the real driver would: the one with the greatest version not above the
 * version asked for (cuMemAlloc@3020 is cuMemAlloc_v2, cuCtxSynchronize@13000 is
 * cuCtxSynchronize_v2), and with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM the _ptds/_ptsz
 * variant where one exists.  The table (sim_procs) is generated from cudaTypedefs.h by
 * sim/gen_exports.py, sorted by (name, per_thread, version), and searched by bisection.
 *
 * Like the real driver, this works before cuInit and calls nothing else in the simulator.
 */
#include <string.h>

#include "sim.h"

/* cuda.h maps cuGetProcAddress to cuGetProcAddress_v2; the legacy 4-argument entry point is
 * exported under the plain name, with the signature of PFN_cuGetProcAddress_v11030. */
#undef cuGetProcAddress
SIM_API CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                          cuuint64_t flags);

/* The version the simulated driver reports (cuDriverGetVersion); asking for more is invalid. */
#define SIM_PROC_DRIVER_VERSION CUDA_VERSION

/* What a lookup that finds no usable variant returns.  The cuda.h comment says CUDA_SUCCESS
 * with *pfn = NULL, but drivers in the field return CUDA_ERROR_NOT_FOUND, and callers such as
 * cudart treat either as "not available" as long as *pfn is NULL and symbolStatus says why. */
#define SIM_PROC_MISS CUDA_ERROR_NOT_FOUND

#define SIM_PROC_DEFAULT 0
#define SIM_PROC_PTDS 1

/* Must match PROC_STRUCT in sim/gen_exports.py (the generated file declares it too). */
typedef struct sim_proc {
    const char *name;   /* base name asked for, e.g. "cuMemAlloc" */
    int version;        /* CUDA version that introduced this variant, e.g. 3020 */
    int per_thread;     /* SIM_PROC_PTDS for a _ptds/_ptsz variant, else SIM_PROC_DEFAULT */
    const char *symbol; /* exported name of the variant, e.g. "cuMemAlloc_v2" */
    void *fn;           /* its address */
} sim_proc_t;

extern const sim_proc_t sim_procs[];
extern const unsigned sim_nprocs;

/* Index of the first row named `symbol`, or sim_nprocs when there is none. */
static unsigned first_row(const char *symbol)
{
    unsigned lo = 0, hi = sim_nprocs;

    while (lo < hi) {
        unsigned mid = lo + (hi - lo) / 2;
        if (strcmp(sim_procs[mid].name, symbol) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < sim_nprocs && strcmp(sim_procs[lo].name, symbol) == 0)
        return lo;
    return sim_nprocs;
}

/*
 * The newest row from `first` on (rows of one name, per_thread then version ascending) of the
 * given kind with version <= `version`, or NULL.  Sets *any when the name has a row of that kind
 * at all, whatever its version.
 */
static const sim_proc_t *newest(unsigned first, int per_thread, int version, int *any)
{
    const sim_proc_t *best = NULL;
    const char *name = sim_procs[first].name;

    for (unsigned i = first; i < sim_nprocs && strcmp(sim_procs[i].name, name) == 0; i++) {
        if (sim_procs[i].per_thread != per_thread)
            continue;
        *any = 1;
        if (sim_procs[i].version <= version)
            best = &sim_procs[i];
    }
    return best;
}

/*
 * Choose the variant of `symbol` for `version`: the newest default variant, replaced by the
 * newest per-thread one when `ptds` is set and that one is at least as new (a per-thread
 * variant of an older ABI must not stand in for a newer default one).  Returns NULL and sets
 * *status when there is none.
 */
static const sim_proc_t *choose(const char *symbol, int version, int ptds,
                                CUdriverProcAddressQueryResult *status)
{
    unsigned first = first_row(symbol);
    int any = 0;
    const sim_proc_t *def, *pt;

    if (first == sim_nprocs) {
        *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return NULL;
    }
    def = newest(first, SIM_PROC_DEFAULT, version, &any);
    pt = ptds ? newest(first, SIM_PROC_PTDS, version, &any) : NULL;
    if (pt && (!def || pt->version >= def->version))
        def = pt;
    *status = def ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    return def;
}

/*
 * Contract (cuda.h, Driver Entry Point Access): `symbol` is a base name without version
 * suffix; flags is CU_GET_PROC_ADDRESS_DEFAULT or _LEGACY_STREAM (the default-stream variant)
 * or _PER_THREAD_DEFAULT_STREAM (the _ptds/_ptsz variant, falling back to the default one).
 * NULL symbol or pfn, any other flags value (both stream bits together included) or a version
 * above the driver's: CUDA_ERROR_INVALID_VALUE, symbolStatus untouched.  *pfn (when pfn is not
 * NULL) and the optional *symbolStatus are always set otherwise; a miss (unknown name, or no
 * variant as old as cudaVersion) returns SIM_PROC_MISS with *pfn = NULL.
 */
SIM_API CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                             cuuint64_t flags,
                                             CUdriverProcAddressQueryResult *symbolStatus)
{
    CUdriverProcAddressQueryResult status;
    const sim_proc_t *row;

    if (pfn)
        *pfn = NULL;
    if (!symbol || !pfn || cudaVersion > SIM_PROC_DRIVER_VERSION)
        return CUDA_ERROR_INVALID_VALUE;
    if (flags != CU_GET_PROC_ADDRESS_DEFAULT && flags != CU_GET_PROC_ADDRESS_LEGACY_STREAM &&
        flags != CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
        return CUDA_ERROR_INVALID_VALUE;
    row = choose(symbol, cudaVersion,
                 flags == CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &status);
    if (symbolStatus)
        *symbolStatus = status;
    if (!row)
        return SIM_PROC_MISS;
    *pfn = row->fn;
    return CUDA_SUCCESS;
}

/* The CUDA 11.3 entry point: the same lookup without the status out-parameter. */
SIM_API CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                          cuuint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}
