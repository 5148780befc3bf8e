/* SPDX-License-Identifier: MIT */
/*
 * shim_trace_launch_words.c - the allocations a recorded launch names when its arguments are
 * more words than residency hands the tracer at once (64), or come in the `extra` buffer.
 *
 * The scenario (under the shim) allocates P0..P3 and launches lw_big(s, q), s an 80-word
 * structure: first with P2 + 64 in word 3, P0 + 16 in word 70 and P2 in word 79, q = P1;
 * then with P1 in word 5, P3 in word 65 and q = 0; then lw_pair(P3, P1 + 8) through the
 * `extra` buffer; then lw_big once more as the first time; then lw_four(P2 + 32, P1 + 8, P1,
 * P3 + 64) twice (the second answered by the tracer's memo of argument lists).  A repeated
 * pointer comes later with a lower offset, next to the first (P1) or not (P2).  Words past the
 * 64th reach the tracer in a second batch, so a launch's ids come from two batches (and out
 * of order, with a repeat).  The test checks each launch's allocation ids (ascending, no
 * repeats), the lowest offset of its pointers into each (format 1.8), device and stream.
 */
#define TT_KERNELS
#include "shim_trace_test.h"

#define BYTES (1u << 20)
#define BIG 80                          /* words of lw_big's structure */
#define NLAUNCH 6

SIM_KERNEL void lw_big(const sim_launch_t *l, void **params)
{
    (void)l;
    (void)params;
}

SIM_KERNEL void lw_pair(const sim_launch_t *l, void **params)
{
    (void)l;
    (void)params;
}

SIM_KERNEL void lw_four(const sim_launch_t *l, void **params)
{
    (void)l;
    (void)params;
}

static const char lw_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry lw_big(.param .align 8 .b8 s[640], .param .u64 q)\n{\n ret;\n}\n"
    ".visible .entry lw_pair(.param .u64 a, .param .u64 b)\n{\n ret;\n}\n"
    ".visible .entry lw_four(.param .u64 a, .param .u64 b, .param .u64 c, .param .u64 d)\n"
    "{\n ret;\n}\n";

/* lw_big(s, q) on stream st, waited for. */
static CUresult launch_big(CUfunction f, CUstream st, const uint64_t s[BIG], uint64_t q)
{
    uint64_t v[BIG];
    void *args[2] = { v, &q };

    memcpy(v, s, sizeof(v));
    CUresult r = cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, st, args, NULL);
    return r == CUDA_SUCCESS ? cuStreamSynchronize(st) : r;
}

/* lw_pair(a, b) through the `extra` buffer on stream st, waited for. */
static CUresult launch_pair(CUfunction f, CUstream st, uint64_t a, uint64_t b)
{
    uint64_t buf[2] = { a, b };
    size_t bytes = sizeof(buf);
    void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &bytes,
                      CU_LAUNCH_PARAM_END };
    CUresult r = cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, st, NULL, extra);
    return r == CUDA_SUCCESS ? cuStreamSynchronize(st) : r;
}

static void scenario(void)
{
    CUdeviceptr p[4];
    CUstream st;
    uint64_t s[BIG] = { 0 }, t[BIG] = { 0 };

    st_setup(0);
    CUfunction big = st_function(lw_ptx, "lw_big"), pair = st_function(lw_ptx, "lw_pair");
    CUfunction four = st_function(lw_ptx, "lw_four");
    CHECK_CU(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < 4; i++)
        CHECK_CU(cuMemAlloc(&p[i], BYTES));
    s[3] = p[2] + 64;                                   /* (P2 again in word 79, lower) */
    s[70] = p[0] + 16;
    s[79] = p[2];
    t[5] = p[1];
    t[65] = p[3];
    CHECK_CU(launch_big(big, st, s, p[1]));             /* launch 0 */
    CHECK_CU(launch_big(big, st, t, 0));                /* 1 */
    CHECK_CU(launch_pair(pair, st, p[3], p[1] + 8));    /* 2 */
    CHECK_CU(launch_big(big, st, s, p[1]));             /* 3 */
    for (int i = 0; i < 2; i++) {                       /* 4, 5 */
        uint64_t a = p[2] + 32, b = p[1] + 8, c = p[1], d = p[3] + 64;
        void *args[4] = { &a, &b, &c, &d };
        CHECK_CU(cuLaunchKernel(four, 1, 1, 1, 1, 1, 1, 0, st, args, NULL));
    }
    CHECK_CU(cuCtxSynchronize());
    for (int i = 0; i < 4; i++)
        printf("0x%llx\n", (unsigned long long)p[i]);
}

/* What launch i must name: its function, allocations (indexes of the scenario's p[],
 * ascending, -1 ending the list) and the lowest offset of its pointers into each. */
typedef struct want {
    const char *func;
    int allocs[4];
    uint64_t offs[4];
} want_t;

static const want_t wants[NLAUNCH] = {
    { "lw_big", { 0, 1, 2, -1 }, { 16, 0, 0 } },
    { "lw_big", { 1, 3, -1 }, { 0, 0 } },
    { "lw_pair", { 1, 3, -1 }, { 8, 0 } },
    { "lw_big", { 0, 1, 2, -1 }, { 16, 0, 0 } },
    { "lw_four", { 1, 2, 3, -1 }, { 0, 32, 64 } },
    { "lw_four", { 1, 2, 3, -1 }, { 0, 32, 64 } },
};


static void check_launch(const trc_launch_t *l, int i, const uint64_t ids[4], uint64_t sno)
{
    const want_t *w = &wants[i];

    EXPECT(l->device == 0 && l->stream != 0 && l->stream == sno,
           "launch %d: device %d, stream %llu, expected device 0, stream %llu", i, l->device,
           (unsigned long long)l->stream, (unsigned long long)sno);
    tt_expect_launch(l, i, w->func, ids, w->allocs);
    for (uint32_t k = 0; k < l->nallocs && w->allocs[k] >= 0; k++)
        EXPECT(l->offsets[k] == w->offs[k], "launch %d: offset %llu into P%d, expected %llu", i,
               (unsigned long long)l->offsets[k], w->allocs[k], (unsigned long long)w->offs[k]);
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    tt_trace_t t;
    sh_run_t r = tt_record_scenario("launch_words", 0, &t);
    uint64_t ids[4];

    tt_alloc_ids(&t, r.out, ids, 4);
    EXPECT(ids[0] < ids[1] && ids[1] < ids[2] && ids[2] < ids[3],
           "allocation ids %llu %llu %llu %llu, expected ascending", (unsigned long long)ids[0],
           (unsigned long long)ids[1], (unsigned long long)ids[2], (unsigned long long)ids[3]);
    EXPECT(tt_count(&t, TRC_EV_LAUNCH) == NLAUNCH, "%zu LAUNCH records, expected %d",
           tt_count(&t, TRC_EV_LAUNCH), NLAUNCH);
    uint64_t sno = tt_nth(&t, TRC_EV_LAUNCH, 0)->u.launch.stream;
    for (int i = 0; i < NLAUNCH; i++)
        check_launch(&tt_nth(&t, TRC_EV_LAUNCH, (size_t)i)->u.launch, i, ids, sno);
    tt_free(&t);
    sh_run_free(&r);
    return 0;
}
