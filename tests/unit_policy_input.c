/* SPDX-License-Identifier: MIT */
/*
 * unit_policy_input.c - inputs and plans at the edges of what the planner accepts: operations
 * that share one list of references (each its own uses), and a plan that starts a buffer on
 * NVMe (refused by pol_plan_verify unless the buffer may go there).  Malformed inputs are in
 * unit_policy_cases.c (test_errors).
 */
#include "unit_policy.h"

/* Operations may name one list of references between them: 100 operations, each reaching
 * all 1,000 chunks of one buffer through the same reference, are 100,000 uses (the index
 * once counted the references' chunks alone, 1,000, and wrote past its tables). */
static void test_shared_refs(void)
{
    pb_t b;
    pb_init(&b);
    b.m.cap[POL_GPU] = 2000 * MIB;
    b.m.cap[POL_HOST] = 4096 * MIB;
    pb_buf(&b, 1000, -1, -1);
    pb_op(&b, 0, 1000);
    pb_all(&b, 0, POL_RW);
    for (int i = 1; i < 100; i++) {
        pb_op(&b, 0, 1000);
        b.ops[b.nops - 1].ref = 0;
        b.ops[b.nops - 1].nref = 1;
    }
    pol_plan_t *p = pb_plan(&b, NULL);
    PB_CHECK(p && p->predicted.iter_ns >= 100 * 1000, "shared references: planned %s, "
             "iteration %.0f ns", p ? "yes" : "no", p ? p->predicted.iter_ns : -1.0);
    pol_plan_free(p);
    pb_fini(&b);
}
/* A plan that starts a buffer on NVMe that may not go there (not nvme_ok) is refused, as a
 * move there is; the same plan for a buffer that may is sound. */
static void test_verify_start_nvme(void)
{
    pb_t b;
    pb_init(&b);
    b.m.cap[POL_NVME] = 4 * MIB;
    uint32_t a = pb_buf(&b, 1, -1, -1);
    pb_buf(&b, 1, -1, -1);              /* (reached by nothing) */
    pb_op(&b, 0, 1000);
    pb_all(&b, a, POL_RW);
    uint32_t first[2] = { 0, 0 }, after[2] = { 0, 0 };
    uint8_t tier[2] = { POL_GPU, POL_NVME }, home[2] = { POL_NTIERS, POL_NTIERS };
    pol_plan_t p = { .nmoves = 0, .op_first = first, .op_after = after, .start_tier = tier,
                     .start_home = home };
    char err[256] = "";
    int rc = pol_plan_verify(pb_input(&b), &p, err, sizeof(err));
    PB_CHECK(rc == -EINVAL && strstr(err, "bufs[1] chunk 0 starts on nvme"),
             "a buffer not nvme_ok started on NVMe: expected -EINVAL naming it, got %d (%s)", rc,
             err);
    b.bufs[1].nvme_ok = 1;
    rc = pol_plan_verify(pb_input(&b), &p, err, sizeof(err));
    PB_CHECK(rc == 0, "the same plan with the buffer nvme_ok: expected 0, got %d (%s)", rc, err);
    pb_fini(&b);
}
int main(void)
{
    test_shared_refs();
    test_verify_start_nvme();
    if (!pb_failures)
        printf("policy input: all pass\n");
    return pb_failures ? 1 : 0;
}
