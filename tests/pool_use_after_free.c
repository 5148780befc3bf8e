/* SPDX-License-Identifier: MIT */
/*
 * pool_use_after_free.c - "the allocation must not be accessed after stream execution
 * reaches the free": a kernel later in the same stream (no host synchronisation needed), or
 * one issued after the free completed, faults with CUDA_ERROR_ILLEGAL_ADDRESS and the context
 * stays in that sticky error.  Each case runs in a child process.
 */
#include "memtest.h"
#include "simchild.h"

static void use_after_free_async(void *arg)
{
    int wait_first = *(int *)arg;
    CUdeviceptr d, live;
    CUstream s;

    st_setup(0);
    mt_function("mt_fill");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&live, 4096));
    CHECK_CU(cuMemAllocAsync(&d, MT_MIB, s));
    CHECK_CU(mt_fill_async(d, MT_MIB / 4, 1, s));
    CHECK_CU(cuMemFreeAsync(d, s));
    if (wait_first)
        CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(mt_fill_async(d, MT_MIB / 4, 2, s));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuStreamSynchronize(s));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemAllocAsync(&d, 4096, s));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemsetD8(live, 0, 1));
}

int main(void)
{
    static const char *const logged[] = { "illegal address", "mt_fill", NULL };
    static const int waits[] = { 0, 1 };
    st_child_t c;

    for (int i = 0; i < 2; i++) {
        st_run_child(use_after_free_async, (void *)&waits[i], NULL, &c);
        st_child_expect(&c, 0, logged);
        st_child_free(&c);
    }
    return 0;
}
