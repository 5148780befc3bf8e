/* SPDX-License-Identifier: MIT */
/*
 * shim_res_fork.c - fork after arena allocations (some paged out, a kernel in flight): the
 * child exits cleanly and its CUDA calls answer as the driver answers in a forked child; the
 * parent's memory is intact.
 *
 * The scenario allocates two 4 MiB buffers and a small one (with a 4 MiB GPU budget under the
 * shim, so the first buffer is paged out), fills them, and forks while the last fill still
 * runs.  The child tries allocation, free, memory information, pointer queries, copies,
 * a memset, a launch and synchronisation on the parent's memory, prints each result, and
 * exits normally.  The parent waits for it, then checks all its buffers, with a copy and with
 * a kernel, and frees them.  The test runs the scenario without and with libelixir.so: the
 * transcripts must be the same (every CUDA call in the child: CUDA_ERROR_NOT_INITIALIZED),
 * and both children must exit with status 0.
 *
 * In a sanitizer build the child does not check for leaks: it holds the simulator's state
 * without the simulator's threads, whose stacks referred to some of it (objects the executor
 * thread held at the fork are reported as leaked, with or without the shim).
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define BUF (4 * SH_MIB)
#define WORDS (BUF / 4)

#define SHOW(what, call) printf("child %-28s %s\n", what, st_err(call))

static CUfunction fill, verify;
static int in_child;

/* LeakSanitizer's documented hook (its name is the sanitizer's): no leak check when nonzero. */
int __lsan_is_turned_off(void);
__attribute__((visibility("default"), used)) int __lsan_is_turned_off(void)
{
    return in_child;
}

static void child(CUdeviceptr a, CUdeviceptr b, CUdeviceptr small)
{
    static uint32_t host[1024];
    CUdeviceptr d = 0, base;
    size_t free_b, total, size;
    unsigned type;
    CUstream s;

    SHOW("cuMemAlloc", cuMemAlloc(&d, 4096));
    SHOW("cuMemAlloc 8 MiB", cuMemAlloc(&d, 2 * BUF));
    SHOW("cuMemGetInfo", cuMemGetInfo(&free_b, &total));
    SHOW("cuPointerGetAttribute", cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                                        a));
    SHOW("cuMemGetAddressRange", cuMemGetAddressRange(&base, &size, b + 100));
    SHOW("cuMemcpyDtoH", cuMemcpyDtoH(host, a, sizeof(host)));
    SHOW("cuMemcpyHtoD", cuMemcpyHtoD(b, host, sizeof(host)));
    SHOW("cuMemsetD8", cuMemsetD8(small, 1, 4096));
    SHOW("cuLaunchKernel", sh_fill_async(fill, b, WORDS, 99, NULL));
    SHOW("cuStreamCreate", cuStreamCreate(&s, 0));
    SHOW("cuCtxSynchronize", cuCtxSynchronize());
    SHOW("cuMemFree small", cuMemFree(small));
    SHOW("cuMemFree a", cuMemFree(a));
    fflush(stdout);
    exit(0);
}

/* Buffer p holds sh_pattern(seed, i), by a copy and by a kernel. */
static void expect_intact(CUdeviceptr p, uint32_t seed, CUdeviceptr bad, const char *what)
{
    static uint32_t host[WORDS];
    char by_kernel[64];

    CHECK_CU(cuMemcpyDtoH(host, p, BUF));
    sh_expect_pattern(host, WORDS, seed, what);
    snprintf(by_kernel, sizeof(by_kernel), "%s read by a kernel", what);
    sh_expect_verified(verify, p, WORDS, seed, bad, by_kernel);
}

static void scenario(void)
{
    CUdeviceptr a, b, small;
    CUstream s;
    int st;

    st_setup(0);
    fill = st_function(sh_res_ptx, "sh_fill");
    verify = st_function(sh_res_ptx, "sh_verify");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&a, BUF));
    CHECK_CU(sh_fill_async(fill, a, WORDS, 1, s));
    CHECK_CU(cuMemAlloc(&b, BUF));
    CHECK_CU(cuMemAlloc(&small, 4096));
    CHECK_CU(sh_fill_async(fill, b, WORDS, 2, s));      /* in flight at the fork */
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        in_child = 1;
        child(a, b, small);
    }
    EXPECT(pid > 0 && waitpid(pid, &st, 0) == pid, "fork or waitpid failed");
    printf("child exit status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    CHECK_CU(cuStreamSynchronize(s));
    expect_intact(a, 1, small, "a");
    expect_intact(b, 2, small, "b");
    CHECK_CU(cuMemFree(small));
    CHECK_CU(cuMemFree(b));
    CHECK_CU(cuMemFree(a));
    CHECK_CU(cuStreamDestroy(s));
    printf("parent: memory intact after the fork\n");
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_GPU_MEMORY=4M", "ELIXIR_STATS=1", NULL };
    sh_run_t plain, shim;

    sh_scenario_child(argc, argv, scenario);
    plain = sh_run_plain_ok(NULL);
    shim = sh_run_ok("scenario", env);
    EXPECT(strcmp(plain.out, shim.out) == 0, "transcripts differ:\nwithout the shim:\n%s\n"
           "with the shim:\n%s", plain.out, shim.out);
    EXPECT(strstr(shim.out, "child exit status 0\n") &&
               sh_count(shim.out, "CUDA_ERROR_NOT_INITIALIZED") == 13,
           "the child did not fail every call and exit 0:\n%s", shim.out);
    EXPECT(sh_count(shim.err, "statistics of process") == 2 &&
               sh_stat(shim.err, "migrations to host ") > 0,
           "expected statistics of both processes, with chunks paged out:\n%s", shim.err);
    printf("%s", shim.out);
    sh_run_free(&plain);
    sh_run_free(&shim);
    return 0;
}
