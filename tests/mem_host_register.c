/* SPDX-License-Identifier: MIT */
/*
 * mem_host_register.c - cuMemHostRegister page-locks an existing host range: registering any
 * part of it again is CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, unknown flags, a NULL pointer
 * or a size of zero are CUDA_ERROR_INVALID_VALUE; asynchronous copies use the registered
 * memory directly.  cuMemHostUnregister takes the registered base address; unregistering
 * memory that is not registered is CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, and the range can
 * be registered again afterwards.  cuMemHostGetFlags is documented for cuMemHostAlloc memory
 * only and fails on a registration.
 */
#include "memtest.h"

#define PAGES 8

int main(void)
{
    unsigned char *buf, *other;
    unsigned flags;
    CUdeviceptr d;
    CUstream s;
    long page = 4096;

    EXPECT(posix_memalign((void **)&buf, (size_t)page, PAGES * page) == 0, "posix_memalign");
    EXPECT(posix_memalign((void **)&other, (size_t)page, page) == 0, "posix_memalign");
    st_setup(0);

    CHECK_CU(cuMemHostRegister(buf, 4 * page, 0));
    EXPECT_CU(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, cuMemHostRegister(buf, 4 * page, 0));
    EXPECT_CU(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
              cuMemHostRegister(buf + page, page, CU_MEMHOSTREGISTER_PORTABLE));
    EXPECT_CU(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, cuMemHostRegister(buf + 3 * page,
                                                                           2 * page, 0));
    /* A disjoint range of the same buffer is fine, with any documented flag. */
    CHECK_CU(cuMemHostRegister(buf + 4 * page, 2 * page,
                               CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP));
    CHECK_CU(cuMemHostRegister(buf + 6 * page, 2 * page, CU_MEMHOSTREGISTER_READ_ONLY));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemHostRegister(other, page, 0x80));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemHostRegister(other, 0, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemHostRegister(NULL, page, 0));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemHostGetFlags(&flags, buf));

    /* Registered memory in asynchronous copies. */
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&d, page));
    for (long i = 0; i < page; i++)
        buf[i] = (unsigned char)(i ^ 0x5a);
    CHECK_CU(cuMemcpyHtoDAsync(d, buf, (size_t)page, s));
    CHECK_CU(cuMemcpyDtoHAsync(buf + 4 * page, d, (size_t)page, s));
    CHECK_CU(cuStreamSynchronize(s));
    EXPECT(memcmp(buf, buf + 4 * page, (size_t)page) == 0, "registered round trip differs");

    EXPECT(cuMemHostUnregister(buf + page) != CUDA_SUCCESS, "unregistering an interior address");
    EXPECT_CU(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, cuMemHostUnregister(other));
    CHECK_CU(cuMemHostUnregister(buf));
    EXPECT_CU(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, cuMemHostUnregister(buf));
    CHECK_CU(cuMemHostRegister(buf + page, page, 0));   /* free again */
    CHECK_CU(cuMemHostUnregister(buf + page));
    CHECK_CU(cuMemHostUnregister(buf + 4 * page));
    CHECK_CU(cuMemHostUnregister(buf + 6 * page));
    CHECK_CU(cuMemFree(d));
    CHECK_CU(cuStreamDestroy(s));
    free(buf);
    free(other);
    return 0;
}
