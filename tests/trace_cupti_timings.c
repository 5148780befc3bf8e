/* SPDX-License-Identifier: MIT */
/*
 * trace_cupti_timings.c - the tracer's CUPTI client (tracer/cupti.c) on the simulator's
 * libcupti.so stand-in, found through LD_LIBRARY_PATH as a profiler finds it.
 *
 * Kernels of known cost on two streams, a copy and a memset are submitted with operation ids
 * pushed (a kernel with two ids nested: the inner one counts), others with none; a captured
 * graph of two kernels is launched with one id.  After a flush the sink must have received
 * each pushed id exactly once per piece of device work (twice for the graph), with the right
 * kind, end >= start, the kernels' durations as the machine model charges them and stream
 * order respected; nothing for work without an id.  cuptiGetTimestamp (trc_cupti_now) reads
 * the same clock.  Work submitted after trc_cupti_enable(c, 0) reaches the sink no more, and
 * enabling again brings it back.
 */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "../tracer/cupti.h" /* by path: CUDA has a cupti.h of its own */
#include "simtest.h"

#define FLOPS_PER_MS 51e9              /* the default machine: 51 TFLOP/s */
#define LAUNCH_NS 2000.0               /* and 2 us of launch latency per kernel */
#define MAX_SEEN 64

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry trc_work(.param .f64 flops)\n{\n ret;\n}\n";

SIM_KERNEL void trc_work(const sim_launch_t *l, void **params)
{
    (void)l;
    sim_kernel_cost(*(double *)params[0], 0);
}

typedef struct seen {
    uint64_t op;
    int kind;
    uint64_t start, end;
} seen_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static seen_t seen[MAX_SEEN];
static int nseen;

static void sink(void *ctx, uint64_t op, int kind, uint64_t start, uint64_t end)
{
    EXPECT(ctx == &lock, "the sink gets the context given to trc_cupti_open");
    pthread_mutex_lock(&lock);
    if (nseen < MAX_SEEN)
        seen[nseen++] = (seen_t){ op, kind, start, end };
    pthread_mutex_unlock(&lock);
}

/* The n-th report of op (0 first), or NULL; counts them in *count. */
static const seen_t *find(uint64_t op, int nth, int *count)
{
    const seen_t *s = NULL;
    *count = 0;
    for (int i = 0; i < nseen; i++)
        if (seen[i].op == op && (*count)++ == nth)
            s = &seen[i];
    return s;
}

/* op was reported exactly `times` times as `kind`, end >= start; the first report. */
static const seen_t *expect_op(uint64_t op, int kind, int times)
{
    int count;
    const seen_t *s = find(op, 0, &count);
    EXPECT(count == times, "op %llu reported %d time(s), expected %d", (unsigned long long)op,
           count, times);
    for (int i = 0; i < count; i++) {
        const seen_t *x = find(op, i, &count);
        EXPECT(x->kind == kind, "op %llu: kind %d, expected %d", (unsigned long long)op,
               x->kind, kind);
        EXPECT(x->end >= x->start, "op %llu: end %llu before start %llu",
               (unsigned long long)op, (unsigned long long)x->end,
               (unsigned long long)x->start);
    }
    return s;
}

static void launch(CUfunction f, CUstream s, double flops)
{
    void *args[] = { &flops };
    CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
}

static void expect_duration(const seen_t *s, double ms)
{
    double want = ms * 1e6 + LAUNCH_NS, got = (double)(s->end - s->start);
    EXPECT(fabs(got - want) <= 10.0, "op %llu: %.0f ns on the device, expected %.0f",
           (unsigned long long)s->op, got, want);
}

/* A graph of two kernels in a row, captured on s. */
static CUgraphExec two_kernel_graph(CUfunction f, CUstream s)
{
    CUgraph g;
    CUgraphExec exec;
    CHECK_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    launch(f, s, FLOPS_PER_MS / 4);
    launch(f, s, FLOPS_PER_MS / 4);
    CHECK_CU(cuStreamEndCapture(s, &g));
    CHECK_CU(cuGraphInstantiate(&exec, g, 0));
    CHECK_CU(cuGraphDestroy(g));
    return exec;
}

/* Submits the work: ids 1..7 pushed, some work without. */
static void submit(trc_cupti_t *c, CUfunction f, CUstream a, CUstream b, CUdeviceptr dev,
                   void *host, CUgraphExec graph)
{
    trc_cupti_push(c, 1);
    launch(f, a, FLOPS_PER_MS);                                     /* 1: 1 ms on a */
    trc_cupti_pop(c);
    trc_cupti_push(c, 2);
    launch(f, b, 2 * FLOPS_PER_MS);                                 /* 2: 2 ms on b */
    trc_cupti_pop(c);
    launch(f, a, FLOPS_PER_MS);                                     /* no id */
    trc_cupti_push(c, 30);
    trc_cupti_push(c, 3);
    launch(f, a, FLOPS_PER_MS / 2);                                 /* 3: 0.5 ms on a */
    trc_cupti_pop(c);
    trc_cupti_pop(c);
    trc_cupti_push(c, 4);
    CHECK_CU(cuMemcpyHtoDAsync(dev, host, 1 << 20, a));             /* 4: a copy */
    trc_cupti_pop(c);
    trc_cupti_push(c, 5);
    CHECK_CU(cuMemsetD32Async(dev + (1 << 20), 7, (1 << 20) / 4, b)); /* 5: a memset */
    trc_cupti_pop(c);
    CHECK_CU(cuMemsetD8Async(dev + (1 << 20), 1, 64, b));           /* no id */
    trc_cupti_push(c, 6);
    CHECK_CU(cuGraphLaunch(graph, a));                              /* 6: two kernels */
    trc_cupti_pop(c);
    CHECK_CU(cuCtxSynchronize());
}

int main(void)
{
    char why[256] = "";
    trc_cupti_t *c;
    CUstream a, b;
    CUdeviceptr dev;
    void *host;
    st_setup(0);
    int rc = trc_cupti_open(NULL, sink, &lock, &c, why, sizeof(why));
    EXPECT(rc == 0, "trc_cupti_open: %d (%s)", rc, why);
    printf("opened: %s\n", why);
    EXPECT(strstr(why, "libcupti.so") != NULL, "the message names the library: %s", why);
    CUfunction f = st_function(ptx, "trc_work");
    CHECK_CU(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&dev, 2 << 20));
    CHECK_CU(cuMemAllocHost(&host, 1 << 20));
    CUgraphExec graph = two_kernel_graph(f, a);

    uint64_t t0 = trc_cupti_now(c);
    EXPECT(trc_cupti_enable(c, 1) == 0, "trc_cupti_enable(1)");
    submit(c, f, a, b, dev, host, graph);
    EXPECT(trc_cupti_flush(c) == 0, "trc_cupti_flush");
    uint64_t t1 = trc_cupti_now(c);

    pthread_mutex_lock(&lock);
    printf("%d reports\n", nseen);
    EXPECT(nseen == 7, "7 reports (5 operations, the graph's 2 kernels), got %d", nseen);
    const seen_t *k1 = expect_op(1, 0, 1), *k2 = expect_op(2, 0, 1), *k3 = expect_op(3, 0, 1);
    expect_op(4, 1, 1);
    expect_op(5, 2, 1);
    expect_op(6, 0, 2);
    expect_op(30, 0, 0);
    expect_duration(k1, 1);
    expect_duration(k2, 2);
    expect_duration(k3, 0.5);
    EXPECT(k1->end <= k3->start, "stream order on a: 1 ends %llu, 3 starts %llu",
           (unsigned long long)k1->end, (unsigned long long)k3->start);
    EXPECT(t1 > 0 && t0 <= k1->start && k2->end <= t1,
           "one clock: trc_cupti_now %llu <= starts, ends <= %llu", (unsigned long long)t0,
           (unsigned long long)t1);
    nseen = 0;
    pthread_mutex_unlock(&lock);

    EXPECT(trc_cupti_enable(c, 0) == 0, "trc_cupti_enable(0)");
    submit(c, f, a, b, dev, host, graph);
    EXPECT(trc_cupti_flush(c) == 0, "trc_cupti_flush");
    EXPECT(nseen == 0, "nothing reported while disabled, got %d", nseen);
    EXPECT(trc_cupti_enable(c, 1) == 0, "trc_cupti_enable(1) again");
    submit(c, f, a, b, dev, host, graph);
    trc_cupti_close(c);                                  /* disables and flushes */
    EXPECT(nseen == 7, "enabled again: 7 reports, delivered by close, got %d", nseen);

    CHECK_CU(cuGraphExecDestroy(graph));
    CHECK_CU(cuMemFreeHost(host));
    CHECK_CU(cuMemFree(dev));
    printf("trace_cupti_timings: passed\n");
    return 0;
}
