/* SPDX-License-Identifier: MIT */
/*
 * memtest.h - shared pieces of the memory tests (mem_*, ptr_*, vmm_*, pool_*): two host
 * kernels with their PTX, short-hands for the virtual memory management calls, and checks of
 * device memory contents.  Include it once per test program, after simtest.h: the kernels
 * are defined here so that the simulator finds them in the test executable.
 */
#ifndef MEMTEST_H
#define MEMTEST_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "simtest.h"

#define MT_MIB (1ull << 20)
#define MT_GRAN (2 * MT_MIB)    /* the allocation granularity the simulator reports */

static const char mt_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry mt_fill(.param .u64 p, .param .u64 n, .param .u32 v)\n{\n ret;\n}\n"
    ".visible .entry mt_count(.param .u64 p, .param .u64 n, .param .u32 v, .param .u64 out)\n"
    "{\n ret;\n}\n";

/* How many mt_fill kernels have run: lets a test see a kernel finish without synchronising. */
static _Atomic int mt_fill_runs;

/* mt_fill(p, n, v): write v into the n 32-bit words at p. */
SIM_KERNEL void mt_fill(const sim_launch_t *l, void **params)
{
    uint32_t *p = *(uint32_t **)params[0];
    uint64_t n = *(uint64_t *)params[1];
    uint32_t v = *(uint32_t *)params[2];
    sim_kernel_access(p, n * 4, SIM_ACCESS_WRITE);
    for (uint64_t i = 0; i < n; i++)
        p[i] = v;
    atomic_fetch_add(&mt_fill_runs, 1);
}

/* mt_count(p, n, v, out): *out = how many of the n 32-bit words at p equal v (a read of p). */
SIM_KERNEL void mt_count(const sim_launch_t *l, void **params)
{
    const uint32_t *p = *(const uint32_t **)params[0];
    uint64_t n = *(uint64_t *)params[1];
    uint32_t v = *(uint32_t *)params[2];
    uint64_t *out = *(uint64_t **)params[3];
    uint64_t hits = 0;
    sim_kernel_access(p, n * 4, SIM_ACCESS_READ);
    sim_kernel_access(out, sizeof(*out), SIM_ACCESS_WRITE);
    for (uint64_t i = 0; i < n; i++)
        hits += p[i] == v;
    *out = hits;
}

/* The named kernel of mt_ptx (mt_fill or mt_count), looked up once per context, so that a
 * launch can still be attempted when the context is in an error state. */
static inline CUfunction mt_function(const char *name)
{
    static struct { CUcontext ctx; CUfunction fill, count; } loaded[8];
    CUcontext ctx;
    CUmodule mod;
    CHECK_CU(cuCtxGetCurrent(&ctx));
    size_t i = 0;
    while (i < 8 && loaded[i].ctx && loaded[i].ctx != ctx)
        i++;
    EXPECT(i < 8, "more than 8 contexts");
    if (!loaded[i].ctx) {
        CHECK_CU(cuModuleLoadData(&mod, mt_ptx));
        CHECK_CU(cuModuleGetFunction(&loaded[i].fill, mod, "mt_fill"));
        CHECK_CU(cuModuleGetFunction(&loaded[i].count, mod, "mt_count"));
        loaded[i].ctx = ctx;
    }
    return strcmp(name, "mt_fill") == 0 ? loaded[i].fill : loaded[i].count;
}

static inline CUresult mt_fill_async(CUdeviceptr p, uint64_t words, uint32_t v, CUstream s)
{
    void *args[] = { &p, &words, &v };
    return cuLaunchKernel(mt_function("mt_fill"), 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
}

static inline CUresult mt_count_async(CUdeviceptr p, uint64_t words, uint32_t v, CUdeviceptr out,
                                      CUstream s)
{
    void *args[] = { &p, &words, &v, &out };
    return cuLaunchKernel(mt_function("mt_count"), 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
}

/* Read `words` 32-bit words at p back to the host; each must be v. */
static inline void mt_expect_words(CUdeviceptr p, size_t words, uint32_t v)
{
    uint32_t *h = malloc(words * 4);
    EXPECT(h != NULL, "out of host memory");
    CHECK_CU(cuMemcpyDtoH(h, p, words * 4));
    for (size_t i = 0; i < words; i++)
        EXPECT(h[i] == v, "word %zu at 0x%llx: expected 0x%x, got 0x%x", i,
               (unsigned long long)p, v, h[i]);
    free(h);
}

/* ---------------------------------------------------------------- virtual memory management */

static inline CUmemAllocationProp mt_prop(CUmemLocationType type, int id)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = type;
    prop.location.id = id;
    return prop;
}

static inline CUmemGenericAllocationHandle mt_create(size_t size, CUmemLocationType type, int id)
{
    CUmemGenericAllocationHandle h;
    CUmemAllocationProp prop = mt_prop(type, id);
    CHECK_CU(cuMemCreate(&h, size, &prop, 0));
    return h;
}

static inline CUdeviceptr mt_reserve(size_t size)
{
    CUdeviceptr va;
    CHECK_CU(cuMemAddressReserve(&va, size, 0, 0, 0));
    return va;
}

static inline CUmemAccessDesc mt_desc(int device, CUmemAccess_flags flags)
{
    CUmemAccessDesc d;
    memset(&d, 0, sizeof(d));
    d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d.location.id = device;
    d.flags = flags;
    return d;
}

/* Grant `device` the access `flags` to the mappings that exactly cover [va, va + size). */
static inline void mt_access(CUdeviceptr va, size_t size, int device, CUmemAccess_flags flags)
{
    CUmemAccessDesc d = mt_desc(device, flags);
    CHECK_CU(cuMemSetAccess(va, size, &d, 1));
}

/* Map h over [va, va + size) and let `device` read and write it. */
static inline void mt_map_rw(CUdeviceptr va, size_t size, CUmemGenericAllocationHandle h,
                             int device)
{
    CHECK_CU(cuMemMap(va, size, 0, h, 0));
    mt_access(va, size, device, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
}

/* Device memory now in use on the current context's device. */
static inline size_t mt_used(void)
{
    size_t free_bytes, total;
    CHECK_CU(cuMemGetInfo(&free_bytes, &total));
    return total - free_bytes;
}

#endif /* MEMTEST_H */
