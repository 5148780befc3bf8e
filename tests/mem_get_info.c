/* SPDX-License-Identifier: MIT */
/*
 * mem_get_info.c - cuMemGetInfo: total is the device's memory and stays constant; free drops
 * by (at least) the size of each allocation and comes back when it is freed, in any order.
 * Either output pointer may be NULL (the real driver answers CUDA_SUCCESS for a NULL free, a
 * NULL total and both): the other is still written.
 */
#include "memtest.h"

/* Free memory must be `expect_used` below total, give or take the allocation granularity. */
static void expect_used(size_t expected, const char *when)
{
    size_t used = mt_used();
    EXPECT(used >= expected && used < expected + 4 * MT_GRAN,
           "%s: expected about %zu bytes in use, got %zu", when, expected, used);
}

int main(void)
{
    static const size_t sizes[] = { 1, 4096, 3 * MT_MIB, 64 * MT_MIB, 100 * MT_MIB + 17 };
    CUdeviceptr d[5];
    size_t free_bytes, total, total0, base_used, sum = 0;

    st_setup(0);
    CHECK_CU(cuMemGetInfo(&free_bytes, &total0));
    total = 0;
    CHECK_CU(cuMemGetInfo(NULL, &total));
    EXPECT(total == total0, "total alone: %zu, expected %zu", total, total0);
    free_bytes = 0;
    CHECK_CU(cuMemGetInfo(&free_bytes, NULL));
    EXPECT(free_bytes == total0 - mt_used(), "free alone: %zu, expected %zu", free_bytes,
           total0 - mt_used());
    CHECK_CU(cuMemGetInfo(NULL, NULL));
    CHECK_CU(cuMemGetInfo(&free_bytes, &total0));
    base_used = total0 - free_bytes;
    for (int i = 0; i < 5; i++) {
        CHECK_CU(cuMemAlloc(&d[i], sizes[i]));
        sum += sizes[i];
        expect_used(base_used + sum, "after allocating");
        CHECK_CU(cuMemGetInfo(&free_bytes, &total));
        EXPECT(total == total0, "total changed from %zu to %zu", total0, total);
    }
    /* Free out of order. */
    static const int order[] = { 3, 0, 4, 1, 2 };
    for (int k = 0; k < 5; k++) {
        CHECK_CU(cuMemFree(d[order[k]]));
        sum -= sizes[order[k]];
        expect_used(base_used + sum, "after freeing");
    }
    EXPECT(mt_used() == base_used, "after freeing everything: %zu in use, %zu before",
           mt_used(), base_used);
    return 0;
}
