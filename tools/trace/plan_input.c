/* SPDX-License-Identifier: MIT */
/*
 * plan_input.c - one iteration of a loaded trace as the planner's input (see plan_input.h).
 *
 * The iteration is the window between two iteration marks; by default the closed one with
 * the most device times (the profiled one: libelixir.so times only ELIXIR_PROFILE_ITERATIONS
 * of them).  Its operations on one device are taken in enqueue order.  A launch reaches every
 * chunk of each allocation its arguments point into (the trace names allocations and, from
 * format 1.8, its pointers' lowest offset into each, not the bytes it touches), the chunks
 * before its lowest pointer's told apart as the shim does (tp_fit), unless the trace's
 * options say the shim took whole allocations (ELIXIR_REACH=allocation, or ELIXIR_HOST_VMM=0);
 * allocations smaller than a chunk are planned as the chunk they share with others (the
 * arena's slabs), which lives through the whole iteration; a copy, memset or collective
 * reaches the chunks its byte range covers: chunks it covers whole are overwritten (their old
 * contents are dead), partly covered ones written.
 */
#include "plan_input.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* An allocation that may be reached in the window, and the buffer it became (-1: none). */
typedef struct cand {
    const tm_alloc_t *a;
    int64_t buf;
} cand_t;

/* A chunk that the arena shares between small allocations (its slabs). */
typedef struct group {
    uint64_t base;
    int64_t buf;
} group_t;

typedef struct builder {
    const tm_trace_t *t;
    tp_input_t *x;
    uint64_t chunk;
    cand_t *by_addr;                   /* candidates by address, then allocation time */
    cand_t **by_id;                    /* the same, by allocation id */
    size_t ncand;
    size_t nrefs, cap_refs, nbufs;
    int forward;                       /* launches reach allocations from their pointers on */
    uint32_t *stamp;                   /* per buffer: 1 + the last operation reaching it */
    uint32_t op_no;                    /* 1 + the operation being built */
    const tm_op_t **ops;               /* the window's operations, in enqueue order */
    group_t *groups;                   /* shared chunks made buffers, in order of first use */
    size_t ngroups;
} builder_t;

static int fail(char *err, size_t len, int rc, const char *msg, int64_t v)
{
    if (err && len)
        snprintf(err, len, msg, (long long)v);
    return rc;
}

static int is_device_op(const tm_op_t *o)
{
    return o->type == TRC_EV_LAUNCH || o->type == TRC_EV_COPY || o->type == TRC_EV_MEMSET ||
           o->type == TRC_EV_NCCL;
}

/* Operations of every device (or of `device`) enqueued in [start, end), and of them timed. */
static size_t ops_in(const tm_trace_t *t, uint64_t start, uint64_t end, int32_t device,
                     size_t *timed)
{
    size_t n = 0;
    *timed = 0;
    for (size_t i = 0; i < t->nops; i++) {
        const tm_op_t *o = &t->ops[i];
        if (!is_device_op(o) || o->time < start || o->time >= end)
            continue;
        if (device >= 0 && o->device != device)
            continue;
        n++;
        *timed += o->has_times != 0;
    }
    return n;
}

/* The timed operations of every device in each window [iterations[i].time, the next's): one
 * pass over the operations, each placed by a binary search over the marks (a long trace has
 * thousands of windows).  0, or -1 where the marks are not in time order (the caller counts
 * window by window). */
static int timed_per_window(const tm_trace_t *t, size_t *timed)
{
    const tm_iteration_t *it = t->iterations;
    size_t m = t->niterations;
    for (size_t i = 1; i < m; i++)
        if (it[i].time < it[i - 1].time)
            return -1;
    memset(timed, 0, m * sizeof(*timed));
    for (size_t k = 0; k < t->nops; k++) {
        const tm_op_t *o = &t->ops[k];
        if (!is_device_op(o) || !o->has_times || m < 2 || o->time < it[0].time)
            continue;
        size_t lo = 0, hi = m;          /* (the last mark at or before the operation) */
        while (hi - lo > 1) {
            size_t mid = lo + (hi - lo) / 2;
            if (it[mid].time <= o->time)
                lo = mid;
            else
                hi = mid;
        }
        timed[lo] += lo + 1 < m;        /* (after the last mark: in no window) */
    }
    return 0;
}

/* The window of the iteration asked for (or the closed one with the most device times). */
static int choose_iteration(const tm_trace_t *t, int64_t want, tp_input_t *x, char *err,
                            size_t len)
{
    size_t best_timed = 0;
    int found = 0;
    size_t *per = malloc((t->niterations ? t->niterations : 1) * sizeof(*per));
    if (!per)
        return fail(err, len, -ENOMEM, "out of memory", 0);
    int counted = timed_per_window(t, per) == 0;
    for (size_t i = 0; i + 1 < t->niterations; i++) {
        const tm_iteration_t *it = &t->iterations[i], *next = &t->iterations[i + 1];
        if (want >= 0 && it->index != (uint64_t)want)
            continue;
        size_t timed = per[i];
        if (!counted)
            ops_in(t, it->time, next->time, -1, &timed);
        if (found && timed <= best_timed)
            continue;
        found = 1;
        best_timed = timed;
        x->iteration = (int64_t)it->index;
        x->start = it->time;
        x->end = next->time;
    }
    free(per);
    if (found)
        return 0;
    if (want >= 0)
        return fail(err, len, -ENOENT, "iteration %lld is not one a next mark closes in this "
                    "trace (elixir-trace summary lists the iterations)", want);
    return fail(err, len, -ENOENT, "the trace has %lld iteration marks: planning needs one "
                "iteration closed by the next mark (run at least two training steps)",
                (int64_t)t->niterations);
}

/* The device with the most operations in the window, or the one asked for. */
static int choose_device(const tm_trace_t *t, int32_t want, tp_input_t *x, char *err,
                         size_t len)
{
    size_t best = 0, timed;
    x->device = -1;
    for (size_t i = 0; i < t->ndevices; i++) {
        int32_t d = t->devices[i].device;
        if (d < 0 || (want >= 0 && d != want))
            continue;                   /* (a record naming no device: not one to plan) */
        size_t n = ops_in(t, x->start, x->end, d, &timed);
        if (n > best || (want >= 0 && x->device < 0)) {
            best = n;
            x->device = d;
        }
    }
    if (x->device < 0 && want >= 0)
        return fail(err, len, -ENOENT, "device %lld is not in the trace", want);
    if (!best)
        return fail(err, len, -ENOENT, "iteration %lld has no operation on that device",
                    x->iteration);
    return 0;
}

static int cmp_op(const void *pa, const void *pb)
{
    const tm_op_t *a = *(const tm_op_t *const *)pa, *b = *(const tm_op_t *const *)pb;
    if (a->time != b->time)
        return a->time < b->time ? -1 : 1;
    return a < b ? -1 : a > b;         /* file order among equal times */
}

static int cmp_addr(const void *pa, const void *pb)
{
    const tm_alloc_t *a = ((const cand_t *)pa)->a, *b = ((const cand_t *)pb)->a;
    if (a->addr != b->addr)
        return a->addr < b->addr ? -1 : 1;
    return a->t_alloc < b->t_alloc ? -1 : a->t_alloc > b->t_alloc;
}

static int cmp_id(const void *pa, const void *pb)
{
    uint64_t a = (*(cand_t *const *)pa)->a->id, b = (*(cand_t *const *)pb)->a->id;
    return a < b ? -1 : a > b;
}

/* The device's allocations alive at some time in the window, indexed by address and id. */
static int candidates(builder_t *b)
{
    const tm_trace_t *t = b->t;
    b->by_addr = calloc(t->nallocs ? t->nallocs : 1, sizeof(*b->by_addr));
    b->by_id = calloc(t->nallocs ? t->nallocs : 1, sizeof(*b->by_id));
    b->groups = calloc(t->nallocs ? t->nallocs : 1, sizeof(*b->groups));
    if (!b->by_addr || !b->by_id || !b->groups)
        return -ENOMEM;
    for (size_t i = 0; i < t->nallocs; i++) {
        const tm_alloc_t *a = &t->allocs[i];
        if (a->device == b->x->device && a->t_alloc < b->x->end && a->t_free > b->x->start)
            b->by_addr[b->ncand++] = (cand_t){ .a = a, .buf = -1 };
    }
    qsort(b->by_addr, b->ncand, sizeof(cand_t), cmp_addr);
    for (size_t i = 0; i < b->ncand; i++)
        b->by_id[i] = &b->by_addr[i];
    qsort(b->by_id, b->ncand, sizeof(cand_t *), cmp_id);
    return 0;
}

static cand_t *cand_by_id(const builder_t *b, uint64_t id)
{
    size_t lo = 0, hi = b->ncand;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        uint64_t v = b->by_id[mid]->a->id;
        if (v == id)
            return b->by_id[mid];
        if (v < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* The allocation holding address p at time `when`, or NULL. */
static cand_t *cand_at(const builder_t *b, uint64_t p, uint64_t when)
{
    size_t lo = 0, hi = b->ncand;
    while (lo < hi) {                  /* first candidate with addr > p */
        size_t mid = (lo + hi) / 2;
        if (b->by_addr[mid].a->addr <= p)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* Address by address down from p (lower ones may still hold it: a few at most); at each,
     * the allocation made last at or before `when`, the only one there that may be alive. */
    for (size_t i = lo, runs = 0; i > 0 && runs < 64; runs++) {
        uint64_t addr = b->by_addr[i - 1].a->addr;
        size_t first = 0, end = i;
        while (first < end) {          /* the first candidate at addr */
            size_t mid = (first + end) / 2;
            if (b->by_addr[mid].a->addr < addr)
                first = mid + 1;
            else
                end = mid;
        }
        size_t l = first;
        end = i;
        while (l < end) {              /* past the last one allocated at or before `when` */
            size_t mid = (l + end) / 2;
            if (b->by_addr[mid].a->t_alloc <= when)
                l = mid + 1;
            else
                end = mid;
        }
        const tm_alloc_t *a = l > first ? b->by_addr[l - 1].a : NULL;
        if (a && p - a->addr < a->size && when < a->t_free)
            return &b->by_addr[l - 1];
        i = first;
    }
    return NULL;
}

/* The first operation of the window enqueued at or after `time`. */
static int32_t op_after(const builder_t *b, uint64_t time)
{
    size_t lo = 0, hi = b->x->in.nops;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (b->ops[mid]->time < time)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (int32_t)lo;
}

static int64_t new_buf(builder_t *b, uint64_t key, uint64_t bytes)
{
    b->x->bufs[b->nbufs] = (pol_buf_t){ .key = key, .bytes = bytes, .born = -1, .dies = -1,
                                        .nvme_ok = 1 };
    return (int64_t)b->nbufs++;
}

/* The buffer of a small allocation: the whole chunk it shares with others (the arena's slab
 * chunk), alive for the whole iteration, since the arena keeps slab chunks for reuse. */
static int64_t group_buf(builder_t *b, const tm_alloc_t *a)
{
    uint64_t base = a->addr & ~(b->chunk - 1);
    for (size_t i = b->ngroups; i-- > 0;)
        if (b->groups[i].base == base)
            return b->groups[i].buf;
    b->groups[b->ngroups] = (group_t){ .base = base, .buf = new_buf(b, base | 1, b->chunk) };
    return b->groups[b->ngroups++].buf;
}

/* The buffer of candidate c, made on first use. */
static int64_t buf_of(builder_t *b, cand_t *c)
{
    if (c->buf >= 0)
        return c->buf;
    const tm_alloc_t *a = c->a;
    if (a->size < b->chunk)
        return c->buf = group_buf(b, a);
    c->buf = new_buf(b, a->id << 1, a->size);
    pol_buf_t *u = &b->x->bufs[c->buf];
    /* policy.h: the buffer exists for operations born .. dies inclusive.  One alive when the
     * iteration starts and freed inside it is the previous iteration's: its life is taken as
     * crossing the iteration's end (born just after dies), which keeps it whole iteration,
     * as one made inside and outliving it is kept (dies -1: the next allocation replaces it). */
    size_t n = b->x->in.nops;
    int32_t dies = a->t_free < b->x->end ? op_after(b, a->t_free) - 1 : -1;
    if (a->t_alloc >= b->x->start)
        u->born = op_after(b, a->t_alloc);
    else if (dies >= 0)
        u->born = (int32_t)(((size_t)dies + 1) % (n ? n : 1));
    u->dies = dies;
    return c->buf;
}

/* A reference to chunks [first, first + n) of buf; `behind`: they lie before a launch's
 * lowest pointer into buf (tp_fit). */
static int push_ref_at(builder_t *b, int64_t buf, uint64_t first, uint64_t n, uint8_t access,
                       int behind)
{
    if (!n)
        return 0;
    if (b->nrefs == b->cap_refs) {
        size_t nc = b->cap_refs ? b->cap_refs * 2 : 256;
        pol_ref_t *r = realloc(b->x->refs, nc * sizeof(*r));
        if (r)
            b->x->refs = r;
        uint8_t *h = r ? realloc(b->x->behind, nc) : NULL;
        if (!h)
            return -ENOMEM;
        b->x->behind = h;
        b->cap_refs = nc;
    }
    b->x->behind[b->nrefs] = (uint8_t)behind;
    b->x->refs[b->nrefs++] = (pol_ref_t){ .buf = (uint32_t)buf, .chunk = (uint32_t)first,
                                          .nchunks = (uint32_t)n, .access = access };
    return 0;
}

static int push_ref(builder_t *b, int64_t buf, uint64_t first, uint64_t n, uint8_t access)
{
    return push_ref_at(b, buf, first, n, access, 0);
}

/* A byte range [p, p + bytes) at `when`: its chunks read, or written (wholly covered chunks
 * overwritten).  A range in no allocation of the device is counted, not planned. */
static int range_ref(builder_t *b, uint64_t p, uint64_t bytes, uint64_t when, int write)
{
    cand_t *c = p && bytes ? cand_at(b, p, when) : NULL;
    if (!c) {
        b->x->unknown_refs += p && bytes;
        return 0;
    }
    int64_t buf = buf_of(b, c);
    uint64_t off = p - c->a->addr, size = c->a->size, ch = b->chunk;
    /* (a range past its allocation: the rest is not ours; bytes as large as 2^64 - off too) */
    uint64_t end = bytes > size - off ? size : off + bytes;
    if (size < ch)                     /* a small allocation: part of its shared chunk */
        return push_ref(b, buf, 0, 1, write ? POL_WRITE : POL_READ);
    uint64_t c0 = off / ch, c1 = (end - 1) / ch + 1;
    if (!write)
        return push_ref(b, buf, c0, c1 - c0, POL_READ);
    uint64_t f0 = (off + ch - 1) / ch, f1 = end == size ? c1 : end / ch;
    if (f0 >= f1)                      /* no chunk covered whole */
        return push_ref(b, buf, c0, c1 - c0, POL_WRITE);
    int rc = push_ref(b, buf, c0, f0 - c0, POL_WRITE);
    if (!rc)
        rc = push_ref(b, buf, f0, f1 - f0, POL_OVERWRITE);
    if (!rc)
        rc = push_ref(b, buf, f1, c1 - f1, POL_WRITE);
    return rc;
}

/* Does the launch being built reach buffer buf already?  (It does from now on.) */
static int reached(builder_t *b, int64_t buf)
{
    if (b->stamp[buf] == b->op_no)
        return 1;
    b->stamp[buf] = b->op_no;
    return 0;
}

/* A launch reaches each of its allocations from the chunk of its lowest pointer into it on;
 * the chunks before are reached too, told apart (behind), for at most TP_BEHIND_SPANS of its
 * allocations, as the shim collects them (res_launch.c, collect_forward; which ones may differ
 * past that many: the shim takes them in argument order, this the trace's, ascending ids). */
static int launch_refs(builder_t *b, const tm_op_t *o)
{
    unsigned spans = 0;
    for (uint32_t k = 0; k < o->nallocs; k++) {
        cand_t *c = cand_by_id(b, o->allocs[k]);
        if (!c)
            continue;                  /* another device's memory, or pinned host memory */
        int64_t buf = buf_of(b, c);
        if (c->a->size < b->chunk && reached(b, buf))
            continue;                  /* (a slab chunk another of its allocations reached) */
        uint64_t n = c->a->size < b->chunk ? 1 : (c->a->size + b->chunk - 1) / b->chunk;
        uint64_t lo = b->forward && o->offsets && n > 1 ? o->offsets[k] / b->chunk : 0;
        if (lo >= n || spans == TP_BEHIND_SPANS)
            lo = 0;
        spans += lo > 0;
        int rc = push_ref_at(b, buf, 0, lo, POL_RW, 1);
        if (!rc)
            rc = push_ref(b, buf, lo, n - lo, POL_RW);
        if (rc)
            return rc;
    }
    return 0;
}

static int op_refs(builder_t *b, const tm_op_t *o)
{
    switch (o->type) {
    case TRC_EV_LAUNCH: return launch_refs(b, o);
    case TRC_EV_MEMSET: return range_ref(b, o->dst, o->bytes, o->time, 1);
    default: {                         /* a copy, or a collective's send and receive */
        int rc = range_ref(b, o->src, o->bytes, o->time, 0);
        return rc ? rc : range_ref(b, o->dst, o->bytes, o->time, 1);
    }
    }
}

/* A stream's handle and a number: the operation that first used it, then its dense number. */
typedef struct stream_no {
    uint64_t stream;
    size_t no;
} stream_no_t;

static int by_handle(const void *a, const void *b)
{
    const stream_no_t *x = a, *y = b;
    return x->stream < y->stream ? -1 : x->stream > y->stream;
}

static int by_stream(const void *a, const void *b)
{
    const stream_no_t *x = a, *y = b;
    int c = by_handle(a, b);
    return c ? c : x->no < y->no ? -1 : x->no > y->no;
}

static int by_no(const void *a, const void *b)
{
    const stream_no_t *x = a, *y = b;
    return x->no < y->no ? -1 : x->no > y->no;
}

/* The n operations' streams (ops) numbered densely in order of first use, in O(n log n) (a
 * trace may name a stream per operation): *table gets one entry per stream, sorted by handle,
 * each with its number (stream_of); *count the streams.  0 or -ENOMEM. */
static int number_streams(const tm_op_t *const *ops, size_t n, stream_no_t **table,
                          uint32_t *count)
{
    stream_no_t *t = malloc((n ? n : 1) * sizeof(*t));
    if (!t)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        t[i] = (stream_no_t){ ops[i]->stream, i };
    qsort(t, n, sizeof(*t), by_stream);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || t[m - 1].stream != t[i].stream)
            t[m++] = t[i];                  /* (its first use) */
    qsort(t, m, sizeof(*t), by_no);
    for (size_t i = 0; i < m; i++)
        t[i].no = i;
    qsort(t, m, sizeof(*t), by_stream);
    *table = t;
    *count = (uint32_t)m;
    return 0;
}

/* Stream s's number in table (number_streams), or `count` when no operation used it. */
static uint32_t stream_of(const stream_no_t *table, uint32_t count, uint64_t s)
{
    stream_no_t key = { s, 0 };
    const stream_no_t *e = bsearch(&key, table, count, sizeof(*table), by_handle);
    return e ? (uint32_t)e->no : count;
}

/* A sync as the cost model takes it and its place among the trace's records: syncs sort by
 * the operation they follow, those after the same one in the order recorded (records of
 * threads may interleave). */
typedef struct sync_at {
    pol_sync_t s;
    size_t k;
} sync_at_t;

static int by_op(const void *a, const void *b)
{
    const sync_at_t *x = a, *y = b;
    if (x->s.op != y->s.op)
        return x->s.op < y->s.op ? -1 : 1;
    return x->k < y->k ? -1 : x->k > y->k;
}

/* The window's host synchronisations (SYNC, 1.7) as the cost model's (pol_sync_t), each after
 * the last operation enqueued before it: a stream's of a stream the window's operations use
 * (the legacy default stream's, of the device planned), a context's of the device planned;
 * one before the window's first operation (the iteration before's), and an event's (its
 * stream is not known), are left out.  In operation order. */
static int build_syncs(builder_t *b, const stream_no_t *streams, uint32_t nstreams)
{
    tp_input_t *x = b->x;
    size_t cap = b->t->nsyncs ? b->t->nsyncs : 1, n = 0;
    x->syncs = malloc(cap * sizeof(*x->syncs));
    sync_at_t *at_of = malloc(cap * sizeof(*at_of));
    if (!x->syncs || !at_of) {
        free(at_of);
        return -ENOMEM;
    }
    for (size_t k = 0; k < b->t->nsyncs; k++) {
        const tm_sync_t *s = &b->t->syncs[k];
        int32_t at = op_after(b, s->time) - 1;
        uint32_t st;
        if (s->time < x->start || s->time >= x->end || at < 0)
            continue;
        if (s->s.kind == TRC_SYNC_STREAM && (s->s.stream != 0 || s->s.device == x->device)) {
            st = stream_of(streams, nstreams, s->s.stream);
            if (st == nstreams)
                continue;
        } else if (s->s.kind == TRC_SYNC_CONTEXT && s->s.device == x->device) {
            st = POL_SYNC_ALL;
        } else {
            continue;
        }
        at_of[n++] = (sync_at_t){ { (uint32_t)at, st }, k };
    }
    qsort(at_of, n, sizeof(*at_of), by_op);
    for (size_t k = 0; k < n; k++)
        x->syncs[k] = at_of[k].s;
    free(at_of);
    x->in.syncs = x->syncs;
    x->in.nsyncs = n;
    return 0;
}

static int build_ops(builder_t *b)
{
    tp_input_t *x = b->x;
    size_t n = ops_in(b->t, x->start, x->end, x->device, &x->timed), k = 0;
    b->ops = malloc((n ? n : 1) * sizeof(*b->ops));
    x->ops = calloc(n ? n : 1, sizeof(*x->ops));
    x->bufs = calloc(b->ncand ? b->ncand : 1, sizeof(*x->bufs));
    b->stamp = calloc(b->ncand ? b->ncand : 1, sizeof(*b->stamp));
    if (!b->ops || !x->ops || !x->bufs || !b->stamp)
        return -ENOMEM;
    for (size_t i = 0; i < b->t->nops; i++) {
        const tm_op_t *o = &b->t->ops[i];
        if (is_device_op(o) && o->time >= x->start && o->time < x->end && o->device == x->device)
            b->ops[k++] = o;
    }
    n = k;                              /* (the same count: ops_in's test for one device) */
    qsort(b->ops, n, sizeof(*b->ops), cmp_op);
    x->in.nops = n;
    stream_no_t *streams;
    uint32_t nstreams;
    int rc = number_streams(b->ops, n, &streams, &nstreams);
    if (rc)
        return rc;
    for (size_t i = 0; i < n && !rc; i++) {
        const tm_op_t *o = b->ops[i];
        pol_op_t *p = &x->ops[i];
        p->stream = stream_of(streams, nstreams, o->stream);
        p->dur_ns = o->has_times && o->end > o->start ? o->end - o->start : 0;
        p->ref = (uint32_t)b->nrefs;
        b->op_no = (uint32_t)i + 1;
        rc = op_refs(b, o);
        p->nref = (uint32_t)(b->nrefs - p->ref);
    }
    if (!rc)
        rc = build_syncs(b, streams, nstreams);
    free(streams);
    x->in.nstreams = nstreams;
    return rc;
}

/* The most chunk bytes the iteration's buffers held at once, each live from operation born to
 * operation dies inclusive (pol_buf_t: -1 for before or after the iteration, dies -1 with
 * born >= 0 taken as born - 1, and dies < born a life across the iteration's end). */
static int footprint(tp_input_t *x, uint64_t chunk)
{
    size_t n = x->in.nops;
    int64_t *delta = calloc(n + 1, sizeof(*delta));
    if (!delta)
        return -ENOMEM;
    for (size_t i = 0; i < x->in.nbufs && n; i++) {
        const pol_buf_t *u = &x->bufs[i];
        int64_t bytes = (int64_t)((u->bytes / chunk + (u->bytes % chunk != 0)) * chunk);
        size_t born = u->born < 0 ? 0 : (size_t)u->born;
        size_t dies = u->dies >= 0 ? (size_t)u->dies : born ? born - 1 : n - 1;
        if (born <= dies) {
            delta[born] += bytes;
            delta[dies + 1] -= bytes;
        } else {                        /* (across the end: [0, dies] and [born, n)) */
            delta[0] += bytes;
            delta[dies + 1] -= bytes;
            delta[born] += bytes;
            delta[n] -= bytes;
        }
    }
    int64_t live = 0, peak = 0;
    for (size_t i = 0; i <= n; i++) {
        live += delta[i];
        if (live > peak)
            peak = live;
    }
    free(delta);
    x->footprint = (uint64_t)peak;
    return 0;
}

/* The value the trace's OPTIONS record gives option `name`, or NULL. */
static const char *option(const tm_trace_t *t, const char *name)
{
    for (size_t i = 0; i < t->noptions; i++)
        if (strcmp(t->options[i].name, name) == 0)
            return t->options[i].value;
    return NULL;
}

int tp_build(const tm_trace_t *t, const tp_select_t *sel, tp_input_t *x, char *err,
             size_t len)
{
    memset(x, 0, sizeof(*x));
    const char *reach = option(t, "ELIXIR_REACH"), *vmm = option(t, "ELIXIR_HOST_VMM");
    builder_t b = { .t = t, .x = x, .chunk = sel->chunk,
                    .forward = !(reach && strcmp(reach, "allocation") == 0) &&
                               !(vmm && strcmp(vmm, "0") == 0) };
    int rc = choose_iteration(t, sel->iteration, x, err, len);
    if (!rc)
        rc = choose_device(t, sel->device, x, err, len);
    if (!rc)
        rc = candidates(&b);
    if (!rc)
        rc = build_ops(&b);
    x->in.nbufs = b.nbufs;
    x->in.nrefs = b.nrefs;
    uint64_t chunks = 0;                /* (a damaged trace's sizes: no planning past TP_MAX) */
    for (size_t i = 0; !rc && i < b.nbufs && chunks <= TP_MAX_CHUNKS; i++) {
        uint64_t n = x->bufs[i].bytes / b.chunk + (x->bufs[i].bytes % b.chunk != 0);
        chunks = n > TP_MAX_CHUNKS ? n : chunks + n;
    }
    if (!rc && chunks > TP_MAX_CHUNKS)
        rc = fail(err, len, -EFBIG, "the iteration's buffers come to more than %lld chunks: "
                  "a damaged trace, or --chunk too small", TP_MAX_CHUNKS);
    if (!rc)
        rc = footprint(x, b.chunk);
    free(b.by_addr);
    free(b.by_id);
    free(b.groups);
    free(b.ops);
    free(b.stamp);
    x->in.ops = x->ops;
    x->in.refs = x->refs;
    x->in.bufs = x->bufs;
    if (rc == -ENOMEM)
        fail(err, len, rc, "out of memory", 0);
    if (rc)
        tp_free(x);
    return rc;
}

void tp_fit(tp_input_t *x, uint64_t gpu_chunks)
{
    for (size_t i = 0; i < x->in.nops; i++) {
        const pol_op_t *o = &x->ops[i];
        uint64_t reach = 0;
        for (uint32_t j = 0; j < o->nref; j++)
            reach += x->refs[o->ref + j].nchunks;
        for (uint32_t j = 0; j < o->nref; j++)
            if (x->behind[o->ref + j])
                x->refs[o->ref + j].access = reach <= gpu_chunks ? POL_RW | POL_NEAR : POL_RW;
    }
}

void tp_free(tp_input_t *x)
{
    free(x->ops);
    free(x->refs);
    free(x->bufs);
    free(x->syncs);
    free(x->behind);
    x->ops = NULL;
    x->refs = NULL;
    x->bufs = NULL;
    x->syncs = NULL;
    x->behind = NULL;
}
