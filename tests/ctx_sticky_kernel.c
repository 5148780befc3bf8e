/* SPDX-License-Identifier: MIT */
/*
 * ctx_sticky_kernel.c - a kernel that writes through a freed pointer faults: the launch
 * returns CUDA_SUCCESS (the fault happens when the kernel runs), the next synchronising call
 * returns CUDA_ERROR_ILLEGAL_ADDRESS, and so does every call on the context after it, on
 * every stream, including work that was queued behind the kernel on other streams.  The
 * simulator logs the faulting address and the kernel's name.  The faulting program runs in a
 * child process with ELIXIR_SIM_EXEC=lazy, so the kernel runs exactly at the synchronisation.
 */
#include "simchild.h"
#include "simtest.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry scribble(.param .u64 p)\n{\n ret;\n}\n";

SIM_KERNEL void scribble(const sim_launch_t *l, void **params)
{
    volatile unsigned *p = *(unsigned **)params[0];
    p[0] = 0xdead;
}

static void faulting_program(void *unused)
{
    CUmodule mod;
    CUfunction f;
    CUstream other;
    CUevent ev;
    CUdeviceptr freed, live;
    unsigned host[4] = { 0 };

    st_setup(0);
    CHECK_CU(cuModuleLoadData(&mod, ptx));
    CHECK_CU(cuModuleGetFunction(&f, mod, "scribble"));
    CHECK_CU(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuEventCreate(&ev, CU_EVENT_DEFAULT));
    CHECK_CU(cuMemAlloc(&live, 4096));
    CHECK_CU(cuMemAlloc(&freed, 4096));
    CHECK_CU(cuMemFree(freed));

    void *args[] = { &freed };
    CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    CHECK_CU(cuMemsetD32Async(live, 1, 4, other));     /* queued behind it, another stream */
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());

    /* Sticky: every later call on the context fails the same way. */
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuStreamSynchronize(other));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuStreamQuery(other));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuStreamSynchronize(NULL));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemcpyDtoH(host, live, sizeof(host)));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemsetD32Async(live, 2, 4, other));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, other, args,
                                                         NULL));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuEventRecord(ev, other));
    CUdeviceptr more;
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemAlloc(&more, 256));
    CUstream another;
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuStreamCreate(&another, CU_STREAM_DEFAULT));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
    /* Release what the program holds; the results do not matter in the error state. */
    (void)cuEventDestroy(ev);
    (void)cuStreamDestroy(other);
    (void)cuModuleUnload(mod);
}

int main(void)
{
    static const char *const env[] = { "ELIXIR_SIM_EXEC=lazy", NULL };
    static const char *const logged[] = { "illegal address", "scribble", NULL };
    st_child_t c;

    st_run_child(faulting_program, NULL, env, &c);
    st_child_expect(&c, 0, logged);
    st_child_free(&c);
    return 0;
}
