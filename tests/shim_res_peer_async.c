/* SPDX-License-Identifier: MIT */
/*
 * shim_res_peer_async.c - an operation that reaches another device's arena stays asynchronous,
 * and that device waits for it wherever it must: before freeing the memory, and before
 * evicting it when memory runs short.
 *
 * Two simulated devices, a 2 MiB GPU budget each (one chunk).  On device 1, buffers X and Y
 * (2 MiB each, filled by kernel).  Device 0's context launches, on a stream of its own, a kernel
 * that spins a while and then adds 1 to every word of X through its peer pointer: right after
 * the launch returns, the stream must still be busy (as without the shim).  Then, on device 1,
 * X is freed at once: the free must wait for the kernel (which would fault on the memory taken
 * away, or the race checker fail the run on an unmap unordered with its writes).  The same
 * kernel then adds 1 to Y, and device 1 at once allocates and fills two more buffers, for
 * which Y's chunk must be evicted (under the shim it must be out of GPU memory then): the
 * eviction must wait for the kernel too, and Y must hold its pattern plus 1.  The transcript
 * must equal the one without the shim, with evicted chunks mapped (host VMM) and unmapped
 * (ELIXIR_SIM_HOST_VMM=0).
 */
#define SH_RES_KERNELS

#include "shim_test.h"

#define BYTES (2 * SH_MIB)
#define WORDS (BYTES / 4)
#define SPIN_MS 150

static uint32_t host[WORDS];

/* On device 0's stream s: slow_add over the whole buffer p (device 1's); says whether s was
 * still busy when the launch returned. */
static void slow_add_on(CUfunction f, CUstream s, CUdeviceptr p, const char *what)
{
    CHECK_CU(sh_slow_add_async(f, p, WORDS, SPIN_MS, s));
    CUresult q = cuStreamQuery(s);
    EXPECT(q == CUDA_SUCCESS || q == CUDA_ERROR_NOT_READY, "cuStreamQuery: %s", st_err(q));
    printf("%s: the stream %s after the launch\n", what,
           q == CUDA_ERROR_NOT_READY ? "is busy" : "is idle");
}

static void scenario(void)
{
    CUdeviceptr xy[2], more[2];
    CUstream s;

    CUcontext c1 = st_setup(1);
    CUfunction fill1 = st_function(sh_res_ptx, "sh_fill");
    sh_alloc_filled(fill1, xy, 2, BYTES, 1, NULL);
    CUdeviceptr x = xy[0], y = xy[1];
    CHECK_CU(cuCtxSynchronize());

    CUcontext c0 = st_setup(0);
    CHECK_CU(cuCtxEnablePeerAccess(c1, 0));
    CUfunction slow = st_function(sh_res_ptx, "sh_slow_add");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    slow_add_on(slow, s, x, "x");
    CHECK_CU(cuCtxSetCurrent(c1));
    CHECK_CU(cuMemFree(x));
    printf("x freed on device 1 while device 0's kernel may still use it\n");

    CHECK_CU(cuCtxSetCurrent(c0));
    slow_add_on(slow, s, y, "y");
    CHECK_CU(cuCtxSetCurrent(c1));
    sh_alloc_filled(fill1, more, 2, BYTES, 3, NULL);
    CHECK_CU(cuCtxSynchronize());
    sh_expect_where(y, 0, "y, paged out for the new buffers once device 0's kernel was done");
    printf("two more buffers on device 1 while device 0's kernel may still use y\n");
    CHECK_CU(cuCtxSetCurrent(c0));
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuStreamDestroy(s));

    CHECK_CU(cuCtxSetCurrent(c1));
    CHECK_CU(cuMemcpyDtoH(host, y, BYTES));
    sh_expect_pattern_plus(host, WORDS, 2, 1, "y");
    printf("y holds pattern 2 + 1\n");
    for (int i = 0; i < 2; i++) {
        CHECK_CU(cuMemcpyDtoH(host, more[i], BYTES));
        sh_expect_pattern(host, WORDS, 3 + (uint32_t)i, "a buffer allocated meanwhile");
        CHECK_CU(cuMemFree(more[i]));
    }
    CHECK_CU(cuMemFree(y));
}

static void run(const char *what, const char *host_vmm)
{
    sh_run_t plain, shim;

    sh_run_two_devices(host_vmm, "ELIXIR_GPU_MEMORY=2M", &plain, &shim);
    EXPECT(sh_migrations_out(shim.err, 1) >= 1,
           "%s: device 1 did not page y out for the new buffers:\n%s", what, shim.err);
    sh_same_transcript(what, &plain, &shim);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
