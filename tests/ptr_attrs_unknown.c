/* SPDX-License-Identifier: MIT */
/*
 * ptr_attrs_unknown.c - addresses the driver never handed out (malloc'd and stack memory, a
 * freed allocation).  cuPointerGetAttribute fails with CUDA_ERROR_INVALID_VALUE.
 * cuPointerGetAttributes is documented not to fail: it returns CUDA_SUCCESS with "default
 * NULL values" - no context, memory type 0 (unregistered, neither host nor device), no device
 * or host pointer, not mapped, not managed, buffer ID 0 - except the device ordinal, which
 * the real driver reports as -2 (what cudaPointerGetAttributes passes on for unregistered
 * memory).  Invalid arguments are still CUDA_ERROR_INVALID_VALUE.
 */
#include "memtest.h"

static void check_unknown(CUdeviceptr p)
{
    CUpointer_attribute attrs[] = {
        CU_POINTER_ATTRIBUTE_CONTEXT, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
        CU_POINTER_ATTRIBUTE_DEVICE_POINTER, CU_POINTER_ATTRIBUTE_HOST_POINTER,
        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_MAPPED,
        CU_POINTER_ATTRIBUTE_IS_MANAGED, CU_POINTER_ATTRIBUTE_BUFFER_ID,
        CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE };
    CUcontext c = (CUcontext)1;
    unsigned type = 99;
    CUdeviceptr dp = 1;
    void *hp = (void *)1;
    int ordinal = 99, mapped = 99, managed = 99;
    unsigned long long id = 99;
    CUmemoryPool pool = (CUmemoryPool)1;
    void *data[] = { &c, &type, &dp, &hp, &ordinal, &mapped, &managed, &id, &pool };
    unsigned v;

    CHECK_CU(cuPointerGetAttributes(9, attrs, data, p));
    EXPECT(c == NULL && type == 0 && dp == 0 && hp == NULL && mapped == 0 && managed == 0 &&
           id == 0 && pool == NULL,
           "unknown 0x%llx: ctx %p type %u dptr 0x%llx host %p mapped %d managed %d id %llu "
           "pool %p", (unsigned long long)p, (void *)c, type, (unsigned long long)dp, hp, mapped,
           managed, id, (void *)pool);
    EXPECT(ordinal == -2, "device ordinal of an unknown pointer: expected -2, got %d", ordinal);
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
              cuPointerGetAttribute(&v, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE,
              cuPointerGetAttribute(&v, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
}

int main(void)
{
    int local;
    unsigned type;
    void *data[] = { &type };
    CUpointer_attribute a = CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
    CUdeviceptr d;

    st_setup(0);
    char *heap = malloc(1000);
    check_unknown((CUdeviceptr)(uintptr_t)heap);
    check_unknown((CUdeviceptr)(uintptr_t)&local);
    check_unknown(0);
    CHECK_CU(cuMemAlloc(&d, 4096));
    CHECK_CU(cuMemFree(d));
    check_unknown(d);
    free(heap);

    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuPointerGetAttributes(0, &a, data, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuPointerGetAttributes(1, NULL, data, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuPointerGetAttributes(1, &a, NULL, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuPointerGetAttribute(NULL, a, 0));
    return 0;
}
