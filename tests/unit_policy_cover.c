/* SPDX-License-Identifier: MIT */
/*
 * unit_policy_cover.c - pol_cover_after marks the operations after which an executor records
 * an event: each that last used a chunk before a move of the plan takes it away from the GPU.
 *
 * Five operations over buffers a (1 chunk), b (1), c (1) and d (2 chunks, reached one at a
 * time), and a plan written by hand:
 *   op 0: a       op 1: b, d[0]       op 2: a, d[1]       op 3: c       op 4: b
 * moves: a away after op 2 (its last use: op 2, not op 0); b away before op 3 (op 1, not op 4,
 * which comes later); c away before op 0 (used last in the iteration before: op 3); d's two
 * chunks away as one move after op 2 (ops 1 and 2); b to the GPU before op 4 (marks nothing).
 * Expected: ops 1, 2 and 3 marked, 0 and 4 not.  With the move of d alone, only ops 1 and 2;
 * with no moves away, none; with the move away of buffer e, which no operation reaches, none.
 */
#include "unit_policy.h"

#define NOPS 5

/* The marks for the moves `moves` (their places: before[i] 1 for "before op at[i]", 0 for
 * "after op at[i]"), in out. */
static void cover_of(const pol_move_t *moves, const uint32_t *at, const int *before, size_t n,
                     uint8_t *out)
{
    pb_t b;
    pb_init(&b);
    uint32_t a = pb_buf(&b, 1, -1, -1), bb = pb_buf(&b, 1, -1, -1), c = pb_buf(&b, 1, -1, -1);
    uint32_t d = pb_buf(&b, 2, -1, -1);
    pb_buf(&b, 1, -1, -1);                      /* (e: reached by no operation) */
    pb_op(&b, 0, 1000), pb_all(&b, a, POL_RW);
    pb_op(&b, 0, 1000), pb_all(&b, bb, POL_RW), pb_ref(&b, d, 0, 1, POL_RW);
    pb_op(&b, 0, 1000), pb_all(&b, a, POL_RW), pb_ref(&b, d, 1, 1, POL_RW);
    pb_op(&b, 0, 1000), pb_all(&b, c, POL_RW);
    pb_op(&b, 0, 1000), pb_all(&b, bb, POL_RW);
    /* (the moves placed in the plan's order: before op i, then after it) */
    pol_move_t sorted[8];
    uint32_t first[NOPS + 1], after[NOPS + 1], m = 0;
    for (uint32_t i = 0; i < NOPS; i++) {
        first[i] = m;
        for (size_t k = 0; k < n; k++)
            if (at[k] == i && before[k])
                sorted[m++] = moves[k];
        after[i] = m;
        for (size_t k = 0; k < n; k++)
            if (at[k] == i && !before[k])
                sorted[m++] = moves[k];
    }
    first[NOPS] = after[NOPS] = m;
    pol_plan_t pl = { .moves = sorted, .nmoves = m, .op_first = first, .op_after = after };
    memset(out, 0xee, NOPS);
    int rc = pol_cover_after(pb_input(&b), &pl, out);
    PB_CHECK(rc == 0, "pol_cover_after: expected 0, got %d", rc);
    pb_fini(&b);
}

static void expect(const char *what, const uint8_t *got, const uint8_t *want)
{
    for (int i = 0; i < NOPS; i++)
        PB_CHECK(got[i] == want[i], "%s: op %d expected %s, got %u", what, i,
                 want[i] ? "marked (1)" : "not marked (0)", got[i]);
}

int main(void)
{
    const pol_move_t away_a = { 0, 0, 1, POL_GPU, POL_HOST, 1, 0, UINT32_MAX };
    const pol_move_t away_b = { 1, 0, 1, POL_GPU, POL_HOST, 1, 0, UINT32_MAX };
    const pol_move_t away_c = { 2, 0, 1, POL_GPU, POL_HOST, 1, 0, UINT32_MAX };
    const pol_move_t away_d = { 3, 0, 2, POL_GPU, POL_HOST, 1, 0, UINT32_MAX };
    const pol_move_t in_b = { 1, 0, 1, POL_HOST, POL_GPU, 1, 0, 4 };
    const pol_move_t away_e = { 4, 0, 1, POL_GPU, POL_HOST, 1, 0, UINT32_MAX };
    uint8_t got[NOPS];

    const pol_move_t all[] = { away_a, away_b, away_c, away_d, in_b };
    const uint32_t at[] = { 2, 3, 0, 2, 4 };
    const int before[] = { 0, 1, 1, 0, 1 };
    cover_of(all, at, before, 5, got);
    expect("every move", got, (const uint8_t[]){ 0, 1, 1, 1, 0 });

    cover_of(&away_d, (const uint32_t[]){ 2 }, (const int[]){ 0 }, 1, got);
    expect("d's move alone", got, (const uint8_t[]){ 0, 1, 1, 0, 0 });

    cover_of(&in_b, (const uint32_t[]){ 4 }, (const int[]){ 1 }, 1, got);
    expect("a move to the GPU alone", got, (const uint8_t[]){ 0, 0, 0, 0, 0 });

    cover_of(&away_e, (const uint32_t[]){ 1 }, (const int[]){ 0 }, 1, got);
    expect("a move away of a chunk no operation reaches", got,
           (const uint8_t[]){ 0, 0, 0, 0, 0 });

    if (!pb_failures)
        printf("policy cover: all pass\n");
    return pb_failures ? 1 : 0;
}
