/* SPDX-License-Identifier: MIT */
/*
 * shim_nccl_nonblocking.c - a call on a non-blocking NCCL communicator answers ncclInProgress
 * and NCCL enqueues its work later: its buffers must stay where they are until the program
 * has polled the communicator to ncclSuccess (ncclCommGetAsyncError), however much memory
 * other work wants meanwhile.
 *
 * One rank on one device with a GPU budget of 8 MiB, a communicator made with
 * config.blocking = 0 (the stand-in then answers ncclInProgress and enqueues the work at the
 * first poll).  A 4 MiB buffer X is filled and all-reduced in place; while the call is in
 * progress, two more 4 MiB buffers are filled on another stream (the whole budget with X):
 * X, the least recently used, must not be the one evicted.  Then the program polls, and X
 * must hold what it was filled with.  Once more with the call in a group (ncclGroupEnd
 * answers ncclInProgress), and once with the communicator aborted before any poll (the stand-in
 * drops the call: X must keep its contents and be movable again, which filling two more
 * buffers shows).  With evicted memory unmapped (ELIXIR_SIM_HOST_VMM=0) a buffer moved
 * before its work ran faults; with it mapped, the race checker finds the move racing with the
 * work.  Both must pass, and the statistics must show the shim's ncclCommGetAsyncError
 * wrapper called.
 */
#define SH_RES_KERNELS
#include "nccl_test.h"
#include "shim_test.h"

#define MIB (1ull << 20)
#define BUF_BYTES (4 * MIB)
#define WORDS (BUF_BYTES / 4)

static CUstream s, other;

static ncclComm_t comm_new(void)
{
    ncclUniqueId id;
    ncclComm_t comm;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    CHECK_NCCL(ncclGetUniqueId(&id));
    ncclResult_t r = ncclCommInitRankConfig(&comm, 1, id, 0, &config);
    EXPECT(r == ncclSuccess || r == ncclInProgress, "ncclCommInitRankConfig: %d", (int)r);
    ncclResult_t state = ncclInProgress;
    while (state == ncclInProgress)
        CHECK_NCCL(ncclCommGetAsyncError(comm, &state));
    CHECK_NCCL(state);
    return comm;
}

/* Two fresh buffers filled on the other stream: with x, the whole budget. */
static void fill_two(CUdeviceptr *y)
{
    for (int i = 0; i < 2; i++) {
        CHECK_CU(cuMemAlloc(&y[i], BUF_BYTES));
        CHECK_CU(cuMemsetD32Async(y[i], 50u + (unsigned)i, WORDS, other));
    }
    CHECK_CU(cuStreamSynchronize(other));
}

static void expect_all(CUdeviceptr d, uint32_t want, const char *what)
{
    static uint32_t host[WORDS];
    CHECK_CU(cuMemcpyDtoH(host, d, BUF_BYTES));
    for (size_t k = 0; k < WORDS; k++)
        EXPECT(host[k] == want, "%s: word %zu is %u, expected %u", what, k, host[k], want);
}

/* X filled with v and all-reduced (grouped or not); two buffers filled meanwhile; then the
 * communicator polled (or aborted). */
static void round_of(ncclComm_t comm, uint32_t v, int grouped, int abort_it)
{
    CUdeviceptr x, y[2];
    CHECK_CU(cuMemAlloc(&x, BUF_BYTES));
    CHECK_CU(cuMemsetD32Async(x, v, WORDS, s));
    CHECK_CU(cuStreamSynchronize(s));
    if (grouped)
        CHECK_NCCL(ncclGroupStart());
    ncclResult_t r = ncclAllReduce((void *)x, (void *)x, WORDS, ncclUint32, ncclSum, comm, s);
    if (grouped) {
        EXPECT(r == ncclSuccess, "ncclAllReduce in a group: %d", (int)r);
        r = ncclGroupEnd();
    }
    EXPECT(r == ncclInProgress, "a call on a non-blocking communicator: %d, expected "
           "ncclInProgress", (int)r);
    fill_two(y);                        /* (X is the least recently used) */
    if (abort_it) {
        CHECK_NCCL(ncclCommAbort(comm));
        CHECK_CU(cuMemFree(y[0]));
        CHECK_CU(cuMemFree(y[1]));
        fill_two(y);                    /* (X held by nothing: it may move now) */
    } else {
        ncclResult_t state = ncclInProgress;
        while (state == ncclInProgress)
            CHECK_NCCL(ncclCommGetAsyncError(comm, &state));
        CHECK_NCCL(state);
    }
    CHECK_CU(cuStreamSynchronize(s));
    expect_all(x, v, "X after its all-reduce");
    expect_all(y[1], 51, "the second buffer filled meanwhile");
    CHECK_CU(cuMemFree(x));
    CHECK_CU(cuMemFree(y[0]));
    CHECK_CU(cuMemFree(y[1]));
}

static void scenario(void)
{
    CUcontext ctx;
    CHECK_CU(cuInit(0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, 0));
    CHECK_CU(cuCtxSetCurrent(ctx));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
    ncclComm_t comm = comm_new();
    round_of(comm, 7, 0, 0);
    round_of(comm, 8, 1, 0);
    CHECK_NCCL(ncclCommDestroy(comm));
    round_of(comm_new(), 9, 0, 1);
    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuStreamDestroy(other));
    printf("the buffers of calls in progress stayed until their communicator was done\n");
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    for (int mapped = 0; mapped < 2; mapped++) {
        const char *env[] = { "ELIXIR_GPU_MEMORY=8M", "ELIXIR_STATS=1",
                              mapped ? "ELIXIR_SIM_HOST_VMM=1" : "ELIXIR_SIM_HOST_VMM=0",
                              NULL };
        sh_run_t r = sh_run_ok("scenario", env);
        printf("%s: %s", mapped ? "mapped" : "unmapped", r.out);
        EXPECT(strstr(r.err, "ncclCommGetAsyncError") != NULL,
               "the shim's ncclCommGetAsyncError was not called:\n%s", r.err);
        sh_run_free(&r);
    }
    return 0;
}
