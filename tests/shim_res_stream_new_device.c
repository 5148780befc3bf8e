/* SPDX-License-Identifier: MIT */
/*
 * shim_res_stream_new_device.c - a copy or memset on a stream of a device that has allocated
 * nothing yet (so the shim has no arena there) concerns that device, not the current
 * context's: it reaches the current device's memory as another device's.
 *
 * Two simulated devices.  With device 0's primary context current the scenario allocates a
 * 4 MiB buffer p and fills it (cuMemsetD32 on the legacy stream, then synchronised).  It
 * creates stream s1 in device 1's primary context, where nothing is allocated, and, device 0
 * current again, copies p to the host on s1 (cuMemcpyDtoHAsync), copies host data into p's
 * second half on s1 (cuMemcpyHtoDAsync) and p's first half over its second half on s1
 * (cuMemcpyDtoDAsync), each followed by a synchronisation of s1 and checked.  Under the shim
 * p lies in device 0's arena, mapped for device 0 only unless an operation of device 1 is
 * given access.  The transcript must equal the one without the shim, where evicted chunks
 * stay mapped and where they are unmapped, with the race checker failing the run on any race.
 */
#include "shim_test.h"
#include "simtest.h"

#define MIB (1ull << 20)
#define BYTES (4 * MIB)
#define WORDS (BYTES / 4)

static uint32_t host[WORDS], in[WORDS / 2];

/* Print how many words of p's host copy differ from `first` (first half) and `second`. */
static void show(const char *what, uint32_t first, uint32_t second)
{
    size_t wrong = 0;
    for (size_t i = 0; i < WORDS; i++)
        wrong += host[i] != (i < WORDS / 2 ? first : second);
    printf("%-44s %zu words differ\n", what, wrong);
}

static void scenario(void)
{
    CUcontext ctx1, popped;
    CUstream s1;
    CUdeviceptr p;

    st_setup(0);
    CHECK_CU(cuMemAlloc(&p, BYTES));
    CHECK_CU(cuMemsetD32(p, 0x0a0a0a0au, WORDS));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx1, 1));
    CHECK_CU(cuCtxPushCurrent(ctx1));
    CHECK_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuCtxPopCurrent(&popped));

    CHECK_CU(cuMemcpyDtoHAsync(host, p, BYTES, s1));
    CHECK_CU(cuStreamSynchronize(s1));
    show("device 0's memory to the host on s1", 0x0a0a0a0au, 0x0a0a0a0au);
    for (size_t i = 0; i < WORDS / 2; i++)
        in[i] = 0x0b0b0b0bu;
    CHECK_CU(cuMemcpyHtoDAsync(p + BYTES / 2, in, BYTES / 2, s1));
    CHECK_CU(cuStreamSynchronize(s1));
    CHECK_CU(cuMemcpyDtoH(host, p, BYTES));
    show("the host into device 0's memory on s1", 0x0a0a0a0au, 0x0b0b0b0bu);
    CHECK_CU(cuMemcpyDtoDAsync(p + BYTES / 2, p, BYTES / 2, s1));
    CHECK_CU(cuStreamSynchronize(s1));
    CHECK_CU(cuMemcpyDtoH(host, p, BYTES));
    show("device 0's memory within itself on s1", 0x0a0a0a0au, 0x0a0a0a0au);

    CHECK_CU(cuStreamDestroy(s1));
    CHECK_CU(cuDevicePrimaryCtxRelease(1));
    CHECK_CU(cuMemFree(p));
}

static void run(const char *what, const char *host_vmm)
{
    sh_run_t plain, shim;

    sh_run_two_devices(host_vmm, "ELIXIR_GPU_MEMORY=16M", &plain, &shim);
    sh_same_transcript(what, &plain, &shim);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
