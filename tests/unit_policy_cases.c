/* SPDX-License-Identifier: MIT */
/*
 * unit_policy_cases.c - the planner on small iterations whose best plans are known.
 *
 *   cycle:     one stream cycles through 6 one-chunk buffers on a 4-chunk GPU.  LRU misses
 *              every access (6 chunks in per iteration); Belady keeps 3 for good and brings
 *              in 3 per iteration (the optimum: 6 - 4 + 1); the plan moves at most that.
 *   dead:      a buffer overwritten whole before its next read is never written back, nor
 *              copied in for the overwrite.
 *   clean:     read-only buffers evicted are never written back (their kept copies are
 *              current); written ones are, each chunk that came in going out.
 *   born/dies: buffers born and freed inside the iteration are materialised on the GPU and
 *              never copied in or out.
 *   unlimited: with room for everything, the predicted iteration is the operations alone and
 *              nothing moves; two streams overlap.
 *   host:      the same with the host costing host_us_per_op per operation: a host slower
 *              than the GPU sets the iteration (operations x host time, its compute_ns), a
 *              faster one leaves the busier stream's time; the host's time for the
 *              operations it issues before a move delays that move (iteration above both
 *              the host's and the copies' time).
 *   no uses:   operations that reach no chunk (an iteration of NCCL calls or launches with
 *              no device pointers) plan to nothing, with buffers present or not.
 *   nospc:     an operation reaching more chunks than the GPU holds runs in place (the plan
 *              is made for the others; what it reaches on NVMe comes to the GPU first); pins
 *              that leave an operation too little room give -ENOSPC.
 *   in place, NVMe: an operation that runs in place reaching a buffer that starts on NVMe,
 *              with host memory full of a buffer placed there at the start: the plan demotes
 *              that buffer to NVMe to make host room, and the operation finds every chunk of
 *              its own on the GPU or in host memory (the walk checks it).
 *   errors:    bad inputs give -EINVAL with a message naming the field.
 *   bound:     the lower bound never exceeds what a plan needs: 3 chunks in on the cycle,
 *              over the host link, or with a peer tier whose link is 4 times the host's, all
 *              over that one.
 *   executor:  the cost model follows the shim's executor: with room_on_device the host
 *              hands GPU room over once the freed chunk's last use ended (the cycle of
 *              written buffers runs faster than when it waits for the freeing copy), but
 *              to a birth only once the freeing copy ended (the program may use it at once); a
 *              free that waits (free_waits) holds the host until the buffer's last use, so
 *              two streams no longer overlap, as a wait of the input (pol_wait_t) does
 *              for a buffer alive all along; a birth costs the host birth_us_per_chunk,
 *              but where a chunk died before at its address (pol_buf_t.slot: parked);
 *              a host synchronisation (pol_sync_t) of a stream holds the host until that
 *              stream's last operation ends, one of everything until every copy ends too.
 *   slack:     where the host waits for the copies that free room, a plan that leaves 2
 *              chunks of the GPU free predicts a shorter iteration, and the search takes
 *              slack; with room_on_device slack is refused.
 *   near:      a POL_NEAR reference (a chunk behind a kernel's pointer) left out of the plan
 *              (knobs.near = 0) costs the host mapback_us_per_chunk each iteration it finds
 *              the chunk away from the GPU; planned as a use (near = 1) the chunk is on the
 *              GPU for it (the plan verifies) and costs no mapping back; the search takes
 *              the second when mapping back costs more; POL_NEAR alone is refused.
 *   in place, mapping back: an operation that runs in place costs the host
 *              mapback_us_per_chunk for each of its chunks an eviction left away from the GPU
 *              since it last moved (one per iteration here).
 *   handles:   with m.handle_share, a move of n chunks costs the host (1 - s + s x n) of a
 *              chunk's mapping calls, not n of them; a share above 1, below 0 or NaN is
 *              refused.
 */
#include <math.h>

#include "unit_policy.h"

static const pol_knobs_t K1 = { 0, 1, 0, 0, 0 };

/* ops[i] reads buffer i % n (one chunk each), `rounds` times around. */
static void cycle_input(pb_t *b, uint32_t n, uint8_t access)
{
    for (uint32_t k = 0; k < n; k++)
        pb_buf(b, 1, -1, -1);
    for (uint32_t i = 0; i < n; i++) {
        pb_op(b, 0, 10000);
        pb_all(b, i, access);
    }
}

static void test_cycle(void)
{
    pb_t b;
    pb_init(&b);
    b.m.cap[POL_GPU] = 4 * MIB;
    cycle_input(&b, 6, POL_READ);
    pol_plan_t *p = pb_plan(&b, NULL);
    if (p) {
        uint64_t in = pb_bytes(&p->predicted, 0);
        PB_CHECK(in == 3 * MIB, "cycle: expected 3 chunks in per iteration (LRU: 6), got %.2f",
                 (double)in / MIB);
        PB_CHECK(pb_bytes(&p->predicted, 1) == 0, "cycle: read-only data written back: %llu",
                 (unsigned long long)pb_bytes(&p->predicted, 1));
        PB_CHECK(p->predicted.bound_ns > p->predicted.compute_ns,
                 "cycle: expected the link to bound the iteration, got bound %.0f compute %.0f",
                 p->predicted.bound_ns, p->predicted.compute_ns);
        /* The plan fills the GPU: claimed as a plan of one chunk of slack, it holds more than
         * the GPU less its slack, and the check says so. */
        char err[256] = "";
        uint32_t slack = p->knobs.slack_chunks;
        p->knobs.slack_chunks = slack + 1;
        PB_CHECK(pol_plan_verify(pb_input(&b), p, err, sizeof(err)) != 0,
                 "cycle: a plan filling the GPU passed as one with %u chunks of slack", slack + 1);
        p->knobs.slack_chunks = slack;
    }
    pol_plan_free(p);
    pb_fini(&b);
}

/* buffer 0 written whole by op 0, read by op 1; 4 more buffers in between fill the GPU. */
static void test_dead(void)
{
    pb_t b;
    pb_init(&b);
    b.m.cap[POL_GPU] = 3 * MIB;
    uint32_t x = pb_buf(&b, 1, -1, -1);
    for (int k = 0; k < 4; k++)
        pb_buf(&b, 1, -1, -1);
    pb_op(&b, 0, 1000);
    pb_all(&b, x, POL_READ);
    for (uint32_t k = 1; k <= 4; k++) {
        pb_op(&b, 0, 1000);
        pb_all(&b, k, POL_RW);
    }
    pb_op(&b, 0, 1000);
    pb_all(&b, x, POL_OVERWRITE);
    pol_plan_t *p = pb_plan(&b, &K1);
    for (size_t k = 0; p && k < p->nmoves; k++) {
        const pol_move_t *m = &p->moves[k];
        PB_CHECK(m->buf != x || !m->writeback, "dead: bufs[0] moved %s -> %s with a copy, "
                 "expected none (its data is dead between its read and its overwrite)",
                 pol_tier_name(m->from), pol_tier_name(m->to));
    }
    pol_plan_free(p);
    pb_fini(&b);
}

/* Bytes brought in and written back per iteration for the cycle with `access`. */
static void cycle_bytes(uint8_t access, uint64_t *in, uint64_t *out)
{
    pb_t b;
    pb_init(&b);
    b.m.cap[POL_GPU] = 4 * MIB;
    cycle_input(&b, 6, access);
    pol_plan_t *p = pb_plan(&b, &K1);
    *in = p ? pb_bytes(&p->predicted, 0) : 0;
    *out = p ? pb_bytes(&p->predicted, 1) : UINT64_MAX;
    pol_plan_free(p);
    pb_fini(&b);
}

static void test_clean(void)
{
    uint64_t ro_in, ro_out, rw_in, rw_out;
    cycle_bytes(POL_READ, &ro_in, &ro_out);
    cycle_bytes(POL_RW, &rw_in, &rw_out);
    PB_CHECK(ro_in > 0 && ro_out == 0, "clean: read-only chunks: expected some in and none "
             "written back, got %llu in, %llu out", (unsigned long long)ro_in,
             (unsigned long long)ro_out);
    PB_CHECK(rw_in > 0 && rw_out == rw_in, "clean: written chunks: expected each chunk brought "
             "in written back, got %llu in, %llu out", (unsigned long long)rw_in,
             (unsigned long long)rw_out);
}

/* Activations: born in a forward op, read by the backward op, freed. */
static void test_born_dies(void)
{
    pb_t b;
    pb_init(&b);
    b.m.cap[POL_GPU] = 4 * MIB;
    uint32_t w = pb_buf(&b, 2, -1, -1);
    uint32_t a0 = pb_buf(&b, 2, 0, 3), a1 = pb_buf(&b, 2, 1, 2);
    pb_op(&b, 0, 1000), pb_all(&b, w, POL_READ), pb_all(&b, a0, POL_OVERWRITE);
    pb_op(&b, 0, 1000), pb_all(&b, a0, POL_READ), pb_all(&b, a1, POL_OVERWRITE);
    pb_op(&b, 0, 1000), pb_all(&b, a1, POL_READ);
    pb_op(&b, 0, 1000), pb_all(&b, a0, POL_READ), pb_all(&b, w, POL_RW);
    pol_plan_t *p = pb_plan(&b, &K1);
    int born = 0;
    for (size_t k = 0; p && k < p->nmoves; k++) {
        const pol_move_t *m = &p->moves[k];
        if (m->buf != w)
            PB_CHECK(m->from == POL_NTIERS && !m->writeback, "born/dies: bufs[%u] moved %s -> "
                     "%s, expected only materialisations", m->buf, pol_tier_name(m->from),
                     pol_tier_name(m->to));
        born += m->from == POL_NTIERS ? (int)m->nchunks : 0;
    }
    PB_CHECK(!p || born == 4, "born/dies: expected 4 chunks materialised, got %d", born);
    pol_plan_free(p);
    pb_fini(&b);
}

static void test_unlimited(void)
{
    pb_t b;
    pb_init(&b);
    b.m.cap[POL_GPU] = 64 * MIB;
    b.m.map_us_per_call = 20;
    for (int k = 0; k < 8; k++)
        pb_buf(&b, 2, -1, -1);
    for (uint32_t i = 0; i < 40; i++) {
        pb_op(&b, i % 2, 1000 + 100 * i);
        pb_all(&b, i % 8, POL_RW);
    }
    pol_plan_t *p = pb_plan(&b, NULL);
    if (p) {
        const pol_result_t *r = &p->predicted;
        double s0 = 0, s1 = 0;
        for (uint32_t i = 0; i < 40; i++)
            *(i % 2 ? &s1 : &s0) += 1000 + 100 * i;
        PB_CHECK(r->compute_ns == (s0 > s1 ? s0 : s1), "unlimited: compute %.0f, expected the "
                 "busier stream's %.0f", r->compute_ns, s0 > s1 ? s0 : s1);
        PB_CHECK(r->iter_ns == r->compute_ns && r->bound_ns == r->compute_ns,
                 "unlimited: iter %.0f, bound %.0f, expected both = compute %.0f", r->iter_ns,
                 r->bound_ns, r->compute_ns);
        PB_CHECK(p->nmoves == 0, "unlimited: expected no moves, got %zu", p->nmoves);
    }
    pol_plan_free(p);
    pb_fini(&b);
}

static void test_nospc(void)
{
    pb_t b;
    pb_init(&b);
    b.m.cap[POL_GPU] = 4 * MIB;
    uint32_t x = pb_buf(&b, 3, -1, -1), y = pb_buf(&b, 2, -1, -1);
    pb_op(&b, 0, 1000), pb_all(&b, x, POL_READ), pb_all(&b, y, POL_READ);
    pb_op(&b, 0, 1000), pb_all(&b, y, POL_READ | POL_WRITE);
    pb_op(&b, 0, 1000), pb_all(&b, x, POL_READ | POL_WRITE);
    /* The first operation reaches 5 chunks on a 4-chunk GPU: it runs in place, and the plan
     * is made for the others (each chunk of theirs on the GPU when they run). */
    pol_plan_t *p = pb_plan(&b, NULL);
    pol_plan_free(p);
    /* With an NVMe tier and host room for 2 chunks: x and y may go there, but are on the GPU
     * or in host memory when the first operation reaches them in place (the walk of pb_plan
     * fails a plan that leaves one on NVMe). */
    for (uint32_t i = 0; i < b.nbufs; i++)
        b.bufs[i].nvme_ok = 1;
    b.m.cap[POL_HOST] = 2 * MIB;
    b.m.cap[POL_NVME] = 64 * MIB;
    p = pb_plan(&b, NULL);
    pol_plan_free(p);
    b.m.cap[POL_HOST] = 1024 * MIB;
    b.m.cap[POL_NVME] = 0;
    /* A GPU that holds the operation, and a pinned chunk besides that it does not. */
    b.m.cap[POL_GPU] = 5 * MIB;
    p = pb_plan(&b, NULL);
    pol_plan_free(p);
    p = NULL;
    uint32_t z = pb_buf(&b, 1, -1, -1);
    b.bufs[z].pinned = 1;
    int rc = pol_plan(pb_input(&b), NULL, &p);
    PB_CHECK(rc == -ENOSPC, "nospc: a pinned chunk besides: expected -ENOSPC, got %d", rc);
    pol_plan_free(p);
    pb_fini(&b);
}

static void test_in_place_nvme(void)
{
    pb_t b;
    pb_init(&b);
    b.m.cap[POL_GPU] = 2 * MIB;
    b.m.cap[POL_HOST] = 2 * MIB;
    b.m.cap[POL_NVME] = 16 * MIB;
    /* w fills host memory at the start; x (3 chunks, more than the GPU holds) starts on NVMe. */
    uint32_t w = pb_buf(&b, 2, -1, -1), x = pb_buf(&b, 3, -1, -1);
    b.bufs[w].nvme_ok = b.bufs[x].nvme_ok = 1;
    pb_op(&b, 0, 1000), pb_all(&b, x, POL_READ | POL_WRITE);
    pb_op(&b, 0, 1000), pb_all(&b, w, POL_READ);
    pol_plan_t *p = pb_plan(&b, NULL);
    pol_plan_free(p);
    pb_fini(&b);
}

/* An operation in place (x, y and the new t: more than the GPU holds) needs room for t where
 * the chunk Belady would evict has nowhere to go (host memory full, z may not go to NVMe):
 * one of the operation's own chunks goes to its kept copy in host memory instead. */
static void test_in_place_full(void)
{
    pb_t b;
    pb_init(&b);
    b.m.cap[POL_GPU] = 2 * MIB;
    b.m.cap[POL_HOST] = 2 * MIB;
    b.m.cap[POL_NVME] = 3 * MIB;
    uint32_t x = pb_buf(&b, 1, -1, -1), y = pb_buf(&b, 1, -1, -1), z = pb_buf(&b, 1, -1, -1);
    uint32_t t = pb_buf(&b, 1, 0, 0);
    b.bufs[x].nvme_ok = b.bufs[y].nvme_ok = 1;
    pb_op(&b, 0, 1000), pb_all(&b, t, POL_WRITE), pb_all(&b, x, POL_RW), pb_all(&b, y, POL_RW);
    pb_op(&b, 0, 1000), pb_all(&b, z, POL_READ), pb_all(&b, y, POL_READ);
    pol_plan_t *p = pb_plan(&b, &K1);   /* (the search finds a plan with other knobs) */
    pol_plan_free(p);
    pb_fini(&b);
}

/* Kept copies against an NVMe tier the buffers may not use (none may go to NVMe): fetching a
 * buffer from full host memory must not keep its host copy on the strength of NVMe room, or
 * the GPU chunk evicted next has nowhere to go and no plan is found, where one exists. */
static void test_keep_host_only(void)
{
    pb_t b;
    pb_init(&b);
    b.m.cap[POL_GPU] = 3 * MIB;
    b.m.cap[POL_HOST] = 4 * MIB;
    b.m.cap[POL_NVME] = 8 * MIB;
    uint32_t a = pb_buf(&b, 2, -1, -1), a2 = pb_buf(&b, 2, -1, -1), x = pb_buf(&b, 2, -1, -1);
    pb_op(&b, 0, 1000), pb_all(&b, a, POL_READ);
    pb_op(&b, 0, 1000), pb_all(&b, a2, POL_READ);
    pb_op(&b, 0, 1000), pb_all(&b, x, POL_RW);
    pol_plan_t *p = pb_plan(&b, NULL);
    pol_plan_free(p);
    pb_fini(&b);
}

/* pol_input_check on a copy of a good input broken by `breakit`: -EINVAL naming `word`. */
static void expect_bad(void (*breakit)(pb_t *), const char *word)
{
    pb_t b;
    pb_init(&b);
    pb_buf(&b, 2, -1, -1);
    pb_op(&b, 0, 1000);
    pb_all(&b, 0, POL_READ);
    breakit(&b);
    char err[256] = "";
    pol_plan_t *p = NULL;
    int rc = pol_input_check(pb_input(&b), err, sizeof(err));
    PB_CHECK(rc == -EINVAL && strstr(err, word), "errors: expected -EINVAL naming %s, got %d "
             "(%s)", word, rc, err);
    rc = pol_plan(pb_input(&b), NULL, &p);
    PB_CHECK(rc == -EINVAL && !p, "errors: pol_plan: expected -EINVAL for %s, got %d", word, rc);
    pb_fini(&b);
}

static void bad_stream(pb_t *b) { b->ops[0].stream = 5; }
static void bad_access(pb_t *b) { b->refs[0].access = 4; }
static void bad_chunks(pb_t *b) { b->refs[0].nchunks = 3; }
static void bad_buf(pb_t *b) { b->refs[0].buf = 7; }
static void bad_life(pb_t *b) { b->bufs[0].dies = 0; }
static void bad_chunk(pb_t *b) { b->m.chunk = 0; }
static void bad_gpu(pb_t *b) { b->m.cap[POL_GPU] = 0; }
static void bad_link(pb_t *b) { b->m.link[POL_HOST].duplex_gbs = 0; }
static void bad_nops(pb_t *b) { b->nops = 0; }
static void bad_born(pb_t *b) { b->bufs[0].born = 3; }
static void bad_host(pb_t *b) { b->m.host_us_per_op = -1; }
static const pol_wait_t beyond[] = { { 0, 0 }, { 99, 0 } }, backwards[] = { { 1, 0 }, { 0, 0 } };
static void bad_wait_op(pb_t *b) { b->waits = beyond, b->nwaits = 2; }
static void bad_wait_order(pb_t *b) { pb_op(b, 0, 1000), b->waits = backwards, b->nwaits = 2; }
static const pol_sync_t no_stream[] = { { 0, 3 } };
static void bad_sync(pb_t *b) { b->syncs = no_stream, b->nsyncs = 1; }
/* A reference that no operation names is checked as well (the index reads every one). */
static void bad_unnamed(pb_t *b)
{
    b->refs[b->nrefs++] = (pol_ref_t){ 0x7fffffff, 0, 1, POL_NEAR | POL_READ };
}
/* Chunk counts that overflow 64 bits when summed, or rounded up the usual way. */
static void bad_huge(pb_t *b)
{
    b->m.chunk = 1;
    b->m.cap[POL_GPU] = 1;
    b->bufs[0].bytes = 1ull << 63;
    pb_buf(b, 0, -1, -1);
    b->bufs[1].bytes = 1ull << 63;
}
static void bad_huge_one(pb_t *b)
{
    b->m.chunk = 2;
    b->bufs[0].bytes = UINT64_MAX;
}

/* test_unlimited's iteration with the host costing host_us per operation: iter and compute. */
static void host_iter(double host_us, double *iter, double *compute)
{
    pb_t b;
    pb_init(&b);
    b.m.cap[POL_GPU] = 64 * MIB;
    b.m.host_us_per_op = host_us;
    for (int k = 0; k < 8; k++)
        pb_buf(&b, 2, -1, -1);
    for (uint32_t i = 0; i < 40; i++) {
        pb_op(&b, i % 2, 1000 + 100 * i);
        pb_all(&b, i % 8, POL_RW);
    }
    pol_plan_t *p = pb_plan(&b, NULL);
    *iter = p ? p->predicted.iter_ns : -1;
    *compute = p ? p->predicted.compute_ns : -1;
    pol_plan_free(p);
    pb_fini(&b);
}

/* Two one-chunk buffers taking turns on a one-chunk GPU, 10 operations that reach nothing
 * between their uses, prefetching one operation ahead: the host issues 9 of those before the
 * moves that make the next use's room, so its time per operation delays the moves.  The
 * predicted iteration and compute_ns. */
static double host_moves_iter(double host_us, double *compute)
{
    static const pol_knobs_t K = { 1, 1, 0, 0, 0 };
    pb_t b;
    pb_init(&b);
    b.m.cap[POL_GPU] = 1 * MIB;
    b.m.host_us_per_op = host_us;
    pb_buf(&b, 1, -1, -1);
    pb_buf(&b, 1, -1, -1);
    for (uint32_t i = 0; i < 2; i++) {
        pb_op(&b, 0, 1000);
        pb_all(&b, i, POL_RW);
        for (int k = 0; k < 10; k++)
            pb_op(&b, 0, 1000);
    }
    pol_plan_t *p = pb_plan(&b, &K);
    double iter = p ? p->predicted.iter_ns : -1;
    *compute = p ? p->predicted.compute_ns : -1;
    pol_plan_free(p);
    pb_fini(&b);
    return iter;
}

static void test_host(void)
{
    /* 9 operations at 20 us take longer than a copy (105 us): the host delays the moves */
    double c0, c20, a = host_moves_iter(0, &c0), h = host_moves_iter(20.0, &c20);
    PB_CHECK(c20 == 22 * 20000.0 && a > 4 * 100000 && h > c20 && h > a,
             "host: moves: iter %.0f ns (compute %.0f) with 20 us per operation, %.0f ns with "
             "none: expected compute 22 x 20000 ns, 4 copies of 1 MiB at 10 GB/s, and more "
             "than both", h, c20, a);

    double iter, compute, busy = 0;
    for (uint32_t i = 1; i < 40; i += 2)
        busy += 1000 + 100 * i;
    host_iter(5.0, &iter, &compute);    /* every operation takes less than 5 us */
    PB_CHECK(compute == 40 * 5000.0 && iter == compute, "host: 5 us per operation: iter %.0f, "
             "compute %.0f, expected both 40 x 5000 ns", iter, compute);
    host_iter(0.5, &iter, &compute);
    PB_CHECK(compute == busy && iter == busy, "host: 0.5 us per operation: iter %.0f, compute "
             "%.0f, expected both the busier stream's %.0f ns", iter, compute, busy);
}

static void test_errors(void)
{
    expect_bad(bad_stream, "stream");
    expect_bad(bad_access, "access");
    expect_bad(bad_chunks, "chunks");
    expect_bad(bad_buf, "buf");
    expect_bad(bad_life, "dies");
    expect_bad(bad_chunk, "chunk");
    expect_bad(bad_gpu, "cap[gpu]");
    expect_bad(bad_link, "duplex_gbs");
    expect_bad(bad_nops, "nops");
    expect_bad(bad_born, "born");
    expect_bad(bad_host, "host_us_per_op");
    expect_bad(bad_wait_op, "waits[1]: operation 99");
    expect_bad(bad_wait_order, "operation order");
    expect_bad(bad_sync, "syncs[0]: operation 0 of 1, stream 3");
    expect_bad(bad_unnamed, "refs[1].buf");
    expect_bad(bad_huge, "chunks or more");
    expect_bad(bad_huge_one, "chunks or more");
}


static void test_no_uses(void)
{
    for (int bufs = 0; bufs < 2; bufs++) {
        pb_t b;
        pb_init(&b);
        b.m.cap[POL_GPU] = 4 * MIB;
        if (bufs)
            pb_buf(&b, 8, -1, -1);
        for (int i = 0; i < 3; i++)
            pb_op(&b, 0, 1000);
        pol_plan_t *p = pb_plan(&b, NULL);
        if (p)
            PB_CHECK(p->nmoves == 0 && pb_bytes(&p->predicted, 0) == 0,
                     "no uses (%d buffers): expected no moves, got %zu", bufs, p->nmoves);
        pol_plan_free(p);
        pb_fini(&b);
    }
}

/* The cycle: the best plan brings 3 chunks in per iteration (see test_cycle), at the host
 * link's 10 GB/s, or, with a peer tier of room for them, all over its 40 GB/s link at best.
 * The bound counts 2 (at every point all 6 chunks hold data read later, and 4 fit), over both
 * links together when there is a peer. */
static void test_bound(void)
{
    for (int peer = 0; peer < 2; peer++) {
        pb_t b;
        pb_init(&b);
        b.m.cap[POL_GPU] = 4 * MIB;
        b.m.cap[POL_PEER] = peer ? 8 * MIB : 0;
        cycle_input(&b, 6, POL_READ);
        for (size_t i = 0; i < b.nops; i++)
            b.ops[i].dur_ns = 1000;         /* (the links, not the operations, bound it) */
        double least = 3.0 * MIB / (peer ? 40.0 : 10.0);     /* GB/s: bytes per ns */
        double counted = 2.0 * MIB / (peer ? 50.0 : 10.0);
        pol_plan_t *p = pb_plan(&b, NULL);
        if (p) {
            const pol_result_t *r = &p->predicted;
            PB_CHECK(r->bound_ns <= least && r->bound_ns <= r->iter_ns,
                     "bound (peer %d): %.0f ns, expected at most the least link time of the 3 "
                     "chunks the best plan brings in, %.0f ns, and this plan's %.0f ns", peer,
                     r->bound_ns, least, r->iter_ns);
            PB_CHECK(r->bound_ns > counted * 0.999999 && r->bound_ns < counted * 1.000001,
                     "bound (peer %d): %.0f ns, expected its 2 chunks at %d GB/s, %.0f ns",
                     peer, r->bound_ns, peer ? 50 : 10, counted);
        }
        pol_plan_free(p);
        pb_fini(&b);
    }
}

/* Two buffers used in turn, A B A B, with room for one chunk: every operation brings its
 * chunk in, 4 per iteration, whatever the plan.  The crossing of the capacity counts 1 (two
 * chunks hold data, one fits); Belady's MIN over repeated iterations counts all 4.  Read, the
 * chunks go back without a copy (kept copies); written (POL_RW, a launch's), each goes back
 * with one before the other comes in, 4 more over the link's 16 GB/s shared by both ways. */
static void test_bound_min(void)
{
    for (int written = 0; written < 2; written++) {
        pb_t b;
        pb_init(&b);
        b.m.cap[POL_GPU] = 1 * MIB;
        pb_buf(&b, 1, -1, -1);
        pb_buf(&b, 1, -1, -1);
        for (uint32_t i = 0; i < 4; i++) {
            pb_op(&b, 0, 1000);
            pb_all(&b, i % 2, written ? POL_RW : POL_READ);
        }
        double in = 4.0 * MIB / 10.0;                   /* 10 GB/s: bytes per ns */
        double counted = written ? 8.0 * MIB / 16.0 : in;
        pol_plan_t *p = pb_plan(&b, NULL);
        if (p) {
            const pol_result_t *r = &p->predicted;
            PB_CHECK(r->bound_ns > counted * 0.999999 && r->bound_ns < counted * 1.000001,
                     "bound (A B A B, %s): %.0f ns, expected %d chunks over the link, %.0f ns",
                     written ? "written" : "read", r->bound_ns, written ? 8 : 4, counted);
            PB_CHECK(r->bound_in_ns > in * 0.999999 && r->bound_in_ns < in * 1.000001,
                     "bound of the chunks in (A B A B): %.0f ns, expected 4 at 10 GB/s, %.0f ns",
                     r->bound_in_ns, in);
            PB_CHECK(r->iter_ns >= r->bound_ns, "A B A B: predicted %.0f ns below the bound %.0f",
                     r->iter_ns, r->bound_ns);
            PB_CHECK(pb_bytes(r, 0) == 4 * MIB && pb_bytes(r, 1) == (written ? 4 : 0) * MIB,
                     "A B A B (%s): expected 4 chunks in and %d back, got %.2f and %.2f",
                     written ? "written" : "read", written ? 4 : 0,
                     (double)pb_bytes(r, 0) / MIB, (double)pb_bytes(r, 1) / MIB);
        }
        pol_plan_free(p);
        pb_fini(&b);
    }
}

/* An operation in place that overwrites a new buffer, read by the next operation: the plan
 * may give the buffer GPU memory at its birth, so the operation in place writes it there and
 * the read needs no copy.  The bound must not count one (it did: a plan beat it). */
static void test_bound_in_place(void)
{
    pb_t b;
    pb_init(&b);
    b.m.cap[POL_GPU] = 2 * MIB;
    uint32_t big = pb_buf(&b, 3, -1, -1), x = pb_buf(&b, 1, 0, 1), y = pb_buf(&b, 2, -1, -1);
    pb_op(&b, 0, 1000);
    pb_all(&b, big, POL_READ);
    pb_all(&b, x, POL_OVERWRITE);       /* (4 chunks: more than the GPU holds, in place) */
    pb_op(&b, 0, 1000);
    pb_all(&b, x, POL_READ);
    pb_op(&b, 0, 1000);
    pb_all(&b, y, POL_READ);
    pol_plan_t *p = pb_plan(&b, NULL);
    if (p)
        PB_CHECK(p->predicted.iter_ns >= p->predicted.bound_ns &&
                 p->predicted.bound_in_ns <= p->predicted.bound_ns,
                 "in place, then read: predicted %.0f ns below the bound %.0f (in alone %.0f)",
                 p->predicted.iter_ns, p->predicted.bound_ns, p->predicted.bound_in_ns);
    pol_plan_free(p);
    pb_fini(&b);
}

/* The predicted iteration of plan p replayed on b's input (ns), or -1. */
static double replayed(pb_t *b, const pol_plan_t *p)
{
    pol_result_t r;
    int rc = pol_replay(pb_input(b), p, &r);
    PB_CHECK(rc == 0, "pol_replay: expected 0, got %d", rc);
    return rc ? -1 : r.iter_ns;
}

static void test_executor(void)
{
    /* Six written buffers cycled through 4 chunks of GPU, mapping calls of 50 us a chunk. */
    pb_t b;
    pb_init(&b);
    b.m.cap[POL_GPU] = 4 * MIB;
    b.m.map_us_per_chunk = 50;
    cycle_input(&b, 6, POL_RW);
    pol_plan_t *p = pb_plan(&b, &K1);
    double wait = p ? replayed(&b, p) : -1;
    b.m.room_on_device = 1;
    double handed = p ? replayed(&b, p) : -1;
    PB_CHECK(p && handed > 0 && handed < wait - 10e3, "room on the device: expected an "
             "iteration at least 10 us shorter than %.0f ns, got %.0f ns", wait, handed);
    pol_plan_free(p);
    pb_fini(&b);

    /* A host that takes 200 us an operation and one chunk of GPU: a written buffer goes back
     * for a birth and comes in again after it.  The program may use a new allocation's memory
     * at once, so even with room_on_device the host waits for the copy that frees its room
     * (about 105 us): the same iteration either way. */
    pb_init(&b);
    b.m.cap[POL_GPU] = 1 * MIB;
    b.m.host_us_per_op = 200;
    uint32_t x = pb_buf(&b, 1, -1, -1), y = pb_buf(&b, 1, 1, 1);
    pb_op(&b, 0, 10000), pb_all(&b, x, POL_RW);
    pb_op(&b, 0, 10000), pb_all(&b, y, POL_OVERWRITE);
    pb_op(&b, 0, 10000);
    p = pb_plan(&b, &K1);
    double host_waits = p ? replayed(&b, p) : -1;
    b.m.room_on_device = 1;
    double on_device = p ? replayed(&b, p) : -1;
    PB_CHECK(p && host_waits > 700e3 && on_device > host_waits - 1e3 &&
             on_device < host_waits + 1e3, "a birth on room a copy frees: expected the host to "
             "wait for the copy either way (over 700 us), got %.0f and %.0f ns", host_waits,
             on_device);
    pol_plan_free(p);
    pb_fini(&b);

    /* Two buffers born and freed each around a 1 ms kernel, one on each stream. */
    pb_init(&b);
    uint32_t a0 = pb_buf(&b, 1, 0, 0), a1 = pb_buf(&b, 1, 1, 1);
    pb_op(&b, 0, 1000000), pb_all(&b, a0, POL_OVERWRITE);
    pb_op(&b, 1, 1000000), pb_all(&b, a1, POL_OVERWRITE);
    p = pb_plan(&b, &K1);
    double async = p ? replayed(&b, p) : -1;
    b.bufs[a0].free_waits = b.bufs[a1].free_waits = 1;
    double waits = p ? replayed(&b, p) : -1;
    PB_CHECK(p && async > 0.999e6 && async < 1.001e6,
             "frees without a wait: expected 1 ms (the streams overlap), got %.0f ns", async);
    PB_CHECK(p && waits > 1.999e6 && waits < 2.001e6,
             "frees that wait: expected 2 ms (each kernel after the other's free), got %.0f ns",
             waits);
    b.bufs[a0].free_waits = b.bufs[a1].free_waits = 0;
    b.m.birth_us_per_chunk = 1500;
    double born = p ? replayed(&b, p) : -1;
    PB_CHECK(p && born > 2.999e6 && born < 3.001e6, "births of 1.5 ms on the host: expected "
             "3 ms (the host's), got %.0f ns", born);
    /* Where each is born again where it died (parked), births cost nothing from the second
     * iteration on; both at one address, each is born on the other's memory once that one's
     * kernel is done. */
    b.bufs[a0].slot = 1, b.bufs[a1].slot = 2;
    double apart = p ? replayed(&b, p) : -1;
    b.bufs[a1].slot = 1;
    double shared = p ? replayed(&b, p) : -1;
    PB_CHECK(p && apart > 0.999e6 && apart < 1.001e6 && shared > 1.999e6 && shared < 2.001e6,
             "births on parked memory: expected 1 ms (at their own addresses) and 2 ms (at "
             "one), got %.0f and %.0f ns", apart, shared);
    b.bufs[a0].slot = b.bufs[a1].slot = 0;
    pol_plan_free(p);
    pb_fini(&b);

    /* The same with buffers alive all along: waits of the host after each kernel for its
     * buffer (frees of small allocations sharing their chunks) put each after the other. */
    static const pol_wait_t after[] = { { 0, 0 }, { 1, 1 } };
    pb_init(&b);
    a0 = pb_buf(&b, 1, -1, -1), a1 = pb_buf(&b, 1, -1, -1);
    pb_op(&b, 0, 1000000), pb_all(&b, a0, POL_RW);
    pb_op(&b, 1, 1000000), pb_all(&b, a1, POL_RW);
    p = pb_plan(&b, &K1);
    async = p ? replayed(&b, p) : -1;
    b.waits = after, b.nwaits = 2;
    waits = p ? replayed(&b, p) : -1;
    PB_CHECK(p && async > 0.999e6 && async < 1.001e6 && waits > 1.999e6 && waits < 2.001e6,
             "waits of the host: expected 1 ms without (the streams overlap), 2 ms with, got "
             "%.0f and %.0f ns", async, waits);
    b.nwaits = 0;

    /* Host synchronisations after each kernel, of its own stream or of everything: each
     * kernel is issued after the other ended (2 ms); after the first only, of the other
     * stream, whose kernel of the iteration before ended with the first's previous one:
     * nothing changes (1 ms). */
    static const pol_sync_t own[] = { { 0, 0 }, { 1, 1 } }, other[] = { { 0, 1 } },
                            all[] = { { 0, POL_SYNC_ALL }, { 1, POL_SYNC_ALL } };
    const pol_sync_t *syncs[] = { own, other, all };
    const size_t nsyncs[] = { 2, 1, 2 };
    const double want[] = { 2e6, 1e6, 2e6 };
    for (int k = 0; k < 3; k++) {
        b.syncs = syncs[k], b.nsyncs = nsyncs[k];
        double t = p ? replayed(&b, p) : -1;
        PB_CHECK(p && t > want[k] - 1e3 && t < want[k] + 1e3, "synchronisation %d: expected "
                 "%.0f ns, got %.0f ns", k, want[k], t);
    }
    pol_plan_free(p);
    pb_fini(&b);

    /* Five written buffers cycled through 4 chunks, the host synchronising after one of the
     * operations: of everything, it waits for the moves' copies still running too, so that the
     * iteration is never shorter than with the stream's synchronisation there, and longer
     * after some. */
    pb_init(&b);
    b.m.cap[POL_GPU] = 4 * MIB;
    cycle_input(&b, 5, POL_RW);
    p = pb_plan(&b, &K1);
    int longer = 0;
    for (uint32_t op = 0; p && op < 5; op++) {
        pol_sync_t own_op[] = { { op, 0 } }, all_op[] = { { op, POL_SYNC_ALL } };
        b.syncs = own_op, b.nsyncs = 1;
        double stream_sync = replayed(&b, p);
        b.syncs = all_op;
        double ctx_sync = replayed(&b, p);
        PB_CHECK(stream_sync > 0 && ctx_sync >= stream_sync, "the cycle synchronised after "
                 "operation %u: expected everything (%.0f ns) to take no less than the stream "
                 "(%.0f ns)", op, ctx_sync, stream_sync);
        longer += ctx_sync > stream_sync;
    }
    PB_CHECK(p && longer > 0, "the cycle: synchronising everything after an operation never "
             "waited for a move's copy");
    pol_plan_free(p);
    pb_fini(&b);
}

/* Twelve written buffers cycled through 8 chunks of GPU, 100 us kernels, mapping calls of
 * 50 us a chunk, the host waiting for each copy that frees the room a move in takes: slack
 * (room the plan leaves free) lets a move in take room freed earlier.  The predicted
 * iterations with slack 0 and 2 (the same other knobs); *searched: the search's slack. */
static void slack_iters(double *none, double *two, uint32_t *searched)
{
    pb_t b;
    pb_init(&b);
    b.m.cap[POL_GPU] = 8 * MIB;
    b.m.map_us_per_chunk = 50;
    cycle_input(&b, 12, POL_RW);
    for (uint32_t i = 0; i < 12; i++)
        b.ops[i].dur_ns = 100000;
    pol_knobs_t k = { .lookahead = 0, .extent_chunks = 1 };
    for (uint32_t s = 0; s <= 2; s += 2) {
        k.slack_chunks = s;
        pol_plan_t *p = pb_plan(&b, &k);
        pol_result_t r;
        PB_CHECK(p && pol_replay(pb_input(&b), p, &r) == 0, "slack %u: expected a plan", s);
        PB_CHECK(!p || r.peak[POL_GPU] <= (8 - s) * MIB, "slack %u: expected at most %u chunks "
                 "on the GPU, got %.2f", s, 8 - s, p ? (double)r.peak[POL_GPU] / MIB : 0.0);
        *(s ? two : none) = p ? p->predicted.iter_ns : -1;
        pol_plan_free(p);
    }
    pol_plan_t *p = pb_plan(&b, NULL);
    *searched = p ? p->knobs.slack_chunks : 0;
    pol_plan_free(p);
    /* The caller's slack: none, or exactly 3 chunks in every plan the search makes. */
    const uint32_t fixed[] = { POL_SLACK_NONE, 3 };
    for (int f = 0; f < 2; f++) {
        b.slack = fixed[f];
        p = pb_plan(&b, NULL);
        uint32_t want = f ? 3 : 0;
        pol_result_t r;
        PB_CHECK(p && p->knobs.slack_chunks == want, "slack %u fixed: expected knobs with %u, "
                 "got %d", fixed[f], want, p ? (int)p->knobs.slack_chunks : -1);
        PB_CHECK(p && pol_replay(pb_input(&b), p, &r) == 0 && r.peak[POL_GPU] <= (8 - want) * MIB,
                 "slack %u fixed: expected at most %u chunks on the GPU", fixed[f], 8 - want);
        pol_plan_free(p);
    }
    char err[256] = "";
    pol_plan_t *q = NULL;
    b.slack = 8;                /* (the whole GPU) */
    int rc = pol_input_check(pb_input(&b), err, sizeof(err));
    PB_CHECK(rc == -EINVAL && strstr(err, "slack"), "slack of the whole GPU: expected -EINVAL "
             "naming the slack, got %d (%s)", rc, err);
    b.m.room_on_device = 1;     /* (no slack then: the host never waits for those copies) */
    b.slack = 2;
    rc = pol_input_check(pb_input(&b), err, sizeof(err));
    PB_CHECK(rc == -EINVAL && strstr(err, "room_on_device"), "fixed slack with room_on_device: "
             "expected -EINVAL naming it, got %d (%s)", rc, err);
    b.slack = POL_SLACK_SEARCH;
    k.slack_chunks = 2;
    rc = pol_plan(pb_input(&b), &k, &q);
    PB_CHECK(rc == -ENOSPC, "slack with room_on_device: expected -ENOSPC, got %d", rc);
    b.m.room_on_device = 0;
    uint32_t pair = pb_buf(&b, 2, -1, -1);
    pb_op(&b, 0, 100000), pb_all(&b, pair, POL_RW);
    b.slack = 7;                /* (an operation reaches 2 chunks: 1 left) */
    rc = pol_plan(pb_input(&b), NULL, &q);
    PB_CHECK(rc == -ENOSPC, "slack of 7 chunks of 8, an operation of 2: expected -ENOSPC, "
             "got %d", rc);
    pol_plan_free(q);
    pb_fini(&b);
}

static void test_slack(void)
{
    double none, two;
    uint32_t searched;
    slack_iters(&none, &two, &searched);
    PB_CHECK(two > 0 && two < none, "slack of 2 chunks: expected an iteration shorter than "
             "%.0f ns, got %.0f ns", none, two);
    PB_CHECK(searched > 0, "the search: expected slack, got none");
    printf("slack: %.0f ns with none, %.0f with 2, the search took %u\n", none, two, searched);
}

/* A 2-chunk segment S whose chunk 0 op 0 reaches behind its pointer into chunk 1 (POL_NEAR)
 * and op 3 uses; four 1-chunk buffers between, on a 2-chunk GPU: chunk 0 is away from the GPU
 * at op 0 of every iteration unless the plan brings it in for op 0. */
static void near_input(pb_t *b, double mapback_us)
{
    pb_init(b);
    b->m.cap[POL_GPU] = 2 * MIB;
    b->m.mapback_us_per_chunk = mapback_us;
    uint32_t s = pb_buf(b, 2, -1, -1);
    for (uint32_t k = 0; k < 4; k++)
        pb_buf(b, 1, -1, -1);
    pb_op(b, 0, 10000), pb_ref(b, s, 1, 1, POL_RW), pb_ref(b, s, 0, 1, POL_RW | POL_NEAR);
    pb_op(b, 0, 10000), pb_all(b, 1, POL_RW);
    pb_op(b, 0, 10000), pb_all(b, 2, POL_RW);
    pb_op(b, 0, 10000), pb_ref(b, s, 0, 1, POL_RW);
    pb_op(b, 0, 10000), pb_all(b, 3, POL_RW);
    pb_op(b, 0, 10000), pb_all(b, 4, POL_RW);
}

/* The host's mapping time (ns) that a plan with knobs.near = near predicts; the plan verifies
 * (with near = 1, chunk 0 is on the GPU for op 0). */
static double near_map_ns(double mapback_us, uint32_t near)
{
    pb_t b;
    near_input(&b, mapback_us);
    pol_knobs_t k = { .lookahead = 0, .extent_chunks = 1, .near = near };
    pol_plan_t *p = pb_plan(&b, &k);
    char err[256] = "";
    PB_CHECK(p && pol_plan_verify(pb_input(&b), p, err, sizeof(err)) == 0,
             "near %u: expected a plan that verifies: %s", near, err);
    double ns = p ? p->predicted.map_ns : -1;
    pol_plan_free(p);
    pb_fini(&b);
    return ns;
}

static void test_near(void)
{
    double out0 = near_map_ns(0, 0), out1 = near_map_ns(1000, 0);
    PB_CHECK(out1 - out0 > 999e3 && out1 - out0 < 1001e3, "near 0: expected 1000 us of mapping "
             "back per iteration, got %.0f ns", out1 - out0);
    double use0 = near_map_ns(0, 1), use1 = near_map_ns(1000, 1);
    PB_CHECK(use0 == use1, "near 1: expected no mapping back, got %.0f ns against %.0f",
             use1, use0);
    pb_t b;
    near_input(&b, 10000);
    pol_plan_t *p = pb_plan(&b, NULL);
    PB_CHECK(p && p->knobs.near == 1, "mapping back 10 ms: expected the search to bring the "
             "chunk in (near 1), got %d", p ? (int)p->knobs.near : -1);
    pol_plan_free(p);
    char err[256] = "";
    b.refs[1].access = POL_NEAR;
    int rc = pol_input_check(pb_input(&b), err, sizeof(err));
    PB_CHECK(rc == -EINVAL && strstr(err, "POL_NEAR"), "POL_NEAR alone: expected -EINVAL "
             "naming it, got %d (%s)", rc, err);
    pb_fini(&b);
    printf("near: mapping back %.0f us an iteration left out, none brought in\n",
           (out1 - out0) / 1e3);
}

/* The host's mapping time (ns) predicted for an operation that runs in place (3 chunks of
 * big on a 2-chunk GPU) reaching big's chunk 0, which the next operation brings in and the two
 * after it send away again: with mapback_us, the host maps it back for the first every
 * iteration. */
static double in_place_map_ns(double mapback_us)
{
    pb_t b;
    pb_init(&b);
    b.m.cap[POL_GPU] = 2 * MIB;
    b.m.mapback_us_per_chunk = mapback_us;
    uint32_t big = pb_buf(&b, 3, -1, -1), x = pb_buf(&b, 1, -1, -1), y = pb_buf(&b, 1, -1, -1);
    pb_op(&b, 0, 10000), pb_all(&b, big, POL_RW);
    pb_op(&b, 0, 10000), pb_ref(&b, big, 0, 1, POL_RW);
    pb_op(&b, 0, 10000), pb_all(&b, x, POL_RW);
    pb_op(&b, 0, 10000), pb_all(&b, y, POL_RW);
    pb_op(&b, 0, 10000), pb_all(&b, x, POL_RW), pb_all(&b, y, POL_RW);
    pol_knobs_t k = { .lookahead = 0, .extent_chunks = 1 };
    pol_plan_t *p = pb_plan(&b, &k);
    double ns = p ? p->predicted.map_ns : -1;
    pol_plan_free(p);
    pb_fini(&b);
    return ns;
}

static void test_in_place_mapback(void)
{
    double none = in_place_map_ns(0), some = in_place_map_ns(1000);
    PB_CHECK(some - none > 999e3 && some - none < 1001e3, "in place, mapping back: expected "
             "1000 us per iteration, got %.0f ns", some - none);
    printf("in place: mapping back %.0f us an iteration\n", (some - none) / 1e3);
}

/* Two buffers of 4 chunks each on a GPU of 4, used in turn, and moved in extents of up to 8
 * chunks: the host's predicted mapping time with each move one handle of share `share` (0: a
 * handle a chunk); *moves and *chunks count the plan's moves and their chunks, and *charged
 * sums the chunks' worth each move is charged: 1 - share + share x n for n chunks (n where
 * share is 0). */
static double handles_map_ns(double share, size_t *moves, uint32_t *chunks, double *charged)
{
    pb_t b;
    pb_init(&b);
    b.m.cap[POL_GPU] = 4 * MIB;
    b.m.map_us_per_chunk = 100;
    b.m.handle_share = share;
    uint32_t x = pb_buf(&b, 4, -1, -1), y = pb_buf(&b, 4, -1, -1);
    for (int k = 0; k < 4; k++)
        pb_op(&b, 0, 10000), pb_all(&b, k % 2 ? y : x, POL_RW);
    pol_knobs_t kn = { .lookahead = 0, .extent_chunks = 8 };
    pol_plan_t *p = pb_plan(&b, &kn);
    double ns = p ? p->predicted.map_ns : -1;
    *moves = p ? p->nmoves : 0;
    *chunks = 0;
    *charged = 0;
    for (size_t i = 0; p && i < p->nmoves; i++) {
        *chunks += p->moves[i].nchunks;
        *charged += share > 0 ? 1 - share + share * p->moves[i].nchunks : p->moves[i].nchunks;
    }
    pol_plan_free(p);
    pb_fini(&b);
    return ns;
}

static void test_handle_share(void)
{
    size_t m0, m1;
    uint32_t c0, c1;
    double w0, w1;
    double chunks = handles_map_ns(0, &m0, &c0, &w0), moves = handles_map_ns(0.25, &m1, &c1, &w1);
    PB_CHECK(m0 > 0 && m0 == m1 && c0 == c1 && c1 > m1, "handles: expected the same moves of "
             "several chunks at both shares, got %zu moves of %u chunks and %zu of %u", m0, c0,
             m1, c1);
    double want = w1 / w0, got = chunks > 0 ? moves / chunks : 0;
    PB_CHECK(fabs(got - want) < 1e-9 && want < 1, "handles: expected mapping time %.4f x a "
             "handle a chunk's, got %.4f (%.0f ns against %.0f)", want, got, moves, chunks);
    const double bad[] = { 1.5, -0.1, NAN };
    for (int i = 0; i < 3; i++) {
        pb_t b;
        pb_init(&b);
        b.m.handle_share = bad[i];
        pb_refused(&b, "m.handle_share", bad[i]);
    }
    printf("handles: a move one handle maps in %.4f of the time\n", got);
}

int main(void)
{
    test_cycle();
    test_dead();
    test_clean();
    test_born_dies();
    test_unlimited();
    test_host();
    test_no_uses();
    test_nospc();
    test_in_place_nvme();
    test_in_place_full();
    test_keep_host_only();
    test_errors();
    test_bound();
    test_bound_min();
    test_bound_in_place();
    test_executor();
    test_slack();
    test_near();
    test_in_place_mapback();
    test_handle_share();
    if (!pb_failures)
        printf("policy cases: all pass\n");
    return pb_failures ? 1 : 0;
}
