/* SPDX-License-Identifier: MIT */
/*
 * shim_fork_before_init.c - a child forked after the shim started but before CUDA was
 * initialised uses CUDA, and the shim pages its memory as in any process.
 *
 * CUDA only forbids a forked child to use CUDA when its parent had initialised it (the driver
 * then answers the child's calls with CUDA_ERROR_NOT_INITIALIZED); a parent that has not
 * called cuInit may fork children that each initialise CUDA and use it.  The shim, though,
 * may have started in the parent already: cuGetProcAddress works before cuInit, as the CUDA
 * runtime and libraries that load the driver lazily use it.  The scenario asks for an entry
 * point that way, forks, and the child initialises CUDA on a 16 MiB device and allocates,
 * fills and checks 32 MiB, which only fits with the shim paging it out.  Without the shim
 * that allocation fails, as it must; under it the child's transcript must show all of it held
 * and its statistics some migrations.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define BYTES (2 * SH_MIB)
#define WORDS (BYTES / 4)
#define N 16

static uint32_t host[WORDS];
static int in_child;

/* LeakSanitizer's documented hook (its name is the sanitizer's): no leak check when nonzero. */
int __lsan_is_turned_off(void);
__attribute__((visibility("default"), used)) int __lsan_is_turned_off(void)
{
    return in_child;
}

/* The child: CUDA from the start, N buffers filled and checked, then freed. */
static void child(void)
{
    CUfunction fill;
    CUdeviceptr b[N];
    CUresult r = CUDA_SUCCESS;
    int n = 0;

    in_child = 1;
    st_setup(0);
    fill = st_function(sh_res_ptx, "sh_fill");
    for (; n < N && r == CUDA_SUCCESS; n++)
        if ((r = cuMemAlloc(&b[n], BYTES)) == CUDA_SUCCESS)
            CHECK_CU(sh_fill_async(fill, b[n], WORDS, (uint32_t)n, NULL));
    n -= r != CUDA_SUCCESS;
    printf("child: %d of %d buffers allocated (%s)\n", n, N, st_err(r));
    for (int i = 0; i < n; i++) {
        CHECK_CU(cuMemcpyDtoH(host, b[i], BYTES));
        sh_expect_pattern(host, WORDS, (uint32_t)i, "child buffer");
        CHECK_CU(cuMemFree(b[i]));
    }
    printf("child: every buffer allocated held its pattern\n");
    fflush(stdout);
    exit(0);
}

static void scenario(void)
{
    void *pfn = NULL;
    int st;

    CHECK_CU(cuGetProcAddress("cuMemAlloc", &pfn, 3020, 0, NULL));
    printf("parent: cuMemAlloc found before cuInit: %d\n", pfn != NULL);
    fflush(stdout);
    pid_t pid = fork();
    EXPECT(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0)
        child();
    EXPECT(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
           "the child ended with status 0x%x", st);
    printf("parent: the child exited 0\n");
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    const char *env[] = { "ELIXIR_SIM_MEMORY=16M", "ELIXIR_SIM_RACECHECK=fail",
                          "ELIXIR_STATS=1", NULL };
    sh_run_t plain = sh_run_plain_ok(env), shim = sh_run_ok("scenario", env);
    char want[64];

    printf("without the shim:\n%s", plain.out);
    snprintf(want, sizeof(want), "child: %d of %d buffers allocated (CUDA_SUCCESS)", N, N);
    EXPECT(!strstr(plain.out, want), "the simulated device held %d MiB:\n%s", N * 2, plain.out);
    EXPECT(strstr(shim.out, want) && strstr(shim.out, "held its pattern"),
           "under the shim the child did not hold all its buffers:\n%s\n%s", shim.out, shim.err);
    EXPECT(sh_migrations_out(shim.err, 0) > 0, "the child migrated nothing:\n%s", shim.err);
    printf("with the shim:\n%s", shim.out);
    sh_run_free(&plain);
    sh_run_free(&shim);
    return 0;
}
