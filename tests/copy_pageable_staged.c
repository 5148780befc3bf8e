/* SPDX-License-Identifier: MIT */
/*
 * copy_pageable_staged.c - a host-to-device copy from pageable memory takes its source at the
 * call: overwriting the buffer right after cuMemcpyHtoDAsync (or cuMemcpyHtoD) returns does not
 * change what arrives, even though the copy itself runs later.  Lazy execution
 * (ELIXIR_SIM_EXEC=lazy, set by re-executing) guarantees the copy has not run when the buffer
 * is overwritten.
 */
#include <stdlib.h>
#include <string.h>

#include "simchild.h"
#include "simtest.h"

#define N 100000

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_SIM_EXEC=lazy", NULL };
    unsigned char *src = malloc(N), *back = malloc(N);
    CUdeviceptr d;
    CUstream s;

    st_reexec(argv, env);
    st_setup(0);
    EXPECT(src && back, "malloc");
    CHECK_CU(cuMemAlloc(&d, 2 * N));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

    memset(src, 0x11, N);
    CHECK_CU(cuMemcpyHtoDAsync(d, src, N, s));
    EXPECT_CU(CUDA_ERROR_NOT_READY, cuStreamQuery(s));
    memset(src, 0x22, N);
    CHECK_CU(cuMemcpyHtoD(d + N, src, N));
    memset(src, 0x33, N);

    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuMemcpyDtoH(back, d, N));
    for (size_t i = 0; i < N; i++)
        EXPECT(back[i] == 0x11, "async copy: byte %zu is 0x%x, expected 0x11", i, back[i]);
    CHECK_CU(cuMemcpyDtoH(back, d + N, N));
    for (size_t i = 0; i < N; i++)
        EXPECT(back[i] == 0x22, "sync copy: byte %zu is 0x%x, expected 0x22", i, back[i]);

    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuMemFree(d));
    free(src);
    free(back);
    return 0;
}
