/* SPDX-License-Identifier: MIT */
/*
 * conc_shim_res_free_wait.c - an allocation that fits only once a pending stream-ordered free
 * completes waits for it without the device's lock: other threads still launch meanwhile
 * (DESIGN.md, invariant 7).
 *
 * One simulated device, a 4 MiB GPU budget and a 2 MiB host budget: three chunks in all.
 * Buffers A, B and C (2 MiB each; B from cuMemAllocAsync) are filled, which fills every
 * budget.  On stream s a kernel spins (until the second thread ends the spin, SPIN_MS
 * milliseconds at most) and then adds 1 to B, and B is freed with cuMemFreeAsync on s, behind
 * it.  The main thread then allocates D (2 MiB): under the shim it fits only once the
 * free is done, so the allocation must wait for the kernel.  A second thread, AFTER_MS into that
 * allocation, launches a kernel that reads C on a stream of its own and then ends the spin: its
 * launch must return while the kernel still spins (were it held up by the allocation, the
 * kernel would spin its SPIN_MS first, however fast or loaded the machine), and the
 * allocation only once the kernel is done.  D is filled and checked, as are A and C, and the
 * transcript must equal the one without the shim.  Run under the thread sanitizer too (tests
 * named conc_*).
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
static CUdeviceptr c_buf;
static CUresult other_result;
static int other_early;             /* the second thread's launch returned before the kernel
                                     * was done */
static _Atomic int go;

/* The second thread: once the main thread's allocation has begun, reads C on a stream of its
 * own, notes whether the kernel was still spinning when that launch returned, and ends the
 * spin. */
static void *other(void *arg)
{
    CUstream s;
    (void)arg;

    other_result = sh_second_thread_start(&go, AFTER_MS, ctx);
    if (other_result == CUDA_SUCCESS)
        other_result = cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    if (other_result != CUDA_SUCCESS) {
        sh_slow_release = 1;
        return NULL;
    }
    void *args[] = { &c_buf };
    other_result = sh_launch(st_function(sh_res_ptx, "sh_peek"), s, args);
    other_early = !sh_slow_done;
    sh_slow_release = 1;
    if (other_result == CUDA_SUCCESS)
        other_result = cuStreamSynchronize(s);
    if (other_result == CUDA_SUCCESS)
        other_result = cuStreamDestroy(s);
    return NULL;
}

static void scenario(void)
{
    CUdeviceptr abc[3], d;
    CUstream s;
    pthread_t t;

    ctx = st_setup(0);
    CUfunction fill = st_function(sh_res_ptx, "sh_fill");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    sh_alloc_filled(fill, &abc[0], 1, BYTES, 1, NULL);
    CHECK_CU(cuMemAllocAsync(&abc[1], BYTES, s));       /* (freed stream-ordered later) */
    CHECK_CU(sh_fill_async(fill, abc[1], WORDS, 2, s));
    sh_alloc_filled(fill, &abc[2], 1, BYTES, 3, NULL);
    c_buf = abc[2];
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(sh_slow_add_async(st_function(sh_res_ptx, "sh_slow_add"), abc[1], WORDS, SPIN_MS,
                               s));
    CHECK_CU(cuMemFreeAsync(abc[1], s));
    printf("b freed on its stream, behind a kernel that uses it\n");
    EXPECT(pthread_create(&t, NULL, other, NULL) == 0, "pthread_create failed");
    go = 1;
    CHECK_CU(cuMemAlloc(&d, BYTES));
    if (getenv("LD_PRELOAD"))           /* under the shim d fits once b's free is done */
        EXPECT(sh_slow_done, "the allocation returned while the kernel using b ran: it did not "
               "wait for the free");
    printf("d allocated\n");
    EXPECT(pthread_join(t, NULL) == 0, "pthread_join failed");
    CHECK_CU(other_result);
    EXPECT(other_early, "the other thread's launch returned only once the kernel was done: it "
           "waited for the main thread's allocation");
    printf("the other thread's launch returned at once\n");

    CHECK_CU(sh_fill_async(fill, d, WORDS, 4, NULL));
    CUdeviceptr check[] = { abc[0], abc[2], d };
    const uint32_t seeds[] = { 1, 3, 4 };
    for (int i = 0; i < 3; i++) {
        CHECK_CU(cuMemcpyDtoH(host, check[i], BYTES));
        sh_expect_pattern(host, WORDS, seeds[i], "a buffer");
        CHECK_CU(cuMemFree(check[i]));
    }
    printf("a, c and d hold their patterns\n");
    CHECK_CU(cuStreamDestroy(s));
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_SIM_RACECHECK=fail", "ELIXIR_GPU_MEMORY=4M",
                                       "ELIXIR_HOST_MEMORY=2M", "ELIXIR_STATS=1", NULL };

    sh_scenario_child(argc, argv, scenario);
    sh_run_t plain = sh_run_plain_ok(env), shim = sh_run_ok("scenario", env);
    sh_same_transcript("a free waited for by an allocation", &plain, &shim);
    return 0;
}
