/* SPDX-License-Identifier: MIT */
/*
 * shim_res_primary_reset.c - the arena is set up in a device's primary context, which the
 * application then resets (cuDevicePrimaryCtxReset, MODE=reset) or releases for the last time
 * and retains again (MODE=release), and goes on in it: memory is paged as before.
 *
 * A reset "destroys all allocations and resets all state" of the primary context, the
 * arena's own copy and join streams and its reusable events included, as cuCtxDestroy does
 * for a created context (shim_res_ctx_destroy).  The primary context keeps its handle, so the
 * arena must notice that it is the one going away.
 *
 * Under a 4 MiB GPU budget (two chunks): six 2 MiB buffers (three from cuMemAlloc, three from
 * cuMemAllocAsync) are filled on a stream of the primary context, filled again on its legacy
 * stream (each coming back into GPU memory), checked and freed, and the stream destroyed;
 * then the primary context is reset (or released and retained), and the same is done again.
 * The transcripts must match without and with the shim, with evicted chunks mapped and
 * unmapped, and the second round must migrate as many chunks into GPU memory as the first
 * (the statistics of a run with one round against one with two).
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define BYTES (2 * SH_MIB)
#define N 6

/* In the current (primary) context: N buffers filled twice, checked and freed. */
static void one_round(const char *what)
{
    sh_page_round(what, N, BYTES);
    printf("%s: %d buffers held their patterns\n", what, N);
}

static void scenario(void)
{
    const char *mode = getenv("MODE");
    CUcontext p;

    st_setup(0);
    one_round("first round");
    if (!mode || !strcmp(mode, "one"))
        return;
    if (!strcmp(mode, "reset")) {
        CHECK_CU(cuDevicePrimaryCtxReset(0));
    } else {
        CHECK_CU(cuDevicePrimaryCtxRelease(0));     /* the last reference */
        CHECK_CU(cuDevicePrimaryCtxRetain(&p, 0));
        CHECK_CU(cuCtxSetCurrent(p));
    }
    one_round("second round");
}

static void run(const char *what, const char *host_vmm)
{
    const char *one_env[] = { "ELIXIR_SIM_RACECHECK=fail", "ELIXIR_GPU_MEMORY=4M",
                              "ELIXIR_STATS=1", host_vmm, "MODE=one", NULL };
    sh_run_t one = sh_run_ok("scenario", one_env);
    long long in_one = sh_stat(one.err, "to GPU ");
    static const char *const modes[] = { "MODE=reset", "MODE=release" };

    for (int m = 0; m < 2; m++) {
        const char *plain_env[] = { "ELIXIR_SIM_RACECHECK=fail", host_vmm, modes[m], NULL };
        const char *two_env[] = { "ELIXIR_SIM_RACECHECK=fail", "ELIXIR_GPU_MEMORY=4M",
                                  "ELIXIR_STATS=1", host_vmm, modes[m], NULL };
        sh_run_t plain = sh_run_plain_ok(plain_env), two = sh_run_ok("scenario", two_env);
        long long in_two = sh_stat(two.err, "to GPU ");

        EXPECT(in_one > 0 && in_two == 2 * in_one,
               "%s, %s: migrations to GPU %lld in one round, %lld in two:\n%s", what, modes[m],
               in_one, in_two, two.err);
        printf("%s, %s: migrations to GPU %lld in one round, %lld in two\n", what, modes[m],
               in_one, in_two);
        sh_same_transcript(what, &plain, &two);
    }
    sh_run_free(&one);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
