/* SPDX-License-Identifier: MIT */
/*
 * shim_trace_iterations.c - iteration marks and the device times of the profiled iterations,
 * from CUPTI, from CUDA events (ELIXIR_CUPTI=off), and from CUDA events again when another
 * tool holds CUPTI's one subscription; and what ELIXIR_TRACE_LEVEL=summary keeps afterwards.
 *
 * The scenario is a training loop of N iterations on a stream of its own: upload a batch
 * (HtoD), tt_k1(X), tt_k2(X, Y), tt_k3(X), read a result back (DtoH), synchronise.  The
 * detector must mark exactly N iterations, iteration i at the i-th launch of tt_k1 (same
 * time).  With ELIXIR_PROFILE_WARMUP=w and ELIXIR_PROFILE_ITERATIONS=p, exactly the
 * operations from the w-th tt_k1 up to (not including) the (w+p)-th get one TIMING record
 * each, from the expected source, with start <= end.  In the "busy" case the scenario first
 * loads the simulator's libcupti.so and subscribes, so the shim's own subscription is refused;
 * in the "held" case it attaches its own observer to the simulator's activity, so the shim
 * subscribes but cannot turn CUPTI's activity on when the window opens (events then time it);
 * ELIXIR_CUPTI naming the simulator's library loads that one (naming a missing one stops
 * the program: shim_options).  In the "late" case the scenario subscribes after its loop: the
 * shim must have given its subscription up an iteration after the profiled ones (with the
 * profiled iterations' times all recorded), so that another tool can attach.  In each case
 * elixir-trace must show those times: `kernels --json` one timed launch of each kernel per
 * profiled iteration, and the Chrome timeline each timed slice marked with its source.
 */
#define TT_KERNELS
#include "shim_trace_test.h"

#include <dlfcn.h>

#define N 7
#define WORDS 1024

static void subscribe_first(void)
{
    char path[PATH_MAX];
    const char *build = getenv("BUILD");
    int (*subscribe)(void **, void (*)(void), void *);
    void *sub = NULL;

    snprintf(path, sizeof(path), "%s/sim/libcupti.so", build && *build ? build : "build");
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    EXPECT(h != NULL, "cannot load %s: %s", path, dlerror());
    *(void **)&subscribe = dlsym(h, "cuptiSubscribe");
    EXPECT(subscribe && subscribe(&sub, NULL, NULL) == 0, "cuptiSubscribe failed");
}

/* Another observer of the simulator's activity (as a second profiling tool would be): the
 * shim's CUPTI subscription succeeds, but its activity cannot be turned on. */
static int held_submit(void *ctx, int kind, uint32_t *correlation)
{
    (void)ctx, (void)kind, (void)correlation;
    return 0;
}

static void held_complete(void *ctx, const sim_activity_t *a)
{
    (void)ctx, (void)a;
}

static void hold_activity(void)
{
    static const sim_activity_ops_t ops = { NULL, held_submit, held_complete };

    EXPECT(sim_activity_attach(&ops) == 0, "cannot attach an observer to the simulator");
}

static void scenario(const char *mode)
{
    static uint32_t in[WORDS], out[WORDS];
    CUdeviceptr x, y;
    CUstream s;

    if (strcmp(mode, "busy") == 0)
        subscribe_first();
    if (strcmp(mode, "held") == 0)
        hold_activity();
    st_setup(0);
    CUfunction k1 = st_function(tt_ptx, "tt_k1"), k2 = st_function(tt_ptx, "tt_k2");
    CUfunction k3 = st_function(tt_ptx, "tt_k3");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&x, 4 * WORDS));
    CHECK_CU(cuMemAlloc(&y, 4 * WORDS));
    CHECK_CU(cuMemsetD32Async(x, 0, WORDS, s));
    for (int it = 0; it < N; it++) {
        for (int i = 0; i < WORDS; i++)
            in[i] = (uint32_t)(it + i);
        CHECK_CU(cuMemcpyHtoDAsync(y, in, sizeof(in), s));
        CHECK_CU(tt_launch1(k1, s, x, WORDS));
        CHECK_CU(tt_launch2(k2, s, x, y, WORDS));
        CHECK_CU(tt_launch1(k3, s, x, WORDS));
        CHECK_CU(cuMemcpyDtoHAsync(out, x, sizeof(out), s));
        CHECK_CU(cuStreamSynchronize(s));
    }
    if (strcmp(mode, "late") == 0)
        subscribe_first();
    CUdeviceptr z;
    CHECK_CU(cuMemFree(y));                 /* made before the profiled iterations */
    CHECK_CU(cuMemAlloc(&z, 4096));         /* and after them */
    CHECK_CU(cuMemFree(z));
    printf("x[1] %u\n", out[1]);
}

/* The iteration marks: N, in order, each at the time of the i-th launch of tt_k1. */
static void check_marks(const tt_trace_t *t, const char *what)
{
    EXPECT(tt_count(t, TRC_EV_ITERATION) == N, "%s: %zu iteration marks, expected %d", what,
           tt_count(t, TRC_EV_ITERATION), N);
    for (int i = 0; i < N; i++) {
        const trc_event_t *m = tt_nth(t, TRC_EV_ITERATION, (size_t)i);
        const trc_event_t *l = tt_launch_of(t, "tt_k1", (size_t)i);
        EXPECT(m->u.iteration.index == (uint64_t)i, "%s: mark %d has index %llu", what, i,
               (unsigned long long)m->u.iteration.index);
        EXPECT(l && m->time == l->time, "%s: iteration %d marked at %llu, tt_k1 launch %d at "
               "%llu", what, i, (unsigned long long)m->time, i,
               l ? (unsigned long long)l->time : 0);
    }
}

/* Is op (an id) timed by exactly one TIMING record of `source`? 1 yes, 0 none; exits on a
 * duplicate, a wrong source or end < start. */
static int timed(const tt_trace_t *t, uint64_t op, uint32_t source, const char *what)
{
    int n = 0;

    for (size_t i = 0; i < t->n; i++) {
        const trc_timing_t *g = &t->ev[i].u.timing;
        if (t->ev[i].type != TRC_EV_TIMING || g->op != op)
            continue;
        EXPECT(g->source == source && g->end >= g->start, "%s: TIMING of op %llu: source %u "
               "(expected %u), %llu..%llu", what, (unsigned long long)op, g->source, source,
               (unsigned long long)g->start, (unsigned long long)g->end);
        n++;
    }
    EXPECT(n <= 1, "%s: %d TIMING records of op %llu", what, n, (unsigned long long)op);
    return n;
}

/* Exactly the operations of iterations [w, w + p) have device times from `source`; with w = 0
 * the profiling starts with the first operation (iteration 0 is only known afterwards), so
 * the set-up memset and the first upload are timed too. */
static void check_timings(const tt_trace_t *t, int w, int p, uint32_t source, const char *what)
{
    uint64_t first = w ? tt_op(tt_launch_of(t, "tt_k1", (size_t)w)) : 1;
    const trc_event_t *end = tt_launch_of(t, "tt_k1", (size_t)(w + p));
    uint64_t last = end ? tt_op(end) : UINT64_MAX;
    size_t want = 0, got = 0;

    for (size_t i = 0; i < t->n; i++) {
        uint64_t op = tt_op(&t->ev[i]);
        if (!op)
            continue;
        int in = op >= first && op < last, has = timed(t, op, source, what);
        EXPECT(in == has, "%s: %s %llu (a %s) %s device times", what, in ? "profiled op" : "op",
               (unsigned long long)op, trc_type_name(t->ev[i].type),
               has ? "has" : "has no");
        want += (size_t)in;
        got += (size_t)has;
    }
    EXPECT(want == (size_t)p * 5 + (w ? 0 : 2) && got == want &&
               tt_count(t, TRC_EV_TIMING) == want,
           "%s: %zu TIMING records for %zu profiled operations (5 per iteration)", what,
           tt_count(t, TRC_EV_TIMING), want);
}

/* What elixir-trace makes of it: `kernels --json` counts p timed launches of each kernel
 * (one per profiled iteration) out of N, and the Chrome timeline names the times' source. */
static void check_tool(const char *path, int p, uint32_t source, const char *what)
{
    char out[256], json[256], want[128];
    snprintf(out, sizeof(out), "%s.out", path);
    snprintf(json, sizeof(json), "%s.json", path);
    const char *kernels[] = { "kernels", path, "--json", NULL };
    const char *text = tt_tool(kernels, out, out);
    static const char *const names[] = { "tt_k1", "tt_k2", "tt_k3" };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(want, sizeof(want), "{\"name\": \"%s\", \"launches\": %d, \"timed\": %d,",
                 names[i], N, p);
        EXPECT(strstr(text, want), "%s: kernels --json lacks '%s':\n%s", what, want, text);
    }
    const char *timeline[] = { "timeline", "--chrome", json, path, NULL };
    text = tt_tool(timeline, out, json);
    unlink(out);
    const char *mine = source == TRC_TIMING_CUPTI ? "\"timing\":\"cupti\"" :
                                                    "\"timing\":\"events\"";
    const char *other = source == TRC_TIMING_CUPTI ? "\"timing\":\"events\"" :
                                                     "\"timing\":\"cupti\"";
    EXPECT(strstr(text, mine) && !strstr(text, other),
           "%s: the Chrome timeline's slices are not all marked %s", what, mine);
}

typedef struct run_case {
    const char *name, *mode;
    const char *env[4];
    int warmup, profile;
    uint32_t source;
    const char *log;            /* in the scenario's stderr, or NULL */
} run_case_t;

static void run(const run_case_t *c, int k)
{
    const char *path = tt_path("iterations", k);
    const char *env[6] = { tt_env_trace(path, k) };
    tt_trace_t t;

    for (int i = 0; c->env[i]; i++)
        env[i + 1] = c->env[i];
    sh_run_t r = sh_run_ok(c->mode, env);
    EXPECT(!c->log || sh_count(r.err, c->log) == 1, "%s: the log does not say '%s' once:\n%s",
           c->name, c->log, r.err);
    tt_load(path, &t);
    tt_expect_clean(&t, c->name);
    check_marks(&t, c->name);
    check_timings(&t, c->warmup, c->profile, c->source, c->name);
    check_tool(path, c->profile, c->source, c->name);
    printf("%s: %d iterations marked, %d profiled with %s times\n", c->name, N, c->profile,
           c->source == TRC_TIMING_CUPTI ? "CUPTI" : "event");
    tt_free(&t);
    unlink(path);
    sh_run_free(&r);
}

/* ELIXIR_TRACE_LEVEL=level: after the profiled iteration (1), no launch, copy or memset;
 * before and during it, all of them; the iterations still marked.  `allocs` keeps the
 * allocation made after it (z) and both frees; `summary` drops z's records but keeps the
 * free of y, allocated before. */
static void run_level(const char *level, size_t allocs, size_t frees)
{
    const char *path = tt_path("iterations", 9);
    char var[64];
    snprintf(var, sizeof(var), "ELIXIR_TRACE_LEVEL=%s", level);
    const char *env[] = { tt_env_trace(path, 3), var, NULL };
    tt_trace_t t;

    sh_run_t r = sh_run_ok("cupti", env);
    tt_load(path, &t);
    tt_expect_clean(&t, level);
    EXPECT(tt_count(&t, TRC_EV_ITERATION) == N, "%s: %zu marks", level,
           tt_count(&t, TRC_EV_ITERATION));
    /* The memset and the first upload, then iterations 0 and 1: 5 operations each (the
     * next iteration's upload comes before its first kernel). */
    size_t ops = tt_count(&t, TRC_EV_LAUNCH) + tt_count(&t, TRC_EV_COPY) +
                 tt_count(&t, TRC_EV_MEMSET);
    EXPECT(tt_count(&t, TRC_EV_LAUNCH) == 6 && ops == 2 + 2 * 5,
           "%s: %zu launches and %zu operations kept, expected 6 and 12", level,
           tt_count(&t, TRC_EV_LAUNCH), ops);
    EXPECT(tt_count(&t, TRC_EV_ALLOC) == allocs && tt_count(&t, TRC_EV_FREE) == frees &&
               tt_count(&t, TRC_EV_PROCESS) == 1 && tt_count(&t, TRC_EV_OPTIONS) == 1 &&
               tt_count(&t, TRC_EV_DEVICE) == 1,
           "%s: %zu allocations (expected %zu), %zu frees (expected %zu), %zu process, %zu "
           "options, %zu device records", level, tt_count(&t, TRC_EV_ALLOC), allocs,
           tt_count(&t, TRC_EV_FREE), frees, tt_count(&t, TRC_EV_PROCESS),
           tt_count(&t, TRC_EV_OPTIONS), tt_count(&t, TRC_EV_DEVICE));
    printf("%s: %zu operations kept, all before the end of the profiled iteration; %zu "
           "allocations, %zu frees\n", level, ops, allocs, frees);
    tt_free(&t);
    unlink(path);
    sh_run_free(&r);
}

int main(int argc, char **argv)
{
    static char cupti_path[PATH_MAX + 16], lib[PATH_MAX];
    const char *build = getenv("BUILD");

    snprintf(lib, sizeof(lib), "%s/sim/libcupti.so.13", build && *build ? build : "build");
    snprintf(cupti_path, sizeof(cupti_path), "ELIXIR_CUPTI=%s", lib);
    const run_case_t cases[] = {
        { "CUPTI", "cupti", { NULL }, 1, 1, TRC_TIMING_CUPTI, NULL },
        { "CUPTI, iterations 2-4", "cupti",
          { "ELIXIR_PROFILE_WARMUP=2", "ELIXIR_PROFILE_ITERATIONS=3", NULL }, 2, 3,
          TRC_TIMING_CUPTI, NULL },
        { "events", "cupti", { "ELIXIR_CUPTI=off", NULL }, 1, 1, TRC_TIMING_EVENTS, NULL },
        { "events from iteration 0", "cupti",
          { "ELIXIR_CUPTI=off", "ELIXIR_PROFILE_WARMUP=0", "ELIXIR_PROFILE_ITERATIONS=2", NULL },
          0, 2, TRC_TIMING_EVENTS, NULL },
        { "CUPTI taken", "busy", { NULL }, 1, 1, TRC_TIMING_EVENTS, "from CUDA events" },
        { "CUPTI activity refused", "held", { NULL }, 1, 1, TRC_TIMING_EVENTS,
          "its activity cannot be turned on" },
        { "CUPTI by path", "cupti", { cupti_path, NULL }, 1, 1, TRC_TIMING_CUPTI, NULL },
        { "CUPTI released", "late", { "ELIXIR_LOG=info", NULL }, 1, 1, TRC_TIMING_CUPTI,
          "CUPTI released at iteration 3 " },
    };

    if (argc > 1 && (strcmp(argv[1], "cupti") == 0 || strcmp(argv[1], "busy") == 0 ||
                     strcmp(argv[1], "held") == 0 || strcmp(argv[1], "late") == 0)) {
        scenario(argv[1]);
        return 0;
    }
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        run(&cases[i], (int)i);
    run_level("summary", 2, 1);
    run_level("allocs", 3, 2);
    return 0;
}
