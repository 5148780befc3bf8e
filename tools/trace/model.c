/* SPDX-License-Identifier: MIT */
/*
 * model.c - loads a whole trace into the arrays of model.h.
 *
 * The tracer's reader does the decoding and all the checking; this file only keeps what it
 * returns.  Events go into growing arrays in file order.  The reader stays open until
 * tm_free, so the strings and call stacks it interned (stable pointers) are used as they are;
 * what it hands out only until the next record (launch allocation ids, option pairs) is
 * copied.  Allocations and operations are indexed by id in open-addressed maps.  Two things
 * are resolved after the last record, because the records that complete them may come later
 * in the file: TIMING records are matched to their operation by id, and the launches' lists
 * of allocation ids get their final addresses in the shared id pool.
 */
#include "model.h"

#include "symbols.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

/* Map from a 64-bit id to an array index; slot value 0 means empty, else index + 1. */
typedef struct idmap {
    uint64_t *keys;
    size_t *vals;
    size_t cap, n;
} idmap_t;

typedef struct priv {
    trc_reader_t *r;
    char *path;
    idmap_t alloc_ix, op_ix;
    idmap_t move_ix;                   /* 1.5: a planned migration's move id -> migrations[] */
    idmap_t dev_ix, opt_ix;            /* device id -> devices[], option name -> options[] */
    int32_t beyond;                    /* the device that was one too many */
    uint64_t *ids;                     /* launch allocation ids, all launches in order */
    uint64_t *offs;                    /* and their offsets (tm_op_t.offsets) */
    size_t nids, cap_ids;
    trc_timing_t *timings;             /* matched to operations after the load */
    size_t ntimings, cap_timings;
    size_t cap_devices, cap_options, cap_allocs, cap_ops, cap_migrations, cap_evictions,
        cap_iterations, cap_memory, cap_budgets, cap_plans, cap_follows, cap_mappings,
        cap_guards, cap_syncs;
    idmap_t name_ix;                   /* a mangled kernel name (its interned pointer) ... */
    char **names;                      /* ... -> its demangled copy */
    size_t nnames, cap_names;
} priv_t;

/* ------------------------------------------------------------------ id maps */

uint64_t tm_hash_key(void)
{
    static _Atomic uint64_t key;
    uint64_t k = atomic_load_explicit(&key, memory_order_relaxed);
    if (k)
        return k;
    if (getrandom(&k, sizeof(k), GRND_NONBLOCK) != (ssize_t)sizeof(k)) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        k = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)&k;
    }
    k |= 1;
    atomic_store_explicit(&key, k, memory_order_relaxed);
    return k;
}

static uint64_t mix(uint64_t k)
{
    k ^= tm_hash_key();
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return k;
}

static size_t *slot(const idmap_t *m, uint64_t key)
{
    for (size_t i = mix(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1))
        if (!m->vals[i] || m->keys[i] == key)
            return &m->vals[i];
}

static int idmap_grow(idmap_t *m)
{
    idmap_t n = { 0, 0, m->cap ? m->cap * 2 : 256, m->n };
    n.keys = malloc(n.cap * sizeof(uint64_t));
    n.vals = calloc(n.cap, sizeof(size_t));
    if (!n.keys || !n.vals) {
        free(n.keys);
        free(n.vals);
        return -ENOMEM;
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->vals[i]) {
            size_t *s = slot(&n, m->keys[i]);
            *s = m->vals[i];
            n.keys[s - n.vals] = m->keys[i];
        }
    free(m->keys);
    free(m->vals);
    *m = n;
    return 0;
}

/* Maps key to index (a later one replaces an earlier one).  0 or -ENOMEM. */
static int idmap_put(idmap_t *m, uint64_t key, size_t index)
{
    if ((m->n + 1) * 2 > m->cap && idmap_grow(m) < 0)
        return -ENOMEM;
    size_t *s = slot(m, key);
    if (!*s)
        m->n++;
    *s = index + 1;
    m->keys[s - m->vals] = key;
    return 0;
}

/* The index of key, or SIZE_MAX when absent. */
static size_t idmap_get(const idmap_t *m, uint64_t key)
{
    if (!m->cap)
        return SIZE_MAX;
    size_t v = *slot(m, key);
    return v ? v - 1 : SIZE_MAX;
}

static void idmap_free(idmap_t *m)
{
    free(m->keys);
    free(m->vals);
}

/* ------------------------------------------------------------------ arrays */

/* Appends one zeroed element to *arr (n elements, room for *cap): its address, or NULL. */
static void *push(void *arr, size_t *n, size_t *cap, size_t elem)
{
    char **a = arr;
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        char *p = realloc(*a, nc * elem);
        if (!p)
            return NULL;
        *a = p;
        *cap = nc;
    }
    char *e = *a + (*n)++ * elem;
    memset(e, 0, elem);
    return e;
}

#define PUSH(t, p, field) push(&(t)->field, &(t)->n##field, &(p)->cap_##field, sizeof(*(t)->field))

/* ------------------------------------------------------------------ events */

/* The entry of device `device`, added when new: NULL with *rc -ENOMEM, or -E2BIG when it
 * would be device TM_MAX_DEVICES + 1. */
static tm_device_t *device_slot(tm_trace_t *t, priv_t *p, int32_t device, int *rc)
{
    uint64_t key = (uint32_t)device;
    size_t i = idmap_get(&p->dev_ix, key);
    if (i != SIZE_MAX)
        return &t->devices[i];
    *rc = t->ndevices == TM_MAX_DEVICES ? -E2BIG : -ENOMEM;
    if (*rc == -E2BIG) {
        p->beyond = device;
        return NULL;
    }
    tm_device_t *d = PUSH(t, p, devices);
    if (!d || idmap_put(&p->dev_ix, key, t->ndevices - 1) < 0)
        return NULL;
    d->device = device;
    d->name = "";
    return d;
}

static int add_device(tm_trace_t *t, priv_t *p, const trc_device_t *e)
{
    int rc;
    tm_device_t *d = device_slot(t, p, e->device, &rc);
    if (!d)
        return rc;
    d->name = e->name;
    d->total_mem = e->total_mem;
    d->cc_major = e->cc_major;
    d->cc_minor = e->cc_minor;
    d->sm_count = e->sm_count;
    return 0;
}

/* A later snapshot's value of an option replaces an earlier one; new names are appended.
 * Names are interned by the reader, so one name is one pointer (a file that gives one name
 * two string ids gets two entries). */
static int add_options(tm_trace_t *t, priv_t *p, const trc_options_t *o)
{
    for (uint32_t i = 0; i < o->count; i++) {
        uint64_t key = (uint64_t)(uintptr_t)o->opts[i].name;
        size_t k = idmap_get(&p->opt_ix, key);
        tm_option_t *opt = k != SIZE_MAX ? &t->options[k] : PUSH(t, p, options);
        if (!opt || (k == SIZE_MAX && idmap_put(&p->opt_ix, key, t->noptions - 1) < 0))
            return -ENOMEM;
        opt->name = o->opts[i].name;
        opt->value = o->opts[i].value;
    }
    return 0;
}

static int add_alloc(tm_trace_t *t, priv_t *p, uint64_t time, const trc_alloc_t *e)
{
    tm_alloc_t *a = PUSH(t, p, allocs);
    if (!a)
        return -ENOMEM;
    *a = (tm_alloc_t){ .id = e->id, .addr = e->addr, .size = e->size, .device = e->device,
                       .t_alloc = time, .t_free = TM_LIVE, .stack = e->stack };
    return idmap_put(&p->alloc_ix, e->id, t->nallocs - 1);
}

/* A free of an unknown id (its allocation was before the trace began) is ignored. */
static void add_free(tm_trace_t *t, priv_t *p, uint64_t time, uint64_t id)
{
    size_t i = idmap_get(&p->alloc_ix, id);
    if (i != SIZE_MAX && t->allocs[i].t_free == TM_LIVE)
        t->allocs[i].t_free = time;
}

/* Appends an operation of ev's type with the given id, span, device and stream (the rest is
 * filled by the caller); NULL when out of memory. */
static tm_op_t *new_op(tm_trace_t *t, priv_t *p, const trc_event_t *ev, uint64_t id,
                       const trc_span_t *s, int32_t device, uint64_t stream)
{
    tm_op_t *o = PUSH(t, p, ops);
    if (!o)
        return NULL;
    o->type = ev->type;
    o->device = device;
    o->stream = stream;
    o->id = id;
    o->time = ev->time;
    o->name = "";
    o->has_times = s->has_times;
    o->start = s->has_times ? s->start : 0;
    o->end = s->has_times ? s->end : 0;
    if (id && idmap_put(&p->op_ix, id, t->nops - 1) < 0)
        return NULL;
    return o;
}

/* The name a kernel is shown by: a C++ name demangled (once per name: the reader interns
 * them, so a name's pointer identifies it), any other as it is.  NULL when out of memory. */
static const char *kernel_name(priv_t *p, const char *raw)
{
    static char buf[16384];
    if (!raw)
        return "";
    if (strncmp(raw, "_Z", 2) != 0)
        return raw;
    size_t i = idmap_get(&p->name_ix, (uint64_t)(uintptr_t)raw);
    if (i != SIZE_MAX)
        return p->names[i];
    char *copy = strdup(tsym_demangle(raw, buf, sizeof(buf)));
    char **slot = copy ? push(&p->names, &p->nnames, &p->cap_names, sizeof(*slot)) : NULL;
    if (!slot || idmap_put(&p->name_ix, (uint64_t)(uintptr_t)raw, p->nnames - 1) < 0) {
        if (slot)
            p->nnames--;
        free(copy);
        return NULL;
    }
    return *slot = copy;
}

/* A launch's allocation ids go to the shared pool; pointers are set once it stops moving. */
static int add_launch(tm_trace_t *t, priv_t *p, const trc_event_t *ev)
{
    const trc_launch_t *l = &ev->u.launch;
    tm_op_t *o = new_op(t, p, ev, l->id, &l->span, l->device, l->stream);
    if (!o)
        return -ENOMEM;
    if (!(o->name = kernel_name(p, l->func)))
        return -ENOMEM;
    if (!l->nallocs)
        return 0;
    if (p->nids + l->nallocs > p->cap_ids) {
        size_t nc = (p->nids + l->nallocs) * 2;
        uint64_t *np = realloc(p->ids, nc * sizeof(uint64_t));
        if (np)
            p->ids = np;
        uint64_t *no = np ? realloc(p->offs, nc * sizeof(uint64_t)) : NULL;
        if (!no)
            return -ENOMEM;
        p->offs = no;
        p->cap_ids = nc;
    }
    memcpy(p->ids + p->nids, l->allocs, l->nallocs * sizeof(uint64_t));
    if (l->offsets)
        memcpy(p->offs + p->nids, l->offsets, l->nallocs * sizeof(uint64_t));
    else
        memset(p->offs + p->nids, 0, l->nallocs * sizeof(uint64_t));
    p->nids += l->nallocs;
    o->nallocs = l->nallocs;
    return 0;
}

static int add_op(tm_trace_t *t, priv_t *p, const trc_event_t *ev)
{
    const trc_copy_t *c = &ev->u.copy;
    const trc_memset_t *m = &ev->u.memset;
    const trc_nccl_t *n = &ev->u.nccl;
    tm_op_t *o;
    switch (ev->type) {
    case TRC_EV_COPY:
        if ((o = new_op(t, p, ev, c->id, &c->span, c->device, c->stream))) {
            o->copy_kind = c->kind;
            o->bytes = c->bytes;
            o->src = c->src;
            o->dst = c->dst;
        }
        break;
    case TRC_EV_MEMSET:
        if ((o = new_op(t, p, ev, m->id, &m->span, m->device, m->stream))) {
            o->bytes = m->bytes;
            o->dst = m->dst;
        }
        break;
    default:
        if ((o = new_op(t, p, ev, 0, &n->span, n->device, n->stream))) {
            o->bytes = n->bytes;
            o->name = n->op;
            o->src = n->send;
            o->dst = n->recv;
        }
        break;
    }
    return o ? 0 : -ENOMEM;
}

static int add_memory(tm_trace_t *t, priv_t *p, uint64_t time, const trc_memory_t *e)
{
    int rc;
    tm_device_t *d = device_slot(t, p, e->device, &rc);
    tm_memory_t *m = d ? PUSH(t, p, memory) : NULL;
    if (!m)
        return d ? -ENOMEM : rc;
    m->time = time;
    m->device = e->device;
    for (int k = 0; k < TRC_TIERS; k++) {
        m->bytes[k] = e->bytes[k];
        if (e->bytes[k] > d->peak[k])
            d->peak[k] = e->bytes[k];
    }
    return 0;
}

static int add_small(tm_trace_t *t, priv_t *p, const trc_event_t *ev)
{
    switch (ev->type) {
    case TRC_EV_MIGRATION: {
        tm_migration_t *m = PUSH(t, p, migrations);
        if (!m)
            return -ENOMEM;
        *m = (tm_migration_t){ ev->time, ev->u.migration, 0 };
        return m->m.move ? idmap_put(&p->move_ix, m->m.move, t->nmigrations - 1) : 0;
    }
    case TRC_EV_EVICTION: {
        tm_eviction_t *e = PUSH(t, p, evictions);
        return e ? (*e = (tm_eviction_t){ ev->time, ev->u.eviction }, 0) : -ENOMEM;
    }
    case TRC_EV_ITERATION: {
        tm_iteration_t *i = PUSH(t, p, iterations);
        return i ? (*i = (tm_iteration_t){ ev->time, ev->u.iteration.index }, 0) : -ENOMEM;
    }
    default: {
        trc_timing_t *tm = push(&p->timings, &p->ntimings, &p->cap_timings, sizeof(*tm));
        return tm ? (*tm = ev->u.timing, 0) : -ENOMEM;
    }
    }
}

/* PLAN, FOLLOW and MAPPING (1.5) and GUARD (1.6), each naming a device counted as any other. */
static int add_plan(tm_trace_t *t, priv_t *p, const trc_event_t *ev)
{
    int rc;
    int32_t dev = ev->type == TRC_EV_PLAN      ? ev->u.plan.device
                  : ev->type == TRC_EV_FOLLOW  ? ev->u.follow.device
                  : ev->type == TRC_EV_GUARD   ? ev->u.guard.device
                                               : ev->u.mapping.device;
    if (!device_slot(t, p, dev, &rc))
        return rc;
    if (ev->type == TRC_EV_PLAN) {
        tm_plan_t *x = PUSH(t, p, plans);
        return x ? (*x = (tm_plan_t){ ev->time, ev->u.plan }, 0) : -ENOMEM;
    }
    if (ev->type == TRC_EV_FOLLOW) {
        tm_follow_t *x = PUSH(t, p, follows);
        return x ? (*x = (tm_follow_t){ ev->time, ev->u.follow }, 0) : -ENOMEM;
    }
    if (ev->type == TRC_EV_GUARD) {
        tm_guard_t *x = PUSH(t, p, guards);
        return x ? (*x = (tm_guard_t){ ev->time, ev->u.guard }, 0) : -ENOMEM;
    }
    tm_mapping_t *x = PUSH(t, p, mappings);
    return x ? (*x = (tm_mapping_t){ ev->time, ev->u.mapping }, 0) : -ENOMEM;
}

static void widen(tm_trace_t *t, uint64_t time)
{
    if (t->events == 0 || time < t->t_first)
        t->t_first = time;
    if (t->events == 0 || time > t->t_last)
        t->t_last = time;
}

/* Keeps one event.  0 or -ENOMEM. */
static int add_event(tm_trace_t *t, priv_t *p, const trc_event_t *ev)
{
    widen(t, ev->time);
    t->events++;
    switch (ev->type) {
    case TRC_EV_PROCESS:
        if (!t->has_process)
            t->process = ev->u.process;
        t->has_process = 1;
        return 0;
    case TRC_EV_DEVICE: return add_device(t, p, &ev->u.device);
    case TRC_EV_OPTIONS: return add_options(t, p, &ev->u.options);
    case TRC_EV_ALLOC: return add_alloc(t, p, ev->time, &ev->u.alloc);
    case TRC_EV_FREE: add_free(t, p, ev->time, ev->u.free.id); return 0;
    case TRC_EV_LAUNCH: return add_launch(t, p, ev);
    case TRC_EV_COPY: case TRC_EV_MEMSET: case TRC_EV_NCCL: return add_op(t, p, ev);
    case TRC_EV_MEMORY: return add_memory(t, p, ev->time, &ev->u.memory);
    case TRC_EV_BUDGET: {
        int rc;
        if (!device_slot(t, p, ev->u.budget.device, &rc))
            return rc;
        tm_memory_t *b = PUSH(t, p, budgets);
        if (!b)
            return -ENOMEM;
        *b = (tm_memory_t){ .time = ev->time, .device = ev->u.budget.device };
        memcpy(b->bytes, ev->u.budget.bytes, sizeof(b->bytes));
        return 0;
    }
    case TRC_EV_MIGRATION: case TRC_EV_EVICTION: case TRC_EV_ITERATION: case TRC_EV_TIMING:
        return add_small(t, p, ev);
    case TRC_EV_PLAN: case TRC_EV_FOLLOW: case TRC_EV_MAPPING: case TRC_EV_GUARD:
        return add_plan(t, p, ev);
    case TRC_EV_SYNC: {
        tm_sync_t *x = PUSH(t, p, syncs);
        return x ? (*x = (tm_sync_t){ ev->time, ev->u.sync }, 0) : -ENOMEM;
    }
    case TRC_EV_DROPPED:
        if (ev->u.dropped.source == TRC_TIMING_CUPTI)
            t->dropped_cupti += ev->u.dropped.count;
        else
            t->dropped_other += ev->u.dropped.count;
        return 0;
    default: return 0;                 /* an event type this tool does not use */
    }
}

/* ------------------------------------------------------------------ after the last record */

/* Gives each launch its slice of the id pool, applies TIMING records to their operations
 * (a TIMING for an unknown id is dropped; the first replaces the times of the operation's own
 * record) and stretches the time span to the latest end.  An
 * operation with several TIMING records (a graph launch timed by CUPTI: one per kernel node,
 * all with the launch's correlation id) takes their whole span, from the earliest start to the
 * latest end, as events around the launch would time it. */
static void resolve(tm_trace_t *t, priv_t *p)
{
    size_t at = 0;
    for (size_t i = 0; i < t->nops; i++) {
        t->ops[i].allocs = t->ops[i].nallocs ? p->ids + at : NULL;
        t->ops[i].offsets = t->ops[i].nallocs ? p->offs + at : NULL;
        at += t->ops[i].nallocs;
    }
    for (size_t i = 0; i < p->ntimings; i++) {
        const trc_timing_t *tm = &p->timings[i];
        size_t k = idmap_get(&p->op_ix, tm->op);
        if (k == SIZE_MAX && tm->end >= tm->start &&
            (k = idmap_get(&p->move_ix, tm->op)) != SIZE_MAX) {
            tm_migration_t *m = &t->migrations[k];      /* a planned move's copy (1.5) */
            m->m.start = tm->start;
            m->m.end = tm->end;
            m->timed = 1;
            continue;
        }
        if (k == SIZE_MAX || tm->end < tm->start)
            continue;
        tm_op_t *o = &t->ops[k];
        int first = !o->timed_by_timing;   /* the first replaces the times of a span */
        if (first || tm->start < o->start)
            o->start = tm->start;
        if (first || tm->end > o->end)
            o->end = tm->end;
        o->has_times = 1;
        o->timed_by_timing = 1;
        o->timing_source = tm->source;
    }
    for (size_t i = 0; i < t->nops; i++)
        if (t->ops[i].has_times && t->ops[i].end > t->t_last)
            t->t_last = t->ops[i].end;
    for (size_t i = 0; i < t->nmigrations; i++)
        if (t->migrations[i].m.end > t->t_last)
            t->t_last = t->migrations[i].m.end;
}

/* ------------------------------------------------------------------ load and free */

/* Whether a reader error leaves a usable prefix (truncation, corruption) rather than nothing
 * (a missing or foreign file, an unsupported version, no memory). */
static int recoverable(int rc)
{
    return rc == -ENODATA || rc == -EBADMSG;
}

static int open_reader(const char *path, priv_t *p, tm_trace_t *t, char *err, size_t len)
{
    int rc = trc_reader_open_file(path, &p->r);
    if (rc == 0) {
        t->header = *trc_reader_header(p->r);
        return 0;
    }
    if (rc == -ENOEXEC || rc == -EPROTONOSUPPORT || recoverable(rc))
        snprintf(err, len, "%s: %s", path, trc_reader_error(p->r));
    else
        snprintf(err, len, "%s: %s", path, strerror(-rc));
    return rc;
}

/* Reads every event; on a reader error keeps what was read when `partial` allows it. */
static int read_all(tm_trace_t *t, priv_t *p, int partial, char *err, size_t len)
{
    trc_event_t ev;
    int rc;
    char why[128] = "";
    while ((rc = trc_reader_next(p->r, &ev)) == 1) {
        int a = add_event(t, p, &ev);
        if (a == -E2BIG) {              /* corrupt: read as the reader's own errors are */
            t->events--;
            snprintf(why, sizeof(why), "offset %" PRIu64 ": a record names device %" PRId32
                     ", beyond %d devices: not a trace libelixir.so writes", ev.offset,
                     p->beyond, TM_MAX_DEVICES);
            rc = -EBADMSG;
            break;
        }
        if (a < 0) {
            snprintf(err, len, "%s: out of memory", p->path);
            return -ENOMEM;
        }
    }
    if (rc == 0)
        return 0;
    const char *e = why[0] ? why : trc_reader_error(p->r);
    if (!partial || !recoverable(rc)) {
        snprintf(err, len, "%s: %s", p->path, e);
        return rc;
    }
    t->partial = 1;
    snprintf(t->warning, sizeof(t->warning), "%s: %s; loaded the %" PRIu64
             " events before it", p->path, e, t->events);
    return 0;
}

int tm_load(const char *path, int partial, tm_trace_t *t, char *err, size_t err_len)
{
    memset(t, 0, sizeof(*t));
    priv_t *p = calloc(1, sizeof(*p));
    if (!p || !(p->path = strdup(path))) {
        free(p);
        snprintf(err, err_len, "%s: out of memory", path);
        return -ENOMEM;
    }
    t->priv = p;
    t->path = p->path;
    int rc = open_reader(path, p, t, err, err_len);
    if (rc == 0)
        rc = read_all(t, p, partial, err, err_len);
    if (rc < 0) {
        tm_free(t);
        return rc;
    }
    resolve(t, p);
    t->complete = trc_reader_complete(p->r);
    if (!t->complete && !t->partial)
        snprintf(t->warning, sizeof(t->warning), "%s: no END record (the recorder did not "
                 "close the trace: crashed, killed, or it could not write?); read %" PRIu64
                 " events", path, t->events);
    return 0;
}

void tm_free(tm_trace_t *t)
{
    priv_t *p = t->priv;
    if (p) {
        trc_reader_close(p->r);
        idmap_free(&p->alloc_ix);
        idmap_free(&p->op_ix);
        idmap_free(&p->move_ix);
        idmap_free(&p->dev_ix);
        idmap_free(&p->opt_ix);
        idmap_free(&p->name_ix);
        for (size_t i = 0; i < p->nnames; i++)
            free(p->names[i]);
        free(p->names);
        free(p->ids);
        free(p->offs);
        free(p->timings);
        free(p->path);
        free(p);
    }
    free(t->devices);
    free(t->options);
    free(t->allocs);
    free(t->ops);
    free(t->migrations);
    free(t->evictions);
    free(t->iterations);
    free(t->memory);
    free(t->budgets);
    free(t->plans);
    free(t->follows);
    free(t->mappings);
    free(t->guards);
    free(t->syncs);
    memset(t, 0, sizeof(*t));
}

/* ------------------------------------------------------------------ look-ups and names */

const tm_alloc_t *tm_alloc_by_id(const tm_trace_t *t, uint64_t id)
{
    const priv_t *p = t->priv;
    size_t i = p ? idmap_get(&p->alloc_ix, id) : SIZE_MAX;
    return i == SIZE_MAX ? NULL : &t->allocs[i];
}

const tm_op_t *tm_op_by_id(const tm_trace_t *t, uint64_t id)
{
    const priv_t *p = t->priv;
    size_t i = p && id ? idmap_get(&p->op_ix, id) : SIZE_MAX;
    return i == SIZE_MAX ? NULL : &t->ops[i];
}

const tm_device_t *tm_device(const tm_trace_t *t, int32_t device)
{
    for (size_t i = 0; i < t->ndevices; i++)
        if (t->devices[i].device == device)
            return &t->devices[i];
    return NULL;
}

const char *tm_tier_name(uint32_t tier)
{
    static const char *const names[TRC_TIERS] = { "gpu", "peer", "host", "nvme" };
    return tier < TRC_TIERS ? names[tier] : "unknown";
}

const char *tm_copy_kind_name(uint32_t kind)
{
    static const char *const names[] = { "unknown", "HtoD", "DtoH", "DtoD", "HtoH", "peer" };
    return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "unknown";
}

const char *tm_timing_source_name(uint32_t source, char buf[32])
{
    switch ((trc_timing_source_t)source) {
    case TRC_TIMING_CUPTI: return "cupti";
    case TRC_TIMING_EVENTS: return "events";
    }
    /* A later version's source: its number, so that it is neither misnamed nor lost. */
    snprintf(buf, 32, "unknown (%" PRIu32 ")", source);
    return buf;
}
