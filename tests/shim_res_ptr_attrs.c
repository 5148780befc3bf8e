/* SPDX-License-Identifier: MIT */
/*
 * shim_res_ptr_attrs.c - pointer attributes and address ranges of arena memory, resident and
 * paged out, are what the driver reports for cuMemAlloc memory.
 *
 * The scenario allocates a 4 MiB buffer (two chunks) and an 8 KiB one (a slot of a shared
 * chunk) and queries, for the base, an interior pointer in the second chunk and the last
 * byte of the large one and for the middle of the small one: cuPointerGetAttribute for each
 * attribute that describes cuMemAlloc memory, cuPointerGetAttributes for a list of them, and
 * cuMemGetAddressRange.  With a 6 MiB GPU budget these three chunks are resident.  Then it
 * allocates 6 MiB more, which pages every earlier chunk out to host memory, and queries
 * again.  Each line prints a result code
 * and a value made independent of where the memory lies (offsets from the allocation, "the
 * current context").  The test runs the scenario without the shim and under it; the two
 * transcripts must be the same, and the shim's statistics must show the three earlier chunks
 * paged out and none brought back, so the second round really saw host-backed memory.  It
 * runs on device 0 of one and on device 1 of two (the device ordinal must be 1 there), and
 * on device 0 where evicted chunks are unmapped: there the attributes the driver answers
 * (sync memops, access flags, mempool) need the chunk's mapping, which the shim maps back
 * first, so the transcript is the same and chunks come back in.
 */
#include "shim_test.h"
#include "simtest.h"

#define MIB (1ull << 20)

static const struct {
    CUpointer_attribute a;
    const char *name;
} attrs[] = {
    { CU_POINTER_ATTRIBUTE_CONTEXT, "context" },
    { CU_POINTER_ATTRIBUTE_MEMORY_TYPE, "memory type" },
    { CU_POINTER_ATTRIBUTE_DEVICE_POINTER, "device pointer" },
    { CU_POINTER_ATTRIBUTE_HOST_POINTER, "host pointer" },
    { CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, "sync memops" },
    { CU_POINTER_ATTRIBUTE_IS_MANAGED, "is managed" },
    { CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, "device ordinal" },
    { CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, "range start" },
    { CU_POINTER_ATTRIBUTE_RANGE_SIZE, "range size" },
    { CU_POINTER_ATTRIBUTE_MAPPED, "mapped" },
    { CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, "access flags" },
    { CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, "mempool" },
};
#define NATTRS (sizeof(attrs) / sizeof(attrs[0]))

static CUcontext ctx;

/* An attribute's value as printed: pointers relative to base, the context as a yes/no. */
static long long shown(CUpointer_attribute a, unsigned long long v, CUdeviceptr base)
{
    switch (a) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: return v == (uintptr_t)ctx;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: return v ? (long long)(v - base) : -1;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
    case CU_POINTER_ATTRIBUTE_MAPPED: return (int)(unsigned)v;  /* 4-byte attributes */
    default: return (long long)v;
    }
}

/* Every attribute of p (in allocation base, base + off) one by one, then as one list. */
static void query(const char *label, CUdeviceptr base, size_t off)
{
    CUdeviceptr p = base + off, rb = 0;
    unsigned long long v[NATTRS];
    void *data[NATTRS];
    CUpointer_attribute list[NATTRS];
    size_t rs = 0;
    CUresult r;

    for (size_t i = 0; i < NATTRS; i++) {
        unsigned long long one = 0;
        r = cuPointerGetAttribute(&one, attrs[i].a, p);
        printf("%-18s +%-8zu %-15s %-26s %lld\n", label, off, attrs[i].name, st_err(r),
               r == CUDA_SUCCESS ? shown(attrs[i].a, one, base) : 0);
        v[i] = 0;
        data[i] = &v[i];
        list[i] = attrs[i].a;
    }
    r = cuPointerGetAttributes(NATTRS, list, data, p);
    printf("%-18s +%-8zu %-15s %s\n", label, off, "attributes", st_err(r));
    for (size_t i = 0; i < NATTRS && r == CUDA_SUCCESS; i++)
        printf("%-18s +%-8zu  list: %-15s %lld\n", label, off, attrs[i].name,
               shown(attrs[i].a, v[i], base));
    r = cuMemGetAddressRange(&rb, &rs, p);
    printf("%-18s +%-8zu %-15s %-26s %lld %zu\n", label, off, "address range", st_err(r),
           (long long)(rb - base), rs);
}

static void query_all(const char *when, CUdeviceptr big, CUdeviceptr small)
{
    char label[32];

    snprintf(label, sizeof(label), "%s big", when);
    query(label, big, 0);
    query(label, big, 3 * MIB + 12345);
    query(label, big, 4 * MIB - 1);
    snprintf(label, sizeof(label), "%s small", when);
    query(label, small, 0);
    query(label, small, 5000);
}

static void scenario(void)
{
    CUdeviceptr big, small, more, extra;

    const char *dev = getenv("PTR_ATTRS_DEVICE");
    ctx = st_setup(dev ? atoi(dev) : 0);
    CHECK_CU(cuMemAlloc(&big, 4 * MIB));
    CHECK_CU(cuMemsetD32(big, 0x12345678, MIB));
    CHECK_CU(cuMemAlloc(&small, 8192));
    CHECK_CU(cuMemsetD8(small, 0x5a, 8192));
    query_all("resident", big, small);
    CHECK_CU(cuMemAlloc(&more, 4 * MIB));
    CHECK_CU(cuMemAlloc(&extra, 2 * MIB));
    query_all("paged out", big, small);
    CHECK_CU(cuMemFree(extra));
    CHECK_CU(cuMemFree(more));
    CHECK_CU(cuMemFree(small));
    CHECK_CU(cuMemFree(big));
}

/* The scenario on device `dev` of `devices`, without the shim and under it; `unmapped`:
 * with ELIXIR_SIM_HOST_VMM=0. */
static void run(const char *devices, const char *dev, int unmapped)
{
    const char *host_vmm = unmapped ? "ELIXIR_SIM_HOST_VMM=0" : "ELIXIR_SIM_HOST_VMM=1";
    const char *plain_env[] = { devices, dev, host_vmm, NULL };
    const char *env[] = { devices, dev, host_vmm, "ELIXIR_GPU_MEMORY=6M", "ELIXIR_STATS=1",
                          NULL };
    sh_run_t plain = sh_run_plain_ok(plain_env), shim = sh_run_ok("scenario", env);
    long long out = sh_stat(shim.err, "migrations to host "), in = sh_stat(shim.err, "to GPU ");

    if (unmapped)
        EXPECT(out > 3 && in > 0, "%s, unmapped: expected the earlier chunks paged out, and "
               "mapped back for the attributes the driver answers:\n%s", dev, shim.err);
    else
        EXPECT(out == 3 && in == 0, "%s: expected the three earlier chunks paged out and none "
               "back:\n%s", dev, shim.err);
    sh_compare(plain.out, shim.out);
    printf("%s%s:\n%s", dev, unmapped ? ", evicted chunks unmapped" : "", shim.out);
    sh_run_free(&plain);
    sh_run_free(&shim);
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    run("ELIXIR_SIM_DEVICES=1", "PTR_ATTRS_DEVICE=0", 0);
    run("ELIXIR_SIM_DEVICES=2", "PTR_ATTRS_DEVICE=1", 0);
    run("ELIXIR_SIM_DEVICES=1", "PTR_ATTRS_DEVICE=0", 1);
    return 0;
}
