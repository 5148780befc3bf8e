/* SPDX-License-Identifier: MIT */
/*
 * shim_res_ctx_destroy_slab.c - a context is destroyed with work in flight on its stream, its
 * small buffer sharing a slab chunk with another context's, and what stays behind is used
 * after the arena's own context went too.
 *
 * Context a (the arena's) makes a small buffer; context b, made next, makes a small buffer
 * (sub-allocated from the same slab chunk under the shim), a large one, a stream-ordered one
 * and another stream-ordered one that it frees with cuMemFreeAsync without waiting, fills
 * them under a 4 MiB GPU budget (chunks are evicted), and enqueues on its stream a slow
 * kernel that adds 1 to its large and stream-ordered buffers.  b is destroyed from a without
 * waiting: the driver waits for that kernel, b's small and large buffers go, and a's small
 * buffer, in the same slab chunk, must keep its contents.  The stream-ordered buffer stays
 * ("not associated with any CUDA context", cuda.h, cuCtxDestroy) with the kernel's result.
 * Then a, with no other context alive, is destroyed; in a new context c the stream-ordered
 * buffer must still hold it, and once it is freed cuMemGetInfo must report the free memory
 * of before.  The transcripts must match without and with the shim, evicted chunks mapped
 * and unmapped, and the shim's statistics must count no allocation left and no host memory
 * held at exit.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define MID (2 * SH_MIB)
#define SMALL 1000u

/* b's buffers, made, filled and a slow kernel enqueued on them; b destroyed from a. */
static CUdeviceptr b_goes(CUcontext a, CUdeviceptr *bsmall, CUdeviceptr *blarge)
{
    CUcontext b;
    CUstream s;
    CUdeviceptr async, freed;

    CHECK_CU(cuCtxCreate(&b, NULL, 0, 0));
    CUfunction fill = st_function(sh_res_ptx, "sh_fill");
    CUfunction slow = st_function(sh_res_ptx, "sh_slow_add");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(bsmall, SMALL));
    CHECK_CU(cuMemAlloc(blarge, 2 * MID));
    CHECK_CU(cuMemAllocAsync(&async, MID, s));
    CHECK_CU(cuMemAllocAsync(&freed, MID, s));
    CHECK_CU(sh_fill_async(fill, *bsmall, SMALL / 4, 2, s));
    CHECK_CU(sh_fill_async(fill, *blarge, 2 * MID / 4, 3, s));
    CHECK_CU(sh_fill_async(fill, freed, MID / 4, 4, s));
    CHECK_CU(sh_fill_async(fill, async, MID / 4, 5, s));
    CHECK_CU(cuMemFreeAsync(freed, s));
    CHECK_CU(sh_slow_add_async(slow, *blarge, 2 * MID / 4, 50, s));
    CHECK_CU(sh_slow_add_async(slow, async, MID / 4, 50, s));
    CHECK_CU(cuCtxSetCurrent(a));
    CHECK_CU(cuCtxDestroy(b));
    printf("b destroyed with its work in flight\n");
    return async;
}

static void scenario(void)
{
    CUcontext a, c;
    CUdeviceptr asmall, bsmall, blarge, async;

    CHECK_CU(cuInit(0));
    CHECK_CU(cuCtxCreate(&a, NULL, 0, 0));
    size_t before = st_free_mem();
    CUfunction fill = st_function(sh_res_ptx, "sh_fill");
    CHECK_CU(cuMemAlloc(&asmall, SMALL));
    CHECK_CU(sh_fill_async(fill, asmall, SMALL / 4, 1, NULL));
    async = b_goes(a, &bsmall, &blarge);
    printf("b's small buffer known %d, large known %d\n", st_pointer_known(bsmall),
           st_pointer_known(blarge));
    sh_expect_pattern_at("a's small buffer", asmall, SMALL / 4 * 4, 1, 0);
    sh_expect_pattern_at("b's stream-ordered buffer", async, MID, 5, 1);
    CHECK_CU(cuMemFree(asmall));
    CHECK_CU(cuCtxDestroy(a));
    printf("a destroyed\n");

    CHECK_CU(cuCtxCreate(&c, NULL, 0, 0));
    sh_expect_pattern_at("b's stream-ordered buffer in c", async, MID, 5, 1);
    CHECK_CU(cuMemFree(async));
    printf("free memory as before %d\n", st_free_mem() == before);
    CHECK_CU(cuCtxDestroy(c));
}

static void run(const char *what, const char *host_vmm)
{
    sh_paged_same(what, host_vmm, NULL, "allocations 0 live");
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
