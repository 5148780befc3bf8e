/* SPDX-License-Identifier: MIT */
/*
 * vmm_inflight.c - whether the calls that move a chunk wait for the GPU: the host time of
 * each call with the device idle and with a long copy in flight on another stream.
 *
 * Usage: vmm_inflight [-n RUNS]   (RUNS: 1 to 10000, default 30)
 *
 * On device 0 it times, RUNS times each, the calls libelixir.so makes to move one 2 MiB chunk:
 * cuMemMap + cuMemSetAccess and cuMemUnmap of a device-located handle and of a host-located
 * one (when the device supports host VMM), cuMemcpyDtoHAsync and cuMemcpyHtoDAsync of 2 MiB
 * issued on a stream, cuEventRecord and cuStreamWaitEvent, and cuMemcpyDtoDAsync of 2 MiB to
 * and from a host-located handle mapped into the device's address space (the "host VMM" rows:
 * how a migration's copy goes, between shadow mappings).  Each call is timed twice: with
 * nothing running, and right after a 256 MiB host-to-device copy was issued on another stream
 * (several milliseconds on any PCIe link).  A call that waits for the device takes about as
 * long as that copy, and finds it finished when it returns: the table gives the median host
 * time of each, and in how many of the runs the long copy was still running when the call
 * returned (cuStreamQuery).  The two "copied" rows map and unmap, at an address of its own, a
 * 256 MiB device handle that the long copy reads through another mapping of it (as a
 * migration's copy reads a chunk through its shadow mapping while the chunk's own address is
 * remapped): whether the driver waits for work on the memory.
 * Then the issue of 4096 copies of 2 MiB back to back on one stream: the median and the largest
 * issue time, which shows whether the driver holds the host once its queue is full.  Last, 1, 2 and
 * 4 threads each moving a device handle of its own in and out of an address of its own (cuMemMap,
 * cuMemSetAccess, cuMemUnmap) CYCLES times: the cycles per second of all of them together, which
 * shows whether the driver runs such calls side by side.
 *
 * Clock: CLOCK_MONOTONIC against a real driver; against the simulator its virtual host clock
 * (sim_activity_clock), to which the VMM calls charge the model's costs.  It asserts nothing
 * about time.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "simtest.h"

#define MIB (1ull << 20)
#define CHUNK (2 * MIB)
#define LONG_COPY (256 * MIB)
#define QUEUED 4096
#define CYCLES 200
#define MAX_THREADS 4
#define DEFAULT_RUNS 30
#define MAX_RUNS 10000

enum call { DEV_MAP, DEV_UNMAP, HOST_MAP, HOST_UNMAP, COPY_DTOH, COPY_HTOD, EVENT_RECORD,
            STREAM_WAIT, SAME_MAP, SAME_UNMAP, COPY_TO_HVMM, COPY_FROM_HVMM, NCALLS };
static const char *const call_names[NCALLS] = {
    "device map+access", "device unmap", "host map+access", "host unmap",
    "copy DtoH 2 MiB", "copy HtoD 2 MiB", "cuEventRecord", "cuStreamWaitEvent",
    "copied map+access", "copied unmap", "copy to host VMM", "copy from host VMM",
};

static uint64_t (*sim_clock)(void);

static double now_ns(void)
{
    return bench_host_ns(sim_clock);
}

typedef struct rig {
    CUstream work, side;            /* the calls' stream; the long copy's */
    CUevent ev;
    CUdeviceptr va;                 /* one chunk of address space */
    CUmemGenericAllocationHandle dev_h, host_h;
    int has_host;
    CUmemAccessDesc access;
    CUdeviceptr dbuf, big_d;        /* a device chunk; the long copy's destination */
    void *hbuf, *big_h;             /* a pinned chunk; the long copy's source */
    CUmemGenericAllocationHandle big_dh;    /* LONG_COPY of device memory, mapped at shadow */
    CUdeviceptr shadow, app;        /* (always) and at app (by the copied rows' calls) */
    CUmemGenericAllocationHandle hv_h;  /* a host-located chunk mapped at hv, for the copies */
    CUdeviceptr hv;                 /* through host VMM (a migration's through its shadows) */
} rig_t;

/* One call, timed in nanoseconds.  A map call leaves va mapped; an unmap call expects it so
 * (untimed setup around each keeps the pairs balanced). */
static double one_call(rig_t *r, enum call c)
{
    CUmemGenericAllocationHandle h = c == HOST_MAP || c == HOST_UNMAP ? r->host_h : r->dev_h;
    double t0;

    if (c == DEV_UNMAP || c == HOST_UNMAP) {
        CHECK_CU(cuMemMap(r->va, CHUNK, 0, h, 0));
        CHECK_CU(cuMemSetAccess(r->va, CHUNK, &r->access, 1));
    }
    if (c == SAME_UNMAP) {
        CHECK_CU(cuMemMap(r->app, LONG_COPY, 0, r->big_dh, 0));
        CHECK_CU(cuMemSetAccess(r->app, LONG_COPY, &r->access, 1));
    }
    t0 = now_ns();
    switch (c) {
    case DEV_MAP:
    case HOST_MAP:
        CHECK_CU(cuMemMap(r->va, CHUNK, 0, h, 0));
        CHECK_CU(cuMemSetAccess(r->va, CHUNK, &r->access, 1));
        break;
    case DEV_UNMAP:
    case HOST_UNMAP:
        CHECK_CU(cuMemUnmap(r->va, CHUNK));
        break;
    case COPY_DTOH:
        CHECK_CU(cuMemcpyDtoHAsync(r->hbuf, r->dbuf, CHUNK, r->work));
        break;
    case COPY_HTOD:
        CHECK_CU(cuMemcpyHtoDAsync(r->dbuf, r->hbuf, CHUNK, r->work));
        break;
    case EVENT_RECORD:
        CHECK_CU(cuEventRecord(r->ev, r->work));
        break;
    case STREAM_WAIT:
        CHECK_CU(cuStreamWaitEvent(r->work, r->ev, 0));
        break;
    case SAME_MAP:
        CHECK_CU(cuMemMap(r->app, LONG_COPY, 0, r->big_dh, 0));
        CHECK_CU(cuMemSetAccess(r->app, LONG_COPY, &r->access, 1));
        break;
    case SAME_UNMAP:
        CHECK_CU(cuMemUnmap(r->app, LONG_COPY));
        break;
    case COPY_TO_HVMM:
        CHECK_CU(cuMemcpyDtoDAsync(r->hv, r->dbuf, CHUNK, r->work));
        break;
    case COPY_FROM_HVMM:
        CHECK_CU(cuMemcpyDtoDAsync(r->dbuf, r->hv, CHUNK, r->work));
        break;
    default:
        break;
    }
    t0 = now_ns() - t0;
    if (c == DEV_MAP || c == HOST_MAP)
        CHECK_CU(cuMemUnmap(r->va, CHUNK));
    if (c == SAME_MAP)
        CHECK_CU(cuMemUnmap(r->app, LONG_COPY));
    return t0;
}

/* Medians of RUNS timings of call c, idle and behind the long copy, and the runs in which
 * the long copy was still running when the call returned.  For the copied rows the long copy
 * reads the very memory the call maps or unmaps at app, through its mapping at shadow. */
static void measure(rig_t *r, enum call c, int runs, double *idle, double *busy, int *running)
{
    double *v = malloc(sizeof(double) * (size_t)runs * 2);
    if (!v) {
        fprintf(stderr, "vmm_inflight: no memory for %d runs' samples\n", runs);
        exit(1);
    }
    *running = 0;
    CHECK_CU(cuEventRecord(r->ev, r->side));    /* for cuStreamWaitEvent */
    for (int i = 0; i < runs; i++) {
        CHECK_CU(cuCtxSynchronize());
        v[i] = one_call(r, c);
        CHECK_CU(cuCtxSynchronize());
        if (c == SAME_MAP || c == SAME_UNMAP)
            CHECK_CU(cuMemcpyDtoHAsync(r->big_h, r->shadow, LONG_COPY, r->side));
        else
            CHECK_CU(cuMemcpyHtoDAsync(r->big_d, r->big_h, LONG_COPY, r->side));
        v[runs + i] = one_call(r, c);
        CUresult q = cuStreamQuery(r->side);
        if (q == CUDA_ERROR_NOT_READY)
            ++*running;
        else
            CHECK_CU(q);
    }
    CHECK_CU(cuCtxSynchronize());
    *idle = bench_median(v, runs) / 1e3;
    *busy = bench_median(v + runs, runs) / 1e3;
    free(v);
}

/* QUEUED copies of 2 MiB issued back to back on one stream: median and largest issue time. */
static void queue_depth(rig_t *r)
{
    double *v = malloc(sizeof(double) * QUEUED), t0, total;
    if (!v) {
        fprintf(stderr, "vmm_inflight: no memory for %d samples\n", QUEUED);
        exit(1);
    }
    CHECK_CU(cuCtxSynchronize());
    total = now_ns();
    for (int i = 0; i < QUEUED; i++) {
        t0 = now_ns();
        CHECK_CU(cuMemcpyHtoDAsync(r->dbuf, r->hbuf, CHUNK, r->work));
        v[i] = now_ns() - t0;
    }
    total = now_ns() - total;
    CHECK_CU(cuCtxSynchronize());
    double big = 0;
    int over = 0;
    for (int i = 0; i < QUEUED; i++) {
        big = v[i] > big ? v[i] : big;
        over += v[i] > 20e3;
    }
    printf("\n%d copies of 2 MiB issued back to back on one stream: median %.1f us, largest "
           "%.1f us, %d over 20 us; %.1f ms to issue them all\n", QUEUED,
           bench_median(v, QUEUED) / 1e3, big / 1e3, over, total / 1e6);
    free(v);
}

/* One thread's share of the side-by-side cycles: its own handle at its own address. */
typedef struct mover {
    CUcontext ctx;
    CUdeviceptr va;
    CUmemGenericAllocationHandle h;
    const CUmemAccessDesc *access;
    pthread_barrier_t *start;
} mover_t;

static void *mover_main(void *arg)
{
    mover_t *m = arg;
    CHECK_CU(cuCtxSetCurrent(m->ctx));
    pthread_barrier_wait(m->start);
    for (int i = 0; i < CYCLES; i++) {
        CHECK_CU(cuMemMap(m->va, CHUNK, 0, m->h, 0));
        CHECK_CU(cuMemSetAccess(m->va, CHUNK, m->access, 1));
        CHECK_CU(cuMemUnmap(m->va, CHUNK));
    }
    return NULL;
}

/* CYCLES map + set access + unmap cycles on each of 1, 2 and 4 threads at once: the cycles per
 * second of them all, against one thread's.  Wall time even on the simulator, whose single
 * host clock would add the threads' charges up. */
static void side_by_side(CUcontext ctx, CUdevice dev, const CUmemAccessDesc *access)
{
    CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                 .location = { CU_MEM_LOCATION_TYPE_DEVICE, dev } };
    mover_t m[MAX_THREADS];
    pthread_t t[MAX_THREADS];
    pthread_barrier_t start;
    double one = 0;

    printf("\nmap + set access + unmap of a 2 MiB device handle, %d cycles per thread, each "
           "thread its own handle and address%s:\n", CYCLES,
           sim_clock ? " (wall time of the simulator's own code: says nothing of a GPU)" : "");
    for (int n = 1; n <= MAX_THREADS; n *= 2) {
        pthread_barrier_init(&start, NULL, (unsigned)n + 1);
        for (int i = 0; i < n; i++) {
            m[i] = (mover_t){ .ctx = ctx, .access = access, .start = &start };
            CHECK_CU(cuMemAddressReserve(&m[i].va, CHUNK, 0, 0, 0));
            CHECK_CU(cuMemCreate(&m[i].h, CHUNK, &prop, 0));
            if (pthread_create(&t[i], NULL, mover_main, &m[i]) != 0) {
                fprintf(stderr, "vmm_inflight: pthread_create failed\n");
                exit(1);
            }
        }
        pthread_barrier_wait(&start);
        double t0 = bench_now_ns();
        for (int i = 0; i < n; i++)
            pthread_join(t[i], NULL);
        double rate = (double)n * CYCLES / ((bench_now_ns() - t0) / 1e9);
        pthread_barrier_destroy(&start);
        for (int i = 0; i < n; i++) {
            CHECK_CU(cuMemRelease(m[i].h));
            CHECK_CU(cuMemAddressFree(m[i].va, CHUNK));
        }
        one = n == 1 ? rate : one;
        printf("  %d thread%s %9.0f cycles/s  %5.2fx one thread's\n", n, n == 1 ? " " : "s",
               rate, rate / one);
    }
}

static int attribute(CUdevice_attribute a, CUdevice dev)
{
    int v = 0;
    return cuDeviceGetAttribute(&v, a, dev) == CUDA_SUCCESS ? v : 0;
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    rig_t r;
    CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED };
    char name[128];
    int runs = bench_runs_arg(argc, argv, "vmm_inflight", DEFAULT_RUNS, MAX_RUNS);
    int major = 0, minor = 0, version = 0;

    if (runs < 0)
        return 2;
    *(void **)&sim_clock = dlsym(RTLD_DEFAULT, "sim_activity_clock");
    CHECK_CU(cuInit(0));
    CHECK_CU(cuDeviceGet(&dev, 0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK_CU(cuCtxSetCurrent(ctx));
    CHECK_CU(cuDeviceGetName(name, sizeof(name), dev));
    CHECK_CU(cuDriverGetVersion(&version));
    major = version / 1000;
    minor = version % 1000 / 10;
    printf("vmm_inflight: device 0: %s, driver %d.%d\n", name, major, minor);
    printf("vmm_inflight: %s; median of %d runs, microseconds of host time per call\n",
           sim_clock ? "the simulator's virtual host clock" : "wall time (CLOCK_MONOTONIC)",
           runs);

    memset(&r, 0, sizeof(r));
    CHECK_CU(cuStreamCreate(&r.work, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&r.side, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuEventCreate(&r.ev, CU_EVENT_DISABLE_TIMING));
    CHECK_CU(cuMemAddressReserve(&r.va, CHUNK, 0, 0, 0));
    prop.location = (CUmemLocation){ CU_MEM_LOCATION_TYPE_DEVICE, dev };
    CHECK_CU(cuMemCreate(&r.dev_h, CHUNK, &prop, 0));
    r.has_host = attribute(CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev);
    if (r.has_host) {
        prop.location = (CUmemLocation){ CU_MEM_LOCATION_TYPE_HOST, 0 };
        r.has_host = cuMemCreate(&r.host_h, CHUNK, &prop, 0) == CUDA_SUCCESS;
    }
    if (r.has_host && cuMemCreate(&r.hv_h, CHUNK, &prop, 0) != CUDA_SUCCESS) {
        CHECK_CU(cuMemRelease(r.host_h));
        r.has_host = 0;
    }
    r.access.location = (CUmemLocation){ CU_MEM_LOCATION_TYPE_DEVICE, dev };
    r.access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CHECK_CU(cuMemAlloc(&r.dbuf, CHUNK));
    CHECK_CU(cuMemAlloc(&r.big_d, LONG_COPY));
    CHECK_CU(cuMemAllocHost(&r.hbuf, CHUNK));
    CHECK_CU(cuMemAllocHost(&r.big_h, LONG_COPY));
    memset(r.big_h, 1, LONG_COPY);
    prop.location = (CUmemLocation){ CU_MEM_LOCATION_TYPE_DEVICE, dev };
    CHECK_CU(cuMemCreate(&r.big_dh, LONG_COPY, &prop, 0));
    CHECK_CU(cuMemAddressReserve(&r.shadow, LONG_COPY, 0, 0, 0));
    CHECK_CU(cuMemAddressReserve(&r.app, LONG_COPY, 0, 0, 0));
    CHECK_CU(cuMemMap(r.shadow, LONG_COPY, 0, r.big_dh, 0));
    CHECK_CU(cuMemSetAccess(r.shadow, LONG_COPY, &r.access, 1));
    if (r.has_host) {
        CHECK_CU(cuMemAddressReserve(&r.hv, CHUNK, 0, 0, 0));
        CHECK_CU(cuMemMap(r.hv, CHUNK, 0, r.hv_h, 0));
        CHECK_CU(cuMemSetAccess(r.hv, CHUNK, &r.access, 1));
    }

    printf("\n%-20s %10s %18s %26s\n", "call", "idle", "behind a long copy",
           "long copy still running");
    for (int c = 0; c < NCALLS; c++) {
        double idle, busy;
        int running;
        if ((c == HOST_MAP || c == HOST_UNMAP || c == COPY_TO_HVMM || c == COPY_FROM_HVMM) &&
            !r.has_host) {
            printf("%-20s skipped: no host-located VMM memory on this device\n", call_names[c]);
            continue;
        }
        measure(&r, (enum call)c, runs, &idle, &busy, &running);
        printf("%-20s %10.1f %18.1f %20d of %d\n", call_names[c], idle, busy, running, runs);
    }
    queue_depth(&r);
    side_by_side(ctx, dev, &r.access);

    CHECK_CU(cuMemUnmap(r.shadow, LONG_COPY));
    CHECK_CU(cuMemAddressFree(r.app, LONG_COPY));
    CHECK_CU(cuMemAddressFree(r.shadow, LONG_COPY));
    CHECK_CU(cuMemRelease(r.big_dh));
    CHECK_CU(cuMemFreeHost(r.big_h));
    CHECK_CU(cuMemFreeHost(r.hbuf));
    CHECK_CU(cuMemFree(r.big_d));
    CHECK_CU(cuMemFree(r.dbuf));
    if (r.has_host) {
        CHECK_CU(cuMemUnmap(r.hv, CHUNK));
        CHECK_CU(cuMemAddressFree(r.hv, CHUNK));
        CHECK_CU(cuMemRelease(r.hv_h));
        CHECK_CU(cuMemRelease(r.host_h));
    }
    CHECK_CU(cuMemRelease(r.dev_h));
    CHECK_CU(cuMemAddressFree(r.va, CHUNK));
    CHECK_CU(cuEventDestroy(r.ev));
    CHECK_CU(cuStreamDestroy(r.side));
    CHECK_CU(cuStreamDestroy(r.work));
    CHECK_CU(cuDevicePrimaryCtxRelease(dev));
    return 0;
}
