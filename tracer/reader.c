/* SPDX-License-Identifier: MIT */
/*
 * reader.c - reads a trace back as typed events with strings and call stacks resolved.
 *
 * Nothing in the file is trusted: every varint is bounded, every length is checked against
 * the data that is left and against the format's limits, every count against the bytes of its
 * record before anything is allocated, and every string or stack id against the table read so
 * far.  A problem stops the reader for good with a negative errno and "offset N: reason",
 * where N is the byte offset of the record (or field) at fault.  Running out of data inside a
 * record header or a record is truncation (-ENODATA); a record that is whole but inconsistent
 * is corruption (-EBADMSG).  So a file cut at any byte reads its complete records and then
 * reports truncation, or ends cleanly when the cut falls between records.
 */
#include "trace.h"
#include "wire.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct trc_reader {
    const uint8_t *data;
    size_t len, pos;
    uint8_t *owned;                    /* the file's bytes, when read from a file */
    trc_header_t hdr;
    int err, complete;
    uint64_t err_off;
    char msg[256];
    trc_enc_t ctx;                     /* delta state, as the writer's */
    char **strings;
    trc_stack_t **stacks;
    uint32_t nstrings, nstacks, capstrings, capstacks;
    void *scratch;                     /* launch allocation ids, option pairs */
    size_t scratch_cap;
};

/* Decoding cursor over one record's payload; why is set by the first failed check. */
typedef struct cur {
    rbuf_t b;
    trc_reader_t *r;
    int nomem;
    char why[160];
} cur_t;

/* ------------------------------------------------------------------ errors */

__attribute__((format(printf, 4, 5))) static int fail(trc_reader_t *r, int code, uint64_t off,
                                                     const char *fmt, ...)
{
    char why[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    snprintf(r->msg, sizeof(r->msg), "offset %" PRIu64 ": %s", off, why);
    r->err = code;
    r->err_off = off;
    return code;
}

__attribute__((format(printf, 2, 3))) static void bad(cur_t *c, const char *fmt, ...)
{
    va_list ap;
    if (c->why[0])
        return;
    va_start(ap, fmt);
    vsnprintf(c->why, sizeof(c->why), fmt, ap);
    va_end(ap);
}

/* Records the reason and leaves the (void) decoding function. */
#define BAD(c, ...)                                                                           \
    do {                                                                                      \
        bad(c, __VA_ARGS__);                                                                  \
        return;                                                                               \
    } while (0)

#define OOM(c)                                                                                \
    do {                                                                                      \
        (c)->nomem = 1;                                                                       \
        BAD(c, "out of memory");                                                              \
    } while (0)

const char *trc_reader_error(const trc_reader_t *r)
{
    return r->err ? r->msg : "";
}

uint64_t trc_reader_error_offset(const trc_reader_t *r)
{
    return r->err_off;
}

/* ------------------------------------------------------------------ field readers */

static uint64_t u64(cur_t *c)
{
    return get_u(&c->b);
}

static uint32_t u32(cur_t *c, const char *what)
{
    uint64_t v = get_u(&c->b);
    if (v > UINT32_MAX)
        bad(c, "%s %" PRIu64 " out of range", what, v);
    return (uint32_t)v;
}

static int32_t i32(cur_t *c, const char *what)
{
    int64_t v = get_s(&c->b);
    if (v < INT32_MIN || v > INT32_MAX)
        bad(c, "%s %" PRId64 " out of range", what, v);
    return (int32_t)v;
}

/* A string id and the string it names ("" for id 0). */
static const char *str(cur_t *c, uint32_t *id)
{
    *id = u32(c, "string id");
    if (*id == 0 || c->b.short_ || c->b.bad)
        return "";
    if (*id > c->r->nstrings) {
        bad(c, "string id %" PRIu32 " not defined", *id);
        return "";
    }
    return c->r->strings[*id - 1];
}

/* A count of elements of at least min_bytes each: never more than the record can hold. */
static uint32_t count(cur_t *c, const char *what, size_t min_bytes)
{
    uint64_t n = get_u(&c->b);
    if (n > (uint64_t)(c->b.end - c->b.p) / min_bytes) {
        bad(c, "%s count %" PRIu64 " exceeds the record's %zu bytes", what, n,
            (size_t)(c->b.end - c->b.p));
        return 0;
    }
    return (uint32_t)n;
}

static void *scratch(cur_t *c, size_t bytes)
{
    trc_reader_t *r = c->r;
    if (bytes <= r->scratch_cap)
        return r->scratch;
    void *p = realloc(r->scratch, bytes);
    if (!p) {
        c->nomem = 1;
        bad(c, "out of memory");
        return NULL;
    }
    r->scratch = p;
    r->scratch_cap = bytes;
    return p;
}

/* A trailing field added by a later minor version: 0 when the payload ends before it (a
 * record written by an older writer). */
static uint64_t opt_u64(cur_t *c)
{
    return c->b.p == c->b.end ? 0 : get_u(&c->b);
}

/* start:s duration:u, start relative to the event time; end must not overflow. */
static void times(cur_t *c, uint64_t time, uint64_t *start, uint64_t *end)
{
    *start = time + (uint64_t)get_s(&c->b);
    uint64_t dur = u64(c);
    *end = *start + dur;
    if (*end < *start)
        bad(c, "end time overflows");
}

static void span(cur_t *c, uint64_t time, trc_span_t *s)
{
    uint64_t flags = u64(c);
    if (flags > 1)
        bad(c, "unknown span flags 0x%" PRIx64, flags);
    s->has_times = (int)(flags & 1);
    if (s->has_times)
        times(c, time, &s->start, &s->end);
}

/* ------------------------------------------------------------------ tables */

static int grow_array(void *arr, uint32_t *cap, size_t elem)
{
    uint32_t n = *cap ? *cap * 2 : 64;
    void *p = realloc(*(void **)arr, (size_t)n * elem);
    if (!p)
        return -ENOMEM;
    *(void **)arr = p;
    *cap = n;
    return 0;
}

static void def_string(cur_t *c)
{
    trc_reader_t *r = c->r;
    uint32_t id = u32(c, "string id");
    uint64_t len = u64(c);
    if (c->why[0] || c->b.short_ || c->b.bad)
        return;
    if (id != r->nstrings + 1)
        BAD(c, "string id %" PRIu32 " out of sequence (expected %" PRIu32 ")", id,
                   r->nstrings + 1);
    if (len > TRC_MAX_STRING || len > (uint64_t)(c->b.end - c->b.p))
        BAD(c, "string length %" PRIu64 " exceeds the record", len);
    if (memchr(c->b.p, 0, len))
        BAD(c, "string %" PRIu32 " holds a NUL byte", id);
    char *s = malloc(len + 1);
    if (!s || (r->nstrings == r->capstrings &&
               grow_array(&r->strings, &r->capstrings, sizeof(char *)) < 0)) {
        free(s);
        OOM(c);
    }
    memcpy(s, c->b.p, len);
    s[len] = 0;
    c->b.p += len;
    r->strings[r->nstrings++] = s;
}

/* 1.4: the Python frames appended to a STACK record (none when the record ends before). */
static uint32_t def_pyframes(cur_t *c, trc_pyframe_t *p, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        p[i].file = str(c, &p[i].file_id);
        p[i].func = str(c, &p[i].func_id);
        p[i].line = u32(c, "line");
    }
    return n;
}

static void def_stack(cur_t *c)
{
    trc_reader_t *r = c->r;
    uint32_t id = u32(c, "stack id");
    uint32_t depth = count(c, "frame", 2);
    if (c->why[0] || c->b.short_ || c->b.bad)
        return;
    if (id != r->nstacks + 1)
        BAD(c, "stack id %" PRIu32 " out of sequence (expected %" PRIu32 ")", id,
                   r->nstacks + 1);
    if (depth > TRC_MAX_DEPTH)
        BAD(c, "stack depth %" PRIu32 " exceeds %d", depth, TRC_MAX_DEPTH);
    /* Room for the Python frames too: at most one per 3 bytes left in the record. */
    size_t room = depth + (size_t)(c->b.end - c->b.p) / 3 + 1;
    if (room > 2 * TRC_MAX_DEPTH + 1)
        room = 2 * TRC_MAX_DEPTH + 1;
    trc_stack_t *s = malloc(sizeof(*s) + depth * sizeof(trc_frame_t) +
                            (room - depth) * sizeof(trc_pyframe_t));
    if (!s)
        OOM(c);
    trc_frame_t *f = (trc_frame_t *)(s + 1);
    trc_pyframe_t *p = (trc_pyframe_t *)(f + depth);
    for (uint32_t i = 0; i < depth; i++) {
        f[i].module = str(c, &f[i].module_id);
        f[i].offset = u64(c);
    }
    uint32_t pydepth = c->b.p < c->b.end ? count(c, "Python frame", 3) : 0;
    if (!c->why[0] && pydepth > TRC_MAX_DEPTH)
        bad(c, "Python stack depth %" PRIu32 " exceeds %d", pydepth, TRC_MAX_DEPTH);
    if (!c->why[0])
        def_pyframes(c, p, pydepth);
    *s = (trc_stack_t){ id, depth, f, pydepth, pydepth ? p : NULL };
    if (c->why[0] || c->b.short_ || c->b.bad) {
        free(s);
        return;
    }
    if (r->nstacks == r->capstacks &&
        grow_array(&r->stacks, &r->capstacks, sizeof(trc_stack_t *)) < 0) {
        free(s);
        OOM(c);
    }
    r->stacks[r->nstacks++] = s;
}

/* ------------------------------------------------------------------ events */

static void ev_process(cur_t *c, trc_process_t *p)
{
    p->pid = u32(c, "pid");
    p->ppid = u32(c, "ppid");
    p->exe = str(c, &p->exe_id);
    p->cmdline = str(c, &p->cmdline_id);
    p->host = str(c, &p->host_id);
}

static void ev_device(cur_t *c, trc_device_t *d)
{
    d->device = i32(c, "device");
    d->name = str(c, &d->name_id);
    d->total_mem = u64(c);
    d->cc_major = u32(c, "compute capability");
    d->cc_minor = u32(c, "compute capability");
    d->sm_count = u32(c, "SM count");
}

static void ev_options(cur_t *c, trc_options_t *o)
{
    o->count = count(c, "option", 2);
    trc_option_t *opt = scratch(c, (o->count ? o->count : 1) * sizeof(trc_option_t));
    o->opts = opt;
    for (uint32_t i = 0; opt && i < o->count; i++) {
        opt[i].name = str(c, &opt[i].name_id);
        opt[i].value = str(c, &opt[i].value_id);
    }
}

static void ev_alloc(cur_t *c, trc_alloc_t *a)
{
    trc_reader_t *r = c->r;
    a->id = r->ctx.alloc + (uint64_t)get_s(&c->b);
    a->device = i32(c, "device");
    a->addr = r->ctx.addr + (uint64_t)get_s(&c->b);
    a->size = u64(c);
    a->stack_id = u32(c, "stack id");
    a->stack = NULL;
    r->ctx.alloc = a->id;
    r->ctx.addr = a->addr + a->size;
    if (a->stack_id > r->nstacks)
        BAD(c, "stack id %" PRIu32 " not defined", a->stack_id);
    if (a->stack_id)
        a->stack = r->stacks[a->stack_id - 1];
}

static void ev_launch(cur_t *c, uint64_t time, trc_launch_t *l)
{
    trc_reader_t *r = c->r;
    l->id = r->ctx.launch + (uint64_t)get_s(&c->b);
    l->func = str(c, &l->func_id);
    l->stream = u64(c);
    l->device = i32(c, "device");
    span(c, time, &l->span);
    l->nallocs = count(c, "allocation", 1);
    uint64_t *ids = scratch(c, (l->nallocs ? 2 * (size_t)l->nallocs : 1) * sizeof(uint64_t));
    l->allocs = ids;
    l->offsets = NULL;
    uint64_t prev = r->ctx.alloc;
    for (uint32_t i = 0; ids && i < l->nallocs; i++)
        prev = ids[i] = prev + (uint64_t)get_s(&c->b);
    r->ctx.launch = l->id;
    uint32_t n = ids && c->b.p < c->b.end ? count(c, "offset", 2) : 0;    /* (1.8) */
    if (!n)
        return;
    uint64_t *off = ids + l->nallocs;
    memset(off, 0, l->nallocs * sizeof(*off));
    for (uint32_t k = 0, i = 0; k < n; k++) {
        uint64_t step = u64(c);
        if (c->b.short_ || c->b.bad)
            return;                     /* (said as the record's fields running short) */
        if (k && !step) {
            bad(c, "launch offsets: allocation %" PRIu32 " given twice", i);
            return;
        }
        if (step >= l->nallocs - i) {
            bad(c, "launch offset index %" PRIu64 " past its %" PRIu32 " allocations",
                i + step, l->nallocs);
            return;
        }
        i += (uint32_t)step;
        off[i] = u64(c);
    }
    l->offsets = off;
}

static void ev_copy(cur_t *c, uint64_t time, trc_copy_t *p)
{
    p->kind = u32(c, "copy kind");
    p->src = u64(c);
    p->dst = u64(c);
    p->bytes = u64(c);
    p->stream = u64(c);
    p->device = i32(c, "device");
    span(c, time, &p->span);
    p->id = opt_u64(c);
}

static void ev_memset(cur_t *c, uint64_t time, trc_memset_t *m)
{
    m->dst = u64(c);
    m->bytes = u64(c);
    m->value = u32(c, "memset value");
    m->elem_size = u32(c, "element size");
    m->stream = u64(c);
    m->device = i32(c, "device");
    span(c, time, &m->span);
    m->id = opt_u64(c);
}

static void ev_nccl(cur_t *c, uint64_t time, trc_nccl_t *n)
{
    n->op = str(c, &n->op_id);
    n->send = u64(c);
    n->recv = u64(c);
    n->bytes = u64(c);
    n->comm = u64(c);
    n->peer = i32(c, "peer");
    n->stream = u64(c);
    n->device = i32(c, "device");
    span(c, time, &n->span);
}

static void ev_migration(cur_t *c, uint64_t time, trc_migration_t *m)
{
    m->chunk = u64(c);
    m->from = u32(c, "tier");
    m->to = u32(c, "tier");
    m->bytes = u64(c);
    m->device = i32(c, "device");
    times(c, time, &m->start, &m->end);
    m->cause = opt_u64(c);
    m->flags = opt_u64(c);
    m->move = opt_u64(c);
}

static void ev_plan(cur_t *c, trc_plan_t *p)
{
    p->device = i32(c, "device");
    p->plan = u64(c);
    p->iteration = u64(c);
    p->ops = u64(c);
    p->buffers = u64(c);
    p->moves = u64(c);
    p->predicted_ns = u64(c);
    p->bound_ns = u64(c);
    p->compute_ns = u64(c);
    p->bytes_in = u64(c);
    p->bytes_out = u64(c);
    p->planning_ns = u64(c);
    p->again = opt_u64(c);              /* (1.10) */
}

static void ev_guard(cur_t *c, trc_guard_t *g)
{
    g->device = i32(c, "device");
    g->plan = u64(c);
    g->iteration = u64(c);
    g->verdict = u32(c, "verdict");
    g->planned_ns = u64(c);
    g->reactive_ns = u64(c);
    g->limit = u64(c);
}

static void ev_sync(cur_t *c, trc_sync_t *s)
{
    s->kind = u32(c, "kind");
    s->stream = u64(c);
    s->device = i32(c, "device");
}

static void ev_follow(cur_t *c, trc_follow_t *f)
{
    f->device = i32(c, "device");
    f->plan = u64(c);
    f->iteration = u64(c);
    f->foreseen = u64(c);
    f->unforeseen = u64(c);
    f->missed = u64(c);
    f->moves = u64(c);
    f->chunks = u64(c);
    f->left = u64(c);
    f->partial = opt_u64(c);            /* (1.9) */
}

static void ev_mapping(cur_t *c, trc_mapping_t *m)
{
    m->device = i32(c, "device");
    m->planned_remaps = u64(c);
    m->planned_ns = u64(c);
    m->reactive_remaps = u64(c);
    m->reactive_ns = u64(c);
}

static void ev_eviction(cur_t *c, trc_eviction_t *v)
{
    v->chunk = u64(c);
    v->alloc = c->r->ctx.alloc + (uint64_t)get_s(&c->b);
    v->from = u32(c, "tier");
    v->to = u32(c, "tier");
    v->bytes = u64(c);
    v->reason = u32(c, "reason");
}

static void ev_timing(cur_t *c, uint64_t time, trc_timing_t *t)
{
    t->op = u64(c);
    t->source = u32(c, "timing source");
    times(c, time, &t->start, &t->end);
}

/* The first TRC_TIERS values are kept; a later version's extra tiers are read and dropped,
 * missing ones stay 0. */
static void ev_memory(cur_t *c, trc_memory_t *m)
{
    m->device = i32(c, "device");
    uint32_t n = count(c, "tier", 1);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t v = u64(c);
        if (i < TRC_TIERS)
            m->bytes[i] = v;
    }
}

/* Decodes an event payload (its time first) into ev. */
static void event(cur_t *c, trc_event_t *ev)
{
    uint64_t t = c->r->ctx.time += (uint64_t)get_s(&c->b);
    ev->time = t;
    switch (ev->type) {
    case TRC_EV_PROCESS: ev_process(c, &ev->u.process); break;
    case TRC_EV_DEVICE: ev_device(c, &ev->u.device); break;
    case TRC_EV_OPTIONS: ev_options(c, &ev->u.options); break;
    case TRC_EV_ALLOC: ev_alloc(c, &ev->u.alloc); break;
    case TRC_EV_FREE: ev->u.free.id = c->r->ctx.alloc + (uint64_t)get_s(&c->b); break;
    case TRC_EV_LAUNCH: ev_launch(c, t, &ev->u.launch); break;
    case TRC_EV_COPY: ev_copy(c, t, &ev->u.copy); break;
    case TRC_EV_MEMSET: ev_memset(c, t, &ev->u.memset); break;
    case TRC_EV_NCCL: ev_nccl(c, t, &ev->u.nccl); break;
    case TRC_EV_MIGRATION: ev_migration(c, t, &ev->u.migration); break;
    case TRC_EV_EVICTION: ev_eviction(c, &ev->u.eviction); break;
    case TRC_EV_TIMING: ev_timing(c, t, &ev->u.timing); break;
    case TRC_EV_MEMORY: ev_memory(c, &ev->u.memory); break;
    case TRC_EV_BUDGET: ev_memory(c, &ev->u.budget); break;
    case TRC_EV_DROPPED:
        ev->u.dropped.source = u32(c, "timing source");
        ev->u.dropped.count = u64(c);
        break;
    case TRC_EV_PLAN: ev_plan(c, &ev->u.plan); break;
    case TRC_EV_FOLLOW: ev_follow(c, &ev->u.follow); break;
    case TRC_EV_MAPPING: ev_mapping(c, &ev->u.mapping); break;
    case TRC_EV_GUARD: ev_guard(c, &ev->u.guard); break;
    case TRC_EV_SYNC: ev_sync(c, &ev->u.sync); break;
    default: ev->u.iteration.index = u64(c); break;
    }
}

/* ------------------------------------------------------------------ records */

/* Decodes one whole record's payload: 1 for an event in *ev, 0 for a table, control or
 * unknown record (skipped), negative when it is inconsistent. */
static int record(trc_reader_t *r, uint64_t type, const uint8_t *p, size_t len, uint64_t off,
                  trc_event_t *ev)
{
    cur_t c = { .b = { p, p + len, 0, 0 }, .r = r };
    int is_event = type >= TRC_EV_PROCESS && type <= TRC_EV_SYNC;
    memset(ev, 0, sizeof(*ev));
    ev->type = (trc_type_t)type;
    ev->offset = off;
    switch (type) {
    case TRC_REC_STRING: def_string(&c); break;
    case TRC_REC_STACK: def_stack(&c); break;
    case TRC_REC_TIME_BASE: r->ctx = (trc_enc_t){ .time = u64(&c) }; break;
    case TRC_REC_END: r->complete = 1; (void)u64(&c); break;
    default:
        if (!is_event)
            return 0;
        event(&c, ev);
    }
    if (c.nomem)
        return fail(r, -ENOMEM, off, "%s record: out of memory", trc_type_name((uint32_t)type));
    if (c.why[0])
        return fail(r, -EBADMSG, off, "%s record: %s", trc_type_name((uint32_t)type), c.why);
    if (c.b.short_ || c.b.bad)
        return fail(r, -EBADMSG, off, "%s record: %s", trc_type_name((uint32_t)type),
                    c.b.bad ? "overlong varint" : "fields run past its length");
    return is_event;
}

int trc_reader_next(trc_reader_t *r, trc_event_t *ev)
{
    while (!r->err) {
        if (r->pos == r->len)
            return 0;
        uint64_t off = r->pos;
        rbuf_t b = { r->data + r->pos, r->data + r->len, 0, 0 };
        uint64_t type = get_u(&b);
        uint64_t len = b.short_ || b.bad ? 0 : get_u(&b);
        if (b.bad)
            return fail(r, -EBADMSG, off, "overlong varint in record header");
        if (b.short_)
            return fail(r, -ENODATA, off, "file ends inside a record header");
        if (len > TRC_MAX_RECORD)
            return fail(r, -EBADMSG, off, "record length %" PRIu64 " exceeds the limit %u",
                        len, TRC_MAX_RECORD);
        if (len > (uint64_t)(b.end - b.p))
            return fail(r, -ENODATA, off, "record length %" PRIu64 " beyond end of file", len);
        r->pos = (size_t)(b.p - r->data) + (size_t)len;
        int rc = record(r, type, b.p, (size_t)len, off, ev);
        if (rc != 0)
            return rc;
    }
    return r->err;
}

/* ------------------------------------------------------------------ open and close */

static int header(trc_reader_t *r)
{
    const uint8_t *p = r->data;
    size_t n = r->len;
    if (n == 0)
        return fail(r, -ENODATA, 0, "empty file");
    if (memcmp(p, TRC_MAGIC, n < 8 ? n : 8) != 0)
        return fail(r, -ENOEXEC, 0, "not an Elixir trace (bad magic)");
    if (n < 16)
        return fail(r, -ENODATA, n, "file ends inside the header");
    r->hdr.major = (uint16_t)le_get(p + 8, 2);
    r->hdr.minor = (uint16_t)le_get(p + 10, 2);
    r->hdr.header_len = (uint32_t)le_get(p + 12, 4);
    if (r->hdr.major != TRC_VERSION_MAJOR)
        return fail(r, -EPROTONOSUPPORT, 8, "trace format version %u.%u, this reader reads %u.x",
                    r->hdr.major, r->hdr.minor, TRC_VERSION_MAJOR);
    if (r->hdr.header_len < TRC_HEADER_LEN)
        return fail(r, -EBADMSG, 12, "header length %" PRIu32 " below %d", r->hdr.header_len,
                    TRC_HEADER_LEN);
    if (n < TRC_HEADER_LEN || r->hdr.header_len > n)
        return fail(r, -ENODATA, n, "header length %" PRIu32 " beyond end of file",
                    r->hdr.header_len);
    r->hdr.flags = (uint32_t)le_get(p + 16, 4);
    r->hdr.pid = (uint32_t)le_get(p + 20, 4);
    r->hdr.created_ns = le_get(p + 24, 8);
    r->pos = r->hdr.header_len;
    return 0;
}

int trc_reader_open_mem(const void *buf, size_t len, trc_reader_t **out)
{
    trc_reader_t *r = calloc(1, sizeof(*r));
    *out = r;
    if (!r)
        return -ENOMEM;
    r->data = buf;
    r->len = len;
    return header(r);
}

/* Reads the whole of fd (which may still be growing: reads to end of file, not to st_size). */
static int slurp(int fd, uint8_t **data, size_t *len)
{
    struct stat st;
    size_t cap = fstat(fd, &st) == 0 && st.st_size > 0 ? (size_t)st.st_size + 1 : 65536, n = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf)
            return -ENOMEM;
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap *= 2);
            if (!nb)
                free(buf);
            buf = nb;
            continue;
        }
        ssize_t k = read(fd, buf + n, cap - n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            int rc = k < 0 ? -errno : 0;
            *data = buf;
            *len = n;
            return rc;
        }
        n += (size_t)k;
    }
}

int trc_reader_open_file(const char *path, trc_reader_t **out)
{
    trc_reader_t *r = calloc(1, sizeof(*r));
    *out = r;
    if (!r)
        return -ENOMEM;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fail(r, -errno, 0, "cannot open %s: %s", path, strerror(errno));
    int rc = slurp(fd, &r->owned, &r->len);
    close(fd);
    if (rc < 0)
        return fail(r, rc, 0, "cannot read %s: %s", path, strerror(-rc));
    r->data = r->owned;
    return header(r);
}

const trc_header_t *trc_reader_header(const trc_reader_t *r)
{
    return &r->hdr;
}

int trc_reader_complete(const trc_reader_t *r)
{
    return r->complete;
}

const char *trc_reader_string(const trc_reader_t *r, uint32_t id)
{
    return id && id <= r->nstrings ? r->strings[id - 1] : NULL;
}

const trc_stack_t *trc_reader_stack(const trc_reader_t *r, uint32_t id)
{
    return id && id <= r->nstacks ? r->stacks[id - 1] : NULL;
}

void trc_reader_close(trc_reader_t *r)
{
    if (!r)
        return;
    for (uint32_t i = 0; i < r->nstrings; i++)
        free(r->strings[i]);
    for (uint32_t i = 0; i < r->nstacks; i++)
        free(r->stacks[i]);
    free(r->strings);
    free(r->stacks);
    free(r->scratch);
    free(r->owned);
    free(r);
}
