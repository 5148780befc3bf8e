/* SPDX-License-Identifier: MIT */
/*
 * unit_policy_cost.c - the cost model's device time for an operation that reaches chunks away
 * from the GPU, and the machine's unmap figure.
 *
 *   away:  an operation timed with `away` of the chunks it reaches away from the GPU
 *          (pol_op_t.away) is predicted to take dur_ns x k / away where the plan leaves k >
 *          away of them away (here the 3 chunks behind its pointer, which a plan with
 *          knobs.near = 0 leaves in host memory), and dur_ns where k <= away or away is 0
 *          (not known).  Timed again with away2 != away (dur2_ns), the line through the two
 *          times: dur_ns + (dur2_ns - dur_ns) / (away2 - away) x (k - away), the slope held at
 *          0 or more, and where k is below both counts no less than the shorter time
 *          (pol_op_time, asked directly); with away2 == away, the ratio as before.
 *   drop:  the unmap of a freed or parked chunk's memory is owed by the room, not by the
 *          birth that takes it, so it moves the host's mapping time and adds none: a buffer
 *          born and freed each iteration beside one that comes and goes costs the same per
 *          iteration with drop_us_per_chunk 0 and 30, each chunk its own handle or not; where
 *          the move that takes the freed room runs behind a kernel and the birth does not, the
 *          iteration is shorter by the unmap; a drop_us_per_chunk below 0 or NaN is refused
 *          with -EINVAL naming it.
 *   link:  a copy alone runs at its direction's bandwidth; beside copies the other way it
 *          runs at what their rate leaves of the duplex figure, those placed before it keeping
 *          theirs; one placed after a long queue the other way but earlier in time runs beside
 *          that queue, not behind it; with a duplex figure at or above both directions' sum
 *          nothing slows (pol_lanes_copy, asked directly).
 *   chunk by chunk: where each chunk is a handle of its own, a move of several chunks is
 *          predicted as the executor runs it, each chunk's room, copy and readiness in turn, so
 *          a plan of 2-chunk extents takes what one of single chunks takes (a prefetch's first
 *          chunk taking the room of an eviction's first chunk as soon as its copy is done).
 */
#include <math.h>

#include "unit_policy.h"
#include "pol_int.h"

/* The predicted iteration (ns) of one operation of 100 us reaching buffer x on the GPU and
 * the 3 chunks of y behind its pointer (POL_NEAR, left in host memory; `twice`: by two
 * references, which count them once), timed with `away` chunks away, and again (dur2_us > 0)
 * with away2. */
static double away2_iter_ns(uint32_t away, int twice, double dur2_us, uint32_t away2)
{
    pb_t b;
    pb_init(&b);
    b.m.cap[POL_GPU] = 4 * MIB;
    uint32_t x = pb_buf(&b, 1, -1, -1), y = pb_buf(&b, 3, -1, -1);
    pb_op(&b, 0, 100000), pb_all(&b, x, POL_RW), pb_all(&b, y, POL_RW | POL_NEAR);
    if (twice)
        pb_ref(&b, y, 1, 2, POL_READ | POL_NEAR);
    b.ops[0].away = away;
    b.ops[0].dur2_ns = (uint64_t)(dur2_us * 1e3);
    b.ops[0].away2 = away2;
    pol_knobs_t k = { .lookahead = 0, .extent_chunks = 1, .near = 0 };
    return pb_predicted(&b, &k).iter_ns;
}

static double away_iter_ns(uint32_t away, int twice)
{
    return away2_iter_ns(away, twice, 0, 0);
}

static void test_away(void)
{
    static const struct {
        uint32_t away;
        int twice;
        double want_ns;
    } c[] = { { 0, 0, 100e3 }, { 1, 0, 300e3 }, { 2, 0, 150e3 }, { 3, 0, 100e3 },
              { 5, 0, 100e3 }, { 1, 1, 300e3 }, { 3, 1, 100e3 } };
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        double got = away_iter_ns(c[i].away, c[i].twice);
        PB_CHECK(fabs(got - c[i].want_ns) < 1e3, "away %u%s: expected an iteration of %.0f us, "
                 "got %.1f", c[i].away, c[i].twice ? " (y reached twice)" : "",
                 c[i].want_ns / 1e3, got / 1e3);
    }
    /* Timed twice: the 3 chunks away in the plan on the line through the two times. */
    static const struct {
        uint32_t away;
        double dur2_us;
        uint32_t away2;
        double want_us;
    } l[] = { { 0, 250, 1, 550 },   /* 150 us a chunk: 100 + 3 x 150 */
              { 2, 160, 4, 130 },   /* 30 us a chunk, one more than at 2 */
              { 3, 40, 1, 100 },    /* timed at 3 itself */
              { 1, 50, 2, 100 },    /* slower with fewer away: no cost a chunk */
              { 1, 500, 1, 300 },   /* the same count: the ratio */
              { 4, 10, 1, 70 } };   /* 30 us a chunk, one fewer than at 4 */
    for (size_t i = 0; i < sizeof(l) / sizeof(l[0]); i++) {
        double got = away2_iter_ns(l[i].away, 0, l[i].dur2_us, l[i].away2);
        PB_CHECK(fabs(got - l[i].want_us * 1e3) < 1e3, "100 us at %u away, %.0f us at %u: "
                 "expected %.0f us with 3 away, got %.1f", l[i].away, l[i].dur2_us, l[i].away2,
                 l[i].want_us, got / 1e3);
    }
    /* pol_op_time itself, below both counts: no less than the shorter time. */
    pol_op_t op = { .dur_ns = 100000, .away = 4, .dur2_ns = 130000, .away2 = 5 };
    static const struct {
        uint64_t away;
        double want_us;
    } t[] = { { 6, 160 }, { 5, 130 }, { 4, 100 }, { 3, 100 }, { 0, 100 } };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        double got = pol_op_time(&op, t[i].away);
        PB_CHECK(fabs(got - t[i].want_us * 1e3) < 1, "100 us at 4 away, 130 us at 5: expected "
                 "%.0f us at %llu, got %.1f", t[i].want_us, (unsigned long long)t[i].away,
                 got / 1e3);
    }
    if (!pb_failures)
        printf("away: 1 of 3 chunks away when timed, 300 us predicted for 100 us; timed again, "
               "the line through the two\n");
}

/* A machine of `gpu` chunks whose mapping calls cost 50 us a chunk moved and 100 a chunk born,
 * drop_us of it the unmap of the room it takes. */
static void drop_init(pb_t *b, uint64_t gpu, double drop_us)
{
    pb_init(b);
    b->m.cap[POL_GPU] = gpu * MIB;
    b->m.map_us_per_chunk = 50;
    b->m.birth_us_per_chunk = 100;
    b->m.drop_us_per_chunk = drop_us;
}

/* The host's mapping time (ns) predicted for a 2-chunk GPU where buffer a (2 chunks, born
 * and freed around op 0, at address `slot`) and x (2 chunks, alive all along) take turns. */
static double drop_map_ns(double drop_us, double share, uint64_t slot)
{
    pb_t b;
    drop_init(&b, 2, drop_us);
    b.m.handle_share = share;
    uint32_t a = pb_buf(&b, 2, 0, 0), x = pb_buf(&b, 2, -1, -1);
    b.bufs[a].slot = slot;
    pb_op(&b, 0, 10000), pb_all(&b, a, POL_RW);
    pb_op(&b, 0, 10000), pb_all(&b, x, POL_RW);
    pol_knobs_t k = { .lookahead = 0, .extent_chunks = 2 };
    return pb_predicted(&b, &k).map_ns;
}

/* The predicted iteration (ns) and host mapping time (*map_ns) of a 1-chunk GPU where buffer
 * a (1 chunk, at address `slot`) is born and freed around op 0, a kernel of 1 ms follows, and
 * x (1 chunk, alive all along) is reached by op 3: x's move in, issued behind the long kernel
 * (lookahead 1), takes a's room and owes its unmap; a's birth, on the host's critical path
 * after x's move away, owes only the rest. */
static double drop_iter_ns(double drop_us, uint64_t slot, double *map_ns)
{
    pb_t b;
    drop_init(&b, 1, drop_us);
    uint32_t a = pb_buf(&b, 1, 0, 0), x = pb_buf(&b, 1, -1, -1);
    b.bufs[a].slot = slot;
    pb_op(&b, 0, 10000), pb_all(&b, a, POL_RW);
    pb_op(&b, 0, 1000000);
    pb_op(&b, 0, 10000);
    pb_op(&b, 0, 10000), pb_all(&b, x, POL_RW);
    pol_knobs_t k = { .lookahead = 1, .extent_chunks = 1 };
    pol_result_t r = pb_predicted(&b, &k);
    *map_ns = r.map_ns;
    return r.iter_ns;
}

static void test_drop(void)
{
    for (uint64_t slot = 0; slot < 2; slot++) {
        double m0, m30, t0 = drop_iter_ns(0, slot, &m0), t30 = drop_iter_ns(30, slot, &m30);
        PB_CHECK(m0 > 0 && fabs(m30 - m0) < 1 && fabs((t0 - t30) - 30e3) < 1e3, "drop, slot "
                 "%llu: expected the same mapping time and an iteration 30 us shorter with "
                 "30 us of unmap owed by the room, got %.1f / %.1f us mapping, %.1f / %.1f us "
                 "an iteration", (unsigned long long)slot, m0 / 1e3, m30 / 1e3, t0 / 1e3,
                 t30 / 1e3);
    }
    static const struct {
        double share;
        uint64_t slot;
    } c[] = { { 0, 0 }, { 0, 1 }, { 0.25, 0 } };
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        double none = drop_map_ns(0, c[i].share, c[i].slot);
        double some = drop_map_ns(30, c[i].share, c[i].slot);
        PB_CHECK(none > 0 && fabs(some - none) < 1, "drop, share %g, slot %llu: expected the "
                 "same mapping time with and without it, got %.0f and %.0f ns", c[i].share,
                 (unsigned long long)c[i].slot, some, none);
    }
    const double bad[] = { -1, NAN };
    for (int i = 0; i < 2; i++) {
        pb_t b;
        pb_init(&b);
        b.m.drop_us_per_chunk = bad[i];
        pb_refused(&b, "m.drop_us_per_chunk", bad[i]);
    }
}

/* A link of 25 GB/s each way and `duplex` both ways (bytes per ns): each copy's end, in turn. */
static void test_link(void)
{
    static const struct {
        double duplex;
        int dir;
        double t, bytes, want_end;
        const char *what;
    } c[] = {
        { 36, 1, 0, 25000, 1000, "alone" },
        { 36, 0, 0, 25000, 1560, "beside it: 11 a ns for 1000 ns, then 25" },
        { 36, 1, 1000, 25000, 2313.6, "after the first: 11 a ns beside the second's rest" },
        { 36, 1, 2313.6, 50000, 4313.6, "alone again" },
        { 36, 0, 1560, 11000, 2560, "placed after that queue, earlier: beside it at 11" },
        { 50, 1, 0, 25000, 1000, "a duplex figure of both directions' sum: alone" },
        { 50, 0, 0, 25000, 1000, "and beside it, at full rate" },
    };
    pol_lanes_t k = { 0 };
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        if (i && c[i].duplex != c[i - 1].duplex) {
            PB_CHECK(!k.oom, "link: expected every stretch kept");
            pol_lanes_free(&k);
        }
        double end = pol_lanes_copy(&k, c[i].dir, c[i].t, c[i].bytes, 25, c[i].duplex, 0);
        PB_CHECK(fabs(end - c[i].want_end) < 1e-6, "link, copy %zu (%s): expected its end at "
                 "%.1f ns, got %.1f", i, c[i].what, c[i].want_end, end);
    }
    PB_CHECK(!k.oom, "link: expected every stretch kept");
    pol_lanes_free(&k);
    /* A link used one way only, copies 100 ns apart, the floor at each one's start: it
     * remembers no more than the last of them. */
    size_t most = 0;
    for (int i = 0; i < 100000; i++) {
        pol_lanes_copy(&k, 1, 1100.0 * i, 25000, 25, 36, 1100.0 * i);
        size_t n = k.n[1] - k.head[1];
        most = n > most ? n : most;
    }
    PB_CHECK(most <= 2 && k.cap[1] <= 64, "link, one way: expected at most 2 stretches "
             "remembered in an array of 64, got %zu in %zu", most, k.cap[1]);
    pol_lanes_free(&k);
    if (!pb_failures)
        printf("link: a copy beside the other direction's runs at what they leave of the "
               "duplex figure\n");
}

/* The predicted iteration (ns) of a 2-chunk GPU where op 0 writes x (2 chunks) and op 1 y (2
 * chunks), each in turn evicting the other, moved in extents of up to `extent` chunks. */
static double chunks_iter_ns(uint32_t extent, double share)
{
    pb_t b;
    pb_init(&b);
    b.m.cap[POL_GPU] = 2 * MIB;
    b.m.handle_share = share;
    uint32_t x = pb_buf(&b, 2, -1, -1), y = pb_buf(&b, 2, -1, -1);
    pb_op(&b, 0, 10000), pb_all(&b, x, POL_RW);
    pb_op(&b, 0, 10000), pb_all(&b, y, POL_RW);
    pol_knobs_t k = { .lookahead = 0, .extent_chunks = extent };
    return pb_predicted(&b, &k).iter_ns;
}

static void test_chunks(void)
{
    double one = chunks_iter_ns(1, 0), two = chunks_iter_ns(2, 0);
    PB_CHECK(one > 0 && fabs(one - two) < 1, "chunk by chunk: expected extents of 2 chunks to "
             "take what single chunks take, a handle a chunk; got %.1f and %.1f us", two / 1e3,
             one / 1e3);
    double whole = chunks_iter_ns(2, 0.02);
    PB_CHECK(whole > two + 50e3, "chunk by chunk: expected a move of one handle to wait for "
             "all its room and be ready at once (longer than %.1f us), got %.1f us", two / 1e3,
             whole / 1e3);
    if (!pb_failures)
        printf("chunk by chunk: %.1f us an iteration in extents of 2 chunks as in single ones; "
               "%.1f us as one handle a move\n", two / 1e3, whole / 1e3);
}

int main(void)
{
    test_away();
    test_drop();
    test_link();
    test_chunks();
    if (!pb_failures)
        printf("policy cost: all pass\n");
    return pb_failures ? 1 : 0;
}
