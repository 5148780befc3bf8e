/* SPDX-License-Identifier: MIT */
/*
 * conc_shim_trace_threads.c - recording while several threads launch, copy, allocate and
 * free at once.
 *
 * The scenario (recording) runs four threads, each with a stream and a buffer of its own,
 * each launching tt_k1 300 times and setting its buffer every 50 launches, then destroying
 * its stream (which clears the other threads' memos of its number), while a fifth thread
 * allocates and frees small buffers.  The trace must read cleanly to its END, hold
 * every launch and memset exactly once (all operation ids distinct), give each thread's work
 * the number of its stream (four different numbers), name each launch's own buffer, and pair
 * every FREE with an earlier ALLOC.  Run under ThreadSanitizer by CI as a conc_* test; there
 * allocations are recorded without call sites (ELIXIR_TRACE_DEPTH=0): libunwind, which is not
 * instrumented, frees its per-thread unwind cache in a thread-exit destructor that runs after
 * ThreadSanitizer has retired the thread, and crashes inside the sanitizer.
 */
#define TT_KERNELS
#include "shim_trace_test.h"

#include <pthread.h>

#if defined(__SANITIZE_THREAD__)
#define DEPTH_ENV "ELIXIR_TRACE_DEPTH=0"
#else
#define DEPTH_ENV "ELIXIR_TRACE_DEPTH=16"
#endif

#define WORKERS 4
#define LAUNCHES 300
#define CHURN 200

static CUcontext ctx;
static CUfunction k1;

static void *worker(void *arg)
{
    CUdeviceptr p;
    CUstream s;

    (void)arg;
    CHECK_CU(cuCtxSetCurrent(ctx));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&p, 64 * 1024));
    for (int i = 0; i < LAUNCHES; i++) {
        if (i % 50 == 0)
            CHECK_CU(cuMemsetD32Async(p, 0, 16 * 1024, s));
        CHECK_CU(tt_launch1(k1, s, p, 16));
    }
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuStreamDestroy(s));           /* while the others may still launch */
    printf("worker 0x%llx\n", (unsigned long long)p);
    return NULL;
}

static void *churn(void *arg)
{
    (void)arg;
    CHECK_CU(cuCtxSetCurrent(ctx));
    for (int i = 0; i < CHURN; i++) {
        CUdeviceptr q;
        CHECK_CU(cuMemAlloc(&q, 4096 + 256 * (size_t)(i % 7)));
        CHECK_CU(cuMemFree(q));
    }
    return NULL;
}

static void scenario(void)
{
    pthread_t t[WORKERS + 1];

    ctx = st_setup(0);
    k1 = st_function(tt_ptx, "tt_k1");
    for (int i = 0; i < WORKERS; i++)
        EXPECT(pthread_create(&t[i], NULL, worker, NULL) == 0, "pthread_create");
    EXPECT(pthread_create(&t[WORKERS], NULL, churn, NULL) == 0, "pthread_create");
    for (int i = 0; i <= WORKERS; i++)
        pthread_join(t[i], NULL);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The id of the allocation at p that is never freed: the worker's buffer (small allocations of
 * the churning thread, freed at once, may have had the same address before it, and their
 * records need not come first in the file: each thread's buffer is written out on its own);
 * 0 if there is none. */
static uint64_t live_alloc_at(const tt_trace_t *t, uint64_t p)
{
    for (size_t i = 0; i < t->n; i++) {
        if (t->ev[i].type != TRC_EV_ALLOC || t->ev[i].u.alloc.addr != p)
            continue;
        uint64_t id = t->ev[i].u.alloc.id;
        int freed = 0;
        for (size_t j = 0; j < t->n && !freed; j++)
            freed = t->ev[j].type == TRC_EV_FREE && t->ev[j].u.free.id == id;
        if (!freed)
            return id;
    }
    return 0;
}

/* Each worker's launches: one stream number, its own buffer; four different streams. */
static void check_workers(const tt_trace_t *t, const char *out)
{
    uint64_t streams[WORKERS];
    const char *line = out;

    for (int w = 0; w < WORKERS; w++) {
        unsigned long long p;
        line = strstr(line, "worker ");
        EXPECT(line && sscanf(line, "worker %llx", &p) == 1, "scenario said: %s", out);
        line++;
        uint64_t id = live_alloc_at(t, p), stream = UINT64_MAX;
        int n = 0;
        for (size_t i = 0; i < t->n; i++) {
            const trc_launch_t *l = &t->ev[i].u.launch;
            if (t->ev[i].type != TRC_EV_LAUNCH || l->nallocs != 1 || l->allocs[0] != id)
                continue;
            EXPECT(stream == UINT64_MAX || l->stream == stream, "worker %d launched on "
                   "streams %llu and %llu", w, (unsigned long long)stream,
                   (unsigned long long)l->stream);
            stream = l->stream;
            n++;
        }
        EXPECT(id && n == LAUNCHES, "worker %d (buffer 0x%llx, id %llu): %d launches name it",
               w, p, (unsigned long long)id, n);
        streams[w] = stream;
        for (int v = 0; v < w; v++)
            EXPECT(streams[v] != stream && stream != 0, "workers %d and %d share stream %llu", v,
                   w, (unsigned long long)stream);
    }
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    const char *path = tt_path("threads", 0);
    const char *env[] = { tt_env_trace(path, 0), DEPTH_ENV, NULL };
    sh_run_t r = sh_run_ok("scenario", env);
    tt_trace_t t;

    tt_load(path, &t);
    tt_expect_clean(&t, path);
    EXPECT(t.complete, "no END record");
    size_t nl = tt_count(&t, TRC_EV_LAUNCH), nm = tt_count(&t, TRC_EV_MEMSET), n = 0;
    EXPECT(nl == WORKERS * LAUNCHES && nm == WORKERS * (LAUNCHES / 50),
           "%zu launches and %zu memsets recorded, expected %d and %d", nl, nm,
           WORKERS * LAUNCHES, WORKERS * (LAUNCHES / 50));
    uint64_t *ids = malloc((nl + nm) * sizeof(*ids));
    EXPECT(ids != NULL, "out of memory");
    for (size_t i = 0; i < t.n; i++)
        if (tt_op(&t.ev[i]))
            ids[n++] = tt_op(&t.ev[i]);
    qsort(ids, n, sizeof(*ids), cmp_u64);
    for (size_t i = 1; i < n; i++)
        EXPECT(ids[i] != ids[i - 1], "operation id %llu recorded twice",
               (unsigned long long)ids[i]);
    free(ids);
    check_workers(&t, r.out);
    size_t na = tt_count(&t, TRC_EV_ALLOC), nf = tt_count(&t, TRC_EV_FREE);
    EXPECT(na == WORKERS + CHURN && nf == CHURN, "%zu allocations and %zu frees, expected %d "
           "and %d", na, nf, WORKERS + CHURN, CHURN);
    for (size_t i = 0; i < t.n; i++) {
        if (t.ev[i].type != TRC_EV_FREE)
            continue;
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = t.ev[j].type == TRC_EV_ALLOC && t.ev[j].u.alloc.id == t.ev[i].u.free.id;
        EXPECT(seen, "FREE of %llu before (or without) its ALLOC",
               (unsigned long long)t.ev[i].u.free.id);
    }
    printf("%d threads: %zu launches, %zu memsets, %zu allocations, %zu frees, each once\n",
           WORKERS + 1, nl, nm, na, nf);
    tt_free(&t);
    unlink(path);
    sh_run_free(&r);
    return 0;
}
