/* SPDX-License-Identifier: MIT */
/*
 * copy_sync_directions.c - the synchronous copies in every direction, with pinned and
 * pageable host memory, carry the right bytes and block the host as documented ("API
 * synchronization behavior"): a pinned host-to-device copy and every device-to-host copy have
 * completed when the call returns, a device-to-device copy need not have.  Run with
 * ELIXIR_SIM_EXEC=lazy (the test re-executes itself) so that queued work waits for the host and
 * "completed on return" is observable with cuStreamQuery.
 */
#include <stdlib.h>
#include <string.h>

#include "simchild.h"
#include "simtest.h"

#define N (256 * 1024)

static void fill(unsigned char *p, unsigned seed)
{
    for (size_t i = 0; i < N; i++)
        p[i] = (unsigned char)(i * 7 + seed);
}

static void same(const unsigned char *got, unsigned seed, const char *what)
{
    for (size_t i = 0; i < N; i++)
        EXPECT(got[i] == (unsigned char)(i * 7 + seed), "%s: byte %zu is %u, expected %u", what,
               i, got[i], (unsigned char)(i * 7 + seed));
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_SIM_EXEC=lazy", NULL };
    unsigned char *pinned, *pageable = malloc(N);
    CUdeviceptr a, b;

    st_reexec(argv, env);
    st_setup(0);
    EXPECT(pageable, "malloc");
    CHECK_CU(cuMemAllocHost((void **)&pinned, N));
    CHECK_CU(cuMemAlloc(&a, N));
    CHECK_CU(cuMemAlloc(&b, N));

    /* Pinned host to device: complete on return. */
    fill(pinned, 1);
    CHECK_CU(cuMemcpyHtoD(a, pinned, N));
    EXPECT_CU(CUDA_SUCCESS, cuStreamQuery(NULL));
    /* Device to pageable host: complete on return. */
    CHECK_CU(cuMemcpyDtoH(pageable, a, N));
    same(pageable, 1, "HtoD pinned, DtoH pageable");

    /* Pageable host to device, then device to pinned host: complete on return. */
    fill(pageable, 2);
    CHECK_CU(cuMemcpyHtoD(b, pageable, N));
    memset(pinned, 0, N);
    CHECK_CU(cuMemcpyDtoH(pinned, b, N));
    same(pinned, 2, "HtoD pageable, DtoH pinned");

    /* Device to device: no host synchronisation; in order with the next copy. */
    CHECK_CU(cuMemcpyDtoD(b, a, N));
    EXPECT_CU(CUDA_ERROR_NOT_READY, cuStreamQuery(NULL));
    CHECK_CU(cuMemcpyDtoH(pageable, b, N));
    same(pageable, 1, "DtoD");

    /* cuMemcpy with unified addresses: device to device, host to device, host to host. */
    CHECK_CU(cuMemcpy(a + 4096, b, 4096));
    fill(pinned, 3);
    CHECK_CU(cuMemcpy(b, (CUdeviceptr)(uintptr_t)pinned, N));
    CHECK_CU(cuMemcpy((CUdeviceptr)(uintptr_t)pageable, b, N));
    same(pageable, 3, "cuMemcpy HtoD, DtoH");
    fill(pinned, 4);
    CHECK_CU(cuMemcpy((CUdeviceptr)(uintptr_t)pageable, (CUdeviceptr)(uintptr_t)pinned, N));
    same(pageable, 4, "cuMemcpy host to host");
    CHECK_CU(cuMemcpyDtoH(pageable, a + 4096, 4096));
    for (size_t i = 0; i < 4096; i++)
        EXPECT(pageable[i] == (unsigned char)(i * 7 + 1), "cuMemcpy DtoD: byte %zu is %u", i,
               pageable[i]);

    /* A zero-byte copy is a no-op. */
    CHECK_CU(cuMemcpyHtoD(a, pinned, 0));

    CHECK_CU(cuMemFree(a));
    CHECK_CU(cuMemFree(b));
    CHECK_CU(cuMemFreeHost(pinned));
    free(pageable);
    return 0;
}
