/* SPDX-License-Identifier: MIT */
/*
 * peer_access.c - cuCtxEnablePeerAccess and cuCtxDisablePeerAccess, and what they allow.  On a
 * two-device machine (ELIXIR_SIM_DEVICES=2; the test re-executes itself): the calls' errors (no
 * current context, the current context as its own peer, a destroyed peer, which is
 * CUDA_ERROR_CONTEXT_IS_DESTROYED as on the real driver, flags, a second enable, a disable of
 * access never enabled); a kernel on device 0 that writes device 1's
 * cuMemAlloc memory once peer access is enabled (the words land there), and again after it was
 * disabled (CUDA_ERROR_ILLEGAL_ADDRESS: device 0's context is lost, device 1's carries on);
 * copies between the two devices, which need no peer access.  The same holds for a pointer a
 * kernel loads from memory: add_via, given only device 0's memory holding p1's address,
 * adds to p1 with peer access, and faults in a context of device 0 without it.
 */
#define ST_KERNEL_ADD_VIA
#include "memtest.h"
#include "simchild.h"

#define WORDS 1024

/* In the current context: store p's address in device memory and launch add_via on it. */
static CUresult add_via_launch(CUdeviceptr p, uint32_t v, CUdeviceptr *holder)
{
    uint64_t n = WORDS;
    CHECK_CU(cuMemAlloc(holder, 8));
    CHECK_CU(cuMemcpyHtoD(*holder, &p, 8));
    void *args[] = { holder, &n, &v };
    return cuLaunchKernel(st_function(ST_PTX_HEADER ST_PTX_ADD_VIA, "add_via"), 1, 1, 1, 1, 1,
                          1, 0, NULL, args, NULL);
}

static void peers(void *unused)
{
    (void)unused;
    CUcontext c0 = st_setup(0), c1, other;
    CUdeviceptr p1, p0, holder;
    CHECK_CU(cuDevicePrimaryCtxRetain(&c1, 1));
    CHECK_CU(cuCtxSetCurrent(c1));
    CHECK_CU(cuMemAlloc(&p1, WORDS * 4));
    CHECK_CU(cuMemsetD32(p1, 0x11, WORDS));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuCtxCreate(&other, NULL, 0, 1));
    CHECK_CU(cuCtxDestroy(other));              /* popped: c1 is current again */
    CHECK_CU(cuCtxSetCurrent(NULL));            /* and now none is */
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxEnablePeerAccess(c0, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxDisablePeerAccess(c0));
    CHECK_CU(cuCtxSetCurrent(c0));
    CHECK_CU(cuMemAlloc(&p0, WORDS * 4));

    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxEnablePeerAccess(c0, 0));
    EXPECT_CU(CUDA_ERROR_CONTEXT_IS_DESTROYED, cuCtxEnablePeerAccess(other, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_CONTEXT, cuCtxEnablePeerAccess(NULL, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuCtxEnablePeerAccess(c1, 1));
    EXPECT_CU(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, cuCtxDisablePeerAccess(c1));
    CHECK_CU(cuCtxEnablePeerAccess(c1, 0));
    EXPECT_CU(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, cuCtxEnablePeerAccess(c1, 0));

    CHECK_CU(mt_fill_async(p1, WORDS, 0x22, NULL));     /* device 0 writes device 1's memory */
    CHECK_CU(cuCtxSynchronize());
    mt_expect_words(p1, WORDS, 0x22);
    CHECK_CU(cuMemcpyDtoD(p0, p1, WORDS * 4));          /* copies: with or without access */
    mt_expect_words(p0, WORDS, 0x22);
    CHECK_CU(add_via_launch(p1, 5, &holder));           /* a pointer loaded from memory */
    CHECK_CU(cuCtxSynchronize());
    mt_expect_words(p1, WORDS, 0x27);

    CHECK_CU(cuCtxDisablePeerAccess(c1));
    EXPECT_CU(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, cuCtxDisablePeerAccess(c1));
    CHECK_CU(cuMemsetD32(p0, 0x33, WORDS));
    CHECK_CU(cuMemcpyDtoD(p1, p0, WORDS * 4));
    CHECK_CU(cuCtxSynchronize());
    mt_expect_words(p1, WORDS, 0x33);
    CHECK_CU(mt_fill_async(p1, WORDS, 0x44, NULL));     /* no access any more: faults */
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());

    CHECK_CU(cuCtxCreate(&other, NULL, 0, 0));          /* device 0, no peer access */
    CHECK_CU(add_via_launch(p1, 0x66, &holder));
    EXPECT_CU(CUDA_ERROR_ILLEGAL_ADDRESS, cuCtxSynchronize());
    CHECK_CU(cuCtxDestroy(other));

    CHECK_CU(cuCtxSetCurrent(c1));                      /* device 1 carries on */
    mt_expect_words(p1, WORDS, 0x33);
    CHECK_CU(mt_fill_async(p1, WORDS, 0x55, NULL));
    CHECK_CU(cuCtxSynchronize());
    mt_expect_words(p1, WORDS, 0x55);
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_SIM_DEVICES=2", NULL };
    static const char *const logged[] = { "illegal address", "device 0", NULL };
    st_child_t c;

    (void)argc;
    st_reexec(argv, env);
    st_run_child(peers, NULL, NULL, &c);
    st_child_expect(&c, 0, logged);
    st_child_free(&c);
    printf("peer access: errors, kernels reaching a peer's memory (through an argument and "
           "through memory) with it and without it\n");
    return 0;
}
