/* SPDX-License-Identifier: MIT */
/*
 * copy_async_directions.c - the asynchronous copies in every direction on a created stream,
 * with pinned and pageable host memory: the bytes arrive once the stream is synchronised; with
 * pinned memory the call returns before the copy has run, while a copy into pageable memory
 * has completed on return ("API synchronization behavior").  Lazy execution
 * (ELIXIR_SIM_EXEC=lazy, set by re-executing) makes "before it has run" observable.
 */
#include <stdlib.h>
#include <string.h>

#include "simchild.h"
#include "simtest.h"

#define N (64 * 1024)

static void fill(unsigned char *p, unsigned seed)
{
    for (size_t i = 0; i < N; i++)
        p[i] = (unsigned char)(i * 13 + seed);
}

static void same(const unsigned char *got, unsigned seed, const char *what)
{
    for (size_t i = 0; i < N; i++)
        EXPECT(got[i] == (unsigned char)(i * 13 + seed), "%s: byte %zu is %u, expected %u",
               what, i, got[i], (unsigned char)(i * 13 + seed));
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_SIM_EXEC=lazy", NULL };
    unsigned char *pinned, *pinned2, *pageable = malloc(N);
    CUdeviceptr a, b;
    CUstream s;

    st_reexec(argv, env);
    st_setup(0);
    EXPECT(pageable, "malloc");
    CHECK_CU(cuMemAllocHost((void **)&pinned, N));
    CHECK_CU(cuMemHostAlloc((void **)&pinned2, N, CU_MEMHOSTALLOC_PORTABLE));
    CHECK_CU(cuMemAlloc(&a, N));
    CHECK_CU(cuMemAlloc(&b, N));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

    /* Pinned HtoD, DtoD, pinned DtoH: all asynchronous. */
    fill(pinned, 5);
    memset(pinned2, 0, N);
    CHECK_CU(cuMemcpyHtoDAsync(a, pinned, N, s));
    EXPECT_CU(CUDA_ERROR_NOT_READY, cuStreamQuery(s));
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuMemcpyDtoDAsync(b, a, N, s));
    EXPECT_CU(CUDA_ERROR_NOT_READY, cuStreamQuery(s));
    CHECK_CU(cuMemcpyDtoHAsync(pinned2, b, N, s));
    EXPECT_CU(CUDA_ERROR_NOT_READY, cuStreamQuery(s));
    CHECK_CU(cuStreamSynchronize(s));
    same(pinned2, 5, "pinned HtoD, DtoD, pinned DtoH");

    /* Pageable HtoD (staged), then DtoH into pageable: complete on return. */
    fill(pageable, 6);
    CHECK_CU(cuMemcpyHtoDAsync(a, pageable, N, s));
    memset(pageable, 0, N);
    CHECK_CU(cuMemcpyDtoHAsync(pageable, a, N, s));
    same(pageable, 6, "pageable HtoD, pageable DtoH (no synchronisation)");

    /* cuMemcpyAsync with unified addresses. */
    fill(pinned, 7);
    CHECK_CU(cuMemcpyAsync(b, (CUdeviceptr)(uintptr_t)pinned, N, s));
    CHECK_CU(cuMemcpyAsync((CUdeviceptr)(uintptr_t)pinned2, b, N, s));
    CHECK_CU(cuStreamSynchronize(s));
    same(pinned2, 7, "cuMemcpyAsync");

    /* The legacy stream, by NULL and by CU_STREAM_LEGACY. */
    fill(pinned, 8);
    CHECK_CU(cuMemcpyHtoDAsync(a, pinned, N, NULL));
    CHECK_CU(cuMemcpyDtoHAsync(pinned2, a, N, CU_STREAM_LEGACY));
    CHECK_CU(cuCtxSynchronize());
    same(pinned2, 8, "legacy stream");

    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuMemFree(a));
    CHECK_CU(cuMemFree(b));
    CHECK_CU(cuMemFreeHost(pinned));
    CHECK_CU(cuMemFreeHost(pinned2));
    free(pageable);
    return 0;
}
