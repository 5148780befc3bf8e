/* SPDX-License-Identifier: MIT */
/*
 * nccl_collectives.c - the libnccl.so.2 stand-in computes what NCCL documents.
 *
 * Three ranks made by ncclCommInitAll on a three-device machine (ELIXIR_SIM_DEVICES=3), one
 * thread driving them in groups: all-reduce (float sum, int32 max, in place, int64 average,
 * half and bfloat16 sums, rounded to nearest even), broadcast from rank 1 (also in place with
 * ncclBcast), reduce (uint32 product) to rank 2, all-gather (also in place), reduce-scatter
 * (float sum), all-to-all, gather to rank 0, scatter from rank 1, and a ring of sends and
 * receives.  Every rank's output is read back and compared with the values computed on the
 * host.  The race checker (fail) checks the staging and events.
 */
#include "nccl_test.h"

#define N 3
#define COUNT 1000
#define BYTES (N * COUNT * 8)

static nt_rank_t rk[N];

/* Rank r's float input: distinct per rank and element. */
static float fin(int r, size_t k)
{
    return (float)(r + 1) * 0.5f + (float)k;
}

static void put_floats(CUdeviceptr (*buf)(const nt_rank_t *), size_t count)
{
    static float host[N * COUNT];
    for (int r = 0; r < N; r++) {
        for (size_t k = 0; k < count; k++)
            host[k] = fin(r, k);
        nt_put(&rk[r], buf(&rk[r]), host, count * sizeof(float));
    }
}

static CUdeviceptr buf_a(const nt_rank_t *r) { return r->a; }

static void allreduce_float_sum(void)
{
    static float got[COUNT];
    put_floats(buf_a, COUNT);
    NT_EACH_RANK(r, N,
                 ncclAllReduce((void *)rk[r].a, (void *)rk[r].b, COUNT, ncclFloat, ncclSum,
                               rk[r].comm, rk[r].stream));
    for (int r = 0; r < N; r++) {
        nt_get(&rk[r], got, rk[r].b, sizeof(got));
        for (size_t k = 0; k < COUNT; k++) {
            float want = fin(0, k) + fin(1, k) + fin(2, k);
            EXPECT(got[k] == want, "rank %d element %zu: %g, want %g", r, k, got[k], want);
        }
    }
}

/* int32 max, in place (sendbuff == recvbuff), including negative values. */
static void allreduce_int_max_in_place(void)
{
    int32_t host[COUNT], got[COUNT];
    for (int r = 0; r < N; r++) {
        for (int k = 0; k < COUNT; k++)
            host[k] = (k % 3 == r) ? k : -k - r;
        nt_put(&rk[r], rk[r].a, host, sizeof(host));
    }
    NT_EACH_RANK(r, N,
                 ncclAllReduce((void *)rk[r].a, (void *)rk[r].a, COUNT, ncclInt32, ncclMax,
                               rk[r].comm, rk[r].stream));
    for (int r = 0; r < N; r++) {
        nt_get(&rk[r], got, rk[r].a, sizeof(got));
        for (int k = 0; k < COUNT; k++)
            EXPECT(got[k] == (k == 0 ? 0 : k), "rank %d element %d: %d, want %d", r, k,
                   got[k], k);
    }
}

static void allreduce_int64_avg(void)
{
    int64_t host[4], got[4];
    for (int r = 0; r < N; r++) {
        for (int k = 0; k < 4; k++)
            host[k] = (int64_t)(r * 10 + k) * 1000000000000ll;
        nt_put(&rk[r], rk[r].a, host, sizeof(host));
    }
    NT_EACH_RANK(r, N,
                 ncclAllReduce((void *)rk[r].a, (void *)rk[r].b, 4, ncclInt64, ncclAvg, rk[r].comm,
                               rk[r].stream));
    for (int r = 0; r < N; r++) {
        nt_get(&rk[r], got, rk[r].b, sizeof(got));
        for (int k = 0; k < 4; k++)
            EXPECT(got[k] == (int64_t)(10 + k) * 1000000000000ll, "rank %d element %d: %lld",
                   r, k, (long long)got[k]);
    }
}

/* Half and bfloat16 sums: every rank's 8 elements are in[rank], each result must be want. */
static void allreduce_16bit(ncclDataType_t t, const uint16_t in[N], uint16_t want)
{
    uint16_t host[8], got[8];
    for (int r = 0; r < N; r++) {
        for (int k = 0; k < 8; k++)
            host[k] = in[r];
        nt_put(&rk[r], rk[r].a, host, sizeof(host));
    }
    NT_EACH_RANK(r, N,
                 ncclAllReduce((void *)rk[r].a, (void *)rk[r].b, 8, t, ncclSum, rk[r].comm,
                               rk[r].stream));
    for (int r = 0; r < N; r++) {
        nt_get(&rk[r], got, rk[r].b, sizeof(got));
        for (int k = 0; k < 8; k++)
            EXPECT(got[k] == want, "type %d rank %d element %d: 0x%04x, want 0x%04x", (int)t, r,
                   k, got[k], want);
    }
}

/* Sums that fall between two 16-bit values are rounded to nearest, ties to even: 1 + half an
 * ulp stays 1, 1 + three quarters of an ulp goes up, and (1 + 1 ulp) + half an ulp goes up to
 * the even neighbour. */
static void rounding_16bit(void)
{
    /* half: 1.0, 2^-11 (half its ulp at 1), 2^-12, 1 + 2^-10 */
    static const uint16_t h_tie[N] = { 0x3c00, 0x1000, 0 }, h_up[N] = { 0x3c00, 0x1000, 0x0c00 };
    static const uint16_t h_odd[N] = { 0x3c01, 0x1000, 0 };
    /* bfloat16: 1.0, 2^-8 (half its ulp at 1), 2^-9, 1 + 2^-7 */
    static const uint16_t b_tie[N] = { 0x3f80, 0x3b80, 0 }, b_up[N] = { 0x3f80, 0x3b80, 0x3b00 };
    static const uint16_t b_odd[N] = { 0x3f81, 0x3b80, 0 };

    allreduce_16bit(ncclFloat16, h_tie, 0x3c00);
    allreduce_16bit(ncclFloat16, h_up, 0x3c01);
    allreduce_16bit(ncclFloat16, h_odd, 0x3c02);
    allreduce_16bit(ncclBfloat16, b_tie, 0x3f80);
    allreduce_16bit(ncclBfloat16, b_up, 0x3f81);
    allreduce_16bit(ncclBfloat16, b_odd, 0x3f82);
}

static void broadcast(void)
{
    static float got[COUNT];
    put_floats(buf_a, COUNT);
    NT_EACH_RANK(r, N,
                 ncclBroadcast((void *)rk[r].a, (void *)rk[r].b, COUNT, ncclFloat, 1, rk[r].comm,
                               rk[r].stream));
    /* in place: rank 2's a to everyone's a */
    NT_EACH_RANK(r, N, ncclBcast((void *)rk[r].a, COUNT, ncclFloat, 2, rk[r].comm, rk[r].stream));
    for (int r = 0; r < N; r++) {
        nt_get(&rk[r], got, rk[r].b, sizeof(got));
        for (size_t k = 0; k < COUNT; k++)
            EXPECT(got[k] == fin(1, k), "broadcast rank %d element %zu: %g", r, k, got[k]);
        nt_get(&rk[r], got, rk[r].a, sizeof(got));
        for (size_t k = 0; k < COUNT; k++)
            EXPECT(got[k] == fin(2, k), "bcast rank %d element %zu: %g", r, k, got[k]);
    }
}

/* uint32 product to root 2; the other ranks' recvbuff stays untouched. */
static void reduce_prod(void)
{
    uint32_t host[16], got[16];
    for (int r = 0; r < N; r++) {
        for (int k = 0; k < 16; k++)
            host[k] = (uint32_t)(r + 2 + k);
        nt_put(&rk[r], rk[r].a, host, sizeof(host));
        memset(host, 0xab, sizeof(host));
        nt_put(&rk[r], rk[r].b, host, sizeof(host));
    }
    NT_EACH_RANK(r, N,
                 ncclReduce((void *)rk[r].a, (void *)rk[r].b, 16, ncclUint32, ncclProd, 2,
                            rk[r].comm, rk[r].stream));
    for (int r = 0; r < N; r++) {
        nt_get(&rk[r], got, rk[r].b, sizeof(got));
        for (uint32_t k = 0; k < 16; k++) {
            uint32_t want = r == 2 ? (2 + k) * (3 + k) * (4 + k) : 0xababababu;
            EXPECT(got[k] == want, "reduce rank %d element %u: %u, want %u", r, k, got[k], want);
        }
    }
}

/* All-gather into b, then in place: rank r's part already at a + r * count. */
static void allgather(void)
{
    static float host[N * COUNT], got[N * COUNT];
    put_floats(buf_a, COUNT);
    NT_EACH_RANK(r, N,
                 ncclAllGather((void *)rk[r].a, (void *)rk[r].b, COUNT, ncclFloat, rk[r].comm,
                               rk[r].stream));
    for (int r = 0; r < N; r++) {
        nt_get(&rk[r], got, rk[r].b, sizeof(got));
        for (int j = 0; j < N; j++)
            for (size_t k = 0; k < COUNT; k++)
                EXPECT(got[j * COUNT + k] == fin(j, k), "allgather rank %d slot %d element %zu",
                       r, j, k);
        memset(host, 0, sizeof(host));
        for (size_t k = 0; k < COUNT; k++)
            host[r * COUNT + k] = fin(r, k) * 2;
        nt_put(&rk[r], rk[r].a, host, sizeof(host));
    }
    NT_EACH_RANK(r, N,
                 ncclAllGather((void *)(rk[r].a + r * COUNT * sizeof(float)), (void *)rk[r].a,
                               COUNT, ncclFloat, rk[r].comm, rk[r].stream));
    for (int r = 0; r < N; r++) {
        nt_get(&rk[r], got, rk[r].a, sizeof(got));
        for (int j = 0; j < N; j++)
            for (size_t k = 0; k < COUNT; k++)
                EXPECT(got[j * COUNT + k] == fin(j, k) * 2, "in-place allgather rank %d slot %d",
                       r, j);
    }
}

/* Rank r gets block r of the element-wise sum of everyone's N * COUNT floats. */
static void reduce_scatter(void)
{
    static float host[N * COUNT], got[COUNT];
    for (int r = 0; r < N; r++) {
        for (size_t k = 0; k < N * COUNT; k++)
            host[k] = fin(r, k);
        nt_put(&rk[r], rk[r].a, host, sizeof(host));
    }
    NT_EACH_RANK(r, N,
                 ncclReduceScatter((void *)rk[r].a, (void *)rk[r].b, COUNT, ncclFloat, ncclSum,
                                   rk[r].comm, rk[r].stream));
    for (int r = 0; r < N; r++) {
        nt_get(&rk[r], got, rk[r].b, sizeof(got));
        for (size_t k = 0; k < COUNT; k++) {
            size_t e = r * COUNT + k;
            float want = fin(0, e) + fin(1, e) + fin(2, e);
            EXPECT(got[k] == want, "reducescatter rank %d element %zu: %g, want %g", r, k,
                   got[k], want);
        }
    }
}

/* All-to-all: rank r gets block r of every rank's a, side by side; then gather of a's first
 * block to rank 0 and scatter of rank 1's a. */
static void alltoall_gather_scatter(void)
{
    static float host[N * COUNT], got[N * COUNT];
    for (int r = 0; r < N; r++) {
        for (size_t k = 0; k < N * COUNT; k++)
            host[k] = fin(r, k);
        nt_put(&rk[r], rk[r].a, host, sizeof(host));
    }
    NT_EACH_RANK(r, N,
                 ncclAlltoAll((void *)rk[r].a, (void *)rk[r].b, COUNT, ncclFloat, rk[r].comm,
                              rk[r].stream));
    for (int r = 0; r < N; r++) {
        nt_get(&rk[r], got, rk[r].b, sizeof(got));
        for (int j = 0; j < N; j++)
            for (size_t k = 0; k < COUNT; k++)
                EXPECT(got[j * COUNT + k] == fin(j, r * COUNT + k),
                       "alltoall rank %d block %d element %zu: %g", r, j, k, got[j * COUNT + k]);
    }
    NT_EACH_RANK(r, N,
                 ncclGather((void *)rk[r].a, (void *)rk[r].b, COUNT, ncclFloat, 0, rk[r].comm,
                            rk[r].stream));
    nt_get(&rk[0], got, rk[0].b, sizeof(got));
    for (int j = 0; j < N; j++)
        for (size_t k = 0; k < COUNT; k++)
            EXPECT(got[j * COUNT + k] == fin(j, k), "gather block %d element %zu", j, k);
    NT_EACH_RANK(r, N,
                 ncclScatter((void *)rk[r].a, (void *)rk[r].b, COUNT, ncclFloat, 1, rk[r].comm,
                             rk[r].stream));
    for (int r = 0; r < N; r++) {
        nt_get(&rk[r], got, rk[r].b, COUNT * sizeof(float));
        for (size_t k = 0; k < COUNT; k++)
            EXPECT(got[k] == fin(1, r * COUNT + k), "scatter rank %d element %zu", r, k);
    }
}

/* Each rank sends its a to the next rank's b. */
static void send_recv_ring(void)
{
    static float got[COUNT];
    put_floats(buf_a, COUNT);
    CHECK_NCCL(ncclGroupStart());
    for (int r = 0; r < N; r++) {
        CHECK_NCCL(ncclSend((void *)rk[r].a, COUNT, ncclFloat, (r + 1) % N, rk[r].comm,
                            rk[r].stream));
        CHECK_NCCL(ncclRecv((void *)rk[r].b, COUNT, ncclFloat, (r + N - 1) % N, rk[r].comm,
                            rk[r].stream));
    }
    CHECK_NCCL(ncclGroupEnd());
    for (int r = 0; r < N; r++) {
        nt_get(&rk[r], got, rk[r].b, sizeof(got));
        for (size_t k = 0; k < COUNT; k++)
            EXPECT(got[k] == fin((r + N - 1) % N, k), "recv rank %d element %zu: %g", r, k,
                   got[k]);
    }
}

int main(void)
{
    static const uint16_t half_in[N] = { 0x3e00, 0x4080, 0xb800 };   /* 1.5, 2.25, -0.5 */
    static const uint16_t bf16_in[N] = { 0x3fc0, 0x4010, 0xbf00 };
    int version = 0;

    setenv("ELIXIR_SIM_DEVICES", "3", 1);
    CHECK_NCCL(ncclGetVersion(&version));
    EXPECT(version == NCCL_VERSION_CODE, "ncclGetVersion %d, want %d", version,
           NCCL_VERSION_CODE);
    nt_ranks_all(rk, N, BYTES);
    allreduce_float_sum();
    allreduce_int_max_in_place();
    allreduce_int64_avg();
    allreduce_16bit(ncclFloat16, half_in, 0x4280);                   /* 3.25 */
    allreduce_16bit(ncclBfloat16, bf16_in, 0x4050);
    rounding_16bit();
    broadcast();
    reduce_prod();
    allgather();
    reduce_scatter();
    alltoall_gather_scatter();
    send_recv_ring();
    nt_ranks_free(rk, N);
    printf("all collectives on %d ranks agree with the host\n", N);
    return 0;
}
