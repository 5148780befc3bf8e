/* SPDX-License-Identifier: MIT */
/*
 * race_vmm_many_mappings.c - the race checker sees the physical memory behind an access that
 * spans many VMM mappings (more than it looks up at once): a memset over MAPS mappings of one
 * handle each, on one non-blocking stream, and a memset on another stream through a second
 * mapping of the last handle are a race unless the host waited for the first in between.  Each
 * program runs in a child process under ELIXIR_SIM_RACECHECK=fail.
 */
#include <string.h>

#include "memtest.h"
#include "simchild.h"

#define MAPS 80

static void program(void *arg)
{
    int sync = *(const int *)arg;
    const size_t g = MT_GRAN;
    CUmemGenericAllocationHandle h[MAPS];
    CUstream s1, s2;

    st_setup(0);
    CUdeviceptr va = mt_reserve(MAPS * g), alias = mt_reserve(g);
    for (int i = 0; i < MAPS; i++) {
        h[i] = mt_create(g, CU_MEM_LOCATION_TYPE_DEVICE, 0);
        mt_map_rw(va + i * g, g, h[i], 0);
    }
    mt_map_rw(alias, g, h[MAPS - 1], 0);
    CHECK_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemsetD8Async(va, 1, MAPS * g, s1));
    if (sync)
        CHECK_CU(cuStreamSynchronize(s1));
    CHECK_CU(cuMemsetD8Async(alias, 2, g, s2));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuStreamDestroy(s1));
    CHECK_CU(cuStreamDestroy(s2));
    CHECK_CU(cuMemUnmap(alias, g));
    CHECK_CU(cuMemAddressFree(alias, g));
    for (int i = 0; i < MAPS; i++) {
        CHECK_CU(cuMemUnmap(va + i * g, g));
        CHECK_CU(cuMemRelease(h[i]));
    }
    CHECK_CU(cuMemAddressFree(va, MAPS * g));
}

int main(void)
{
    static const char *const env[] = { "ELIXIR_SIM_RACECHECK=fail", NULL };
    static const char *const racy[] = { "race:", "memset", NULL };
    st_child_t c;

    for (int sync = 0; sync < 2; sync++) {
        st_run_child(program, &sync, env, &c);
        if (!sync) {
            st_child_expect(&c, 66, racy);
        } else {
            st_child_expect(&c, 0, NULL);
            EXPECT(!strstr(c.err, "race"), "after cuStreamSynchronize: expected no race "
                   "report, got:\n%s", c.err);
        }
        st_child_free(&c);
    }
    return 0;
}
