/* SPDX-License-Identifier: MIT */
/*
 * shim_linked.c - a program linked with -lcuda, run with and without libelixir.so preloaded:
 * every hooked call it makes lands in the shim, and every result is the same.
 *
 * The scenario (allocations, a failed allocation, pitch allocation, memsets, copies in every
 * direction, synchronous and on a stream, the three launch forms, stream-ordered allocation,
 * pointer attributes, stream capture and a graph launch, the application's own VMM, bad
 * frees, memory information, stream and context teardown) prints one line per call with its
 * result, and digests of the data it reads back.  The test runs it in two children, without
 * and with the shim (ELIXIR_STATS=1), and compares the two transcripts line by line.  In the
 * preloaded child the scenario also checks, with elixir_shim_calls, that each hooked entry
 * point was entered exactly as often as it was called; the statistics printed at exit must
 * show the launches and copies.
 */
#include <string.h>

#include "shim_test.h"
#include "simtest.h"

#define N 4096
#define MAX_NAMES 64

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry scale(.param .u64 p, .param .u32 n, .param .f32 k)\n{\n ret;\n}\n";

SIM_KERNEL void scale(const sim_launch_t *l, void **params)
{
    float *p = *(float **)params[0];
    unsigned n = *(unsigned *)params[1];
    float k = *(float *)params[2];

    for (unsigned i = 0; i < n; i++)
        p[i] *= k;
    sim_kernel_access(p, n * sizeof(float), SIM_ACCESS_READWRITE);
}

/* How often the scenario called each hooked symbol. */
static struct {
    const char *name;
    int calls;
} called[MAX_NAMES];

static void note(const char *symbol)
{
    int i = 0;

    while (called[i].name && strcmp(called[i].name, symbol) != 0)
        i++;
    EXPECT(i < MAX_NAMES - 1, "too many symbols");
    called[i].name = symbol;
    called[i].calls++;
}

/* Call a hooked entry point (exported as `symbol`) and print its result. */
#define CALL(symbol, call)                                                                     \
    do {                                                                                       \
        note(symbol);                                                                          \
        printf("%-28s %s\n", symbol, st_err(call));                                           \
    } while (0)

static unsigned long digest(const void *p, size_t n)
{
    const unsigned char *b = p;
    unsigned long h = 5381;

    for (size_t i = 0; i < n; i++)
        h = h * 33 + b[i];
    return h;
}

static void print_device(const char *what, CUdeviceptr d, size_t n)
{
    static unsigned char host[N * sizeof(float)];

    CALL("cuMemcpyDtoH_v2", cuMemcpyDtoH(host, d, n));
    printf("%-28s %lu\n", what, digest(host, n));
}

/* Allocation, memsets, copies and the three launch forms on the legacy stream. */
static void compute(CUfunction f)
{
    static float host[N];
    CUdeviceptr a, b, big, bogus = 0x10;
    size_t pitch, free_b, total_b;
    unsigned n = N;
    float k = 3.0f;
    void *args[] = { &a, &n, &k };
    CUlaunchConfig cfg = { .gridDimX = 4, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 256,
                           .blockDimY = 1, .blockDimZ = 1 };

    for (int i = 0; i < N; i++)
        host[i] = (float)i;
    CALL("cuMemAlloc_v2", cuMemAlloc(&a, sizeof(host)));
    CALL("cuMemAlloc_v2", cuMemAlloc(&big, (size_t)1 << 50));
    CALL("cuMemAllocPitch_v2", cuMemAllocPitch(&b, &pitch, 1000, 8, 4));
    printf("%-28s %zu\n", "pitch", pitch);
    CALL("cuMemsetD2D8_v2", cuMemsetD2D8(b, pitch, 0x5a, 1000, 8));
    CALL("cuMemcpyHtoD_v2", cuMemcpyHtoD(a, host, sizeof(host)));
    CALL("cuLaunchKernel", cuLaunchKernel(f, 4, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
    CALL("cuLaunchKernelEx", cuLaunchKernelEx(&cfg, f, args, NULL));
    CALL("cuLaunchCooperativeKernel",
         cuLaunchCooperativeKernel(f, 4, 1, 1, 256, 1, 1, 0, NULL, args));
    print_device("a after 3 launches", a, sizeof(host));
    CALL("cuMemcpyDtoD_v2", cuMemcpyDtoD(b, a, 1000));
    CALL("cuMemsetD32_v2", cuMemsetD32(a, 0x3f800000u, N / 2));
    print_device("a after memset", a, sizeof(host));
    print_device("b after copy", b, pitch * 8);
    CALL("cuMemGetInfo_v2", cuMemGetInfo(&free_b, &total_b));
    /* The figures differ by design (the shim reports its virtual capacity): shim_meminfo. */
    printf("%-28s %d\n", "free <= total", free_b <= total_b);
    CALL("cuMemFree_v2", cuMemFree(bogus));
    CALL("cuMemFree_v2", cuMemFree(b));
    CALL("cuMemFree_v2", cuMemFree(b));
    CALL("cuMemFree_v2", cuMemFree(a));
}

/* Stream-ordered allocation, async copies and memsets, capture and a graph launch. */
static void streams(CUfunction f)
{
    static float host[N];
    CUstream s;
    CUdeviceptr d;
    CUgraph g;
    CUgraphExec ge;
    unsigned n = N, type = 0;
    float k = 0.5f;
    void *args[] = { &d, &n, &k };

    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CALL("cuMemAllocAsync", cuMemAllocAsync(&d, sizeof(host), s));
    CALL("cuMemsetD8Async", cuMemsetD8Async(d, 0x40, sizeof(host), s));
    CALL("cuPointerGetAttribute",
         cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d));
    printf("%-28s %u\n", "memory type", type);
    CALL("cuStreamBeginCapture_v2", cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CALL("cuLaunchKernel", cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
    CHECK_CU(cuStreamEndCapture(s, &g));
    CHECK_CU(cuGraphInstantiate(&ge, g, 0));
    CALL("cuGraphLaunch", cuGraphLaunch(ge, s));
    CALL("cuGraphLaunch", cuGraphLaunch(ge, s));
    CALL("cuMemcpyDtoHAsync_v2", cuMemcpyDtoHAsync(host, d, sizeof(host), s));
    CHECK_CU(cuStreamSynchronize(s));
    printf("%-28s %lu\n", "stream result", digest(host, sizeof(host)));
    CALL("cuMemFreeAsync", cuMemFreeAsync(d, s));
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuGraphExecDestroy(ge));
    CHECK_CU(cuGraphDestroy(g));
    CALL("cuStreamDestroy_v2", cuStreamDestroy(s));
}

/* The application's own virtual memory management, then a created context's teardown. */
static void vmm_and_teardown(CUcontext primary)
{
    CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                 .location = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 } };
    CUmemGenericAllocationHandle mh;
    CUdeviceptr va;
    size_t gran;
    CUcontext ctx;

    CHECK_CU(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CHECK_CU(cuMemAddressReserve(&va, gran, 0, 0, 0));
    CALL("cuMemCreate", cuMemCreate(&mh, gran, &prop, 0));
    CALL("cuMemMap", cuMemMap(va, gran, 0, mh, 0));
    CALL("cuMemUnmap", cuMemUnmap(va, gran / 2));
    CALL("cuMemUnmap", cuMemUnmap(va, gran));
    CALL("cuMemRelease", cuMemRelease(mh));
    CHECK_CU(cuMemAddressFree(va, gran));
    CHECK_CU(cuCtxCreate(&ctx, NULL, 0, 0));
    CALL("cuCtxDestroy_v2", cuCtxDestroy(ctx));
    CHECK_CU(cuCtxSetCurrent(primary));
}

/* With the shim preloaded: every hooked call above entered its wrapper exactly once. */
static void check_calls(void)
{
    if (sh_calls("cuMemAlloc_v2") == -2)
        return;
    for (int i = 0; called[i].name; i++)
        EXPECT(sh_calls(called[i].name) == called[i].calls, "%s entered %lld times, called %d",
               called[i].name, sh_calls(called[i].name), called[i].calls);
    EXPECT(sh_calls("cuMemcpyHtoDAsync_v2") == 0, "an entry point never called was counted");
}

static void scenario(void)
{
    CUcontext primary = st_setup(0);
    CUfunction f = st_function(ptx, "scale");

    compute(f);
    streams(f);
    vmm_and_teardown(primary);
    CALL("cuDevicePrimaryCtxRelease_v2", cuDevicePrimaryCtxRelease(0));
    check_calls();
}

int main(int argc, char **argv)
{
    static const char *const stats[] = { "ELIXIR_STATS=1", NULL };
    sh_run_t plain, shim;

    sh_scenario_child(argc, argv, scenario);
    plain = sh_run("scenario", 0, NULL);
    shim = sh_run("scenario", 1, stats);
    EXPECT(plain.status == 0, "the scenario without the shim exited %d:\n%s", plain.status,
           plain.err);
    EXPECT(shim.status == 0, "the scenario with the shim exited %d:\n%s", shim.status, shim.err);
    EXPECT(sh_count(plain.out, "\n") > 40, "a short transcript:\n%s", plain.out);
    sh_compare(plain.out, shim.out);
    EXPECT(strstr(shim.err, "elixir:   launch kernel") && strstr(shim.err, "copy dtoh") &&
               strstr(shim.err, "launch graph") && strstr(shim.err, "call cuMemAlloc_v2"),
           "statistics at exit:\n%s", shim.err);
    EXPECT(!strstr(plain.err, "elixir:"), "shim output without the shim:\n%s", plain.err);
    printf("%s", shim.out);
    sh_run_free(&plain);
    sh_run_free(&shim);
    return 0;
}
