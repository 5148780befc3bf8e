/* SPDX-License-Identifier: MIT */
/*
 * shim_res_ctx_destroy_budget.c - the budgets come through a destruction of the arena's
 * context with no other context alive, the adoption of a new one and the return of the
 * chunks kept meanwhile: afterwards the whole capacity can be used again.
 *
 * Where evicted chunks are unmapped, the chunks the arena keeps when its context goes alone
 * (stream-ordered buffers) are held in plain host memory, charged to the host budget, then
 * moved into pinned memory of the next context.  A charge lost or counted twice on the way
 * shows as memory that can no longer be had.  Under a 4 MiB GPU budget and a 12 MiB host
 * budget (16 MiB in all; without the shim, a device of 16 MiB), context a fills three 2 MiB
 * stream-ordered buffers (one evicted) and is destroyed; context b reads them back, frees
 * them, then allocates and fills 2 MiB buffers for as much free memory as cuMemGetInfo
 * reports, checks each and frees them: the transcripts must match without and with the
 * shim, evicted chunks mapped and unmapped.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define MID (2 * SH_MIB)
#define N 3
#define MAXBUF 16

static void scenario(void)
{
    CUcontext a, b;
    CUstream s;
    CUdeviceptr async[N], buf[MAXBUF];
    uint32_t *host = malloc(MID);

    EXPECT(host, "out of memory");
    CHECK_CU(cuInit(0));
    CHECK_CU(cuCtxCreate(&a, NULL, 0, 0));
    CUfunction fill = st_function(sh_res_ptx, "sh_fill");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (uint32_t i = 0; i < N; i++) {
        CHECK_CU(cuMemAllocAsync(&async[i], MID, s));
        CHECK_CU(sh_fill_async(fill, async[i], MID / 4, 10 + i, s));
    }
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuCtxDestroy(a));

    CHECK_CU(cuCtxCreate(&b, NULL, 0, 0));
    fill = st_function(sh_res_ptx, "sh_fill");
    for (uint32_t i = 0; i < N; i++) {
        CHECK_CU(cuMemcpyDtoH(host, async[i], MID));
        sh_expect_pattern(host, MID / 4, 10 + i, "a stream-ordered buffer");
        CHECK_CU(cuMemFree(async[i]));
    }
    printf("the stream-ordered buffers came through\n");
    size_t n = st_free_mem() / MID;
    EXPECT(n <= MAXBUF, "%zu buffers would fill the free memory", n);
    for (uint32_t i = 0; i < n; i++) {
        CHECK_CU(cuMemAlloc(&buf[i], MID));
        CHECK_CU(sh_fill_async(fill, buf[i], MID / 4, 20 + i, NULL));
    }
    for (uint32_t i = 0; i < n; i++) {
        CHECK_CU(cuMemcpyDtoH(host, buf[i], MID));
        sh_expect_pattern(host, MID / 4, 20 + i, "a buffer of the free memory");
        CHECK_CU(cuMemFree(buf[i]));
    }
    printf("the free memory reported was allocated and filled\n");
    CHECK_CU(cuCtxDestroy(b));
    free(host);
}

static void run(const char *what, const char *host_vmm)
{
    const char *plain_env[] = { "ELIXIR_SIM_RACECHECK=fail", "ELIXIR_SIM_MEMORY=16M",
                                host_vmm, NULL };
    const char *env[] = { "ELIXIR_SIM_RACECHECK=fail", "ELIXIR_GPU_MEMORY=4M",
                          "ELIXIR_HOST_MEMORY=12M", "ELIXIR_STATS=1", host_vmm, NULL };
    sh_run_t plain = sh_run_plain_ok(plain_env), shim = sh_run_migrations(env);

    EXPECT(sh_stat(shim.err, "migrations to host ") > 0, "%s: nothing was evicted:\n%s", what,
           shim.err);
    sh_same_transcript(what, &plain, &shim);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
