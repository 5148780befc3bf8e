/* SPDX-License-Identifier: MIT */
/*
 * exec_run.c - running one operation on the executor: a kernel's body (with what it declares
 * it touches, sim_kernel_cost and sim_kernel_access), a copy's or memset's, checks of the
 * addresses first and the fault that ends an operation touching what it may not (exec.c
 * accounts for its time and races).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "exec_int.h"

/* The kernel running on the executor: cost and declared accesses. */
exec_kernel_t exec_cur;

/* ---------------------------------------------------------------- kernel-side helpers */

SIM_API void sim_kernel_cost(double flops, double bytes)
{
    if (!exec_on_executor || !exec_cur.active)
        return;
    exec_cur.flops += flops > 0 ? flops : 0;
    exec_cur.bytes += bytes > 0 ? bytes : 0;
}

/*
 * A kernel declares a range it is about to touch: for the race checker, and held to the
 * device's access as its pointer arguments are (kernel_precheck), since a pointer it loaded
 * from memory reaches no further on a GPU: a VMM mapping its device has no access to, or
 * another device's memory without peer access, is a fault at the first such byte.
 */
SIM_API void sim_kernel_access(const void *ptr, size_t bytes, int mode)
{
    if (!exec_on_executor || !exec_cur.active || bytes == 0)
        return;
    uint64_t first = (uint64_t)(uintptr_t)ptr, last = first + bytes - 1;
    if (sim_launch_denied(first, exec_cur.ctx))
        sim_fault_raise(first);
    if (sim_launch_denied(last, exec_cur.ctx))
        sim_fault_raise(last);
    if (exec_cur.nacc == exec_cur.cap) {
        size_t cap = exec_cur.cap ? exec_cur.cap * 2 : 16;
        access_rec_t *a = realloc(exec_cur.acc, cap * sizeof(*a));
        if (!a)
            return;
        exec_cur.acc = a;
        exec_cur.cap = cap;
    }
    exec_cur.acc[exec_cur.nacc++] = (access_rec_t){ (uint64_t)(uintptr_t)ptr, bytes, mode };
}

/* ---------------------------------------------------------------- running one op */

typedef struct run_arg {
    sim_op_t *op;
} run_arg_t;

static void copy_body(const sim_copy_t *c)
{
    for (size_t z = 0; z < c->depth; z++)
        for (size_t y = 0; y < c->height; y++) {
            char *d = (char *)(uintptr_t)(c->dst + (z * c->dheight + y) * c->dpitch);
            const char *s = c->staging
                ? (const char *)c->staging + (z * c->height + y) * c->width
                : (const char *)(uintptr_t)(c->src + (z * c->sheight + y) * c->spitch);
            memmove(d, s, c->width);
        }
}

static void memset_body(const sim_memset_t *m)
{
    for (size_t y = 0; y < m->height; y++) {
        char *row = (char *)(uintptr_t)(m->dst + y * m->pitch);
        if (m->elem == 1) {
            memset(row, (int)(m->value & 0xff), m->width);
        } else if (m->elem == 2) {
            uint16_t v = (uint16_t)m->value;
            for (size_t i = 0; i < m->width; i++)
                memcpy(row + i * 2, &v, 2);
        } else {
            uint32_t v = m->value;
            for (size_t i = 0; i < m->width; i++)
                memcpy(row + i * 4, &v, 4);
        }
    }
}

static void run_body(void *arg)
{
    sim_op_t *op = ((run_arg_t *)arg)->op;
    switch (op->kind) {
    case SIM_OP_KERNEL:
        op->u.kernel.fn(&op->u.kernel.launch, op->u.kernel.params);
        break;
    case SIM_OP_COPY:
        copy_body(&op->u.copy);
        break;
    case SIM_OP_MEMSET:
        memset_body(&op->u.memset);
        break;
    case SIM_OP_WRITE_VALUE:
        /* One store of the whole word, as the device makes it: a waiter never sees half. */
        if (op->u.memop.size == 8)
            atomic_store_explicit((_Atomic uint64_t *)(uintptr_t)op->u.memop.addr,
                                  op->u.memop.value, memory_order_release);
        else
            atomic_store_explicit((_Atomic uint32_t *)(uintptr_t)op->u.memop.addr,
                                  (uint32_t)op->u.memop.value, memory_order_release);
        break;
    case SIM_OP_HOSTFN:
        if (op->u.host.fn)
            op->u.host.fn(op->u.host.data);
        else
            op->u.host.cb(op->u.host.handle, (CUresult)atomic_load(&op->stream->ctx->sticky),
                          op->u.host.data);
        break;
    default:
        break;
    }
}

const char *exec_op_name(const sim_op_t *op)
{
    switch (op->kind) {
    case SIM_OP_KERNEL: return op->u.kernel.launch.name;
    case SIM_OP_COPY: return "memcpy";
    case SIM_OP_MEMSET: return "memset";
    case SIM_OP_HOSTFN: return "host function";
    case SIM_OP_FREE: return "cuMemFreeAsync";
    case SIM_OP_WAIT_VALUE: return "cuStreamWaitValue";
    case SIM_OP_WRITE_VALUE: return "cuStreamWriteValue";
    default: return "operation";
    }
}

/* Check a kernel's pointer arguments against per-device access of VMM mappings and peer
 * access to other devices' memory. */
static int kernel_precheck(const sim_op_t *op, uint64_t *bad)
{
    const sim_kernel_op_t *k = &op->u.kernel;
    for (size_t off = 0; off + 8 <= k->args_size; off += 8) {
        uint64_t v;
        memcpy(&v, k->args + off, 8);
        if (v >= 4096 && sim_launch_denied(v, sim_op_ctx(op))) {
            *bad = v;
            return -EFAULT;
        }
    }
    return 0;
}

void exec_fault(sim_op_t *op, uint64_t addr)
{
    exec_stats.faults++;
    SIM_ERR("illegal address 0x%llx in %s (op %llu, stream %llu, device %d): "
            "CUDA_ERROR_ILLEGAL_ADDRESS, context is now unusable",
            (unsigned long long)addr, exec_op_name(op), (unsigned long long)op->opno,
            (unsigned long long)op->stream->id, sim_op_ctx(op)->device);
    sim_ctx_fault(sim_op_ctx(op), CUDA_ERROR_ILLEGAL_ADDRESS);
}

/* Execute the body of op under the fault guard; returns 0 or -EFAULT. */
int exec_run(sim_op_t *op)
{
    uint64_t bad = 0;
    run_arg_t arg = { op };

    if (atomic_load(&sim_op_ctx(op)->sticky) &&
        !(op->kind == SIM_OP_HOSTFN && op->u.host.cb))
        return -EFAULT;
    if (op->poison) {
        exec_fault(op, op->poison);
        return -EFAULT;
    }
    if (op->kind == SIM_OP_KERNEL) {
        if (kernel_precheck(op, &bad) < 0) {
            exec_fault(op, bad);
            return -EFAULT;
        }
        exec_cur.active = 1;
        exec_cur.ctx = sim_op_ctx(op);
        exec_cur.flops = exec_cur.bytes = 0;
        exec_cur.nacc = 0;
    } else if (op->kind == SIM_OP_WRITE_VALUE &&
               sim_launch_denied(op->u.memop.addr, sim_op_ctx(op))) {
        /* Held to the device's access as a kernel's pointer is. */
        exec_fault(op, op->u.memop.addr);
        return -EFAULT;
    }
    int err = op->kind == SIM_OP_HOSTFN ? (run_body(&arg), 0) : sim_guarded(run_body, &arg, &bad);
    exec_cur.active = 0;
    if (err)
        exec_fault(op, bad);
    return err;
}
