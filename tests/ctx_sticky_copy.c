/* SPDX-License-Identifier: MIT */
/*
 * ctx_sticky_copy.c - an asynchronous copy into a freed device pointer faults when it runs:
 * the call returns CUDA_SUCCESS, synchronising its stream returns CUDA_ERROR_ILLEGAL_ADDRESS,
 * and the context stays in that error for every later call on any stream.  The faulting
 * program runs in a child process (ELIXIR_SIM_EXEC=lazy, so the copy runs at the
 * synchronisation); the simulator logs the address and the operation.
 */
#include "simchild.h"
#include "simtest.h"

static void faulting_program(void *unused)
{
    CUstream s1, s2;
    CUdeviceptr freed, live;
    unsigned *pinned;

    st_setup(0);
    CHECK_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAllocHost((void **)&pinned, 4096));
    CHECK_CU(cuMemAlloc(&live, 4096));
    CHECK_CU(cuMemAlloc(&freed, 4096));
    CHECK_CU(cuMemFree(freed));

    CHECK_CU(cuMemcpyHtoDAsync(freed, pinned, 4096, s1));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuStreamSynchronize(s1));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuStreamSynchronize(s2));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemcpyHtoDAsync(live, pinned, 4096, s2));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemcpyDtoH(pinned, live, 4096));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemsetD8(live, 0, 16));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
    /* Release what the program holds; the results do not matter in the error state. */
    (void)cuStreamDestroy(s1);
    (void)cuStreamDestroy(s2);
    (void)cuMemFreeHost(pinned);
}

int main(void)
{
    static const char *const env[] = { "ELIXIR_SIM_EXEC=lazy", NULL };
    static const char *const logged[] = { "illegal address", "memcpy", NULL };
    st_child_t c;

    st_run_child(faulting_program, NULL, env, &c);
    st_child_expect(&c, 0, logged);
    st_child_free(&c);
    return 0;
}
