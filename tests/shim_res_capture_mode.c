/* SPDX-License-Identifier: MIT */
/*
 * shim_res_capture_mode.c - the shim's own event queries and host waits do not invalidate a
 * global-mode capture that another thread has open.
 *
 * Under libelixir.so with a 4 MiB GPU budget (two chunks), the main thread begins a capture
 * on stream s in CU_STREAM_CAPTURE_MODE_GLOBAL and captures A += 1.  While the capture is
 * open a second thread, in the default (global) capture mode, allocates three 4 MiB buffers
 * and fills and checks them on its own stream: each allocation evicts the buffer before it,
 * which makes the shim wait for that buffer's last use (cuEventQuery, cuEventSynchronize:
 * potentially unsafe calls, which would invalidate the capture from a thread in global mode).
 * The shim switches the thread to relaxed mode around them, so the capture ends successfully;
 * its graph, launched twice, leaves A = pattern + 2, and the second thread's buffers hold
 * their patterns (race checker in fail mode, as in every test).
 */
#define SH_RES_KERNELS
#include <pthread.h>

#include "shim_test.h"

#define BUF (4 * SH_MIB)
#define WORDS (BUF / 4)

static CUfunction fill, add, verify;
static CUcontext ctx;
static CUdeviceptr worker_buf[3], worker_bad;

/* The second thread: three buffers, each filled and checked on its own stream, while the
 * main thread's capture is open.  It makes no unsafe call of its own. */
static void *worker(void *unused)
{
    CUstream s2;

    (void)unused;
    CHECK_CU(cuCtxSetCurrent(ctx));
    CHECK_CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    sh_alloc_filled(fill, worker_buf, 3, BUF, 10, s2);
    for (uint32_t i = 0; i < 3; i++)
        CHECK_CU(sh_verify_async(verify, worker_buf[i], WORDS, 10 + i, worker_bad + 4 * i, s2));
    return NULL;
}

static void expect_words(CUdeviceptr p, uint32_t seed, uint32_t plus, const char *what)
{
    static uint32_t host[WORDS];

    CHECK_CU(cuMemcpyDtoH(host, p, BUF));
    for (uint64_t i = 0; i < WORDS; i++)
        EXPECT(host[i] == sh_pattern(seed, i) + plus, "%s: word %llu is 0x%08x, expected 0x%08x",
               what, (unsigned long long)i, host[i], sh_pattern(seed, i) + plus);
}

/* Capture A += 1 on s while the worker runs; returns the instantiated graph. */
static CUgraphExec capture_beside_worker(CUstream s, CUdeviceptr *a)
{
    uint64_t n = WORDS;
    uint32_t one = 1;
    void *args[] = { a, &n, &one };
    CUgraph g;
    CUgraphExec ge;
    pthread_t t;

    CHECK_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_CU(sh_launch(add, s, args));
    EXPECT(pthread_create(&t, NULL, worker, NULL) == 0, "pthread_create failed");
    pthread_join(t, NULL);
    CUresult r = cuStreamEndCapture(s, &g);
    EXPECT(r == CUDA_SUCCESS, "cuStreamEndCapture: expected 0 (success), got %d", (int)r);
    CHECK_CU(cuGraphInstantiate(&ge, g, 0));
    CHECK_CU(cuGraphDestroy(g));
    return ge;
}

static void scenario(void)
{
    CUdeviceptr a;
    CUstream s;
    uint32_t wrong[3];

    ctx = st_setup(0);
    fill = st_function(sh_res_ptx, "sh_fill");
    add = st_function(sh_res_ptx, "sh_add");
    verify = st_function(sh_res_ptx, "sh_verify");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&worker_bad, 12));
    CHECK_CU(cuMemsetD8(worker_bad, 0, 12));
    CHECK_CU(cuMemAlloc(&a, BUF));
    CHECK_CU(sh_fill_async(fill, a, WORDS, 1, s));
    CHECK_CU(cuStreamSynchronize(s));
    CUgraphExec ge = capture_beside_worker(s, &a);
    CHECK_CU(cuGraphLaunch(ge, s));
    CHECK_CU(cuGraphLaunch(ge, s));
    CHECK_CU(cuCtxSynchronize());
    expect_words(a, 1, 2, "A");
    for (uint32_t i = 0; i < 3; i++)
        expect_words(worker_buf[i], 10 + i, 0, "worker buffer");
    CHECK_CU(cuMemcpyDtoH(wrong, worker_bad, sizeof(wrong)));
    EXPECT(wrong[0] == 0 && wrong[1] == 0 && wrong[2] == 0,
           "worker's checks found %u %u %u wrong words", wrong[0], wrong[1], wrong[2]);
    CHECK_CU(cuGraphExecDestroy(ge));
    printf("global capture beside a paging thread: capture ended, results right\n");
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_GPU_MEMORY=4M", "ELIXIR_STATS=1", NULL };

    sh_scenario_child(argc, argv, scenario);
    sh_run_t r = sh_run_migrations(env);
    EXPECT(sh_stat(r.err, "migrations to host ") > 0, "nothing was paged out:\n%s", r.err);
    sh_run_free(&r);
    return 0;
}
