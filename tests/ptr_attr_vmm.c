/* SPDX-License-Identifier: MIT */
/*
 * ptr_attr_vmm.c - pointer attributes of VMM memory on a two-device machine
 * (ELIXIR_SIM_DEVICES=2; the test re-executes itself).  Memory created on device 1 and mapped
 * is device memory of device ordinal 1; memory created on the host is host memory, with a host
 * pointer.  RANGE_START_ADDR and RANGE_SIZE give "the mappable address range ... from
 * cuMemAddressReserve", MAPPING_BASE_ADDR and MAPPING_SIZE the mapping; MEMORY_BLOCK_ID
 * identifies the physical allocation (shared by two mappings of it); ALLOWED_HANDLE_TYPES are
 * those it was created with; ACCESS_FLAGS are those of the current context's device.  A
 * reserved address with nothing mapped is known but not mapped.
 */
#include "memtest.h"
#include "simchild.h"

static uint64_t attr(CUpointer_attribute a, CUdeviceptr p)
{
    uint64_t v = 0;
    CHECK_CU(cuPointerGetAttribute(&v, a, p));
    return v;
}

static uint32_t attr32(CUpointer_attribute a, CUdeviceptr p)
{
    uint32_t v = 0;
    CHECK_CU(cuPointerGetAttribute(&v, a, p));
    return v;
}

/* Inside the mapping of `dev` (created on device 1, shareable) at va + 2g, aliased at alias. */
static void check_device_located(CUcontext c0, CUcontext c1, CUdeviceptr va, CUdeviceptr alias)
{
    const size_t g = MT_GRAN;
    CUdeviceptr p = va + 3 * g + 100;
    void *host;

    EXPECT(attr32(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) == CU_MEMORYTYPE_DEVICE, "device type");
    EXPECT(attr32(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p) == 1, "device ordinal %u",
           attr32(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
    EXPECT(attr(CU_POINTER_ATTRIBUTE_DEVICE_POINTER, p) == p, "device pointer");
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
              cuPointerGetAttribute(&host, CU_POINTER_ATTRIBUTE_HOST_POINTER, p));
    EXPECT(attr32(CU_POINTER_ATTRIBUTE_MAPPED, p) == 1, "mapped");
    EXPECT(attr(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p) == va, "range start 0x%llx, va 0x%llx",
           (unsigned long long)attr(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p),
           (unsigned long long)va);
    EXPECT(attr(CU_POINTER_ATTRIBUTE_RANGE_SIZE, p) == 8 * g, "range size %llu",
           (unsigned long long)attr(CU_POINTER_ATTRIBUTE_RANGE_SIZE, p));
    EXPECT(attr(CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, p) == va + 2 * g, "mapping base 0x%llx",
           (unsigned long long)attr(CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, p));
    EXPECT(attr(CU_POINTER_ATTRIBUTE_MAPPING_SIZE, p) == 2 * g, "mapping size %llu",
           (unsigned long long)attr(CU_POINTER_ATTRIBUTE_MAPPING_SIZE, p));
    EXPECT(attr(CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, p) ==
           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, "handle types %llu",
           (unsigned long long)attr(CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, p));
    EXPECT(attr(CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID, p) ==
           attr(CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID, alias + 5), "aliases differ in block id");
    EXPECT(attr(CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID, p) !=
           attr(CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID, va + 4 * g), "allocations share block id");
    /* Access only for device 1: none from device 0's context, read-write from device 1's. */
    EXPECT(attr(CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, p) == CU_POINTER_ATTRIBUTE_ACCESS_FLAG_NONE,
           "access from device 0: %llu",
           (unsigned long long)attr(CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, p));
    CHECK_CU(cuCtxSetCurrent(c1));
    EXPECT(attr(CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, p) == CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE,
           "access from device 1");
    CHECK_CU(cuCtxSetCurrent(c0));
}

/* Inside the host-located mapping at va + 4g, accessible to device 0. */
static void check_host_located(CUdeviceptr va)
{
    CUdeviceptr q = va + 5 * MT_GRAN;
    EXPECT(attr32(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, q) == CU_MEMORYTYPE_HOST, "host type %u",
           attr32(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, q));
    EXPECT(attr(CU_POINTER_ATTRIBUTE_HOST_POINTER, q) == q, "host pointer");
    EXPECT(attr(CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, q) == 0, "host handle types");
    EXPECT(attr(CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, q) == va + 4 * MT_GRAN,
           "host mapping base");
    EXPECT(attr(CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, q) == CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE,
           "host mapping access from device 0");
}

/* Reserved, nothing mapped: known, not mapped; cuPointerGetAttributes does not fail. */
static void check_unmapped(CUdeviceptr p)
{
    CUpointer_attribute attrs[] = { CU_POINTER_ATTRIBUTE_MAPPED, CU_POINTER_ATTRIBUTE_MEMORY_TYPE };
    int mapped = 99;
    unsigned type = 99;
    void *data[] = { &mapped, &type };
    CHECK_CU(cuPointerGetAttributes(2, attrs, data, p));
    EXPECT(mapped == 0 && type == 0, "unmapped reserved address: mapped %d, type %u", mapped,
           type);
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
              cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p));
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_SIM_DEVICES=2", NULL };
    const size_t g = MT_GRAN;

    st_reexec(argv, env);
    CUcontext c0 = st_setup(0), c1;
    CHECK_CU(cuDevicePrimaryCtxRetain(&c1, 1));
    CUdeviceptr va = mt_reserve(8 * g), alias = mt_reserve(2 * g);
    CUmemAllocationProp prop = mt_prop(CU_MEM_LOCATION_TYPE_DEVICE, 1);
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CUmemGenericAllocationHandle dev, hst;
    CHECK_CU(cuMemCreate(&dev, 2 * g, &prop, 0));
    hst = mt_create(2 * g, CU_MEM_LOCATION_TYPE_HOST, 0);
    mt_map_rw(va + 2 * g, 2 * g, dev, 1);
    mt_map_rw(va + 4 * g, 2 * g, hst, 0);
    mt_map_rw(alias, 2 * g, dev, 1);

    check_device_located(c0, c1, va, alias);
    check_host_located(va);
    check_unmapped(va + g);

    CHECK_CU(cuMemUnmap(va + 2 * g, 4 * g));
    CHECK_CU(cuMemUnmap(alias, 2 * g));
    CHECK_CU(cuMemRelease(dev));
    CHECK_CU(cuMemRelease(hst));
    CHECK_CU(cuMemAddressFree(va, 8 * g));
    CHECK_CU(cuMemAddressFree(alias, 2 * g));
    return 0;
}
