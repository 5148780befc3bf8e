/* SPDX-License-Identifier: MIT */
/*
 * res_budget.c - a device's GPU budget and the process's host budget, from the options
 * (ELIXIR_GPU_MEMORY, ELIXIR_HOST_MEMORY) or their defaults, and said once each.  A size
 * above what the device has free, or what the process may pin, stops the program; a share of
 * the device (a percentage) is held to what it has free.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "res_int.h"
#include "sysmem.h"

static uint64_t budget(shim_opt_t o, uint64_t whole, uint64_t automatic)
{
    shim_mem_t m = shim_opt_mem(o);
    if (m.kind == SHIM_MEM_BYTES)
        return m.bytes;
    if (m.kind == SHIM_MEM_PERCENT)
        return (uint64_t)((double)whole * m.percent / 100.0);
    return automatic;
}

uint64_t res_gpu_headroom(uint64_t free_b, uint64_t total)
{
    uint64_t reserve = total / 10 > RESERVE_MIN ? total / 10 : RESERVE_MIN;
    return free_b > reserve ? free_b - reserve : free_b / 2;
}

/* Did option o (ELIXIR_GPU_MEMORY or ELIXIR_HOST_MEMORY) come from the environment? */
static int budget_given(shim_opt_t o)
{
    return shim_opt_mem(o).kind != SHIM_MEM_AUTO;
}

/* A budget the user gave that is under one chunk (nothing could ever be placed there) is bad
 * configuration: reported, naming the variable, its value and the smallest accepted;
 * -ERANGE (the caller stops the program once setup_lock is released), else 0. */
static int check_budget(const res_dev_t *d, shim_opt_t o, uint64_t bytes, const char *what)
{
    char got[32], chunk[32];

    if (!budget_given(o) || bytes >= d->chunk)
        return 0;
    shim_log_fatal("ELIXIR_%s=\"%s\" gives device %d a %s budget of %s (%llu bytes), less than "
                   "one chunk (%s, the driver's allocation granularity): expected auto, or a "
                   "size or percentage that comes to at least %s; the program stops (exit "
                   "status %d)", shim_opt_name(o), shim_opt_str(o), d->device, what,
                   shim_fmt_size(bytes, got), (unsigned long long)bytes,
                   shim_fmt_size(d->chunk, chunk), chunk, SHIM_EXIT_CONFIG);
    return -ERANGE;
}

/* With ELIXIR_VERBOSE=1: what budget option o became ("auto -> 60.0 GiB"), and how (the GPU
 * budget per device, the host budget once for the process). */
static void say_budget(const res_dev_t *d, shim_opt_t o, uint64_t bytes, const char *how)
{
    char b[32];

    if (!shim_opt_int(SHIM_OPT_VERBOSE))
        return;
    if (o == SHIM_OPT_HOST_MEMORY)     /* one budget for the whole process */
        shim_log_plain("option ELIXIR_%s=%s -> %s (%s)", shim_opt_name(o), shim_opt_str(o),
                       shim_fmt_size(bytes, b), how);
    else
        shim_log_plain("option ELIXIR_%s=%s -> %s on device %d (%s)", shim_opt_name(o),
                       shim_opt_str(o), shim_fmt_size(bytes, b), d->device, how);
}

/* A size the user gave for option o beyond `limit` bytes (what device `dev` has free, or,
 * dev < 0, what the process may pin): reported with both sizes exact and the largest
 * accepted in whole MiB; -ERANGE. */
static int beyond(shim_opt_t o, int dev, uint64_t bytes, uint64_t limit)
{
    char want[32], have[32], who[32] = "";
    if (dev >= 0)
        snprintf(who, sizeof(who), "device %d ", dev);
    shim_log_fatal("ELIXIR_%s=\"%s\" asks %sfor %s (%llu bytes)%s, more than the %s (%llu "
                   "bytes) %s: expected auto, a size of at most %lluM, or a percentage (held to "
                   "what there is); the program stops (exit status %d)", shim_opt_name(o),
                   shim_opt_str(o), who, shim_fmt_size(bytes, want), (unsigned long long)bytes,
                   dev >= 0 ? "" : " of pinned host memory", shim_fmt_size(limit, have),
                   (unsigned long long)limit, dev >= 0 ? "it has free" : "this process may "
                   "use (pinned memory cannot be swapped out)", (unsigned long long)(limit >> 20),
                   SHIM_EXIT_CONFIG);
    return -ERANGE;
}

/* The host budget, set with the first arena (under setup_lock); 0 or -ERANGE. */
static int set_host_budget(res_dev_t *d)
{
    const char *from;
    uint64_t ram = shim_host_memory();
    unsigned procs = shim_local_processes(&from);
    if (procs == 0) {
        if (!budget_given(SHIM_OPT_HOST_MEMORY))
            SHIM_WARN(RES, "%s=\"%s\" is not a number of processes (1 to 65536); the "
                      "automatic host budget is not divided among the job's processes",
                      from, getenv(from));
        procs = 1;
        from = NULL;
    }
    uint64_t host = budget(SHIM_OPT_HOST_MEMORY, ram, ram / 2 / procs);
    if (host > ram)
        return beyond(SHIM_OPT_HOST_MEMORY, -1, host, ram);
    if (check_budget(d, SHIM_OPT_HOST_MEMORY, host, "host") < 0)
        return -ERANGE;
    atomic_store(&res_host.budget, host / d->chunk * d->chunk);
    atomic_store(&res_host.budget_set, host / d->chunk * d->chunk);
    if (from && !budget_given(SHIM_OPT_HOST_MEMORY))
        SHIM_INFO(RES, "host budget: half of the %llu MiB this process may use, shared "
                  "by the %u processes %s=%u says run here", (unsigned long long)(ram >> 20),
                  procs, from, procs);
    say_budget(d, SHIM_OPT_HOST_MEMORY, host / d->chunk * d->chunk,
               !budget_given(SHIM_OPT_HOST_MEMORY) ? "half the memory this process may use, "
               "shared by the processes of the node" : "pinned host memory of the process");
    return 0;
}

/* A fixed ELIXIR_PLAN_SLACK of the whole GPU budget or more (with the plan): reported as
 * check_budget does; -ERANGE, else 0. */
static int check_slack(const res_dev_t *d)
{
    long slack = shim_opt_int(SHIM_OPT_PLAN_SLACK);
    uint64_t chunks = d->gpu_budget / d->chunk;
    char b[32];

    if (shim_opt_int(SHIM_OPT_POLICY) != 1 || slack <= 0 || (uint64_t)slack < chunks)
        return 0;
    shim_log_fatal("ELIXIR_PLAN_SLACK=%ld leaves device %d's plan no GPU memory: its budget is "
                   "%llu chunks (%s): expected auto, or a whole number under %llu; the program "
                   "stops (exit status %d)", slack, d->device, (unsigned long long)chunks,
                   shim_fmt_size(d->gpu_budget, b), (unsigned long long)chunks,
                   SHIM_EXIT_CONFIG);
    return -ERANGE;
}

int res_set_budgets(res_dev_t *d)
{
    size_t free_b = 0, total = 0;
    CUresult r = DRV(cuMemGetInfo_v2)(&free_b, &total);
    if (r != CUDA_SUCCESS && shim_opt_mem(SHIM_OPT_GPU_MEMORY).kind != SHIM_MEM_BYTES) {
        shim_log_fatal("device %d: cuMemGetInfo failed (CUresult %d), so ELIXIR_GPU_MEMORY=%s "
                       "cannot be worked out: give a size; the program stops (exit status %d)",
                       d->device, (int)r, shim_opt_str(SHIM_OPT_GPU_MEMORY), SHIM_EXIT_CONFIG);
        return -ERANGE;
    }
    if (r != CUDA_SUCCESS) {            /* (a size: taken as given) */
        SHIM_WARN(RES, "device %d: cuMemGetInfo failed (CUresult %d): ELIXIR_GPU_MEMORY=%s is "
                  "not checked against free memory", d->device, (int)r,
                  shim_opt_str(SHIM_OPT_GPU_MEMORY));
        free_b = SIZE_MAX;
    }
    uint64_t automatic = r == CUDA_SUCCESS ? res_gpu_headroom(free_b, total) : 0;
    uint64_t gpu = budget(SHIM_OPT_GPU_MEMORY, total, automatic);
    d->gpu_budget_auto = !budget_given(SHIM_OPT_GPU_MEMORY);
    if (gpu > free_b && shim_opt_mem(SHIM_OPT_GPU_MEMORY).kind == SHIM_MEM_PERCENT) {
        /* A share of the device: of its memory, held to what it has free (100% is all of
         * it; the driver's context always takes some). */
        SHIM_INFO(RES, "device %d: ELIXIR_GPU_MEMORY=%s is %llu MiB, held to the %llu MiB the "
                  "device has free", d->device, shim_opt_str(SHIM_OPT_GPU_MEMORY),
                  (unsigned long long)(gpu >> 20), (unsigned long long)(free_b >> 20));
        gpu = free_b;
    } else if (gpu > free_b) {
        return beyond(SHIM_OPT_GPU_MEMORY, d->device, gpu, free_b);
    }
    if (check_budget(d, SHIM_OPT_GPU_MEMORY, gpu, "GPU") < 0)
        return -ERANGE;
    d->gpu_budget = d->gpu_budget_set = gpu / d->chunk * d->chunk;
    say_budget(d, SHIM_OPT_GPU_MEMORY, d->gpu_budget,
               d->gpu_budget_auto ? "free device memory less a reserve for the driver"
                                  : "of the device's memory");
    if (check_slack(d) < 0)
        return -ERANGE;
    if (atomic_load(&res_arenas) == 0)          /* (the first arena, under setup_lock) */
        return set_host_budget(d);
    return 0;
}
