/* SPDX-License-Identifier: MIT */
/*
 * vmm_fail.c - the simulator's fault injection for the VMM calls (sim_vmm_fail, simcuda.h):
 * an armed call fails once with the error asked for and changes nothing, a failure armed at
 * an address spares the same call at other addresses, a later call succeeds, disarming tells
 * whether the failure was still waiting, and bad requests are refused.
 *
 * cuMemCreate refused once (out of memory), then made.  cuMemMap armed at the second of two
 * reserved ranges: mapping the first succeeds, the second is refused and maps nothing (its
 * address has no allocation), then succeeds.  cuMemSetAccess armed and disarmed unused
 * (disarming returns 1).  cuMemUnmap armed at the first range: refused, the mapping stays and
 * a kernel still fills it, then unmapped.  Refused requests: an unknown name, and an address
 * for cuMemCreate or cuMemRelease, which take none.
 */
#include <errno.h>

#include "memtest.h"

#define CHUNK MT_GRAN
#define WORDS (CHUNK / 4)

int main(void)
{
    CUmemGenericAllocationHandle a, b;
    CUstream s;

    st_setup(0);
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    EXPECT(sim_vmm_fail("cuMemAlloc", 0, CUDA_ERROR_UNKNOWN) == -EINVAL, "unknown name taken");
    EXPECT(sim_vmm_fail("cuMemCreate", 0x1000, CUDA_ERROR_UNKNOWN) == -EINVAL,
           "an address for cuMemCreate taken");
    EXPECT(sim_vmm_fail("cuMemRelease", 0x1000, CUDA_ERROR_UNKNOWN) == -EINVAL,
           "an address for cuMemRelease taken");

    CUmemAllocationProp prop = mt_prop(CU_MEM_LOCATION_TYPE_DEVICE, 0);
    EXPECT(sim_vmm_fail("cuMemCreate", 0, CUDA_ERROR_OUT_OF_MEMORY) == 0, "arm cuMemCreate");
    EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, cuMemCreate(&a, CHUNK, &prop, 0));
    a = mt_create(CHUNK, CU_MEM_LOCATION_TYPE_DEVICE, 0);
    b = mt_create(CHUNK, CU_MEM_LOCATION_TYPE_DEVICE, 0);
    printf("cuMemCreate refused once, then made\n");

    CUdeviceptr va = mt_reserve(CHUNK), vb = mt_reserve(CHUNK);
    EXPECT(sim_vmm_fail("cuMemMap", vb, CUDA_ERROR_INVALID_VALUE) == 0, "arm cuMemMap");
    mt_map_rw(va, CHUNK, a, 0);
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemMap(vb, CHUNK, 0, b, 0));
    CUmemGenericAllocationHandle h;
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemRetainAllocationHandle(&h, (void *)vb));
    mt_map_rw(vb, CHUNK, b, 0);
    printf("cuMemMap refused at its address only, once\n");

    EXPECT(sim_vmm_fail("cuMemSetAccess", 0, CUDA_ERROR_UNKNOWN) == 0, "arm cuMemSetAccess");
    EXPECT(sim_vmm_fail("cuMemSetAccess", 0, CUDA_SUCCESS) == 1,
           "disarming a failure that had not happened returns 1");
    mt_access(va, CHUNK, 0, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);

    EXPECT(sim_vmm_fail("cuMemUnmap", va, CUDA_ERROR_UNKNOWN) == 0, "arm cuMemUnmap");
    EXPECT_CU(CUDA_ERROR_UNKNOWN, cuMemUnmap(va, CHUNK));
    CHECK_CU(mt_fill_async(va, WORDS, 0x5a5au, s));
    CHECK_CU(cuStreamSynchronize(s));
    mt_expect_words(va, WORDS, 0x5a5au);
    EXPECT(sim_vmm_fail("cuMemUnmap", 0, CUDA_SUCCESS) == 0, "the failure had happened");
    printf("cuMemUnmap refused once, the mapping kept\n");

    CHECK_CU(cuMemUnmap(va, CHUNK));
    CHECK_CU(cuMemUnmap(vb, CHUNK));
    CHECK_CU(cuMemRelease(a));
    CHECK_CU(cuMemRelease(b));
    CHECK_CU(cuMemAddressFree(va, CHUNK));
    CHECK_CU(cuMemAddressFree(vb, CHUNK));
    CHECK_CU(cuStreamDestroy(s));
    return 0;
}
