/* SPDX-License-Identifier: MIT */
/*
 * stream_memop_release.c - a stream memory wait released by ordinary work on another stream.
 *
 * Any device write may satisfy a wait, not only cuStreamWriteValue: here stream B stores data
 * and then sets the flag with a memset, a host-to-device copy or a kernel, each submitted
 * after A's wait and each made to end long after it was submitted (a large memset before it
 * on B).  A then reads the data.  The program is ordered, so the race checker must be quiet;
 * and A's work must not start, on the virtual clock, before the store that released it ends
 * (timed events on both streams).  Each form runs in a child, eager and lazy executor.
 */
#include <string.h>

#include "simchild.h"
#include "simtest.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry set_flag(.param .u64 p)\n{\n ret;\n}\n";

SIM_KERNEL void set_flag(const sim_launch_t *l, void **params)
{
    (void)l;
    unsigned *p = *(unsigned **)params[0];
    __atomic_store_n(p, 1u, __ATOMIC_RELEASE);
    sim_kernel_access(p, sizeof(*p), SIM_ACCESS_WRITE);
}

enum { BY_MEMSET, BY_COPY, BY_KERNEL, BY_WRITE };

static void program(void *arg)
{
    int how = (int)(intptr_t)arg;
    CUstream a, b;
    CUevent e_start, e_released, e_after;
    CUdeviceptr flag, data, out, big;
    unsigned got = 0, one = 1;
    enum { BIG = 64 << 20 };

    st_setup(0);
    CUfunction fn = st_function(ptx, "set_flag");
    CHECK_CU(cuMemAlloc(&flag, 64));
    CHECK_CU(cuMemAlloc(&data, 64));
    CHECK_CU(cuMemAlloc(&out, 64));
    CHECK_CU(cuMemAlloc(&big, BIG));
    CHECK_CU(cuMemsetD32(flag, 0, 16));
    CHECK_CU(cuMemsetD32(data, 0, 16));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuEventCreate(&e_start, 0));
    CHECK_CU(cuEventCreate(&e_released, 0));
    CHECK_CU(cuEventCreate(&e_after, 0));

    CHECK_CU(cuEventRecord(e_start, b));
    CHECK_CU(cuStreamWaitValue32(a, flag, 1, CU_STREAM_WAIT_VALUE_EQ));
    CHECK_CU(cuEventRecord(e_after, a));
    CHECK_CU(cuMemcpyDtoDAsync(out, data, 4, a));

    CHECK_CU(cuMemsetD8Async(big, 1, BIG, b));      /* makes B's flag store end late */
    CHECK_CU(cuMemsetD32Async(data, 7, 1, b));
    if (how == BY_MEMSET) {
        CHECK_CU(cuMemsetD32Async(flag, 1, 1, b));
    } else if (how == BY_COPY) {
        CHECK_CU(cuMemcpyHtoDAsync(flag, &one, 4, b));
    } else if (how == BY_KERNEL) {
        void *args[] = { &flag };
        CHECK_CU(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, b, args, NULL));
    } else {
        CHECK_CU(cuStreamWriteValue32(b, flag, 1, 0));
    }
    CHECK_CU(cuEventRecord(e_released, b));

    CHECK_CU(cuStreamSynchronize(a));
    CHECK_CU(cuStreamSynchronize(b));
    CHECK_CU(cuMemcpyDtoH(&got, out, 4));
    EXPECT(got == 7, "release %d: A read %u after the wait, expected 7", how, got);
    float released = 0, after = 0;
    CHECK_CU(cuEventElapsedTime(&released, e_start, e_released));
    CHECK_CU(cuEventElapsedTime(&after, e_start, e_after));
    EXPECT(after >= released, "release %d: the wait ended at %.4f ms, before the store that "
           "released it (%.4f ms)", how, after, released);
}

int main(void)
{
    static const char *const execs[] = { "ELIXIR_SIM_EXEC=async", "ELIXIR_SIM_EXEC=lazy" };
    for (int i = 0; i < 2; i++) {
        for (int how = BY_MEMSET; how <= BY_WRITE; how++) {
            const char *env[] = { "ELIXIR_SIM_RACECHECK=fail", execs[i], NULL };
            st_child_t c;
            st_run_child(program, (void *)(intptr_t)how, env, &c);
            if (c.status != 0 || strstr(c.err, "race"))
                fprintf(stderr, "release %d (%s): status %d\n%s", how, execs[i], c.status,
                        c.err);
            EXPECT(c.status == 0 && !strstr(c.err, "race"), "release %d (%s) clean", how,
                   execs[i]);
            st_child_free(&c);
        }
    }
    return 0;
}
