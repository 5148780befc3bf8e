/* SPDX-License-Identifier: MIT */
/*
 * shim_trace_sync.c - host synchronisations as the iteration detector's barriers, and the
 * synchronisation wrappers' transparency.
 *
 * The scenario is a training loop of N iterations with no copy at all, on a stream of its own:
 * tt_k1(X), tt_k2(X, Y) one to three times (the count varies from one iteration to the next,
 * so the launches alone show no period), tt_k3(X), then one host synchronisation:
 * cuStreamSynchronize, cuStreamSynchronize_ptsz, cuCtxSynchronize, cuCtxSynchronize_v2 (CUDA
 * 13's ABI, given the context), or cuEventSynchronize of an event recorded after tt_k3.  Run
 * under libelixir.so with ELIXIR_TRACE, each must give exactly N iteration marks, the i-th
 * at the time of the i-th launch of tt_k1, and its wrapper must have been entered N times.
 * Two controls show that the marks come from synchronisations that succeeded: the same loop
 * with no synchronisation, and with only refused ones (each of the five on a capturing stream,
 * or given an invalid event), must not give those marks.
 *
 * Transparency: with ELIXIR_SIM_EXEC=lazy (queued work runs only when the host waits), a
 * transcript of every synchronisation's result before cuInit, without a context, on a
 * destroyed context, on an invalid event, on a capturing stream and a captured event (which
 * the driver refuses and invalidates the capture for), and of what the work is seen to have
 * done after each one that succeeds, must be the same without the shim and with it
 * (recording).
 */
#define TT_KERNELS
#include "shim_trace_test.h"

#define N 8
#define WORDS 256

typedef CUresult (*sync_stream_fn)(CUstream);
typedef CUresult (*sync_ctx_fn)(CUcontext);

/* The synchronisation that ends each iteration of the loop; one scenario each. */
typedef enum sync_kind {
    SYNC_NONE, SYNC_REFUSED, SYNC_STREAM, SYNC_STREAM_PTSZ, SYNC_CTX, SYNC_CTX_V2, SYNC_EVENT,
    SYNC_KINDS
} sync_kind_t;

/* Scenario (mode) names and the wrapper each enters once per iteration (NULL: none). */
static const char *const mode_name[SYNC_KINDS] = {
    "none", "refused", "stream", "stream_ptsz", "ctx", "ctx_v2", "event",
};
static const char *const wrapper[SYNC_KINDS] = {
    NULL, NULL, "cuStreamSynchronize", "cuStreamSynchronize_ptsz", "cuCtxSynchronize",
    "cuCtxSynchronize_v2", "cuEventSynchronize",
};

/* What the loop synchronises with. */
typedef struct loop {
    CUcontext ctx;
    CUstream s, c;              /* the loop's stream; c, one that captures (SYNC_REFUSED) */
    CUevent e;
    sync_stream_fn stream_ptsz; /* the variants found with cuGetProcAddress */
    sync_ctx_fn ctx_v2;
} loop_t;

/* The driver's `name` at `version` (through the shim, when preloaded, its wrapper). */
static void *proc(const char *name, int version, cuuint64_t flags)
{
    CUdriverProcAddressQueryResult st;
    void *p = NULL;

    CHECK_CU(cuGetProcAddress(name, &p, version, flags, &st));
    EXPECT(p && st == CU_GET_PROC_ADDRESS_SUCCESS, "%s@%d: %p, status %d", name, version, p,
           (int)st);
    return p;
}

static void loop_setup(loop_t *l)
{
    l->ctx = st_setup(0);
    CHECK_CU(cuStreamCreate(&l->s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&l->c, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuEventCreate(&l->e, CU_EVENT_DISABLE_TIMING));
    *(void **)&l->stream_ptsz = proc("cuStreamSynchronize", 7000,
                                     CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    *(void **)&l->ctx_v2 = proc("cuCtxSynchronize", 13000, CU_GET_PROC_ADDRESS_DEFAULT);
}

static void loop_teardown(const loop_t *l)
{
    CHECK_CU(cuEventDestroy(l->e));
    CHECK_CU(cuStreamDestroy(l->c));
    CHECK_CU(cuStreamDestroy(l->s));
}

/* Every synchronisation, each refused: on the capturing stream c (which the first refusal
 * invalidates), in its context, and of an invalid event. */
static void refused_syncs(const loop_t *l)
{
    static const char *const what[] = { "cuStreamSynchronize", "cuStreamSynchronize_ptsz",
                                        "cuCtxSynchronize", "cuCtxSynchronize_v2",
                                        "cuEventSynchronize(NULL)" };
    CUgraph g;

    CHECK_CU(cuStreamBeginCapture(l->c, CU_STREAM_CAPTURE_MODE_RELAXED));
    CUresult r[] = { cuStreamSynchronize(l->c), l->stream_ptsz(l->c), cuCtxSynchronize(),
                     l->ctx_v2(l->ctx), cuEventSynchronize(NULL) };
    EXPECT_CU(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, cuStreamEndCapture(l->c, &g));
    for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
        EXPECT(r[i] != CUDA_SUCCESS, "%s during a capture succeeded", what[i]);
}

static void end_iteration(const loop_t *l, sync_kind_t k)
{
    switch (k) {
    case SYNC_NONE: break;
    case SYNC_REFUSED: refused_syncs(l); break;
    case SYNC_STREAM: CHECK_CU(cuStreamSynchronize(l->s)); break;
    case SYNC_STREAM_PTSZ: CHECK_CU(l->stream_ptsz(l->s)); break;
    case SYNC_CTX: CHECK_CU(cuCtxSynchronize()); break;
    case SYNC_CTX_V2: CHECK_CU(l->ctx_v2(l->ctx)); break;
    case SYNC_EVENT:
        CHECK_CU(cuEventRecord(l->e, l->s));
        CHECK_CU(cuEventSynchronize(l->e));
        break;
    default: EXPECT(0, "sync kind %d", (int)k);
    }
}

/* The loop (under the shim, recording); prints how often k's wrapper was entered. */
static void scenario(sync_kind_t k)
{
    CUfunction k1, k2, k3;
    CUdeviceptr x, y;
    loop_t l;

    loop_setup(&l);
    k1 = st_function(tt_ptx, "tt_k1");
    k2 = st_function(tt_ptx, "tt_k2");
    k3 = st_function(tt_ptx, "tt_k3");
    CHECK_CU(cuMemAlloc(&x, 4 * WORDS));
    CHECK_CU(cuMemAlloc(&y, 4 * WORDS));
    CHECK_CU(cuMemsetD32Async(x, 0, WORDS, l.s));
    CHECK_CU(cuMemsetD32Async(y, 1, WORDS, l.s));
    for (int it = 0; it < N; it++) {
        CHECK_CU(tt_launch1(k1, l.s, x, WORDS));
        for (int j = 0; j <= (it * 5 + 1) % 3; j++)
            CHECK_CU(tt_launch2(k2, l.s, x, y, WORDS));
        CHECK_CU(tt_launch1(k3, l.s, x, WORDS));
        end_iteration(&l, k);
    }
    printf("calls %lld\n", wrapper[k] ? sh_calls(wrapper[k]) : 0);
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuMemFree(x));
    CHECK_CU(cuMemFree(y));
    loop_teardown(&l);
}

/* NULL when the trace has exactly N marks, the i-th with index i at the time of the i-th
 * launch of tt_k1; else what is wrong (in why). */
static const char *marks_wrong(const tt_trace_t *t, char *why, size_t len)
{
    size_t n = tt_count(t, TRC_EV_ITERATION);

    if (n != N) {
        snprintf(why, len, "%zu iteration marks, expected %d", n, N);
        return why;
    }
    for (size_t i = 0; i < N; i++) {
        const trc_event_t *m = tt_nth(t, TRC_EV_ITERATION, i);
        const trc_event_t *l = tt_launch_of(t, "tt_k1", i);
        if (m->u.iteration.index != i || !l || m->time != l->time) {
            snprintf(why, len, "mark %zu: index %llu at %llu, tt_k1 launch %zu at %llu", i,
                     (unsigned long long)m->u.iteration.index, (unsigned long long)m->time, i,
                     l ? (unsigned long long)l->time : 0);
            return why;
        }
    }
    return NULL;
}

/* Runs scenario k under the shim, recording, and checks its marks (and for the controls,
 * that they are not those of the loop). */
static void run(sync_kind_t k)
{
    const char *path = tt_path("sync", (int)k);
    const char *env[] = { tt_env_trace(path, 0), NULL };
    char why[200];
    tt_trace_t t;

    sh_run_t r = sh_run_ok(mode_name[k], env);
    tt_load(path, &t);
    tt_expect_clean(&t, mode_name[k]);
    const char *wrong = marks_wrong(&t, why, sizeof(why));
    if (!wrapper[k]) {
        EXPECT(wrong, "%s: the loop's N iterations were found without a successful "
               "synchronisation (%zu marks): this test cannot tell the barriers' effect",
               mode_name[k], tt_count(&t, TRC_EV_ITERATION));
        printf("%s: %s, as expected without a barrier\n", mode_name[k], wrong);
    } else {
        EXPECT(!wrong, "%s: %s", mode_name[k], wrong);
        EXPECT(sh_stat(r.out, "calls ") == N, "%s: %s entered %lld times, expected %d",
               mode_name[k], wrapper[k], sh_stat(r.out, "calls "), N);
        printf("%s: %d iterations marked at tt_k1\n", mode_name[k], N);
    }
    tt_free(&t);
    unlink(path);
    sh_run_free(&r);
}

/* ------------------------------------------------------------ transparency */

#define SHOW(what, call) printf("%-44s %s\n", what, st_err(call))

/* Before cuInit, then with no current context. */
static void errors_no_context(const loop_t *l)
{
    SHOW("cuStreamSynchronize(NULL), no context", cuStreamSynchronize(NULL));
    SHOW("cuStreamSynchronize_ptsz(NULL), no context", l->stream_ptsz(NULL));
    SHOW("cuCtxSynchronize(), no context", cuCtxSynchronize());
    SHOW("cuCtxSynchronize_v2(NULL), no context", l->ctx_v2(NULL));
    SHOW("cuEventSynchronize(NULL), no context", cuEventSynchronize(NULL));
}

/* Refused during a capture of l->c; the capture's end after each. */
static void errors_capture(const loop_t *l)
{
    CUgraph g;
    CUevent e = l->e;

    for (int i = 0; i < 5; i++) {
        CHECK_CU(cuStreamBeginCapture(l->c, CU_STREAM_CAPTURE_MODE_GLOBAL));
        switch (i) {
        case 0: SHOW("cuStreamSynchronize, capturing", cuStreamSynchronize(l->c)); break;
        case 1: SHOW("cuStreamSynchronize_ptsz, capturing", l->stream_ptsz(l->c)); break;
        case 2: SHOW("cuCtxSynchronize, capturing", cuCtxSynchronize()); break;
        case 3: SHOW("cuCtxSynchronize_v2, capturing", l->ctx_v2(l->ctx)); break;
        default:
            CHECK_CU(cuEventRecord(e, l->c));
            SHOW("cuEventSynchronize, captured event", cuEventSynchronize(e));
        }
        SHOW("  cuStreamEndCapture", cuStreamEndCapture(l->c, &g));
    }
}

/* A kernel adds 1 to mapped pinned memory; after each synchronisation, what the host sees. */
static void successes(const loop_t *l)
{
    static const char *const what[] = { "cuStreamSynchronize", "cuStreamSynchronize_ptsz",
                                        "cuCtxSynchronize", "cuCtxSynchronize_v2",
                                        "cuCtxSynchronize_v2(NULL)", "cuEventSynchronize" };
    CUfunction k1 = st_function(tt_ptx, "tt_k1");
    uint32_t *host;
    CUdeviceptr d;
    CUresult r = CUDA_SUCCESS;

    CHECK_CU(cuMemHostAlloc((void **)&host, 4 * WORDS, CU_MEMHOSTALLOC_DEVICEMAP));
    CHECK_CU(cuMemHostGetDevicePointer(&d, host, 0));
    memset(host, 0, 4 * WORDS);
    for (int i = 0; i < 6; i++) {
        CHECK_CU(tt_launch1(k1, l->s, d, WORDS));
        switch (i) {
        case 0: r = cuStreamSynchronize(l->s); break;
        case 1: r = l->stream_ptsz(l->s); break;
        case 2: r = cuCtxSynchronize(); break;
        case 3: r = l->ctx_v2(l->ctx); break;
        case 4: r = l->ctx_v2(NULL); break;
        default: CHECK_CU(cuEventRecord(l->e, l->s)); r = cuEventSynchronize(l->e);
        }
        printf("%-44s %s, then host[0] = %u, host[%d] = %u\n", what[i], st_err(r), host[0],
               WORDS - 1, host[WORDS - 1]);
    }
    CHECK_CU(cuMemFreeHost(host));
}

/* The transcript of the transparency scenario. */
static void errors(void)
{
    CUcontext dead, cur;
    loop_t l;

    SHOW("cuCtxSynchronize(), before cuInit", cuCtxSynchronize());
    SHOW("cuStreamSynchronize(NULL), before cuInit", cuStreamSynchronize(NULL));
    SHOW("cuEventSynchronize(NULL), before cuInit", cuEventSynchronize(NULL));
    loop_setup(&l);
    CHECK_CU(cuCtxSetCurrent(NULL));
    errors_no_context(&l);
    CHECK_CU(cuCtxSetCurrent(l.ctx));
    CHECK_CU(cuCtxCreate(&dead, NULL, 0, 0));
    CHECK_CU(cuCtxDestroy(dead));
    CHECK_CU(cuCtxGetCurrent(&cur));
    printf("current context after the destroy: %s\n", cur == l.ctx ? "the primary" : "other");
    SHOW("cuCtxSynchronize_v2(destroyed)", l.ctx_v2(dead));
    SHOW("cuEventSynchronize(NULL)", cuEventSynchronize(NULL));
    errors_capture(&l);
    successes(&l);
    loop_teardown(&l);
}

static void transparency(void)
{
    const char *path = tt_path("sync", SYNC_KINDS);
    const char *lazy = "ELIXIR_SIM_EXEC=lazy";
    const char *plain_env[] = { lazy, NULL }, *shim_env[] = { lazy, tt_env_trace(path, 1), NULL };
    sh_run_t plain = sh_run("errors", 0, plain_env), shim = sh_run("errors", 1, shim_env);

    EXPECT(plain.status == 0 && shim.status == 0, "the scenario exited %d without the shim, %d "
           "with it\nwithout:\n%s%s\nwith:\n%s%s", plain.status, shim.status, plain.out,
           plain.err, shim.out, shim.err);
    sh_compare(plain.out, shim.out);
    EXPECT(sh_count(shim.out, "\n") == 27 && sh_count(shim.out, "host[0] = ") == 6,
           "a short transcript:\n%s", shim.out);
    printf("transparency: %d results the same without and with the shim\n",
           sh_count(shim.out, "\n"));
    unlink(path);
    sh_run_free(&plain);
    sh_run_free(&shim);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "errors") == 0) {
        errors();
        return 0;
    }
    for (int k = 0; argc > 1 && k < SYNC_KINDS; k++)
        if (strcmp(argv[1], mode_name[k]) == 0) {
            scenario((sync_kind_t)k);
            return 0;
        }
    EXPECT(argc == 1, "unknown scenario %s", argv[1]);
    for (int k = 0; k < SYNC_KINDS; k++)
        run((sync_kind_t)k);
    transparency();
    return 0;
}
