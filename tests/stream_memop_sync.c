/* SPDX-License-Identifier: MIT */
/*
 * stream_memop_sync.c - the host's view of a stream held back by a stream memory wait.
 *
 * A stream waits for a word of page-locked memory that another host thread stores later. Until then
 * the stream, an event recorded behind the wait and the legacy stream (when the waiting stream is
 * blocking, or the per-thread default stream) are NOT_READY, and a host function behind the wait
 * has not run; each way of waiting (cuStreamSynchronize, cuEventSynchronize, cuCtxSynchronize, the
 * legacy stream's synchronisation) returns once the other thread stores, with the work behind the
 * wait done; so does cuStreamSynchronize when the other thread releases the wait with a stream
 * write submitted while the host waits (the lazy executor too, though the write comes after what
 * the waiting thread flushed).  A non-blocking stream's wait holds back neither the legacy stream
 * nor other streams.  cuStreamDestroy of a stream with blocked work returns (the wait is
 * released only after it) and its work completes later (cuCtxSynchronize waits for it).
 * Stream-ordered allocation and graph launches behind the wait wait too.  Each case runs in a child, eager and lazy executor, with the race
 * checker failing the run.
 */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "simchild.h"
#include "simtest.h"

enum how { BY_STREAM, BY_EVENT, BY_CTX, BY_LEGACY, DESTROYED, PER_THREAD, ASYNC_ALLOC, GRAPH,
           BY_WRITE, HOW_COUNT };

static volatile unsigned *flag;
static volatile int fn_ran;
static CUcontext ctx;
static CUstream writer;                 /* BY_WRITE: the other thread releases with a write */

/* The other thread releases the wait this long after it starts (so that the host is waiting
 * by then, in the cases that wait). */
#define RELEASE_MS 300

static void *release(void *arg)
{
    (void)arg;
    usleep(RELEASE_MS * 1000);
    if (writer) {
        CHECK_CU(cuCtxSetCurrent(ctx));
        CHECK_CU(cuStreamWriteValue32(writer, (CUdeviceptr)(uintptr_t)flag, 1, 0));
    } else {
        __atomic_store_n(flag, 1u, __ATOMIC_RELEASE);
    }
    return NULL;
}

static void CUDA_CB host_fn(void *arg)
{
    (void)arg;
    fn_ran = 1;
}

/* The work behind the wait: data[0] = 7 (a graph's memset for GRAPH), a host function. */
static CUstream blocked_stream(int how, CUdeviceptr data, CUevent ev, CUgraphExec g)
{
    CUstream s = CU_STREAM_PER_THREAD;
    if (how != PER_THREAD)
        CHECK_CU(cuStreamCreate(&s, how == BY_LEGACY ? 0 : CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamWaitValue32(s, (CUdeviceptr)(uintptr_t)flag, 1, CU_STREAM_WAIT_VALUE_EQ));
    if (how == GRAPH) {
        CHECK_CU(cuGraphLaunch(g, s));
    } else if (how == ASYNC_ALLOC) {
        CUdeviceptr p;
        CHECK_CU(cuMemAllocAsync(&p, 1 << 20, s));
        CHECK_CU(cuMemsetD32Async(p, 7, 1, s));
        CHECK_CU(cuMemcpyDtoDAsync(data, p, 4, s));
        CHECK_CU(cuMemFreeAsync(p, s));
    } else {
        CHECK_CU(cuMemsetD32Async(data, 7, 1, s));
    }
    CHECK_CU(cuLaunchHostFunc(s, host_fn, NULL));
    CHECK_CU(cuEventRecord(ev, s));
    return s;
}

static CUgraph graph;

static CUgraphExec memset_graph(CUdeviceptr data)
{
    CUstream cap;
    CUgraphExec ge;
    CHECK_CU(cuStreamCreate(&cap, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamBeginCapture(cap, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_CU(cuMemsetD32Async(data, 7, 1, cap));
    CHECK_CU(cuStreamEndCapture(cap, &graph));
    CHECK_CU(cuGraphInstantiate(&ge, graph, 0));
    CHECK_CU(cuStreamDestroy(cap));
    return ge;
}

static void program(void *arg)
{
    int how = (int)(intptr_t)arg;
    unsigned *host;
    CUdeviceptr data, other;
    CUevent ev;
    pthread_t t;
    unsigned got = 0;

    ctx = st_setup(0);
    if (how == BY_WRITE)
        CHECK_CU(cuStreamCreate(&writer, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemHostAlloc((void **)&host, 64, CU_MEMHOSTALLOC_DEVICEMAP));
    flag = host;
    *flag = 0;
    CHECK_CU(cuMemAlloc(&data, 64));
    CHECK_CU(cuMemAlloc(&other, 64));
    CHECK_CU(cuMemsetD32(data, 0, 16));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    CUgraphExec g = how == GRAPH ? memset_graph(data) : NULL;
    CUstream s = blocked_stream(how, data, ev, g);

    usleep(5000);
    EXPECT_CU(CUDA_ERROR_NOT_READY, cuStreamQuery(s));
    EXPECT_CU(CUDA_ERROR_NOT_READY, cuEventQuery(ev));
    EXPECT(!fn_ran, "case %d: the host function ran before the wait was released", how);
    if (how == BY_LEGACY || how == PER_THREAD) {
        /* Legacy-stream work waits for the blocking stream's. */
        CHECK_CU(cuMemsetD32Async(other, 4, 1, CU_STREAM_LEGACY));
        usleep(2000);
        EXPECT_CU(CUDA_ERROR_NOT_READY, cuStreamQuery(CU_STREAM_LEGACY));
    } else {
        /* Unrelated work is not held back. */
        CUstream o;
        CHECK_CU(cuStreamCreate(&o, CU_STREAM_NON_BLOCKING));
        CHECK_CU(cuMemsetD32Async(other, 3, 1, o));
        CHECK_CU(cuStreamSynchronize(o));
        CHECK_CU(cuStreamDestroy(o));
        CHECK_CU(cuMemsetD32Async(other, 4, 1, CU_STREAM_LEGACY));
        CHECK_CU(cuStreamSynchronize(CU_STREAM_LEGACY));
    }

    if (how != DESTROYED)
        pthread_create(&t, NULL, release, NULL);
    switch (how) {
    case BY_EVENT:
        CHECK_CU(cuEventSynchronize(ev));
        break;
    case BY_CTX:
        CHECK_CU(cuCtxSynchronize());
        break;
    case BY_LEGACY:
    case PER_THREAD:
        CHECK_CU(cuStreamSynchronize(CU_STREAM_LEGACY));
        break;
    case DESTROYED:
        /* The wait is released only once cuStreamDestroy has returned: a destroy that waited
         * for the stream's work would never return (the test's time limit ends it). */
        CHECK_CU(cuStreamDestroy(s));
        pthread_create(&t, NULL, release, NULL);
        CHECK_CU(cuCtxSynchronize());
        break;
    default:
        CHECK_CU(cuStreamSynchronize(s));
        break;
    }
    if (how == BY_WRITE)
        CHECK_CU(cuStreamSynchronize(writer));
    EXPECT(*flag == 1, "case %d: synchronised before the wait was released", how);
    EXPECT(fn_ran, "case %d: the host function behind the wait has not run", how);
    CHECK_CU(cuEventQuery(ev));
    if (how != DESTROYED)
        CHECK_CU(cuStreamQuery(s));
    CHECK_CU(cuMemcpyDtoH(&got, data, 4));
    EXPECT(got == 7, "case %d: the work behind the wait left %u, expected 7", how, got);
    pthread_join(t, NULL);
    if (how != DESTROYED && how != PER_THREAD)
        CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuEventDestroy(ev));
    if (g) {
        CHECK_CU(cuGraphExecDestroy(g));
        CHECK_CU(cuGraphDestroy(graph));
    }
    CHECK_CU(cuMemFreeHost(host));
}

int main(void)
{
    static const char *const execs[] = { "ELIXIR_SIM_EXEC=async", "ELIXIR_SIM_EXEC=lazy" };
    for (int i = 0; i < 2; i++) {
        for (int how = 0; how < HOW_COUNT; how++) {
            const char *env[] = { "ELIXIR_SIM_RACECHECK=fail", execs[i], NULL };
            st_child_t c;
            st_run_child(program, (void *)(intptr_t)how, env, &c);
            if (c.status != 0 || strstr(c.err, "race") || strstr(c.err, "warn"))
                fprintf(stderr, "case %d (%s): status %d\n%s", how, execs[i], c.status, c.err);
            EXPECT(c.status == 0 && !strstr(c.err, "race") && !strstr(c.err, "warn"),
                   "case %d (%s) clean", how, execs[i]);
            st_child_free(&c);
        }
    }
    return 0;
}
