/* SPDX-License-Identifier: MIT */
/*
 * time_alloc_costs.c - allocation and virtual-memory calls take host time on the simulator's
 * clock, as they do on a GPU (the H100's measured costs, SIM_COST_* in simcuda.h): cuMemAlloc
 * and cuMemFree a fixed cost plus one per MiB; cuMemCreate, cuMemMap, cuMemSetAccess,
 * cuMemUnmap and cuMemRelease a cost per call, per handle and per 2 MiB granule
 * (time_vmm_handles checks the shape that gives).  A call that fails takes none, nor does a
 * stream-ordered allocation from a pool.  The scenario runs in two children, one with the
 * default and one with ELIXIR_SIM_ALLOC_COSTS=0, where every call takes no host time.
 */
#include <sys/wait.h>

#include "simtest.h"

#define MIB (1ull << 20)
#define GRAN (2 * MIB)

static int failures, costs;

/* What the simulator charges a VMM call reaching `handles` handles over `granules` granules. */
#define COST(CALL, handles, granules)                                                         \
    (SIM_COST_##CALL##_CALL_US + SIM_COST_##CALL##_HANDLE_US * (handles) +                    \
     SIM_COST_##CALL##_GRANULE_US * (granules))

/* The host clock moved by `want` microseconds (0 without costs) across `call`. */
#define CHARGED(what, want, call)                                                             \
    do {                                                                                      \
        uint64_t t0_ = sim_activity_clock();                                                  \
        call;                                                                                 \
        double got_ = (double)(sim_activity_clock() - t0_) / 1000.0;                          \
        double exp_ = costs ? (want) : 0.0;                                                   \
        if (got_ < exp_ - 0.01 || got_ > exp_ + 0.01) {                                       \
            printf("FAIL %s: the host clock moved %.3f us, expected %.3f\n", what, got_,      \
                   exp_);                                                                     \
            failures++;                                                                       \
        }                                                                                     \
    } while (0)

static void allocations(void)
{
    CUdeviceptr a, b;
    CUstream s;
    CHARGED("cuMemAlloc 1 MiB", SIM_COST_ALLOC_US + SIM_COST_ALLOC_US_MIB,
            CHECK_CU(cuMemAlloc(&a, MIB)));
    CHARGED("cuMemAlloc 64 MiB", SIM_COST_ALLOC_US + 64 * SIM_COST_ALLOC_US_MIB,
            CHECK_CU(cuMemAlloc(&b, 64 * MIB)));
    CHARGED("cuMemFree 1 MiB", SIM_COST_ALLOC_US + SIM_COST_ALLOC_US_MIB,
            CHECK_CU(cuMemFree(a)));
    CHARGED("cuMemFree of an interior pointer (refused)", 0,
            EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFree(b + 4096)));
    CHARGED("cuMemFree 64 MiB", SIM_COST_ALLOC_US + 64 * SIM_COST_ALLOC_US_MIB,
            CHECK_CU(cuMemFree(b)));
    CHARGED("cuMemAlloc of 2 TiB (refused)", 0,
            EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc(&a, 2ull << 40)));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    /* A stream-ordered allocation comes from the pool, at no allocation cost. */
    CHARGED("cuMemAllocAsync 1 MiB", 0, CHECK_CU(cuMemAllocAsync(&a, MIB, s)));
    CHECK_CU(cuMemFreeAsync(a, s));
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuStreamDestroy(s));
}

static void virtual_memory(void)
{
    CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                 .location = { CU_MEM_LOCATION_TYPE_DEVICE, 0 } };
    CUmemAccessDesc rw = { { CU_MEM_LOCATION_TYPE_DEVICE, 0 }, CU_MEM_ACCESS_FLAGS_PROT_READWRITE };
    CUmemGenericAllocationHandle h;
    CUdeviceptr va;
    CHARGED("cuMemCreate 4 MiB", COST(CREATE, 1, 2),
            CHECK_CU(cuMemCreate(&h, 2 * GRAN, &prop, 0)));
    CHARGED("cuMemAddressReserve", 0, CHECK_CU(cuMemAddressReserve(&va, 4 * GRAN, 0, 0, 0)));
    CHARGED("cuMemMap 4 MiB", COST(MAP, 1, 2), CHECK_CU(cuMemMap(va, 2 * GRAN, 0, h, 0)));
    CHARGED("cuMemMap over a mapping (refused)", 0,
            EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemMap(va, 2 * GRAN, 0, h, 0)));
    CHARGED("cuMemSetAccess 4 MiB", COST(ACCESS, 1, 2),
            CHECK_CU(cuMemSetAccess(va, 2 * GRAN, &rw, 1)));
    CHARGED("cuMemUnmap of half a mapping (refused)", 0,
            EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemUnmap(va, GRAN)));
    CHARGED("cuMemUnmap 4 MiB", COST(UNMAP, 1, 2), CHECK_CU(cuMemUnmap(va, 2 * GRAN)));
    CHARGED("cuMemRelease 4 MiB", COST(RELEASE, 1, 2), CHECK_CU(cuMemRelease(h)));
    CHARGED("cuMemRelease of no handle (refused)", 0,
            EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemRelease(0)));
    CHECK_CU(cuMemAddressFree(va, 4 * GRAN));
}

/* One child: the scenario with the costs on or off. */
static int scenario(int on)
{
    if (!on)
        setenv("ELIXIR_SIM_ALLOC_COSTS", "0", 1);
    else
        unsetenv("ELIXIR_SIM_ALLOC_COSTS");
    costs = on;
    st_setup(0);
    allocations();
    virtual_memory();
    printf("%s with the costs %s\n", failures ? "FAILED" : "ok", on ? "on" : "off");
    fflush(stdout);
    return failures ? 1 : 0;
}

int main(void)
{
    int rc = 0;
    for (int on = 1; on >= 0; on--) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0)
            _exit(scenario(on));
        int st = 0;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
            printf("FAIL: the scenario with the costs %s (status 0x%x)\n", on ? "on" : "off",
                   st);
            rc = 1;
        }
    }
    return rc;
}
