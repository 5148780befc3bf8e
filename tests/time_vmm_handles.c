/* SPDX-License-Identifier: MIT */
/*
 * time_vmm_handles.c - the simulator charges cuMemMap, cuMemSetAccess and cuMemUnmap the way
 * the driver's costs grow: per physical allocation (handle) reached, hardly per granule.
 * Moving a 2 MiB chunk between device handles (unmap, map, set access) costs about 99 us of
 * host time, and evicting it to a host-located handle mapped at the same address about 142 us,
 * as on an H200 (docs/simulator.md); mapping one 20 MiB handle costs far less than ten 2 MiB
 * handles over the same range (pytorch/pytorch PR 96995: ten times), and not much more than
 * one 2 MiB handle.
 */
#include "simtest.h"

#define MIB (1ull << 20)
#define GRAN (2 * MIB)

static CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                    .location = { CU_MEM_LOCATION_TYPE_DEVICE, 0 } };
static CUmemAccessDesc rw = { { CU_MEM_LOCATION_TYPE_DEVICE, 0 },
                              CU_MEM_ACCESS_FLAGS_PROT_READWRITE };

/* Host time (us) of mapping `n` handles of `gran` granules each at va, setting access over
 * all of them with one call and unmapping them with one call. */
static double map_access_unmap(CUdeviceptr va, const CUmemGenericAllocationHandle *h, int n,
                               int gran)
{
    uint64_t t0 = sim_activity_clock();
    for (int i = 0; i < n; i++)
        CHECK_CU(cuMemMap(va + (CUdeviceptr)i * gran * GRAN, (size_t)gran * GRAN, 0, h[i], 0));
    CHECK_CU(cuMemSetAccess(va, (size_t)n * gran * GRAN, &rw, 1));
    CHECK_CU(cuMemUnmap(va, (size_t)n * gran * GRAN));
    return (double)(sim_activity_clock() - t0) / 1000.0;
}

/* Host time (us) of `n` chunks of `gran` granules moved one by one: each unmapped, mapped
 * again and given access, as a migration does. */
static double move_each(CUdeviceptr va, const CUmemGenericAllocationHandle *h, int n, int gran)
{
    size_t size = (size_t)gran * GRAN;
    for (int i = 0; i < n; i++) {
        CHECK_CU(cuMemMap(va + i * size, size, 0, h[i], 0));
        CHECK_CU(cuMemSetAccess(va + i * size, size, &rw, 1));
    }
    uint64_t t0 = sim_activity_clock();
    for (int i = 0; i < n; i++) {
        CHECK_CU(cuMemUnmap(va + i * size, size));
        CHECK_CU(cuMemMap(va + i * size, size, 0, h[i], 0));
        CHECK_CU(cuMemSetAccess(va + i * size, size, &rw, 1));
    }
    double us = (double)(sim_activity_clock() - t0) / 1000.0;
    CHECK_CU(cuMemUnmap(va, (size_t)n * size));
    return us;
}

int main(void)
{
    CUmemGenericAllocationHandle small[10], big;
    CUdeviceptr va;

    if (!st_simulated())
        return TEST_SKIP;
    st_setup(0);
    for (int i = 0; i < 10; i++)
        CHECK_CU(cuMemCreate(&small[i], GRAN, &prop, 0));
    CHECK_CU(cuMemCreate(&big, 10 * GRAN, &prop, 0));
    CHECK_CU(cuMemAddressReserve(&va, 10 * GRAN, 0, 0, 0));

    double chunk = move_each(va, small, 1, 1);
    EXPECT(chunk >= 92 && chunk <= 106,
           "unmap + map + set access of one 2 MiB chunk near the H200's 99 us, got %.2f us",
           chunk);
    /* An eviction that keeps the address mapped: the device handle unmapped, a host-located
     * one mapped in its place and given access. */
    CUmemAllocationProp host_prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                      .location = { CU_MEM_LOCATION_TYPE_HOST, 0 } };
    CUmemGenericAllocationHandle host;
    CHECK_CU(cuMemCreate(&host, GRAN, &host_prop, 0));
    CHECK_CU(cuMemMap(va, GRAN, 0, small[0], 0));
    CHECK_CU(cuMemSetAccess(va, GRAN, &rw, 1));
    uint64_t t0 = sim_activity_clock();
    CHECK_CU(cuMemUnmap(va, GRAN));
    CHECK_CU(cuMemMap(va, GRAN, 0, host, 0));
    CHECK_CU(cuMemSetAccess(va, GRAN, &rw, 1));
    double evict = (double)(sim_activity_clock() - t0) / 1000.0;
    t0 = sim_activity_clock();
    CHECK_CU(cuMemUnmap(va, GRAN));
    CHECK_CU(cuMemMap(va, GRAN, 0, small[0], 0));
    CHECK_CU(cuMemSetAccess(va, GRAN, &rw, 1));
    double back = (double)(sim_activity_clock() - t0) / 1000.0;
    CHECK_CU(cuMemUnmap(va, GRAN));
    CHECK_CU(cuMemRelease(host));
    EXPECT(evict >= 133 && evict <= 151 && back >= 115 && back <= 131,
           "a chunk evicted to host memory mapped in its place near the H200's 142 us, and "
           "back near 123 us; got %.2f and %.2f us", evict, back);
    double ten = map_access_unmap(va, small, 10, 1);
    double one = map_access_unmap(va, &big, 1, 10);
    double one_small = map_access_unmap(va, small, 1, 1);
    printf("map + access + unmap: ten 2 MiB handles %.2f us, one 20 MiB handle %.2f us, "
           "one 2 MiB handle %.2f us; a 2 MiB chunk moved %.2f us, evicted to host memory "
           "%.2f us and back %.2f us\n", ten, one, one_small, chunk, evict, back);
    EXPECT(ten >= 6 * one, "ten 2 MiB handles at least 6x one 20 MiB handle (PR 96995: 10x): "
           "%.2f us against %.2f us", ten, one);
    EXPECT(one <= 1.5 * one_small, "one 20 MiB handle at most 1.5x one 2 MiB handle: %.2f us "
           "against %.2f us", one, one_small);
    EXPECT(one > one_small, "more granules cost something: %.2f us against %.2f us", one,
           one_small);
    double each = move_each(va, small, 10, 1);
    EXPECT(each >= 9.9 * chunk && each <= 10.1 * chunk,
           "ten chunks moved one by one ten times one: %.2f us against %.2f us", each, chunk);

    CHECK_CU(cuMemAddressFree(va, 10 * GRAN));
    for (int i = 0; i < 10; i++)
        CHECK_CU(cuMemRelease(small[i]));
    CHECK_CU(cuMemRelease(big));
    return 0;
}
