/* SPDX-License-Identifier: MIT */
/*
 * conc_shim_res_free_async_fence.c - memory a stream-ordered free gave back is taken back by
 * the arena without waiting for unrelated work, and so without holding the device's lock
 * while that work runs (DESIGN.md, invariant 7).
 *
 * Once the stream has reached a cuMemFreeAsync, nothing may use the allocation any more
 * (cuda.h), so the shim takes its memory back (at the next allocation, free or cuMemGetInfo)
 * as soon as the free's event is done.  Before, it also waited there for the last operation
 * it could not see into (the fence, here a graph launch that reaches none of the freed
 * memory), with the lock held: cuMemGetInfo blocked for the whole graph, and so did every
 * other thread's launch on the device.
 *
 * Default budgets, no paging.  L (4 MiB, cuMemAllocAsync), Z and W (2 MiB) are filled; a graph
 * is captured with one kernel that spins (until the main thread ends the spin, SPIN_MS
 * milliseconds at most) and adds 1 to W.  L is freed with cuMemFreeAsync on an idle stream,
 * which is synchronised, and the graph is launched.  Then the main thread calls cuMemGetInfo
 * and, AFTER_MS in, a second thread launches a read of Z on its own stream: both calls must
 * return while the kernel still spins (the main thread ends the spin only once both have
 * returned, so a call that waited for the graph returns after SPIN_MS, however fast or loaded
 * the machine).  W must hold its pattern plus 1 at the end, with the same transcript as
 * without the shim.  Run under the thread sanitizer too.
 */
#define SH_RES_KERNELS
#include <pthread.h>
#include <stdatomic.h>

#include "shim_test.h"

#define SPIN_MS 10000
#define AFTER_MS 50
#define WORDS (SH_MIB / 2)          /* of Z and W */

static uint32_t host[WORDS];
static CUcontext ctx;
static CUdeviceptr z;
static CUstream s_other;
static CUresult other_result;
static int other_early;             /* its launch returned before the kernel was done */
static _Atomic int go;

/* The second thread: AFTER_MS into the main thread's cuMemGetInfo, reads Z on its own stream
 * and notes whether the kernel still spun when that launch returned. */
static void *other(void *arg)
{
    (void)arg;
    other_result = sh_second_thread_start(&go, AFTER_MS, ctx);
    void *args[] = { &z };
    if (other_result == CUDA_SUCCESS)
        other_result = sh_launch(st_function(sh_res_ptx, "sh_peek"), s_other, args);
    other_early = !sh_slow_done;
    return NULL;
}

static void scenario(void)
{
    CUdeviceptr l, w;
    CUstream g, f;
    CUgraph graph;
    CUgraphExec ge;
    pthread_t t;

    ctx = st_setup(0);
    CUfunction fill = st_function(sh_res_ptx, "sh_fill");
    CHECK_CU(cuStreamCreate(&f, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&g, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&s_other, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAllocAsync(&l, 4 * SH_MIB, f));
    CHECK_CU(sh_fill_async(fill, l, SH_MIB, 1, f));
    CHECK_CU(cuMemAlloc(&z, 2 * SH_MIB));
    CHECK_CU(cuMemAlloc(&w, 2 * SH_MIB));
    CHECK_CU(sh_fill_async(fill, z, WORDS, 2, NULL));
    CHECK_CU(sh_fill_async(fill, w, WORDS, 3, NULL));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuStreamBeginCapture(g, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_CU(sh_slow_add_async(st_function(sh_res_ptx, "sh_slow_add"), w, WORDS, SPIN_MS, g));
    CHECK_CU(cuStreamEndCapture(g, &graph));
    CHECK_CU(cuGraphInstantiate(&ge, graph, 0));
    CHECK_CU(cuMemFreeAsync(l, f));
    CHECK_CU(cuStreamSynchronize(f));
    CHECK_CU(cuGraphLaunch(ge, g));
    printf("l freed on its stream, which reached the free; the graph launched\n");
    EXPECT(pthread_create(&t, NULL, other, NULL) == 0, "pthread_create failed");
    go = 1;
    size_t free_b, total;
    CHECK_CU(cuMemGetInfo(&free_b, &total));
    int main_early = !sh_slow_done;
    EXPECT(pthread_join(t, NULL) == 0, "pthread_join failed");
    sh_slow_release = 1;
    CHECK_CU(other_result);
    EXPECT(main_early, "cuMemGetInfo returned only once the graph's kernel was done: it waited "
           "for the graph");
    EXPECT(other_early, "the other thread's launch returned only once the graph's kernel was "
           "done: it waited for the graph");
    printf("cuMemGetInfo and the other thread's launch returned at once\n");
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuMemcpyDtoH(host, w, sizeof(host)));
    sh_expect_pattern_plus(host, WORDS, 3, 1, "w");
    printf("w holds its pattern plus 1\n");
    CHECK_CU(cuGraphExecDestroy(ge));
    CHECK_CU(cuGraphDestroy(graph));
    CUstream streams[] = { f, g, s_other };
    for (int i = 0; i < 3; i++)
        CHECK_CU(cuStreamDestroy(streams[i]));
    CHECK_CU(cuMemFree(z));
    CHECK_CU(cuMemFree(w));
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    const char *env[] = { "ELIXIR_SIM_RACECHECK=fail", NULL };
    sh_run_t plain = sh_run_plain_ok(env), shim = sh_run_ok("scenario", env);
    sh_same_transcript("stream-ordered free, then a graph", &plain, &shim);
    return 0;
}
