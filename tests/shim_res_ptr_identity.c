/* SPDX-License-Identifier: MIT */
/*
 * shim_res_ptr_identity.c - what pointer queries say about which allocation an address is,
 * under libelixir.so as without it: nothing at all once the allocation is freed.
 *
 * cuda.h: cuPointerGetAttributes "will not return an error when the ptr encountered is not a
 * valid CUDA pointer": it lists default values and returns CUDA_SUCCESS, where
 * cuPointerGetAttribute fails with CUDA_ERROR_INVALID_VALUE.  Under the shim a freed address
 * still lies in the arena's reservation, and often in a chunk the shim keeps mapped (a slab
 * chunk with live neighbours, a parked chunk), which the driver would describe.
 *
 * The scenario allocates a 4 MiB buffer (two chunks under the shim) and two 8 KiB ones (slots
 * of one shared chunk).  It frees the large buffer and the first small one, whose chunk still
 * holds the second, and queries every attribute of the freed addresses, one by one (result
 * codes) and as one list (result code and values).  The test runs the scenario without the
 * shim and under it, where evicted chunks stay mapped and where they are unmapped; the
 * transcripts must be the same.
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

static void scenario(void)
{
    CUdeviceptr big, small, next;

    st_setup(0);
    CHECK_CU(cuMemAlloc(&big, 4 * MIB));
    CHECK_CU(cuMemAlloc(&small, SMALL));
    CHECK_CU(cuMemAlloc(&next, SMALL));
    CHECK_CU(cuMemFree(small));
    CHECK_CU(cuMemFree(big));
    query_freed("freed small", small);
    query_freed("freed big", big);
    query_freed("freed big + 2 MiB", big + 2 * MIB);
    CHECK_CU(cuMemFree(next));
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
