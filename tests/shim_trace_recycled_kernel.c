/* SPDX-License-Identifier: MIT */
/*
 * shim_trace_recycled_kernel.c - the recording names each launch's kernel, asking the driver
 * once per handle and thread: a kernel loaded after its context was destroyed may be given a
 * destroyed function's handle (the simulator hands out the shell of the module unloaded
 * last), and its launches must be recorded under its own name, not the old one.
 *
 * The scenario (under the shim) launches rk_old in a context made with cuCtxCreate, destroys
 * the context, and in a second one loads a module whose kernel rk_new gets rk_old's handle,
 * and launches it twice; then does the same with cuDevicePrimaryCtxReset of the primary
 * context, rk_old launched there and rk_new after the reset.  The trace must name the six
 * launches rk_old, rk_new, rk_new, rk_old, rk_new, rk_new.
 */
#include "shim_trace_test.h"

#define NLAUNCH 6

static const char old_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry rk_old(.param .u64 p)\n{\n ret;\n}\n";
static const char new_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry rk_new(.param .u64 p)\n{\n ret;\n}\n";

SIM_KERNEL void rk_old(const sim_launch_t *l, void **params)
{
    (void)l;
    (void)params;
}

SIM_KERNEL void rk_new(const sim_launch_t *l, void **params)
{
    (void)l;
    (void)params;
}

static CUresult launch(CUfunction f)
{
    uint64_t word = 0;
    void *args[] = { &word };
    return cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL);
}

/* rk_new loaded into the current context must get old's handle; launched twice. */
static void launch_new(CUfunction old)
{
    CUmodule m;
    CUfunction f;
    CHECK_CU(cuModuleLoadData(&m, new_ptx));
    CHECK_CU(cuModuleGetFunction(&f, m, "rk_new"));
    EXPECT(f == old, "rk_new did not get rk_old's handle: nothing to test");
    CHECK_CU(launch(f));
    CHECK_CU(launch(f));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuModuleUnload(m));
}

static void scenario(void)
{
    CUcontext a, b, p;
    CHECK_CU(cuInit(0));
    CHECK_CU(cuCtxCreate(&b, NULL, 0, 0));
    CHECK_CU(cuCtxCreate(&a, NULL, 0, 0));
    CUfunction old = st_function(old_ptx, "rk_old");
    CHECK_CU(launch(old));
    CHECK_CU(cuCtxDestroy(a));
    CHECK_CU(cuCtxSetCurrent(b));
    launch_new(old);

    CHECK_CU(cuDevicePrimaryCtxRetain(&p, 0));
    CHECK_CU(cuCtxSetCurrent(p));
    old = st_function(old_ptx, "rk_old");
    CHECK_CU(launch(old));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuDevicePrimaryCtxReset(0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&p, 0));
    CHECK_CU(cuCtxSetCurrent(p));
    launch_new(old);
    CHECK_CU(cuDevicePrimaryCtxRelease(0));
    CHECK_CU(cuCtxDestroy(b));
}

int main(int argc, char **argv)
{
    static const char *const names[NLAUNCH] = { "rk_old", "rk_new", "rk_new",
                                                "rk_old", "rk_new", "rk_new" };
    sh_scenario_child(argc, argv, scenario);
    tt_trace_t t;
    sh_run_t r = tt_record_scenario("recycled_kernel", 0, &t);

    EXPECT(tt_count(&t, TRC_EV_LAUNCH) == NLAUNCH, "%zu LAUNCH records, expected %d",
           tt_count(&t, TRC_EV_LAUNCH), NLAUNCH);
    for (int i = 0; i < NLAUNCH; i++) {
        const char *func = tt_nth(&t, TRC_EV_LAUNCH, (size_t)i)->u.launch.func;
        EXPECT(strcmp(func, names[i]) == 0, "launch %d recorded as %s, expected %s", i, func,
               names[i]);
    }
    tt_free(&t);
    sh_run_free(&r);
    return 0;
}
