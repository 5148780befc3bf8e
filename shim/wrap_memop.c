/* SPDX-License-Identifier: MIT */
/*
 * wrap_memop.c - wrappers of the stream memory operations: cuStreamWaitValue32/64,
 * cuStreamWriteValue32/64 and cuStreamBatchMemOp, in the v1 and v2 ABIs and their _ptsz
 * variants.
 *
 * Each names device words; residency makes the chunk of each word that lies in an arena
 * addressable and holds it there until the operation is done on its stream (res_memop_begin,
 * res_memop_end in res_launch.c).  Words outside the arenas, and the driver's answers, pass
 * through untouched.  The tracer does not record these operations.
 */
#include "shim.h"

#define VALUE_WRAPPER(sym, T)                                                                  \
    SHIM_EXPORT CUresult CUDAAPI sym(CUstream stream, CUdeviceptr addr, T value,              \
                                     unsigned int flags)                                       \
    {                                                                                          \
        SHIM_ENTER(sym, real);                                                                 \
        int ptds = shim_hook_per_thread[SHIM_HOOK_##sym];                                      \
        void *held = res_memop_begin(stream, ptds, &addr, 1);                                  \
        CUresult r = real(stream, addr, value, flags);                                         \
        res_memop_end(held, stream, ptds, r);                                                  \
        return r;                                                                              \
    }

VALUE_WRAPPER(cuStreamWaitValue32, cuuint32_t)
VALUE_WRAPPER(cuStreamWaitValue32_ptsz, cuuint32_t)
VALUE_WRAPPER(cuStreamWaitValue32_v2, cuuint32_t)
VALUE_WRAPPER(cuStreamWaitValue32_v2_ptsz, cuuint32_t)
VALUE_WRAPPER(cuStreamWaitValue64, cuuint64_t)
VALUE_WRAPPER(cuStreamWaitValue64_ptsz, cuuint64_t)
VALUE_WRAPPER(cuStreamWaitValue64_v2, cuuint64_t)
VALUE_WRAPPER(cuStreamWaitValue64_v2_ptsz, cuuint64_t)
VALUE_WRAPPER(cuStreamWriteValue32, cuuint32_t)
VALUE_WRAPPER(cuStreamWriteValue32_ptsz, cuuint32_t)
VALUE_WRAPPER(cuStreamWriteValue32_v2, cuuint32_t)
VALUE_WRAPPER(cuStreamWriteValue32_v2_ptsz, cuuint32_t)
VALUE_WRAPPER(cuStreamWriteValue64, cuuint64_t)
VALUE_WRAPPER(cuStreamWriteValue64_ptsz, cuuint64_t)
VALUE_WRAPPER(cuStreamWriteValue64_v2, cuuint64_t)
VALUE_WRAPPER(cuStreamWriteValue64_v2_ptsz, cuuint64_t)

/* The words a batch's waits and writes name, into w (room for 255); how many.  A batch the
 * driver refuses for its count names none. */
static uint32_t batch_words(unsigned count, const CUstreamBatchMemOpParams *ops,
                            CUdeviceptr *w)
{
    uint32_t n = 0;
    if (!ops || count >= 256)
        return 0;
    for (unsigned i = 0; i < count; i++)
        switch (ops[i].operation) {
        case CU_STREAM_MEM_OP_WAIT_VALUE_32:
        case CU_STREAM_MEM_OP_WAIT_VALUE_64:
            w[n++] = ops[i].waitValue.address;
            break;
        case CU_STREAM_MEM_OP_WRITE_VALUE_32:
        case CU_STREAM_MEM_OP_WRITE_VALUE_64:
            w[n++] = ops[i].writeValue.address;
            break;
        default:
            break;
        }
    return n;
}

#define BATCH_WRAPPER(sym)                                                                     \
    SHIM_EXPORT CUresult CUDAAPI sym(CUstream stream, unsigned int count,                      \
                                     CUstreamBatchMemOpParams *paramArray, unsigned int flags) \
    {                                                                                          \
        SHIM_ENTER(sym, real);                                                                 \
        CUdeviceptr w[255];                                                                    \
        int ptds = shim_hook_per_thread[SHIM_HOOK_##sym];                                      \
        void *held = res_memop_begin(stream, ptds, w, batch_words(count, paramArray, w));     \
        CUresult r = real(stream, count, paramArray, flags);                                   \
        res_memop_end(held, stream, ptds, r);                                                  \
        return r;                                                                              \
    }

BATCH_WRAPPER(cuStreamBatchMemOp)
BATCH_WRAPPER(cuStreamBatchMemOp_ptsz)
BATCH_WRAPPER(cuStreamBatchMemOp_v2)
BATCH_WRAPPER(cuStreamBatchMemOp_v2_ptsz)
