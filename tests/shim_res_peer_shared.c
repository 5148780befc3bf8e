/* SPDX-License-Identifier: MIT */
/*
 * shim_res_peer_shared.c - two devices' operations reach a third device's memory at once:
 * each device's access, given for its own operation, is taken back once that operation is
 * done, whatever the other device's operation still holds.
 *
 * Three simulated devices.  On device 2, buffer z (2 MiB, filled by kernel).  Device 1
 * enqueues on a stream of its own a kernel that spins SPIN_MS milliseconds and adds 1 to its
 * buffer w1 (sh_slow_add), then a cuMemcpyPeerAsync from z into w1.  Device 0 then copies z
 * into w0 with cuMemcpyPeerAsync on a stream of its own and synchronises that stream, while
 * device 1's copy still waits behind the kernel: under the shim, device 0 must have no
 * access to z any longer (z is still held, but only for device 1).  Once device 1's stream
 * is synchronised, device 1 has none either.  Both copies hold z's pattern, and the
 * transcript must equal the one without the shim, with evicted chunks mapped (host VMM) and
 * unmapped (ELIXIR_SIM_HOST_VMM=0).
 */
#define SH_RES_KERNELS

#include "shim_test.h"

#define BYTES (2 * SH_MIB)
#define WORDS (BYTES / 4)
#define SPIN_MS 300

static uint32_t host[WORDS];

/* Buffer p of the current context's device holds z's pattern. */
static void expect_copy(CUdeviceptr p, const char *what)
{
    CHECK_CU(cuMemcpyDtoH(host, p, BYTES));
    sh_expect_pattern(host, WORDS, 7, what);
    printf("%s holds z's pattern\n", what);
}

static void scenario(void)
{
    CUdeviceptr z, w0, w1;
    CUstream s0, s1;

    CUcontext c2 = st_setup(2);
    CHECK_CU(cuMemAlloc(&z, BYTES));
    CHECK_CU(sh_fill_async(st_function(sh_res_ptx, "sh_fill"), z, WORDS, 7, NULL));
    CHECK_CU(cuCtxSynchronize());

    CUcontext c1 = st_setup(1);
    CHECK_CU(cuMemAlloc(&w1, BYTES));
    CHECK_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CUfunction slow = st_function(sh_res_ptx, "sh_slow_add");
    CHECK_CU(sh_slow_add_async(slow, w1, WORDS, SPIN_MS, s1));
    CHECK_CU(cuMemcpyPeerAsync(w1, c1, z, c2, BYTES, s1));
    printf("device 1 copies z behind a kernel that spins\n");

    CUcontext c0 = st_setup(0);
    CHECK_CU(cuMemAlloc(&w0, BYTES));
    CHECK_CU(cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemcpyPeerAsync(w0, c0, z, c2, BYTES, s0));
    CHECK_CU(cuStreamSynchronize(s0));
    if (cuStreamQuery(s1) != CUDA_ERROR_NOT_READY)
        fprintf(stderr, "note: device 1's copy was done already: the access check below "
                        "cannot tell the devices' holds apart\n");
    sh_expect_no_access(z, 0, "z, while device 1's copy still holds it");
    printf("device 0 copied z\n");
    expect_copy(w0, "w0");

    CHECK_CU(cuCtxSetCurrent(c1));
    CHECK_CU(cuStreamSynchronize(s1));
    sh_expect_no_access(z, 1, "z, once device 1's copy is done");
    printf("device 1 copied z\n");
    expect_copy(w1, "w1");

    CHECK_CU(cuStreamDestroy(s1));
    CHECK_CU(cuMemFree(w1));
    CHECK_CU(cuCtxSetCurrent(c0));
    CHECK_CU(cuStreamDestroy(s0));
    CHECK_CU(cuMemFree(w0));
    CHECK_CU(cuCtxSetCurrent(c2));
    CHECK_CU(cuMemFree(z));
}

static void run(const char *what, const char *host_vmm)
{
    sh_run_t plain, shim;

    sh_run_devices("ELIXIR_SIM_DEVICES=3", host_vmm, "ELIXIR_GPU_MEMORY=8M", &plain, &shim);
    sh_same_transcript(what, &plain, &shim);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
