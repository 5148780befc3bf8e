/* SPDX-License-Identifier: MIT */
/*
 * shim_res_free_errors.c - bad frees of arena memory fail as the driver's do, and change
 * nothing.
 *
 * The scenario frees interior pointers of a large (two-chunk) and of small (sub-allocated)
 * allocations with cuMemFree and cuMemFreeAsync, frees each allocation twice, frees the null
 * pointer, and after each bad free checks that the allocation still works (a memset and a read
 * back) and that freed memory is unknown to cuMemGetAddressRange and cuPointerGetAttribute.  A
 * free with no context current frees (the allocation names its context; the real driver does
 * so too).  It prints every result.  The test runs it
 * without and with libelixir.so (a 4 MiB GPU budget, so the large allocation is partly paged
 * out); the transcripts must be the same: CUDA_ERROR_INVALID_VALUE where the driver says so.
 */
#include "shim_test.h"
#include "simtest.h"

#define MIB (1ull << 20)

#define SHOW(what, call) printf("%-44s %s\n", what, st_err(call))

/* The allocation at p (bytes long) still holds what a memset writes into it. */
static void still_works(const char *what, CUdeviceptr p, size_t bytes)
{
    static unsigned char host[4 * MIB];
    size_t bad = 0;

    CHECK_CU(cuMemsetD8(p, 0xa5, bytes));
    CHECK_CU(cuMemcpyDtoH(host, p, bytes));
    for (size_t i = 0; i < bytes; i++)
        bad += host[i] != 0xa5;
    printf("%-44s %zu bytes wrong\n", what, bad);
}

static void gone(const char *what, CUdeviceptr p)
{
    CUdeviceptr base;
    size_t size;
    unsigned type;
    char line[64];

    snprintf(line, sizeof(line), "%s: address range", what);
    SHOW(line, cuMemGetAddressRange(&base, &size, p));
    snprintf(line, sizeof(line), "%s: memory type", what);
    SHOW(line, cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p));
}

/* Interior pointers of a large and of a small allocation, freed both ways. */
static void interior_frees(CUdeviceptr big, CUdeviceptr small, CUstream s)
{
    SHOW("free big + 256", cuMemFree(big + 256));
    SHOW("free big + 2 MiB (second chunk)", cuMemFree(big + 2 * MIB));
    SHOW("free big + 4 MiB - 1", cuMemFree(big + 4 * MIB - 1));
    SHOW("free async big + 1 MiB", cuMemFreeAsync(big + MIB, s));
    still_works("big after bad frees", big, 4 * MIB);
    SHOW("free small + 16", cuMemFree(small + 16));
    SHOW("free small + 4095", cuMemFree(small + 4095));
    SHOW("free async small + 256", cuMemFreeAsync(small + 256, s));
    still_works("small after bad frees", small, 4096);
}

/* Each allocation freed twice; a neighbour of a freed slot is unharmed. */
static void double_frees(CUdeviceptr big, CUdeviceptr small, CUdeviceptr neighbour, CUstream s)
{
    SHOW("free small", cuMemFree(small));
    SHOW("free small again", cuMemFree(small));
    SHOW("free async small again", cuMemFreeAsync(small, s));
    gone("freed small", small);
    still_works("a neighbour of the freed slot", neighbour, 4096);
    SHOW("free big", cuMemFree(big));
    SHOW("free big again", cuMemFree(big));
    gone("freed big", big);
    gone("freed big + 3 MiB", big + 3 * MIB);
}

static void scenario(void)
{
    CUcontext ctx = st_setup(0);
    CUdeviceptr big, small, other, neighbour, spare;
    CUstream s;

    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&big, 4 * MIB));
    CHECK_CU(cuMemAlloc(&small, 4096));
    CHECK_CU(cuMemAlloc(&other, 4096));
    CHECK_CU(cuMemAlloc(&neighbour, 4096));
    CHECK_CU(cuMemAlloc(&spare, 2 * MIB));          /* pushes part of big out to host memory */
    interior_frees(big, small, s);
    SHOW("free null", cuMemFree(0));
    CHECK_CU(cuCtxSetCurrent(NULL));
    SHOW("free other, no context current", cuMemFree(other));
    CHECK_CU(cuCtxSetCurrent(ctx));
    gone("other, freed with no context current", other);
    double_frees(big, small, neighbour, s);
    SHOW("free other again", cuMemFree(other));
    SHOW("free neighbour", cuMemFree(neighbour));
    SHOW("free spare", cuMemFree(spare));
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuStreamDestroy(s));
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_GPU_MEMORY=4M", "ELIXIR_STATS=1", NULL };
    sh_run_t plain, shim;

    sh_scenario_child(argc, argv, scenario);
    plain = sh_run_plain_ok(NULL);
    shim = sh_run_ok("scenario", env);
    EXPECT(sh_stat(shim.err, "migrations to host ") > 0, "nothing was paged out:\n%s", shim.err);
    sh_compare(plain.out, shim.out);
    printf("%s", shim.out);
    sh_run_free(&plain);
    sh_run_free(&shim);
    return 0;
}
