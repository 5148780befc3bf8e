/* SPDX-License-Identifier: MIT */
/*
 * simtest.h - helpers for the C tests: checking macros that print what was expected and what
 * came back, context set-up, and the attribute that makes a test's host kernels visible to
 * the simulator (test programs are linked with -rdynamic).
 */
#ifndef SIMTEST_H
#define SIMTEST_H

#include <cuda.h>
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

#endif /* SIMTEST_H */
