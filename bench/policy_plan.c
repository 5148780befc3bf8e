/* SPDX-License-Identifier: MIT */
/*
 * policy_plan.c - how long the planner takes on 100,000 operations, and what it predicts.
 *
 * A synthetic layered training iteration: per layer a weight, its gradient, optimizer state
 * (twice the weight) and an activation born in the forward pass and freed in the backward
 * pass; per layer FWD kernels forward (weight and previous activation read, own activation
 * written), BWD kernels backward (weight and both activations read, gradient written) and
 * OPT kernels of optimizer step (weight, gradient and state read and written).  Device times
 * follow the bytes a kernel reaches at HBM speed.  The machine is an H100 on PCIe: 2 MiB
 * chunks, 25 GB/s each way and 40 GB/s both ways together (PCIe 5 x16 as measured, not
 * fully duplex, 5 us of latency a copy), 1 us per move and 132 us per 2 MiB chunk of mapping
 * calls (an H200's, as the shim plans: POL_MAP_US_PER_CHUNK), 1 us of host time to issue each
 * operation.  For the GPU at 1/2,
 * 1/4 and 1/8 of the footprint, the whole knob search is timed and the best plan's predicted
 * iteration is printed beside the operations alone (compute) and the lower bound, with
 * ratios; planning time is given as wall and CPU time (the CPU time is the planner's own
 * where other work shares the cores).  Then the same for an iteration whose operations in
 * place reach many chunks: 100,000 operations, of which every 250th reaches the whole of a
 * 4,000-chunk buffer (8 GiB, more than the GPU at 1/2 of it: those run in place) and the rest
 * one of 64 small buffers.  No figure is asserted; a plan that fails is reported and the
 * program exits 1.  Usage: policy_plan [layers] (100 operations per layer).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../tests/unit_policy.h"

#define FWD 40
#define BWD 50
#define OPT 10

static double now_ms(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Device time of a kernel reaching `chunks` chunks at 3 TB/s, at least 5 us. */
static uint64_t dur(pb_t *b, uint32_t chunks)
{
    uint64_t ns = chunks * b->m.chunk / 3000;
    return ns < 5000 ? 5000 : ns;
}

/* The iteration; returns the footprint in chunks. */
static uint64_t build(pb_t *b, uint32_t layers)
{
    const uint32_t W = 4, A = 8;
    uint32_t nops = layers * (FWD + BWD + OPT);
    uint32_t *w = malloc(layers * 4 * sizeof(uint32_t)), *g = w + layers, *o = g + layers;
    uint32_t *a = o + layers;
    for (uint32_t l = 0; l < layers; l++) {
        w[l] = pb_buf(b, W, -1, -1);
        g[l] = pb_buf(b, W, -1, -1);
        o[l] = pb_buf(b, 2 * W, -1, -1);
        b->bufs[w[l]].nvme_ok = b->bufs[o[l]].nvme_ok = 1;
        int born = (int)(l * FWD), dies = (int)(layers * FWD + (layers - 1 - l) * BWD + BWD - 1);
        a[l] = pb_buf(b, A, born, dies);
    }
    for (uint32_t l = 0; l < layers; l++)
        for (uint32_t k = 0; k < FWD; k++) {
            pb_op(b, 0, dur(b, W + 2 * A));
            pb_all(b, w[l], POL_READ);
            if (l > 0)
                pb_all(b, a[l - 1], POL_READ);
            pb_all(b, a[l], k == 0 ? POL_OVERWRITE : POL_RW);
        }
    for (uint32_t l = layers; l-- > 0; )
        for (uint32_t k = 0; k < BWD; k++) {
            pb_op(b, 0, dur(b, 2 * W + 2 * A));
            pb_all(b, w[l], POL_READ);
            pb_all(b, a[l], POL_READ);
            if (l > 0)
                pb_all(b, a[l - 1], POL_READ);
            pb_all(b, g[l], k == 0 ? POL_OVERWRITE : POL_RW);
        }
    for (uint32_t l = 0; l < layers; l++)
        for (uint32_t k = 0; k < OPT; k++) {
            pb_op(b, 0, dur(b, 4 * W));
            pb_all(b, w[l], POL_RW);
            pb_all(b, g[l], POL_READ);
            pb_all(b, o[l], POL_RW);
        }
    free(w);
    (void)nops;
    return (uint64_t)layers * (4 * W + A);
}

/* The iteration with operations in place; returns its footprint in chunks. */
static uint64_t build_in_place(pb_t *b)
{
    const uint32_t big_chunks = 4000, small = 64, every = 250, nops = 100000;
    uint32_t big = pb_buf(b, big_chunks, -1, -1), first = (uint32_t)b->nbufs;
    for (uint32_t k = 0; k < small; k++)
        pb_buf(b, 4, -1, -1);
    for (uint32_t i = 0; i < nops; i++) {
        if (i % every == 0) {
            pb_op(b, 0, dur(b, big_chunks));
            pb_all(b, big, POL_RW);
        } else {
            pb_op(b, 0, dur(b, 4));
            pb_all(b, first + i % small, POL_RW);
        }
    }
    return big_chunks + 4 * small;
}

/* Plan b at 1/2, 1/4 and 1/8 of its footprint (total chunks) and print a line for each;
 * 1 where a plan failed. */
static int plan_fractions(pb_t *b, uint64_t total)
{
    int failed = 0;
    b->m.link[POL_HOST] = (pol_link_t){ 25, 25, 40, 5 };
    b->m.cap[POL_HOST] = (total + 64) * b->m.chunk;
    b->m.map_us_per_call = 1;
    b->m.map_us_per_chunk = POL_MAP_US_PER_CHUNK;
    b->m.host_us_per_op = 1;
    printf("policy_plan: %zu operations, %zu buffers, footprint %llu chunks of 2 MiB\n",
           b->nops, b->nbufs, (unsigned long long)total);
    printf("%-6s %8s %8s %10s %10s %10s %10s %9s %9s %s\n", "gpu", "plan ms", "cpu ms",
           "ops/cpu-s", "iter ms", "bound ms", "compute ms", "iter/bnd", "iter/cmp",
           "knobs look/extent/pin/slack");
    for (int frac = 2; frac <= 8; frac *= 2) {
        b->m.cap[POL_GPU] = total / frac * b->m.chunk;
        pol_plan_t *p = NULL;
        double t0 = now_ms(CLOCK_MONOTONIC), c0 = now_ms(CLOCK_PROCESS_CPUTIME_ID);
        int rc = pol_plan(pb_input(b), NULL, &p);
        double ms = now_ms(CLOCK_MONOTONIC) - t0, cpu = now_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
        if (rc) {
            printf("1/%-6d pol_plan failed: %d\n", frac, rc);
            failed = 1;
            continue;
        }
        const pol_result_t *r = &p->predicted;
        printf("1/%-4d %8.0f %8.0f %10.0f %10.2f %10.2f %10.2f %9.3f %9.3f %u/%u/%lluM/%u\n",
               frac, ms, cpu, b->nops / (cpu / 1e3), r->iter_ns / 1e6, r->bound_ns / 1e6,
               r->compute_ns / 1e6, r->iter_ns / r->bound_ns, r->iter_ns / r->compute_ns,
               p->knobs.lookahead, p->knobs.extent_chunks,
               (unsigned long long)(p->knobs.pin_bytes >> 20), p->knobs.slack_chunks);
        pol_plan_free(p);
    }
    return failed;
}

int main(int argc, char **argv)
{
    uint32_t layers = argc > 1 ? (uint32_t)atoi(argv[1]) : 1000;
    pb_t b;
    pb_init(&b);
    b.m.chunk = 2 * MIB;
    uint64_t total = build(&b, layers);
    int failed = plan_fractions(&b, total);
    pb_fini(&b);
    pb_init(&b);
    b.m.chunk = 2 * MIB;
    total = build_in_place(&b);
    printf("\nwith operations in place:\n");
    failed |= plan_fractions(&b, total);
    pb_fini(&b);
    return failed;
}
