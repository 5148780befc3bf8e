/* SPDX-License-Identifier: MIT */
/*
 * capture.c - stream capture: a capturing stream's operations become nodes of a graph
 * (graphs themselves are graph.c).
 *
 * While a stream captures, sim_submit hands its operations here
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

#include "graph_int.h"

_Atomic int sim_captures;

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

/* Replace a's contents with v[0..n); -1 when out of memory (a unchanged). */
static int vec_set(node_vec_t *a, CUgraphNode const *v, size_t n)
{
    node_vec_t b = { 0 };
    for (size_t i = 0; i < n; i++)
        if (!graph_vec_has(&b, v[i]) && graph_vec_push(&b, v[i]) < 0) {
            free(b.v);
            return -1;
        }
    free(a->v);
    *a = b;
    return 0;
}

static void stream_ref(CUstream s)
{
    pthread_mutex_lock(&sim_lock);
    s->refs++;
    pthread_mutex_unlock(&sim_lock);
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

/* The captured-event record of e that is still current, or NULL.  Under sim_graph_lock. */
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
 * invalidated when `bad` is set.  Under sim_graph_lock. */
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
 * that querying or synchronizing it fails until it is recorded again.  Under sim_graph_lock. */
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
 * sim_graph_lock. */
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
        if (graph_vec_push(&stack, from->v[i]) < 0)
            break;
    while (stack.n) {
        CUgraphNode n = stack.v[--stack.n];
        if (n->mark == epoch)
            continue;
        n->mark = epoch;
        for (size_t i = 0; i < n->deps.n; i++)
            if (n->deps.v[i]->mark != epoch && graph_vec_push(&stack, n->deps.v[i]) < 0)
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
    CUgraphNode n = graph_node_new(m->cap->graph, types[op->kind],
                                   op->ctx ? op->ctx : m->stream->ctx, op, m->deps.v, m->deps.n);
    if (!n) {
        invalidate(m->cap, "out of memory");
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (cp)
        n->copy = *cp;
    m->deps.n = 0;
    if (graph_vec_push(&m->deps, n) < 0) {
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
        if (!graph_vec_has(&m->deps, ce->nodes.v[i]) &&
            graph_vec_push(&m->deps, ce->nodes.v[i]) < 0)
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

    if (s->capture && op->kind == SIM_OP_COPY) {   /* outside sim_graph_lock: it reads ranges */
        copy_params(&op->u.copy, op->ctx ? op->ctx->device : s->ctx->device, &cp);
        pcp = &cp;
    }
    pthread_mutex_lock(&sim_graph_lock);
    if (s->capture)
        *res = capture_op_locked(s->capture, op, pcp, &kept);
    else if (op->kind == SIM_OP_EVENT_WAIT && (ce = find_captured(op->u.event)))
        *res = capture_join(s, ce);
    else if (s->kind == SIM_STREAM_LEGACY && legacy_conflict(s->ctx, 1))
        *res = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    else
        taken = 0;
    pthread_mutex_unlock(&sim_graph_lock);
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
    pthread_mutex_lock(&sim_graph_lock);
    if (s->capture) {
        invalidate(s->capture->cap, "a capturing stream was queried or synchronized");
        r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    } else if (s->kind == SIM_STREAM_LEGACY && legacy_conflict(s->ctx, 1)) {
        r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    }
    pthread_mutex_unlock(&sim_graph_lock);
    return r;
}

CUresult sim_capture_unsafe(const char *what)
{
    if (!atomic_load(&sim_captures) || thread_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_SUCCESS;
    pthread_t self = pthread_self();
    int found = 0;
    pthread_mutex_lock(&sim_graph_lock);
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
    pthread_mutex_unlock(&sim_graph_lock);
    return found ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

CUresult sim_capture_ctx_sync(CUcontext ctx)
{
    int found = 0;
    if (!atomic_load(&sim_captures))
        return CUDA_SUCCESS;
    pthread_mutex_lock(&sim_graph_lock);
    for (capture_t *c = captures; c; c = c->next)
        for (struct sim_graph_capture *m = c->members; m; m = m->next)
            if (m->stream->ctx == ctx) {
                invalidate(c, "cuCtxSynchronize while a stream of the context captures");
                found = 1;
                break;
            }
    pthread_mutex_unlock(&sim_graph_lock);
    return found ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : sim_capture_unsafe("cuCtxSynchronize");
}

CUresult sim_capture_event_check(CUevent e, const char *what)
{
    if (!atomic_load(&sim_captures))
        return CUDA_SUCCESS;
    pthread_mutex_lock(&sim_graph_lock);
    cap_event_t *ce = find_captured(e);
    if (ce)
        invalidate(ce->cap, "an event recorded in the capture was queried or synchronized");
    pthread_mutex_unlock(&sim_graph_lock);
    return ce ? CUDA_ERROR_CAPTURED_EVENT : sim_capture_unsafe(what);
}

CUresult sim_capture_refuse(CUstream s, const char *what)
{
    if (!atomic_load(&sim_captures))
        return CUDA_SUCCESS;
    pthread_mutex_lock(&sim_graph_lock);
    struct sim_graph_capture *m = s->capture;
    if (m) {
        SIM_WARN("%s in a capturing stream is not supported by the simulator", what);
        invalidate(m->cap, what);
    }
    pthread_mutex_unlock(&sim_graph_lock);
    return m ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

CUresult sim_capture_decline(CUstream s, const char *what)
{
    if (!atomic_load(&sim_captures))
        return CUDA_SUCCESS;
    pthread_mutex_lock(&sim_graph_lock);
    int capturing = s->capture != NULL;
    pthread_mutex_unlock(&sim_graph_lock);
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
    if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED || !graph_edges_zero(edges, ndeps))
        return CUDA_ERROR_INVALID_VALUE;
    if (s->kind == SIM_STREAM_LEGACY)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    pthread_mutex_lock(&sim_graph_lock);
    if (s->capture)
        r = CUDA_ERROR_ILLEGAL_STATE;
    else if (g && (!graph_ok(g) || g->capturing))
        r = CUDA_ERROR_INVALID_VALUE;
    else if (g)
        r = graph_check_deps(g, deps, ndeps);
    if (r == CUDA_SUCCESS)
        r = capture_start(s, g, deps, g ? ndeps : 0, mode);
    pthread_mutex_unlock(&sim_graph_lock);
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
    pthread_mutex_lock(&sim_graph_lock);
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
    pthread_mutex_unlock(&sim_graph_lock);
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
    pthread_mutex_lock(&sim_graph_lock);
    if (s->kind == SIM_STREAM_LEGACY && legacy_conflict(s->ctx, 0)) {
        r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    } else {
        *q->status = status_of(s->capture);
        r = query_fill(s->capture, q);
    }
    pthread_mutex_unlock(&sim_graph_lock);
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
    if (flags > CU_STREAM_SET_CAPTURE_DEPENDENCIES || !graph_edges_zero(edges, n))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&sim_graph_lock);
    struct sim_graph_capture *m = s->capture;
    if (!m)
        r = CUDA_ERROR_ILLEGAL_STATE;
    else if (m->cap->invalid)
        r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    else
        r = graph_check_deps(m->cap->graph, deps, n);
    if (r == CUDA_SUCCESS && flags == CU_STREAM_SET_CAPTURE_DEPENDENCIES)
        m->deps.n = 0;
    for (size_t i = 0; r == CUDA_SUCCESS && i < n; i++)
        if (!graph_vec_has(&m->deps, deps[i]) && graph_vec_push(&m->deps, deps[i]) < 0)
            r = CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_unlock(&sim_graph_lock);
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
