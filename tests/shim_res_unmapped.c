/* SPDX-License-Identifier: MIT */
/*
 * shim_res_unmapped.c - on a device that cannot map host memory through VMM, evicted chunks
 * are unmapped, and every kind of operation that reaches one finds it mapped back with its
 * data; an operation the shim cannot see into pins everything resident.
 *
 * First, without the shim, ELIXIR_SIM_HOST_VMM=0 itself: both host VMM attributes read 0,
 * cuMemCreate and cuMemGetAllocationGranularity refuse HOST and HOST_NUMA locations with
 * CUDA_ERROR_NOT_SUPPORTED (HOST_NUMA_CURRENT stays CUDA_ERROR_INVALID_VALUE), and device
 * memory is created as before.
 *
 * Then, under libelixir.so with an 8 MiB GPU budget (four 2 MiB chunks), six 4 MiB buffers
 * are filled by kernels, so that most are evicted: their addresses are unmapped
 * (cuMemRetainAllocationHandle finds nothing there).  Each step takes a buffer that is
 * unmapped at that moment and reaches it with one kind of operation: cuMemcpyDtoH,
 * cuMemcpyDtoHAsync on a stream, cuMemsetD32, cuMemcpyHtoD, cuMemcpyDtoD (from an unmapped
 * buffer into another), and kernels; what each reads or writes is checked.  Then a kernel
 * whose arguments the shim cannot read (no parameter information) adds 1 to an unmapped
 * buffer through a pointer the shim never sees: before it runs every chunk is mapped back and
 * pinned, so it finds its data, and no buffer is ever unmapped again although two more
 * buffers are filled beyond the budget.  Of those, one is evicted; a captured graph that adds
 * 2 to it (a graph launch is another such operation) pins it too.  The statistics must show
 * the evictions, two pinning operations, and the race checker nothing.  The same again on a
 * device with host VMM under ELIXIR_HOST_VMM=0; and ELIXIR_HOST_VMM=1 on a device without host
 * VMM stops the program with exit status 1, naming the option.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define BUFS 6
#define BUF (4 * SH_MIB)
#define WORDS (BUF / 4)

static CUfunction fill, add, verify, hidden;
static CUdeviceptr buf[BUFS];
static uint32_t seed[BUFS];                 /* what each buffer holds: sh_pattern(seed, i) */
static uint32_t host_buf[WORDS];

/* The kernel without parameter information: it reaches memory through `hidden_ptr`, a
 * pointer the shim cannot see (as a kernel reading a pointer from a module global would). */
static const char hidden_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry hidden_add()\n{\n ret;\n}\n";
static uint32_t *hidden_ptr;

SIM_KERNEL void hidden_add(const sim_launch_t *l, void **params)
{
    sim_kernel_access(hidden_ptr, BUF, SIM_ACCESS_READWRITE);
    for (uint64_t i = 0; i < WORDS; i++)
        hidden_ptr[i] += 1;
}

/* A buffer other than `not` whose memory is unmapped now; exits 1 when there is none. */
static int unmapped(int not)
{
    for (int i = 0; i < BUFS; i++)
        if (i != not && sh_where(buf[i]) == 'U' && sh_where(buf[i] + BUF - 4) == 'U')
            return i;
    EXPECT(0, "no buffer is unmapped");
    return -1;
}

/* Buffer i read back by cuMemcpyDtoH holds sh_pattern(seed[i], .) + plus. */
static void expect_copy(int i, uint32_t plus, const char *what)
{
    CHECK_CU(cuMemcpyDtoH(host_buf, buf[i], BUF));
    for (uint64_t w = 0; w < WORDS; w++)
        EXPECT(host_buf[w] == sh_pattern(seed[i], w) + plus, "%s: word %llu of buffer %d is "
               "0x%08x, expected 0x%08x", what, (unsigned long long)w, i, host_buf[w],
               sh_pattern(seed[i], w) + plus);
}

/* Buffer i checked by a kernel holds sh_pattern(seed[i], .). */
static void expect_kernel(int i, CUdeviceptr bad, const char *what)
{
    char name[96];

    snprintf(name, sizeof(name), "%s, buffer %d", what, i);
    sh_expect_verified(verify, buf[i], WORDS, seed[i], bad, name);
}

/* Copies and a memset, each reaching a buffer that is unmapped when it is called. */
static void copies(CUdeviceptr bad)
{
    CUstream s;
    int i = unmapped(-1);

    expect_copy(i, 0, "cuMemcpyDtoH from an unmapped buffer");
    i = unmapped(-1);
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    memset(host_buf, 0, sizeof(host_buf));
    CHECK_CU(cuMemcpyDtoHAsync(host_buf, buf[i], BUF, s));
    CHECK_CU(cuStreamSynchronize(s));
    sh_expect_pattern(host_buf, WORDS, seed[i], "cuMemcpyDtoHAsync from an unmapped buffer");
    CHECK_CU(cuStreamDestroy(s));
    i = unmapped(-1);
    CHECK_CU(cuMemsetD32(buf[i], 0xa5a5a5a5u, WORDS));
    CHECK_CU(cuMemcpyDtoH(host_buf, buf[i], BUF));
    for (uint64_t w = 0; w < WORDS; w++)
        EXPECT(host_buf[w] == 0xa5a5a5a5u, "memset of an unmapped buffer: word %llu is 0x%08x",
               (unsigned long long)w, host_buf[w]);
    seed[i] = 55;
    CHECK_CU(sh_fill_async(fill, buf[i], WORDS, seed[i], NULL));
    for (uint64_t w = 0; w < WORDS; w++)
        host_buf[w] = sh_pattern(77, w);
    i = unmapped(-1);
    seed[i] = 77;
    CHECK_CU(cuMemcpyHtoD(buf[i], host_buf, BUF));
    expect_kernel(i, bad, "cuMemcpyHtoD into an unmapped buffer");
    int from = unmapped(-1), to = unmapped(from);
    CHECK_CU(cuMemcpyDtoD(buf[to], buf[from], BUF));
    seed[to] = seed[from];
    expect_copy(to, 0, "cuMemcpyDtoD between unmapped buffers");
}

/* The opaque kernel on an unmapped buffer pins everything; nothing is unmapped after. */
static void opaque(int *target)
{
    void *none[1] = { NULL };
    int i = unmapped(-1);

    hidden_ptr = (uint32_t *)(uintptr_t)buf[i];
    CHECK_CU(cuLaunchKernel(hidden, 1, 1, 1, 1, 1, 1, 0, NULL, none, NULL));
    CHECK_CU(cuCtxSynchronize());
    for (int b = 0; b < BUFS; b++)
        EXPECT(sh_where(buf[b]) == 'G' && sh_where(buf[b] + BUF - 4) == 'G',
               "after the opaque launch, buffer %d lives in '%c'", b, sh_where(buf[b]));
    *target = i;
}

/* Two buffers beyond the budget: the pinned ones stay, the first new one is evicted; a graph
 * that adds 2 to it maps it back and pins it. */
static void after_pinning(int target)
{
    CUdeviceptr extra[2];
    uint32_t two = 2;
    uint64_t n = WORDS;
    void *args[] = { &extra[0], &n, &two };
    CUstream s;
    CUgraph g;
    CUgraphExec ge;

    sh_alloc_filled(fill, extra, 2, BUF, 100, NULL);
    for (int b = 0; b < BUFS; b++)
        EXPECT(sh_where(buf[b]) == 'G', "pinned buffer %d was evicted to '%c'", b,
               sh_where(buf[b]));
    EXPECT(sh_where(extra[0]) == 'U', "the first buffer beyond the budget lives in '%c', expected "
           "it evicted", sh_where(extra[0]));
    expect_copy(target, 1, "the buffer the opaque kernel reached");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_CU(sh_launch(add, s, args));
    CHECK_CU(cuStreamEndCapture(s, &g));
    CHECK_CU(cuGraphInstantiate(&ge, g, 0));
    CHECK_CU(cuGraphLaunch(ge, s));
    CHECK_CU(cuStreamSynchronize(s));
    EXPECT(sh_where(extra[0]) == 'G', "after a graph launch the buffer lives in '%c'",
           sh_where(extra[0]));
    CHECK_CU(cuMemcpyDtoH(host_buf, extra[0], BUF));
    for (uint64_t w = 0; w < WORDS; w++)
        EXPECT(host_buf[w] == sh_pattern(100, w) + 2, "graph on an unmapped buffer: word %llu "
               "is 0x%08x", (unsigned long long)w, host_buf[w]);
    CHECK_CU(cuGraphExecDestroy(ge));
    CHECK_CU(cuGraphDestroy(g));
    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuMemFree(extra[0]));
    CHECK_CU(cuMemFree(extra[1]));
}

static void scenario(void)
{
    CUdeviceptr bad;
    int target;

    st_setup(0);
    fill = st_function(sh_res_ptx, "sh_fill");
    add = st_function(sh_res_ptx, "sh_add");
    verify = st_function(sh_res_ptx, "sh_verify");
    hidden = st_function(hidden_ptx, "hidden_add");
    CHECK_CU(cuMemAlloc(&bad, 4));
    sh_alloc_filled(fill, buf, BUFS, BUF, 0, NULL);
    for (uint32_t i = 0; i < BUFS; i++)
        seed[i] = i;
    copies(bad);
    for (int i = 0; i < BUFS; i++)
        expect_kernel(i, bad, "a kernel");
    opaque(&target);
    after_pinning(target);
    for (int i = 0; i < BUFS; i++)
        CHECK_CU(cuMemFree(buf[i]));
    CHECK_CU(cuMemFree(bad));
    printf("unmapped chunks reached by copies, a memset, kernels, an opaque kernel and a "
           "graph: data right\n");
}

/* ELIXIR_SIM_HOST_VMM=0 as the driver shows it (this process, without the shim). */
static void simulator_side(void)
{
    CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED };
    CUmemGenericAllocationHandle h;
    size_t gran;
    int v = -1;

    st_setup(0);
    CHECK_CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                                  0));
    EXPECT(v == 0, "HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED is %d", v);
    CHECK_CU(cuDeviceGetAttribute(&v,
                                  CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                                  0));
    EXPECT(v == 0, "HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED is %d", v);
    prop.location.type = CU_MEM_LOCATION_TYPE_HOST;
    EXPECT_CU(CUDA_ERROR_NOT_SUPPORTED, cuMemCreate(&h, 2 * SH_MIB, &prop, 0));
    EXPECT_CU(CUDA_ERROR_NOT_SUPPORTED,
              cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
    EXPECT_CU(CUDA_ERROR_NOT_SUPPORTED, cuMemCreate(&h, 2 * SH_MIB, &prop, 0));
    prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemCreate(&h, 2 * SH_MIB, &prop, 0));
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CHECK_CU(cuMemCreate(&h, 2 * SH_MIB, &prop, 0));
    CHECK_CU(cuMemRelease(h));
    printf("ELIXIR_SIM_HOST_VMM=0: no host VMM attributes, host locations not supported\n");
}

/* The scenario under the shim with `env`: evicted chunks unmapped, paged out and back, two
 * operations that pinned everything. */
static void unmapped_run(const char *const *env, const char *what)
{
    sh_run_t r = sh_run_ok("scenario", env);
    long long out = sh_stat(r.err, "migrations to host "), in = sh_stat(r.err, "to GPU ");
    long long fences = sh_stat(r.err, "fences that pinned "), gpu = sh_stat(r.err, "GPU peak ");

    printf("%s%s: migrations to host %lld, to GPU %lld, pinning operations %lld, GPU peak %lld "
           "MiB\n", r.out, what, out, in, fences, gpu);
    EXPECT(strstr(r.err, "evicted chunks unmapped"), "%s: evicted chunks not unmapped:\n%s", what,
           r.err);
    EXPECT(out >= 8 && in >= 4, "%s: chunks were not paged out and back:\n%s", what, r.err);
    EXPECT(fences == 2, "%s: %lld operations pinned everything, expected 2:\n%s", what, fences,
           r.err);
    sh_run_free(&r);
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_GPU_MEMORY=8M", "ELIXIR_STATS=1", NULL };
    static const char *const off[] = { "ELIXIR_GPU_MEMORY=8M", "ELIXIR_STATS=1",
                                       "ELIXIR_HOST_VMM=0", NULL };
    static const char *const on[] = { "ELIXIR_GPU_MEMORY=8M", "ELIXIR_HOST_VMM=1", NULL };

    sh_scenario_child(argc, argv, scenario);
    setenv("ELIXIR_SIM_HOST_VMM", "0", 1);
    simulator_side();
    unmapped_run(env, "a device without host VMM");
    /* Host VMM asked of a device without it: the program stops, saying why. */
    sh_run_t r = sh_run("scenario", 1, on);
    EXPECT(r.status == 1 && strstr(r.err, "ELIXIR_HOST_VMM=1: device 0 cannot map host memory") &&
           !strstr(r.out, "data right"), "ELIXIR_HOST_VMM=1 without host VMM: exit %d, "
           "stdout:\n%s\nstderr:\n%s", r.status, r.out, r.err);
    sh_run_free(&r);
    /* A device with host VMM, told not to use it: the same as one without. */
    unsetenv("ELIXIR_SIM_HOST_VMM");
    unmapped_run(off, "ELIXIR_HOST_VMM=0 on a device with host VMM");
    return 0;
}
