/* SPDX-License-Identifier: MIT */
/*
 * unit_policy_verify.c - pol_plan_verify on hand-made plans it must refuse, each beside the
 * same plan made sound, which it must pass.
 *
 *   stale:  a plan that goes back to a kept copy without a copy after the chunk was written:
 *           the first iteration, starting with the copy current, is fine; the second starts
 *           with it stale (the walk covers two iterations).
 *   birth:  a buffer materialised before its birth.
 */
#include "unit_policy.h"

/* Two operations on a GPU of gpu_mib: op 0 writes A (one chunk, alive throughout), op 1
 * reaches B (one chunk, born and freed at b_life, -1: alive throughout) with access b_acc. */
static void two_ops(pb_t *b, uint64_t gpu_mib, int b_life, uint8_t b_acc)
{
    pb_init(b);
    b->m.cap[POL_GPU] = gpu_mib * MIB;
    uint32_t a = pb_buf(b, 1, -1, -1), c = pb_buf(b, 1, b_life, b_life);
    pb_op(b, 0, 1000);
    pb_all(b, a, POL_RW);
    pb_op(b, 0, 1000);
    pb_all(b, c, b_acc);
}

/* pol_plan_verify of the plan of moves mv[0 .. n) (op_first, op_after: first, after) whose
 * chunks A and B start on tier[0], tier[1] with kept copies on home[0], home[1]. */
static int verify(pb_t *b, pol_move_t *mv, uint32_t n, uint32_t *first, uint32_t *after,
                  uint8_t *tier, uint8_t *home, char *err, size_t len)
{
    pol_plan_t p = { .moves = mv, .nmoves = n, .op_first = first, .op_after = after,
                     .start_tier = tier, .start_home = home };
    err[0] = 0;
    return pol_plan_verify(pb_input(b), &p, err, len);
}

/* A and B both written, the GPU holding one chunk: B leaves for its kept copy with no
 * write-back, A comes in; after A's use A goes back with a copy and B comes in, keeping its
 * host copy, and is written. */
static void test_stale(void)
{
    pb_t b;
    two_ops(&b, 1, -1, POL_RW);
    pol_move_t mv[4] = {
        { .buf = 1, .nchunks = 1, .from = POL_GPU, .to = POL_HOST, .need_by = UINT32_MAX },
        { .buf = 0, .nchunks = 1, .from = POL_HOST, .to = POL_GPU, .writeback = 1, .need_by = 0 },
        { .buf = 0, .nchunks = 1, .from = POL_GPU, .to = POL_HOST, .writeback = 1,
          .need_by = UINT32_MAX },
        { .buf = 1, .nchunks = 1, .from = POL_HOST, .to = POL_GPU, .writeback = 1, .keep = 1,
          .need_by = 1 },
    };
    uint32_t first[3] = { 0, 4, 4 }, after[3] = { 2, 4, 4 };
    uint8_t tier[2] = { POL_HOST, POL_GPU }, home[2] = { POL_NTIERS, POL_HOST };
    char err[256];
    int rc = verify(&b, mv, 4, first, after, tier, home, err, sizeof(err));
    PB_CHECK(rc == -EINVAL && strstr(err, "stale"),
             "a move back to a kept copy written in the iteration before: expected -EINVAL "
             "naming the stale copy, got %d (%s)", rc, err);
    mv[0].writeback = 1;                /* (with the copy, the plan is sound) */
    rc = verify(&b, mv, 4, first, after, tier, home, err, sizeof(err));
    PB_CHECK(rc == 0, "the same plan copying B back: expected 0, got %d (%s)", rc, err);
    pb_fini(&b);
}

/* B, born at op 1 and freed after it, materialised before op 0, where it does not exist yet;
 * then before op 1. */
static void test_birth(void)
{
    pb_t b;
    two_ops(&b, 2, 1, POL_OVERWRITE);
    pol_move_t mv[1] = {
        { .buf = 1, .nchunks = 1, .from = POL_NTIERS, .to = POL_GPU, .need_by = 1 },
    };
    uint32_t first[3] = { 0, 1, 1 }, after[3] = { 1, 1, 1 };
    uint8_t tier[2] = { POL_GPU, POL_NTIERS }, home[2] = { POL_NTIERS, POL_NTIERS };
    char err[256];
    int rc = verify(&b, mv, 1, first, after, tier, home, err, sizeof(err));
    PB_CHECK(rc == -EINVAL && strstr(err, "not alive"),
             "a buffer materialised before its birth: expected -EINVAL saying it is not alive, "
             "got %d (%s)", rc, err);
    after[0] = 0;                       /* (before op 1: sound) */
    first[1] = 0;
    rc = verify(&b, mv, 1, first, after, tier, home, err, sizeof(err));
    PB_CHECK(rc == 0, "the same buffer materialised at its birth: expected 0, got %d (%s)", rc,
             err);
    pb_fini(&b);
}

int main(void)
{
    test_stale();
    test_birth();
    if (!pb_failures)
        printf("policy verify: all pass\n");
    return pb_failures ? 1 : 0;
}
