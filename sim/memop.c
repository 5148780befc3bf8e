/* SPDX-License-Identifier: MIT */
/*
 * memop.c - stream memory operations: cuStreamWaitValue32/64, cuStreamWriteValue32/64 and
 * cuStreamBatchMemOp, the v2 API (CUDA 11.7; the names cuda.h maps them to in CUDA 12 and 13)
 * and their _ptsz variants.
 *
 * A write stores its 32- or 64-bit word in stream order, with the memory barrier the v2 API
 * always gives it (CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER is documented as not supported
 * there).  A wait holds back the work after it on its stream until its condition holds (the
 * executor sets it aside, exec.c).  The device attributes answer what is modelled: 64-bit
 * operations and CU_STREAM_WAIT_VALUE_NOR are supported, flushing remote writes (the FLUSH
 * flag and CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES) is not (CAN_FLUSH_REMOTE_WRITES is 0), and
 * the v1 API, which a real driver enables only with a kernel module parameter
 * (CAN_USE_STREAM_MEM_OPS_V1 is 0), keeps the generated CUDA_ERROR_NOT_SUPPORTED.
 *
 * Choices where cuda.h is silent: an address must be a device address the driver knows
 * (device, pool, VMM, pinned or registered host memory), non-NULL and aligned to the word's
 * size, else CUDA_ERROR_INVALID_VALUE; one in a reserved but unmapped range, or in a mapping
 * the stream's device has no access to, is accepted and faults when the operation runs, as a
 * kernel's pointer would.  A batch is checked whole before any of it is enqueued.  On a
 * capturing stream the operations are CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and the capture
 * is invalidated: the simulator has no batch memory operation node.
 */
#include "sim.h"

/* Is addr a word of `size` bytes that a memory operation may name? */
static CUresult check_addr(uint64_t addr, unsigned size)
{
    sim_ptr_info_t info;
    if (!addr || addr % size)
        return CUDA_ERROR_INVALID_VALUE;
    if (sim_ptr_info(addr, &info) != 0 || addr + size > info.base + info.size)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

static CUresult check_wait(uint64_t addr, unsigned size, unsigned flags)
{
    if (flags & CU_STREAM_WAIT_VALUE_FLUSH)
        return (flags & ~(CU_STREAM_WAIT_VALUE_FLUSH | 3u)) ? CUDA_ERROR_INVALID_VALUE
                                                            : CUDA_ERROR_NOT_SUPPORTED;
    if (flags > CU_STREAM_WAIT_VALUE_NOR)
        return CUDA_ERROR_INVALID_VALUE;
    return check_addr(addr, size);
}

static CUresult check_write(uint64_t addr, unsigned size, unsigned flags)
{
    if (flags == CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (flags != CU_STREAM_WRITE_VALUE_DEFAULT)
        return CUDA_ERROR_INVALID_VALUE;
    return check_addr(addr, size);
}

/* Enqueue one checked operation on s. */
static CUresult submit(CUstream s, int kind, uint64_t addr, uint64_t value, unsigned size,
                       unsigned cond)
{
    sim_op_t *op = sim_op_new(kind);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->u.memop = (sim_memop_t){ .addr = addr, .value = value, .size = size, .cond = cond };
    return sim_submit(s, op, NULL);
}

/* The stream of a memory operation: resolved, and not capturing. */
static CUresult stream_of(CUstream h, int ptds, const char *what, CUstream *s)
{
    CUresult r = sim_stream_resolve(h, ptds, s);
    if (r == CUDA_SUCCESS)
        r = sim_capture_refuse(*s, what);
    return r;
}

static CUresult wait_value(CUstream h, uint64_t addr, uint64_t value, unsigned size,
                           unsigned flags, int ptds)
{
    CUstream s;
    CUresult r = stream_of(h, ptds, "cuStreamWaitValue", &s);
    if (r == CUDA_SUCCESS)
        r = check_wait(addr, size, flags);
    return r == CUDA_SUCCESS ? submit(s, SIM_OP_WAIT_VALUE, addr, value, size, flags) : r;
}

static CUresult write_value(CUstream h, uint64_t addr, uint64_t value, unsigned size,
                            unsigned flags, int ptds)
{
    CUstream s;
    CUresult r = stream_of(h, ptds, "cuStreamWriteValue", &s);
    if (r == CUDA_SUCCESS)
        r = check_write(addr, size, flags);
    return r == CUDA_SUCCESS ? submit(s, SIM_OP_WRITE_VALUE, addr, value, size, 0) : r;
}

SIM_API CUresult CUDAAPI cuStreamWaitValue32_v2(CUstream s, CUdeviceptr addr, cuuint32_t value,
                                                unsigned int flags)
{
    return wait_value(s, addr, value, 4, flags, 0);
}

SIM_API CUresult CUDAAPI cuStreamWaitValue32_v2_ptsz(CUstream s, CUdeviceptr addr,
                                                     cuuint32_t value, unsigned int flags)
{
    return wait_value(s, addr, value, 4, flags, 1);
}

SIM_API CUresult CUDAAPI cuStreamWaitValue64_v2(CUstream s, CUdeviceptr addr, cuuint64_t value,
                                                unsigned int flags)
{
    return wait_value(s, addr, value, 8, flags, 0);
}

SIM_API CUresult CUDAAPI cuStreamWaitValue64_v2_ptsz(CUstream s, CUdeviceptr addr,
                                                     cuuint64_t value, unsigned int flags)
{
    return wait_value(s, addr, value, 8, flags, 1);
}

SIM_API CUresult CUDAAPI cuStreamWriteValue32_v2(CUstream s, CUdeviceptr addr, cuuint32_t value,
                                                 unsigned int flags)
{
    return write_value(s, addr, value, 4, flags, 0);
}

SIM_API CUresult CUDAAPI cuStreamWriteValue32_v2_ptsz(CUstream s, CUdeviceptr addr,
                                                      cuuint32_t value, unsigned int flags)
{
    return write_value(s, addr, value, 4, flags, 1);
}

SIM_API CUresult CUDAAPI cuStreamWriteValue64_v2(CUstream s, CUdeviceptr addr, cuuint64_t value,
                                                 unsigned int flags)
{
    return write_value(s, addr, value, 8, flags, 0);
}

SIM_API CUresult CUDAAPI cuStreamWriteValue64_v2_ptsz(CUstream s, CUdeviceptr addr,
                                                      cuuint64_t value, unsigned int flags)
{
    return write_value(s, addr, value, 8, flags, 1);
}

/* One entry of a batch: CUDA_SUCCESS when it may be enqueued. */
static CUresult check_entry(const CUstreamBatchMemOpParams *p)
{
    switch (p->operation) {
    case CU_STREAM_MEM_OP_WAIT_VALUE_32:
    case CU_STREAM_MEM_OP_WAIT_VALUE_64:
        return check_wait(p->waitValue.address,
                          p->operation == CU_STREAM_MEM_OP_WAIT_VALUE_64 ? 8 : 4,
                          p->waitValue.flags);
    case CU_STREAM_MEM_OP_WRITE_VALUE_32:
    case CU_STREAM_MEM_OP_WRITE_VALUE_64:
        return check_write(p->writeValue.address,
                           p->operation == CU_STREAM_MEM_OP_WRITE_VALUE_64 ? 8 : 4,
                           p->writeValue.flags);
    case CU_STREAM_MEM_OP_BARRIER:
        return p->memoryBarrier.flags == CU_STREAM_MEMORY_BARRIER_TYPE_SYS ||
               p->memoryBarrier.flags == CU_STREAM_MEMORY_BARRIER_TYPE_GPU
                   ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
        return CUDA_ERROR_NOT_SUPPORTED;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

/* Enqueue one checked entry.  A barrier enqueues nothing: each operation of a stream is
 * complete, and its stores visible to all, before the next one starts. */
static CUresult submit_entry(CUstream s, const CUstreamBatchMemOpParams *p)
{
    switch (p->operation) {
    case CU_STREAM_MEM_OP_WAIT_VALUE_32:
        return submit(s, SIM_OP_WAIT_VALUE, p->waitValue.address, p->waitValue.value, 4,
                      p->waitValue.flags);
    case CU_STREAM_MEM_OP_WAIT_VALUE_64:
        return submit(s, SIM_OP_WAIT_VALUE, p->waitValue.address, p->waitValue.value64, 8,
                      p->waitValue.flags);
    case CU_STREAM_MEM_OP_WRITE_VALUE_32:
        return submit(s, SIM_OP_WRITE_VALUE, p->writeValue.address, p->writeValue.value, 4, 0);
    case CU_STREAM_MEM_OP_WRITE_VALUE_64:
        return submit(s, SIM_OP_WRITE_VALUE, p->writeValue.address, p->writeValue.value64, 8,
                      0);
    default:
        return CUDA_SUCCESS;
    }
}

static CUresult batch(CUstream h, unsigned count, CUstreamBatchMemOpParams *ops,
                      unsigned flags, int ptds)
{
    CUstream s;
    CUresult r = stream_of(h, ptds, "cuStreamBatchMemOp", &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (flags != 0 || count >= 256 || (count && !ops))
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < count && r == CUDA_SUCCESS; i++)
        r = check_entry(&ops[i]);
    for (unsigned i = 0; i < count && r == CUDA_SUCCESS; i++)
        r = submit_entry(s, &ops[i]);
    return r;
}

SIM_API CUresult CUDAAPI cuStreamBatchMemOp_v2(CUstream s, unsigned int count,
                                               CUstreamBatchMemOpParams *ops, unsigned int flags)
{
    return batch(s, count, ops, flags, 0);
}

SIM_API CUresult CUDAAPI cuStreamBatchMemOp_v2_ptsz(CUstream s, unsigned int count,
                                                    CUstreamBatchMemOpParams *ops,
                                                    unsigned int flags)
{
    return batch(s, count, ops, flags, 1);
}
