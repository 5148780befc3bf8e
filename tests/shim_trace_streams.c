/* SPDX-License-Identifier: MIT */
/*
 * shim_trace_streams.c - a trace's stream numbers name streams, not handles: two streams
 * never share a number, however many there are and whatever handles the driver gives them.
 *
 * A stream number tells the operations of one stream, which run in order, from those of
 * others.  The driver may give a new stream the handle of one destroyed before (the
 * simulator hands out the last one freed, as a driver whose handles are addresses of its own
 * objects does), and a program may have many streams.  The scenario, under the shim:
 * - launches tt_k1 on a stream A, destroys A and launches tt_k1 on a stream B that gets A's
 *   handle back;
 * - makes MANY streams (more than the recorder's table of handles holds), launches tt_k1 on
 *   each, and destroys them;
 * - launches on A's handle, now B's, once more (B still numbered as before).
 * Every one of those streams must have a number of its own, other than the legacy stream's;
 * B's two launches the same.
 */
#define TT_KERNELS
#include "shim_trace_test.h"

#define MANY 4200
#define TRIES 64

/* tt_k1 on stream s touching nothing: no memory of the arena is used on s, so nothing of the
 * shim's (an event covering a use) keeps a destroyed s alive and its handle from coming back. */
static void touch_nothing(CUfunction k1, CUstream s)
{
    CHECK_CU(tt_launch1(k1, s, 0, 0));
    CHECK_CU(cuStreamSynchronize(s));
}

/* A new stream with the handle of destroyed stream `old` (the simulator hands out the last
 * one freed): streams are made until one has it; the others go into made[] (*n of them). */
static CUstream same_handle(CUstream old, CUstream *made, int *n)
{
    CUstream s;

    for (int i = 0; i < TRIES; i++) {
        CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
        if (s == old)
            return s;
        made[(*n)++] = s;
    }
    EXPECT(0, "no new stream got the destroyed stream's handle %p back in %d tries: the test "
           "needs the simulator to reuse it", (void *)old, TRIES);
    return NULL;
}

static void scenario(void)
{
    static CUstream many[MANY], made[2 * TRIES];
    CUstream a, b;
    int n = 0;

    st_setup(0);
    CUfunction k1 = st_function(tt_ptx, "tt_k1");
    CHECK_CU(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    touch_nothing(k1, a);
    CHECK_CU(cuStreamDestroy(a));
    b = same_handle(a, made, &n);
    touch_nothing(k1, b);


    for (int i = 0; i < MANY; i++) {
        CHECK_CU(cuStreamCreate(&many[i], CU_STREAM_NON_BLOCKING));
        touch_nothing(k1, many[i]);
    }
    for (int i = 0; i < MANY; i++)
        CHECK_CU(cuStreamDestroy(many[i]));
    touch_nothing(k1, b);
    while (n > 0)
        CHECK_CU(cuStreamDestroy(made[--n]));
    CHECK_CU(cuStreamDestroy(b));
    printf("streams A, B and %d more\n", MANY);
}

static int cmp_u64(const void *p, const void *q)
{
    uint64_t a = *(const uint64_t *)p, b = *(const uint64_t *)q;
    return (a > b) - (a < b);
}

/* The stream numbers of the scenario's launches, in order: A, B, the MANY, B again; their
 * count. */
static size_t stream_numbers(const tt_trace_t *t, uint64_t *no, size_t cap)
{
    size_t n = 0;

    for (size_t i = 0; i < t->n && n < cap; i++)
        if (t->ev[i].type == TRC_EV_LAUNCH)
            no[n++] = t->ev[i].u.launch.stream;
    return n;
}

int main(int argc, char **argv)
{
    static uint64_t no[MANY + 8], sorted[MANY + 8];

    sh_scenario_child(argc, argv, scenario);
    const char *path = tt_path("shim-trace-streams", 0);
    const char *env[] = { tt_env_trace(path, 0), NULL };
    sh_run_t r = sh_run_ok("scenario", env);
    tt_trace_t t;

    tt_load(path, &t);
    tt_expect_clean(&t, path);
    size_t n = stream_numbers(&t, no, MANY + 8);
    EXPECT(n == MANY + 3, "%zu launches, expected %d", n, MANY + 3);
    EXPECT(no[1] != no[0], "B has destroyed A's stream number %llu", (unsigned long long)no[0]);
    EXPECT(no[MANY + 2] == no[1], "B's second launch on stream %llu, its first on %llu",
           (unsigned long long)no[MANY + 2], (unsigned long long)no[1]);
    memcpy(sorted, no, (MANY + 2) * sizeof(*no));
    qsort(sorted, MANY + 2, sizeof(*sorted), cmp_u64);
    for (size_t i = 0; i < MANY + 2; i++)
        EXPECT(sorted[i] != 0 && (i == 0 || sorted[i] != sorted[i - 1]),
               "two of the %d streams have stream number %llu", MANY + 2,
               (unsigned long long)sorted[i]);
    printf("%d streams, as many stream numbers\n", MANY + 2);
    tt_free(&t);
    sh_run_free(&r);
    return 0;
}
