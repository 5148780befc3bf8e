/* SPDX-License-Identifier: MIT */
/*
 * shim_res_budget_shrink.c - when memory outside the budget takes the device, the budget
 * comes down instead of allocations failing.
 *
 * The simulated device has 10 MiB, all of it the GPU budget (ELIXIR_GPU_MEMORY=100%).  Once
 * the shim has set its budget up, the scenario loads a module with a 3 MiB global variable,
 * which the driver places in device memory the shim does not see.  Five 2 MiB buffers are
 * then allocated and filled by kernels: the driver refuses the fourth chunk the budget still
 * allows, and the shim must bring its budget down to what it holds (saying so once, naming the
 * new figure) and page the rest to host memory.  Every buffer keeps its data, the GPU peak
 * stays at what the device could give, and the transcript equals the one without the shim
 * (on a device large enough for both runs to succeed, the plain one needs 13 MiB).
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define NBUF 5
#define BYTES (2 * SH_MIB)

static const char global_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .global .align 8 .b8 outside[3145728];\n";

static void scenario(void)
{
    CUdeviceptr buf[NBUF], bad, g;
    CUmodule m;
    size_t gbytes;
    CUfunction fill, verify;

    sh_res_start(&fill, &verify, &bad);         /* the shim's budget is set up here */
    CHECK_CU(cuModuleLoadData(&m, global_ptx));
    CHECK_CU(cuModuleGetGlobal(&g, &gbytes, m, "outside"));
    printf("a %zu-byte global outside the budget\n", gbytes);
    sh_alloc_filled(fill, buf, NBUF, BYTES, 30, NULL);
    sh_expect_filled_free(verify, buf, NBUF, BYTES, 30, bad);
    CHECK_CU(cuMemFree(bad));
    CHECK_CU(cuModuleUnload(m));
}

int main(int argc, char **argv)
{
    static const char *const plain_env[] = { "ELIXIR_SIM_MEMORY=16M", NULL };
    static const char *const env[] = { "ELIXIR_SIM_MEMORY=10M", "ELIXIR_GPU_MEMORY=100%",
                                       "ELIXIR_HOST_MEMORY=64M", "ELIXIR_STATS=1",
                                       "ELIXIR_SIM_RACECHECK=fail", NULL };

    sh_scenario_child(argc, argv, scenario);
    sh_run_t plain = sh_run_plain_ok(plain_env);
    sh_run_t shim = sh_run_ok("scenario", env);
    EXPECT(sh_count(shim.err, "no GPU memory left within the 10 MiB budget") == 1 &&
               strstr(shim.err, "the budget is now "),
           "the budget's coming down was not reported once:\n%s", shim.err);
    long long peak = sh_stat(shim.err, "GPU peak ");
    EXPECT(peak > 0 && peak <= 6, "GPU peak %lld MiB with 3 of the device's 10 MiB taken:\n%s",
           peak, shim.err);
    EXPECT(sh_stat(shim.err, "migrations to host ") > 0 && sh_stat(shim.err, "to GPU ") > 0,
           "nothing was paged out and back:\n%s", shim.err);
    sh_compare(plain.out, shim.out);
    printf("%s", shim.out);
    sh_run_free(&plain);
    sh_run_free(&shim);
    return 0;
}
