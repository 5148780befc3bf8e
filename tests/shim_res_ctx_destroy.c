/* SPDX-License-Identifier: MIT */
/*
 * shim_res_ctx_destroy.c - the application destroys the context the arena was set up in and
 * goes on in another context of the device: memory is paged there as before.
 *
 * The arena's own copy and join streams and its reusable events are objects of the context it
 * was set up in, while its memory is not (cuCtxDestroy leaves cuMemCreate memory alone).
 * Before, after cuCtxDestroy of that context every migration failed on the destroyed copy
 * stream: with evicted chunks mapped nothing moved any more (kernels ran on host memory),
 * with them unmapped a kernel reaching one was refused with CUDA_ERROR_OUT_OF_MEMORY.
 *
 * Under a 4 MiB GPU budget (two chunks): in a context made with cuCtxCreate, six 2 MiB
 * buffers (three from cuMemAlloc, three from cuMemAllocAsync) are filled on a stream of the
 * context, filled again on its legacy stream (each coming back into GPU memory), checked, and
 * freed, the last three with cuMemFreeAsync on the stream just before the stream and the
 * context are destroyed.  MODE=two does the same in a
 * second context made afterwards.  The transcripts must match without and with the shim, with
 * evicted chunks mapped and unmapped, and the second context must migrate as many chunks into
 * GPU memory as the first (the statistics of MODE=two against MODE=one).
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define BYTES (2 * SH_MIB)
#define N 6

/* In a new context: N buffers filled twice, checked and freed; then the context destroyed. */
static void one_context(const char *what)
{
    CUcontext ctx;

    CHECK_CU(cuCtxCreate(&ctx, NULL, 0, 0));
    sh_page_round(what, N, BYTES);
    CHECK_CU(cuCtxDestroy(ctx));
    printf("%s: %d buffers held their patterns, context destroyed\n", what, N);
}

static void scenario(void)
{
    const char *mode = getenv("MODE");

    CHECK_CU(cuInit(0));
    one_context("first context");
    if (mode && !strcmp(mode, "two"))
        one_context("second context");
}

static void run(const char *what, const char *host_vmm)
{
    const char *plain_env[] = { "ELIXIR_SIM_RACECHECK=fail", host_vmm, "MODE=two", NULL };
    const char *one_env[] = { "ELIXIR_SIM_RACECHECK=fail", "ELIXIR_GPU_MEMORY=4M",
                              "ELIXIR_STATS=1", host_vmm, "MODE=one", NULL };
    const char *two_env[] = { "ELIXIR_SIM_RACECHECK=fail", "ELIXIR_GPU_MEMORY=4M",
                              "ELIXIR_STATS=1", host_vmm, "MODE=two", NULL };
    sh_run_t one = sh_run_ok("scenario", one_env);
    long long in_one = sh_stat(one.err, "to GPU ");
    sh_run_t plain = sh_run_plain_ok(plain_env), two = sh_run_ok("scenario", two_env);
    long long in_two = sh_stat(two.err, "to GPU ");

    EXPECT(in_one > 0 && in_two == 2 * in_one,
           "%s: migrations to GPU %lld in one context, %lld in two:\n%s", what, in_one, in_two,
           two.err);
    printf("%s: migrations to GPU %lld in one context, %lld in two\n", what, in_one, in_two);
    sh_run_free(&one);
    sh_same_transcript(what, &plain, &two);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
