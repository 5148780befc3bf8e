/* SPDX-License-Identifier: MIT */
/*
 * graph_exec.c - executable graphs: instantiation copies a graph's operations in a topological
 * order (among the ready nodes, the one created first), and each cuGraphLaunch submits fresh
 * copies of them to the launch stream, in that order, after the previous launch of the same
 * executable graph (graph.c has the graphs and nodes).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_int.h"

#define EXEC_MAGIC 0x43455847u

typedef struct exec_node {
    CUgraphNode node;           /* the graph node it came from (identity only) */
    sim_op_t *op;
} exec_node_t;

#define EXEC_CTXS 8             /* contexts an executable graph keeps an ordering event in */

struct CUgraphExec_st {
    uint32_t magic;
    exec_node_t *items;         /* operations in launch order (empty nodes left out) */
    size_t n;
    cuuint64_t flags;
    /* Recorded after each launch to order the next one, wherever it runs: one event per
     * context launched in, since an event is recorded only on its own context's streams. */
    struct {
        CUcontext ctx;
        CUevent ev;
    } done[EXEC_CTXS];
    CUevent last;               /* the last launch's event; NULL before the first */
    uint64_t last_stream;       /* id of the stream of the last launch */
};

/* ---------------------------------------------------------------- small helpers */

static int exec_ok(CUgraphExec x)
{
    return x && x->magic == EXEC_MAGIC;
}

/* ---------------------------------------------------------------- operations */

/* A copy of a node's operation that can be submitted or kept on its own; NULL when out of
 * memory.  Graph copies never keep a staging buffer: they read their source when they run. */
static sim_op_t *op_clone(const sim_op_t *src)
{
    sim_op_t *op = sim_op_new(src->kind);
    if (!op)
        return NULL;
    op->u = src->u;
    op->ctx = src->ctx;
    op->poison = src->poison;
    if (src->kind == SIM_OP_COPY)
        op->u.copy.staging = NULL;
    if (src->kind != SIM_OP_KERNEL)
        return op;
    const sim_kernel_op_t *k = &src->u.kernel;
    uint32_t n = k->func->entry->nparams;
    unsigned char *args = malloc(k->args_size ? k->args_size : 1);
    void **params = calloc(n ? n : 1, sizeof(void *));
    op->u.kernel.args = args;
    op->u.kernel.params = params;
    if (!args || !params) {
        sim_op_discard(op);
        return NULL;
    }
    memcpy(args, k->args, k->args_size);
    for (uint32_t i = 0; i < n; i++)
        params[i] = args + ((unsigned char *)k->params[i] - k->args);
    return op;
}

/* Addresses may have been mapped or unmapped since the node was made: check them again. */
static void recheck_poison(sim_op_t *op, int device)
{
    int owner;
    uint64_t bad = 0;
    if (op->kind == SIM_OP_COPY) {
        sim_where(op->u.copy.src, device, &owner, &bad);
        sim_where(op->u.copy.dst, device, &owner, &bad);
    } else if (op->kind == SIM_OP_MEMSET) {
        sim_where(op->u.memset.dst, device, &owner, &bad);
    } else {
        return;
    }
    op->poison = bad;
}

/* ---------------------------------------------------------------- instantiation */

/* Binary min-heap of node positions: the ready node created first comes out first. */
typedef struct heap {
    size_t *v;
    size_t n;
} heap_t;

static void heap_push(heap_t *h, size_t x)
{
    size_t i = h->n++;
    for (; i && h->v[(i - 1) / 2] > x; i = (i - 1) / 2)
        h->v[i] = h->v[(i - 1) / 2];
    h->v[i] = x;
}

static size_t heap_pop(heap_t *h)
{
    size_t top = h->v[0], x = h->v[--h->n], i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && h->v[c + 1] < h->v[c])
            c++;
        if (x <= h->v[c])
            break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n)
        h->v[i] = x;
    return top;
}

/*
 * Nodes of g in a topological order, smallest creation position first among the ready ones.
 * Returns 0, -ENOMEM, or -ELOOP for a cycle (*bad: a node on or after it).  Under sim_graph_lock.
 */
static int topo_order(CUgraph g, CUgraphNode *order, CUgraphNode *bad)
{
    size_t n = g->nodes.n, k = 0;
    heap_t h = { malloc((n ? n : 1) * sizeof(size_t)), 0 };
    if (!h.v)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        g->nodes.v[i]->index = i;
        g->nodes.v[i]->indeg = g->nodes.v[i]->deps.n;
        if (!g->nodes.v[i]->indeg)
            heap_push(&h, i);
    }
    while (h.n) {
        CUgraphNode x = g->nodes.v[heap_pop(&h)];
        order[k++] = x;
        for (size_t j = 0; j < x->outs.n; j++)
            if (--x->outs.v[j]->indeg == 0)
                heap_push(&h, x->outs.v[j]->index);
    }
    free(h.v);
    for (size_t i = 0; k < n && i < n; i++)
        if (g->nodes.v[i]->indeg) {
            *bad = g->nodes.v[i];
            return -ELOOP;
        }
    return 0;
}

static void exec_free(CUgraphExec x)
{
    for (size_t i = 0; i < x->n; i++)
        sim_op_discard(x->items[i].op);
    free(x->items);
    for (size_t i = 0; i < EXEC_CTXS && x->done[i].ev; i++)
        cuEventDestroy_v2(x->done[i].ev);
    x->magic = 0;
    free(x);
}

/* Copy the operations of g into x in launch order.  Under sim_graph_lock. */
static CUresult exec_fill(CUgraphExec x, CUgraph g, CUgraphNode *bad)
{
    size_t n = g->nodes.n;
    CUgraphNode *order = malloc((n ? n : 1) * sizeof(*order));
    x->items = calloc(n ? n : 1, sizeof(*x->items));
    int err = order && x->items ? topo_order(g, order, bad) : -ENOMEM;
    for (size_t i = 0; err == 0 && i < n; i++) {
        if (!order[i]->op)
            continue;
        exec_node_t *it = &x->items[x->n];
        it->node = order[i];
        it->op = op_clone(order[i]->op);
        if (!it->op)
            err = -ENOMEM;
        else
            x->n++;
    }
    free(order);
    if (err == -ELOOP)
        SIM_WARN("cuGraphInstantiate: the graph has a cycle");
    return err == 0 ? CUDA_SUCCESS : err == -ELOOP ? CUDA_ERROR_INVALID_VALUE
                                                   : CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult instantiate(CUgraphExec *px, CUgraph g, cuuint64_t flags, CUgraphNode *bad)
{
    const cuuint64_t known = CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |
                             CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |
                             CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH |
                             CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
    *bad = NULL;
    CUresult r = graph_enter_graph(g, px && !(flags & ~known) &&
                                    !((flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH) &&
                                      (flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)));
    if (r != CUDA_SUCCESS)
        return r;
    CUgraphExec x = calloc(1, sizeof(*x));
    if (!x)
        return CUDA_ERROR_OUT_OF_MEMORY;
    x->magic = EXEC_MAGIC;
    x->flags = flags;
    pthread_mutex_lock(&sim_graph_lock);
    r = exec_fill(x, g, bad);
    pthread_mutex_unlock(&sim_graph_lock);
    if (r != CUDA_SUCCESS)
        exec_free(x);
    else
        *px = x;
    return r;
}

SIM_API CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec *px, CUgraph g,
                                                     unsigned long long flags)
{
    CUgraphNode bad;
    return instantiate(px, g, flags, &bad);
}

/* The CUDA 10/11 ABI: error node and log buffer instead of flags. */
static CUresult instantiate_log(CUgraphExec *px, CUgraph g, CUgraphNode *err_node, char *log,
                                size_t size)
{
    CUgraphNode bad;
    CUresult r = instantiate(px, g, 0, &bad);
    if (err_node)
        *err_node = bad;
    if (log && size)
        snprintf(log, size, "%s", r == CUDA_SUCCESS ? "" : bad ? "graph contains a cycle"
                                                               : "instantiation failed");
    return r;
}

SIM_API CUresult CUDAAPI cuGraphInstantiate(CUgraphExec *px, CUgraph g, CUgraphNode *err_node,
                                            char *log, size_t size)
{
    return instantiate_log(px, g, err_node, log, size);
}

SIM_API CUresult CUDAAPI cuGraphInstantiate_v2(CUgraphExec *px, CUgraph g, CUgraphNode *err_node,
                                               char *log, size_t size)
{
    return instantiate_log(px, g, err_node, log, size);
}

static CUresult instantiate_params(CUgraphExec *px, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    CUgraphNode bad;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = instantiate(px, g, p->flags, &bad);
    p->hErrNode_out = bad;
    p->result_out = r == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS
                    : bad             ? CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE
                                      : CUDA_GRAPH_INSTANTIATE_ERROR;
    return r;
}

SIM_API CUresult CUDAAPI cuGraphInstantiateWithParams(CUgraphExec *px, CUgraph g,
                                                      CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    return instantiate_params(px, g, p);
}

SIM_API CUresult CUDAAPI cuGraphInstantiateWithParams_ptsz(CUgraphExec *px, CUgraph g,
                                                           CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    return instantiate_params(px, g, p);
}

SIM_API CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec x)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!exec_ok(x))
        return CUDA_ERROR_INVALID_VALUE;
    exec_free(x);       /* launched work holds copies of its operations */
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuGraphExecGetFlags(CUgraphExec x, cuuint64_t *flags)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!exec_ok(x) || !flags)
        return CUDA_ERROR_INVALID_VALUE;
    *flags = x->flags;
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuGraphExecKernelNodeSetParams_v2(CUgraphExec x, CUgraphNode node,
                                                           const CUDA_KERNEL_NODE_PARAMS *p)
{
    CUcontext ctx;
    sim_op_t *op;
    CUresult r = graph_enter_node(node, CU_GRAPH_NODE_TYPE_KERNEL, p);
    if (r == CUDA_SUCCESS && !exec_ok(x))
        r = CUDA_ERROR_INVALID_VALUE;
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = graph_kernel_op(p, &ctx, &op)) != CUDA_SUCCESS)
        return r;
    r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_graph_lock);
    for (size_t i = 0; i < x->n && r != CUDA_SUCCESS; i++)
        if (x->items[i].node == node) {
            sim_op_t *old = x->items[i].op;
            op->ctx = old->ctx;         /* (the node's context does not change) */
            x->items[i].op = op;
            op = old;
            r = CUDA_SUCCESS;
        }
    pthread_mutex_unlock(&sim_graph_lock);
    sim_op_discard(op);
    return r;
}

SIM_API CUresult CUDAAPI cuGraphExecKernelNodeSetParams(CUgraphExec x, CUgraphNode node,
                                                        const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS p2 = graph_params_v2(p);
    return cuGraphExecKernelNodeSetParams_v2(x, node, &p2);
}

/* ---------------------------------------------------------------- launch */

/* Fresh copies of x's operations, for one launch; NULL when out of memory. */
static sim_op_t **launch_ops(CUgraphExec x)
{
    sim_op_t **ops = calloc(x->n ? x->n : 1, sizeof(*ops));
    if (!ops)
        return NULL;
    pthread_mutex_lock(&sim_graph_lock);
    for (size_t i = 0; i < x->n; i++)
        if (!(ops[i] = op_clone(x->items[i].op))) {
            for (size_t j = 0; j < i; j++)
                sim_op_discard(ops[j]);
            free(ops);
            ops = NULL;
            break;
        }
    pthread_mutex_unlock(&sim_graph_lock);
    return ops;
}

/* Submit ops[0..n) on s (taking them all); stops at the first error.  They are one API call
 * for an activity observer: every node shares the launch's correlation id. */
static CUresult submit_all(CUstream s, CUstream h, sim_op_t **ops, size_t n)
{
    CUresult r = CUDA_SUCCESS;
    sim_activity_call_begin();
    for (size_t i = 0; i < n; i++) {
        if (r != CUDA_SUCCESS) {
            sim_op_discard(ops[i]);
            continue;
        }
        if (ops[i]->kind == SIM_OP_KERNEL)
            ops[i]->u.kernel.launch.stream = h;
        recheck_poison(ops[i], ops[i]->ctx ? ops[i]->ctx->device : s->ctx->device);
        r = sim_submit(s, ops[i], NULL);
    }
    sim_activity_call_end();
    return r;
}

/* x's ordering event in ctx, made at the first launch there; NULL when none can be (the
 * launch is then ordered after the last one, but the next one only within its stream). */
static CUevent exec_done(CUgraphExec x, CUcontext ctx)
{
    size_t i = 0;
    while (i < EXEC_CTXS && x->done[i].ev && x->done[i].ctx != ctx)
        i++;
    if (i == EXEC_CTXS || x->done[i].ev)
        return i == EXEC_CTXS ? NULL : x->done[i].ev;
    CUcontext popped;
    if (cuCtxPushCurrent_v2(ctx) != CUDA_SUCCESS)
        return NULL;
    if (cuEventCreate(&x->done[i].ev, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS)
        x->done[i].ctx = ctx;
    else
        x->done[i].ev = NULL;
    cuCtxPopCurrent_v2(&popped);
    return x->done[i].ev;
}

static CUresult graph_launch(CUgraphExec x, CUstream h, int ptds)
{
    CUstream s;
    CUresult r = sim_stream_resolve(h, ptds, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (!exec_ok(x))
        return CUDA_ERROR_INVALID_VALUE;
    sim_op_t **ops = launch_ops(x);
    if (!ops)
        return CUDA_ERROR_OUT_OF_MEMORY;
    /* Each launch is ordered after the previous one, wherever that ran (a stream of another
     * context included); not inside a capture, where the launch becomes nodes and the events
     * would become captured ones. */
    int order = !s->capture;
    CUevent done = order ? exec_done(x, s->ctx) : NULL;
    if (order && x->last && x->last_stream != s->id)
        r = cuStreamWaitEvent(s, x->last, 0);
    if (r == CUDA_SUCCESS)
        r = submit_all(s, h, ops, x->n);
    else
        for (size_t i = 0; i < x->n; i++)
            sim_op_discard(ops[i]);
    free(ops);
    if (r == CUDA_SUCCESS && order) {
        x->last = done && cuEventRecord(done, s) == CUDA_SUCCESS ? done : NULL;
        x->last_stream = s->id;
    }
    return r;
}

SIM_API CUresult CUDAAPI cuGraphLaunch(CUgraphExec x, CUstream h) { return graph_launch(x, h, 0); }
SIM_API CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec x, CUstream h) { return graph_launch(x, h, 1); }

/* Uploading prepares device-side resources; the simulator has none to prepare. */
static CUresult graph_upload(CUgraphExec x, CUstream h, int ptds)
{
    CUstream s;
    CUresult r = sim_stream_resolve(h, ptds, &s);
    if (r != CUDA_SUCCESS)
        return r;
    return exec_ok(x) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

SIM_API CUresult CUDAAPI cuGraphUpload(CUgraphExec x, CUstream h) { return graph_upload(x, h, 0); }
SIM_API CUresult CUDAAPI cuGraphUpload_ptsz(CUgraphExec x, CUstream h) { return graph_upload(x, h, 1); }
