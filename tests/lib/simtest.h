/* SPDX-License-Identifier: MIT */
/*
 * simtest.h - helpers for the C tests: checking macros that print what was expected and what
 * came back, context set-up, and the attribute that makes a test's host kernels visible to
 * the simulator (test programs are linked with -rdynamic).
 */
#ifndef SIMTEST_H
#define SIMTEST_H

#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "simcuda.h"

#define SIM_KERNEL __attribute__((visibility("default"), used))

#define TEST_SKIP 77

static inline const char *st_err(CUresult r)
{
    const char *s = NULL;
    cuGetErrorName(r, &s);
    return s ? s : "(unknown CUresult)";
}

/* The call must return `want`; otherwise print both and exit 1. */
#define EXPECT_CU(want, call)                                                               \
    do {                                                                                    \
        CUresult got_ = (call);                                                             \
        if (got_ != (want)) {                                                               \
            fprintf(stderr, "%s:%d: %s\n  expected %s, got %s\n", __FILE__, __LINE__, #call, \
                    st_err(want), st_err(got_));                                            \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

#define CHECK_CU(call) EXPECT_CU(CUDA_SUCCESS, call)

#define EXPECT(cond, ...)                                                                   \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            fprintf(stderr, "%s:%d: expected %s: ", __FILE__, __LINE__, #cond);             \
            fprintf(stderr, __VA_ARGS__);                                                   \
            fprintf(stderr, "\n");                                                          \
            exit(1);                                                                        \
        }                                                                                   \
    } while (0)

/* 1 when libcuda.so.1 is the simulator.  The tests also run against the real driver
 * (`make gpu-check`), which crashes on some arguments the docs do not cover, such as a NULL
 * out-parameter, where the simulator refuses them: tests check those only here. */
static inline int st_simulated(void)
{
    return dlsym(RTLD_DEFAULT, "sim_other_process_memory") != NULL;
}

/* The list of the cuGetProcAddress requests libcudart 13 makes at start-up: the file named by
 * ELIXIR_PROC_REQUESTS, else the project's shared copy, else the one kept in tests/fixtures
 * (tests run from the repository's root). */
static inline const char *st_proc_requests(void)
{
    const char *env = getenv("ELIXIR_PROC_REQUESTS");
    FILE *f;

    if (env && *env)
        return env;
    if ((f = fopen("../shared/data/cudart13-proc-requests.txt", "r")) != NULL) {
        fclose(f);
        return "../shared/data/cudart13-proc-requests.txt";
    }
    return "tests/fixtures/cudart13-proc-requests.txt";
}

/* cuInit and make device `dev`'s primary context current. */
static inline CUcontext st_setup(int dev)
{
    CUcontext ctx;
    CHECK_CU(cuInit(0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK_CU(cuCtxSetCurrent(ctx));
    return ctx;
}

/* Load a PTX module and fetch one function from it. */
static inline CUfunction st_function(const char *ptx, const char *name)
{
    CUmodule m;
    CUfunction f;
    CHECK_CU(cuModuleLoadData(&m, ptx));
    CHECK_CU(cuModuleGetFunction(&f, m, name));
    return f;
}

/* PTX text: the module header, and entries to concatenate after it. */
#define ST_PTX_HEADER ".version 8.0\n.target sm_90\n.address_size 64\n"
#define ST_PTX_ADD_CONST \
    ".visible .entry add_const(.param .u64 p, .param .u32 n, .param .f32 v)\n{\n ret;\n}\n"
#define ST_PTX_AXPB                                                                          \
    ".visible .entry axpb(.param .u64 p, .param .u32 n, .param .u32 a, .param .u32 b)\n" \
    "{\n ret;\n}\n"
#define ST_PTX_ADD_VIA                                                                       \
    ".visible .entry add_via(.param .u64 pp, .param .u64 n, .param .u32 v)\n{\n ret;\n}\n"
#define ST_PTX_BUSY_RW \
    ".visible .entry busy_rw(.param .f64 flops, .param .u64 p, .param .u64 n)\n{\n ret;\n}\n"
#define ST_PTX_ADD_INTO                                                                      \
    ".visible .entry add_into(.param .u64 dst, .param .u64 src, .param .u64 n)\n{\n ret;\n}\n"

/* A program that uses ST_PTX_ADD_CONST defines ST_KERNEL_ADD_CONST before including this header
 * (once per program: the simulator finds the kernel in the executable).
 * add_const(p, n, v): adds v to each of the n floats at p. */
#ifdef ST_KERNEL_ADD_CONST
SIM_KERNEL void add_const(const sim_launch_t *l, void **params)
{
    float *p = *(float **)params[0];
    unsigned n = *(unsigned *)params[1];
    float v = *(float *)params[2];
    for (unsigned i = 0; i < n; i++)
        p[i] += v;
    sim_kernel_access(p, n * sizeof(float), SIM_ACCESS_READWRITE);
}
#endif

/* Likewise ST_KERNEL_AXPB for ST_PTX_AXPB.  axpb(p, n, a, b): each of the n unsigned words at p
 * becomes p[i] * a + b. */
#ifdef ST_KERNEL_AXPB
SIM_KERNEL void axpb(const sim_launch_t *l, void **params)
{
    unsigned *p = *(unsigned **)params[0];
    unsigned n = *(unsigned *)params[1], a = *(unsigned *)params[2], b = *(unsigned *)params[3];
    for (unsigned i = 0; i < n; i++)
        p[i] = p[i] * a + b;
    sim_kernel_access(p, n * sizeof(*p), SIM_ACCESS_READWRITE);
}
#endif

/* Likewise ST_KERNEL_BUSY_RW for ST_PTX_BUSY_RW.  busy_rw(flops, p, n): reads and writes the n
 * bytes at p (touching nothing: their contents stay) and charges the simulator `flops` of
 * arithmetic. */
#ifdef ST_KERNEL_BUSY_RW
SIM_KERNEL void busy_rw(const sim_launch_t *l, void **params)
{
    (void)l;
    sim_kernel_access(*(void **)params[1], *(uint64_t *)params[2], SIM_ACCESS_READWRITE);
    sim_kernel_cost(*(double *)params[0], 0);
}
#endif

/* Likewise ST_KERNEL_ADD_VIA for ST_PTX_ADD_VIA.  add_via(pp, n, v): adds v to each of the n
 * unsigned words at the address stored at pp, a pointer the kernel loads from memory (its
 * arguments never name that memory). */
#ifdef ST_KERNEL_ADD_VIA
SIM_KERNEL void add_via(const sim_launch_t *l, void **params)
{
    const uint64_t *pp = *(const uint64_t **)params[0];
    uint64_t n = *(uint64_t *)params[1];
    unsigned v = *(unsigned *)params[2];
    (void)l;
    sim_kernel_access(pp, 8, SIM_ACCESS_READ);
    unsigned *p = (unsigned *)(uintptr_t)*pp;
    sim_kernel_access(p, n * sizeof(*p), SIM_ACCESS_READWRITE);
    for (uint64_t i = 0; i < n; i++)
        p[i] += v;
}
#endif

/* Likewise ST_KERNEL_ADD_INTO for ST_PTX_ADD_INTO.  add_into(dst, src, n): dst[i] += src[i]
 * for n 32-bit words. */
#ifdef ST_KERNEL_ADD_INTO
SIM_KERNEL void add_into(const sim_launch_t *l, void **params)
{
    uint32_t *dst = *(uint32_t **)params[0];
    const uint32_t *src = *(const uint32_t **)params[1];
    uint64_t n = *(uint64_t *)params[2];
    (void)l;
    sim_kernel_access(dst, n * 4, SIM_ACCESS_READWRITE);
    sim_kernel_access(src, n * 4, SIM_ACCESS_READ);
    for (uint64_t i = 0; i < n; i++)
        dst[i] += src[i];
}
#endif

/* The free memory cuMemGetInfo reports for the current context's device. */
static inline size_t st_free_mem(void)
{
    size_t f, t;
    CHECK_CU(cuMemGetInfo(&f, &t));
    return f;
}

/* Does the driver know p as allocated memory (its context attribute answers)? */
static inline int st_pointer_known(CUdeviceptr p)
{
    CUcontext c;
    return cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, p) == CUDA_SUCCESS;
}

/* One granule of device 0's memory (its size into *gran) made with cuMemCreate, mapped
 * read-write at a reserved range that is returned, and filled with 0x5a5a5a5a; its handle
 * into *mh. */
static inline CUdeviceptr st_vmm_filled(size_t *gran, CUmemGenericAllocationHandle *mh)
{
    CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                 .location = { CU_MEM_LOCATION_TYPE_DEVICE, 0 } };
    CUmemAccessDesc acc = { { CU_MEM_LOCATION_TYPE_DEVICE, 0 },
                            CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
    CUdeviceptr va;

    CHECK_CU(cuMemGetAllocationGranularity(gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CHECK_CU(cuMemCreate(mh, *gran, &prop, 0));
    CHECK_CU(cuMemAddressReserve(&va, *gran, 0, 0, 0));
    CHECK_CU(cuMemMap(va, *gran, 0, *mh, 0));
    CHECK_CU(cuMemSetAccess(va, *gran, &acc, 1));
    CHECK_CU(cuMemsetD32(va, 0x5a5a5a5a, *gran / 4));
    return va;
}

/* An executable graph of one kernel node: f on one block of one thread with args. */
static inline CUgraphExec st_kernel_graph(CUfunction f, void **args)
{
    CUDA_KERNEL_NODE_PARAMS kp = { .func = f, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                                   .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1,
                                   .kernelParams = args };
    CUgraph g;
    CUgraphNode node;
    CUgraphExec ge;

    CHECK_CU(cuGraphCreate(&g, 0));
    CHECK_CU(cuGraphAddKernelNode(&node, g, NULL, 0, &kp));
    CHECK_CU(cuGraphInstantiate(&ge, g, 0));
    CHECK_CU(cuGraphDestroy(g));
    return ge;
}

#endif /* SIMTEST_H */
