/* SPDX-License-Identifier: MIT */
/*
 * stream_memop_many.c - a hundred streams each held back by a stream memory wait.
 *
 * Stream i waits for word i, then stores its data and writes word i + 1, so that the waits
 * form a chain; the streams are submitted in reverse order (the last link first) and the
 * host stores word 0, which must release all hundred in turn.  A second round releases them
 * all from the host at once, in reverse order, then the streams are destroyed while blocked
 * and released after.  Eager and lazy executor, race checker failing the run.
 */
#include <string.h>

#include "simchild.h"
#include "simtest.h"

enum { N = 100 };

static void program(void *arg)
{
    (void)arg;
    CUstream s[N];
    CUdeviceptr data;
    unsigned *words, got[N];

    st_setup(0);
    CHECK_CU(cuMemHostAlloc((void **)&words, (N + 1) * 4, CU_MEMHOSTALLOC_DEVICEMAP));
    memset(words, 0, (N + 1) * 4);
    CHECK_CU(cuMemAlloc(&data, N * 4));
    CHECK_CU(cuMemsetD32(data, 0, N));
    CHECK_CU(cuCtxSynchronize());
    for (int i = 0; i < N; i++)
        CHECK_CU(cuStreamCreate(&s[i], CU_STREAM_NON_BLOCKING));
    for (int i = N - 1; i >= 0; i--) {
        CHECK_CU(cuStreamWaitValue32(s[i], (CUdeviceptr)(uintptr_t)&words[i], 1,
                                     CU_STREAM_WAIT_VALUE_EQ));
        if (i > 0)  /* what stream i - 1 stored before releasing i */
            CHECK_CU(cuMemcpyDtoDAsync(data + i * 4, data + (i - 1) * 4, 4, s[i]));
        else
            CHECK_CU(cuMemsetD32Async(data, 5, 1, s[i]));
        CHECK_CU(cuStreamWriteValue32(s[i], (CUdeviceptr)(uintptr_t)&words[i + 1], 1, 0));
    }
    EXPECT_CU(CUDA_ERROR_NOT_READY, cuStreamQuery(s[N - 1]));
    __atomic_store_n(&words[0], 1u, __ATOMIC_RELEASE);
    CHECK_CU(cuStreamSynchronize(s[N - 1]));
    CHECK_CU(cuMemcpyDtoH(got, data, N * 4));
    for (int i = 0; i < N; i++)
        EXPECT(got[i] == 5, "chain: data[%d] = %u, expected 5", i, got[i]);
    EXPECT(words[N] == 1, "chain: the last write did not run");

    CHECK_CU(cuCtxSynchronize());
    for (int i = 0; i < N; i++) {
        CHECK_CU(cuStreamWaitValue32(s[i], (CUdeviceptr)(uintptr_t)&words[i], 2,
                                     CU_STREAM_WAIT_VALUE_EQ));
        CHECK_CU(cuMemsetD32Async(data + i * 4, (unsigned)i, 1, s[i]));
        CHECK_CU(cuStreamDestroy(s[i]));
    }
    for (int i = N - 1; i >= 0; i--)
        __atomic_store_n(&words[i], 2u, __ATOMIC_RELEASE);
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuMemcpyDtoH(got, data, N * 4));
    for (int i = 0; i < N; i++)
        EXPECT(got[i] == (unsigned)i, "destroyed: data[%d] = %u, expected %d", i, got[i], i);
}

int main(void)
{
    static const char *const execs[] = { "ELIXIR_SIM_EXEC=async", "ELIXIR_SIM_EXEC=lazy" };
    for (int i = 0; i < 2; i++) {
        const char *env[] = { "ELIXIR_SIM_RACECHECK=fail", execs[i], NULL };
        st_child_t c;
        st_run_child(program, NULL, env, &c);
        if (c.status != 0 || strstr(c.err, "race") || strstr(c.err, "warn"))
            fprintf(stderr, "%s: status %d\n%s", execs[i], c.status, c.err);
        EXPECT(c.status == 0 && !strstr(c.err, "race") && !strstr(c.err, "warn"), "%s clean",
               execs[i]);
        st_child_free(&c);
    }
    return 0;
}
