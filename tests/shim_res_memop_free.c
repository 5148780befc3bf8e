/* SPDX-License-Identifier: MIT */
/*
 * shim_res_memop_free.c - cuMemFree of memory whose word a pending stream memory wait names,
 * while another thread is about to release the wait.
 *
 * The driver's cuMemFree waits for the device's work, so the free returns once the other
 * thread's write (submitted 50 ms later, on another stream) has released the wait.  Under
 * libelixir.so (4 MiB GPU budget) the free must do no worse: not hang, the same transcript.
 */
#define SH_RES_KERNELS
#include <pthread.h>
#include <unistd.h>

#include "shim_test.h"

#define BYTES (2 * SH_MIB)

static CUcontext ctx;
static CUdeviceptr x;
static CUstream sr;
static CUresult released;

static void *release(void *arg)
{
    (void)arg;
    usleep(50000);
    if ((released = cuCtxSetCurrent(ctx)) == CUDA_SUCCESS)
        released = cuStreamWriteValue32(sr, x + 256, 1, 0);
    return NULL;
}

static void scenario(void)
{
    CUfunction fill, verify;
    CUdeviceptr bad, y;
    CUstream sw;
    pthread_t t;

    sh_res_start(&fill, &verify, &bad);
    CHECK_CU(cuCtxGetCurrent(&ctx));
    CHECK_CU(cuMemAlloc(&x, BYTES));
    CHECK_CU(cuMemAlloc(&y, BYTES));
    CHECK_CU(cuMemsetD32(x, 0, BYTES / 4));
    CHECK_CU(cuMemsetD32(y, 0, BYTES / 4));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuStreamCreate(&sw, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&sr, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamWaitValue32(sw, x + 256, 1, CU_STREAM_WAIT_VALUE_EQ));
    CHECK_CU(cuMemsetD32Async(y, 5, 1, sw));
    pthread_create(&t, NULL, release, NULL);
    CHECK_CU(cuMemFree(x));
    printf("x freed\n");
    pthread_join(t, NULL);
    CHECK_CU(released);
    CHECK_CU(cuStreamSynchronize(sw));
    unsigned got = 0;
    CHECK_CU(cuMemcpyDtoH(&got, y, 4));
    printf("y[0] %u\n", got);
    CHECK_CU(cuMemFree(y));
}

static void run(const char *what, const char *host_vmm)
{
    sh_run_t plain, shim;

    sh_run_devices("ELIXIR_SIM_DEVICES=1", host_vmm, "ELIXIR_GPU_MEMORY=4M", &plain, &shim);
    sh_same_transcript(what, &plain, &shim);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
