/* SPDX-License-Identifier: MIT */
/*
 * shim_res_ptr_identity.c - what pointer queries say about which allocation an address is,
 * under libelixir.so as without it: the allocation's own buffer ID, never one a freed
 * allocation had, its own context, and nothing at all once it is freed.
 *
 * cuda.h: every allocation has a buffer ID unique over the process's lifetime ("subsequent
 * allocations do not reuse IDs from previous freed allocations"; registration caches such as
 * MPI's rely on it), CU_POINTER_ATTRIBUTE_CONTEXT is the context in which the memory was
 * allocated, and cuPointerGetAttributes "will not return an error when the ptr encountered
 * is not a valid CUDA pointer": it lists default values and returns CUDA_SUCCESS, where
 * cuPointerGetAttribute fails with CUDA_ERROR_INVALID_VALUE.  Under the shim a freed
 * address still lies in the arena's reservation, and often in a chunk the shim keeps mapped
 * (a slab chunk with live neighbours, a parked chunk), which the driver would describe.
 *
 * The scenario allocates a 4 MiB buffer (two chunks under the shim) and two 8 KiB ones (slots
 * of one shared chunk), and prints whether each has a buffer ID of its own, the same at its
 * base and at its last byte.  It frees the large buffer and the first small one and allocates
 * them again (the shim's arena hands out the same addresses), and prints whether the new IDs
 * are new; so it does for a 4 MiB cuMemAllocAsync freed with cuMemFreeAsync (the shim takes
 * the range back once the stream passed the free).  In a second context on the device
 * (cuCtxCreate) it allocates one buffer of each kind, and prints whether
 * CU_POINTER_ATTRIBUTE_CONTEXT names the context each buffer was allocated in, one by one and
 * in a list (under the shim both contexts allocate from the device's one arena).  With no
 * context current it queries the attributes of the large and a small buffer that describe
 * the allocation and the device pointer, which cuda.h says needs a current context
 * (CUDA_ERROR_INVALID_CONTEXT), one by one and as one list, and their address ranges
 * (cuMemGetAddressRange, which needs one too), and prints the result codes, as
 * it does for lists of the large buffer's attributes that the driver refuses whatever the
 * pointer (no attributes, an unknown one, a NULL output).  Then it
 * frees the first buffers once more, the first small one's chunk still holding the second,
 * and queries every attribute of the freed addresses, one by one (result codes) and as one
 * list (result code and values).  The test runs the scenario without the shim and
 * under it, where evicted chunks stay mapped and where they are unmapped; the transcripts
 * must be the same.
 */
#include "shim_test.h"
#include "simtest.h"

#define MIB (1ull << 20)
#define SMALL 8192

static const struct {
    CUpointer_attribute a;
    const char *name;
} attrs[] = {
    { CU_POINTER_ATTRIBUTE_CONTEXT, "context" },
    { CU_POINTER_ATTRIBUTE_MEMORY_TYPE, "memory type" },
    { CU_POINTER_ATTRIBUTE_DEVICE_POINTER, "device pointer" },
    { CU_POINTER_ATTRIBUTE_HOST_POINTER, "host pointer" },
    { CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, "sync memops" },
    { CU_POINTER_ATTRIBUTE_BUFFER_ID, "buffer id" },
    { CU_POINTER_ATTRIBUTE_IS_MANAGED, "is managed" },
    { CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, "device ordinal" },
    { CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, "legacy ipc" },
    { CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, "range start" },
    { CU_POINTER_ATTRIBUTE_RANGE_SIZE, "range size" },
    { CU_POINTER_ATTRIBUTE_MAPPED, "mapped" },
    { CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, "handle types" },
    { CU_POINTER_ATTRIBUTE_ACCESS_FLAGS, "access flags" },
    { CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, "mempool" },
    { CU_POINTER_ATTRIBUTE_MAPPING_SIZE, "mapping size" },
    { CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, "mapping base" },
    { CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID, "block id" },
};
#define NATTRS (sizeof(attrs) / sizeof(attrs[0]))

/* Every buffer ID handed out so far, to tell whether one is new. */
static unsigned long long ids[64];
static unsigned nids;

static unsigned long long buffer_id(CUdeviceptr p)
{
    unsigned long long id = 0;
    CHECK_CU(cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, p));
    return id;
}

/* Print whether the allocation at p (bytes long) has a buffer ID no other allocation had,
 * the same at its last byte; remember it. */
static void expect_new_id(const char *what, CUdeviceptr p, size_t bytes)
{
    unsigned long long id = buffer_id(p);
    int fresh = id != 0;
    for (unsigned i = 0; i < nids; i++)
        fresh &= ids[i] != id;
    if (nids < sizeof(ids) / sizeof(ids[0]))
        ids[nids++] = id;
    printf("%-28s buffer id new: %s, the same inside: %s\n", what, fresh ? "yes" : "no",
           buffer_id(p + bytes - 1) == id ? "yes" : "no");
}

/* Print whether CU_POINTER_ATTRIBUTE_CONTEXT of p is ctx, alone and in a list. */
static void expect_context(const char *what, CUdeviceptr p, CUcontext ctx)
{
    CUcontext one = NULL, listed = NULL;
    CUpointer_attribute a = CU_POINTER_ATTRIBUTE_CONTEXT;
    void *data[] = { &listed };
    CHECK_CU(cuPointerGetAttribute(&one, a, p));
    CHECK_CU(cuPointerGetAttributes(1, &a, data, p));
    printf("%-28s context is where it was allocated: %s, listed: %s\n", what,
           one == ctx ? "yes" : "no", listed == ctx ? "yes" : "no");
}

/* The result of each attribute of p that the shim answers itself, and of p's address range,
 * with no context current. */
static void query_no_context(const char *what, CUdeviceptr p)
{
    static const CUpointer_attribute own[] = {
        CU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
        CU_POINTER_ATTRIBUTE_DEVICE_POINTER, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        CU_POINTER_ATTRIBUTE_IS_MANAGED, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        CU_POINTER_ATTRIBUTE_RANGE_SIZE, CU_POINTER_ATTRIBUTE_MAPPED,
    };
    enum { N = sizeof(own) / sizeof(own[0]) };
    unsigned long long v[N];
    void *data[N];
    CUcontext ctx, popped;

    CHECK_CU(cuCtxGetCurrent(&ctx));
    CHECK_CU(cuCtxPopCurrent(&popped));
    for (size_t i = 0; i < N; i++) {
        unsigned long long one = 0;
        CUresult r = cuPointerGetAttribute(&one, own[i], p);
        for (size_t j = 0; j < NATTRS; j++)
            if (attrs[j].a == own[i])
                printf("%-28s %-15s %s\n", what, attrs[j].name, st_err(r));
        v[i] = 0;
        data[i] = &v[i];
    }
    CUresult r = cuPointerGetAttributes(N, (CUpointer_attribute *)own, data, p);
    printf("%-28s %-15s %s, device pointer the address: %s\n", what, "attributes", st_err(r),
           v[2] == p ? "yes" : "no");
    CUdeviceptr base = 0;
    size_t size = 0;
    r = cuMemGetAddressRange(&base, &size, p);
    printf("%-28s %-15s %s\n", what, "address range", st_err(r));
    CHECK_CU(cuCtxPushCurrent(ctx));
}

/* Lists the driver refuses whatever the pointer: no attributes, an unknown one, a NULL
 * output among them. */
static void query_invalid(const char *what, CUdeviceptr p)
{
    CUpointer_attribute list[] = { CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUpointer_attribute)999 };
    unsigned long long v[2];
    void *data[] = { &v[0], &v[1] }, *null_data[] = { &v[0], NULL };

    printf("%-28s %-15s %s\n", what, "no attributes",
           st_err(cuPointerGetAttributes(0, list, data, p)));
    printf("%-28s %-15s %s\n", what, "unknown one",
           st_err(cuPointerGetAttributes(2, list, data, p)));
    list[1] = CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL;
    printf("%-28s %-15s %s\n", what, "NULL output",
           st_err(cuPointerGetAttributes(2, list, null_data, p)));
}

/* Every attribute of freed address p, one by one and as one list. */
static void query_freed(const char *what, CUdeviceptr p)
{
    unsigned long long v[NATTRS];
    void *data[NATTRS];
    CUpointer_attribute list[NATTRS];

    for (size_t i = 0; i < NATTRS; i++) {
        unsigned long long one = 0;
        printf("%-28s %-15s %s\n", what, attrs[i].name,
               st_err(cuPointerGetAttribute(&one, attrs[i].a, p)));
        v[i] = 0x5a5a5a5a5a5a5a5aull;
        data[i] = &v[i];
        list[i] = attrs[i].a;
    }
    CUresult r = cuPointerGetAttributes(NATTRS, list, data, p);
    printf("%-28s %-15s %s\n", what, "attributes", st_err(r));
    for (size_t i = 0; i < NATTRS && r == CUDA_SUCCESS; i++)
        printf("%-28s  list: %-15s 0x%llx\n", what, attrs[i].name, v[i]);
}

/* Print whether MANY live allocations keep distinct buffer IDs while more are tagged (the
 * shim's table of them grows past its first size). */
#define MANY 300
static void expect_ids_kept(void)
{
    static CUdeviceptr p[MANY];
    static unsigned long long first[MANY];
    int kept = 1, distinct = 1;

    for (int i = 0; i < MANY; i++) {
        CHECK_CU(cuMemAlloc(&p[i], SMALL));
        first[i] = buffer_id(p[i]);
    }
    for (int i = 0; i < MANY; i++) {
        kept &= buffer_id(p[i]) == first[i] && first[i] != 0;
        for (int j = 0; j < i; j++)
            distinct &= first[j] != first[i];
    }
    for (int i = 0; i < MANY; i++)
        CHECK_CU(cuMemFree(p[i]));
    printf("%d allocations: buffer ids kept: %s, distinct: %s\n", MANY, kept ? "yes" : "no",
           distinct ? "yes" : "no");
}

static void scenario(void)
{
    CUdeviceptr big, small, next, ordered, big2, small2;
    CUcontext primary = st_setup(0), second, popped;

    CHECK_CU(cuMemAlloc(&big, 4 * MIB));
    CHECK_CU(cuMemAlloc(&small, SMALL));
    CHECK_CU(cuMemAlloc(&next, SMALL));
    expect_new_id("big", big, 4 * MIB);
    expect_new_id("small", small, SMALL);
    expect_new_id("next", next, SMALL);
    CHECK_CU(cuMemFree(big));
    CHECK_CU(cuMemFree(small));
    CHECK_CU(cuMemAlloc(&big, 4 * MIB));
    CHECK_CU(cuMemAlloc(&small, SMALL));
    expect_new_id("big, allocated again", big, 4 * MIB);
    expect_new_id("small, allocated again", small, SMALL);
    CHECK_CU(cuMemAllocAsync(&ordered, 4 * MIB, CU_STREAM_LEGACY));
    expect_new_id("stream-ordered", ordered, 4 * MIB);
    CHECK_CU(cuMemFreeAsync(ordered, CU_STREAM_LEGACY));
    CHECK_CU(cuStreamSynchronize(CU_STREAM_LEGACY));
    CHECK_CU(cuMemAllocAsync(&ordered, 4 * MIB, CU_STREAM_LEGACY));
    expect_new_id("stream-ordered again", ordered, 4 * MIB);
    CHECK_CU(cuMemFreeAsync(ordered, CU_STREAM_LEGACY));
    expect_context("big", big, primary);
    expect_context("small", small, primary);

    CHECK_CU(cuCtxCreate(&second, NULL, 0, 0));
    CHECK_CU(cuMemAlloc(&big2, 4 * MIB));
    CHECK_CU(cuMemAlloc(&small2, SMALL));
    expect_new_id("big, second context", big2, 4 * MIB);
    expect_new_id("small, second context", small2, SMALL);
    expect_context("big, second context", big2, second);
    expect_context("small, second context", small2, second);
    CHECK_CU(cuMemFree(big2));
    CHECK_CU(cuMemFree(small2));
    CHECK_CU(cuCtxPopCurrent(&popped));
    CHECK_CU(cuCtxDestroy(second));
    query_no_context("big, no context current", big);
    query_no_context("small, no context current", small);
    query_invalid("big", big);

    CHECK_CU(cuMemFree(small));
    CHECK_CU(cuMemFree(big));
    query_freed("freed small", small);
    query_freed("freed big", big);
    query_freed("freed big + 2 MiB", big + 2 * MIB);
    CHECK_CU(cuMemFree(next));
    expect_ids_kept();
}

static void run(const char *what, const char *host_vmm)
{
    const char *plain_env[] = { host_vmm, NULL };
    const char *env[] = { host_vmm, "ELIXIR_GPU_MEMORY=8M", NULL };
    sh_run_t plain = sh_run_plain_ok(plain_env), shim = sh_run_ok("scenario", env);

    sh_same_transcript(what, &plain, &shim);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
