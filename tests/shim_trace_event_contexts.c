/* SPDX-License-Identifier: MIT */
/*
 * shim_trace_event_contexts.c - device times from CUDA events for work on another
 * context's stream.
 *
 * With ELIXIR_CUPTI=off, each operation of the profiled iterations is timed by two events
 * recorded on its stream, and an event can be recorded only on a stream of its own context.
 * Their times are read once both events completed, at a later operation or at exit, unless
 * the context goes first.  The scenario (two devices, profiling from the start, for more
 * iterations than it makes):
 * - with device 0's context current, launches tt_k1 (a CUkernel, which runs in its stream's
 *   context) and sets memory on a stream of device 1's context, and launches tt_k1 on the
 *   legacy stream;
 * - makes CONTEXTS contexts of its own on device 0 one after another, and in each launches
 *   tt_k1 and, after a synchronisation, tt_k3, then destroys it;
 * - launches tt_k3 in device 1's primary context and resets it (cuDevicePrimaryCtxReset).
 * Every one of those operations must have its device times from events.
 */
#define TT_KERNELS
#include "shim_trace_test.h"

#define WORDS 16
#define CONTEXTS 20

static void scenario(void)
{
    CUdeviceptr x1, y;
    CUstream s1;
    CUlibrary lib;
    CUkernel k;

    st_setup(1);
    CHECK_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&x1, 4 * WORDS));
    CHECK_CU(cuMemsetD32(x1, 0, WORDS));
    CHECK_CU(cuCtxSynchronize());
    st_setup(0);
    CHECK_CU(cuMemAlloc(&y, 4 * WORDS));
    CHECK_CU(cuLibraryLoadData(&lib, tt_ptx, NULL, NULL, 0, NULL, NULL, 0));
    CHECK_CU(cuLibraryGetKernel(&k, lib, "tt_k1"));
    CHECK_CU(tt_launch1((CUfunction)k, s1, x1, WORDS));
    CHECK_CU(cuMemsetD32Async(x1, 5, WORDS, s1));
    CHECK_CU(cuStreamSynchronize(s1));
    CHECK_CU(tt_launch1((CUfunction)k, NULL, y, WORDS));
    CHECK_CU(cuCtxSynchronize());
    printf("two operations on device 1's stream, one on device 0's\n");
    for (int i = 0; i < CONTEXTS; i++) {
        CUcontext c;
        CUdeviceptr p;
        CHECK_CU(cuCtxCreate(&c, NULL, 0, 0));
        CUfunction k1 = st_function(tt_ptx, "tt_k1"), k3 = st_function(tt_ptx, "tt_k3");
        CHECK_CU(cuMemAlloc(&p, 4 * WORDS));
        CHECK_CU(tt_launch1(k1, NULL, p, WORDS));
        CHECK_CU(cuCtxSynchronize());
        CHECK_CU(tt_launch1(k3, NULL, p, WORDS));
        CHECK_CU(cuCtxSynchronize());
        CHECK_CU(cuMemFree(p));
        CHECK_CU(cuCtxDestroy(c));
    }
    printf("%d contexts made and destroyed\n", CONTEXTS);
    st_setup(1);
    CUfunction k3 = st_function(tt_ptx, "tt_k3");
    CHECK_CU(tt_launch1(k3, NULL, x1, WORDS));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuDevicePrimaryCtxReset(1));
    printf("device 1's primary context reset\n");
}

/* Does operation op have a TIMING record from events? */
static int timed(const tt_trace_t *t, uint64_t op)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->ev[i].type == TRC_EV_TIMING && t->ev[i].u.timing.op == op)
            return t->ev[i].u.timing.source == TRC_TIMING_EVENTS;
    return 0;
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    const char *path = tt_path("shim-trace-event-contexts", 0);
    const char *env[] = { tt_env_trace(path, 0), "ELIXIR_CUPTI=off", "ELIXIR_PROFILE_WARMUP=0",
                          "ELIXIR_PROFILE_ITERATIONS=1000", "ELIXIR_SIM_DEVICES=2", NULL };
    sh_run_t r = sh_run_ok("scenario", env);
    tt_trace_t t;

    tt_load(path, &t);
    tt_expect_clean(&t, path);
    const trc_event_t *l = tt_launch_of(&t, "tt_k1", 0);
    const trc_event_t *m = tt_nth(&t, TRC_EV_MEMSET, 1);
    EXPECT(l && l->u.launch.device == 1 && timed(&t, l->u.launch.id),
           "the launch on device 1's stream, device 0 current, has no times from events");
    EXPECT(m && m->u.memset.device == 1 && timed(&t, m->u.memset.id),
           "the memset on device 1's stream, device 0 current, has no times from events");
    l = tt_launch_of(&t, "tt_k1", 1);
    EXPECT(l && l->u.launch.device == 0 && timed(&t, l->u.launch.id),
           "the launch on device 0's legacy stream has no times from events");
    for (int i = 0; i < CONTEXTS; i++) {
        const trc_event_t *a = tt_launch_of(&t, "tt_k1", (size_t)i + 2);
        const trc_event_t *b = tt_launch_of(&t, "tt_k3", (size_t)i);
        EXPECT(a && b && timed(&t, a->u.launch.id) && timed(&t, b->u.launch.id),
               "context %d of its own: tt_k1 %s, tt_k3 %s times from events", i,
               a && timed(&t, a->u.launch.id) ? "has" : "has no",
               b && timed(&t, b->u.launch.id) ? "has" : "has no");
    }
    l = tt_launch_of(&t, "tt_k3", CONTEXTS);
    EXPECT(l && l->u.launch.device == 1 && timed(&t, l->u.launch.id),
           "the launch before device 1's primary context was reset has no times from events");
    printf("operations on another context's stream, in %d contexts and before a reset timed\n",
           CONTEXTS);
    tt_free(&t);
    sh_run_free(&r);
    return 0;
}
