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
 * at all, whatever its version.  Versions compare unsigned: the real driver (580) takes a
 * negative cudaVersion as newer than any.
 */
static const sim_proc_t *newest(unsigned first, int per_thread, unsigned version, int *any)
{
    const sim_proc_t *best = NULL;
    const char *name = sim_procs[first].name;

    for (unsigned i = first; i < sim_nprocs && strcmp(sim_procs[i].name, name) == 0; i++) {
        if (sim_procs[i].per_thread != per_thread)
            continue;
        *any = 1;
        if ((unsigned)sim_procs[i].version <= version)
            best = &sim_procs[i];
    }
    return best;
}

/*
 * Choose the variant of `symbol` for `version`: the newest default variant, replaced by the
 * newest per-thread one when `ptds` is set and that one is at least as new (a per-thread
 * variant of an older ABI must not stand in for a newer default one).  A name that has
 * per-thread variants, asked for one at a version older than all of them, has none: the real
 * driver (580) does not fall back to the default variant then (cuMemcpyHtoD at 3020).
 * Returns NULL and sets *status when there is none.
 */
static const sim_proc_t *choose(const char *symbol, unsigned version, int ptds,
                                CUdriverProcAddressQueryResult *status)
{
    unsigned first = first_row(symbol);
    int any_def = 0, any_pt = 0;
    const sim_proc_t *def, *pt;

    if (first == sim_nprocs) {
        *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return NULL;
    }
    def = newest(first, SIM_PROC_DEFAULT, version, &any_def);
    pt = ptds ? newest(first, SIM_PROC_PTDS, version, &any_pt) : NULL;
    if (any_pt && !pt)
        def = NULL;
    else if (pt && (!def || pt->version >= def->version))
        def = pt;
    *status = def ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    return def;
}

/*
 * The lookup both entry points share.  flags: CU_GET_PROC_ADDRESS_DEFAULT or _LEGACY_STREAM
 * (the default-stream variant), _PER_THREAD_DEFAULT_STREAM (the _ptds/_ptsz variant where the
 * name has one), or both stream bits, which the real driver (580) takes as per-thread.
 * CUDA_ERROR_INVALID_VALUE for other flags, a version above the driver's, or a NULL symbol or
 * pfn (the real driver crashes; the docs do not say); then *pfn and *status are untouched.
 * Otherwise *status says what was found and *row is it, or NULL.
 */
static CUresult lookup(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                       CUdriverProcAddressQueryResult *status, const sim_proc_t **row)
{
    const cuuint64_t known = CU_GET_PROC_ADDRESS_LEGACY_STREAM |
                             CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;

    if (!symbol || !pfn || cudaVersion > SIM_PROC_DRIVER_VERSION || (flags & ~known))
        return CUDA_ERROR_INVALID_VALUE;
    *row = choose(symbol, (unsigned)cudaVersion,
                  (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0, status);
    return CUDA_SUCCESS;
}

/*
 * Contract (Driver Entry Point Access): `symbol` is a base name without version suffix.  A
 * lookup that finds no usable variant (an unknown name, or none as old as cudaVersion) returns
 * CUDA_SUCCESS with *pfn = NULL, and the optional *symbolStatus says why, as the docs say and
 * the real driver (580) does.  Invalid arguments: see lookup.
 */
SIM_API CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                             cuuint64_t flags,
                                             CUdriverProcAddressQueryResult *symbolStatus)
{
    CUdriverProcAddressQueryResult status;
    const sim_proc_t *row;
    CUresult r = lookup(symbol, pfn, cudaVersion, flags, &status, &row);

    if (r != CUDA_SUCCESS)
        return r;
    if (symbolStatus)
        *symbolStatus = status;
    *pfn = row ? row->fn : NULL;
    return CUDA_SUCCESS;
}

/* The CUDA 11.3 entry point: the same lookup without the status out-parameter.  A miss is
 * CUDA_ERROR_NOT_FOUND with *pfn untouched (the real driver, 580). */
SIM_API CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                          cuuint64_t flags)
{
    CUdriverProcAddressQueryResult status;
    const sim_proc_t *row;
    CUresult r = lookup(symbol, pfn, cudaVersion, flags, &status, &row);

    if (r != CUDA_SUCCESS)
        return r;
    if (!row)
        return CUDA_ERROR_NOT_FOUND;
    *pfn = row->fn;
    return CUDA_SUCCESS;
}
