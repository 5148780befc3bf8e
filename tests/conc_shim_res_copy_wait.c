/* SPDX-License-Identifier: MIT */
/*
 * conc_shim_res_copy_wait.c - while a synchronous copy waits for the GPU in the driver, other
 * threads still launch and allocate on the same device (DESIGN.md, invariant 7: no lock of
 * the shim is held across a call that can block on the GPU).
 *
 * One simulated device.  The main thread fills buffer A, enqueues on the legacy default
 * stream a kernel that spins until the second thread is done (at most SPIN_MS milliseconds)
 * and then adds 1 to A (sh_slow_add), and copies A to the host with cuMemcpyDtoH, which waits
 * for that kernel.  A second thread, AFTER_MS into the copy, allocates buffer B and enqueues a
 * kernel filling it on a stream of its own (neither waits for the GPU), then ends the spin.
 * When the copy returns, the second thread must be done: where the copy held up the second
 * thread, the kernel spins its SPIN_MS and the copy returns first, however fast or loaded the
 * machine.  Then the host copy must hold what the kernel wrote, and B its fill, as without
 * the shim.  Run under the thread sanitizer too (tests named conc_*).
 */
#define SH_RES_KERNELS
#include <pthread.h>
#include <stdatomic.h>

#include "shim_test.h"

#define BYTES (2 * SH_MIB)
#define WORDS (BYTES / 4)
#define SPIN_MS 10000
#define AFTER_MS 50

static uint32_t host[WORDS];
static CUcontext ctx;
static CUdeviceptr b;
static CUstream sb;
static CUresult other_result;
static _Atomic int go, other_done;

/* The second thread: once the copy has begun, allocates B and fills it on its own stream. */
static void *other(void *arg)
{
    (void)arg;
    other_result = sh_second_thread_start(&go, AFTER_MS, ctx);
    if (other_result == CUDA_SUCCESS)
        other_result = cuMemAlloc(&b, BYTES);
    if (other_result == CUDA_SUCCESS)
        other_result = sh_fill_async(st_function(sh_res_ptx, "sh_fill"), b, WORDS, 6, sb);
    other_done = 1;
    sh_slow_release = 1;
    return NULL;
}

static void scenario(void)
{
    CUdeviceptr a;
    pthread_t t;

    ctx = st_setup(0);
    CUfunction slow = st_function(sh_res_ptx, "sh_slow_add");
    CHECK_CU(cuMemAlloc(&a, BYTES));
    CHECK_CU(sh_fill_async(st_function(sh_res_ptx, "sh_fill"), a, WORDS, 5, NULL));
    CHECK_CU(cuStreamCreate(&sb, CU_STREAM_NON_BLOCKING));
    EXPECT(pthread_create(&t, NULL, other, NULL) == 0, "pthread_create failed");

    CHECK_CU(sh_slow_add_async(slow, a, WORDS, SPIN_MS, NULL));
    go = 1;
    CHECK_CU(cuMemcpyDtoH(host, a, BYTES));
    EXPECT(other_done, "the other thread was held up while the copy waited for the GPU");
    printf("the other thread allocated and launched while the copy waited\n");
    sh_expect_pattern_plus(host, WORDS, 5, 1, "the copy of A");
    printf("the copy holds what the kernel wrote\n");

    EXPECT(pthread_join(t, NULL) == 0, "pthread_join failed");
    CHECK_CU(other_result);
    CHECK_CU(cuStreamSynchronize(sb));
    CHECK_CU(cuMemcpyDtoH(host, b, BYTES));
    sh_expect_pattern(host, WORDS, 6, "B");
    printf("B holds its fill\n");
    CHECK_CU(cuStreamDestroy(sb));
    CHECK_CU(cuMemFree(a));
    CHECK_CU(cuMemFree(b));
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    const char *env[] = { "ELIXIR_SIM_RACECHECK=fail", "ELIXIR_GPU_MEMORY=8M", NULL };
    sh_run_t plain = sh_run_plain_ok(env), shim = sh_run_ok("scenario", env);

    sh_same_transcript("one device", &plain, &shim);
    return 0;
}
