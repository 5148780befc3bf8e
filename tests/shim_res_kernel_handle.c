/* SPDX-License-Identifier: MIT */
/*
 * shim_res_kernel_handle.c - a kernel launched by its CUkernel handle (cuLibraryGetKernel,
 * passed to cuLaunchKernel in a CUfunction's place) has its arguments seen like any other.
 *
 * cuFuncGetParamInfo takes a CUfunction (the simulator refuses a CUkernel there, as the
 * documentation allows): the shim must ask cuKernelGetParamInfo instead.  With a 4 MiB GPU
 * budget and evicted chunks unmapped (ELIXIR_SIM_HOST_VMM=0), three 2 MiB buffers are filled
 * by the library's sh_fill kernel, launched through its CUkernel handle, and checked by its
 * sh_verify kernel, also through the handle: every launch brings back what it reaches, the
 * data is right, and nothing was pinned (a launch whose arguments the shim could not read
 * would have pinned every chunk in GPU memory).  The transcript equals the one without the
 * shim, and the race checker fails the run on any race.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define NBUF 3
#define BYTES (2 * SH_MIB)

static void scenario(void)
{
    CUlibrary lib;
    CUkernel kfill, kverify;
    CUdeviceptr buf[NBUF], bad;

    st_setup(0);
    CHECK_CU(cuLibraryLoadData(&lib, sh_res_ptx, NULL, NULL, 0, NULL, NULL, 0));
    CHECK_CU(cuLibraryGetKernel(&kfill, lib, "sh_fill"));
    CHECK_CU(cuLibraryGetKernel(&kverify, lib, "sh_verify"));
    CUfunction fill = (CUfunction)(void *)kfill, verify = (CUfunction)(void *)kverify;
    CHECK_CU(cuMemAlloc(&bad, 4));
    sh_alloc_filled(fill, buf, NBUF, BYTES, 20, NULL);
    sh_expect_filled_free(verify, buf, NBUF, BYTES, 20, bad);
    CHECK_CU(cuMemFree(bad));
    CHECK_CU(cuLibraryUnload(lib));
}

int main(int argc, char **argv)
{
    static const char *const plain_env[] = { "ELIXIR_SIM_RACECHECK=fail", NULL };
    static const char *const env[] = { "ELIXIR_SIM_RACECHECK=fail", "ELIXIR_SIM_HOST_VMM=0",
                                       "ELIXIR_GPU_MEMORY=4M", "ELIXIR_STATS=1", NULL };

    sh_scenario_child(argc, argv, scenario);
    sh_run_t plain = sh_run_plain_ok(plain_env);
    sh_run_t shim = sh_run_ok("scenario", env);
    EXPECT(sh_stat(shim.err, "migrations to host ") > 0 && sh_stat(shim.err, "to GPU ") > 0,
           "nothing was paged out and back:\n%s", shim.err);
    EXPECT(strstr(shim.err, "chunks pinned 0 (total 0,"),
           "chunks were pinned: a launch's arguments were not read:\n%s", shim.err);
    sh_compare(plain.out, shim.out);
    printf("%s", shim.out);
    sh_run_free(&plain);
    sh_run_free(&shim);
    return 0;
}
