/* SPDX-License-Identifier: MIT */
/*
 * stream_destroy_pending.c - cuStreamDestroy on a stream that still has work queued returns
 * at once, and the work still runs to completion (the driver releases the stream's resources
 * once the device is done with it).  Lazy execution (ELIXIR_SIM_EXEC=lazy) keeps the work
 * queued until the host waits.
 */
#include "simchild.h"
#include "simtest.h"

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_SIM_EXEC=lazy", NULL };
    CUstream s;
    CUdeviceptr dev;
    CUevent done;
    unsigned host[256];

    st_reexec(argv, env);
    st_setup(0);
    CHECK_CU(cuMemAlloc(&dev, sizeof(host)));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuEventCreate(&done, CU_EVENT_DISABLE_TIMING));
    CHECK_CU(cuMemsetD32Async(dev, 0xabcd, 256, s));
    CHECK_CU(cuEventRecord(done, s));
    CHECK_CU(cuStreamDestroy(s));
    EXPECT_CU(CUDA_ERROR_NOT_READY, cuEventQuery(done));
    CHECK_CU(cuEventSynchronize(done));
    CHECK_CU(cuMemcpyDtoH(host, dev, sizeof(host)));
    for (int i = 0; i < 256; i++)
        EXPECT(host[i] == 0xabcd, "host[%d] = 0x%x, expected 0xabcd", i, host[i]);
    CHECK_CU(cuEventDestroy(done));
    CHECK_CU(cuMemFree(dev));
    return 0;
}
