/* SPDX-License-Identifier: MIT */
/*
 * vmm_alias_race.c - the race checker sees physical memory, not addresses.  One allocation
 * mapped at two addresses is the same bytes: a kernel writing it through one mapping and a
 * copy reading it through the other, on two streams with nothing ordering them, race, and the
 * report names the physical allocation.  An event between them orders them (no race); two
 * different allocations at the two addresses never race.  Each case runs in a child process
 * with ELIXIR_SIM_RACECHECK=fail (a race exits with status 66).
 */
#include "memtest.h"
#include "simchild.h"

enum { ALIAS, ALIAS_ORDERED, DISTINCT };

static void write_then_read(void *arg)
{
    int how = *(int *)arg;
    CUstream a, b;
    CUevent e;
    CUdeviceptr out;

    st_setup(0);
    CHECK_CU(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    CHECK_CU(cuMemAlloc(&out, MT_GRAN));
    CUdeviceptr va1 = mt_reserve(MT_GRAN), va2 = mt_reserve(MT_GRAN);
    CUmemGenericAllocationHandle h1 = mt_create(MT_GRAN, CU_MEM_LOCATION_TYPE_DEVICE, 0);
    CUmemGenericAllocationHandle h2 =
        how == DISTINCT ? mt_create(MT_GRAN, CU_MEM_LOCATION_TYPE_DEVICE, 0) : h1;
    mt_map_rw(va1, MT_GRAN, h1, 0);
    mt_map_rw(va2, MT_GRAN, h2, 0);
    CHECK_CU(mt_fill_async(va1, MT_GRAN / 4, 7, a));
    if (how == ALIAS_ORDERED) {
        CHECK_CU(cuEventRecord(e, a));
        CHECK_CU(cuStreamWaitEvent(b, e, 0));
    }
    CHECK_CU(cuMemcpyDtoDAsync(out, va2, MT_GRAN, b));
    CHECK_CU(cuCtxSynchronize());
    if (how != DISTINCT)
        mt_expect_words(out, MT_GRAN / 4, 7);
    CHECK_CU(cuMemUnmap(va1, MT_GRAN));
    CHECK_CU(cuMemUnmap(va2, MT_GRAN));
    CHECK_CU(cuMemRelease(h1));
    if (h2 != h1)
        CHECK_CU(cuMemRelease(h2));
    CHECK_CU(cuMemFree(out));
}

static void run(int how, const char *exec, int status, const char *const *needles)
{
    const char *const env[] = { "ELIXIR_SIM_RACECHECK=fail", exec, NULL };
    st_child_t c;
    st_run_child(write_then_read, &how, env, &c);
    st_child_expect(&c, status, needles);
    st_child_free(&c);
}

int main(void)
{
    static const char *const race[] = { "race", "physical allocation", "mt_fill", "memcpy",
                                        NULL };

    run(ALIAS, "ELIXIR_SIM_EXEC=async", 66, race);
    run(ALIAS, "ELIXIR_SIM_EXEC=lazy", 66, race);
    run(ALIAS_ORDERED, "ELIXIR_SIM_EXEC=async", 0, NULL);
    run(DISTINCT, "ELIXIR_SIM_EXEC=async", 0, NULL);
    return 0;
}
