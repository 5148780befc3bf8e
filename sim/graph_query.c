/* SPDX-License-Identifier: MIT */
/*
 * graph_query.c - a graph's structure: listing its nodes and edges, adding and removing
 * dependencies, destroying nodes (graph.c has the graphs and nodes themselves).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_int.h"

/* Output protocol of the node-listing calls: count only, or fill up to *num and NULL the rest. */
static void list_out(const node_vec_t *src, CUgraphNode *out, size_t *num)
{
    if (!out) {
        *num = src->n;
        return;
    }
    for (size_t i = 0; i < *num; i++)
        out[i] = i < src->n ? src->v[i] : NULL;
    if (*num > src->n)
        *num = src->n;
}

/* ---------------------------------------------------------------- structure queries */

SIM_API CUresult CUDAAPI cuGraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *num)
{
    CUresult r = graph_enter_graph(g, num != NULL);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_graph_lock);
    list_out(&g->nodes, nodes, num);
    pthread_mutex_unlock(&sim_graph_lock);
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuGraphGetRootNodes(CUgraph g, CUgraphNode *roots, size_t *num)
{
    node_vec_t v = { 0 };
    CUresult r = graph_enter_graph(g, num != NULL);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_graph_lock);
    for (size_t i = 0; i < g->nodes.n && r == CUDA_SUCCESS; i++)
        if (!g->nodes.v[i]->deps.n && graph_vec_push(&v, g->nodes.v[i]) < 0)
            r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS)
        list_out(&v, roots, num);
    pthread_mutex_unlock(&sim_graph_lock);
    free(v.v);
    return r;
}

/* Edges of g (from -> to), in node order; both arrays NULL to count them. */
static CUresult get_edges(CUgraph g, CUgraphNode *from, CUgraphNode *to, CUgraphEdgeData *edges,
                          size_t *num)
{
    CUresult r = graph_enter_graph(g, num && !from == !to && (!edges || from));
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_graph_lock);
    size_t k = 0;
    for (size_t i = 0; i < g->nodes.n; i++) {
        CUgraphNode n = g->nodes.v[i];
        for (size_t j = 0; j < n->deps.n; j++, k++)
            if (from && k < *num) {
                from[k] = n->deps.v[j];
                to[k] = n;
            }
    }
    for (size_t i = k; from && i < *num; i++)
        from[i] = to[i] = NULL;
    for (size_t i = 0; edges && i < *num; i++)
        memset(&edges[i], 0, sizeof(edges[i]));
    if (!from || *num > k)
        *num = k;
    pthread_mutex_unlock(&sim_graph_lock);
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuGraphGetEdges(CUgraph g, CUgraphNode *from, CUgraphNode *to, size_t *n)
{
    return get_edges(g, from, to, NULL, n);
}

SIM_API CUresult CUDAAPI cuGraphGetEdges_v2(CUgraph g, CUgraphNode *from, CUgraphNode *to,
                                            CUgraphEdgeData *edges, size_t *n)
{
    return get_edges(g, from, to, edges, n);
}

/* A node's dependencies (outs = 0) or dependents (outs = 1). */
static CUresult node_links(CUgraphNode node, int outs, CUgraphNode *out, CUgraphEdgeData *edges,
                           size_t *num)
{
    CUresult r = graph_enter(num && (!edges || out));
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_graph_lock);
    if (!graph_node_ok(node)) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        for (size_t i = 0; edges && i < *num; i++)
            memset(&edges[i], 0, sizeof(edges[i]));
        list_out(outs ? &node->outs : &node->deps, out, num);
    }
    pthread_mutex_unlock(&sim_graph_lock);
    return r;
}

SIM_API CUresult CUDAAPI cuGraphNodeGetDependencies(CUgraphNode node, CUgraphNode *deps, size_t *n)
{
    return node_links(node, 0, deps, NULL, n);
}

SIM_API CUresult CUDAAPI cuGraphNodeGetDependencies_v2(CUgraphNode node, CUgraphNode *deps,
                                                       CUgraphEdgeData *edges, size_t *n)
{
    return node_links(node, 0, deps, edges, n);
}

SIM_API CUresult CUDAAPI cuGraphNodeGetDependentNodes(CUgraphNode node, CUgraphNode *outs,
                                                      size_t *n)
{
    return node_links(node, 1, outs, NULL, n);
}

SIM_API CUresult CUDAAPI cuGraphNodeGetDependentNodes_v2(CUgraphNode node, CUgraphNode *outs,
                                                         CUgraphEdgeData *edges, size_t *n)
{
    return node_links(node, 1, outs, edges, n);
}

/* Edges to add: nodes of g, no self edge, no existing edge, no pair twice.  Under
 * sim_graph_lock. */
static CUresult check_edges(CUgraph g, const CUgraphNode *from, const CUgraphNode *to, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!graph_node_ok(from[i]) || !graph_node_ok(to[i]) || from[i]->graph != g ||
            to[i]->graph != g || from[i] == to[i] || graph_vec_has(&to[i]->deps, from[i]))
            return CUDA_ERROR_INVALID_VALUE;
        for (size_t j = 0; j < i; j++)
            if (from[j] == from[i] && to[j] == to[i])
                return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

static CUresult add_deps(CUgraph g, const CUgraphNode *from, const CUgraphNode *to,
                         const CUgraphEdgeData *edges, size_t n)
{
    CUresult r = graph_enter_graph(g, !n || (from && to));
    if (r != CUDA_SUCCESS)
        return r;
    if (!graph_edges_zero(edges, n))
        return CUDA_ERROR_NOT_SUPPORTED;    /* programmatic edges are not simulated */
    pthread_mutex_lock(&sim_graph_lock);
    r = check_edges(g, from, to, n);
    for (size_t i = 0; r == CUDA_SUCCESS && i < n; i++)
        if (graph_vec_push(&to[i]->deps, from[i]) < 0 || graph_vec_push(&from[i]->outs, to[i]) < 0)
            r = CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_unlock(&sim_graph_lock);
    return r;
}

SIM_API CUresult CUDAAPI cuGraphAddDependencies(CUgraph g, const CUgraphNode *from,
                                                const CUgraphNode *to, size_t n)
{
    return add_deps(g, from, to, NULL, n);
}

SIM_API CUresult CUDAAPI cuGraphAddDependencies_v2(CUgraph g, const CUgraphNode *from,
                                                   const CUgraphNode *to,
                                                   const CUgraphEdgeData *edges, size_t n)
{
    return add_deps(g, from, to, edges, n);
}

SIM_API CUresult CUDAAPI cuGraphDestroyNode(CUgraphNode node)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&sim_graph_lock);
    if (!graph_node_ok(node) || node->graph->capturing) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        graph_node_unlink(node);
        graph_node_free(node);
    }
    pthread_mutex_unlock(&sim_graph_lock);
    return r;
}
