/* SPDX-License-Identifier: MIT */
/*
 * shim_res_migrate_errors.c - an eviction whose mapping calls the driver refuses leaves the
 * chunk where it was, mapped and accessible, with its data (DESIGN.md invariant 5), and the
 * memory it was moving into is not handed out while still mapped.
 *
 * Under a 4 MiB GPU budget (two chunks), with evicted chunks kept mapped in host memory,
 * buffers A and B (2 MiB each) are filled by kernels, A first, so that A is the least
 * recently used.  The simulator is then told (sim_vmm_fail) to refuse one call at A's address
 * with CUDA_ERROR_OUT_OF_MEMORY, once, and a third buffer C is allocated and filled, for
 * which the shim tries to evict A.  MODE picks the refused call: the cuMemSetAccess that
 * follows mapping A's new host memory at A's address (set-access), that cuMemMap (map), or the
 * cuMemUnmap of A's GPU memory before it (unmap).  Whatever the shim then does with C (it may
 * start in host memory), every buffer must hold its pattern, checked by kernels, and then A,
 * B and C must go on paging: D and E are allocated and filled, and all five are checked
 * again.  The race checker fails the run on any unordered access, and the transcript must be
 * the one without the shim (where nothing is refused: no VMM call is made at A).
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define BUF (2 * SH_MIB)
#define WORDS (BUF / 4)

static void scenario(void)
{
    const char *mode = getenv("MODE") ? getenv("MODE") : "set-access";
    const char *call = !strcmp(mode, "map") ? "cuMemMap"
                       : !strcmp(mode, "unmap") ? "cuMemUnmap" : "cuMemSetAccess";
    CUdeviceptr buf[5], bad;

    st_setup(0);
    CUfunction fill = st_function(sh_res_ptx, "sh_fill");
    CUfunction verify = st_function(sh_res_ptx, "sh_verify");
    CHECK_CU(cuMemAlloc(&bad, 4));
    sh_alloc_filled(fill, buf, 2, BUF, 1, NULL);
    CHECK_CU(cuCtxSynchronize());
    EXPECT(sim_vmm_fail(call, buf[0], CUDA_ERROR_OUT_OF_MEMORY) == 0, "sim_vmm_fail(%s)", call);
    CHECK_CU(cuMemAlloc(&buf[2], BUF));
    CHECK_CU(sh_fill_async(fill, buf[2], WORDS, 3, NULL));
    CHECK_CU(cuCtxSynchronize());
    int waiting = sim_vmm_fail(call, 0, CUDA_SUCCESS);
    if (sh_calls("cuMemAlloc_v2") >= 0)         /* (without the shim nothing maps at A) */
        EXPECT(waiting == 0, "%s at a was never called: nothing was refused", call);
    for (int i = 0; i < 3; i++)
        sh_expect_verified(verify, buf[i], WORDS, 1 + (uint32_t)i, bad, "after the refusal");
    printf("a, b and c hold their patterns after %s was refused\n", call);
    CHECK_CU(cuMemAlloc(&buf[3], BUF));
    CHECK_CU(cuMemAlloc(&buf[4], BUF));
    CHECK_CU(sh_fill_async(fill, buf[3], WORDS, 4, NULL));
    CHECK_CU(sh_fill_async(fill, buf[4], WORDS, 5, NULL));
    sh_expect_filled_free(verify, buf, 5, BUF, 1, bad);
    CHECK_CU(cuMemFree(bad));
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    const char *modes[] = { "MODE=set-access", "MODE=map", "MODE=unmap" };
    for (int i = 0; i < 3; i++) {
        const char *env[] = { "ELIXIR_SIM_RACECHECK=fail", "ELIXIR_GPU_MEMORY=4M",
                              "ELIXIR_SIM_HOST_VMM=1", modes[i], NULL };
        sh_run_t plain = sh_run_plain_ok(env), shim = sh_run_ok("scenario", env);
        sh_same_transcript(modes[i] + 5, &plain, &shim);
    }
    return 0;
}
