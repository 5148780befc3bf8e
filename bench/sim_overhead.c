/* SPDX-License-Identifier: MIT */
/*
 * sim_overhead.c - what the simulator itself costs per operation, so that the shim's
 * overhead can later be measured on top of it.
 *
 * Measured side by side in one run: an empty host kernel called directly (the floor), the
 * same kernel through cuLaunchKernel (time to submit, and time until the executor has run
 * everything), and small pinned and pageable host-to-device copies.  Runs three times (each
 * re-executes this program): race checker off and on with the submitting thread pinned to one
 * CPU, then off unpinned.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "simtest.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry empty_kernel(.param .u64 p, .param .u32 n)\n{\n ret;\n}\n";

SIM_KERNEL void empty_kernel(const sim_launch_t *l, void **params)
{
    (void)l;
    (void)params;
}

typedef void (*kernel_ptr)(const sim_launch_t *, void **);

static double direct_calls(int n)
{
    volatile kernel_ptr k = empty_kernel;
    sim_launch_t l = { { 1, 1, 1 }, { 1, 1, 1 }, 0, 0, NULL, "empty_kernel" };
    void *params[2] = { NULL, NULL };
    double t0 = bench_now_ns();
    for (int i = 0; i < n; i++)
        k(&l, params);
    return (bench_now_ns() - t0) / n;
}

static void launches(CUfunction f, CUstream s, int n, double *submit, double *total)
{
    CUdeviceptr p = 0;
    unsigned len = 0;
    void *args[] = { &p, &len };
    double t0 = bench_now_ns();
    for (int i = 0; i < n; i++)
        CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
    double t1 = bench_now_ns();
    CHECK_CU(cuStreamSynchronize(s));
    double t2 = bench_now_ns();
    *submit = (t1 - t0) / n;
    *total = (t2 - t0) / n;
}

static double copies(CUdeviceptr d, void *src, size_t bytes, CUstream s, int n)
{
    double t0 = bench_now_ns();
    for (int i = 0; i < n; i++)
        CHECK_CU(cuMemcpyHtoDAsync(d, src, bytes, s));
    CHECK_CU(cuStreamSynchronize(s));
    return (bench_now_ns() - t0) / n;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        char cmd[4096];
        snprintf(cmd, sizeof(cmd), "ELIXIR_SIM_RACECHECK=off '%s' pin && "
                                   "ELIXIR_SIM_RACECHECK=report '%s' pin && "
                                   "ELIXIR_SIM_RACECHECK=off '%s' run", argv[0], argv[0], argv[0]);
        return system(cmd) == 0 ? 0 : 1;
    }
    /* "pin": the submitting thread and the executor share one CPU (the executor inherits
     * the mask).  Unpinned, each hand-off between two CPUs costs what the machine's cache
     * coherence costs, which on small virtual machines dominates the figure. */
    int pin = strcmp(argv[1], "pin") == 0;
    if (pin && bench_pin_to_one_cpu() != 0)
        pin = 0;                        /* (said in the heading: "not pinned") */
    const char *rc = getenv("ELIXIR_SIM_RACECHECK");
    st_setup(0);
    CUfunction f = st_function(ptx, "empty_kernel");
    CUstream s;
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    const int n = 200000;
    double submit, total, floor_ns = direct_calls(n);
    launches(f, s, n / 10, &submit, &total);          /* warm-up */
    launches(f, s, n, &submit, &total);

    CUdeviceptr d;
    void *pinned, *pageable = malloc(64);
    CHECK_CU(cuMemAlloc(&d, 4096));
    CHECK_CU(cuMemAllocHost(&pinned, 4096));
    memset(pageable, 1, 64);
    memset(pinned, 1, 64);
    double c_pinned = copies(d, pinned, 64, s, n / 2);
    double c_pageable = copies(d, pageable, 64, s, n / 2);

    printf("sim_overhead (race checker %s, %s), %d calls and launches, %d copies each:\n",
           rc ? rc : "default", pin ? "pinned to one CPU" : "not pinned", n, n / 2);
    printf("  direct call of the host kernel      %8.1f ns\n", floor_ns);
    printf("  cuLaunchKernel, submit only         %8.1f ns  (%.1fx a direct call)\n", submit,
           submit / floor_ns);
    printf("  cuLaunchKernel, submit + execute    %8.1f ns  (%.1fx a direct call)\n", total,
           total / floor_ns);
    printf("  cuMemcpyHtoDAsync 64 B pinned       %8.1f ns  (%.2fx a launch)\n", c_pinned,
           c_pinned / total);
    printf("  cuMemcpyHtoDAsync 64 B pageable     %8.1f ns  (%.2fx a launch)\n", c_pageable,
           c_pageable / total);
    free(pageable);
    return 0;
}
