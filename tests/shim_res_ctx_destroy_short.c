/* SPDX-License-Identifier: MIT */
/*
 * shim_res_ctx_destroy_short.c - the arena's context is destroyed while another context of
 * the device lives on, and the memory pinned for the evicted chunks is short.
 *
 * Where evicted chunks are unmapped, their contents live in pinned host memory of the arena's
 * context, which the driver frees with that context.  Before it goes, the arena moves them
 * into memory of the context it adopts, the other one: a copy, for which the old and the new
 * pieces must exist at once.  When the machine has no more to pin, the contents must still
 * not be lost: the pieces the arena keeps spare (freed first) and each old piece freed after
 * its copy make room for the next.
 *
 * Context a is made first, the arena set up there by a small buffer; context b then makes
 * five 2 MiB buffers and fills them on a stream of its own under a 4 MiB GPU budget, so that
 * three are evicted into a's pinned memory.  Other processes then pin what the machine has
 * left (sim_other_process_pinned, of 64 MiB), a is destroyed from b, the other processes let
 * their memory go, and each of b's buffers must hold its pattern.  The transcripts must
 * match without and with the shim (evicted chunks unmapped; mapped, where nothing is pinned
 * in pieces, as a guard).
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define MID (2 * SH_MIB)
#define N 5

static void scenario(void)
{
    CUcontext a, b;
    CUstream s;
    CUdeviceptr small, buf[N];
    uint32_t *host = malloc(MID);

    EXPECT(host, "out of memory");
    CHECK_CU(cuInit(0));
    CHECK_CU(cuCtxCreate(&a, NULL, 0, 0));
    CHECK_CU(cuMemAlloc(&small, 1000));
    CHECK_CU(cuCtxCreate(&b, NULL, 0, 0));
    CUfunction fill = st_function(sh_res_ptx, "sh_fill");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (uint32_t i = 0; i < N; i++) {
        CHECK_CU(cuMemAlloc(&buf[i], MID));
        CHECK_CU(sh_fill_async(fill, buf[i], MID / 4, 10 + i, s));
    }
    CHECK_CU(cuStreamSynchronize(s));
    uint64_t taken = 64 * SH_MIB;
    while (taken && sim_other_process_pinned(taken) != 0)
        taken -= SH_MIB;
    EXPECT(taken, "other processes could pin nothing");
    CHECK_CU(cuCtxDestroy(a));
    printf("context a destroyed with the machine's pinned memory taken\n");
    EXPECT(sim_other_process_pinned(0) == 0, "the other processes letting their memory go");
    for (uint32_t i = 0; i < N; i++) {
        char what[64];

        snprintf(what, sizeof(what), "b's buffer %u", i);
        CHECK_CU(cuMemcpyDtoH(host, buf[i], MID));
        sh_expect_pattern(host, MID / 4, 10 + i, what);
        printf("%s holds its pattern\n", what);
        CHECK_CU(cuMemFree(buf[i]));
    }
    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuCtxDestroy(b));
    free(host);
}

static void run(const char *what, const char *host_vmm)
{
    const char *plain_env[] = { "ELIXIR_SIM_RACECHECK=fail", "ELIXIR_SIM_HOST_MEMORY=64M",
                                host_vmm, NULL };
    const char *env[] = { "ELIXIR_SIM_RACECHECK=fail", "ELIXIR_GPU_MEMORY=4M",
                          "ELIXIR_SIM_HOST_MEMORY=64M", "ELIXIR_STATS=1", host_vmm, NULL };
    sh_run_t plain = sh_run_plain_ok(plain_env), shim = sh_run_ok("scenario", env);

    EXPECT(sh_stat(shim.err, "migrations to host ") >= 3, "%s: too few evictions:\n%s", what,
           shim.err);
    sh_same_transcript(what, &plain, &shim);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
