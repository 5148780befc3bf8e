/* SPDX-License-Identifier: MIT */
/*
 * shim_res_free_async.c - cuMemFreeAsync of arena memory is stream-ordered: the call does not
 * wait, the range is not handed out again while work enqueued before the free may still use
 * it, and the memory comes back once the stream passes the free.  A free captured into a
 * graph leaves the memory to the graph.
 *
 * Under libelixir.so, on a non-blocking stream s, a host function holds s closed (a gate that
 * the test opens), and a kernel queued behind it reads a 64 KiB buffer A; then A is freed with
 * cuMemFreeAsync on s.  The free must return while the gate is still closed (the gate would
 * otherwise time out after 5 s and say so).  A new 64 KiB allocation B must get another
 * range: a memset of B on a second stream t then races with nothing, whereas were B given A's
 * range, the race checker (ELIXIR_SIM_RACECHECK=fail) would report the memset against the
 * kernel's read.  Once the gate opens and s is synchronised, the kernel found A's data and the
 * next 64 KiB allocation gets A's range back.  The same with an 8 MiB buffer L: cuMemGetInfo
 * reports its memory in use while the free is pending and free once s passed it.  A pending
 * free cannot be freed again (CUDA_ERROR_INVALID_VALUE from cuMemFree and cuMemFreeAsync).
 * Finally, a buffer E freed in a stream capture, after a captured kernel that adds 1 to E and
 * a captured copy of E into F: the graph runs twice and F reads pattern + 2, E's range is not
 * handed out again, and the statistics count the deferred frees and the captured one.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#include <stdatomic.h>
#include <time.h>

#define SMALL (64 * 1024)
#define LARGE (8 * SH_MIB)

static CUfunction fill, add, verify;
static atomic_int gate_open, gate_timed_out;

/* A host function that holds its stream until gate_open is set, 5 s at most. */
static void CUDA_CB gate(void *arg)
{
    struct timespec t0, now;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (!atomic_load(&gate_open)) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - t0.tv_sec >= 5) {
            atomic_store(&gate_timed_out, 1);
            return;
        }
    }
}

static void close_gate(CUstream s)
{
    atomic_store(&gate_open, 0);
    CHECK_CU(cuLaunchHostFunc(s, gate, NULL));
}

static void open_gate(CUstream s)
{
    atomic_store(&gate_open, 1);
    CHECK_CU(cuStreamSynchronize(s));
    EXPECT(!atomic_load(&gate_timed_out), "the gate timed out: a call waited for the stream");
}

/* A small buffer freed behind a closed gate: not reused until s passes the free. */
static void small_range(CUstream s, CUstream t, CUdeviceptr result)
{
    CUdeviceptr a, b, c;
    uint32_t wrong = 1;

    CHECK_CU(cuMemAlloc(&a, SMALL));
    CHECK_CU(sh_fill_async(fill, a, SMALL / 4, 1, s));
    close_gate(s);
    CHECK_CU(sh_verify_async(verify, a, SMALL / 4, 1, result, s));
    CHECK_CU(cuMemFreeAsync(a, s));
    EXPECT(!atomic_load(&gate_timed_out), "cuMemFreeAsync waited for the stream");
    CHECK_CU(cuMemAlloc(&b, SMALL));
    EXPECT(b != a, "A's range was handed out again while a kernel may still read it");
    CHECK_CU(cuMemsetD32Async(b, 0, SMALL / 4, t));
    open_gate(s);
    CHECK_CU(cuStreamSynchronize(t));
    CHECK_CU(cuMemcpyDtoH(&wrong, result, 4));
    EXPECT(wrong == 0, "the kernel before the free read %u words wrong", wrong);
    CHECK_CU(cuMemAlloc(&c, SMALL));
    EXPECT(c == a, "A's range did not come back: 0x%llx, A was 0x%llx", (unsigned long long)c,
           (unsigned long long)a);
    CHECK_CU(cuMemFree(b));
    CHECK_CU(cuMemFree(c));
}

/* A large buffer: in use while its free is pending, free after; no second free of it. */
static void large_range(CUstream s, CUdeviceptr result)
{
    CUdeviceptr l, d;
    size_t before = sh_free_now();

    CHECK_CU(cuMemAlloc(&l, LARGE));
    CHECK_CU(sh_fill_async(fill, l, LARGE / 4, 2, s));
    close_gate(s);
    CHECK_CU(sh_verify_async(verify, l, LARGE / 4, 2, result, s));
    CHECK_CU(cuMemFreeAsync(l, s));
    EXPECT(sh_free_now() == before - LARGE, "cuMemGetInfo free %zu while the free is pending, %zu "
           "before the allocation", sh_free_now(), before);
    CHECK_CU(cuMemAlloc(&d, SMALL));
    CHECK_CU(cuMemFreeAsync(d, s));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFreeAsync(d, s));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFree(d));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFreeAsync(l, s));
    open_gate(s);
    EXPECT(sh_free_now() == before, "cuMemGetInfo free %zu once the free completed, %zu before",
           sh_free_now(), before);
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFreeAsync(l, s));
}

/* E freed inside a capture, after E += 1 and F = E: the graph keeps using E. */
static void captured_free(CUstream s)
{
    static uint32_t host[SMALL / 4];
    CUdeviceptr e, f, g;
    uint64_t n = SMALL / 4;
    uint32_t one = 1;
    void *args[] = { &e, &n, &one };
    CUgraph graph;
    CUgraphExec exec;

    CHECK_CU(cuMemAlloc(&e, SMALL));
    CHECK_CU(cuMemAlloc(&f, SMALL));
    CHECK_CU(sh_fill_async(fill, e, n, 3, s));
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_CU(sh_launch(add, s, args));
    CHECK_CU(cuMemcpyDtoDAsync(f, e, SMALL, s));
    CHECK_CU(cuMemFreeAsync(e, s));
    CHECK_CU(cuStreamEndCapture(s, &graph));
    CHECK_CU(cuGraphInstantiate(&exec, graph, 0));
    CHECK_CU(cuMemAlloc(&g, SMALL));
    EXPECT(g != e, "the range freed in the capture was handed out again");
    CHECK_CU(cuGraphLaunch(exec, s));
    CHECK_CU(cuGraphLaunch(exec, s));
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuMemcpyDtoH(host, f, SMALL));
    for (uint64_t i = 0; i < n; i++)
        EXPECT(host[i] == sh_pattern(3, i) + 2, "graph run twice: word %llu is 0x%08x, expected "
               "0x%08x", (unsigned long long)i, host[i], sh_pattern(3, i) + 2);
    CHECK_CU(cuGraphExecDestroy(exec));
    CHECK_CU(cuGraphDestroy(graph));
    CHECK_CU(cuMemFree(f));
    CHECK_CU(cuMemFree(g));
}

static void scenario(void)
{
    CUstream s, t;
    CUdeviceptr result;

    st_setup(0);
    fill = st_function(sh_res_ptx, "sh_fill");
    add = st_function(sh_res_ptx, "sh_add");
    verify = st_function(sh_res_ptx, "sh_verify");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&t, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&result, 4));
    small_range(s, t, result);
    large_range(s, result);
    captured_free(s);
    CHECK_CU(cuMemFree(result));
    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuStreamDestroy(t));
    printf("frees in stream order: no wait, no early reuse, memory back; captured free kept\n");
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_STATS=1", NULL };

    sh_scenario_child(argc, argv, scenario);
    sh_run_t r = sh_run_ok("scenario", env);
    long long deferred = sh_stat(r.err, "frees deferred "), captured = sh_stat(r.err,
                                                                              "in captures ");

    printf("%sfrees deferred %lld, in captures %lld\n", r.out, deferred, captured);
    EXPECT(deferred == 3 && captured == 1, "the statistics count %lld deferred frees and %lld "
           "captured ones, expected 3 and 1:\n%s", deferred, captured, r.err);
    sh_run_free(&r);
    return 0;
}
