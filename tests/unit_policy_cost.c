/* SPDX-License-Identifier: MIT */
/*
 * unit_policy_cost.c - the cost model's device time for an operation that reaches chunks away
 * from the GPU, and the machine's unmap figure.
 *
 *   away:  an operation timed with `away` of the chunks it reaches away from the GPU
 *          (pol_op_t.away) is predicted to take dur_ns x k / away where the plan leaves k >
 *          away of them away (here the 3 chunks behind its pointer, which a plan with
 *          knobs.near = 0 leaves in host memory), and dur_ns where k <= away or away is 0
 *          (not known).
 *   drop:  m.drop_us_per_chunk below 0 or NaN is refused with -EINVAL naming it.
 */
#include <math.h>

#include "unit_policy.h"

/* The predicted iteration (ns) of one operation of 100 us reaching buffer x on the GPU and
 * the 3 chunks of y behind its pointer (POL_NEAR, left in host memory), timed with `away`
 * chunks away. */
static double away_iter_ns(uint32_t away)
{
    pb_t b;
    pb_init(&b);
    b.m.cap[POL_GPU] = 4 * MIB;
    uint32_t x = pb_buf(&b, 1, -1, -1), y = pb_buf(&b, 3, -1, -1);
    pb_op(&b, 0, 100000), pb_all(&b, x, POL_RW), pb_all(&b, y, POL_RW | POL_NEAR);
    b.ops[0].away = away;
    pol_knobs_t k = { .lookahead = 0, .extent_chunks = 1, .near = 0 };
    pol_plan_t *p = pb_plan(&b, &k);
    char err[256] = "";
    PB_CHECK(p && pol_plan_verify(pb_input(&b), p, err, sizeof(err)) == 0,
             "away %u: expected a plan that verifies: %s", away, err);
    double ns = p ? p->predicted.iter_ns : -1;
    pol_plan_free(p);
    pb_fini(&b);
    return ns;
}

static void test_away(void)
{
    static const struct {
        uint32_t away;
        double want_ns;
    } c[] = { { 0, 100e3 }, { 1, 300e3 }, { 2, 150e3 }, { 3, 100e3 }, { 5, 100e3 } };
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        double got = away_iter_ns(c[i].away);
        PB_CHECK(fabs(got - c[i].want_ns) < 1e3, "away %u: expected an iteration of %.0f us, "
                 "got %.1f", c[i].away, c[i].want_ns / 1e3, got / 1e3);
    }
    printf("away: 1 of 3 chunks away when timed, 300 us predicted for 100 us\n");
}

static void test_drop(void)
{
    const double bad[] = { -1, NAN };
    for (int i = 0; i < 2; i++) {
        pb_t b;
        pb_init(&b);
        b.m.drop_us_per_chunk = bad[i];
        pb_buf(&b, 1, -1, -1);
        pb_op(&b, 0, 1000), pb_all(&b, 0, POL_RW);
        char err[256] = "";
        int rc = pol_input_check(pb_input(&b), err, sizeof(err));
        PB_CHECK(rc == -EINVAL && strstr(err, "m.drop_us_per_chunk"), "drop_us_per_chunk %g: "
                 "expected -EINVAL naming it, got %d (%s)", bad[i], rc, err);
        pb_fini(&b);
    }
}

int main(void)
{
    test_away();
    test_drop();
    if (!pb_failures)
        printf("policy cost: all pass\n");
    return pb_failures ? 1 : 0;
}
