/* SPDX-License-Identifier: MIT */
/*
 * graph.c - CUDA graphs and stream capture.
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
 *
 * Stream capture: while a stream captures, sim_submit hands its operations here
 * (sim_capture_op) and they become nodes that depend on the stream's current dependency set.
 * Rules implemented, from the Driver API reference and the programming guide:
 *  - capture cannot begin on the legacy stream (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) nor on a
 *    stream already capturing (CUDA_ERROR_ILLEGAL_STATE); the per-thread stream may capture.
 *  - cuEventRecord in a capturing stream makes a captured event (the stream's dependency set);
 *    cuStreamWaitEvent on it from another stream joins that stream to the capture (fork), and
 *    from a capturing stream of the same capture adds to its dependencies (join).  Waiting on
 *    an event of another capture is CUDA_ERROR_STREAM_CAPTURE_MERGE, waiting on an event not
 *    recorded in a capture CUDA_ERROR_STREAM_CAPTURE_ISOLATION.
 *  - cuStreamEndCapture must be called on the origin stream (else ..._UNMATCHED), from the
 *    beginning thread unless the mode was RELAXED (else ..._WRONG_THREAD); it takes every
 *    joined stream out of capture and fails with ..._UNJOINED when a joined stream's last work
 *    is not an ancestor of the origin stream's, and with ..._INVALIDATED (NULL graph) after an
 *    invalid operation.  A failed end still ends the capture.
 *  - Invalid operations return their error and invalidate the capture: querying or
 *    synchronising a capturing stream (..._UNSUPPORTED); cuCtxSynchronize while a stream of the
 *    context captures (..._UNSUPPORTED); any use of the legacy stream while a blocking stream
 *    of its context captures (..._IMPLICIT; cuStreamIsCapturing and cuStreamGetCaptureInfo on
 *    the legacy stream then return ..._IMPLICIT without invalidating); cuEventQuery or
 *    cuEventSynchronize on a captured event (CUDA_ERROR_CAPTURED_EVENT); stream callbacks
 *    (cuStreamAddCallback; cuLaunchHostFunc is captured) and stream-ordered frees.
 *  - Potentially unsafe calls (synchronous copies and memsets, cuCtxSynchronize, event queries
 *    and synchronisation) follow cuThreadExchangeStreamCaptureMode: in GLOBAL mode a thread may
 *    not make them while it has a non-RELAXED capture or another thread has a GLOBAL capture;
 *    in THREAD_LOCAL mode only its own non-RELAXED captures count; RELAXED allows them.  A
 *    refused call returns ..._UNSUPPORTED and invalidates the captures that forbade it.
 *  - Later work on an invalidated capture's streams fails with ..._INVALIDATED.
 * A graph launched into a capturing stream is captured node by node (not as a child graph).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define GRAPH_MAGIC 0x48505247u
#define NODE_MAGIC 0x45444f4eu
#define EXEC_MAGIC 0x43455847u

_Atomic int sim_captures;

/* Protects every graph, node, executable graph and capture (the Driver API documents graph
 * objects as not thread-safe; captures are shared between threads). */
static pthread_mutex_t graph_lock = PTHREAD_MUTEX_INITIALIZER;

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

typedef struct capture capture_t;

struct sim_graph_capture {      /* one stream's part in a capture sequence */
    capture_t *cap;
    CUstream stream;            /* holds a reference */
    node_vec_t deps;            /* what the stream's next node will depend on */
    CUgraphEdgeData *edges;     /* zeroed, parallel to deps (cuStreamGetCaptureInfo_v3) */
    size_t edges_cap;
    struct sim_graph_capture *next;
};

struct capture {
    uint64_t id;
    CUgraph graph;
    int own_graph;              /* created by cuStreamBeginCapture (not ...ToGraph) */
    CUstream origin;
    CUstreamCaptureMode mode;
    pthread_t thread;
    int invalid;
    struct sim_graph_capture *members;
    capture_t *next;
};

/* An event recorded in a capturing stream.  A later ordinary record moves the event's stream
 * or position away from the values kept here, and it is then no longer a captured event. */
typedef struct cap_event {
    CUevent e;                  /* holds a reference */
    capture_t *cap;
    CUstream stream;
    uint64_t seq;
    node_vec_t nodes;
    struct cap_event *next;
} cap_event_t;

static capture_t *captures;     /* in progress */
static cap_event_t *cap_events;
static uint64_t next_capture_id = 1;
static uint64_t mark_epoch;
static _Thread_local CUstreamCaptureMode thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

/* ---------------------------------------------------------------- small helpers */

static int vec_push(node_vec_t *a, CUgraphNode x)
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

static int vec_has(const node_vec_t *a, CUgraphNode x)
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

/* Replace a's contents with v[0..n); -1 when out of memory (a unchanged). */
static int vec_set(node_vec_t *a, CUgraphNode const *v, size_t n)
{
    node_vec_t b = { 0 };
    for (size_t i = 0; i < n; i++)
        if (!vec_has(&b, v[i]) && vec_push(&b, v[i]) < 0) {
            free(b.v);
            return -1;
        }
    free(a->v);
    *a = b;
    return 0;
}

static int graph_ok(CUgraph g)
{
    return g && g->magic == GRAPH_MAGIC;
}

static int node_ok(CUgraphNode n)
{
    return n && n->magic == NODE_MAGIC;
}

static int exec_ok(CUgraphExec x)
{
    return x && x->magic == EXEC_MAGIC;
}

/*
 * The opening check of the entry points: the driver is initialised, then args_ok (the caller's
 * checks of its pointer and flag arguments, which must not dereference anything) holds.
 */
static CUresult enter(int args_ok)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    return args_ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* enter(args_ok), then g is a live graph (looked at only once the driver is initialised). */
static CUresult enter_graph(CUgraph g, int args_ok)
{
    CUresult r = enter(args_ok);
    if (r == CUDA_SUCCESS && !graph_ok(g))
        r = CUDA_ERROR_INVALID_VALUE;
    return r;
}

static int edges_zero(const CUgraphEdgeData *e, size_t n)
{
    static const CUgraphEdgeData zero;
    for (size_t i = 0; e && i < n; i++)
        if (memcmp(&e[i], &zero, sizeof(zero)) != 0)
            return 0;
    return 1;
}

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

static void stream_ref(CUstream s)
{
    pthread_mutex_lock(&sim_lock);
    s->refs++;
    pthread_mutex_unlock(&sim_lock);
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

/* The CUDA_MEMCPY3D that describes a copy operation (for a captured memcpy node). */
static void copy_params(const sim_copy_t *c, int device, CUDA_MEMCPY3D *p)
{
    int owner;
    uint64_t bad = 0;
    memset(p, 0, sizeof(*p));
    if (sim_where(c->src, device, &owner, &bad) == SIM_WHERE_DEVICE) {
        p->srcMemoryType = CU_MEMORYTYPE_DEVICE;
        p->srcDevice = c->src;
    } else {
        p->srcMemoryType = CU_MEMORYTYPE_HOST;
        p->srcHost = (const void *)(uintptr_t)c->src;
    }
    if (sim_where(c->dst, device, &owner, &bad) == SIM_WHERE_DEVICE) {
        p->dstMemoryType = CU_MEMORYTYPE_DEVICE;
        p->dstDevice = c->dst;
    } else {
        p->dstMemoryType = CU_MEMORYTYPE_HOST;
        p->dstHost = (void *)(uintptr_t)c->dst;
    }
    p->srcPitch = c->spitch;
    p->srcHeight = c->sheight;
    p->dstPitch = c->dpitch;
    p->dstHeight = c->dheight;
    p->WidthInBytes = c->width;
    p->Height = c->height;
    p->Depth = c->depth;
}

/* The node's work runs in the node's context, wherever the graph is launched (cuda.h: a kernel
 * node's "context for the kernel task to run in", a memset or memcpy node's "context on which
 * to run the node"); a host node runs in none. */
static void node_op_ctx(CUgraphNode n)
{
    if (n->op && n->op->kind != SIM_OP_HOSTFN)
        n->op->ctx = n->ctx;
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

/* ---------------------------------------------------------------- nodes and graphs */

/* Detach n from its graph and its neighbours.  Under graph_lock. */
static void node_unlink(CUgraphNode n)
{
    for (size_t i = 0; i < n->deps.n; i++)
        vec_remove(&n->deps.v[i]->outs, n);
    for (size_t i = 0; i < n->outs.n; i++)
        vec_remove(&n->outs.v[i]->deps, n);
    vec_remove(&n->graph->nodes, n);
}

static void node_free(CUgraphNode n)
{
    sim_op_discard(n->op);
    free(n->deps.v);
    free(n->outs.v);
    n->magic = 0;
    free(n);
}

/*
 * Add a node of `type` doing op (NULL: nothing) to g, after deps (already validated).  Takes
 * op, discarding it on failure.  Under graph_lock; NULL when out of memory.
 */
static CUgraphNode node_new(CUgraph g, CUgraphNodeType type, CUcontext ctx, sim_op_t *op,
                            CUgraphNode const *deps, size_t ndeps)
{
    CUgraphNode n = calloc(1, sizeof(*n));
    if (!n || vec_push(&g->nodes, n) < 0) {
        free(n);
        sim_op_discard(op);
        return NULL;
    }
    *n = (struct CUgraphNode_st){ .magic = NODE_MAGIC, .graph = g, .type = type, .ctx = ctx,
                                  .op = op };
    node_op_ctx(n);
    for (size_t i = 0; i < ndeps; i++)
        if (vec_push(&n->deps, deps[i]) < 0 || vec_push(&deps[i]->outs, n) < 0) {
            node_unlink(n);     /* removes n only where it was added */
            node_free(n);
            return NULL;
        }
    return n;
}

static void graph_free(CUgraph g)
{
    for (size_t i = 0; i < g->nodes.n; i++)
        node_free(g->nodes.v[i]);
    free(g->nodes.v);
    g->magic = 0;
    free(g);
}

static CUgraph graph_new(void)
{
    CUgraph g = calloc(1, sizeof(*g));
    if (g)
        g->magic = GRAPH_MAGIC;
    return g;
}

/* Dependencies given to an add call: nodes of g, no duplicates. */
static CUresult check_deps(CUgraph g, CUgraphNode const *deps, size_t n)
{
    if (n && !deps)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < n; i++) {
        if (!node_ok(deps[i]) || deps[i]->graph != g)
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
    pthread_mutex_lock(&graph_lock);
    CUresult r = check_deps(g, deps, ndeps);
    CUgraphNode n = NULL;
    if (r == CUDA_SUCCESS) {
        n = node_new(g, type, ctx, op, deps, ndeps);
        r = n ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
        op = NULL;
    }
    if (n)
        *out = n;
    pthread_mutex_unlock(&graph_lock);
    sim_op_discard(op);
    return r;
}

/* ---------------------------------------------------------------- captures */

static void invalidate(capture_t *c, const char *why)
{
    if (!c->invalid)
        SIM_WARN("stream capture %llu invalidated: %s", (unsigned long long)c->id, why);
    c->invalid = 1;
}

static struct sim_graph_capture *member_add(capture_t *c, CUstream s)
{
    struct sim_graph_capture *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->cap = c;
    m->stream = s;
    m->next = c->members;
    c->members = m;
    stream_ref(s);
    s->capture = m;
    return m;
}

/* The captured-event record of e that is still current, or NULL.  Under graph_lock. */
static cap_event_t *find_captured(CUevent e)
{
    for (cap_event_t *ce = cap_events; ce; ce = ce->next) {
        if (ce->e != e)
            continue;
        pthread_mutex_lock(&sim_lock);
        int current = e->stream == ce->stream && e->seq == ce->seq;
        pthread_mutex_unlock(&sim_lock);
        return current ? ce : NULL;
    }
    return NULL;
}

/* Captures with a blocking stream in ctx, which the legacy stream would implicitly depend on;
 * invalidated when `bad` is set.  Under graph_lock. */
static int legacy_conflict(CUcontext ctx, int bad)
{
    int found = 0;
    for (capture_t *c = captures; c; c = c->next)
        for (struct sim_graph_capture *m = c->members; m; m = m->next)
            if (m->stream->ctx == ctx && sim_stream_blocking(m->stream)) {
                found = 1;
                if (bad)
                    invalidate(c, "the legacy stream was used while a blocking stream captures");
                break;
            }
    return found;
}

/* Forget the events recorded in capture c; one whose latest record was in it is marked, so
 * that querying or synchronizing it fails until it is recorded again.  Under graph_lock. */
static void drop_events(capture_t *c)
{
    for (cap_event_t **p = &cap_events; *p;) {
        cap_event_t *ce = *p;
        if (ce->cap != c) {
            p = &ce->next;
            continue;
        }
        *p = ce->next;
        pthread_mutex_lock(&sim_lock);
        if (ce->e->stream == ce->stream && ce->e->seq == ce->seq)
            ce->e->capture_ended = 1;
        sim_event_unref_locked(ce->e);
        pthread_mutex_unlock(&sim_lock);
        free(ce->nodes.v);
        free(ce);
    }
}

/* Take every stream out of capture c, drop its captured events and unlink it.  Under
 * graph_lock. */
static void capture_detach(capture_t *c)
{
    while (c->members) {
        struct sim_graph_capture *m = c->members;
        c->members = m->next;
        m->stream->capture = NULL;
        pthread_mutex_lock(&sim_lock);
        sim_stream_unref_locked(m->stream);
        pthread_mutex_unlock(&sim_lock);
        free(m->deps.v);
        free(m->edges);
        free(m);
    }
    drop_events(c);
    for (capture_t **p = &captures; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    atomic_fetch_sub(&sim_captures, 1);
}

static CUresult capture_start(CUstream s, CUgraph g, CUgraphNode const *deps, size_t ndeps,
                              CUstreamCaptureMode mode)
{
    capture_t *c = calloc(1, sizeof(*c));
    CUgraph own = g ? NULL : graph_new();
    node_vec_t initial = { 0 };
    if (!c || (!g && !own) || vec_set(&initial, deps, ndeps) < 0 || !member_add(c, s)) {
        free(c);
        if (own)
            graph_free(own);
        free(initial.v);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    c->members->deps = initial;
    c->id = next_capture_id++;
    c->graph = g ? g : own;
    c->own_graph = !g;
    c->origin = s;
    c->mode = mode;
    c->thread = pthread_self();
    c->graph->capturing = 1;
    c->next = captures;
    captures = c;
    atomic_fetch_add(&sim_captures, 1);
    return CUDA_SUCCESS;
}

/* Mark every node that `from` depends on, directly or not, and `from` itself. */
static void mark_ancestors(const node_vec_t *from, uint64_t epoch)
{
    node_vec_t stack = { 0 };
    for (size_t i = 0; i < from->n; i++)
        if (vec_push(&stack, from->v[i]) < 0)
            break;
    while (stack.n) {
        CUgraphNode n = stack.v[--stack.n];
        if (n->mark == epoch)
            continue;
        n->mark = epoch;
        for (size_t i = 0; i < n->deps.n; i++)
            if (n->deps.v[i]->mark != epoch && vec_push(&stack, n->deps.v[i]) < 0)
                break;
    }
    free(stack.v);
}

/* A joined stream whose last work the origin stream does not depend on. */
static CUstream unjoined(capture_t *c)
{
    uint64_t epoch = ++mark_epoch;
    mark_ancestors(&c->origin->capture->deps, epoch);
    for (struct sim_graph_capture *m = c->members; m; m = m->next)
        for (size_t i = 0; m->stream != c->origin && i < m->deps.n; i++)
            if (m->deps.v[i]->mark != epoch)
                return m->stream;
    return NULL;
}

/* End capture c; *out receives the graph, or NULL when the capture failed. */
static CUresult capture_finish(capture_t *c, CUgraph *out)
{
    CUresult r = CUDA_SUCCESS;
    CUstream loose = c->invalid ? NULL : unjoined(c);
    if (c->invalid) {
        r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    } else if (loose) {
        SIM_WARN("stream capture %llu: work captured in stream %llu was not joined back into "
                 "the origin stream", (unsigned long long)c->id, (unsigned long long)loose->id);
        r = CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
    }
    CUgraph g = c->graph;
    capture_detach(c);
    g->capturing = 0;
    *out = r == CUDA_SUCCESS ? g : NULL;
    if (r != CUDA_SUCCESS && c->own_graph)
        graph_free(g);
    free(c);
    return r;
}

/* ---------------------------------------------------------------- what a capture does with ops */

static CUresult capture_work(struct sim_graph_capture *m, sim_op_t *op, const CUDA_MEMCPY3D *cp)
{
    static const CUgraphNodeType types[] = {
        [SIM_OP_KERNEL] = CU_GRAPH_NODE_TYPE_KERNEL, [SIM_OP_COPY] = CU_GRAPH_NODE_TYPE_MEMCPY,
        [SIM_OP_MEMSET] = CU_GRAPH_NODE_TYPE_MEMSET, [SIM_OP_HOSTFN] = CU_GRAPH_NODE_TYPE_HOST,
    };
    if (op->kind == SIM_OP_COPY) {
        free(op->u.copy.staging);       /* the node reads its source when it runs */
        op->u.copy.staging = NULL;
    }
    /* (A graph launched into the capture keeps its nodes' contexts.) */
    CUgraphNode n = node_new(m->cap->graph, types[op->kind], op->ctx ? op->ctx : m->stream->ctx,
                             op, m->deps.v, m->deps.n);
    if (!n) {
        invalidate(m->cap, "out of memory");
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (cp)
        n->copy = *cp;
    m->deps.n = 0;
    if (vec_push(&m->deps, n) < 0) {
        invalidate(m->cap, "out of memory");
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return CUDA_SUCCESS;
}

static CUresult capture_record(struct sim_graph_capture *m, CUevent e)
{
    cap_event_t *ce = cap_events;
    while (ce && ce->e != e)
        ce = ce->next;
    if (!ce) {
        ce = calloc(1, sizeof(*ce));
        if (!ce)
            return CUDA_ERROR_OUT_OF_MEMORY;
        ce->e = e;
        ce->next = cap_events;
        cap_events = ce;
        pthread_mutex_lock(&sim_lock);
        e->refs++;
        pthread_mutex_unlock(&sim_lock);
    }
    pthread_mutex_lock(&sim_lock);
    ce->stream = e->stream;
    ce->seq = e->seq;
    pthread_mutex_unlock(&sim_lock);
    ce->cap = m->cap;
    return vec_set(&ce->nodes, m->deps.v, m->deps.n) < 0 ? CUDA_ERROR_OUT_OF_MEMORY
                                                         : CUDA_SUCCESS;
}

static CUresult capture_wait(struct sim_graph_capture *m, CUevent e)
{
    cap_event_t *ce = find_captured(e);
    if (!ce) {
        invalidate(m->cap, "a capturing stream waited on an event recorded outside it");
        return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
    }
    if (ce->cap != m->cap) {
        invalidate(m->cap, "waiting on an event of another capture would merge them");
        return CUDA_ERROR_STREAM_CAPTURE_MERGE;
    }
    for (size_t i = 0; i < ce->nodes.n; i++)
        if (!vec_has(&m->deps, ce->nodes.v[i]) && vec_push(&m->deps, ce->nodes.v[i]) < 0)
            return CUDA_ERROR_OUT_OF_MEMORY;
    return CUDA_SUCCESS;
}

/* A stream that is not capturing waits on a captured event: it joins that capture. */
static CUresult capture_join(CUstream s, cap_event_t *ce)
{
    if (ce->cap->invalid)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (s->kind == SIM_STREAM_LEGACY) {
        invalidate(ce->cap, "the legacy stream waited on a captured event");
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    }
    struct sim_graph_capture *m = member_add(ce->cap, s);
    if (!m || vec_set(&m->deps, ce->nodes.v, ce->nodes.n) < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    return CUDA_SUCCESS;
}

/* Op submitted to capturing stream m; *kept set when a node took it. */
static CUresult capture_op_locked(struct sim_graph_capture *m, sim_op_t *op,
                                  const CUDA_MEMCPY3D *cp, int *kept)
{
    capture_t *c = m->cap;
    if (c->invalid)
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    switch (op->kind) {
    case SIM_OP_HOSTFN:
        if (op->u.host.cb) {
            invalidate(c, "cuStreamAddCallback cannot be captured (cuLaunchHostFunc can)");
            return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        }
        /* fall through */
    case SIM_OP_KERNEL:
    case SIM_OP_COPY:
    case SIM_OP_MEMSET:
        *kept = 1;
        return capture_work(m, op, cp);
    case SIM_OP_EVENT_RECORD:
        return capture_record(m, op->u.event);
    case SIM_OP_EVENT_WAIT:
        return capture_wait(m, op->u.event);
    case SIM_OP_FREE:
        SIM_WARN("cuMemFreeAsync in a capturing stream: memory nodes are not simulated");
        invalidate(c, "stream-ordered free captured");
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    default:
        return CUDA_SUCCESS;
    }
}

int sim_capture_op(CUstream s, sim_op_t *op, CUresult *res)
{
    CUDA_MEMCPY3D cp, *pcp = NULL;
    cap_event_t *ce;
    int taken = 1, kept = 0;

    if (s->capture && op->kind == SIM_OP_COPY) {   /* outside graph_lock: it reads ranges */
        copy_params(&op->u.copy, op->ctx ? op->ctx->device : s->ctx->device, &cp);
        pcp = &cp;
    }
    pthread_mutex_lock(&graph_lock);
    if (s->capture)
        *res = capture_op_locked(s->capture, op, pcp, &kept);
    else if (op->kind == SIM_OP_EVENT_WAIT && (ce = find_captured(op->u.event)))
        *res = capture_join(s, ce);
    else if (s->kind == SIM_STREAM_LEGACY && legacy_conflict(s->ctx, 1))
        *res = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    else
        taken = 0;
    pthread_mutex_unlock(&graph_lock);
    if (taken && !kept)
        sim_op_discard(op);
    return taken;
}

/* ---------------------------------------------------------------- calls that captures forbid */

CUresult sim_capture_sync_check(CUstream s)
{
    CUresult r = CUDA_SUCCESS;
    if (!atomic_load(&sim_captures))
        return r;
    pthread_mutex_lock(&graph_lock);
    if (s->capture) {
        invalidate(s->capture->cap, "a capturing stream was queried or synchronized");
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    } else if (s->kind == SIM_STREAM_LEGACY && legacy_conflict(s->ctx, 1)) {
        r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    }
    pthread_mutex_unlock(&graph_lock);
    return r;
}

CUresult sim_capture_unsafe(const char *what)
{
    if (!atomic_load(&sim_captures) || thread_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_SUCCESS;
    pthread_t self = pthread_self();
    int found = 0;
    pthread_mutex_lock(&graph_lock);
    for (capture_t *c = captures; c; c = c->next) {
        int mine = pthread_equal(c->thread, self);
        if ((mine && c->mode != CU_STREAM_CAPTURE_MODE_RELAXED) ||
            (!mine && thread_mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
             c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL)) {
            char why[128];
            snprintf(why, sizeof(why), "potentially unsafe call during capture: %s", what);
            invalidate(c, why);
            found = 1;
        }
    }
    pthread_mutex_unlock(&graph_lock);
    return found ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

CUresult sim_capture_ctx_sync(CUcontext ctx)
{
    int found = 0;
    if (!atomic_load(&sim_captures))
        return CUDA_SUCCESS;
    pthread_mutex_lock(&graph_lock);
    for (capture_t *c = captures; c; c = c->next)
        for (struct sim_graph_capture *m = c->members; m; m = m->next)
            if (m->stream->ctx == ctx) {
                invalidate(c, "cuCtxSynchronize while a stream of the context captures");
                found = 1;
                break;
            }
    pthread_mutex_unlock(&graph_lock);
    return found ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : sim_capture_unsafe("cuCtxSynchronize");
}

CUresult sim_capture_event_check(CUevent e, const char *what)
{
    if (!atomic_load(&sim_captures))
        return CUDA_SUCCESS;
    pthread_mutex_lock(&graph_lock);
    cap_event_t *ce = find_captured(e);
    if (ce)
        invalidate(ce->cap, "an event recorded in the capture was queried or synchronized");
    pthread_mutex_unlock(&graph_lock);
    return ce ? CUDA_ERROR_CAPTURED_EVENT : sim_capture_unsafe(what);
}

CUresult sim_capture_refuse(CUstream s, const char *what)
{
    if (!atomic_load(&sim_captures))
        return CUDA_SUCCESS;
    pthread_mutex_lock(&graph_lock);
    struct sim_graph_capture *m = s->capture;
    if (m) {
        SIM_WARN("%s in a capturing stream is not supported by the simulator", what);
        invalidate(m->cap, what);
    }
    pthread_mutex_unlock(&graph_lock);
    return m ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

CUresult sim_capture_decline(CUstream s, const char *what)
{
    if (!atomic_load(&sim_captures))
        return CUDA_SUCCESS;
    pthread_mutex_lock(&graph_lock);
    int capturing = s->capture != NULL;
    pthread_mutex_unlock(&graph_lock);
    if (!capturing)
        return CUDA_SUCCESS;
    SIM_WARN("%s in a capturing stream: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; the capture "
             "goes on without it, as on the driver", what);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

/* ---------------------------------------------------------------- capture API */

static CUresult begin_capture(CUstream h, int ptds, CUgraph g, CUgraphNode const *deps,
                              const CUgraphEdgeData *edges, size_t ndeps, CUstreamCaptureMode mode)
{
    CUstream s;
    CUresult r = sim_stream_resolve(h, ptds, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED || !edges_zero(edges, ndeps))
        return CUDA_ERROR_INVALID_VALUE;
    if (s->kind == SIM_STREAM_LEGACY)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    pthread_mutex_lock(&graph_lock);
    if (s->capture)
        r = CUDA_ERROR_ILLEGAL_STATE;
    else if (g && (!graph_ok(g) || g->capturing))
        r = CUDA_ERROR_INVALID_VALUE;
    else if (g)
        r = check_deps(g, deps, ndeps);
    if (r == CUDA_SUCCESS)
        r = capture_start(s, g, deps, g ? ndeps : 0, mode);
    pthread_mutex_unlock(&graph_lock);
    return r;
}

SIM_API CUresult CUDAAPI cuStreamBeginCapture(CUstream h)
{
    return begin_capture(h, 0, NULL, NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

SIM_API CUresult CUDAAPI cuStreamBeginCapture_ptsz(CUstream h)
{
    return begin_capture(h, 1, NULL, NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

SIM_API CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream h, CUstreamCaptureMode mode)
{
    return begin_capture(h, 0, NULL, NULL, NULL, 0, mode);
}

SIM_API CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream h, CUstreamCaptureMode mode)
{
    return begin_capture(h, 1, NULL, NULL, NULL, 0, mode);
}

SIM_API CUresult CUDAAPI cuStreamBeginCaptureToGraph(CUstream h, CUgraph g,
                                                     const CUgraphNode *deps,
                                                     const CUgraphEdgeData *edges, size_t n,
                                                     CUstreamCaptureMode mode)
{
    return g ? begin_capture(h, 0, g, deps, edges, n, mode) : CUDA_ERROR_INVALID_VALUE;
}

SIM_API CUresult CUDAAPI cuStreamBeginCaptureToGraph_ptsz(CUstream h, CUgraph g,
                                                          const CUgraphNode *deps,
                                                          const CUgraphEdgeData *edges, size_t n,
                                                          CUstreamCaptureMode mode)
{
    return g ? begin_capture(h, 1, g, deps, edges, n, mode) : CUDA_ERROR_INVALID_VALUE;
}

static CUresult end_capture(CUstream h, int ptds, CUgraph *out)
{
    CUstream s;
    CUresult r = sim_stream_resolve(h, ptds, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&graph_lock);
    struct sim_graph_capture *m = s->capture;
    if (!m) {
        r = CUDA_ERROR_ILLEGAL_STATE;
    } else if (m->cap->origin != s) {
        invalidate(m->cap, "cuStreamEndCapture on a stream that did not begin the capture");
        r = CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
    } else if (m->cap->mode != CU_STREAM_CAPTURE_MODE_RELAXED &&
               !pthread_equal(m->cap->thread, pthread_self())) {
        invalidate(m->cap, "cuStreamEndCapture from another thread");
        r = CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
    } else {
        r = capture_finish(m->cap, out);
    }
    pthread_mutex_unlock(&graph_lock);
    return r;
}

SIM_API CUresult CUDAAPI cuStreamEndCapture(CUstream h, CUgraph *g) { return end_capture(h, 0, g); }
SIM_API CUresult CUDAAPI cuStreamEndCapture_ptsz(CUstream h, CUgraph *g) { return end_capture(h, 1, g); }

static CUstreamCaptureStatus status_of(const struct sim_graph_capture *m)
{
    return !m ? CU_STREAM_CAPTURE_STATUS_NONE
              : m->cap->invalid ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                : CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

typedef struct capture_query {
    CUstreamCaptureStatus *status;
    cuuint64_t *id;
    CUgraph *graph;
    const CUgraphNode **deps;
    const CUgraphEdgeData **edges;
    size_t *ndeps;
} capture_query_t;

/* Fill the optional outputs of an active capture m (zeroes when not active). */
static CUresult query_fill(struct sim_graph_capture *m, const capture_query_t *q)
{
    int active = *q->status == CU_STREAM_CAPTURE_STATUS_ACTIVE;
    if (q->edges && active && m->edges_cap < m->deps.n) {
        CUgraphEdgeData *e = calloc(m->deps.n, sizeof(*e));
        if (!e)
            return CUDA_ERROR_OUT_OF_MEMORY;
        free(m->edges);
        m->edges = e;
        m->edges_cap = m->deps.n;
    }
    if (q->id)
        *q->id = active ? m->cap->id : 0;
    if (q->graph)
        *q->graph = active ? m->cap->graph : NULL;
    if (q->deps)
        *q->deps = active ? m->deps.v : NULL;
    if (q->edges)
        *q->edges = active && m->deps.n ? m->edges : NULL;
    if (q->ndeps)
        *q->ndeps = active ? m->deps.n : 0;
    return CUDA_SUCCESS;
}

static CUresult capture_info(CUstream h, int ptds, const capture_query_t *q)
{
    CUstream s;
    CUresult r = sim_stream_resolve(h, ptds, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (!q->status || (q->edges && !q->deps))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&graph_lock);
    if (s->kind == SIM_STREAM_LEGACY && legacy_conflict(s->ctx, 0)) {
        r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    } else {
        *q->status = status_of(s->capture);
        r = query_fill(s->capture, q);
    }
    pthread_mutex_unlock(&graph_lock);
    return r;
}

SIM_API CUresult CUDAAPI cuStreamIsCapturing(CUstream h, CUstreamCaptureStatus *st)
{
    capture_query_t q = { .status = st };
    return capture_info(h, 0, &q);
}

SIM_API CUresult CUDAAPI cuStreamIsCapturing_ptsz(CUstream h, CUstreamCaptureStatus *st)
{
    capture_query_t q = { .status = st };
    return capture_info(h, 1, &q);
}

SIM_API CUresult CUDAAPI cuStreamGetCaptureInfo(CUstream h, CUstreamCaptureStatus *st,
                                                cuuint64_t *id)
{
    capture_query_t q = { .status = st, .id = id };
    return capture_info(h, 0, &q);
}

SIM_API CUresult CUDAAPI cuStreamGetCaptureInfo_ptsz(CUstream h, CUstreamCaptureStatus *st,
                                                     cuuint64_t *id)
{
    capture_query_t q = { .status = st, .id = id };
    return capture_info(h, 1, &q);
}

SIM_API CUresult CUDAAPI cuStreamGetCaptureInfo_v2(CUstream h, CUstreamCaptureStatus *st,
                                                   cuuint64_t *id, CUgraph *g,
                                                   const CUgraphNode **deps, size_t *n)
{
    capture_query_t q = { st, id, g, deps, NULL, n };
    return capture_info(h, 0, &q);
}

SIM_API CUresult CUDAAPI cuStreamGetCaptureInfo_v2_ptsz(CUstream h, CUstreamCaptureStatus *st,
                                                        cuuint64_t *id, CUgraph *g,
                                                        const CUgraphNode **deps, size_t *n)
{
    capture_query_t q = { st, id, g, deps, NULL, n };
    return capture_info(h, 1, &q);
}

SIM_API CUresult CUDAAPI cuStreamGetCaptureInfo_v3(CUstream h, CUstreamCaptureStatus *st,
                                                   cuuint64_t *id, CUgraph *g,
                                                   const CUgraphNode **deps,
                                                   const CUgraphEdgeData **edges, size_t *n)
{
    capture_query_t q = { st, id, g, deps, edges, n };
    return capture_info(h, 0, &q);
}

SIM_API CUresult CUDAAPI cuStreamGetCaptureInfo_v3_ptsz(CUstream h, CUstreamCaptureStatus *st,
                                                        cuuint64_t *id, CUgraph *g,
                                                        const CUgraphNode **deps,
                                                        const CUgraphEdgeData **edges, size_t *n)
{
    capture_query_t q = { st, id, g, deps, edges, n };
    return capture_info(h, 1, &q);
}

static CUresult update_deps(CUstream h, int ptds, CUgraphNode *deps, const CUgraphEdgeData *edges,
                            size_t n, unsigned flags)
{
    CUstream s;
    CUresult r = sim_stream_resolve(h, ptds, &s);
    if (r != CUDA_SUCCESS)
        return r;
    if (flags > CU_STREAM_SET_CAPTURE_DEPENDENCIES || !edges_zero(edges, n))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&graph_lock);
    struct sim_graph_capture *m = s->capture;
    if (!m)
        r = CUDA_ERROR_ILLEGAL_STATE;
    else if (m->cap->invalid)
        r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    else
        r = check_deps(m->cap->graph, deps, n);
    if (r == CUDA_SUCCESS && flags == CU_STREAM_SET_CAPTURE_DEPENDENCIES)
        m->deps.n = 0;
    for (size_t i = 0; r == CUDA_SUCCESS && i < n; i++)
        if (!vec_has(&m->deps, deps[i]) && vec_push(&m->deps, deps[i]) < 0)
            r = CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_unlock(&graph_lock);
    return r;
}

SIM_API CUresult CUDAAPI cuStreamUpdateCaptureDependencies(CUstream h, CUgraphNode *deps,
                                                           size_t n, unsigned int flags)
{
    return update_deps(h, 0, deps, NULL, n, flags);
}

SIM_API CUresult CUDAAPI cuStreamUpdateCaptureDependencies_ptsz(CUstream h, CUgraphNode *deps,
                                                                size_t n, unsigned int flags)
{
    return update_deps(h, 1, deps, NULL, n, flags);
}

SIM_API CUresult CUDAAPI cuStreamUpdateCaptureDependencies_v2(CUstream h, CUgraphNode *deps,
                                                              const CUgraphEdgeData *edges,
                                                              size_t n, unsigned int flags)
{
    return update_deps(h, 0, deps, edges, n, flags);
}

SIM_API CUresult CUDAAPI cuStreamUpdateCaptureDependencies_v2_ptsz(CUstream h, CUgraphNode *deps,
                                                                   const CUgraphEdgeData *edges,
                                                                   size_t n, unsigned int flags)
{
    return update_deps(h, 1, deps, edges, n, flags);
}

SIM_API CUresult CUDAAPI cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!mode || (unsigned)*mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    CUstreamCaptureMode old = thread_mode;
    thread_mode = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- graphs */

SIM_API CUresult CUDAAPI cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
    CUresult r = enter(phGraph && !flags);
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
    pthread_mutex_lock(&graph_lock);
    if (!graph_ok(g) || g->capturing)
        r = CUDA_ERROR_INVALID_VALUE;
    else
        graph_free(g);
    pthread_mutex_unlock(&graph_lock);
    return r;
}

/* The kernel operation of node parameters, and the context it runs in. */
static CUresult kernel_op(const CUDA_KERNEL_NODE_PARAMS *p, CUcontext *ctx, sim_op_t **op)
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

/* Remember which argument form was set last, for GetParams.  Under graph_lock. */
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

static CUDA_KERNEL_NODE_PARAMS params_v2(const CUDA_KERNEL_NODE_PARAMS_v1 *p)
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
    CUresult r = enter_graph(g, ph && p);
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = kernel_op(p, &ctx, &op)) != CUDA_SUCCESS)
        return r;
    r = add_node(ph, g, deps, n, CU_GRAPH_NODE_TYPE_KERNEL, ctx, op);
    if (r == CUDA_SUCCESS) {
        pthread_mutex_lock(&graph_lock);
        kernel_form(*ph, p->extra != NULL);
        pthread_mutex_unlock(&graph_lock);
    }
    return r;
}

SIM_API CUresult CUDAAPI cuGraphAddKernelNode(CUgraphNode *ph, CUgraph g, const CUgraphNode *deps,
                                              size_t n, const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS p2 = params_v2(p);
    return cuGraphAddKernelNode_v2(ph, g, deps, n, &p2);
}

/* Under graph_lock: n is a live node of `type`. */
static CUresult node_is(CUgraphNode n, CUgraphNodeType type)
{
    return node_ok(n) && n->type == type ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/*
 * enter(p != NULL), then node is a live node of `type`, looked at without graph_lock (the
 * set-parameter calls read the node's context before they take the lock).
 */
static CUresult enter_node(CUgraphNode node, CUgraphNodeType type, const void *p)
{
    CUresult r = enter(p != NULL);
    return r == CUDA_SUCCESS ? node_is(node, type) : r;
}

/*
 * The opening of a get/set-parameters call: enter(p != NULL), then graph_lock is taken and
 * node must be a live node of `type`.  On CUDA_SUCCESS the lock is held and the caller
 * releases it; on an error it is not held.
 */
static CUresult lock_node(CUgraphNode node, CUgraphNodeType type, const void *p)
{
    CUresult r = enter(p != NULL);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&graph_lock);
    if ((r = node_is(node, type)) != CUDA_SUCCESS)
        pthread_mutex_unlock(&graph_lock);
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
    pthread_mutex_unlock(&graph_lock);
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
    pthread_mutex_lock(&graph_lock);
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
    pthread_mutex_unlock(&graph_lock);
    sim_op_discard(op);
    return r;
}

SIM_API CUresult CUDAAPI cuGraphKernelNodeSetParams_v2(CUgraphNode node,
                                                       const CUDA_KERNEL_NODE_PARAMS *p)
{
    CUcontext ctx;
    sim_op_t *op;
    CUresult r = enter(p != NULL);
    if (r != CUDA_SUCCESS)
        return r;
    if (!node_ok(node))
        return CUDA_ERROR_INVALID_HANDLE;
    if ((r = kernel_op(p, &ctx, &op)) != CUDA_SUCCESS)
        return r;
    return node_swap_op(node, CU_GRAPH_NODE_TYPE_KERNEL, op, p->extra != NULL, NULL);
}

SIM_API CUresult CUDAAPI cuGraphKernelNodeSetParams(CUgraphNode node,
                                                    const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS p2 = params_v2(p);
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
    CUresult r = enter_graph(g, ph && p);
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = node_ctx(ctx, &ctx)) != CUDA_SUCCESS ||
        (r = sim_copy_op_build(p, ctx->device, &op)) != CUDA_SUCCESS)
        return r;
    r = add_node(ph, g, deps, n, CU_GRAPH_NODE_TYPE_MEMCPY, ctx, op);
    if (r == CUDA_SUCCESS) {
        pthread_mutex_lock(&graph_lock);
        (*ph)->copy = *p;
        pthread_mutex_unlock(&graph_lock);
    }
    return r;
}

SIM_API CUresult CUDAAPI cuGraphMemcpyNodeGetParams(CUgraphNode node, CUDA_MEMCPY3D *p)
{
    CUresult r = lock_node(node, CU_GRAPH_NODE_TYPE_MEMCPY, p);
    if (r != CUDA_SUCCESS)
        return r;
    *p = node->copy;
    pthread_mutex_unlock(&graph_lock);
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuGraphMemcpyNodeSetParams(CUgraphNode node, const CUDA_MEMCPY3D *p)
{
    sim_op_t *op;
    CUresult r = enter_node(node, CU_GRAPH_NODE_TYPE_MEMCPY, p);
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
    CUresult r = enter_graph(g, ph && p);
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
    pthread_mutex_unlock(&graph_lock);
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuGraphMemsetNodeSetParams(CUgraphNode node,
                                                    const CUDA_MEMSET_NODE_PARAMS *p)
{
    sim_op_t *op;
    CUresult r = enter_node(node, CU_GRAPH_NODE_TYPE_MEMSET, p);
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = memset_op(p, node->ctx->device, &op)) != CUDA_SUCCESS)
        return r;
    return node_swap_op(node, CU_GRAPH_NODE_TYPE_MEMSET, op, 0, NULL);
}

SIM_API CUresult CUDAAPI cuGraphAddHostNode(CUgraphNode *ph, CUgraph g, const CUgraphNode *deps,
                                            size_t n, const CUDA_HOST_NODE_PARAMS *p)
{
    CUresult r = enter_graph(g, ph && p);
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
    pthread_mutex_unlock(&graph_lock);
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
    pthread_mutex_unlock(&graph_lock);
    return r;
}

SIM_API CUresult CUDAAPI cuGraphAddEmptyNode(CUgraphNode *ph, CUgraph g, const CUgraphNode *deps,
                                             size_t n)
{
    CUresult r = enter_graph(g, ph != NULL);
    if (r != CUDA_SUCCESS)
        return r;
    return add_node(ph, g, deps, n, CU_GRAPH_NODE_TYPE_EMPTY, sim_ctx_current(), NULL);
}

SIM_API CUresult CUDAAPI cuGraphNodeGetType(CUgraphNode node, CUgraphNodeType *type)
{
    CUresult r = enter(type != NULL);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&graph_lock);
    if (node_ok(node))
        *type = node->type;
    else
        r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&graph_lock);
    return r;
}

/* ---------------------------------------------------------------- structure queries */

SIM_API CUresult CUDAAPI cuGraphGetNodes(CUgraph g, CUgraphNode *nodes, size_t *num)
{
    CUresult r = enter_graph(g, num != NULL);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&graph_lock);
    list_out(&g->nodes, nodes, num);
    pthread_mutex_unlock(&graph_lock);
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuGraphGetRootNodes(CUgraph g, CUgraphNode *roots, size_t *num)
{
    node_vec_t v = { 0 };
    CUresult r = enter_graph(g, num != NULL);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&graph_lock);
    for (size_t i = 0; i < g->nodes.n && r == CUDA_SUCCESS; i++)
        if (!g->nodes.v[i]->deps.n && vec_push(&v, g->nodes.v[i]) < 0)
            r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS)
        list_out(&v, roots, num);
    pthread_mutex_unlock(&graph_lock);
    free(v.v);
    return r;
}

/* Edges of g (from -> to), in node order; both arrays NULL to count them. */
static CUresult get_edges(CUgraph g, CUgraphNode *from, CUgraphNode *to, CUgraphEdgeData *edges,
                          size_t *num)
{
    CUresult r = enter_graph(g, num && !from == !to && (!edges || from));
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&graph_lock);
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
    pthread_mutex_unlock(&graph_lock);
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
    CUresult r = enter(num && (!edges || out));
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&graph_lock);
    if (!node_ok(node)) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        for (size_t i = 0; edges && i < *num; i++)
            memset(&edges[i], 0, sizeof(edges[i]));
        list_out(outs ? &node->outs : &node->deps, out, num);
    }
    pthread_mutex_unlock(&graph_lock);
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

/* Edges to add: nodes of g, no self edge, no existing edge, no pair twice.  Under graph_lock. */
static CUresult check_edges(CUgraph g, const CUgraphNode *from, const CUgraphNode *to, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!node_ok(from[i]) || !node_ok(to[i]) || from[i]->graph != g || to[i]->graph != g ||
            from[i] == to[i] || vec_has(&to[i]->deps, from[i]))
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
    CUresult r = enter_graph(g, !n || (from && to));
    if (r != CUDA_SUCCESS)
        return r;
    if (!edges_zero(edges, n))
        return CUDA_ERROR_NOT_SUPPORTED;    /* programmatic edges are not simulated */
    pthread_mutex_lock(&graph_lock);
    r = check_edges(g, from, to, n);
    for (size_t i = 0; r == CUDA_SUCCESS && i < n; i++)
        if (vec_push(&to[i]->deps, from[i]) < 0 || vec_push(&from[i]->outs, to[i]) < 0)
            r = CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_unlock(&graph_lock);
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
    pthread_mutex_lock(&graph_lock);
    if (!node_ok(node) || node->graph->capturing) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        node_unlink(node);
        node_free(node);
    }
    pthread_mutex_unlock(&graph_lock);
    return r;
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
 * Returns 0, -ENOMEM, or -ELOOP for a cycle (*bad: a node on or after it).  Under graph_lock.
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

/* Copy the operations of g into x in launch order.  Under graph_lock. */
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
    CUresult r = enter_graph(g, px && !(flags & ~known) &&
                                    !((flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH) &&
                                      (flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)));
    if (r != CUDA_SUCCESS)
        return r;
    CUgraphExec x = calloc(1, sizeof(*x));
    if (!x)
        return CUDA_ERROR_OUT_OF_MEMORY;
    x->magic = EXEC_MAGIC;
    x->flags = flags;
    pthread_mutex_lock(&graph_lock);
    r = exec_fill(x, g, bad);
    pthread_mutex_unlock(&graph_lock);
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
    CUresult r = enter_node(node, CU_GRAPH_NODE_TYPE_KERNEL, p);
    if (r == CUDA_SUCCESS && !exec_ok(x))
        r = CUDA_ERROR_INVALID_VALUE;
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = kernel_op(p, &ctx, &op)) != CUDA_SUCCESS)
        return r;
    r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&graph_lock);
    for (size_t i = 0; i < x->n && r != CUDA_SUCCESS; i++)
        if (x->items[i].node == node) {
            sim_op_t *old = x->items[i].op;
            op->ctx = old->ctx;         /* (the node's context does not change) */
            x->items[i].op = op;
            op = old;
            r = CUDA_SUCCESS;
        }
    pthread_mutex_unlock(&graph_lock);
    sim_op_discard(op);
    return r;
}

SIM_API CUresult CUDAAPI cuGraphExecKernelNodeSetParams(CUgraphExec x, CUgraphNode node,
                                                        const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_KERNEL_NODE_PARAMS p2 = params_v2(p);
    return cuGraphExecKernelNodeSetParams_v2(x, node, &p2);
}

/* ---------------------------------------------------------------- launch */

/* Fresh copies of x's operations, for one launch; NULL when out of memory. */
static sim_op_t **launch_ops(CUgraphExec x)
{
    sim_op_t **ops = calloc(x->n ? x->n : 1, sizeof(*ops));
    if (!ops)
        return NULL;
    pthread_mutex_lock(&graph_lock);
    for (size_t i = 0; i < x->n; i++)
        if (!(ops[i] = op_clone(x->items[i].op))) {
            for (size_t j = 0; j < i; j++)
                sim_op_discard(ops[j]);
            free(ops);
            ops = NULL;
            break;
        }
    pthread_mutex_unlock(&graph_lock);
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
