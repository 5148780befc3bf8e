/* SPDX-License-Identifier: MIT */
/*
 * simcuda.h - the interface between the simulated CUDA driver (sim/) and host kernels.
 *
 * On the simulator a kernel image is PTX text; each `.entry NAME` binds to a host C function
 * named NAME with the signature sim_kernel_fn.  The function runs once per launch (not once
 * per thread): it loops over the grid itself.  params[i] points to a private copy of argument i
 * taken when the launch was enqueued, so the caller may reuse its buffers at once.
 *
 * A host kernel may report what it costs (sim_kernel_cost) so that the virtual clock charges a
 * realistic duration, and what it touches (sim_kernel_access) so that the race checker sees
 * exact byte ranges.  A kernel that reports no access is assumed to read and write the whole
 * allocation behind every pointer-valued argument.
 *
 * A profiling library (the libcupti.so stand-in, sim/cupti/) observes work through the
 * activity interface at the end of this file: it tags each kernel, copy and memset on the
 * thread that submits it and hears of its virtual start and end when the executor completes it.
 */
#ifndef SIMCUDA_H
#define SIMCUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sim_launch {
    unsigned grid[3];       /* gridDim x, y, z */
    unsigned block[3];      /* blockDim x, y, z */
    unsigned shared_bytes;  /* dynamic shared memory requested at launch */
    int device;             /* ordinal of the device the kernel runs on */
    void *stream;           /* the CUstream it was launched on (NULL: legacy default) */
    const char *name;       /* the .entry name */
} sim_launch_t;

typedef void (*sim_kernel_fn)(const sim_launch_t *launch, void **params);

enum sim_access_mode {
    SIM_ACCESS_READ = 1,
    SIM_ACCESS_WRITE = 2,
    SIM_ACCESS_READWRITE = 3,
};

/*
 * Charge the running kernel for `flops` floating-point operations and `bytes` of device
 * memory traffic.  Its virtual duration is the larger of flops / device FLOP rate and
 * bytes / device memory bandwidth, plus a fixed launch latency.  Calls add up.
 * Outside a host kernel the call does nothing.
 */
void sim_kernel_cost(double flops, double bytes);

/*
 * Declare that the running kernel reads and/or writes [ptr, ptr + bytes).  Once a kernel has
 * declared any access, only declared accesses are checked for races.  Outside a host kernel
 * the call does nothing.
 */
void sim_kernel_access(const void *ptr, size_t bytes, int mode);

/*
 * Bind `.entry name` to host function fn for every module loaded from now on, before the
 * ELIXIR_SIM_KERNELS libraries and the global symbol scope are searched: for libraries of
 * the simulated machine (the NCCL stand-in) whose kernels live in a library loaded with
 * RTLD_LOCAL.  Registering a name again replaces its function.  0, or -ENOMEM / -EINVAL.
 */
int sim_kernel_register(const char *name, sim_kernel_fn fn);

/* ------------------------------------------------------------------------- activity */

enum sim_activity_kind {
    SIM_ACTIVITY_KERNEL = 1,
    SIM_ACTIVITY_MEMCPY = 2,
    SIM_ACTIVITY_MEMSET = 3,
};

/* Where one side of a copy or memset lives. */
enum sim_memory_kind {
    SIM_MEMORY_PAGEABLE = 1,
    SIM_MEMORY_PINNED = 2,
    SIM_MEMORY_DEVICE = 3,
};

enum sim_copy_kind {
    SIM_COPY_HTOD = 1,
    SIM_COPY_DTOH = 2,
    SIM_COPY_DTOD = 3,      /* within one device */
    SIM_COPY_PTOP = 4,      /* between two devices */
    SIM_COPY_HTOH = 5,
};

/*
 * The host time the driver takes in allocation and virtual-memory calls, in microseconds.
 * The simulator charges them to its host clock (sim_activity_clock) unless
 * ELIXIR_SIM_ALLOC_COSTS=0; a call that fails charges nothing.
 *
 * cuMemAlloc with its cuMemFree took 60 us for up to 16 MiB and 88 us for 64 MiB on an H100
 * (driver 580.159, CUDA 13; tools/gpu): half is charged to each.
 */
#define SIM_COST_ALLOC_US      30.0     /* cuMemAlloc, cuMemAllocPitch; cuMemFree the same */
#define SIM_COST_ALLOC_US_MIB   0.24    /* ... and per MiB */

/*
 * The virtual-memory calls charge CALL + HANDLE x (device-located physical allocations the
 * call reaches) + HOST_HANDLE x (host-located ones) + GRANULE x (2 MiB granules it covers;
 * HOST_GRANULE for a call that reached host memory alone), as the driver's own costs grow:
 *  - Map, set access and unmap: H200s (driver 580.159.04, CUDA 13; bench/vmm_inflight, two
 *    machines) took, for one 2 MiB handle mapped at one address again and again, cuMemMap +
 *    cuMemSetAccess 72-97 us with the device idle and 43-50 us with a copy in flight on another
 *    stream, cuMemUnmap 28-42 and 30-34; for host-located memory 96-145 and 91-100, and 50-62
 *    either way.  The calls returned with the copy still running: none waits for the device.  The
 *    mean of the four figures of each is charged (the shim makes these calls in both states):
 *    moving a 2 MiB chunk between two device handles (unmap, map, set access) costs 99 us; an
 *    eviction that maps the host copy at the same address (device unmap, host map and set access)
 *    142 us, and its way back (host unmap, device map and set access) 123 us.  Such calls from
 *    several threads at once took as long in all as from one: the driver runs them one at a time,
 *    as the simulator's single host clock does.  The same calls in a tight loop of their own
 *    (bench/vmm_handles) took less: cuMemMap 0.6-1, cuMemSetAccess 34 (host 60), cuMemUnmap 21
 *    (host 31); the H100 took about as long in such a loop (34-42 and 22-31).
 *  - Mapping and unmapping cost in proportion to the number of physical allocations, not of
 *    granules: on the H200 (bench/vmm_handles) setting access over 16 handles of 2 MiB took
 *    352 us, over one 32 MiB handle 37; pytorch/pytorch PR 96995 found the same of mapping.
 *    So map, set access and unmap charge nearly all of it per handle; the per-granule share
 *    (about 2%) makes one 20 MiB handle cost about 1.2x one 2 MiB handle.
 *  - cuMemCreate and cuMemRelease make or free one handle per call, charged per granule: on
 *    the H100 a device granule took 14-39 us to create and 16-19 to release (the middle is
 *    charged); on the H200 a host-located 2 MiB handle took 120 us and 31 us.
 */
#define SIM_COST_MAP_CALL_US              0.5
#define SIM_COST_MAP_HANDLE_US            0.95
#define SIM_COST_MAP_GRANULE_US           0.05
#define SIM_COST_HOST_MAP_HANDLE_US       0.95
#define SIM_COST_HOST_MAP_GRANULE_US      0.05
#define SIM_COST_ACCESS_CALL_US           0.5
#define SIM_COST_ACCESS_HANDLE_US        62.55
#define SIM_COST_ACCESS_GRANULE_US        0.8
#define SIM_COST_HOST_ACCESS_HANDLE_US  105.5
#define SIM_COST_HOST_ACCESS_GRANULE_US   0.8
#define SIM_COST_UNMAP_CALL_US            0.5
#define SIM_COST_UNMAP_HANDLE_US         32.3
#define SIM_COST_UNMAP_GRANULE_US         0.5
#define SIM_COST_HOST_UNMAP_HANDLE_US    56.6
#define SIM_COST_HOST_UNMAP_GRANULE_US    0.5
#define SIM_COST_CREATE_CALL_US           0.0
#define SIM_COST_CREATE_HANDLE_US         0.0
#define SIM_COST_CREATE_GRANULE_US       26.0
#define SIM_COST_HOST_CREATE_HANDLE_US    0.0
#define SIM_COST_HOST_CREATE_GRANULE_US 120.0
#define SIM_COST_RELEASE_CALL_US          0.0
#define SIM_COST_RELEASE_HANDLE_US        0.0
#define SIM_COST_RELEASE_GRANULE_US      17.5
#define SIM_COST_HOST_RELEASE_HANDLE_US   0.0
#define SIM_COST_HOST_RELEASE_GRANULE_US 31.0

/* One completed operation, as the executor saw it.  Times are virtual nanoseconds on the
 * clock of sim_activity_clock; ids are those cuCtxGetId and cuStreamGetId report. */
typedef struct sim_activity {
    int kind;                   /* enum sim_activity_kind */
    uint32_t correlation;       /* the call's id, as on_submit set it */
    uint64_t start, end;
    int device;                 /* ordinal of the device of its stream */
    uint64_t context_id;
    uint64_t stream_id;         /* 0: the legacy default stream */
    int async;                  /* copy, memset: submitted by an asynchronous entry point */
    uint64_t bytes;             /* copy: bytes moved; memset: bytes written */
    const char *name;           /* kernel: the .entry name, valid during on_complete only */
    unsigned grid[3], block[3];
    unsigned shared_bytes;      /* kernel: dynamic shared memory */
    int copy_kind;              /* copy: enum sim_copy_kind */
    int src_memory, dst_memory; /* copy: both sides; memset: dst_memory (enum sim_memory_kind) */
    unsigned value;             /* memset: the value as passed (1, 2 or 4 bytes wide) */
    unsigned elem_size;         /* memset: 1, 2 or 4 */
} sim_activity_t;

typedef struct sim_activity_ops {
    void *ctx;
    /*
     * On the submitting thread, for each kernel, copy or memset an API call submits (graph
     * launches included), before it is queued; no simulator lock is held.  *correlation is 0
     * for the first operation of a call and, for later ones, what an earlier one of the same
     * call left there: the observer sets it to the call's id.  Returns non-zero to hear of
     * this operation's completion.
     */
    int (*on_submit)(void *ctx, int kind, uint32_t *correlation);
    /*
     * On the executor thread, once the operation has run and before any host wait can see it
     * done; no simulator lock is held, but the executor waits: never call CUDA from here.
     * Operations that faulted are not reported.
     */
    void (*on_complete)(void *ctx, const sim_activity_t *activity);
} sim_activity_ops_t;

/*
 * Attach the one observer: 0, -EBUSY when another is attached, -EINVAL when a callback is
 * missing.  ops and its code must stay valid for the life of the process: operations tagged
 * before sim_activity_detach are still reported through it.  Detaching someone else's ops
 * does nothing.  With nothing attached, the cost is one predictable branch per operation.
 */
int sim_activity_attach(const sim_activity_ops_t *ops);
void sim_activity_detach(const sim_activity_ops_t *ops);
/* The host's virtual clock in nanoseconds: the time base of every activity's start and end. */
uint64_t sim_activity_clock(void);

/* ------------------------------------------------------------------------- VMM calls */

/* How many times each call that creates, maps, grants access to, unmaps or releases virtual
 * memory was made in this process since cuInit, by anyone (the program or a library preloaded
 * into it), whatever it returned: tests check with it that a library of theirs makes these
 * calls (which cost tens of microseconds each on a real GPU) only where it must. */
typedef struct sim_vmm_calls {
    uint64_t create, map, set_access, unmap, release;
} sim_vmm_calls_t;

void sim_vmm_calls(sim_vmm_calls_t *out);

/* Fault injection: the next call of `call` ("cuMemCreate", "cuMemMap", "cuMemSetAccess",
 * "cuMemUnmap" or "cuMemRelease"), or with ptr not 0 the next one at that address (cuMemMap,
 * cuMemSetAccess and cuMemUnmap only), fails with `result` (a CUresult) and does nothing
 * else, once; a later call for the same name replaces it, and CUDA_SUCCESS disarms it.
 * Tests use it to see a library under test keep its state when a driver call fails where a
 * real GPU may fail it (out of memory, or an error left by earlier work).  Returns 0 (when
 * disarming, 1 if the failure armed before had not happened yet), or -EINVAL for another
 * name or an address given where none is taken. */
int sim_vmm_fail(const char *call, uint64_t ptr, int result);

/* Fault injection: the next `n` event records (cuEventRecord, cuEventRecordWithFlags and their
 * _ptsz forms, from any thread, that would otherwise succeed) fail with `result` and record
 * nothing; n 0 disarms.  Returns how many of the failures armed before had not happened. */
unsigned sim_event_record_fail(unsigned n, int result);

/* ------------------------------------------------------------------------- NVMe I/O */

/*
 * I/O on the simulated machine's NVMe drive, charged to the virtual clock (sim/nvme.c).  Not
 * CUDA: a library that performs real file I/O looks these up with dlsym in the driver it
 * loaded, and calls them around each request when they exist; on a real driver they do not,
 * and nothing else changes.  The library declares the types itself rather than including
 * this header:
 *
 *   uint64_t elixirSimIoSubmit(int dir, const void *buf, uint64_t bytes);
 *       dir 0: read (drive to host), 1: write (host to drive).  Schedules the request on the
 *       drive from the host clock's now, behind the requests of that direction submitted
 *       before it, and returns a ticket: nonzero; 0 for another dir or before cuInit.  buf
 *       (NULL: not said) is the request's host memory: the race checker sees the host write
 *       it (a read) or read it (a write) now, as a copy's access.
 *   void elixirSimIoWait(uint64_t ticket);
 *       The host clock moves to the ticket's completion (never back).  A ticket may be waited
 *       for more than once, from any thread, or never; 0 does nothing.
 *   int elixirSimIoDone(uint64_t ticket);
 *       1 when the host clock has reached the ticket's completion (0 always has), else 0;
 *       the clock does not move.
 *
 * Call submit when the request is handed to the kernel and wait when its completion is
 * reaped; a poll that finds the request finished on the real file hands it back only when
 * done says so (the real file is far faster than the simulated drive).  Requests in flight
 * together share the drive's bandwidth.
 */
#define ELIXIR_SIM_IO_READ  0
#define ELIXIR_SIM_IO_WRITE 1

uint64_t elixirSimIoSubmit(int dir, const void *buf, uint64_t bytes);
void elixirSimIoWait(uint64_t ticket);
int elixirSimIoDone(uint64_t ticket);

/* ------------------------------------------------------------------------- other processes */

/* Other processes now hold `bytes` of device `device`'s memory (0: none; the default): it
 * counts as used, so cuMemGetInfo reports less free and allocations (cuMemAlloc, cuMemCreate,
 * pools) fail with CUDA_ERROR_OUT_OF_MEMORY once the rest is taken, as on a GPU that another
 * job shares.  Tests set it after a library under test sized itself, to see what it does when
 * the device runs short later.  Returns 0; -EINVAL for a device that does not exist (or no
 * driver); -ENOMEM, changing nothing, when that much is not free. */
int sim_other_process_memory(int device, uint64_t bytes);

/* Other processes now pin `bytes` of host memory (0: none; the default): it counts against
 * ELIXIR_SIM_HOST_MEMORY, so page-locked allocations (cuMemHostAlloc, cuMemAllocHost,
 * cuMemHostRegister, host cuMemCreate) fail with CUDA_ERROR_OUT_OF_MEMORY once the rest is
 * pinned, as on a machine whose memory other jobs took.  Returns 0; -EINVAL without a driver;
 * -ENOMEM, changing nothing, when that much is not left within the limit. */
int sim_other_process_pinned(uint64_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* SIMCUDA_H */
