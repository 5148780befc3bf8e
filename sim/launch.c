/* SPDX-License-Identifier: MIT */
/*
 * launch.c - kernel launches: cuLaunchKernel, cuLaunchKernelEx, cuLaunchCooperativeKernel.
 *
 * Arguments are packed at launch into a private buffer laid out as the PTX .param list says,
 * from either kernelParams (one pointer per parameter) or the `extra` buffer form, so the
 * caller may reuse its argument storage as soon as the call returns.  The host kernel gets
 * params[i] pointing at parameter i inside that buffer.
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

typedef struct launch_req {
    CUfunction f;
    unsigned grid[3], block[3];
    unsigned shared;
    CUstream stream;
    void **params;
    void **extra;
    int ptds;
} launch_req_t;

/* The `extra` array: find the buffer pointer and size; -1 when malformed. */
static int parse_extra(void **extra, void **buf, size_t *size)
{
    *buf = NULL;
    *size = 0;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
        if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
            *buf = extra[i + 1];
        else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
            *size = *(size_t *)extra[i + 1];
        else
            return -1;
        if (i > 64)
            return -1;
    }
    return *buf && *size ? 0 : -1;
}

static CUresult pack_args(void **params, void **extra, const sim_ptx_entry_t *e,
                          sim_kernel_op_t *k)
{
    k->args_size = e->args_size;
    k->params_end = e->params_end;
    k->args = calloc(1, e->args_size ? e->args_size : 1);
    k->params = calloc(e->nparams ? e->nparams : 1, sizeof(void *));
    if (!k->args || !k->params)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (extra) {
        void *buf;
        size_t size;
        if (params || parse_extra(extra, &buf, &size) < 0 || size < k->params_end)
            return CUDA_ERROR_INVALID_VALUE;
        /* The size must be the parameters' own, without the tail padding a struct would
         * have: "Passing arguments of the wrong size ... is equivalent to passing too many
         * arguments" (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, what the real driver returns). */
        if (size > k->params_end)
            return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
        memcpy(k->args, buf, k->params_end);
    } else if (e->nparams) {
        if (!params)
            return CUDA_ERROR_INVALID_VALUE;
        for (uint32_t i = 0; i < e->nparams; i++) {
            if (!params[i])
                return CUDA_ERROR_INVALID_VALUE;
            memcpy(k->args + e->params[i].offset, params[i], e->params[i].size);
        }
    }
    for (uint32_t i = 0; i < e->nparams; i++)
        k->params[i] = k->args + e->params[i].offset;
    return CUDA_SUCCESS;
}

/* The launch shape against the device's limits, and the dynamic shared memory against the
 * function's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES ("If the user-specified dynamic
 * shared memory size is larger than this value, the launch will fail"). */
static CUresult check_dims(const unsigned grid[3], const unsigned block[3], unsigned shared,
                           const struct CUfunc_st *fn)
{
    static const unsigned gmax[3] = { 2147483647u, 65535u, 65535u };
    static const unsigned bmax[3] = { 1024u, 1024u, 64u };
    unsigned long long threads = 1;
    for (int i = 0; i < 3; i++) {
        if (grid[i] == 0 || block[i] == 0 || grid[i] > gmax[i] || block[i] > bmax[i])
            return CUDA_ERROR_INVALID_VALUE;
        threads *= block[i];
    }
    if (threads > 1024 || shared > (unsigned)fn->attrs->max_dyn_shared)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

CUresult sim_kernel_op_build(struct CUfunc_st *fn, const sim_launch_t *cfg, void **params,
                             void **extra, sim_op_t **out)
{
    CUresult r = check_dims(cfg->grid, cfg->block, cfg->shared_bytes, fn);
    if (r != CUDA_SUCCESS)
        return r;
    sim_op_t *op = sim_op_new(SIM_OP_KERNEL);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    sim_kernel_op_t *k = &op->u.kernel;
    r = pack_args(params, extra, fn->entry, k);
    if (r != CUDA_SUCCESS) {
        sim_op_discard(op);
        return r;
    }
    k->func = fn;
    k->fn = fn->fn;
    k->launch = *cfg;
    k->launch.name = fn->entry->name;
    *out = op;
    return CUDA_SUCCESS;
}

static CUresult launch(const launch_req_t *q)
{
    struct CUfunc_st *fn;
    CUstream s;
    sim_op_t *op;
    CUresult r = sim_func_resolve(q->f, &fn);
    if (r == CUDA_SUCCESS)
        r = sim_stream_resolve(q->stream, q->ptds, &s);
    if (r != CUDA_SUCCESS)
        return r;
    sim_launch_t cfg = { { q->grid[0], q->grid[1], q->grid[2] },
                         { q->block[0], q->block[1], q->block[2] },
                         q->shared, s->ctx->device, q->stream, NULL };
    r = sim_kernel_op_build(fn, &cfg, q->params, q->extra, &op);
    return r == CUDA_SUCCESS ? sim_submit(s, op, NULL) : r;
}

#define LAUNCH_ARGS                                                                           \
    CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,         \
        unsigned int by, unsigned int bz, unsigned int shared, CUstream h

SIM_API CUresult CUDAAPI cuLaunchKernel(LAUNCH_ARGS, void **kernelParams, void **extra)
{
    launch_req_t q = { f, { gx, gy, gz }, { bx, by, bz }, shared, h, kernelParams, extra, 0 };
    return launch(&q);
}

SIM_API CUresult CUDAAPI cuLaunchKernel_ptsz(LAUNCH_ARGS, void **kernelParams, void **extra)
{
    launch_req_t q = { f, { gx, gy, gz }, { bx, by, bz }, shared, h, kernelParams, extra, 1 };
    return launch(&q);
}

SIM_API CUresult CUDAAPI cuLaunchCooperativeKernel(LAUNCH_ARGS, void **kernelParams)
{
    launch_req_t q = { f, { gx, gy, gz }, { bx, by, bz }, shared, h, kernelParams, NULL, 0 };
    return launch(&q);
}

SIM_API CUresult CUDAAPI cuLaunchCooperativeKernel_ptsz(LAUNCH_ARGS, void **kernelParams)
{
    launch_req_t q = { f, { gx, gy, gz }, { bx, by, bz }, shared, h, kernelParams, NULL, 1 };
    return launch(&q);
}

static CUresult launch_ex(const CUlaunchConfig *c, CUfunction f, void **params, void **extra,
                          int ptds)
{
    if (!c || (c->numAttrs && !c->attrs))
        return CUDA_ERROR_INVALID_VALUE;
    launch_req_t q = { f, { c->gridDimX, c->gridDimY, c->gridDimZ },
                       { c->blockDimX, c->blockDimY, c->blockDimZ }, c->sharedMemBytes,
                       c->hStream, params, extra, ptds };
    return launch(&q);
}

SIM_API CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                          void **kernelParams, void **extra)
{
    return launch_ex(config, f, kernelParams, extra, 0);
}

SIM_API CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f,
                                               void **kernelParams, void **extra)
{
    return launch_ex(config, f, kernelParams, extra, 1);
}
