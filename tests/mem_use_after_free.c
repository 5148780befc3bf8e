/* SPDX-License-Identifier: MIT */
/*
 * mem_use_after_free.c - a kernel that writes to memory freed with cuMemFree faults: the
 * context reports CUDA_ERROR_ILLEGAL_ADDRESS and stays in that sticky error state, so every
 * later call on it (allocation, copy, launch, synchronisation, query) returns the error, as
 * on a GPU.  The fault is logged with its address and operation.  The faulting part runs in
 * a child process, forked before the driver is initialised.
 */
#include "memtest.h"
#include "simchild.h"

static void use_after_free(void *unused)
{
    CUdeviceptr d, live, x;
    CUstream s;
    unsigned v = 0;
    size_t f, t;

    st_setup(0);
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&live, 4096));
    CHECK_CU(cuMemAlloc(&d, 1 << 20));
    CHECK_CU(mt_fill_async(d, 16, 7, s));
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuMemFree(d));

    CHECK_CU(mt_fill_async(d, 16, 9, s));  /* enqueued: the fault comes when it runs */
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuStreamSynchronize(s));

    /* Sticky: the context is unusable from now on. */
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemAlloc(&x, 4096));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemcpyHtoD(live, &v, sizeof(v)));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemcpyDtoH(&v, live, sizeof(v)));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemsetD32(live, 0, 1));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, mt_fill_async(live, 1, 1, s));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuStreamSynchronize(s));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemGetInfo(&f, &t));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuMemFree(live));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
}

int main(void)
{
    static const char *const logged[] = { "illegal address", "mt_fill", NULL };
    st_child_t c;

    st_run_child(use_after_free, NULL, NULL, &c);
    st_child_expect(&c, 0, logged);
    st_child_free(&c);
    return 0;
}
