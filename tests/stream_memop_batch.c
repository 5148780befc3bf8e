/* SPDX-License-Identifier: MIT */
/*
 * stream_memop_batch.c - cuStreamBatchMemOp enqueues its operations in array order.
 *
 * One batch writes a 32-bit and a 64-bit word, puts a memory barrier of each scope between
 * them and waits on what it wrote; a batch that waits on one stream is released by a batch on
 * another stream submitted after it.  A batch is checked whole: flags other than 0, a count of
 * 256 or more, a NULL array, an unknown operation, a barrier of an unknown scope or a bad
 * entry anywhere are refused and enqueue nothing; flushing remote writes is
 * CUDA_ERROR_NOT_SUPPORTED, as CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES (0) says.
 */
#include <string.h>

#include "simtest.h"

static CUstreamBatchMemOpParams write32(CUdeviceptr a, cuuint32_t v)
{
    CUstreamBatchMemOpParams p;
    memset(&p, 0, sizeof(p));
    p.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
    p.writeValue.address = a;
    p.writeValue.value = v;
    return p;
}

static CUstreamBatchMemOpParams write64(CUdeviceptr a, cuuint64_t v)
{
    CUstreamBatchMemOpParams p = write32(a, 0);
    p.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
    p.writeValue.value64 = v;
    return p;
}

static CUstreamBatchMemOpParams wait32(CUdeviceptr a, cuuint32_t v, unsigned flags)
{
    CUstreamBatchMemOpParams p;
    memset(&p, 0, sizeof(p));
    p.waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
    p.waitValue.address = a;
    p.waitValue.value = v;
    p.waitValue.flags = flags;
    return p;
}

static CUstreamBatchMemOpParams wait64(CUdeviceptr a, cuuint64_t v, unsigned flags)
{
    CUstreamBatchMemOpParams p = wait32(a, 0, flags);
    p.waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_64;
    p.waitValue.value64 = v;
    return p;
}

static CUstreamBatchMemOpParams barrier(unsigned flags)
{
    CUstreamBatchMemOpParams p;
    memset(&p, 0, sizeof(p));
    p.memoryBarrier.operation = CU_STREAM_MEM_OP_BARRIER;
    p.memoryBarrier.flags = flags;
    return p;
}

static uint64_t word(CUdeviceptr a)
{
    uint64_t v = 0;
    CHECK_CU(cuMemcpyDtoH(&v, a, 8));
    return v;
}

int main(void)
{
    CUstream s, t;
    CUdeviceptr d;

    st_setup(0);
    CHECK_CU(cuMemAlloc(&d, 256));
    CHECK_CU(cuMemsetD32(d, 0, 64));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&t, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuCtxSynchronize());

    CUstreamBatchMemOpParams one[] = {
        write32(d, 0x11), barrier(CU_STREAM_MEMORY_BARRIER_TYPE_SYS),
        write64(d + 8, 0x2200000022ull), barrier(CU_STREAM_MEMORY_BARRIER_TYPE_GPU),
        wait32(d, 0x11, CU_STREAM_WAIT_VALUE_EQ),
        wait64(d + 8, 0x2200000022ull, CU_STREAM_WAIT_VALUE_EQ),
    };
    CHECK_CU(cuStreamBatchMemOp(s, 6, one, 0));
    CHECK_CU(cuStreamSynchronize(s));
    EXPECT(word(d) == 0x11 && word(d + 8) == 0x2200000022ull, "batch writes: 0x%llx 0x%llx",
           (unsigned long long)word(d), (unsigned long long)word(d + 8));

    /* s waits (then writes 3); t, submitted after, releases it. */
    CUstreamBatchMemOpParams held[] = { wait64(d + 8, 0x3300000000ull, CU_STREAM_WAIT_VALUE_GEQ),
                                        write32(d + 16, 3) };
    CUstreamBatchMemOpParams release[] = { write64(d + 8, 0x3300000000ull) };
    CHECK_CU(cuStreamBatchMemOp(s, 2, held, 0));
    CHECK_CU(cuStreamBatchMemOp(t, 1, release, 0));
    CHECK_CU(cuStreamSynchronize(s));
    EXPECT(word(d + 16) == 3, "after the release: expected 3, got %llu",
           (unsigned long long)word(d + 16));

    /* Refused whole: nothing of it is enqueued. */
    CUstreamBatchMemOpParams bad[] = { write32(d + 24, 5), wait32(d + 2, 1, 0) };
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamBatchMemOp(s, 2, bad, 0));
    bad[1] = barrier(7);
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamBatchMemOp(s, 2, bad, 0));
    bad[1] = write32(d, 0);
    bad[1].operation = (CUstreamBatchMemOpType)99;
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamBatchMemOp(s, 2, bad, 0));
    if (st_simulated()) {   /* a platform with CAN_FLUSH_REMOTE_WRITES takes these */
        bad[1] = wait32(d, 1, CU_STREAM_WAIT_VALUE_GEQ);
        bad[1].flushRemoteWrites.operation = CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES;
        bad[1].flushRemoteWrites.flags = 0;
        EXPECT_CU(CUDA_ERROR_NOT_SUPPORTED, cuStreamBatchMemOp(s, 2, bad, 0));
        bad[1] = wait32(d, 1, CU_STREAM_WAIT_VALUE_GEQ | CU_STREAM_WAIT_VALUE_FLUSH);
        EXPECT_CU(CUDA_ERROR_NOT_SUPPORTED, cuStreamBatchMemOp(s, 2, bad, 0));
    }
    bad[1] = wait32(d, 1, CU_STREAM_WAIT_VALUE_GEQ);
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamBatchMemOp(s, 2, bad, 1));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamBatchMemOp(s, 2, NULL, 0));
    CUstreamBatchMemOpParams many[256];
    for (int i = 0; i < 256; i++)
        many[i] = write32(d + 24, 6);
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuStreamBatchMemOp(s, 256, many, 0));
    CHECK_CU(cuStreamSynchronize(s));
    EXPECT(word(d + 24) == 0, "a refused batch enqueued a write: %llu",
           (unsigned long long)word(d + 24));
    CHECK_CU(cuStreamBatchMemOp(s, 255, many, 0));
    CHECK_CU(cuStreamBatchMemOp(s, 0, NULL, 0));
    CHECK_CU(cuStreamSynchronize(s));
    EXPECT(word(d + 24) == 6, "a batch of 255: expected 6, got %llu",
           (unsigned long long)word(d + 24));

    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuStreamDestroy(t));
    CHECK_CU(cuMemFree(d));
    return 0;
}
