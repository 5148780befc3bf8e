/* SPDX-License-Identifier: MIT */
/*
 * ctx_use_after_free.c - device memory is gone once cuMemFree returns: freeing it again is
 * CUDA_ERROR_INVALID_VALUE (no harm done), while reading it - with a synchronous copy, or
 * from a kernel - is an illegal address that leaves the context in the sticky error.  Each
 * faulting program runs in its own child process.
 */
#include "simchild.h"
#include "simtest.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry peek(.param .u64 out, .param .u64 in)\n{\n ret;\n}\n";

SIM_KERNEL void peek(const sim_launch_t *l, void **params)
{
    unsigned *out = *(unsigned **)params[0];
    const volatile unsigned *in = *(const unsigned **)params[1];
    out[0] = in[0];
}

static void copy_after_free(void *unused)
{
    CUdeviceptr d, other;
    unsigned host[16];

    st_setup(0);
    CHECK_CU(cuMemAlloc(&d, sizeof(host)));
    CHECK_CU(cuMemAlloc(&other, sizeof(host)));
    CHECK_CU(cuMemFree(d));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFree(d));
    CHECK_CU(cuMemcpyDtoH(host, other, sizeof(host)));    /* still healthy */
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemcpyDtoH(host, d, sizeof(host)));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemcpyDtoH(host, other, sizeof(host)));
}

static void kernel_after_free(void *unused)
{
    CUmodule mod;
    CUfunction f;
    CUdeviceptr in, out;

    st_setup(0);
    CHECK_CU(cuModuleLoadData(&mod, ptx));
    CHECK_CU(cuModuleGetFunction(&f, mod, "peek"));
    CHECK_CU(cuMemAlloc(&in, 64));
    CHECK_CU(cuMemAlloc(&out, 64));
    CHECK_CU(cuMemFree(in));
    void *args[] = { &out, &in };
    CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemFree(out));
    (void)cuModuleUnload(mod);     /* whatever it returns in the error state */
}

int main(void)
{
    static const char *const copy_log[] = { "illegal address", "memcpy", NULL };
    static const char *const kernel_log[] = { "illegal address", "peek", NULL };
    st_child_t c;

    st_run_child(copy_after_free, NULL, NULL, &c);
    st_child_expect(&c, 0, copy_log);
    st_child_free(&c);
    st_run_child(kernel_after_free, NULL, NULL, &c);
    st_child_expect(&c, 0, kernel_log);
    st_child_free(&c);
    return 0;
}
