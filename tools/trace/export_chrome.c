/* SPDX-License-Identifier: MIT */
/*
 * export_chrome.c - the trace as Chrome trace events (the JSON object format), which
 * Perfetto and chrome://tracing open.
 *
 * Layout: one process ("pid") per device, named by "M" metadata events; in it one thread
 * ("tid") per stream, then one per migration direction ("migrations gpu->host"), then one
 * per copy engine the application's timed copies used ("copy engine HtoD": one per direction,
 * as a GPU has).  Kernels, copies, memsets and collectives with device times are "X" slices
 * on their stream, and a timed copy is a slice on its engine's thread too (category "copy
 * engine"); operations known only by their enqueue time are thread-scoped "i" instants on
 * their stream; a slice timed by TIMING records names their source in the argument "timing"
 * (tm_timing_source_name: a source this version does not know by its number, not as a known
 * one).  Migrations are "X" slices on their direction's thread, and a flow ("s" then "f"
 * with "bp":"e", one id per migration) links each to the operation that caused it (the
 * migration's `cause`).  Bytes per tier are one "C" counter per device ("memory", one
 * series per tier the device ever used), and the budgets another ("budget": the device's GPU
 * budget and the process's host budget); iteration marks are global "i" instants.
 *
 * Times are microseconds since the earliest time in the trace, printed exactly from integer
 * nanoseconds ("12.345"), so no NaN or rounding can appear.  A flow always runs forward in
 * time (a migration usually precedes the launch that needed it): Perfetto sorts events by
 * time and drops a flow whose end comes before its start.  Strings are escaped for JSON, and
 * bytes that are not UTF-8 become U+FFFD.
 */
#include "export.h"
#include "text.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* A thread of a device's process: a stream (a = stream), a migration direction (a = from,
 * b = to) or a copy engine (a = the copy's kind).  Sorted arrays of them give the tids. */
typedef struct key {
    int32_t device;
    uint64_t a, b;
} thr_t;

typedef struct cx {
    const tm_trace_t *t;
    FILE *f;
    uint64_t base;                     /* ns at ts 0 */
    int32_t *devs;                     /* sorted distinct devices: pid = index + 1 */
    thr_t *streams, *dirs, *engines;   /* sorted: tids in this order, from 1 */
    size_t ndevs, nstreams, ndirs, nengines;
    unsigned *tiers;                   /* per device: bit k set when tier k held bytes */
    int first;                         /* no event written yet */
} cx_t;

/* ------------------------------------------------------------------ JSON text */

/* Writes ns as microseconds with three exact decimals. */
static void json_us(FILE *f, uint64_t ns)
{
    fprintf(f, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

/* Starts an event object with its phase, pid and tid; the caller adds the rest and "}". */
static void begin(cx_t *c, const char *ph, size_t pid, size_t tid)
{
    fputs(c->first ? "\n" : ",\n", c->f);
    c->first = 0;
    fprintf(c->f, "{\"ph\":\"%s\",\"pid\":%zu,\"tid\":%zu", ph, pid, tid);
}

static void field_ts(cx_t *c, const char *name, uint64_t time)
{
    fprintf(c->f, ",\"%s\":", name);
    json_us(c->f, time - c->base);
}

static void field_str(cx_t *c, const char *name, const char *s)
{
    fprintf(c->f, ",\"%s\":", name);
    text_json(c->f, s);
}

/* ------------------------------------------------------------------ processes and threads */

static int cmp_dev(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_key(const void *a, const void *b)
{
    const thr_t *x = a, *y = b;
    if (x->device != y->device)
        return x->device < y->device ? -1 : 1;
    if (x->a != y->a)
        return x->a < y->a ? -1 : 1;
    return x->b < y->b ? -1 : x->b > y->b;
}

/* Sorts v and drops duplicates: the new count. */
static size_t uniq(void *v, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    char *p = v;
    size_t k = 0;
    qsort(v, n, size, cmp);
    for (size_t i = 0; i < n; i++)
        if (k == 0 || cmp(p + (k - 1) * size, p + i * size) != 0)
            memmove(p + k++ * size, p + i * size, size);
    return k;
}

static size_t pid_of(const cx_t *c, int32_t device)
{
    const int32_t *d = bsearch(&device, c->devs, c->ndevs, sizeof(*d), cmp_dev);
    return d ? (size_t)(d - c->devs) + 1 : 0;
}

static size_t stream_tid(const cx_t *c, int32_t device, uint64_t stream)
{
    thr_t k = { device, stream, 0 };
    const thr_t *s = bsearch(&k, c->streams, c->nstreams, sizeof(k), cmp_key);
    return s ? (size_t)(s - c->streams) + 1 : 0;
}

static size_t dir_tid(const cx_t *c, const trc_migration_t *m)
{
    thr_t k = { m->device, m->from, m->to };
    const thr_t *d = bsearch(&k, c->dirs, c->ndirs, sizeof(k), cmp_key);
    return d ? c->nstreams + (size_t)(d - c->dirs) + 1 : 0;
}

static size_t engine_tid(const cx_t *c, const tm_op_t *o)
{
    thr_t k = { o->device, o->copy_kind, 0 };
    const thr_t *e = bsearch(&k, c->engines, c->nengines, sizeof(k), cmp_key);
    return e ? c->nstreams + c->ndirs + (size_t)(e - c->engines) + 1 : 0;
}

/* Does operation o go on a copy engine's thread too: a copy with device times. */
static int on_engine(const tm_op_t *o)
{
    return o->type == TRC_EV_COPY && o->has_times;
}

/* Collects the devices, streams, migration directions and copy engines.  0 or -ENOMEM. */
static int collect(cx_t *c)
{
    const tm_trace_t *t = c->t;
    size_t nd = t->ndevices + t->nops + t->nmigrations + t->nmemory + t->nbudgets;
    c->devs = malloc((nd ? nd : 1) * sizeof(*c->devs));
    c->streams = malloc((t->nops ? t->nops : 1) * sizeof(thr_t));
    c->dirs = malloc((t->nmigrations ? t->nmigrations : 1) * sizeof(thr_t));
    c->engines = malloc((t->nops ? t->nops : 1) * sizeof(thr_t));
    if (!c->devs || !c->streams || !c->dirs || !c->engines)
        return -ENOMEM;
    for (size_t i = 0; i < t->ndevices; i++)
        c->devs[c->ndevs++] = t->devices[i].device;
    for (size_t i = 0; i < t->nops; i++) {
        c->devs[c->ndevs++] = t->ops[i].device;
        c->streams[c->nstreams++] = (thr_t){ t->ops[i].device, t->ops[i].stream, 0 };
        if (on_engine(&t->ops[i]))
            c->engines[c->nengines++] = (thr_t){ t->ops[i].device, t->ops[i].copy_kind, 0 };
    }
    for (size_t i = 0; i < t->nmigrations; i++) {
        const trc_migration_t *m = &t->migrations[i].m;
        c->devs[c->ndevs++] = m->device;
        c->dirs[c->ndirs++] = (thr_t){ m->device, m->from, m->to };
    }
    for (size_t i = 0; i < t->nmemory; i++)
        c->devs[c->ndevs++] = t->memory[i].device;
    for (size_t i = 0; i < t->nbudgets; i++)
        c->devs[c->ndevs++] = t->budgets[i].device;
    c->ndevs = uniq(c->devs, c->ndevs, sizeof(*c->devs), cmp_dev);
    c->nstreams = uniq(c->streams, c->nstreams, sizeof(thr_t), cmp_key);
    c->ndirs = uniq(c->dirs, c->ndirs, sizeof(thr_t), cmp_key);
    c->nengines = uniq(c->engines, c->nengines, sizeof(thr_t), cmp_key);
    c->tiers = calloc(c->ndevs ? c->ndevs : 1, sizeof(*c->tiers));
    return c->tiers ? 0 : -ENOMEM;
}

/* The earliest time anything in the export happens: ts 0. */
static uint64_t earliest(const tm_trace_t *t)
{
    uint64_t lo = t->t_first;
    for (size_t i = 0; i < t->nops; i++)
        if (t->ops[i].has_times && t->ops[i].start < lo)
            lo = t->ops[i].start;
    for (size_t i = 0; i < t->nmigrations; i++)
        if (t->migrations[i].m.start < lo)
            lo = t->migrations[i].m.start;
    for (size_t i = 0; i < t->nmemory; i++)
        if (t->memory[i].time < lo)
            lo = t->memory[i].time;
    for (size_t i = 0; i < t->nbudgets; i++)
        if (t->budgets[i].time < lo)
            lo = t->budgets[i].time;
    return lo;
}

static void metadata(cx_t *c, size_t pid, size_t tid, const char *what, const char *name)
{
    begin(c, "M", pid, tid);
    fprintf(c->f, ",\"name\":\"%s\",\"args\":{\"name\":", what);
    text_json(c->f, name);
    fputs("}}", c->f);
}

static void sort_index(cx_t *c, size_t pid, size_t tid, const char *what, size_t index)
{
    begin(c, "M", pid, tid);
    fprintf(c->f, ",\"name\":\"%s\",\"args\":{\"sort_index\":%zu}}", what, index);
}

static void name_processes(cx_t *c)
{
    char name[512];
    for (size_t i = 0; i < c->ndevs; i++) {
        const tm_device_t *d = tm_device(c->t, c->devs[i]);
        const char *dn = d && d->name && d->name[0] ? d->name : NULL;
        if (c->devs[i] == TRC_DEVICE_HOST)
            snprintf(name, sizeof(name), "host");
        else if (c->devs[i] < 0)
            snprintf(name, sizeof(name), "device %" PRId32, c->devs[i]);
        else
            snprintf(name, sizeof(name), "GPU %" PRId32 "%s%s", c->devs[i], dn ? ": " : "",
                     dn ? dn : "");
        metadata(c, i + 1, 0, "process_name", name);
        sort_index(c, i + 1, 0, "process_sort_index", i + 1);
    }
}

static void name_threads(cx_t *c)
{
    char name[96];
    for (size_t i = 0; i < c->nstreams; i++) {
        const thr_t *s = &c->streams[i];
        snprintf(name, sizeof(name), "stream %" PRIu64 "%s", s->a, s->a ? "" : " (default)");
        metadata(c, pid_of(c, s->device), i + 1, "thread_name", name);
        sort_index(c, pid_of(c, s->device), i + 1, "thread_sort_index", i + 1);
    }
    for (size_t i = 0; i < c->ndirs; i++) {
        const thr_t *d = &c->dirs[i];
        size_t tid = c->nstreams + i + 1;
        snprintf(name, sizeof(name), "migrations %s->%s", tm_tier_name((uint32_t)d->a),
                 tm_tier_name((uint32_t)d->b));
        metadata(c, pid_of(c, d->device), tid, "thread_name", name);
        sort_index(c, pid_of(c, d->device), tid, "thread_sort_index", tid);
    }
    for (size_t i = 0; i < c->nengines; i++) {
        const thr_t *e = &c->engines[i];
        size_t tid = c->nstreams + c->ndirs + i + 1;
        snprintf(name, sizeof(name), "copy engine %s", tm_copy_kind_name((uint32_t)e->a));
        metadata(c, pid_of(c, e->device), tid, "thread_name", name);
        sort_index(c, pid_of(c, e->device), tid, "thread_sort_index", tid);
    }
}

/* ------------------------------------------------------------------ operations */

static const char *op_cat(const tm_op_t *o)
{
    switch (o->type) {
    case TRC_EV_LAUNCH: return "kernel";
    case TRC_EV_COPY: return "copy";
    case TRC_EV_MEMSET: return "memset";
    default: return "nccl";
    }
}

/* The slice's name: the kernel or collective, or "copy HtoD", "memset" (written in buf). */
static const char *op_name(const tm_op_t *o, char *buf, size_t len)
{
    if (o->type == TRC_EV_COPY)
        snprintf(buf, len, "copy %s", tm_copy_kind_name(o->copy_kind));
    else if (o->type == TRC_EV_MEMSET)
        snprintf(buf, len, "memset");
    else
        return o->name && o->name[0] ? o->name : op_cat(o);
    return buf;
}

static void op_args(cx_t *c, const tm_op_t *o)
{
    fprintf(c->f, ",\"args\":{\"enqueued_us\":");
    json_us(c->f, o->time - c->base);
    if (o->id)
        fprintf(c->f, ",\"id\":%" PRIu64, o->id);
    if (o->type == TRC_EV_LAUNCH)
        fprintf(c->f, ",\"allocations\":%" PRIu32, o->nallocs);
    else
        fprintf(c->f, ",\"bytes\":%" PRIu64, o->bytes);
    if (o->has_times && o->timed_by_timing) {
        char b[32];
        fprintf(c->f, ",\"timing\":\"%s\"", tm_timing_source_name(o->timing_source, b));
    }
    fputs("}}", c->f);
}

/* An operation's times (a slice's start and length, or an instant's time) and arguments. */
static void write_op_times(cx_t *c, const tm_op_t *o)
{
    if (o->has_times) {
        field_ts(c, "ts", o->start);
        fputs(",\"dur\":", c->f);
        json_us(c->f, o->end - o->start);
    } else {
        field_ts(c, "ts", o->time);
        fputs(",\"s\":\"t\"", c->f);
    }
    op_args(c, o);
}

/* A slice on its stream when its device times are known, else an instant at its enqueue;
 * a timed copy also on its engine's thread. */
static void write_op(cx_t *c, const tm_op_t *o)
{
    char name[64];
    begin(c, o->has_times ? "X" : "i", pid_of(c, o->device), stream_tid(c, o->device, o->stream));
    field_str(c, "name", op_name(o, name, sizeof(name)));
    fprintf(c->f, ",\"cat\":\"%s\"", op_cat(o));
    write_op_times(c, o);
    if (!on_engine(o))
        return;
    begin(c, "X", pid_of(c, o->device), engine_tid(c, o));
    field_str(c, "name", op_name(o, name, sizeof(name)));
    fputs(",\"cat\":\"copy engine\"", c->f);
    write_op_times(c, o);
}

/* ------------------------------------------------------------------ migrations and flows */

static void write_migration(cx_t *c, const trc_migration_t *m)
{
    char name[64];
    snprintf(name, sizeof(name), "%s->%s", tm_tier_name(m->from), tm_tier_name(m->to));
    begin(c, "X", pid_of(c, m->device), dir_tid(c, m));
    field_str(c, "name", name);
    fputs(",\"cat\":\"migration\"", c->f);
    field_ts(c, "ts", m->start);
    fputs(",\"dur\":", c->f);
    json_us(c->f, m->end - m->start);
    fprintf(c->f, ",\"args\":{\"chunk\":%" PRIu64 ",\"bytes\":%" PRIu64, m->chunk, m->bytes);
    field_str(c, "from", tm_tier_name(m->from));
    field_str(c, "to", tm_tier_name(m->to));
    if (m->cause)
        fprintf(c->f, ",\"cause\":%" PRIu64, m->cause);
    fputs("}}", c->f);
}

/* One end of a flow: a point inside a slice (its middle) or at an instant. */
typedef struct endpoint {
    size_t pid, tid;
    uint64_t at;
} endpoint_t;

static void flow_event(cx_t *c, const char *ph, const endpoint_t *e, size_t id)
{
    begin(c, ph, e->pid, e->tid);
    fprintf(c->f, ",\"name\":\"cause\",\"cat\":\"migration.cause\",\"id\":%zu", id);
    field_ts(c, "ts", e->at);
    fputs(ph[0] == 'f' ? ",\"bp\":\"e\"}" : "}", c->f);
}

/* The flow between migration i and its cause, from the earlier of the two to the later. */
static void write_flow(cx_t *c, size_t i)
{
    const trc_migration_t *m = &c->t->migrations[i].m;
    const tm_op_t *o = m->cause ? tm_op_by_id(c->t, m->cause) : NULL;
    if (!o)
        return;
    endpoint_t a = { pid_of(c, m->device), dir_tid(c, m), m->start + (m->end - m->start) / 2 };
    endpoint_t b = { pid_of(c, o->device), stream_tid(c, o->device, o->stream),
                     o->has_times ? o->start + (o->end - o->start) / 2 : o->time };
    if (b.at < a.at) {
        endpoint_t s = a;
        a = b;
        b = s;
    }
    flow_event(c, "s", &a, i + 1);
    flow_event(c, "f", &b, i + 1);
}

/* ------------------------------------------------------------------ counters and marks */

static void write_counters(cx_t *c)
{
    const tm_trace_t *t = c->t;
    for (size_t i = 0; i < t->nmemory; i++)
        for (int k = 0; k < TRC_TIERS; k++)
            if (t->memory[i].bytes[k])
                c->tiers[pid_of(c, t->memory[i].device) - 1] |= 1u << k;
    for (size_t i = 0; i < t->nmemory; i++) {
        const tm_memory_t *m = &t->memory[i];
        size_t pid = pid_of(c, m->device);
        unsigned mask = c->tiers[pid - 1] ? c->tiers[pid - 1] : 1u << TRC_TIER_GPU;
        int n = 0;
        begin(c, "C", pid, 0);
        fputs(",\"name\":\"memory\",\"cat\":\"memory\"", c->f);
        field_ts(c, "ts", m->time);
        fputs(",\"args\":{", c->f);
        for (uint32_t k = 0; k < TRC_TIERS; k++)
            if (mask & (1u << k))
                fprintf(c->f, "%s\"%s\":%" PRIu64, n++ ? "," : "", tm_tier_name(k),
                        m->bytes[k]);
        fputs("}}", c->f);
    }
    for (size_t i = 0; i < t->nbudgets; i++) {
        const tm_memory_t *b = &t->budgets[i];
        begin(c, "C", pid_of(c, b->device), 0);
        fputs(",\"name\":\"budget\",\"cat\":\"memory\"", c->f);
        field_ts(c, "ts", b->time);
        fprintf(c->f, ",\"args\":{\"gpu\":%" PRIu64 ",\"host\":%" PRIu64 "}}",
                b->bytes[TRC_TIER_GPU], b->bytes[TRC_TIER_HOST]);
    }
}

static void write_iterations(cx_t *c)
{
    for (size_t i = 0; i < c->t->niterations; i++) {
        const tm_iteration_t *it = &c->t->iterations[i];
        begin(c, "i", c->ndevs ? 1 : 0, 0);
        fprintf(c->f, ",\"name\":\"iteration %" PRIu64 "\",\"cat\":\"iteration\",\"s\":\"g\"",
                it->index);
        field_ts(c, "ts", it->time);
        fprintf(c->f, ",\"args\":{\"index\":%" PRIu64 "}}", it->index);
    }
}

static void write_header(cx_t *c)
{
    const tm_trace_t *t = c->t;
    fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"trace\":", c->f);
    text_json(c->f, t->path);
    fprintf(c->f, ",\"format\":\"%u.%u\"", t->header.major, t->header.minor);
    if (t->has_process) {
        fprintf(c->f, ",\"pid\":%" PRIu32, t->process.pid);
        field_str(c, "exe", t->process.exe);
        field_str(c, "cmdline", t->process.cmdline);
        field_str(c, "host", t->process.host);
    }
    fprintf(c->f, ",\"clock\":\"%s\",\"start_ns\":%" PRIu64 "},\"traceEvents\":[",
            t->header.flags & TRC_FLAG_VIRTUAL_TIME ? "virtual" : "monotonic", c->base);
}

static void write_all(cx_t *c)
{
    const tm_trace_t *t = c->t;
    write_header(c);
    name_processes(c);
    name_threads(c);
    for (size_t i = 0; i < t->nops; i++)
        write_op(c, &t->ops[i]);
    for (size_t i = 0; i < t->nmigrations; i++)
        write_migration(c, &t->migrations[i].m);
    for (size_t i = 0; i < t->nmigrations; i++)
        write_flow(c, i);
    write_counters(c);
    write_iterations(c);
    fputs("\n]}\n", c->f);
}

int tx_chrome(const tm_trace_t *t, FILE *out, char *err, size_t err_len)
{
    cx_t c = { .t = t, .f = out, .first = 1 };
    int rc = collect(&c);
    if (rc == 0) {
        c.base = earliest(t);
        write_all(&c);
    }
    free(c.devs);
    free(c.streams);
    free(c.dirs);
    free(c.engines);
    free(c.tiers);
    return text_finish(out, rc, "timeline", err, err_len);
}
