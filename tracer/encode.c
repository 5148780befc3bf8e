/* SPDX-License-Identifier: MIT */
/*
 * encode.c - one record into a caller-provided buffer (tracer/FORMAT.md is the reference).
 *
 * A record is type (varint), payload length (varint), payload.  Every type is below 128 (one
 * byte); the payload is built after room for a one-byte length, and moved up in the rare
 * case that it is 128 bytes or longer.  Event payloads
 * start with the time as a zigzag delta from the previous event of the same stream (trc_enc_t);
 * allocation and launch ids and allocation addresses are deltas too, which is what keeps a
 * typical event near 16 bytes.  The context changes only when the record was written whole.
 * LAUNCH, the record written per launch, has a path of its own that checks the room once.
 */
#include "trace.h"
#include "wire.h"

#include <errno.h>

/* ------------------------------------------------------------------ shared field groups */

static void put_time(wbuf_t *b, trc_enc_t *e, uint64_t t)
{
    put_s(b, (int64_t)(t - e->time));
    e->time = t;
}

/* Start/end on the device: a flag, then start relative to the event time, then duration. */
static int put_span(wbuf_t *b, uint64_t time, const trc_span_t *s)
{
    put_u(b, s->has_times ? 1 : 0);
    if (!s->has_times)
        return 0;
    if (s->end < s->start)
        return -EINVAL;
    put_s(b, (int64_t)(s->start - time));
    put_u(b, s->end - s->start);
    return 0;
}

/* ------------------------------------------------------------------ event payloads */

static int put_process(wbuf_t *b, const trc_process_t *p)
{
    put_u(b, p->pid);
    put_u(b, p->ppid);
    put_u(b, p->exe_id);
    put_u(b, p->cmdline_id);
    put_u(b, p->host_id);
    return 0;
}

static int put_device(wbuf_t *b, const trc_device_t *d)
{
    put_s(b, d->device);
    put_u(b, d->name_id);
    put_u(b, d->total_mem);
    put_u(b, d->cc_major);
    put_u(b, d->cc_minor);
    put_u(b, d->sm_count);
    return 0;
}

static int put_options(wbuf_t *b, const trc_options_t *o)
{
    put_u(b, o->count);
    for (uint32_t i = 0; i < o->count; i++) {
        put_u(b, o->opts[i].name_id);
        put_u(b, o->opts[i].value_id);
    }
    return 0;
}

/* The next allocation usually starts where this one ends: the address delta is from there. */
static int put_alloc(wbuf_t *b, trc_enc_t *e, const trc_alloc_t *a)
{
    put_s(b, (int64_t)(a->id - e->alloc));
    put_s(b, a->device);
    put_s(b, (int64_t)(a->addr - e->addr));
    put_u(b, a->size);
    put_u(b, a->stack_id);
    e->alloc = a->id;
    e->addr = a->addr + a->size;
    return 0;
}

/* A varint written without a bound check: the caller made sure VARINT_MAX bytes fit. */
static inline uint8_t *put_u_fast(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* A launch's allocations as deltas, each from the one before (the first from prev), without
 * a bound check: the caller made sure VARINT_MAX bytes per id fit. */
static inline uint8_t *put_ids_fast(uint8_t *p, uint64_t prev, const uint64_t *ids, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        p = put_u_fast(p, zigzag((int64_t)(ids[i] - prev)));
        prev = ids[i];
    }
    return p;
}

/* A launch's allocations are its bulk (tens of ids, a byte or two each): when the worst case
 * fits they are written without a bound check per byte, else through put_s. */
static void put_allocs(wbuf_t *b, uint64_t prev, const uint64_t *ids, uint32_t n)
{
    if ((size_t)(b->end - b->p) >= (size_t)n * VARINT_MAX) {
        b->p = put_ids_fast(b->p, prev, ids, n);
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        put_s(b, (int64_t)(ids[i] - prev));
        prev = ids[i];
    }
}

/* A launch's nonzero offsets (1.8): their count, then each one's index in the list (a delta
 * from the previous one's) and the offset; without a bound check (VARINT_MAX bytes per field
 * fit: launch_worst). */
static inline uint8_t *put_offsets_fast(uint8_t *p, const trc_launch_t *l)
{
    uint32_t n = 0, prev = 0;
    for (uint32_t i = 0; l->offsets && i < l->nallocs; i++)
        n += l->offsets[i] != 0;
    p = put_u_fast(p, n);
    for (uint32_t i = 0; n && i < l->nallocs; i++)
        if (l->offsets[i]) {
            p = put_u_fast(p, i - prev);
            p = put_u_fast(p, l->offsets[i]);
            prev = i;
        }
    return p;
}

static void put_offsets(wbuf_t *b, const trc_launch_t *l)
{
    uint32_t n = 0, prev = 0;
    for (uint32_t i = 0; l->offsets && i < l->nallocs; i++)
        n += l->offsets[i] != 0;
    put_u(b, n);
    for (uint32_t i = 0; n && i < l->nallocs; i++)
        if (l->offsets[i]) {
            put_u(b, i - prev);
            put_u(b, l->offsets[i]);
            prev = i;
        }
}

static int put_launch(wbuf_t *b, trc_enc_t *e, uint64_t time, const trc_launch_t *l)
{
    put_s(b, (int64_t)(l->id - e->launch));
    put_u(b, l->func_id);
    put_u(b, l->stream);
    put_s(b, l->device);
    if (put_span(b, time, &l->span) < 0)
        return -EINVAL;
    put_u(b, l->nallocs);
    put_allocs(b, e->alloc, l->allocs, l->nallocs);
    put_offsets(b, l);
    e->launch = l->id;
    return 0;
}

static int put_copy(wbuf_t *b, uint64_t time, const trc_copy_t *c)
{
    put_u(b, c->kind);
    put_u(b, c->src);
    put_u(b, c->dst);
    put_u(b, c->bytes);
    put_u(b, c->stream);
    put_s(b, c->device);
    if (put_span(b, time, &c->span) < 0)
        return -EINVAL;
    put_u(b, c->id);
    return 0;
}

static int put_memset(wbuf_t *b, uint64_t time, const trc_memset_t *m)
{
    put_u(b, m->dst);
    put_u(b, m->bytes);
    put_u(b, m->value);
    put_u(b, m->elem_size);
    put_u(b, m->stream);
    put_s(b, m->device);
    if (put_span(b, time, &m->span) < 0)
        return -EINVAL;
    put_u(b, m->id);
    return 0;
}

static int put_nccl(wbuf_t *b, uint64_t time, const trc_nccl_t *n)
{
    put_u(b, n->op_id);
    put_u(b, n->send);
    put_u(b, n->recv);
    put_u(b, n->bytes);
    put_u(b, n->comm);
    put_s(b, n->peer);
    put_u(b, n->stream);
    put_s(b, n->device);
    return put_span(b, time, &n->span);
}

static int put_migration(wbuf_t *b, uint64_t time, const trc_migration_t *m)
{
    if (m->end < m->start)
        return -EINVAL;
    put_u(b, m->chunk);
    put_u(b, m->from);
    put_u(b, m->to);
    put_u(b, m->bytes);
    put_s(b, m->device);
    put_s(b, (int64_t)(m->start - time));
    put_u(b, m->end - m->start);
    put_u(b, m->cause);
    if (m->flags || m->move) {          /* (1.5; absent reads as 0) */
        put_u(b, m->flags);
        if (m->move)
            put_u(b, m->move);
    }
    return 0;
}

static int put_eviction(wbuf_t *b, trc_enc_t *e, const trc_eviction_t *v)
{
    put_u(b, v->chunk);
    put_s(b, (int64_t)(v->alloc - e->alloc));
    put_u(b, v->from);
    put_u(b, v->to);
    put_u(b, v->bytes);
    put_u(b, v->reason);
    return 0;
}

static int put_timing(wbuf_t *b, uint64_t time, const trc_timing_t *t)
{
    if (t->end < t->start)
        return -EINVAL;
    put_u(b, t->op);
    put_u(b, t->source);
    put_s(b, (int64_t)(t->start - time));
    put_u(b, t->end - t->start);
    return 0;
}

static int put_plan(wbuf_t *b, const trc_plan_t *p)
{
    put_s(b, p->device);
    put_u(b, p->plan);
    put_u(b, p->iteration);
    put_u(b, p->ops);
    put_u(b, p->buffers);
    put_u(b, p->moves);
    put_u(b, p->predicted_ns);
    put_u(b, p->bound_ns);
    put_u(b, p->compute_ns);
    put_u(b, p->bytes_in);
    put_u(b, p->bytes_out);
    put_u(b, p->planning_ns);
    put_u(b, p->again);                 /* (1.10) */
    return 0;
}

static int put_follow(wbuf_t *b, const trc_follow_t *f)
{
    put_s(b, f->device);
    put_u(b, f->plan);
    put_u(b, f->iteration);
    put_u(b, f->foreseen);
    put_u(b, f->unforeseen);
    put_u(b, f->missed);
    put_u(b, f->moves);
    put_u(b, f->chunks);
    put_u(b, f->left);
    put_u(b, f->partial);               /* (1.9) */
    return 0;
}

static int put_mapping(wbuf_t *b, const trc_mapping_t *m)
{
    put_s(b, m->device);
    put_u(b, m->planned_remaps);
    put_u(b, m->planned_ns);
    put_u(b, m->reactive_remaps);
    put_u(b, m->reactive_ns);
    return 0;
}

static int put_guard(wbuf_t *b, const trc_guard_t *g)
{
    put_s(b, g->device);
    put_u(b, g->plan);
    put_u(b, g->iteration);
    put_u(b, g->verdict);
    put_u(b, g->planned_ns);
    put_u(b, g->reactive_ns);
    put_u(b, g->limit);
    return 0;
}

static int put_sync(wbuf_t *b, const trc_sync_t *s)
{
    put_u(b, s->kind);
    put_u(b, s->stream);
    put_s(b, s->device);
    return 0;
}

static int put_memory(wbuf_t *b, const trc_memory_t *m)
{
    put_s(b, m->device);
    put_u(b, TRC_TIERS);
    for (int i = 0; i < TRC_TIERS; i++)
        put_u(b, m->bytes[i]);
    return 0;
}

/* TIME_BASE: an absolute time, and every delta base back to 0, so that the records after it
 * decode without anything before them (one thread's buffer). */
static void put_time_base(wbuf_t *b, trc_enc_t *e, uint64_t t)
{
    put_u(b, t);
    *e = (trc_enc_t){ .time = t };
}

/* Payload of an event record (time first); -EINVAL for an unknown type or a bad value. */
static int put_event(wbuf_t *b, trc_enc_t *e, const trc_event_t *ev)
{
    uint64_t t = ev->time;
    switch (ev->type) {
    case TRC_REC_TIME_BASE: put_time_base(b, e, t); return 0;
    case TRC_REC_END: put_u(b, ev->u.end_count); return 0;
    default: break;
    }
    if (ev->type < TRC_EV_PROCESS || ev->type > TRC_EV_SYNC)
        return -EINVAL;
    put_time(b, e, t);
    switch (ev->type) {
    case TRC_EV_PROCESS: return put_process(b, &ev->u.process);
    case TRC_EV_DEVICE: return put_device(b, &ev->u.device);
    case TRC_EV_OPTIONS: return put_options(b, &ev->u.options);
    case TRC_EV_ALLOC: return put_alloc(b, e, &ev->u.alloc);
    case TRC_EV_FREE: put_s(b, (int64_t)(ev->u.free.id - e->alloc)); return 0;
    case TRC_EV_LAUNCH: return put_launch(b, e, t, &ev->u.launch);
    case TRC_EV_COPY: return put_copy(b, t, &ev->u.copy);
    case TRC_EV_MEMSET: return put_memset(b, t, &ev->u.memset);
    case TRC_EV_NCCL: return put_nccl(b, t, &ev->u.nccl);
    case TRC_EV_MIGRATION: return put_migration(b, t, &ev->u.migration);
    case TRC_EV_EVICTION: return put_eviction(b, e, &ev->u.eviction);
    case TRC_EV_TIMING: return put_timing(b, t, &ev->u.timing);
    case TRC_EV_MEMORY: return put_memory(b, &ev->u.memory);
    case TRC_EV_BUDGET: return put_memory(b, &ev->u.budget);
    case TRC_EV_DROPPED:
        put_u(b, ev->u.dropped.source);
        put_u(b, ev->u.dropped.count);
        return 0;
    case TRC_EV_PLAN: return put_plan(b, &ev->u.plan);
    case TRC_EV_FOLLOW: return put_follow(b, &ev->u.follow);
    case TRC_EV_MAPPING: return put_mapping(b, &ev->u.mapping);
    case TRC_EV_GUARD: return put_guard(b, &ev->u.guard);
    case TRC_EV_SYNC: return put_sync(b, &ev->u.sync);
    default: put_u(b, ev->u.iteration.index); return 0;
    }
}

/* ------------------------------------------------------------------ framing */

/* Frames the payload built at buf + 2: the type and the length before it, the payload moved
 * up by the length's extra bytes when it needs more than one. */
static long frame(uint8_t *buf, uint32_t type, const wbuf_t *b)
{
    uint8_t *payload = buf + 2;
    size_t len = (size_t)(b->p - payload);
    if (len > TRC_MAX_RECORD)
        return -EINVAL;
    size_t extra = len < (1u << 7) ? 0 : len < (1u << 14) ? 1 : 2;
    if (extra) {
        if ((size_t)(b->end - b->p) < extra)
            return -ENOSPC;
        memmove(payload + extra, payload, len);
    }
    buf[0] = (uint8_t)type;
    wbuf_t h = { buf + 1, payload + extra, 0 };
    put_u(&h, len);
    return (long)(2 + extra + len);
}

/* frame() for a LAUNCH payload ending at p (out of line: a record of 128 bytes or more is
 * rare). */
static __attribute__((noinline)) long frame_long(uint8_t *buf, uint8_t *p, uint8_t *end)
{
    wbuf_t b = { p, end, 0 };

    return frame(buf, TRC_EV_LAUNCH, &b);
}

/* Starts a payload cursor, or reports -ENOSPC when not even the framing fits. */
static int begin(wbuf_t *b, void *buf, size_t cap)
{
    if (cap < 2)
        return -ENOSPC;
    b->p = (uint8_t *)buf + 2;
    b->end = (uint8_t *)buf + cap;
    b->full = 0;
    return 0;
}

/* Room for the longest LAUNCH record l can make: type, a length of up to 3 bytes, and at most
 * VARINT_MAX bytes per field (time, id, function, stream, device, three of span, two counts)
 * and three per allocation (its id, and an offset with its index). */
static size_t launch_worst(const trc_launch_t *l)
{
    return 4 + (size_t)VARINT_MAX * (10 + 3 * (size_t)l->nallocs);
}

/*
 * The LAUNCH record, one per launch recorded, when its worst case fits (launch_worst): the
 * same bytes put_event and frame write, without a bound check per byte.  The payload is
 * built after room for a one-byte length, which is all the usual record (under 128 bytes)
 * needs; a longer one is moved up by frame_long, for which launch_worst left room.
 */
static long encode_launch(trc_enc_t *e, uint8_t *buf, size_t cap, const trc_event_t *ev)
{
    const trc_launch_t *l = &ev->u.launch;
    uint8_t *p = buf + 2;

    if (l->span.has_times && l->span.end < l->span.start)
        return -EINVAL;
    p = put_u_fast(p, zigzag((int64_t)(ev->time - e->time)));
    p = put_u_fast(p, zigzag((int64_t)(l->id - e->launch)));
    p = put_u_fast(p, l->func_id);
    p = put_u_fast(p, l->stream);
    p = put_u_fast(p, zigzag(l->device));
    *p++ = l->span.has_times ? 1 : 0;
    if (l->span.has_times) {
        p = put_u_fast(p, zigzag((int64_t)(l->span.start - ev->time)));
        p = put_u_fast(p, l->span.end - l->span.start);
    }
    p = put_u_fast(p, l->nallocs);
    p = put_ids_fast(p, e->alloc, l->allocs, l->nallocs);
    p = put_offsets_fast(p, l);
    long n = (long)(p - buf);
    if (n - 2 < 128) {
        buf[0] = TRC_EV_LAUNCH;
        buf[1] = (uint8_t)(n - 2);
    } else if ((n = frame_long(buf, p, buf + cap)) < 0) {
        return n;
    }
    e->time = ev->time;
    e->launch = l->id;
    return n;
}

/* Any record but a LAUNCH that fits unchecked: built whole, then framed; e advances only
 * when it was written.  Kept out of line, so that the launch path stays light. */
static __attribute__((noinline)) long encode_checked(trc_enc_t *e, void *buf, size_t cap,
                                                     const trc_event_t *ev)
{
    wbuf_t b;
    trc_enc_t next = *e;
    if (begin(&b, buf, cap) < 0)
        return -ENOSPC;
    int rc = put_event(&b, &next, ev);
    if (rc < 0)
        return rc;
    if (b.full)
        return -ENOSPC;
    long n = frame(buf, ev->type, &b);
    if (n > 0)
        *e = next;
    return n;
}

long trc_encode_event(trc_enc_t *e, void *buf, size_t cap, const trc_event_t *ev)
{
    if (ev->type == TRC_EV_LAUNCH && cap >= launch_worst(&ev->u.launch))
        return encode_launch(e, buf, cap, ev);
    return encode_checked(e, buf, cap, ev);
}

long trc_encode_string(trc_enc_t *e, void *buf, size_t cap, uint32_t id, const char *s,
                       size_t len)
{
    wbuf_t b;
    (void)e;
    if (len > TRC_MAX_STRING || memchr(s, 0, len))
        return -EINVAL;
    if (begin(&b, buf, cap) < 0)
        return -ENOSPC;
    put_u(&b, id);
    put_u(&b, len);
    put_bytes(&b, s, len);
    return b.full ? -ENOSPC : frame(buf, TRC_REC_STRING, &b);
}

long trc_encode_stack(trc_enc_t *e, void *buf, size_t cap, uint32_t id,
                      const trc_frame_t *frames, uint32_t depth)
{
    trc_stack_t s = { .id = id, .depth = depth, .frames = frames };
    return trc_encode_stack_py(e, buf, cap, &s);
}

/* The native frames, then (1.4, only when there are any) the Python frames as appended
 * fields: pydepth, then file, function and line of each. */
long trc_encode_stack_py(trc_enc_t *e, void *buf, size_t cap, const trc_stack_t *s)
{
    wbuf_t b;
    (void)e;
    if (s->depth > TRC_MAX_DEPTH || s->pydepth > TRC_MAX_DEPTH)
        return -EINVAL;
    if (begin(&b, buf, cap) < 0)
        return -ENOSPC;
    put_u(&b, s->id);
    put_u(&b, s->depth);
    for (uint32_t i = 0; i < s->depth; i++) {
        put_u(&b, s->frames[i].module_id);
        put_u(&b, s->frames[i].offset);
    }
    if (s->pydepth)
        put_u(&b, s->pydepth);
    for (uint32_t i = 0; i < s->pydepth; i++) {
        put_u(&b, s->pyframes[i].file_id);
        put_u(&b, s->pyframes[i].func_id);
        put_u(&b, s->pyframes[i].line);
    }
    return b.full ? -ENOSPC : frame(buf, TRC_REC_STACK, &b);
}

/* Header: magic, major, minor (u16), header length, flags, pid (u32), creation time (u64). */
int trc_encode_header(void *buf, size_t cap, uint32_t flags, uint32_t pid, uint64_t created_ns)
{
    uint8_t *p = buf;
    if (cap < TRC_HEADER_LEN)
        return -ENOSPC;
    memcpy(p, TRC_MAGIC, 8);
    le_put(p + 8, TRC_VERSION_MAJOR, 2);
    le_put(p + 10, TRC_VERSION_MINOR, 2);
    le_put(p + 12, TRC_HEADER_LEN, 4);
    le_put(p + 16, flags, 4);
    le_put(p + 20, pid, 4);
    le_put(p + 24, created_ns, 8);
    return TRC_HEADER_LEN;
}

const char *trc_type_name(uint32_t type)
{
    static const char *const names[] = {
        [TRC_REC_STRING] = "string", [TRC_REC_STACK] = "stack",
        [TRC_REC_TIME_BASE] = "time-base", [TRC_REC_END] = "end",
        [TRC_EV_PROCESS] = "process", [TRC_EV_DEVICE] = "device",
        [TRC_EV_OPTIONS] = "options", [TRC_EV_ALLOC] = "alloc", [TRC_EV_FREE] = "free",
        [TRC_EV_LAUNCH] = "launch", [TRC_EV_COPY] = "copy", [TRC_EV_MEMSET] = "memset",
        [TRC_EV_NCCL] = "nccl", [TRC_EV_MIGRATION] = "migration",
        [TRC_EV_EVICTION] = "eviction", [TRC_EV_ITERATION] = "iteration",
        [TRC_EV_TIMING] = "timing", [TRC_EV_MEMORY] = "memory",
        [TRC_EV_BUDGET] = "budget", [TRC_EV_DROPPED] = "dropped",
        [TRC_EV_PLAN] = "plan", [TRC_EV_FOLLOW] = "follow", [TRC_EV_MAPPING] = "mapping",
        [TRC_EV_GUARD] = "guard", [TRC_EV_SYNC] = "sync",
    };
    return type < sizeof(names) / sizeof(names[0]) ? names[type] : NULL;
}
