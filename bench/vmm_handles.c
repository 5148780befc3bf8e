/* SPDX-License-Identifier: MIT */
/*
 * vmm_handles.c - what moving memory through the virtual-memory calls costs, as N physical
 * handles of 2 MiB or as one handle of N x 2 MiB.
 *
 * Usage: vmm_handles [-n RUNS]   (RUNS: 1 to 100000, default 100)
 *
 * On device 0, for N = 1, 2, 4, 8 and 16, each run times every step of moving N x 2 MiB into
 * one reserved virtual range and out again, two ways:
 *   (a) N handles of 2 MiB: N cuMemCreate, N cuMemMap side by side, one cuMemSetAccess over
 *       the whole range, N cuMemUnmap (one per mapping, as the documentation asks), N
 *       cuMemRelease; and again the same cycle with one cuMemSetAccess per handle;
 *   (b) one handle of N x 2 MiB: each call once.
 * The 2 MiB unit is rounded up to the location's minimum granularity
 * (cuMemGetAllocationGranularity).  It prints the median of RUNS runs of each step and of
 * each cycle's total, in microseconds, side by side with the ratio (b)/(a).  Then the same
 * for host-located memory, which is how libelixir.so maps evicted chunks: a HOST location
 * when the device reports CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, else
 * HOST_NUMA when it reports the HOST_NUMA sibling, else one line saying it is skipped.
 *
 * Clock: against a real driver, CLOCK_MONOTONIC.  Against the simulator (its libcuda.so.1
 * exports sim_activity_clock) the wall clock measures only the simulator's own code, so the
 * program reads the simulator's virtual host clock instead, to which every VMM call charges
 * what the model says it costs (SIM_COST_* in sim/include/simcuda.h): there the figures are
 * the model's charges, exactly, and say nothing of a GPU.  The header says which clock it is.
 * It asserts nothing about time.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "simtest.h"

#define MIB (1ull << 20)
#define UNIT_BYTES (2 * MIB)        /* one handle in (a), before rounding to the granularity */
#define NCOUNTS 5
#define MAX_HANDLES 16
#define DEFAULT_RUNS 100
#define MAX_RUNS 100000
#define WARM_RUNS 2                 /* untimed cycles of each kind before the timed ones */

static const int counts[NCOUNTS] = { 1, 2, 4, 8, 16 };

enum step { CREATE, MAP, ACCESS, UNMAP, RELEASE, TOTAL, NSTEPS };
static const char *const step_names[NSTEPS] = { "create", "map", "access", "unmap", "release",
                                                "total" };

/* One location's allocation properties, access descriptor and handle unit. */
typedef struct where {
    const char *name;               /* "device", "host", "host-numa" */
    CUmemAllocationProp prop;
    CUmemAccessDesc access;
    size_t unit, gran_min, gran_rec;
} where_t;

/* The virtual host clock of the simulator, or NULL against a real driver. */
static uint64_t (*sim_clock)(void);

static double now_ns(void)
{
    return bench_host_ns(sim_clock);
}

/*
 * One cycle: `handles` handles of `bytes` each, mapped side by side from va, granted access
 * with one call over the range (each_access 0) or one per handle (1), unmapped one mapping at
 * a time and released.  Adds each step's nanoseconds, and their sum, to t[].
 */
static void cycle(const where_t *w, CUdeviceptr va, int handles, size_t bytes, int each_access,
                  double t[NSTEPS])
{
    CUmemGenericAllocationHandle h[MAX_HANDLES];
    double t0, s[NSTEPS - 1];

    t0 = now_ns();
    for (int i = 0; i < handles; i++)
        CHECK_CU(cuMemCreate(&h[i], bytes, &w->prop, 0));
    s[CREATE] = now_ns() - t0;
    t0 = now_ns();
    for (int i = 0; i < handles; i++)
        CHECK_CU(cuMemMap(va + (CUdeviceptr)i * bytes, bytes, 0, h[i], 0));
    s[MAP] = now_ns() - t0;
    t0 = now_ns();
    if (each_access)
        for (int i = 0; i < handles; i++)
            CHECK_CU(cuMemSetAccess(va + (CUdeviceptr)i * bytes, bytes, &w->access, 1));
    else
        CHECK_CU(cuMemSetAccess(va, (size_t)handles * bytes, &w->access, 1));
    s[ACCESS] = now_ns() - t0;
    t0 = now_ns();
    for (int i = 0; i < handles; i++)
        CHECK_CU(cuMemUnmap(va + (CUdeviceptr)i * bytes, bytes));
    s[UNMAP] = now_ns() - t0;
    t0 = now_ns();
    for (int i = 0; i < handles; i++)
        CHECK_CU(cuMemRelease(h[i]));
    s[RELEASE] = now_ns() - t0;
    t[TOTAL] = 0;
    for (int k = 0; k < TOTAL; k++) {
        t[k] = s[k];
        t[TOTAL] += s[k];
    }
}

/* The three cycles of one run for N handles: (a) with one access call, (a) with one per
 * handle, (b).  Indexes of the samples below. */
enum kind { A_RANGE, A_EACH, B_ONE, NKINDS };

/* Medians in microseconds of RUNS runs of each kind's steps for N = n. */
static void measure(const where_t *w, CUdeviceptr va, int n, int runs,
                    double med[NKINDS][NSTEPS])
{
    double *v = malloc(sizeof(double) * (size_t)runs * NKINDS * NSTEPS), t[NSTEPS];
    if (!v) {
        fprintf(stderr, "vmm_handles: no memory for %d runs' samples\n", runs);
        exit(1);
    }
    for (int r = -WARM_RUNS; r < runs; r++) {
        for (int k = 0; k < NKINDS; k++) {
            cycle(w, va, k == B_ONE ? 1 : n, k == B_ONE ? (size_t)n * w->unit : w->unit,
                  k == A_EACH, t);
            for (int s = 0; s < NSTEPS && r >= 0; s++)
                v[((size_t)k * NSTEPS + (size_t)s) * (size_t)runs + (size_t)r] = t[s];
        }
    }
    for (int k = 0; k < NKINDS; k++)
        for (int s = 0; s < NSTEPS; s++)
            med[k][s] =
                bench_median(&v[((size_t)k * NSTEPS + (size_t)s) * (size_t)runs], runs) / 1e3;
    free(v);
}

/* One table row: location, N, step, (a), (b) and (b)/(a) ("-" when (a) took no time). */
static void row(const char *where, int n, const char *step, double a, double b)
{
    printf("%-9s %2d  %-12s %13.1f %13.1f", where, n, step, a, b);
    if (a > 0)
        printf(" %9.4f\n", b / a);
    else
        printf(" %9s\n", "-");
}

static void table(const where_t *w, int runs)
{
    CUdeviceptr va;
    double med[NKINDS][NSTEPS];

    printf("\n%s memory: location type %d id %d, handle unit %zu KiB (granularity: minimum %zu "
           "KiB, recommended %zu KiB)\n", w->name, (int)w->prop.location.type,
           w->prop.location.id, w->unit >> 10, w->gran_min >> 10, w->gran_rec >> 10);
    printf("%-9s %2s  %-12s %13s %13s %9s\n", "location", "N", "step", "(a) N handles",
           "(b) 1 handle", "(b)/(a)");
    CHECK_CU(cuMemAddressReserve(&va, (size_t)MAX_HANDLES * w->unit, w->unit, 0, 0));
    for (int c = 0; c < NCOUNTS; c++) {
        int n = counts[c];
        measure(w, va, n, runs, med);
        for (int s = 0; s < NSTEPS; s++) {
            row(w->name, n, step_names[s], med[A_RANGE][s], med[B_ONE][s]);
            if (s == ACCESS)
                row(w->name, n, "access-each", med[A_EACH][ACCESS], med[B_ONE][ACCESS]);
        }
        row(w->name, n, "total-each", med[A_EACH][TOTAL], med[B_ONE][TOTAL]);
    }
    CHECK_CU(cuMemAddressFree(va, (size_t)MAX_HANDLES * w->unit));
}

/*
 * Fills w for memory at `loc`, granted read-write access from device `dev`: 0, or -1 after
 * printing why the location is skipped (the driver refuses its granularity or a handle).
 */
static int where_at(where_t *w, const char *name, CUmemLocation loc, CUdevice dev)
{
    CUmemGenericAllocationHandle h;
    CUresult r;

    memset(w, 0, sizeof(*w));
    w->name = name;
    w->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    w->prop.location = loc;
    w->access.location = (CUmemLocation){ CU_MEM_LOCATION_TYPE_DEVICE, dev };
    w->access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    if ((r = cuMemGetAllocationGranularity(&w->gran_min, &w->prop,
                                           CU_MEM_ALLOC_GRANULARITY_MINIMUM)) != CUDA_SUCCESS ||
        (r = cuMemGetAllocationGranularity(&w->gran_rec, &w->prop,
                                           CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)) != CUDA_SUCCESS ||
        w->gran_min == 0) {
        printf("\n%s memory: skipped: cuMemGetAllocationGranularity returned %s\n", name,
               st_err(r));
        return -1;
    }
    w->unit = (UNIT_BYTES + w->gran_min - 1) / w->gran_min * w->gran_min;
    if ((r = cuMemCreate(&h, w->unit, &w->prop, 0)) != CUDA_SUCCESS) {
        printf("\n%s memory: skipped: cuMemCreate of %zu KiB returned %s\n", name,
               w->unit >> 10, st_err(r));
        return -1;
    }
    CHECK_CU(cuMemRelease(h));
    return 0;
}

static int attribute(CUdevice_attribute a, CUdevice dev)
{
    int v = 0;
    return cuDeviceGetAttribute(&v, a, dev) == CUDA_SUCCESS ? v : 0;
}

/* The host location libelixir.so would map evicted chunks at (see shim/res.c): 0, or -1
 * after printing that the device supports neither. */
static int host_where(where_t *w, CUdevice dev)
{
    if (attribute(CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev))
        return where_at(w, "host", (CUmemLocation){ CU_MEM_LOCATION_TYPE_HOST, 0 }, dev);
    if (attribute(CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev)) {
        int node = attribute(CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, dev);
        return where_at(w, "host-numa",
                        (CUmemLocation){ CU_MEM_LOCATION_TYPE_HOST_NUMA, node > 0 ? node : 0 },
                        dev);
    }
    printf("\nhost memory: skipped: device 0 reports neither "
           "CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED nor "
           "CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED\n");
    return -1;
}

int main(int argc, char **argv)
{
    int runs = bench_runs_arg(argc, argv, "vmm_handles", DEFAULT_RUNS, MAX_RUNS), version = 0;
    char name[256];
    CUdevice dev;
    where_t w;

    if (runs < 0)
        return 2;
    *(void **)&sim_clock = dlsym(RTLD_DEFAULT, "sim_activity_clock");
    st_setup(0);
    CHECK_CU(cuDeviceGet(&dev, 0));
    CHECK_CU(cuDeviceGetName(name, sizeof(name), dev));
    CHECK_CU(cuDriverGetVersion(&version));
    printf("vmm_handles: device 0: %s, driver %d.%d\n", name, version / 1000,
           version % 1000 / 10);
    if (sim_clock)
        printf("vmm_handles: the simulator: times are its virtual host clock, the model's "
               "charges (SIM_COST_* in sim/include/simcuda.h), not a GPU's\n");
    else
        printf("vmm_handles: the driver: times are wall time (CLOCK_MONOTONIC)\n");
    printf("vmm_handles: median of %d runs, microseconds; (a) N handles of one unit each, "
           "(b) one handle of N units;\n  access: one cuMemSetAccess over the range, "
           "access-each: one per handle (its own cycle; total-each is that cycle's total)\n",
           runs);
    if (where_at(&w, "device", (CUmemLocation){ CU_MEM_LOCATION_TYPE_DEVICE, dev }, dev) < 0)
        return 1;
    table(&w, runs);
    if (host_where(&w, dev) == 0)
        table(&w, runs);
    return 0;
}
