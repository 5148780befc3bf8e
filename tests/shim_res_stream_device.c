/* SPDX-License-Identifier: MIT */
/*
 * shim_res_stream_device.c - a launch on a stream concerns the stream's device, whichever
 * context is current, and a destroyed stream's handle, come back for another device's stream,
 * is taken for the new stream.
 *
 * cuda.h: a CUkernel launched on a stream runs in the stream's context (the current context
 * counts for the null stream only).  The shim resolves an ordinary stream to its device once
 * per thread and remembers it; a stream or context destroyed must retire what was remembered.
 *
 * Two simulated devices, a 4 MiB GPU budget each.  On device 1: stream s1, and buffers a, b
 * and c (2 MiB each, filled by kernel), which leave a on the host.  With device 0's context
 * current, sh_add (a CUkernel of a library) adds 10 to a on s1: device 1 must bring a back
 * into its GPU memory (which pages b out); a memset and a copy on s1 fill c's halves.  Then,
 * still on device 0, a launch on stream s0 of device 0 (one the driver refuses, of no blocks,
 * so that nothing keeps s0 alive), and s0 destroyed; on device 1, streams are created until
 * one gets s0's handle back (the simulator hands out the last one freed), and sh_add adds 20
 * to b there (device 0 current again): b must come back into device 1's memory too.  Under the
 * shim, where each buffer lives is checked at each step; the values are printed, and the
 * transcript must equal the one without the shim, with evicted chunks mapped (host VMM) and
 * unmapped (ELIXIR_SIM_HOST_VMM=0), and with the race checker failing the run on any race.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define BYTES (2 * SH_MIB)
#define WORDS (BYTES / 4)
#define TRIES 16

static uint32_t host[WORDS];

static void add(CUfunction f, CUstream s, CUdeviceptr p, uint32_t v)
{
    uint64_t n = WORDS;
    void *args[] = { &p, &n, &v };

    CHECK_CU(sh_launch(f, s, args));
    CHECK_CU(cuStreamSynchronize(s));
}

static void print_words(CUdeviceptr p, uint32_t seed, const char *what)
{
    uint64_t wrong = 0;

    CHECK_CU(cuMemcpyDtoH(host, p, BYTES));
    for (uint64_t i = 0; i < WORDS; i++)
        wrong += host[i] - sh_pattern(seed, i) != host[0] - sh_pattern(seed, 0);
    printf("%s: pattern %u + %u, %llu words otherwise\n", what, seed,
           host[0] - sh_pattern(seed, 0), (unsigned long long)wrong);
}

static void scenario(void)
{
    CUdeviceptr a, b, c;
    uint64_t words = WORDS;
    uint32_t v = 1;
    void *args[] = { &a, &words, &v };
    CUstream s1, s0, made[TRIES];
    CUlibrary lib;
    CUkernel kadd;
    int n = 0;

    CUcontext c1 = st_setup(1);
    CUfunction fill1 = st_function(sh_res_ptx, "sh_fill");
    CHECK_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&a, BYTES));
    CHECK_CU(sh_fill_async(fill1, a, WORDS, 1, NULL));
    CHECK_CU(cuMemAlloc(&b, BYTES));
    CHECK_CU(sh_fill_async(fill1, b, WORDS, 2, NULL));
    CHECK_CU(cuMemAlloc(&c, BYTES));
    CHECK_CU(sh_fill_async(fill1, c, WORDS, 3, NULL));
    CHECK_CU(cuCtxSynchronize());
    sh_expect_where(a, 0, "a, paged out for c");

    CUcontext c0 = st_setup(0);
    CHECK_CU(cuLibraryLoadData(&lib, sh_res_ptx, NULL, NULL, 0, NULL, NULL, 0));
    CHECK_CU(cuLibraryGetKernel(&kadd, lib, "sh_add"));
    add((CUfunction)kadd, s1, a, 10);
    sh_expect_where(a, 1, "a, added to on device 1's stream with device 0 current");
    sh_expect_where(b, 0, "b, paged out for a");
    printf("a added to on device 1's stream, device 0 current\n");
    CHECK_CU(cuMemsetD32Async(c + BYTES / 2, 7, WORDS / 2, s1));
    CHECK_CU(cuMemcpyDtoDAsync(c, a, BYTES / 4, s1));
    CHECK_CU(cuStreamSynchronize(s1));
    printf("c set and copied into on device 1's stream, device 0 current\n");

    CHECK_CU(cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING));
    CUresult r = cuLaunchKernel((CUfunction)kadd, 0, 1, 1, 1, 1, 1, 0, s0, args, NULL);
    EXPECT(r == CUDA_ERROR_INVALID_VALUE, "a launch of no blocks on s0 returned %d", (int)r);
    CHECK_CU(cuStreamDestroy(s0));
    CHECK_CU(cuCtxSetCurrent(c1));
    do
        CHECK_CU(cuStreamCreate(&made[n], CU_STREAM_NON_BLOCKING));
    while (made[n++] != s0 && n < TRIES);
    EXPECT(made[n - 1] == s0, "no stream of device 1 got device 0's destroyed stream's handle "
           "back in %d tries: the test needs the simulator to reuse it", TRIES);
    CHECK_CU(cuCtxSetCurrent(c0));
    add((CUfunction)kadd, made[n - 1], b, 20);
    sh_expect_where(b, 1, "b, added to on a new device-1 stream with a destroyed one's handle");
    printf("b added to on a device-1 stream with a destroyed device-0 stream's handle\n");

    CHECK_CU(cuCtxSetCurrent(c1));
    print_words(a, 1, "a");
    print_words(b, 2, "b");
    print_words(c, 3, "c");
    while (n > 0)
        CHECK_CU(cuStreamDestroy(made[--n]));
    CHECK_CU(cuStreamDestroy(s1));
    CHECK_CU(cuLibraryUnload(lib));
    CHECK_CU(cuMemFree(a));
    CHECK_CU(cuMemFree(b));
    CHECK_CU(cuMemFree(c));
}

static void run(const char *what, const char *host_vmm)
{
    sh_run_t plain, shim;

    sh_run_two_devices(host_vmm, "ELIXIR_GPU_MEMORY=4M", &plain, &shim);
    sh_same_transcript(what, &plain, &shim);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
