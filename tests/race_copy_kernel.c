/* SPDX-License-Identifier: MIT */
/*
 * race_copy_kernel.c - copies and memsets take part in race checking like kernels: an
 * asynchronous host-to-device copy on one stream and a kernel reading the destination on an
 * unordered stream are reported (naming the copy and the kernel), as are a memset and a
 * device-to-device copy reading the memset's bytes; the same programs with an event between the
 * streams are clean.  Each program runs in a child process under ELIXIR_SIM_RACECHECK=fail.
 */
#include <string.h>

#include "simchild.h"
#include "simtest.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry sum_reader(.param .u64 p, .param .u64 out)\n{\n ret;\n}\n";

SIM_KERNEL void sum_reader(const sim_launch_t *l, void **params)
{
    const unsigned *p = *(const unsigned **)params[0];
    unsigned *out = *(unsigned **)params[1];
    unsigned s = 0;
    for (int i = 0; i < 256; i++)
        s += p[i];
    *out = s;
    sim_kernel_access(p, 1024, SIM_ACCESS_READ);
    sim_kernel_access(out, 4, SIM_ACCESS_WRITE);
}

typedef struct scenario {
    int memset_case;
    int ordered;
} scenario_t;

static void program(void *arg)
{
    const scenario_t *sc = arg;
    CUmodule mod;
    CUfunction f;
    CUstream s1, s2;
    CUevent ev;
    CUdeviceptr d, out;
    void *pinned;

    st_setup(0);
    CHECK_CU(cuModuleLoadData(&mod, ptx));
    CHECK_CU(cuModuleGetFunction(&f, mod, "sum_reader"));
    CHECK_CU(cuMemAlloc(&d, 1024));
    CHECK_CU(cuMemAlloc(&out, 1024));
    CHECK_CU(cuMemAllocHost(&pinned, 1024));
    memset(pinned, 0, 1024);
    CHECK_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    if (sc->memset_case)
        CHECK_CU(cuMemsetD32Async(d, 3, 256, s1));
    else
        CHECK_CU(cuMemcpyHtoDAsync(d, pinned, 1024, s1));
    CHECK_CU(cuEventRecord(ev, s1));
    if (sc->ordered)
        CHECK_CU(cuStreamWaitEvent(s2, ev, 0));
    if (sc->memset_case) {
        CHECK_CU(cuMemcpyDtoDAsync(out, d, 1024, s2));
    } else {
        void *args[] = { &d, &out };
        CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s2, args, NULL));
    }
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuEventDestroy(ev));
    CHECK_CU(cuStreamDestroy(s1));
    CHECK_CU(cuStreamDestroy(s2));
    CHECK_CU(cuMemFreeHost(pinned));
    CHECK_CU(cuMemFree(d));
    CHECK_CU(cuMemFree(out));
    CHECK_CU(cuModuleUnload(mod));
}

int main(void)
{
    static const char *const env[] = { "ELIXIR_SIM_RACECHECK=fail", NULL };
    static const char *const copy_kernel[] = { "race:", "memcpy", "sum_reader", NULL };
    static const char *const memset_copy[] = { "race:", "memset", "memcpy", NULL };
    st_child_t c;

    for (int memset_case = 0; memset_case < 2; memset_case++) {
        scenario_t racy = { memset_case, 0 }, ordered = { memset_case, 1 };
        st_run_child(program, &racy, env, &c);
        st_child_expect(&c, 66, memset_case ? memset_copy : copy_kernel);
        st_child_free(&c);
        st_run_child(program, &ordered, env, &c);
        st_child_expect(&c, 0, NULL);
        EXPECT(!strstr(c.err, "race"), "ordered: expected no race report, got:\n%s", c.err);
        st_child_free(&c);
    }
    return 0;
}
