/* SPDX-License-Identifier: MIT */
/*
 * unit_policy_random.c - property tests of the planner on random iterations.
 *
 * Each seed makes an iteration: 1 to 3 streams, buffers of 1 to 6 chunks that are permanent,
 * live inside the iteration or across its end, some pinned, some nvme_ok, operations reaching
 * 1 to 4 of the buffers alive with random accesses (in half the iterations some POL_NEAR,
 * which random knobs plan as uses or leave out), and a machine whose GPU holds somewhere
 * between what one operation needs and the whole footprint, with or without peer and NVMe
 * tiers, a host that is roomy or tight.  For every seed, with the search and with random knobs:
 * pol_plan succeeds or says -ENOSPC (the search not where a plan surely exists: host memory
 * for everything, no peer tier, and GPU room at every operation for its chunks with the pinned
 * ones); a plan passes pol_plan_verify (no tier over capacity, every operation's chunks on
 * the GPU, no data lost, cyclic); the replay predicts no less than the operations alone and
 * the lower bound, and the plan moves at least the bound's chunks in and back (in half the
 * iterations the buffers say where they lie, some at one address, so that births take parked
 * memory).  With more than enough GPU for everything,
 * nothing moves but materialisations.  Usage: unit_policy_random [seeds] [first seed]; without
 * arguments, seeds 1 to 300 and those that once failed (again[]).
 */
#include "unit_policy.h"

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33) % n;
}

/* A random life: permanent, inside, or across the end. */
static void random_life(int nops, int *born, int *dies)
{
    int kind = (int)rnd(4);
    *born = *dies = -1;
    if (kind == 0 || kind == 3)
        return;
    int a = (int)rnd((uint32_t)nops), b = (int)rnd((uint32_t)nops);
    *born = kind == 1 ? (a < b ? a : b) : (a > b ? a : b);
    *dies = kind == 1 ? (a < b ? b : a) : (a > b ? b : a);
    if (kind == 2 && *born == *dies)
        *dies = -1;
}

/* A random access; POL_NEAR with it (1 in 6) where `near`. */
static uint8_t random_access(int near)
{
    static const uint8_t acc[] = { POL_READ, POL_WRITE, POL_RW, POL_OVERWRITE, POL_READ };
    return (uint8_t)(acc[rnd(5)] | (near && rnd(6) == 0 ? POL_NEAR : 0));
}

/* An iteration of about nops operations; returns its footprint in chunks. */
static uint64_t build(pb_t *b, int nops)
{
    int nbufs = 3 + (int)rnd(30);
    uint64_t total = 0;
    for (int k = 0; k < nbufs; k++) {
        int born, dies;
        random_life(nops, &born, &dies);
        uint32_t id = pb_buf(b, 1 + rnd(6), born, dies);
        b->bufs[id].pinned = rnd(12) == 0;
        b->bufs[id].nvme_ok = rnd(2);
        b->bufs[id].clean = rnd(8) == 0;
        total += b->bufs[id].bytes / b->m.chunk;
    }
    uint32_t streams = 1 + rnd(3);
    int near = rnd(2);
    for (int i = 0; i < nops; i++) {
        pb_op(b, rnd(streams), 1000 + rnd(100000));
        int want = 1 + (int)rnd(4);
        for (int t = 0; t < 3 * want && b->ops[i].nref < (uint32_t)want; t++) {
            uint32_t buf = rnd((uint32_t)nbufs);
            const pol_buf_t *bf = &b->bufs[buf];
            int lb = bf->born, ld = bf->dies >= 0 ? bf->dies : (lb + nops - 1) % nops;
            int alive = lb < 0 || (ld >= lb ? i >= lb && i <= ld : i >= lb || i <= ld);
            uint32_t nch = (uint32_t)(bf->bytes / b->m.chunk), c = rnd(nch);
            if (alive)
                pb_ref(b, buf, c, 1 + rnd(nch - c), random_access(near));
        }
    }
    return total;
}

static void random_machine(pb_t *b, uint64_t total)
{
    b->m.cap[POL_GPU] = (2 + rnd((uint32_t)total + 8)) * b->m.chunk;
    b->m.cap[POL_HOST] = (rnd(3) ? total + 4 : total / 2 + 1) * b->m.chunk;
    b->m.cap[POL_PEER] = rnd(4) == 0 ? (1 + rnd(8)) * b->m.chunk : 0;
    b->m.cap[POL_NVME] = rnd(2) ? (total + 1) * b->m.chunk : 0;
    b->m.link[POL_HOST].latency_us = rnd(3);
    b->m.map_us_per_call = rnd(3) * 10.0;
    b->m.map_us_per_chunk = rnd(3) * 5.0;
    b->m.host_us_per_op = rnd(3) * 2.0;
    b->m.mapback_us_per_chunk = rnd(2) * 20.0;
}

static int alive_at(const pb_t *b, uint32_t buf, int i)
{
    const pol_buf_t *bf = &b->bufs[buf];
    int n = (int)b->nops, lb = bf->born, ld = bf->dies >= 0 ? bf->dies : (lb + n - 1) % n;
    return lb < 0 || (ld >= lb ? i >= lb && i <= ld : i >= lb || i <= ld);
}

/* Must the search find a plan?  It must where there is no peer tier, host memory holds the
 * whole footprint, and at every operation the GPU has room for the chunks it reaches (POL_NEAR
 * ones too) with every pinned chunk alive then: every other chunk can then wait in host
 * memory, and no operation runs in place. */
static int surely_plannable(const pb_t *b, uint64_t total)
{
    if (b->m.cap[POL_PEER] || b->m.cap[POL_HOST] < total * b->m.chunk)
        return 0;
    uint64_t gpu = b->m.cap[POL_GPU] / b->m.chunk;
    uint32_t *first = calloc(b->nbufs + 1, sizeof(*first));
    for (size_t k = 0; k < b->nbufs; k++)
        first[k + 1] = first[k] + (uint32_t)(b->bufs[k].bytes / b->m.chunk);
    uint8_t *on = malloc(first[b->nbufs] ? first[b->nbufs] : 1);
    int ok = 1;
    for (size_t i = 0; ok && i < b->nops; i++) {
        memset(on, 0, first[b->nbufs]);
        uint64_t need = 0;
        for (uint32_t r = b->ops[i].ref; r < b->ops[i].ref + b->ops[i].nref; r++)
            for (uint32_t c = 0; c < b->refs[r].nchunks; c++) {
                uint32_t g = first[b->refs[r].buf] + b->refs[r].chunk + c;
                need += !on[g];
                on[g] = 1;
            }
        for (uint32_t k = 0; k < b->nbufs; k++)
            if (b->bufs[k].pinned && alive_at(b, k, (int)i))
                for (uint32_t g = first[k]; g < first[k + 1]; g++) {
                    need += !on[g];
                    on[g] = 1;
                }
        ok = need <= gpu;
    }
    free(on);
    free(first);
    return ok;
}

/* Plan, verify and replay one input: 0 planned, 1 -ENOSPC, 2 -EDOM. */
static int one(pb_t *b, const pol_knobs_t *k, uint32_t seed)
{
    pol_plan_t *p = NULL;
    char err[256] = "";
    int rc = pol_plan(pb_input(b), k, &p);
    PB_CHECK(rc == 0 || rc == -ENOSPC || (k && rc == -EDOM),
             "seed %u: pol_plan: expected 0 or -ENOSPC (or -EDOM with knobs), got %d", seed, rc);
    if (rc == -EDOM)
        return 2;
    if (rc)
        return 1;
    rc = pol_plan_verify(pb_input(b), p, err, sizeof(err));
    PB_CHECK(rc == 0, "seed %u: pol_plan_verify: expected 0, got %d: %s", seed, rc, err);
    pol_result_t r;
    rc = pol_replay(pb_input(b), p, &r);
    PB_CHECK(rc == 0, "seed %u: pol_replay: expected 0, got %d", seed, rc);
    PB_CHECK(r.iter_ns + 1e-6 >= r.compute_ns && r.iter_ns + 1e-6 >= r.bound_ns,
             "seed %u: iter %.0f ns, expected >= compute %.0f and bound %.0f", seed,
             r.iter_ns, r.compute_ns, r.bound_ns);
    PB_CHECK(r.iter_ns == p->predicted.iter_ns, "seed %u: replay %.0f, plan predicted %.0f",
             seed, r.iter_ns, p->predicted.iter_ns);
    PB_CHECK(r.peak[POL_GPU] + p->knobs.slack_chunks * b->m.chunk <= b->m.cap[POL_GPU],
             "seed %u: the GPU held %llu bytes, more than its %llu less %u chunks of slack", seed,
             (unsigned long long)r.peak[POL_GPU], (unsigned long long)b->m.cap[POL_GPU],
             p->knobs.slack_chunks);
    /* The bound's chunks come in and go back under every plan, this one's included: its bytes
     * in, back, and both over the links' shared rates, at the rates of all the links together,
     * take no less than the bound's share; the chunks in alone, no less than bound_in_ns. */
    double to = 0, from = 0, both = 0;
    for (int t = POL_PEER; t < POL_NTIERS; t++) {
        const pol_link_t *l = &b->m.link[t];
        if (b->m.cap[t] >= b->m.chunk) {
            to += l->duplex_gbs < l->to_gpu_gbs ? l->duplex_gbs : l->to_gpu_gbs;
            from += l->duplex_gbs < l->from_gpu_gbs ? l->duplex_gbs : l->from_gpu_gbs;
            both += l->duplex_gbs < l->to_gpu_gbs + l->from_gpu_gbs
                        ? l->duplex_gbs : l->to_gpu_gbs + l->from_gpu_gbs;
        }
    }
    double in = (double)pb_bytes(&r, 0), back = (double)pb_bytes(&r, 1);
    double moved = in / to, most = moved;
    most = back / from > most ? back / from : most;
    most = (in + back) / both > most ? (in + back) / both : most;
    PB_CHECK(r.bound_ns <= (most > r.compute_ns ? most : r.compute_ns) * (1 + 1e-9),
             "seed %u: bound %.0f ns, expected at most the plan's own %.0f bytes in and %.0f "
             "back over the links (%.0f ns) or its compute (%.0f ns)", seed, r.bound_ns, in,
             back, most, r.compute_ns);
    PB_CHECK(r.bound_in_ns <= (moved > r.compute_ns ? moved : r.compute_ns) * (1 + 1e-9) &&
             r.bound_in_ns <= r.bound_ns,
             "seed %u: bound of the chunks in %.0f ns, expected at most the plan's own bytes in "
             "(%.0f ns), its compute (%.0f ns) and the bound (%.0f ns)", seed, r.bound_in_ns,
             moved, r.compute_ns, r.bound_ns);
    /* The same in chunks, whatever the links' rates: the plan copies in and back at least
     * the bound's chunks in an iteration. */
    PB_CHECK(in >= (double)r.bound_chunks[0] * (double)b->m.chunk &&
             back >= (double)r.bound_chunks[1] * (double)b->m.chunk,
             "seed %u: the plan copies %.0f chunks in and %.0f back, expected at least the "
             "bound's %llu and %llu", seed, in / (double)b->m.chunk, back / (double)b->m.chunk,
             (unsigned long long)r.bound_chunks[0], (unsigned long long)r.bound_chunks[1]);
    for (int t = 0; t < POL_NTIERS; t++)
        PB_CHECK(r.peak[t] <= b->m.cap[t], "seed %u: %s peak %llu > capacity %llu", seed,
                 pol_tier_name(t), (unsigned long long)r.peak[t],
                 (unsigned long long)b->m.cap[t]);
    pol_plan_free(p);
    return 0;
}

/* With the GPU holding everything, nothing comes from a lower tier: with room for all and
 * no slack, and, where the search may leave up to 4 chunks free as slack (a plan with slack
 * may evict, so that births need not wait for the room that deaths free), with room beyond
 * those. */
static void roomy(pb_t *b, uint64_t total, uint32_t seed)
{
    for (int searched = 0; searched < 2; searched++) {
        b->m.cap[POL_GPU] = (total + 1 + (searched ? 4 : 0)) * b->m.chunk;
        b->slack = searched ? POL_SLACK_SEARCH : POL_SLACK_NONE;
        pol_plan_t *p = NULL;
        int rc = pol_plan(pb_input(b), NULL, &p);
        PB_CHECK(rc == 0, "seed %u, roomy (slack %s): pol_plan: expected 0, got %d", seed,
                 searched ? "searched" : "none", rc);
        if (rc)
            continue;
        PB_CHECK(pb_bytes(&p->predicted, 0) == 0 && pb_bytes(&p->predicted, 1) == 0,
                 "seed %u, roomy (slack %s): expected no bytes moved, got %llu in, %llu out",
                 seed, searched ? "searched" : "none",
                 (unsigned long long)pb_bytes(&p->predicted, 0),
                 (unsigned long long)pb_bytes(&p->predicted, 1));
        pol_plan_free(p);
    }
    b->slack = POL_SLACK_SEARCH;
}

/* Seeds beyond the default run's that once failed: an operation in place whose host chunk was
 * demoted to NVMe before it (4305, 4306), a roomy GPU that the search's slack made evict
 * (4716, 17171), a bound above a plan whose POL_NEAR uses put an operation in place (15187,
 * 23156, 41167). */
static const uint32_t again[] = { 4305, 4306, 4716, 15187, 17171, 23156, 41167 };

int main(int argc, char **argv)
{
    uint32_t seeds = argc > 1 ? (uint32_t)atoi(argv[1]) : 300;
    uint32_t first = argc > 2 ? (uint32_t)atoi(argv[2]) : 1;
    uint32_t extra = argc > 1 ? 0 : (uint32_t)(sizeof(again) / sizeof(again[0]));
    int planned = 0, nospc = 0, nocycle = 0;
    for (uint32_t n = 0; n < seeds + extra; n++) {
        uint32_t seed = n < seeds ? first + n : again[n - seeds];
        pb_t b;
        pb_init(&b);
        rng_state = seed * 0x9e3779b97f4a7c15ull;
        uint64_t total = build(&b, 10 + (int)rnd(200));
        random_machine(&b, total);
        pol_knobs_t k = { rnd(2) ? 0 : 1 + rnd(50), 1 + rnd(8),
                          rnd(2) ? 0 : rnd(4) * b.m.chunk, rnd(3) ? 0 : 1 + rnd(3), rnd(2) };
        b.m.handle_share = rnd(3) == 0 ? 0.25 : 0;  /* (drawn last: again[]'s inputs stay) */
        if (rnd(2))
            for (size_t i = 0; i < b.nbufs; i++)
                b.bufs[i].slot = 1 + 6 * rnd((uint32_t)b.nbufs);  /* (some addresses shared) */
        b.m.birth_us_per_chunk = rnd(2) * 40.0;
        b.m.drop_us_per_chunk = rnd(2) * 15.0;
        for (size_t i = 0; rnd(2) && i < b.nops; i++)
            b.ops[i].away = rnd(3);
        int r1 = one(&b, NULL, seed), r2 = one(&b, &k, seed);
        int sure = surely_plannable(&b, total);
        PB_CHECK(r1 != 1 || !sure, "seed %u: pol_plan: -ENOSPC, but with host memory for "
                 "everything the GPU holds every operation's chunks with the pinned ones", seed);
        planned += !r1 + !r2;
        nospc += (r1 == 1) + (r2 == 1);
        nocycle += (r1 == 2) + (r2 == 2);
        if (!r1)
            roomy(&b, total, seed);
        pb_fini(&b);
        if (pb_failures > 20)
            break;
    }
    printf("%d plans verified, %d inputs without a plan (-ENOSPC), %d knobs without a cyclic "
           "plan (-EDOM), %d failures\n", planned, nospc, nocycle, pb_failures);
    PB_CHECK(planned > nospc, "expected most random inputs planned, got %d of %d", planned,
             planned + nospc);
    PB_CHECK(nocycle * 100 <= planned, "expected -EDOM for at most 1%% of the plans, got %d "
             "for %d", nocycle, planned);
    return pb_failures ? 1 : 0;
}
