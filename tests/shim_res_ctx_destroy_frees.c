/* SPDX-License-Identifier: MIT */
/*
 * shim_res_ctx_destroy_frees.c - destroying a context frees the memory the application
 * allocated in it under the shim as without it: cuMemAlloc and cuMemAllocPitch memory of the
 * context is gone afterwards (unknown to cuPointerGetAttribute and cuMemGetAddressRange,
 * CUDA_ERROR_INVALID_VALUE to free again, no longer counted by cuMemGetInfo), while
 * cuMemAllocAsync memory, which "is not associated with any CUDA context" (cuda.h, cuCtxDestroy),
 * stays with its contents.  Every context of a device allocates from the device's one arena,
 * so the shim must free them itself (ctx_destroy_frees.c checks the simulator).
 *
 * MODE=created: the arena is set up in context a; context b allocates (a large, a small, a
 * pitched and a stream-ordered buffer, filled under a 4 MiB GPU budget, so that chunks are
 * evicted) and is destroyed; then a, the arena's own context, is destroyed while context c,
 * whose stream the shim has seen, lives on and keeps its buffer.  MODE=reset and
 * MODE=release: the arena lives in the primary context, which is reset, or released for the
 * last time and retained again.  MODE=kept: a release that is not the last frees nothing,
 * nor does MODE=refused: a cuCtxDestroy of the primary context, which the driver refuses.
 * The transcripts must match without and with the shim, with evicted chunks mapped and
 * unmapped, and the shim's statistics (the arena's live allocations, the blocks allocated)
 * must count none left at exit.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define BIG (6 * SH_MIB)
#define MID (2 * SH_MIB)
#define SMALL 1000u

/* What the driver answers of p, which was allocated in a context since destroyed (or not):
 * whether it is known, its address range, and a free of it. */
static void report(const char *what, CUdeviceptr p)
{
    CUdeviceptr base = 0;
    size_t size = 0;
    int known = st_pointer_known(p);
    CUresult range = cuMemGetAddressRange(&base, &size, p);

    printf("%s: known %d, address range %s (size %zu), ", what, known, st_err(range),
           range == CUDA_SUCCESS ? size : 0);
    printf("free %s\n", st_err(cuMemFree(p)));
}

/* `bytes` bytes at p filled with sh_pattern(seed, .) by a kernel of the current context on
 * stream s, the host waiting. */
static void fill(CUdeviceptr p, size_t bytes, uint32_t seed, CUstream s)
{
    CUfunction f = st_function(sh_res_ptx, "sh_fill");

    CHECK_CU(sh_fill_async(f, p, bytes / 4, seed, s));
    CHECK_CU(s ? cuStreamSynchronize(s) : cuCtxSynchronize());
}

/* Context b allocates, fills and is destroyed from context a (the arena's); its memory goes,
 * its stream-ordered buffer stays. */
static void created_b(CUcontext a)
{
    CUcontext b;
    CUstream s;
    CUdeviceptr big, small, pitched, async;
    size_t pitch;

    CHECK_CU(cuCtxCreate(&b, NULL, 0, 0));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    st_function(sh_res_ptx, "sh_fill");             /* (its module counted before) */
    CHECK_CU(cuMemAllocAsync(&async, MID, s));
    fill(async, MID, 4, s);
    CHECK_CU(cuStreamDestroy(s));
    size_t before = st_free_mem();
    CHECK_CU(cuMemAlloc(&big, BIG));
    CHECK_CU(cuMemAlloc(&small, SMALL));
    CHECK_CU(cuMemAllocPitch(&pitched, &pitch, 4096, MID / 4096, 4));
    fill(big, BIG, 1, NULL);
    fill(small, 512, 2, NULL);
    fill(pitched, MID, 3, NULL);
    sh_expect_pattern_at("b's large buffer", big, BIG, 1, 0);
    printf("b allocated: free memory lower %d\n", st_free_mem() < before);
    CHECK_CU(cuCtxDestroy(b));
    CUcontext cur = NULL;
    CHECK_CU(cuCtxGetCurrent(&cur));
    EXPECT(cur == a, "context a is not current after b's destruction");
    printf("b destroyed: free memory back %d\n", st_free_mem() >= before);
    report("b's large buffer", big);
    report("b's small buffer", small);
    report("b's pitched buffer", pitched);
    EXPECT(st_pointer_known(async), "b's stream-ordered buffer went with b");
    sh_expect_pattern_at("b's stream-ordered buffer", async, MID, 4, 0);
    CHECK_CU(cuMemFree(async));
}

/* The arena's context a, holding a small and a large buffer, is destroyed while context c
 * lives on with a buffer filled on a stream of its own. */
static void home_destroyed(CUcontext a, CUdeviceptr keep, CUdeviceptr large)
{
    CUcontext c;
    CUstream s;
    CUdeviceptr cb;

    CHECK_CU(cuCtxCreate(&c, NULL, 0, 0));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&cb, 2 * MID));
    fill(cb, 2 * MID, 5, s);
    CHECK_CU(cuCtxDestroy(a));
    report("a's small buffer", keep);
    report("a's large buffer", large);
    sh_expect_pattern_at("c's buffer", cb, 2 * MID, 5, 0);
    CHECK_CU(cuMemFree(cb));
    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuCtxDestroy(c));
}

static void created(void)
{
    CUcontext a;
    CUdeviceptr keep, large;

    CHECK_CU(cuInit(0));
    CHECK_CU(cuCtxCreate(&a, NULL, 0, 0));
    CHECK_CU(cuMemAlloc(&keep, SMALL));     /* b's small buffer shares its slab */
    CHECK_CU(cuMemAlloc(&large, 2 * MID));
    fill(large, 2 * MID, 6, NULL);
    created_b(a);
    sh_expect_pattern_at("a's large buffer", large, 2 * MID, 6, 0);
    home_destroyed(a, keep, large);
}

/* The arena in the primary context, which is reset (MODE=reset), released for the last time
 * (MODE=release) or released while another reference holds it (MODE=kept). */
static void primary(const char *mode)
{
    CUdeviceptr big, pitched;
    size_t pitch;
    CUcontext p = st_setup(0), again;

    if (!strcmp(mode, "kept"))
        CHECK_CU(cuDevicePrimaryCtxRetain(&again, 0));
    CHECK_CU(cuMemAlloc(&big, BIG));
    CHECK_CU(cuMemAllocPitch(&pitched, &pitch, 4096, MID / 4096, 4));
    fill(big, BIG, 7, NULL);
    fill(pitched, MID, 8, NULL);
    size_t before = st_free_mem();
    if (!strcmp(mode, "reset"))
        CHECK_CU(cuDevicePrimaryCtxReset(0));
    else
        CHECK_CU(cuDevicePrimaryCtxRelease(0));
    if (strcmp(mode, "reset"))
        CHECK_CU(cuDevicePrimaryCtxRetain(&again, 0));
    CHECK_CU(cuCtxSetCurrent(p));
    printf("primary context %s: free memory higher %d\n", mode, st_free_mem() > before);
    if (!strcmp(mode, "kept")) {
        sh_expect_pattern_at("the large buffer", big, BIG, 7, 0);
        sh_expect_pattern_at("the pitched buffer", pitched, MID, 8, 0);
        CHECK_CU(cuDevicePrimaryCtxRelease(0));
    }
    report("the large buffer", big);
    report("the pitched buffer", pitched);
}

/* cuCtxDestroy of the primary context, in which the arena lives, is refused by the driver
 * (MODE=refused): the context and its memory live on. */
static void refused(void)
{
    CUdeviceptr big;
    CUcontext p = st_setup(0);

    CHECK_CU(cuMemAlloc(&big, BIG));
    fill(big, BIG, 9, NULL);
    printf("cuCtxDestroy of the primary context: %s\n", st_err(cuCtxDestroy(p)));
    sh_expect_pattern_at("the large buffer", big, BIG, 9, 0);
    report("the large buffer", big);
}

static void scenario(void)
{
    const char *mode = getenv("MODE");

    if (!strcmp(mode, "created"))
        created();
    else if (!strcmp(mode, "refused"))
        refused();
    else
        primary(mode);
}

static void run(const char *what, const char *host_vmm)
{
    static const char *const modes[] = { "MODE=created", "MODE=reset", "MODE=release",
                                         "MODE=kept", "MODE=refused" };

    for (int m = 0; m < 5; m++) {
        const char *plain_env[] = { "ELIXIR_SIM_RACECHECK=fail", host_vmm, modes[m], NULL };
        const char *env[] = { "ELIXIR_SIM_RACECHECK=fail", "ELIXIR_GPU_MEMORY=4M",
                              "ELIXIR_STATS=1", host_vmm, modes[m], NULL };
        sh_run_t plain = sh_run_plain_ok(plain_env), shim = sh_run_ok("scenario", env);
        long long live = sh_stat(shim.err, "allocations ");
        long long blocks = sh_stat(shim.err, "blocks ");

        char run_name[64];

        snprintf(run_name, sizeof(run_name), "%s, %s", what, modes[m]);
        EXPECT(live == 0 && blocks == 0, "%s: %lld allocations live, %lld blocks, at exit:\n%s",
               run_name, live, blocks, shim.err);
        sh_same_transcript(run_name, &plain, &shim);
    }
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
