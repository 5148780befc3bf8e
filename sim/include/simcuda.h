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

#ifdef __cplusplus
}
#endif

#endif /* SIMCUDA_H */
