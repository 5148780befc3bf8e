/* SPDX-License-Identifier: MIT */
/*
 * shim_res_fast_use.c - a launch that takes the shim's fast path (every chunk it reaches in
 * GPU memory, its kernel's layout known, its stream the last one used) records its use: an
 * eviction that follows waits for it.
 *
 * One device, a 4 MiB GPU budget (two chunks).  Buffers A and Z (2 MiB each) are filled, then
 * a kernel adds 1 to every word of A, on the same stream: the kernel's layout is now cached
 * and A's last use is on that stream, so the next launch of the same kernel on A takes the
 * fast path.  Z is freed first, which makes the shim record an event on the stream behind
 * the kernel: a use of A left at that kernel would read as done.  The next launch spins a
 * while before it adds 1 again; right after it returns, buffers B and C (2 MiB each) are
 * allocated, and C needs A's chunk: the eviction must wait for the kernel (the race checker
 * fails the run on a copy of A unordered with the kernel's writes, and A would miss its
 * second 1).  A must hold its pattern plus 2
 * and be out of GPU memory.  The transcript must equal the one without the shim, with evicted
 * chunks mapped (host VMM) and unmapped (ELIXIR_SIM_HOST_VMM=0).
 */
#define SH_RES_KERNELS

#include "shim_test.h"

#define BYTES (2 * SH_MIB)
#define WORDS (BYTES / 4)
#define SPIN_MS 150

static uint32_t host[WORDS];

static void scenario(void)
{
    CUdeviceptr az[2], bc[2];
    CUstream s;

    st_setup(0);
    CUfunction fill = st_function(sh_res_ptx, "sh_fill");
    CUfunction slow = st_function(sh_res_ptx, "sh_slow_add");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    sh_alloc_filled(fill, az, 2, BYTES, 1, s);
    CUdeviceptr a = az[0];
    CHECK_CU(sh_slow_add_async(slow, a, WORDS, 1, s));
    CHECK_CU(cuMemFree(az[1]));

    CHECK_CU(sh_slow_add_async(slow, a, WORDS, SPIN_MS, s));
    CUresult q = cuStreamQuery(s);
    EXPECT(q == CUDA_SUCCESS || q == CUDA_ERROR_NOT_READY, "cuStreamQuery: %s", st_err(q));
    printf("a: the stream %s after the second launch\n",
           q == CUDA_ERROR_NOT_READY ? "is busy" : "is idle");
    for (int i = 0; i < 2; i++)
        CHECK_CU(cuMemAlloc(&bc[i], BYTES));
    printf("b and c allocated while the kernel may still use a\n");
    sh_expect_where(a, 0, "a, paged out for c once the kernel was done");

    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuMemcpyDtoH(host, a, BYTES));
    sh_expect_pattern_plus(host, WORDS, 1, 2, "a");
    printf("a holds pattern 1 + 2\n");
    for (int i = 0; i < 2; i++)
        CHECK_CU(cuMemFree(bc[i]));
    CHECK_CU(cuMemFree(a));
    CHECK_CU(cuStreamDestroy(s));
}

static void run(const char *what, const char *host_vmm)
{
    sh_run_t plain, shim;

    sh_run_devices("ELIXIR_SIM_DEVICES=1", host_vmm, "ELIXIR_GPU_MEMORY=4M", &plain, &shim);
    EXPECT(sh_migrations_out(shim.err, 0) >= 1,
           "%s: a was not paged out for c:\n%s", what, shim.err);
    sh_same_transcript(what, &plain, &shim);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
