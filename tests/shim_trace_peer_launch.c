/* SPDX-License-Identifier: MIT */
/*
 * shim_trace_peer_launch.c - a recorded launch names the allocations its arguments reach in
 * another device's arena (peer pointers) as well as its own device's.
 *
 * The scenario (under the shim, two simulated devices) allocates Q and R (4 KiB each, small
 * allocations sharing one chunk) on device 1, then P on device 0, whose context enables peer
 * access to device 1's and launches, on its legacy stream: tt_k2(P, R) twice (R is the second
 * allocation of its chunk: the record must name it, not the chunk's first), tt_k2(Q, P),
 * tt_k1(Q) (nothing of device 0's), and twice a six-pointer kernel whose six different words
 * all lie in device 1's arena (a list long enough for the recorder's per-thread memo of
 * argument lists, which must not answer for the words in another arena); then device 1's context,
 * with peer access to device 0's, launches that kernel twice on words all in P (one of the
 * two devices' arenas lies lowest, where the memo's key cannot tell the lists apart).  Every
 * launch's record must
 * name exactly the allocations it reaches, in allocation order, and the values the kernels
 * computed must be right.
 */
#define TT_KERNELS
#include "shim_trace_test.h"

#define NLAUNCH 8
#define WORDS 16

SIM_KERNEL void pl_k6(const sim_launch_t *l, void **params)
{
    (void)l;
    for (int i = 0; i < 6; i++)
        sim_kernel_access(*(void **)params[i], 4, SIM_ACCESS_READ);
}

static const char pl_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry pl_k6(.param .u64 a, .param .u64 b, .param .u64 c, .param .u64 d,"
    " .param .u64 e, .param .u64 f)\n{\n ret;\n}\n";

static void scenario(void)
{
    CUdeviceptr q, r, p;
    uint32_t host[WORDS];

    CUcontext c1 = st_setup(1);
    CHECK_CU(cuMemAlloc(&q, 4096));
    CHECK_CU(cuMemAlloc(&r, 4096));
    CHECK_CU(cuMemsetD32(q, 1, WORDS));
    CHECK_CU(cuMemsetD32(r, 10, WORDS));
    CHECK_CU(cuCtxSynchronize());
    st_setup(0);
    CHECK_CU(cuMemAlloc(&p, 4096));
    CHECK_CU(cuMemsetD32(p, 100, WORDS));
    CHECK_CU(cuCtxEnablePeerAccess(c1, 0));
    CUfunction k1 = st_function(tt_ptx, "tt_k1"), k2 = st_function(tt_ptx, "tt_k2");
    CUfunction k6 = st_function(pl_ptx, "pl_k6");
    CHECK_CU(tt_launch2(k2, NULL, p, r, WORDS));            /* launches 0, 1: P += R */
    CHECK_CU(tt_launch2(k2, NULL, p, r, WORDS));
    CHECK_CU(tt_launch2(k2, NULL, q, p, WORDS));            /* 2: Q += P */
    CHECK_CU(tt_launch1(k1, NULL, q, WORDS));               /* 3: Q += 1 */
    CUdeviceptr w[6] = { q, r, q + 64, r + 64, q + 128, r + 128 };
    void *args[6] = { &w[0], &w[1], &w[2], &w[3], &w[4], &w[5] };
    for (int i = 0; i < 2; i++)                             /* 4, 5 */
        CHECK_CU(cuLaunchKernel(k6, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    CHECK_CU(cuCtxSynchronize());
    CUcontext c0;
    CHECK_CU(cuCtxGetCurrent(&c0));
    CHECK_CU(cuCtxSetCurrent(c1));
    CHECK_CU(cuCtxEnablePeerAccess(c0, 0));
    CUdeviceptr v[6] = { p, p + 4, p + 8, p + 12, p + 16, p + 60 };
    void *vargs[6] = { &v[0], &v[1], &v[2], &v[3], &v[4], &v[5] };
    CUfunction k6on1 = st_function(pl_ptx, "pl_k6");
    for (int i = 0; i < 2; i++)                             /* 6, 7 (on device 1) */
        CHECK_CU(cuLaunchKernel(k6on1, 1, 1, 1, 1, 1, 1, 0, NULL, vargs, NULL));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuMemcpyDtoH(host, q, sizeof(host)));
    EXPECT(host[0] == 122 && host[WORDS - 1] == 122, "Q holds %u, expected 1 + 120 + 1", host[0]);
    CHECK_CU(cuMemcpyDtoH(host, p, sizeof(host)));
    EXPECT(host[0] == 120 && host[WORDS - 1] == 120, "P holds %u, expected 100 + 2 * 10",
           host[0]);
    printf("0x%llx 0x%llx 0x%llx\n", (unsigned long long)q, (unsigned long long)r,
           (unsigned long long)p);
}

/* What launch i must name, as indexes of (Q, R, P), -1 ending the list. */
static const struct {
    const char *func;
    int allocs[4];
} wants[NLAUNCH] = {
    { "tt_k2", { 1, 2, -1 } }, { "tt_k2", { 1, 2, -1 } }, { "tt_k2", { 0, 2, -1 } },
    { "tt_k1", { 0, -1 } },    { "pl_k6", { 0, 1, -1 } }, { "pl_k6", { 0, 1, -1 } },
    { "pl_k6", { 2, -1 } },    { "pl_k6", { 2, -1 } },
};

int main(int argc, char **argv)
{
    if (argc < 2)
        setenv("ELIXIR_SIM_DEVICES", "2", 1);
    sh_scenario_child(argc, argv, scenario);
    tt_trace_t t;
    sh_run_t run = tt_record_scenario("peer_launch", 0, &t);
    uint64_t ids[3];

    tt_alloc_ids(&t, run.out, ids, 3);
    EXPECT(tt_count(&t, TRC_EV_LAUNCH) == NLAUNCH, "%zu LAUNCH records, expected %d",
           tt_count(&t, TRC_EV_LAUNCH), NLAUNCH);
    for (int i = 0; i < NLAUNCH; i++) {
        const trc_launch_t *l = &tt_nth(&t, TRC_EV_LAUNCH, (size_t)i)->u.launch;
        EXPECT(l->device == (i >= 6), "launch %d: device %d, expected %d", i, (int)l->device,
               i >= 6);
        tt_expect_launch(l, i, wants[i].func, ids, wants[i].allocs);
    }
    printf("%d launches name their allocations on both devices\n", NLAUNCH);
    tt_free(&t);
    sh_run_free(&run);
    return 0;
}
