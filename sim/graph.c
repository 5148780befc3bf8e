/* SPDX-License-Identifier: MIT */
/*
 * graph.c - CUDA graphs: graphs, their nodes and the calls that add nodes and set their
 * parameters.
 *
 * A graph is a set of nodes joined by dependency edges; a node holds the operation it performs
 * (a sim_op_t that is never submitted itself: kernel arguments, copy and memset descriptions
 * are private copies).  Instantiation copies the operations in a topological order (among the
 * nodes that are ready, the one created first: a captured graph replays in capture order), and
 * each cuGraphLaunch submits fresh copies of them to the launch stream, in that order.  Running
 * a graph serially on its stream is one of the executions CUDA allows; the race checker sees
 * the graph's work as ordered after the stream's earlier work and before its later work.
 * Each node's work runs in the node's context all the same (sim_op_t.ctx): its device
 * executes it, checks its accesses and takes its faults, as for a graph whose nodes belong
 * to several devices (a capture that forked to another device's stream, a node naming
 * another context).
 * Successive launches of one executable graph are ordered even across streams, those of other
 * contexts included (internal events, one per context launched in), as CUDA orders them.
 * Stream capture is capture.c; the structure queries and edits graph_query.c; instantiation
 * and launch graph_exec.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_int.h"

/* Protects every graph, node, executable graph and capture (the Driver API documents graph
 * objects as not thread-safe; captures are shared between threads). */
pthread_mutex_t sim_graph_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---------------------------------------------------------------- small helpers */

int graph_vec_push(node_vec_t *a, CUgraphNode x)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 4;
        CUgraphNode *v = realloc(a->v, cap * sizeof(*v));
        if (!v)
            return -1;
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return 0;
}

int graph_vec_has(const node_vec_t *a, CUgraphNode x)
{
    for (size_t i = 0; i < a->n; i++)
        if (a->v[i] == x)
            return 1;
    return 0;
}

static void vec_remove(node_vec_t *a, CUgraphNode x)
{
    for (size_t i = 0; i < a->n; i++)
        if (a->v[i] == x) {
            memmove(a->v + i, a->v + i + 1, (a->n - i - 1) * sizeof(*a->v));
            a->n--;
            return;
        }
}

int graph_ok(CUgraph g)
{
    return g && g->magic == GRAPH_MAGIC;
}

int graph_node_ok(CUgraphNode n)
{
    return n && n->magic == NODE_MAGIC;
}

/*
 * The opening check of the entry points: the driver is initialised, then args_ok (the caller's
 * checks of its pointer and flag arguments, which must not dereference anything) holds.
 */
CUresult graph_enter(int args_ok)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    return args_ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* graph_enter(args_ok), then g is a live graph (looked at only once the driver is initialised). */
CUresult graph_enter_graph(CUgraph g, int args_ok)
{
    CUresult r = graph_enter(args_ok);
    if (r == CUDA_SUCCESS && !graph_ok(g))
        r = CUDA_ERROR_INVALID_VALUE;
    return r;
}

int graph_edges_zero(const CUgraphEdgeData *e, size_t n)
{
    static const CUgraphEdgeData zero;
    for (size_t i = 0; e && i < n; i++)
        if (memcmp(&e[i], &zero, sizeof(zero)) != 0)
            return 0;
    return 1;
}

/* ---------------------------------------------------------------- operations */

/* The node's work runs in the node's context, wherever the graph is launched (cuda.h: a kernel
 * node's "context for the kernel task to run in", a memset or memcpy node's "context on which
 * to run the node"); a host node runs in none. */
static void node_op_ctx(CUgraphNode n)
{
    if (n->op && n->op->kind != SIM_OP_HOSTFN)
        n->op->ctx = n->ctx;
}

/* ---------------------------------------------------------------- nodes and graphs */

/* Detach n from its graph and its neighbours.  Under sim_graph_lock. */
void graph_node_unlink(CUgraphNode n)
{
    for (size_t i = 0; i < n->deps.n; i++)
        vec_remove(&n->deps.v[i]->outs, n);
    for (size_t i = 0; i < n->outs.n; i++)
        vec_remove(&n->outs.v[i]->deps, n);
    vec_remove(&n->graph->nodes, n);
}

void graph_node_free(CUgraphNode n)
{
    sim_op_discard(n->op);
    free(n->deps.v);
    free(n->outs.v);
    n->magic = 0;
    free(n);
}

/*
 * Add a node of `type` doing op (NULL: nothing) to g, after deps (already validated).  Takes
 * op, discarding it on failure.  Under sim_graph_lock; NULL when out of memory.
 */
CUgraphNode graph_node_new(CUgraph g, CUgraphNodeType type, CUcontext ctx, sim_op_t *op,
                           CUgraphNode const *deps, size_t ndeps)
{
    CUgraphNode n = calloc(1, sizeof(*n));
    if (!n || graph_vec_push(&g->nodes, n) < 0) {
        free(n);
        sim_op_discard(op);
        return NULL;
    }
    *n = (struct CUgraphNode_st){ .magic = NODE_MAGIC, .graph = g, .type = type, .ctx = ctx,
                                  .op = op };
    node_op_ctx(n);
    for (size_t i = 0; i < ndeps; i++)
        if (graph_vec_push(&n->deps, deps[i]) < 0 || graph_vec_push(&deps[i]->outs, n) < 0) {
            graph_node_unlink(n);     /* removes n only where it was added */
            graph_node_free(n);
            return NULL;
        }
    return n;
}

void graph_free(CUgraph g)
{
    for (size_t i = 0; i < g->nodes.n; i++)
        graph_node_free(g->nodes.v[i]);
    free(g->nodes.v);
    g->magic = 0;
    free(g);
}

CUgraph graph_new(void)
{
    CUgraph g = calloc(1, sizeof(*g));
    if (g)
        g->magic = GRAPH_MAGIC;
    return g;
}

/* Dependencies given to an add call: nodes of g, no duplicates. */
CUresult graph_check_deps(CUgraph g, CUgraphNode const *deps, size_t n)
{
    if (n && !deps)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < n; i++) {
        if (!graph_node_ok(deps[i]) || deps[i]->graph != g)
            return CUDA_ERROR_INVALID_VALUE;
        for (size_t j = 0; j < i; j++)
            if (deps[j] == deps[i])
                return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

/* Add a node to g after deps; takes op.  *out receives the node. */
static CUresult add_node(CUgraphNode *out, CUgraph g, CUgraphNode const *deps, size_t ndeps,
                         CUgraphNodeType type, CUcontext ctx, sim_op_t *op)
{
    pthread_mutex_lock(&sim_graph_lock);
    CUresult r = graph_check_deps(g, deps, ndeps);
    CUgraphNode n = NULL;
    if (r == CUDA_SUCCESS) {
        n = graph_node_new(g, type, ctx, op, deps, ndeps);
        r = n ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
        op = NULL;
    }
    if (n)
        *out = n;
    pthread_mutex_unlock(&sim_graph_lock);
    sim_op_discard(op);
    return r;
}

/* ---------------------------------------------------------------- graphs */

SIM_API CUresult CUDAAPI cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
    CUresult r = graph_enter(phGraph && !flags);
    if (r != CUDA_SUCCESS)
        return r;
    *phGraph = graph_new();
    return *phGraph ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

SIM_API CUresult CUDAAPI cuGraphDestroy(CUgraph g)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_graph_lock);
    if (!graph_ok(g) || g->capturing)
        r = CUDA_ERROR_INVALID_VALUE;
    else
        graph_free(g);
    pthread_mutex_unlock(&sim_graph_lock);
    return r;
}

/* The kernel operation of node parameters, and the context it runs in. */
CUresult graph_kernel_op(const CUDA_KERNEL_NODE_PARAMS *p, CUcontext *ctx, sim_op_t **op)
{
    struct CUfunc_st *fn;
    CUfunction f = p->func ? p->func : (CUfunction)(void *)p->kern;
    CUresult r = sim_func_resolve(f, &fn);
    if (r != CUDA_SUCCESS)
        return r;
    if (!p->func && p->ctx) {
        *ctx = p->ctx;
        r = sim_ctx_check(p->ctx);
    } else {
        r = sim_ctx_get(ctx);
    }
    if (r != CUDA_SUCCESS)
        return r;
    sim_launch_t cfg = { { p->gridDimX, p->gridDimY, p->gridDimZ },
                         { p->blockDimX, p->blockDimY, p->blockDimZ },
                         p->sharedMemBytes, (*ctx)->device, NULL, NULL };
    r = sim_kernel_op_build(fn, &cfg, p->kernelParams, p->extra, op);
    /* An `extra` buffer larger than the parameters: a launch would be refused as out of
     * resources, a node is refused as an invalid value (as the real driver does). */
    return r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES ? CUDA_ERROR_INVALID_VALUE : r;
}

/* Remember which argument form was set last, for GetParams.  Under sim_graph_lock. */
static void kernel_form(CUgraphNode n, int from_extra)
{
    n->from_extra = from_extra;
    n->extra_size = n->op->u.kernel.params_end;
    n->extra[0] = CU_LAUNCH_PARAM_BUFFER_POINTER;
    n->extra[1] = n->op->u.kernel.args;
    n->extra[2] = CU_LAUNCH_PARAM_BUFFER_SIZE;
    n->extra[3] = &n->extra_size;
    n->extra[4] = CU_LAUNCH_PARAM_END;
}

CUDA_KERNEL_NODE_PARAMS graph_params_v2(const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    return (CUDA_KERNEL_NODE_PARAMS){ p->func, p->gridDimX, p->gridDimY, p->gridDimZ,
                                      p->blockDimX, p->blockDimY, p->blockDimZ,
                                      p->sharedMemBytes, p->kernelParams, p->extra, NULL, NULL };
}

SIM_API CUresult CUDAAPI cuGraphAddKernelNode_v2(CUgraphNode *ph, CUgraph g,
                                                 const CUgraphNode *deps, size_t n,
                                                 const CUDA_KERNEL_NODE_PARAMS *p)
{
    CUcontext ctx;
    sim_op_t *op;
    CUresult r = graph_enter_graph(g, ph && p);
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = graph_kernel_op(p, &ctx, &op)) != CUDA_SUCCESS)
        return r;
    r = add_node(ph, g, deps, n, CU_GRAPH_NODE_TYPE_KERNEL, ctx, op);
    if (r == CUDA_SUCCESS) {
        pthread_mutex_lock(&sim_graph_lock);
        kernel_form(*ph, p->extra != NULL);
        pthread_mutex_unlock(&sim_graph_lock);
    }
    return r;
}

SIM_API CUresult CUDAAPI cuGraphAddKernelNode(CUgraphNode *ph, CUgraph g, const CUgraphNode *deps,
                                              size_t n, const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS p2 = graph_params_v2(p);
    return cuGraphAddKernelNode_v2(ph, g, deps, n, &p2);
}

/* Under sim_graph_lock: n is a live node of `type`. */
static CUresult node_is(CUgraphNode n, CUgraphNodeType type)
{
    return graph_node_ok(n) && n->type == type ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/*
 * graph_enter(p != NULL), then node is a live node of `type`, looked at without sim_graph_lock
 * (the set-parameter calls read the node's context before they take the lock).
 */
CUresult graph_enter_node(CUgraphNode node, CUgraphNodeType type, const void *p)
{
    CUresult r = graph_enter(p != NULL);
    return r == CUDA_SUCCESS ? node_is(node, type) : r;
}

/*
 * The opening of a get/set-parameters call: graph_enter(p != NULL), then sim_graph_lock is
 * taken and node must be a live node of `type`.  On CUDA_SUCCESS the lock is held and the caller
 * releases it; on an error it is not held.
 */
static CUresult lock_node(CUgraphNode node, CUgraphNodeType type, const void *p)
{
    CUresult r = graph_enter(p != NULL);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_graph_lock);
    if ((r = node_is(node, type)) != CUDA_SUCCESS)
        pthread_mutex_unlock(&sim_graph_lock);
    return r;
}

SIM_API CUresult CUDAAPI cuGraphKernelNodeGetParams_v2(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS *p)
{
    CUresult r = lock_node(node, CU_GRAPH_NODE_TYPE_KERNEL, p);
    if (r != CUDA_SUCCESS)
        return r;
    const sim_kernel_op_t *k = &node->op->u.kernel;
    *p = (CUDA_KERNEL_NODE_PARAMS){
        (CUfunction)k->func, k->launch.grid[0], k->launch.grid[1], k->launch.grid[2],
        k->launch.block[0], k->launch.block[1], k->launch.block[2], k->launch.shared_bytes,
        node->from_extra ? NULL : k->params, node->from_extra ? node->extra : NULL,
        NULL, node->ctx };
    pthread_mutex_unlock(&sim_graph_lock);
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuGraphKernelNodeGetParams(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    CUDA_KERNEL_NODE_PARAMS p2;
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = cuGraphKernelNodeGetParams_v2(node, &p2);
    if (r == CUDA_SUCCESS)
        *p = (CUDA_KERNEL_NODE_PARAMS_v1){ p2.func, p2.gridDimX, p2.gridDimY, p2.gridDimZ,
                                           p2.blockDimX, p2.blockDimY, p2.blockDimZ,
                                           p2.sharedMemBytes, p2.kernelParams, p2.extra };
    return r;
}

/*
 * Replace the operation of a node of `type` by op (taken; the old one is discarded), with the
 * kernel argument form or the memcpy parameters that go with it.
 */
static CUresult node_swap_op(CUgraphNode node, CUgraphNodeType type, sim_op_t *op, int from_extra,
                             const CUDA_MEMCPY3D *copy)
{
    pthread_mutex_lock(&sim_graph_lock);
    CUresult r = node_is(node, type);
    if (r == CUDA_SUCCESS) {
        sim_op_t *old = node->op;
        node->op = op;
        op = old;
        node_op_ctx(node);
        if (type == CU_GRAPH_NODE_TYPE_KERNEL)
            kernel_form(node, from_extra);
        if (copy)
            node->copy = *copy;
    }
    pthread_mutex_unlock(&sim_graph_lock);
    sim_op_discard(op);
    return r;
}

SIM_API CUresult CUDAAPI cuGraphKernelNodeSetParams_v2(CUgraphNode node,
                                                       const CUDA_KERNEL_NODE_PARAMS *p)
{
    CUcontext ctx;
    sim_op_t *op;
    CUresult r = graph_enter(p != NULL);
    if (r != CUDA_SUCCESS)
        return r;
    if (!graph_node_ok(node))
        return CUDA_ERROR_INVALID_HANDLE;
    if ((r = graph_kernel_op(p, &ctx, &op)) != CUDA_SUCCESS)
        return r;
    return node_swap_op(node, CU_GRAPH_NODE_TYPE_KERNEL, op, p->extra != NULL, NULL);
}

SIM_API CUresult CUDAAPI cuGraphKernelNodeSetParams(CUgraphNode node,
                                                    const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS p2 = graph_params_v2(p);
    return cuGraphKernelNodeSetParams_v2(node, &p2);
}

/* The context a memcpy or memset node runs in: ctx, or the current one when NULL. */
static CUresult node_ctx(CUcontext ctx, CUcontext *out)
{
    if (!ctx)
        return sim_ctx_get(out);
    *out = ctx;
    return sim_ctx_check(ctx);
}

SIM_API CUresult CUDAAPI cuGraphAddMemcpyNode(CUgraphNode *ph, CUgraph g, const CUgraphNode *deps,
                                              size_t n, const CUDA_MEMCPY3D *p, CUcontext ctx)
{
    sim_op_t *op;
    CUresult r = graph_enter_graph(g, ph && p);
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = node_ctx(ctx, &ctx)) != CUDA_SUCCESS ||
        (r = sim_copy_op_build(p, ctx->device, &op)) != CUDA_SUCCESS)
        return r;
    r = add_node(ph, g, deps, n, CU_GRAPH_NODE_TYPE_MEMCPY, ctx, op);
    if (r == CUDA_SUCCESS) {
        pthread_mutex_lock(&sim_graph_lock);
        (*ph)->copy = *p;
        pthread_mutex_unlock(&sim_graph_lock);
    }
    return r;
}

SIM_API CUresult CUDAAPI cuGraphMemcpyNodeGetParams(CUgraphNode node, CUDA_MEMCPY3D *p)
{
    CUresult r = lock_node(node, CU_GRAPH_NODE_TYPE_MEMCPY, p);
    if (r != CUDA_SUCCESS)
        return r;
    *p = node->copy;
    pthread_mutex_unlock(&sim_graph_lock);
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuGraphMemcpyNodeSetParams(CUgraphNode node, const CUDA_MEMCPY3D *p)
{
    sim_op_t *op;
    CUresult r = graph_enter_node(node, CU_GRAPH_NODE_TYPE_MEMCPY, p);
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = sim_copy_op_build(p, node->ctx->device, &op)) != CUDA_SUCCESS)
        return r;
    return node_swap_op(node, CU_GRAPH_NODE_TYPE_MEMCPY, op, 0, p);
}

static CUresult memset_op(const CUDA_MEMSET_NODE_PARAMS *p, int device, sim_op_t **op)
{
    unsigned e = p->elementSize;
    if (e != 1 && e != 2 && e != 4)
        return CUDA_ERROR_INVALID_VALUE;
    return sim_memset_op_build(device, p->dst, p->value, e, p->width, p->height, p->pitch, op);
}

SIM_API CUresult CUDAAPI cuGraphAddMemsetNode(CUgraphNode *ph, CUgraph g, const CUgraphNode *deps,
                                              size_t n, const CUDA_MEMSET_NODE_PARAMS *p,
                                              CUcontext ctx)
{
    sim_op_t *op;
    CUresult r = graph_enter_graph(g, ph && p);
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = node_ctx(ctx, &ctx)) != CUDA_SUCCESS ||
        (r = memset_op(p, ctx->device, &op)) != CUDA_SUCCESS)
        return r;
    return add_node(ph, g, deps, n, CU_GRAPH_NODE_TYPE_MEMSET, ctx, op);
}

SIM_API CUresult CUDAAPI cuGraphMemsetNodeGetParams(CUgraphNode node, CUDA_MEMSET_NODE_PARAMS *p)
{
    CUresult r = lock_node(node, CU_GRAPH_NODE_TYPE_MEMSET, p);
    if (r != CUDA_SUCCESS)
        return r;
    const sim_memset_t *m = &node->op->u.memset;
    *p = (CUDA_MEMSET_NODE_PARAMS){ m->dst, m->pitch, m->value, m->elem, m->width, m->height };
    pthread_mutex_unlock(&sim_graph_lock);
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuGraphMemsetNodeSetParams(CUgraphNode node,
                                                    const CUDA_MEMSET_NODE_PARAMS *p)
{
    sim_op_t *op;
    CUresult r = graph_enter_node(node, CU_GRAPH_NODE_TYPE_MEMSET, p);
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = memset_op(p, node->ctx->device, &op)) != CUDA_SUCCESS)
        return r;
    return node_swap_op(node, CU_GRAPH_NODE_TYPE_MEMSET, op, 0, NULL);
}

SIM_API CUresult CUDAAPI cuGraphAddHostNode(CUgraphNode *ph, CUgraph g, const CUgraphNode *deps,
                                            size_t n, const CUDA_HOST_NODE_PARAMS *p)
{
    CUresult r = graph_enter_graph(g, ph && p);
    if (r != CUDA_SUCCESS)
        return r;
    if (!p->fn)
        return CUDA_ERROR_INVALID_VALUE;
    sim_op_t *op = sim_op_new(SIM_OP_HOSTFN);
    if (!op)
        return CUDA_ERROR_OUT_OF_MEMORY;
    op->u.host.fn = p->fn;
    op->u.host.data = p->userData;
    return add_node(ph, g, deps, n, CU_GRAPH_NODE_TYPE_HOST, sim_ctx_current(), op);
}

SIM_API CUresult CUDAAPI cuGraphHostNodeGetParams(CUgraphNode node, CUDA_HOST_NODE_PARAMS *p)
{
    CUresult r = lock_node(node, CU_GRAPH_NODE_TYPE_HOST, p);
    if (r != CUDA_SUCCESS)
        return r;
    *p = (CUDA_HOST_NODE_PARAMS){ node->op->u.host.fn, node->op->u.host.data };
    pthread_mutex_unlock(&sim_graph_lock);
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuGraphHostNodeSetParams(CUgraphNode node, const CUDA_HOST_NODE_PARAMS *p)
{
    CUresult r = lock_node(node, CU_GRAPH_NODE_TYPE_HOST, p);
    if (r != CUDA_SUCCESS)
        return r;
    if (p->fn) {
        node->op->u.host.fn = p->fn;
        node->op->u.host.data = p->userData;
    } else {
        r = CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_unlock(&sim_graph_lock);
    return r;
}

SIM_API CUresult CUDAAPI cuGraphAddEmptyNode(CUgraphNode *ph, CUgraph g, const CUgraphNode *deps,
                                             size_t n)
{
    CUresult r = graph_enter_graph(g, ph != NULL);
    if (r != CUDA_SUCCESS)
        return r;
    return add_node(ph, g, deps, n, CU_GRAPH_NODE_TYPE_EMPTY, sim_ctx_current(), NULL);
}

SIM_API CUresult CUDAAPI cuGraphNodeGetType(CUgraphNode node, CUgraphNodeType *type)
{
    CUresult r = graph_enter(type != NULL);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_graph_lock);
    if (graph_node_ok(node))
        *type = node->type;
    else
        r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&sim_graph_lock);
    return r;
}
