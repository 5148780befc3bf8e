/* SPDX-License-Identifier: MIT */
/*
 * writer.c - the append-only trace writer: creates the file (0600, never over an existing
 * one), writes the header at once, then appends records to a buffer that goes to the file when
 * full, on trc_writer_flush and on trc_writer_close (which adds the END record).
 *
 * Strings and call stacks are interned in one kind of table keyed by bytes (a string's bytes,
 * or a stack's packed frames, native and Python); the first use of a value emits its table
 * record, so a definition always precedes every reference in the file.  Not thread-safe: the
 * per-thread buffers of the recorder (record.c) encode with trc_encode_* and hand whole
 * buffers over to trc_writer_append.
 * The first error (a failed write) is sticky: every later call returns it.
 */
#include "trace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BUF_SIZE (64u << 10)

typedef struct entry {
    uint64_t hash;
    uint32_t id, len;
    uint8_t *key;
} entry_t;

/* Open-addressed table of interned byte strings; ids count up from 1 (id 0: empty slot). */
typedef struct intern {
    entry_t *slots;
    uint32_t cap, count;
} intern_t;

struct trc_writer {
    int fd, error;
    int resync;                        /* records appended raw: next event needs a TIME_BASE */
    uint8_t *buf;
    size_t len, cap;
    uint64_t written, events;
    trc_enc_t enc;
    intern_t strings, stacks;
};

/* ------------------------------------------------------------------ interning */

static uint64_t fnv1a(const void *key, size_t len)
{
    const uint8_t *p = key;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

static entry_t *slot_for(intern_t *t, uint64_t h, const void *key, uint32_t len)
{
    for (uint32_t i = (uint32_t)h & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        entry_t *s = &t->slots[i];
        if (!s->key || (s->hash == h && s->len == len && memcmp(s->key, key, len) == 0))
            return s;
    }
}

/* Doubles the table (kept at most half full). */
static int grow(intern_t *t)
{
    intern_t n = { calloc(t->cap ? t->cap * 2 : 64, sizeof(entry_t)), t->cap ? t->cap * 2 : 64,
                   t->count };
    if (!n.slots)
        return -ENOMEM;
    for (uint32_t i = 0; i < t->cap; i++)
        if (t->slots[i].key)
            *slot_for(&n, t->slots[i].hash, t->slots[i].key, t->slots[i].len) = t->slots[i];
    free(t->slots);
    *t = n;
    return 0;
}

/* Returns the id of key (> 0), or 0 when it is not interned yet. */
static uint32_t lookup(intern_t *t, const void *key, uint32_t len)
{
    return t->cap ? slot_for(t, fnv1a(key, len), key, len)->id : 0;
}

/* Makes room for one more entry and copies key: *copy is then handed to commit() once the
 * table record is in the buffer, or freed when it could not be emitted. */
static long prepare(intern_t *t, const void *key, uint32_t len, uint8_t **copy)
{
    if ((t->count + 1) * 2 > t->cap && grow(t) < 0)
        return -ENOMEM;
    if (!(*copy = malloc(len ? len : 1)))
        return -ENOMEM;
    memcpy(*copy, key, len);
    return t->count + 1;
}

static void commit(intern_t *t, uint8_t *copy, uint32_t len)
{
    uint64_t h = fnv1a(copy, len);
    entry_t *s = slot_for(t, h, copy, len);
    *s = (entry_t){ h, ++t->count, len, copy };
}

static void intern_free(intern_t *t)
{
    for (uint32_t i = 0; i < t->cap; i++)
        free(t->slots[i].key);
    free(t->slots);
}

/* ------------------------------------------------------------------ file and buffer */

static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -errno;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* A write failed (disk full, file too large, I/O error): part of it may be in the file, so
 * the file is cut back to what was written whole, where a record ends; the error sticks. */
static int write_failed(trc_writer_t *w, int rc)
{
    while (ftruncate(w->fd, (off_t)w->written) < 0 && errno == EINTR)
        ;
    return w->error = rc;
}

int trc_writer_flush(trc_writer_t *w)
{
    if (w->error)
        return w->error;
    int rc = write_all(w->fd, w->buf, w->len);
    if (rc < 0)
        return write_failed(w, rc);
    w->written += w->len;
    w->len = 0;
    return 0;
}

typedef struct what {
    const trc_event_t *ev;             /* an event, or else a table record: */
    uint32_t type, id;
    const void *data;                  /* a string's bytes, or a trc_stack_t */
    size_t len;
} what_t;

static long encode(trc_writer_t *w, const what_t *x)
{
    uint8_t *p = w->buf + w->len;
    size_t room = w->cap - w->len;
    if (x->ev)
        return trc_encode_event(&w->enc, p, room, x->ev);
    if (x->type == TRC_REC_STRING)
        return trc_encode_string(&w->enc, p, room, x->id, x->data, x->len);
    trc_stack_t s = *(const trc_stack_t *)x->data;
    s.id = x->id;
    return trc_encode_stack_py(&w->enc, p, room, &s);
}

/* Appends one record: flushes when it does not fit, grows the buffer for a big record. */
static int append(trc_writer_t *w, const what_t *x)
{
    if (w->error)
        return w->error;
    long n = encode(w, x);
    if (n == -ENOSPC && w->len && trc_writer_flush(w) == 0)
        n = encode(w, x);
    while (n == -ENOSPC && w->cap < 2 * TRC_MAX_RECORD) {
        uint8_t *nb = realloc(w->buf, w->cap * 2);
        if (!nb)
            return -ENOMEM;
        w->buf = nb;
        w->cap *= 2;
        n = encode(w, x);
    }
    if (n < 0)
        return w->error ? w->error : (int)(n == -ENOSPC ? -E2BIG : n);
    w->len += (size_t)n;
    return 0;
}

/* ------------------------------------------------------------------ open and close */

/* Expands %p (pid) and %% in path into out; -ENAMETOOLONG when it does not fit. */
static int expand(const char *path, char *out, size_t cap)
{
    size_t o = 0;
    for (const char *s = path; *s; s++) {
        int n;
        if (s[0] == '%' && s[1] == 'p')
            n = snprintf(out + o, cap - o, "%ld", (long)getpid()), s++;
        else if (s[0] == '%' && s[1] == '%')
            n = snprintf(out + o, cap - o, "%%"), s++;
        else
            n = snprintf(out + o, cap - o, "%c", *s);
        if (n < 0 || (size_t)n >= cap - o)
            return -ENAMETOOLONG;
        o += (size_t)n;
    }
    return 0;
}

static void destroy(trc_writer_t *w)
{
    intern_free(&w->strings);
    intern_free(&w->stacks);
    free(w->buf);
    free(w);
}

int trc_writer_open(const char *path, uint32_t flags, trc_writer_t **out)
{
    char name[4096] = "";
    struct timespec ts;
    uint8_t hdr[TRC_HEADER_LEN];
    *out = NULL;
    int rc = expand(path, name, sizeof(name));
    if (rc < 0)
        return rc;
    trc_writer_t *w = calloc(1, sizeof(*w));
    if (!w || !(w->buf = malloc(BUF_SIZE))) {
        free(w);
        return -ENOMEM;
    }
    w->cap = BUF_SIZE;
    w->fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (w->fd < 0) {
        rc = -errno;
        free(w->buf);
        free(w);
        return rc;
    }
    clock_gettime(CLOCK_REALTIME, &ts);
    trc_encode_header(hdr, sizeof(hdr), flags, (uint32_t)getpid(),
                      (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
    if ((rc = write_all(w->fd, hdr, sizeof(hdr))) < 0) {
        close(w->fd);
        destroy(w);
        return rc;
    }
    w->written = sizeof(hdr);
    *out = w;
    return 0;
}

int trc_writer_close(trc_writer_t *w)
{
    if (!w)
        return 0;
    trc_event_t end = { .type = TRC_REC_END, .u.end_count = w->events };
    what_t x = { .ev = &end };
    int rc = append(w, &x);
    if (rc == 0)
        rc = trc_writer_flush(w);
    if (close(w->fd) < 0 && rc == 0)
        rc = -errno;
    destroy(w);
    return rc;
}

uint64_t trc_writer_bytes(const trc_writer_t *w)
{
    return w->written + w->len;
}

uint64_t trc_writer_events(const trc_writer_t *w)
{
    return w->events;
}

/* ------------------------------------------------------------------ tables and events */

/* Interns key in t; on first use emits the table record described by x (id filled in). */
static long intern(trc_writer_t *w, intern_t *t, const void *key, uint32_t len, what_t *x)
{
    uint8_t *copy;
    uint32_t id = lookup(t, key, len);
    if (id)
        return id;
    long nid = prepare(t, key, len, &copy);
    if (nid < 0)
        return nid;
    x->id = (uint32_t)nid;
    int rc = append(w, x);
    if (rc < 0) {
        free(copy);
        return rc;
    }
    commit(t, copy, len);
    return nid;
}

long trc_writer_string(trc_writer_t *w, const char *s)
{
    size_t len = strlen(s);
    if (len > TRC_MAX_STRING)
        return -EINVAL;
    what_t x = { .type = TRC_REC_STRING, .data = s, .len = len };
    return intern(w, &w->strings, s, (uint32_t)len, &x);
}

long trc_writer_stack(trc_writer_t *w, const trc_frame_t *frames, uint32_t depth)
{
    trc_stack_t s = { .depth = depth, .frames = frames };
    return trc_writer_stack_py(w, &s);
}

/* The key of a stack: its depth, the (module id, offset) pairs, then the (file id, function
 * id, line) triples of its Python frames, so that no two different stacks share one. */
long trc_writer_stack_py(trc_writer_t *w, const trc_stack_t *s)
{
    uint8_t key[4 + 2 * TRC_MAX_DEPTH * 12];
    if (s->depth > TRC_MAX_DEPTH || s->pydepth > TRC_MAX_DEPTH)
        return -EINVAL;
    uint8_t *k = key;
    memcpy(k, &s->depth, 4);
    k += 4;
    for (uint32_t i = 0; i < s->depth; i++, k += 12) {
        memcpy(k, &s->frames[i].module_id, 4);
        memcpy(k + 4, &s->frames[i].offset, 8);
    }
    for (uint32_t i = 0; i < s->pydepth; i++, k += 12) {
        memcpy(k, &s->pyframes[i].file_id, 4);
        memcpy(k + 4, &s->pyframes[i].func_id, 4);
        memcpy(k + 8, &s->pyframes[i].line, 4);
    }
    what_t x = { .type = TRC_REC_STACK, .data = s };
    return intern(w, &w->stacks, key, (uint32_t)(k - key), &x);
}

int trc_emit_event(trc_writer_t *w, const trc_event_t *ev)
{
    if (ev->type == TRC_REC_STRING || ev->type == TRC_REC_STACK || ev->type == TRC_REC_END)
        return -EINVAL;
    if (w->resync && ev->type != TRC_REC_TIME_BASE) {
        trc_event_t base = { .type = TRC_REC_TIME_BASE, .time = ev->time };
        what_t b = { .ev = &base };
        int rc = append(w, &b);
        if (rc < 0)
            return rc;
    }
    w->resync = 0;
    what_t x = { .ev = ev };
    int rc = append(w, &x);
    if (rc == 0 && ev->type != TRC_REC_TIME_BASE)
        w->events++;
    return rc;
}

/* The block was encoded with a delta state of its own: it must reset the reader's with a
 * TIME_BASE first, and the writer's next event must do the same (resync). */
int trc_writer_append(trc_writer_t *w, const void *records, size_t len, uint64_t events)
{
    if (w->error)
        return w->error;
    if (len == 0)
        return 0;
    if (*(const uint8_t *)records != TRC_REC_TIME_BASE)
        return -EINVAL;
    int rc = trc_writer_flush(w);
    if (rc == 0 && (rc = write_all(w->fd, records, len)) < 0)
        write_failed(w, rc);
    if (rc < 0)
        return rc;
    w->written += len;
    w->events += events;
    w->resync = 1;
    return 0;
}

#define EMIT(name, TYPE, type_t, field)                                                       \
    int trc_emit_##name(trc_writer_t *w, uint64_t time, const type_t *v)                      \
    {                                                                                         \
        trc_event_t ev = { .type = TYPE, .time = time, .u.field = *v };                       \
        return trc_emit_event(w, &ev);                                                        \
    }

EMIT(process, TRC_EV_PROCESS, trc_process_t, process)
EMIT(device, TRC_EV_DEVICE, trc_device_t, device)
EMIT(options, TRC_EV_OPTIONS, trc_options_t, options)
EMIT(alloc, TRC_EV_ALLOC, trc_alloc_t, alloc)
EMIT(free, TRC_EV_FREE, trc_free_t, free)
EMIT(launch, TRC_EV_LAUNCH, trc_launch_t, launch)
EMIT(copy, TRC_EV_COPY, trc_copy_t, copy)
EMIT(memset, TRC_EV_MEMSET, trc_memset_t, memset)
EMIT(nccl, TRC_EV_NCCL, trc_nccl_t, nccl)
EMIT(migration, TRC_EV_MIGRATION, trc_migration_t, migration)
EMIT(eviction, TRC_EV_EVICTION, trc_eviction_t, eviction)
EMIT(iteration, TRC_EV_ITERATION, trc_iteration_t, iteration)
EMIT(timing, TRC_EV_TIMING, trc_timing_t, timing)
EMIT(memory, TRC_EV_MEMORY, trc_memory_t, memory)
EMIT(budget, TRC_EV_BUDGET, trc_budget_t, budget)
EMIT(dropped, TRC_EV_DROPPED, trc_dropped_t, dropped)
EMIT(plan, TRC_EV_PLAN, trc_plan_t, plan)
EMIT(follow, TRC_EV_FOLLOW, trc_follow_t, follow)
EMIT(mapping, TRC_EV_MAPPING, trc_mapping_t, mapping)
EMIT(guard, TRC_EV_GUARD, trc_guard_t, guard)
EMIT(sync, TRC_EV_SYNC, trc_sync_t, sync)
