/* SPDX-License-Identifier: MIT */
/*
 * cupti_disable.c - what cuptiActivityDisable stops, and that it detaches from the simulator.
 *
 * An operation is recorded when its kind was enabled at the call that submitted it.  With the
 * executor lazy (ELIXIR_SIM_EXEC=lazy: queued work runs only when the host waits), kernels
 * launched before cuptiActivityDisable complete after it and are still recorded; kernels
 * launched after it are not, while memsets, still enabled, are.  Once every kind is disabled
 * the stand-in detaches from the simulator (another observer can attach: the simulator pays
 * nothing per operation), it attaches again when a kind is enabled, and nothing submitted
 * while all kinds are off is ever recorded.  cuptiFinalize turns every kind off and forgets
 * the buffer callbacks (a flush is then refused); registering and enabling again works.
 */
#include <errno.h>

#include "cupti_test.h"

static int other_submit(void *ctx, int kind, uint32_t *corr)
{
    return 0;
}

static void other_complete(void *ctx, const sim_activity_t *a)
{
}

static const sim_activity_ops_t other = { NULL, other_submit, other_complete };

int main(void)
{
    CUmodule mod;
    CUfunction f;
    CUdeviceptr d;

    setenv("ELIXIR_SIM_EXEC", "lazy", 1);
    st_setup(0);
    ct_open();
    ct_register();
    CHECK_CU(cuModuleLoadData(&mod, ct_costly_ptx));
    CHECK_CU(cuModuleGetFunction(&f, mod, "costly"));
    CHECK_CU(cuMemAlloc(&d, 4096));
    CHECK_CUPTI(ct.enable(CUPTI_ACTIVITY_KIND_KERNEL));
    CHECK_CUPTI(ct.enable(CUPTI_ACTIVITY_KIND_MEMSET));

    ct_launch(f, NULL, 0, 0);
    ct_launch(f, NULL, 0, 0);
    CHECK_CUPTI(ct.disable(CUPTI_ACTIVITY_KIND_KERNEL));    /* both still queued (lazy) */
    for (int i = 0; i < 3; i++)
        ct_launch(f, NULL, 0, 0);
    CHECK_CU(cuMemsetD8Async(d, 1, 4096, NULL));
    CHECK_CU(cuCtxSynchronize());
    ct_flush();
    EXPECT(ct_count(CUPTI_ACTIVITY_KIND_KERNEL) == 2,
           "the 2 kernels launched before the disable, got %zu",
           ct_count(CUPTI_ACTIVITY_KIND_KERNEL));
    EXPECT(ct_count(CUPTI_ACTIVITY_KIND_MEMSET) == 1, "the memset, got %zu",
           ct_count(CUPTI_ACTIVITY_KIND_MEMSET));

    EXPECT(sim_activity_attach(&other) == -EBUSY, "the stand-in holds the simulator");
    CHECK_CUPTI(ct.disable(CUPTI_ACTIVITY_KIND_MEMSET));
    EXPECT(sim_activity_attach(&other) == 0, "with every kind off the stand-in has detached");
    sim_activity_detach(&other);
    CHECK_CUPTI(ct.enable(CUPTI_ACTIVITY_KIND_MEMSET));
    EXPECT(sim_activity_attach(&other) == -EBUSY, "enabling a kind attaches it again");
    CHECK_CUPTI(ct.disable(CUPTI_ACTIVITY_KIND_MEMSET));
    CHECK_CUPTI(ct.disable(CUPTI_ACTIVITY_KIND_DRIVER));   /* never enabled: nothing to do */

    ct_reset();
    ct_launch(f, NULL, 0, 0);
    CHECK_CU(cuMemsetD8Async(d, 2, 4096, NULL));
    CHECK_CU(cuCtxSynchronize());
    ct_flush();
    EXPECT(ct_nrecords == 0, "nothing recorded with every kind off, got %zu records",
           ct_nrecords);

    CHECK_CUPTI(ct.enable(CUPTI_ACTIVITY_KIND_MEMSET));
    CHECK_CUPTI(ct.finalize());
    EXPECT(sim_activity_attach(&other) == 0, "cuptiFinalize detached the stand-in");
    sim_activity_detach(&other);
    CHECK_CU(cuMemsetD8Async(d, 3, 4096, NULL));
    CHECK_CU(cuCtxSynchronize());
    EXPECT_CUPTI(CUPTI_ERROR_INVALID_OPERATION, ct.flush_all(0));
    EXPECT(ct_nrecords == 0, "nothing recorded after cuptiFinalize, got %zu", ct_nrecords);
    ct_register();
    CHECK_CUPTI(ct.enable(CUPTI_ACTIVITY_KIND_MEMSET));
    CHECK_CU(cuMemsetD8Async(d, 4, 4096, NULL));
    CHECK_CU(cuCtxSynchronize());
    ct_flush();
    EXPECT(ct_count(CUPTI_ACTIVITY_KIND_MEMSET) == 1, "recording again after registering: %zu",
           ct_count(CUPTI_ACTIVITY_KIND_MEMSET));

    CHECK_CU(cuMemFree(d));
    CHECK_CU(cuModuleUnload(mod));
    return 0;
}
