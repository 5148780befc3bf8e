/* SPDX-License-Identifier: MIT */
/*
 * kernels.c - the host kernels of the libnccl.so.2 stand-in.
 *
 * elixir_nccl_put copies a rank's input into its slot of the operation's staging area;
 * elixir_nccl_get computes a rank's output from every slot: a reduction for all-reduce,
 * reduce and reduce-scatter (in rank order, so results are deterministic), a copy of the
 * root's slot for broadcast and of the sender's for a receive, the slots side by side for
 * all-gather and gather, the rank's block of each slot side by side for all-to-all, and the
 * rank's block of the root's slot for scatter.  Both declare what they read and write, so
 * the race checker sees them, and charge the bytes they move to the virtual clock.  Half and
 * bfloat16 values are reduced in single precision and rounded back to nearest-even once per
 * element.
 */
#include <string.h>

#include "nccl_int.h"

const char nccl_ptx[] =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry elixir_nccl_put(.param .u64 work)\n{\n ret;\n}\n"
    ".visible .entry elixir_nccl_get(.param .u64 work)\n{\n ret;\n}\n";

static void put(const sim_launch_t *l, void **params)
{
    const nccl_work_t *w = *(const nccl_work_t **)params[0];
    const void *src = (const void *)(uintptr_t)w->src;
    void *dst = (void *)(uintptr_t)w->dst;
    (void)l;
    sim_kernel_access(src, w->bytes, SIM_ACCESS_READ);
    sim_kernel_access(dst, w->bytes, SIM_ACCESS_WRITE);
    sim_kernel_cost(0, 2.0 * (double)w->bytes);
    memcpy(dst, src, w->bytes);
}

/* ---------------------------------------------------------------- element arithmetic */

static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, u;
    if (exp == 0x1f) {
        u = sign | 0x7f800000u | (man << 13);
    } else if (exp) {
        u = sign | ((exp + 112) << 23) | (man << 13);
    } else if (!man) {
        u = sign;
    } else {                                    /* subnormal: normalise */
        int e = -1;
        do {
            man <<= 1;
            e++;
        } while (!(man & 0x400));
        u = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ff) << 13);
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* h, the truncated bits kept, rounded to nearest even by the dropped bits `rest`, of which
 * `half` is the half-way value. */
static uint32_t round_even(uint32_t h, uint32_t rest, uint32_t half)
{
    return h + (rest > half || (rest == half && (h & 1)));
}

/* Round-to-nearest-even conversion of f to half precision. */
static uint16_t float_to_half(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000, exp = (u >> 23) & 0xff, man = u & 0x7fffff;
    if (exp == 0xff)
        return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
    int e = (int)exp - 112;
    if (e >= 0x1f)
        return (uint16_t)(sign | 0x7c00);
    if (e <= 0) {                               /* subnormal or zero */
        if (e < -10)
            return (uint16_t)sign;
        man |= 0x800000;
        int shift = 14 - e;
        return (uint16_t)(sign |
                          round_even(man >> shift, man & ((1u << shift) - 1), 1u << (shift - 1)));
    }
    /* Rounding up may carry into the exponent: that is the correct result. */
    return (uint16_t)(sign | round_even(((uint32_t)e << 10) | (man >> 13), man & 0x1fff, 0x1000));
}

static float bf16_to_float(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint16_t float_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffff))
        return (uint16_t)((u >> 16) | 0x40);    /* NaN stays NaN */
    u += 0x7fff + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

/* acc op= v, in the type's own arithmetic. */
#define COMBINE(acc, v, op)                                                                    \
    do {                                                                                       \
        switch (op) {                                                                          \
        case ncclProd: acc = acc * v; break;                                                   \
        case ncclMax: acc = v > acc ? v : acc; break;                                          \
        case ncclMin: acc = v < acc ? v : acc; break;                                          \
        default: acc = acc + v; break;                                                         \
        }                                                                                      \
    } while (0)

/*
 * dst[k] = op over slots j of slot j's element k, for type T.  Sums and products are computed
 * in UT: the unsigned type of the same size for integers (they wrap, as the hardware's do,
 * never overflowing into undefined behaviour), T itself for floating point.
 */
#define REDUCE_AS(T, UT)                                                                       \
    for (uint64_t k = 0; k < count; k++) {                                                     \
        T acc;                                                                                 \
        memcpy(&acc, slot0 + k * sizeof(T), sizeof(T));                                       \
        for (uint32_t j = 1; j < n; j++) {                                                     \
            T v;                                                                               \
            memcpy(&v, slot0 + j * stride + k * sizeof(T), sizeof(T));                         \
            if (op == ncclSum || op == ncclAvg)                                                \
                acc = (T)((UT)acc + (UT)v);                                                    \
            else if (op == ncclProd)                                                           \
                acc = (T)((UT)acc * (UT)v);                                                    \
            else                                                                               \
                COMBINE(acc, v, op);                                                           \
        }                                                                                      \
        if (op == ncclAvg)                                                                     \
            acc = (T)(acc / (T)n);                                                             \
        memcpy(dst + k * sizeof(T), &acc, sizeof(T));                                          \
    }

#define REDUCE_16(to_float, from_float)                                                        \
    for (uint64_t k = 0; k < count; k++) {                                                     \
        uint16_t h;                                                                            \
        memcpy(&h, slot0 + k * 2, 2);                                                          \
        float acc = to_float(h);                                                               \
        for (uint32_t j = 1; j < n; j++) {                                                     \
            memcpy(&h, slot0 + j * stride + k * 2, 2);                                         \
            float v = to_float(h);                                                             \
            COMBINE(acc, v, op);                                                               \
        }                                                                                      \
        if (op == ncclAvg)                                                                     \
            acc = acc / (float)n;                                                              \
        h = from_float(acc);                                                                   \
        memcpy(dst + k * 2, &h, 2);                                                            \
    }

/* Reduce `count` elements of type t from n slots `stride` bytes apart, starting at slot0. */
static void reduce(unsigned char *dst, const unsigned char *slot0, uint64_t stride, uint32_t n,
                   uint64_t count, ncclDataType_t t, ncclRedOp_t op)
{
    switch (t) {
    case ncclInt8: REDUCE_AS(int8_t, uint8_t) break;
    case ncclUint8: REDUCE_AS(uint8_t, uint8_t) break;
    case ncclInt32: REDUCE_AS(int32_t, uint32_t) break;
    case ncclUint32: REDUCE_AS(uint32_t, uint32_t) break;
    case ncclInt64: REDUCE_AS(int64_t, uint64_t) break;
    case ncclUint64: REDUCE_AS(uint64_t, uint64_t) break;
    case ncclFloat32: REDUCE_AS(float, float) break;
    case ncclFloat64: REDUCE_AS(double, double) break;
    case ncclFloat16: REDUCE_16(half_to_float, float_to_half) break;
    case ncclBfloat16: REDUCE_16(bf16_to_float, float_to_bf16) break;
    default: break;                             /* refused when the call was made */
    }
}

/* The slots of n ranks side by side in dst: `count` elements of each, `offset` bytes into
 * its slot (all-gather, gather, all-to-all). */
static void gather(unsigned char *dst, const unsigned char *staging, uint64_t slot, uint32_t n,
                   uint64_t offset, uint64_t bytes)
{
    for (uint32_t j = 0; j < n; j++)
        memcpy(dst + j * bytes, staging + j * slot + offset, bytes);
}

/* The rank's output of the operation (see nccl_work_t); `count` is the operation's count
 * argument (per rank for all-gather, gather, scatter, all-to-all and reduce-scatter). */
static void get(const sim_launch_t *l, void **params)
{
    const nccl_work_t *w = *(const nccl_work_t **)params[0];
    const unsigned char *staging = (const unsigned char *)(uintptr_t)w->staging;
    uint64_t slot = w->slot, count = w->count;
    unsigned char *dst = (unsigned char *)(uintptr_t)w->dst;
    uint32_t kind = w->kind, n = w->nslots, rank = w->rank, root = w->root;
    ncclDataType_t t = (ncclDataType_t)w->type;
    ncclRedOp_t op = (ncclRedOp_t)w->op;
    uint64_t block = count * nccl_type_size(t), out = block;
    (void)l;

    if (kind == NK_ALLGATHER || kind == NK_GATHER || kind == NK_ALLTOALL)
        out *= n;
    sim_kernel_access(staging, slot * n, SIM_ACCESS_READ);
    sim_kernel_access(dst, out, SIM_ACCESS_WRITE);
    sim_kernel_cost(0, (double)(slot * n + out));
    switch (kind) {
    case NK_ALLREDUCE:
    case NK_REDUCE:
        reduce(dst, staging, slot, n, count, t, op);
        break;
    case NK_REDUCESCATTER:
        reduce(dst, staging + (uint64_t)rank * block, slot, n, count, t, op);
        break;
    case NK_ALLGATHER:
    case NK_GATHER:
        gather(dst, staging, slot, n, 0, block);
        break;
    case NK_ALLTOALL:
        gather(dst, staging, slot, n, (uint64_t)rank * block, block);
        break;
    case NK_SCATTER:
        memcpy(dst, staging + (uint64_t)root * slot + (uint64_t)rank * block, block);
        break;
    default:                                    /* broadcast, receive: the source's slot */
        memmove(dst, staging + (uint64_t)root * slot, out);
        break;
    }
}

int nccl_kernels_register(void)
{
    int r = sim_kernel_register("elixir_nccl_put", put);
    return r ? r : sim_kernel_register("elixir_nccl_get", get);
}
