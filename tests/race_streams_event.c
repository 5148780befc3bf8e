/* SPDX-License-Identifier: MIT */
/*
 * race_streams_event.c - two non-blocking streams that write the same bytes race unless
 * something orders them: the race checker reports the unordered pair (naming both kernels,
 * exit status 66 under ELIXIR_SIM_RACECHECK=fail), and finds nothing once the second stream
 * waits for an event recorded after the first write.  Each program runs in a child process.
 */
#include <string.h>

#include "simchild.h"
#include "simtest.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry first_writer(.param .u64 p)\n{\n ret;\n}\n"
    ".visible .entry second_writer(.param .u64 p)\n{\n ret;\n}\n";

SIM_KERNEL void first_writer(const sim_launch_t *l, void **params)
{
    unsigned *p = *(unsigned **)params[0];
    p[1] = 1;
    sim_kernel_access(&p[1], 4, SIM_ACCESS_WRITE);
}

SIM_KERNEL void second_writer(const sim_launch_t *l, void **params)
{
    unsigned *p = *(unsigned **)params[0];
    p[1] = 2;
    sim_kernel_access(&p[1], 4, SIM_ACCESS_WRITE);
}

static void program(void *ordered)
{
    CUmodule mod;
    CUfunction f1, f2;
    CUstream s1, s2;
    CUevent ev;
    CUdeviceptr d;

    st_setup(0);
    CHECK_CU(cuModuleLoadData(&mod, ptx));
    CHECK_CU(cuModuleGetFunction(&f1, mod, "first_writer"));
    CHECK_CU(cuModuleGetFunction(&f2, mod, "second_writer"));
    CHECK_CU(cuMemAlloc(&d, 64));
    CHECK_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    void *args[] = { &d };
    CHECK_CU(cuLaunchKernel(f1, 1, 1, 1, 1, 1, 1, 0, s1, args, NULL));
    CHECK_CU(cuEventRecord(ev, s1));
    if (ordered)
        CHECK_CU(cuStreamWaitEvent(s2, ev, 0));
    CHECK_CU(cuLaunchKernel(f2, 1, 1, 1, 1, 1, 1, 0, s2, args, NULL));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuEventDestroy(ev));
    CHECK_CU(cuStreamDestroy(s1));
    CHECK_CU(cuStreamDestroy(s2));
    CHECK_CU(cuMemFree(d));
    CHECK_CU(cuModuleUnload(mod));
}

int main(void)
{
    static const char *const env[] = { "ELIXIR_SIM_RACECHECK=fail", NULL };
    static const char *const racy[] = { "race:", "first_writer", "second_writer", NULL };
    st_child_t c;

    st_run_child(program, NULL, env, &c);
    st_child_expect(&c, 66, racy);
    st_child_free(&c);
    st_run_child(program, (void *)1, env, &c);
    st_child_expect(&c, 0, NULL);
    EXPECT(!strstr(c.err, "race"), "ordered by an event: expected no report, got:\n%s", c.err);
    st_child_free(&c);
    return 0;
}
