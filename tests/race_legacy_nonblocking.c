/* SPDX-License-Identifier: MIT */
/*
 * race_legacy_nonblocking.c - the race checker sees the legacy stream's implicit
 * synchronisation: two kernels that write the same buffer, one on the legacy stream and one on
 * a CU_STREAM_NON_BLOCKING stream, with nothing ordering them, are reported (in either
 * order), and with ELIXIR_SIM_RACECHECK=fail the process exits 66 naming both kernels.  The
 * same program with a blocking stream is correct and is not reported.
 */
#include <string.h>

#include "simchild.h"
#include "simtest.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry legacy_writer(.param .u64 p)\n{\n ret;\n}\n"
    ".visible .entry side_writer(.param .u64 p)\n{\n ret;\n}\n";

SIM_KERNEL void legacy_writer(const sim_launch_t *l, void **params)
{
    int *p = *(int **)params[0];
    p[0] = 1;
}

SIM_KERNEL void side_writer(const sim_launch_t *l, void **params)
{
    int *p = *(int **)params[0];
    p[0] = 2;
}

typedef struct scenario {
    unsigned stream_flags;
    int side_first;         /* launch on the created stream before the legacy one */
} scenario_t;

static void run(void *arg)
{
    const scenario_t *sc = arg;
    CUmodule mod;
    CUfunction legacy, side;
    CUstream s;
    CUdeviceptr buf;

    st_setup(0);
    CHECK_CU(cuModuleLoadData(&mod, ptx));
    CHECK_CU(cuModuleGetFunction(&legacy, mod, "legacy_writer"));
    CHECK_CU(cuModuleGetFunction(&side, mod, "side_writer"));
    CHECK_CU(cuMemAlloc(&buf, 256));
    CHECK_CU(cuStreamCreate(&s, sc->stream_flags));
    void *args[] = { &buf };
    for (int i = 0; i < 2; i++) {
        int on_side = (i == 0) == sc->side_first;
        CHECK_CU(cuLaunchKernel(on_side ? side : legacy, 1, 1, 1, 1, 1, 1, 0,
                                on_side ? s : NULL, args, NULL));
    }
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuMemFree(buf));
    CHECK_CU(cuModuleUnload(mod));
}

int main(void)
{
    static const char *const env[] = { "ELIXIR_SIM_RACECHECK=fail", NULL };
    static const char *const racy[] = { "race:", "legacy_writer", "side_writer", NULL };
    st_child_t c;

    for (int side_first = 0; side_first < 2; side_first++) {
        scenario_t racy_sc = { CU_STREAM_NON_BLOCKING, side_first };
        st_run_child(run, &racy_sc, env, &c);
        st_child_expect(&c, 66, racy);
        st_child_free(&c);

        scenario_t ok_sc = { CU_STREAM_DEFAULT, side_first };
        st_run_child(run, &ok_sc, env, &c);
        st_child_expect(&c, 0, NULL);
        EXPECT(!strstr(c.err, "race"), "blocking stream: expected no race report, got:\n%s",
               c.err);
        st_child_free(&c);
    }
    return 0;
}
