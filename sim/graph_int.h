/* SPDX-License-Identifier: MIT */
/*
 * graph_int.h - what the graph files share: the graph and node objects, the lock that guards
 * them, and the helpers one file offers the others.  graph.c makes graphs and nodes (and the
 * node-adding and parameter calls); graph_query.c the structure queries and edits;
 * graph_exec.c instantiation and launch; capture.c stream capture.  Nothing else includes it.
 */
#ifndef ELIXIR_SIM_GRAPH_INT_H
#define ELIXIR_SIM_GRAPH_INT_H

#include "sim.h"

#define GRAPH_MAGIC 0x48505247u
#define NODE_MAGIC 0x45444f4eu

/* Protects every graph, node, executable graph and capture (the Driver API documents graph
 * objects as not thread-safe; captures are shared between threads). */
extern pthread_mutex_t sim_graph_lock;

typedef struct node_vec {
    CUgraphNode *v;
    size_t n, cap;
} node_vec_t;

struct CUgraphNode_st {
    uint32_t magic;
    CUgraph graph;
    CUgraphNodeType type;
    CUcontext ctx;
    sim_op_t *op;               /* what the node does (never submitted itself); NULL: empty */
    node_vec_t deps, outs;      /* nodes this one depends on; nodes that depend on it */
    CUDA_MEMCPY3D copy;         /* memcpy nodes: the parameters */
    int from_extra;             /* kernel nodes: parameters last set through `extra` */
    void *extra[5];             /* ... and the `extra` array that GetParams returns then */
    size_t extra_size;
    uint64_t mark;              /* traversal scratch */
    size_t index;               /* position in graph->nodes (instantiation scratch) */
    size_t indeg;
};

struct CUgraph_st {
    uint32_t magic;
    node_vec_t nodes;           /* in creation order */
    int capturing;              /* a capture sequence is adding to it */
};

/* ---------------------------------------------------------------- graph.c */

/* Appends x to a; -1 when out of memory. */
int graph_vec_push(node_vec_t *a, CUgraphNode x);
/* x is in a. */
int graph_vec_has(const node_vec_t *a, CUgraphNode x);
/* g is a live graph; n a live node. */
int graph_ok(CUgraph g);
int graph_node_ok(CUgraphNode n);
/*
 * The opening check of the entry points: the driver is initialised, then args_ok (the caller's
 * checks of its pointer and flag arguments, which must not dereference anything) holds.
 */
CUresult graph_enter(int args_ok);
/* graph_enter(args_ok), then g is a live graph (looked at only once the driver is initialised). */
CUresult graph_enter_graph(CUgraph g, int args_ok);
/* Every element of e[0..n) is all zero bytes (e NULL: yes). */
int graph_edges_zero(const CUgraphEdgeData *e, size_t n);
/* Detach n from its graph and its neighbours.  Under sim_graph_lock. */
void graph_node_unlink(CUgraphNode n);
/* Frees n (unlinked) and its operation. */
void graph_node_free(CUgraphNode n);
/*
 * Add a node of `type` doing op (NULL: nothing) to g, after deps (already validated).  Takes
 * op, discarding it on failure.  Under sim_graph_lock; NULL when out of memory.
 */
CUgraphNode graph_node_new(CUgraph g, CUgraphNodeType type, CUcontext ctx, sim_op_t *op,
                           CUgraphNode const *deps, size_t ndeps);
/* Frees g and every node of it; graph_new makes an empty one (NULL when out of memory). */
void graph_free(CUgraph g);
CUgraph graph_new(void);
/* Dependencies given to an add call: nodes of g, no duplicates. */
CUresult graph_check_deps(CUgraph g, CUgraphNode const *deps, size_t n);
/* The kernel operation of node parameters, and the context it runs in. */
CUresult graph_kernel_op(const CUDA_KERNEL_NODE_PARAMS *p, CUcontext *ctx, sim_op_t **op);
/* The current form of the older kernel node parameters. */
CUDA_KERNEL_NODE_PARAMS graph_params_v2(const CUDA_KERNEL_NODE_PARAMS_v1 *p);
/*
 * graph_enter(p != NULL), then node is a live node of `type`, looked at without sim_graph_lock
 * (the set-parameter calls read the node's context before they take the lock).
 */
CUresult graph_enter_node(CUgraphNode node, CUgraphNodeType type, const void *p);

#endif
