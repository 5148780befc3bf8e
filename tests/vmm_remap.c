/* SPDX-License-Identifier: MIT */
/*
 * vmm_remap.c - the pointer stays, the memory behind it changes.  After cuMemUnmap, mapping
 * a different allocation at the same virtual address shows that allocation's contents.  This
 * is how the shim migrates a chunk between device memory and host memory: copy the chunk
 * into the new physical memory (mapped at a temporary address), wait for the copy by event,
 * unmap the old memory, map the new memory at the chunk's address and grant access.  The
 * test moves a chunk device -> host -> device this way while kernels keep using the same
 * pointer, and checks the device memory is charged only while device memory backs it.
 */
#include "memtest.h"

#define CHUNK (2 * MT_GRAN)
#define WORDS (CHUNK / 4)

/* Give `va` (mapped, CHUNK bytes) the physical memory `to`, keeping its contents. */
static void migrate(CUdeviceptr va, CUmemGenericAllocationHandle to, CUstream s)
{
    CUevent copied;
    CUdeviceptr tmp = mt_reserve(CHUNK);
    mt_map_rw(tmp, CHUNK, to, 0);
    CHECK_CU(cuEventCreate(&copied, CU_EVENT_DISABLE_TIMING));
    CHECK_CU(cuMemcpyDtoDAsync(tmp, va, CHUNK, s));
    CHECK_CU(cuEventRecord(copied, s));
    CHECK_CU(cuEventSynchronize(copied));
    CHECK_CU(cuMemUnmap(va, CHUNK));
    mt_map_rw(va, CHUNK, to, 0);
    CHECK_CU(cuMemUnmap(tmp, CHUNK));
    CHECK_CU(cuMemAddressFree(tmp, CHUNK));
    CHECK_CU(cuEventDestroy(copied));
}

static void expect_count(CUdeviceptr va, uint32_t v, CUdeviceptr out, CUstream s)
{
    uint64_t hits = 0;
    CHECK_CU(mt_count_async(va, WORDS, v, out, s));
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuMemcpyDtoH(&hits, out, sizeof(hits)));
    EXPECT(hits == WORDS, "kernel found 0x%x in %llu of %llu words", v,
           (unsigned long long)hits, (unsigned long long)WORDS);
}

int main(void)
{
    CUdeviceptr out;
    CUstream s;

    st_setup(0);
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&out, 8));
    size_t used = mt_used();

    /* Plain remap: the new allocation's contents appear at the old address. */
    CUdeviceptr va = mt_reserve(CHUNK), side = mt_reserve(CHUNK);
    CUmemGenericAllocationHandle a = mt_create(CHUNK, CU_MEM_LOCATION_TYPE_DEVICE, 0);
    CUmemGenericAllocationHandle b = mt_create(CHUNK, CU_MEM_LOCATION_TYPE_DEVICE, 0);
    mt_map_rw(va, CHUNK, a, 0);
    mt_map_rw(side, CHUNK, b, 0);
    CHECK_CU(mt_fill_async(va, WORDS, 0xaaaau, s));
    CHECK_CU(mt_fill_async(side, WORDS, 0xbbbbu, s));
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuMemUnmap(va, CHUNK));
    mt_map_rw(va, CHUNK, b, 0);
    expect_count(va, 0xbbbbu, out, s);
    CHECK_CU(cuMemUnmap(va, CHUNK));
    mt_map_rw(va, CHUNK, a, 0);
    expect_count(va, 0xaaaau, out, s);
    CHECK_CU(cuMemUnmap(side, CHUNK));
    CHECK_CU(cuMemAddressFree(side, CHUNK));
    CHECK_CU(cuMemRelease(b));
    CHECK_CU(cuMemRelease(a));     /* still mapped at va */
    EXPECT(mt_used() == used + CHUNK, "in use with one chunk on the device: %zu", mt_used());

    /* Evict to host memory: same pointer, same contents, device memory given back. */
    CUmemGenericAllocationHandle host = mt_create(CHUNK, CU_MEM_LOCATION_TYPE_HOST, 0);
    migrate(va, host, s);
    CHECK_CU(cuMemRelease(host));
    EXPECT(mt_used() == used, "in use with the chunk on the host: %zu, %zu before", mt_used(),
           used);
    expect_count(va, 0xaaaau, out, s);
    CHECK_CU(mt_fill_async(va, WORDS, 0xccccu, s));    /* kernels write host memory */
    CHECK_CU(cuStreamSynchronize(s));

    /* And back to device memory. */
    CUmemGenericAllocationHandle dev = mt_create(CHUNK, CU_MEM_LOCATION_TYPE_DEVICE, 0);
    migrate(va, dev, s);
    CHECK_CU(cuMemRelease(dev));
    EXPECT(mt_used() == used + CHUNK, "in use with the chunk back on the device: %zu", mt_used());
    expect_count(va, 0xccccu, out, s);
    mt_expect_words(va, WORDS, 0xccccu);

    CHECK_CU(cuMemUnmap(va, CHUNK));
    EXPECT(mt_used() == used, "in use after the last unmap: %zu", mt_used());
    CHECK_CU(cuMemAddressFree(va, CHUNK));
    CHECK_CU(cuMemFree(out));
    CHECK_CU(cuStreamDestroy(s));
    return 0;
}
