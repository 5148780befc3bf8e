/* SPDX-License-Identifier: MIT */
/*
 * shim_res_alloc_async.c - cuMemAllocAsync under libelixir.so allocates where the driver
 * would: "the allocation comes from the memory pool current to the stream's device" (cuda.h).
 *
 * On two devices, with device 0's primary context current, the scenario allocates 4 MiB with
 * cuMemAllocAsync on a stream of device 1 (created in device 1's primary context) and prints
 * the allocation's device ordinal and whether CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE names device
 * 1's default pool; a memset on that stream and a read back show the memory works.  Then it
 * allocates on a stream of device 0 (device 0's default pool).  Then it makes a pool it
 * created on device 0 the device's current pool (cuDeviceSetMemPool), allocates 4 MiB with
 * cuMemAllocAsync, and prints whether the allocation names that pool and whether the pool
 * counts it in use (CU_MEMPOOL_ATTR_USED_MEM_CURRENT), and after its free runs, whether it
 * counts nothing.  The test runs the scenario without the shim and under it (2 MiB chunks, a
 * 16 MiB GPU budget), where evicted chunks stay mapped and where they are unmapped; the
 * transcripts must be the same.
 */
#include "shim_test.h"
#include "simtest.h"

#define MIB (1ull << 20)
#define BYTES (4 * MIB)

static uint32_t host[BYTES / 4];

/* Print p's device ordinal and whether its pool is `pool`. */
static void show(const char *what, CUdeviceptr p, CUmemoryPool pool)
{
    int ordinal = -1;
    CUmemoryPool of = NULL;
    CHECK_CU(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
    CHECK_CU(cuPointerGetAttribute(&of, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p));
    printf("%-36s device %d, from the pool expected: %s\n", what, ordinal,
           of == pool ? "yes" : "no");
}

/* Fill p with v on stream s and read it back: it must hold v. */
static void works(const char *what, CUdeviceptr p, uint32_t v, CUstream s)
{
    CHECK_CU(cuMemsetD32Async(p, v, BYTES / 4, s));
    CHECK_CU(cuMemcpyDtoHAsync(host, p, BYTES, s));
    CHECK_CU(cuStreamSynchronize(s));
    for (size_t i = 0; i < BYTES / 4; i++)
        EXPECT(host[i] == v, "%s: word %zu is 0x%x, expected 0x%x", what, i, host[i], v);
    printf("%-36s holds what was written\n", what);
}

static cuuint64_t in_use(CUmemoryPool pool)
{
    cuuint64_t v = 0;
    CHECK_CU(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v));
    return v;
}

static void scenario(void)
{
    CUcontext ctx1, popped;
    CUstream s0, s1;
    CUmemoryPool def0, def1, own;
    CUmemPoolProps props;
    CUdeviceptr p;

    st_setup(0);
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx1, 1));
    CHECK_CU(cuCtxPushCurrent(ctx1));
    CHECK_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuCtxPopCurrent(&popped));
    CHECK_CU(cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuDeviceGetDefaultMemPool(&def0, 0));
    CHECK_CU(cuDeviceGetDefaultMemPool(&def1, 1));

    CHECK_CU(cuMemAllocAsync(&p, BYTES, s1));
    show("device 1's stream, device 0 current", p, def1);
    works("device 1's stream, device 0 current", p, 0x11111111u, s1);
    CHECK_CU(cuMemFreeAsync(p, s1));
    CHECK_CU(cuStreamSynchronize(s1));

    CHECK_CU(cuMemAllocAsync(&p, BYTES, s0));
    show("device 0's stream", p, def0);
    works("device 0's stream", p, 0x22222222u, s0);
    CHECK_CU(cuMemFreeAsync(p, s0));
    CHECK_CU(cuStreamSynchronize(s0));

    memset(&props, 0, sizeof(props));
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    CHECK_CU(cuMemPoolCreate(&own, &props));
    CHECK_CU(cuDeviceSetMemPool(0, own));
    CHECK_CU(cuMemAllocAsync(&p, BYTES, s0));
    CHECK_CU(cuDeviceSetMemPool(0, def0));
    show("the pool made current on device 0", p, own);
    printf("%-36s counted by the pool: %s\n", "the pool made current on device 0",
           in_use(own) >= BYTES ? "yes" : "no");
    works("the pool made current on device 0", p, 0x33333333u, s0);
    CHECK_CU(cuMemFreeAsync(p, s0));
    CHECK_CU(cuStreamSynchronize(s0));
    printf("%-36s the pool's count after the free: %llu\n", "the pool made current on device 0",
           (unsigned long long)in_use(own));
    CHECK_CU(cuMemPoolDestroy(own));
    CHECK_CU(cuStreamDestroy(s0));
    CHECK_CU(cuStreamDestroy(s1));
    CHECK_CU(cuDevicePrimaryCtxRelease(1));
}

static void run(const char *what, const char *host_vmm)
{
    sh_run_t plain, shim;

    sh_run_two_devices(host_vmm, "ELIXIR_GPU_MEMORY=16M", &plain, &shim);
    sh_same_transcript(what, &plain, &shim);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
