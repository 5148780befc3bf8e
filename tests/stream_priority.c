/* SPDX-License-Identifier: MIT */
/*
 * stream_priority.c - stream priorities: cuCtxGetStreamPriorityRange gives the range
 * [greatest, least] (lower numbers are higher priorities), cuStreamCreateWithPriority keeps a
 * priority inside it and clamps one outside it to the nearest end, cuStreamCreate gives the
 * default priority 0, and cuStreamGetPriority/GetFlags report what the stream has.
 */
#include "simtest.h"

static int created_priority(int asked, unsigned flags)
{
    CUstream s;
    int got;
    unsigned got_flags;
    CHECK_CU(cuStreamCreateWithPriority(&s, flags, asked));
    CHECK_CU(cuStreamGetPriority(s, &got));
    CHECK_CU(cuStreamGetFlags(s, &got_flags));
    EXPECT(got_flags == flags, "flags: expected %u, got %u", flags, got_flags);
    CHECK_CU(cuStreamDestroy(s));
    return got;
}

int main(void)
{
    int least, greatest, p;
    CUstream s;

    st_setup(0);
    CHECK_CU(cuCtxGetStreamPriorityRange(&least, &greatest));
    EXPECT(greatest < least, "priority range: greatest %d, least %d (expected greatest < least)",
           greatest, least);
    EXPECT(least == 0, "least priority: expected 0 (the default), got %d", least);
    CHECK_CU(cuCtxGetStreamPriorityRange(NULL, &p));
    EXPECT(p == greatest, "greatest alone: %d", p);
    CHECK_CU(cuCtxGetStreamPriorityRange(&p, NULL));
    EXPECT(p == least, "least alone: %d", p);
    CHECK_CU(cuCtxGetStreamPriorityRange(NULL, NULL));

    for (int want = greatest; want <= least; want++) {
        p = created_priority(want, CU_STREAM_DEFAULT);
        EXPECT(p == want, "priority %d inside the range: got %d", want, p);
    }
    p = created_priority(greatest - 100, CU_STREAM_NON_BLOCKING);
    EXPECT(p == greatest, "priority %d: expected clamp to %d, got %d", greatest - 100, greatest, p);
    p = created_priority(least + 7, CU_STREAM_NON_BLOCKING);
    EXPECT(p == least, "priority %d: expected clamp to %d, got %d", least + 7, least, p);

    CHECK_CU(cuStreamCreate(&s, CU_STREAM_DEFAULT));
    CHECK_CU(cuStreamGetPriority(s, &p));
    EXPECT(p == 0, "cuStreamCreate priority: expected 0, got %d", p);
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamGetPriority(s, NULL));
    CHECK_CU(cuStreamDestroy(s));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamCreateWithPriority(&s, 0x80, 0));
    return 0;
}
