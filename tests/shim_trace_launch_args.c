/* SPDX-License-Identifier: MIT */
/*
 * shim_trace_launch_args.c - the allocations and streams a recorded launch names when the
 * same kernel is launched again and again, as a training loop does: the recorder remembers
 * answers per thread (argument words, whole argument lists, the last stream), and each
 * launch's record must still be exactly right.
 *
 * The scenario (under the shim) allocates P0..P4 and launches a six-pointer kernel with its
 * arguments out of allocation order and one repeated, three times on stream S1 and once on
 * S2, with a one-pointer kernel on S1 and S2 in between; then allocates P5 and launches with
 * other arguments (a plain number and pointers inside allocations among them), and once more
 * with the first ones; then frees P1, allocates Q (where P1 was, as a rule) and launches with
 * the first argument list again, Q in P1's place.  The test checks every launch's allocation
 * ids (ascending, no repeats) and stream against what the scenario did.
 */
#define TT_KERNELS
#include "shim_trace_test.h"

#define BYTES (1u << 20)
#define NLAUNCH 13

SIM_KERNEL void la_k6(const sim_launch_t *l, void **params)
{
    (void)l;
    (void)params;
}

static const char la_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry la_k6(.param .u64 a, .param .u64 b, .param .u64 c, .param .u64 d,"
    " .param .u64 e, .param .u64 f)\n{\n ret;\n}\n";

/* Launches la_k6(w) on s and waits for it: the simulator takes a kernel that declares no
 * access as writing all it may reach, so launches on two streams must be ordered. */
static CUresult launch6(CUfunction f, CUstream s, const uint64_t w[6])
{
    uint64_t v[6];
    void *args[6];

    for (int i = 0; i < 6; i++) {
        v[i] = w[i];
        args[i] = &v[i];
    }
    CUresult r = cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
    return r == CUDA_SUCCESS ? cuStreamSynchronize(s) : r;
}

static void scenario(void)
{
    CUdeviceptr p[7];
    CUstream s1, s2;

    st_setup(0);
    CUfunction k6 = st_function(la_ptx, "la_k6"), k1 = st_function(tt_ptx, "tt_k1");
    CHECK_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < 5; i++)
        CHECK_CU(cuMemAlloc(&p[i], BYTES));
    uint64_t a[6] = { p[4], p[2], p[0], p[3], p[1], p[4] };
    for (int i = 0; i < 3; i++)
        CHECK_CU(launch6(k6, s1, a));                       /* launches 0-2 */
    CHECK_CU(tt_launch1(k1, s2, p[3], 16));                 /* 3 */
    CHECK_CU(launch6(k6, s2, a));                           /* 4 */
    CHECK_CU(tt_launch1(k1, s1, p[2], 16));                 /* 5 */
    CHECK_CU(cuMemAlloc(&p[5], BYTES));
    uint64_t b[6] = { p[5], p[4], 0x1234, p[0], p[0] + 100, p[5] + 8 };
    CHECK_CU(launch6(k6, s1, b));                           /* 6 */
    CHECK_CU(launch6(k6, s2, b));                           /* 7 */
    CHECK_CU(launch6(k6, s1, a));                           /* 8 */
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuMemFree(p[1]));
    CHECK_CU(cuMemAlloc(&p[6], BYTES));
    a[4] = p[6];
    for (int i = 0; i < 3; i++)
        CHECK_CU(launch6(k6, i == 1 ? s2 : s1, a));         /* 9-11 */
    CHECK_CU(tt_launch1(k1, s1, p[6], 16));                 /* 12 */
    CHECK_CU(cuCtxSynchronize());
    for (int i = 0; i < 7; i++)
        printf("0x%llx\n", (unsigned long long)p[i]);
}

/* What launch i must name: its allocations (as indexes of the scenario's p[], ascending by
 * allocation order, -1 ending the list) and its stream (1: S1, 2: S2). */
typedef struct want {
    const char *func;
    int stream;
    int allocs[8];
} want_t;

static const want_t wants[NLAUNCH] = {
    { "la_k6", 1, { 0, 1, 2, 3, 4, -1 } }, { "la_k6", 1, { 0, 1, 2, 3, 4, -1 } },
    { "la_k6", 1, { 0, 1, 2, 3, 4, -1 } }, { "tt_k1", 2, { 3, -1 } },
    { "la_k6", 2, { 0, 1, 2, 3, 4, -1 } }, { "tt_k1", 1, { 2, -1 } },
    { "la_k6", 1, { 0, 4, 5, -1 } },       { "la_k6", 2, { 0, 4, 5, -1 } },
    { "la_k6", 1, { 0, 1, 2, 3, 4, -1 } }, { "la_k6", 1, { 0, 2, 3, 4, 6, -1 } },
    { "la_k6", 2, { 0, 2, 3, 4, 6, -1 } }, { "la_k6", 1, { 0, 2, 3, 4, 6, -1 } },
    { "tt_k1", 1, { 6, -1 } },
};


static void check_launch(const trc_launch_t *l, int i, const uint64_t ids[7], uint64_t sno[3])
{
    const want_t *w = &wants[i];

    if (!sno[w->stream])
        sno[w->stream] = l->stream;
    EXPECT(l->stream != 0 && l->stream == sno[w->stream] && sno[1] != sno[2],
           "launch %d: stream %llu, expected S%d (S1 %llu, S2 %llu)", i,
           (unsigned long long)l->stream, w->stream, (unsigned long long)sno[1],
           (unsigned long long)sno[2]);
    tt_expect_launch(l, i, w->func, ids, w->allocs);
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    tt_trace_t t;
    sh_run_t r = tt_record_scenario("launch_args", 0, &t);
    uint64_t ids[7], sno[3] = { 0 };

    tt_alloc_ids(&t, r.out, ids, 7);
    EXPECT(tt_count(&t, TRC_EV_LAUNCH) == NLAUNCH, "%zu LAUNCH records, expected %d",
           tt_count(&t, TRC_EV_LAUNCH), NLAUNCH);
    for (int i = 0; i < NLAUNCH; i++)
        check_launch(&tt_nth(&t, TRC_EV_LAUNCH, (size_t)i)->u.launch, i, ids, sno);
    tt_free(&t);
    sh_run_free(&r);
    return 0;
}
