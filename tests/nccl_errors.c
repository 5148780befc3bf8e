/* SPDX-License-Identifier: MIT */
/*
 * nccl_errors.c - the libnccl.so.2 stand-in refuses bad calls with NCCL's result codes and a
 * message naming the problem (ncclGetLastError), and a refused call leaves the communicators
 * usable: a correct all-reduce afterwards gives the right answer.
 *
 * Two ranks from ncclCommInitAll on two devices.  Refused: a NULL or foreign communicator,
 * an unimplemented datatype (fp8), an operator out of range, a root out of range, a NULL
 * receive buffer, ncclGroupEnd without ncclGroupStart, a collective called on one rank only
 * outside a group (one thread drives both ranks: it could never complete), parts that
 * disagree on the count inside a group, and ncclCommInitRank with a bad rank or an id that
 * ncclGetUniqueId did not make.  A count of 0 is accepted and does nothing.
 *
 * ncclGroupSimulateEnd ends a group without running it: the outermost one drops the group
 * (the receive buffers keep what they held) and sets the estimated time of a simInfo made with
 * NCCL_SIM_INFO_INITIALIZER; an inner one only ends its level; after it ncclGroupEnd has no
 * group to end.  One without a group is ncclInvalidUsage, and a simInfo not set up is
 * ncclInvalidArgument at the outermost end, which still drops the group.
 */
#include "nccl_test.h"

#define N 2

static nt_rank_t rk[N];

/* The last error message must contain `want`. */
static void expect_message(ncclComm_t comm, const char *want)
{
    const char *msg = ncclGetLastError(comm);
    EXPECT(msg && strstr(msg, want), "last error \"%s\" does not mention \"%s\"",
           msg ? msg : "(null)", want);
}

/* A correct all-reduce of ones on both ranks gives N everywhere. */
static void expect_allreduce_works(void)
{
    int32_t one[8], got[8];
    for (int i = 0; i < 8; i++)
        one[i] = 1;
    for (int r = 0; r < N; r++)
        nt_put(&rk[r], rk[r].a, one, sizeof(one));
    NT_EACH_RANK(r, N,
                 ncclAllReduce((void *)rk[r].a, (void *)rk[r].b, 8, ncclInt32, ncclSum, rk[r].comm,
                               rk[r].stream));
    for (int r = 0; r < N; r++) {
        nt_get(&rk[r], got, rk[r].b, sizeof(got));
        for (int i = 0; i < 8; i++)
            EXPECT(got[i] == N, "rank %d element %d: %d, want %d", r, i, got[i], N);
    }
}

static void bad_arguments(void)
{
    void *a = (void *)rk[0].a, *b = (void *)rk[0].b;
    ncclComm_t c = rk[0].comm;
    CUstream s = rk[0].stream;
    int foreign = 0;

    EXPECT_NCCL(ncclInvalidArgument, ncclAllReduce(a, b, 8, ncclFloat, ncclSum, NULL, s));
    EXPECT_NCCL(ncclInvalidArgument,
                ncclAllReduce(a, b, 8, ncclFloat, ncclSum, (ncclComm_t)&foreign, s));
    expect_message(NULL, "not a communicator");
    EXPECT_NCCL(ncclInvalidArgument, ncclAllReduce(a, b, 8, ncclFloat8e4m3, ncclSum, c, s));
    expect_message(c, "datatype 10");
    EXPECT_NCCL(ncclInvalidArgument, ncclAllReduce(a, b, 8, ncclFloat, ncclNumOps, c, s));
    expect_message(c, "operator 5");
    EXPECT_NCCL(ncclInvalidArgument, ncclBroadcast(a, b, 8, ncclFloat, N, c, s));
    expect_message(c, "root 2");
    EXPECT_NCCL(ncclInvalidArgument, ncclSend(a, 8, ncclFloat, -1, c, s));
    expect_message(c, "peer -1");
    EXPECT_NCCL(ncclInvalidArgument, ncclAllReduce(a, NULL, 8, ncclFloat, ncclSum, c, s));
    expect_message(c, "recvbuff is NULL");
    EXPECT_NCCL(ncclInvalidArgument, ncclCommCount(c, NULL));
    CHECK_NCCL(ncclAllReduce(a, b, 0, ncclFloat, ncclSum, c, s));   /* count 0: nothing */
}

static void bad_usage(void)
{
    void *a = (void *)rk[0].a, *b = (void *)rk[0].b;

    EXPECT_NCCL(ncclInvalidUsage, ncclGroupEnd());
    EXPECT_NCCL(ncclInvalidUsage,
                ncclAllReduce(a, b, 8, ncclInt32, ncclSum, rk[0].comm, rk[0].stream));
    expect_message(rk[0].comm, "ncclGroupStart");
    expect_allreduce_works();

    CHECK_NCCL(ncclGroupStart());
    CHECK_NCCL(ncclAllReduce(a, b, 8, ncclInt32, ncclSum, rk[0].comm, rk[0].stream));
    EXPECT_NCCL(ncclSuccess, ncclAllReduce((void *)rk[1].a, (void *)rk[1].b, 16, ncclInt32,
                                           ncclSum, rk[1].comm, rk[1].stream));
    EXPECT_NCCL(ncclInvalidUsage, ncclGroupEnd());
    expect_message(NULL, "does not match");
    expect_allreduce_works();
}

/* A group of all-reduces of rank-dependent values into b, ended by ncclGroupSimulateEnd:
 * nothing may reach b, which holds -1 before. */
static void simulated_group(void)
{
    int32_t mine[8], minus[8], got[8];
    ncclSimInfo_t si = NCCL_SIM_INFO_INITIALIZER, bad = NCCL_SIM_INFO_INITIALIZER;

    bad.magic = 0;
    EXPECT_NCCL(ncclInvalidUsage, ncclGroupSimulateEnd(&si));
    for (int i = 0; i < 8; i++)
        minus[i] = -1;
    for (int r = 0; r < N; r++) {
        for (int i = 0; i < 8; i++)
            mine[i] = 10 * (r + 1) + i;
        nt_put(&rk[r], rk[r].a, mine, sizeof(mine));
        nt_put(&rk[r], rk[r].b, minus, sizeof(minus));
    }
    for (int round = 0; round < 2; round++) {   /* a nested group, then a bad simInfo */
        CHECK_NCCL(ncclGroupStart());
        if (round == 0)
            CHECK_NCCL(ncclGroupStart());
        for (int r = 0; r < N; r++)
            CHECK_NCCL(ncclAllReduce((void *)rk[r].a, (void *)rk[r].b, 8, ncclInt32, ncclSum,
                                     rk[r].comm, rk[r].stream));
        if (round == 0) {
            CHECK_NCCL(ncclGroupSimulateEnd(&si));
            CHECK_NCCL(ncclGroupSimulateEnd(&si));
            EXPECT(si.estimatedTime == 0, "estimated time %g, want 0", si.estimatedTime);
        } else {
            EXPECT_NCCL(ncclInvalidArgument, ncclGroupSimulateEnd(&bad));
            expect_message(NULL, "NCCL_SIM_INFO_INITIALIZER");
        }
        EXPECT_NCCL(ncclInvalidUsage, ncclGroupEnd());
        for (int r = 0; r < N; r++) {
            CHECK_CU(cuStreamSynchronize(rk[r].stream));
            nt_get(&rk[r], got, rk[r].b, sizeof(got));
            for (int i = 0; i < 8; i++)
                EXPECT(got[i] == -1, "round %d rank %d element %d: %d after a simulated group",
                       round, r, i, got[i]);
        }
    }
    expect_allreduce_works();
}

static void bad_init(void)
{
    ncclUniqueId id;
    ncclComm_t c;

    CHECK_NCCL(ncclGetUniqueId(&id));
    EXPECT_NCCL(ncclInvalidArgument, ncclCommInitRank(&c, 2, id, 2));
    expect_message(NULL, "rank 2 of 2");
    memset(&id, 0x5a, sizeof(id));
    EXPECT_NCCL(ncclInvalidArgument, ncclCommInitRank(&c, 2, id, 0));
    expect_message(NULL, "ncclGetUniqueId");
    EXPECT_NCCL(ncclInvalidArgument, ncclCommInitAll(&c, 3, NULL));
    expect_message(NULL, "2 devices");
}

int main(void)
{
    setenv("ELIXIR_SIM_DEVICES", "2", 1);
    nt_ranks_all(rk, N, 4096);
    bad_arguments();
    bad_usage();
    simulated_group();
    bad_init();
    nt_ranks_free(rk, N);
    printf("bad calls refused with clear errors; the communicators still work\n");
    return 0;
}
