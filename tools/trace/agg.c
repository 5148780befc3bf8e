/* SPDX-License-Identifier: MIT */
/*
 * agg.c - the figures of agg.h: allocations by size, per-kernel statistics, migration totals
 * with the share hidden behind kernels, per-iteration figures, and call sites as text.
 *
 * Everything here reads the model and allocates its result; nothing is cached between calls
 * except the modules' symbol tables (symbols.c).
 */
#include "agg.h"
#include "symbols.h"
#include "text.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ allocations */

int tm_alloc_cmp_size(const void *a, const void *b)
{
    const tm_alloc_t *x = *(const tm_alloc_t *const *)a, *y = *(const tm_alloc_t *const *)b;
    if (x->size != y->size)
        return x->size > y->size ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

const tm_alloc_t **tm_allocs_by_size(const tm_trace_t *t)
{
    const tm_alloc_t **v = malloc((t->nallocs ? t->nallocs : 1) * sizeof(*v));
    if (!v)
        return NULL;
    for (size_t i = 0; i < t->nallocs; i++)
        v[i] = &t->allocs[i];
    qsort(v, t->nallocs, sizeof(*v), tm_alloc_cmp_size);
    return v;
}

/* ------------------------------------------------------------------ kernels */

static uint64_t hash_str(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull ^ tm_hash_key();
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

static int by_total(const void *a, const void *b)
{
    const tm_kernel_stat_t *x = a, *y = b;
    if (x->total_ns != y->total_ns)
        return x->total_ns > y->total_ns ? -1 : 1;
    if (x->launches != y->launches)
        return x->launches > y->launches ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void account(tm_kernel_stat_t *k, const tm_op_t *o)
{
    k->launches++;
    if (!o->has_times)
        return;
    uint64_t d = o->end - o->start;
    k->min_ns = k->timed == 0 || d < k->min_ns ? d : k->min_ns;
    k->max_ns = d > k->max_ns ? d : k->max_ns;
    k->total_ns += d;
    k->timed++;
}

/* Groups the launches by name in an open-addressed table of indices into *out. */
int tm_kernel_stats(const tm_trace_t *t, tm_kernel_stat_t **out, size_t *n)
{
    size_t cap = 64, count = 0;
    while (cap < 2 * t->nops)
        cap *= 2;
    size_t *slots = calloc(cap, sizeof(size_t));
    tm_kernel_stat_t *ks = malloc(cap / 2 * sizeof(*ks));
    if (!slots || !ks) {
        free(slots);
        free(ks);
        return -ENOMEM;
    }
    for (size_t i = 0; i < t->nops; i++) {
        const tm_op_t *o = &t->ops[i];
        if (o->type != TRC_EV_LAUNCH)
            continue;
        size_t s = hash_str(o->name) & (cap - 1);
        while (slots[s] && strcmp(ks[slots[s] - 1].name, o->name) != 0)
            s = (s + 1) & (cap - 1);
        if (!slots[s]) {
            ks[count] = (tm_kernel_stat_t){ .name = o->name };
            slots[s] = ++count;
        }
        account(&ks[slots[s] - 1], o);
    }
    free(slots);
    qsort(ks, count, sizeof(*ks), by_total);
    *out = ks;
    *n = count;
    return 0;
}

/* ------------------------------------------------------------------ migrations */

typedef struct ival {
    int32_t device;
    uint64_t start, end;
} ival_t;

static int by_device_start(const void *a, const void *b)
{
    const ival_t *x = a, *y = b;
    if (x->device != y->device)
        return x->device < y->device ? -1 : 1;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Sorts v and merges overlapping intervals of the same device in place: the new count. */
static size_t merge(ival_t *v, size_t n)
{
    size_t k = 0;
    qsort(v, n, sizeof(*v), by_device_start);
    for (size_t i = 0; i < n; i++) {
        if (k && v[k - 1].device == v[i].device && v[i].start <= v[k - 1].end) {
            if (v[i].end > v[k - 1].end)
                v[k - 1].end = v[i].end;
        } else {
            v[k++] = v[i];
        }
    }
    return k;
}

/* Length of the intersection of two merged lists (same device only). */
static uint64_t overlap(const ival_t *a, size_t na, const ival_t *b, size_t nb)
{
    uint64_t sum = 0;
    size_t i = 0, j = 0;
    while (i < na && j < nb) {
        if (a[i].device != b[j].device) {
            if (a[i].device < b[j].device)
                i++;
            else
                j++;
            continue;
        }
        uint64_t lo = a[i].start > b[j].start ? a[i].start : b[j].start;
        uint64_t hi = a[i].end < b[j].end ? a[i].end : b[j].end;
        if (hi > lo)
            sum += hi - lo;
        if (a[i].end < b[j].end)
            i++;
        else
            j++;
    }
    return sum;
}

/* The intervals of the timed launches. */
static ival_t *kernel_intervals(const tm_trace_t *t, size_t *n)
{
    ival_t *v = malloc((t->nops ? t->nops : 1) * sizeof(*v));
    *n = 0;
    for (size_t i = 0; v && i < t->nops; i++)
        if (t->ops[i].type == TRC_EV_LAUNCH && t->ops[i].has_times)
            v[(*n)++] = (ival_t){ t->ops[i].device, t->ops[i].start, t->ops[i].end };
    return v;
}

/* Whether [start, end] of device dev meets the span of the merged kernel intervals k[0, n)
 * of that device (sorted by device). */
static int in_kernel_span(const ival_t *k, size_t n, int32_t dev, uint64_t start, uint64_t end)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (k[mid].device < dev)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == n || k[lo].device != dev)
        return 0;
    size_t last = lo;
    while (last + 1 < n && k[last + 1].device == dev)
        last++;
    return end >= k[lo].start && start <= k[last].end;
}

int tm_migration_totals(const tm_trace_t *t, tm_migration_totals_t *out)
{
    return tm_migration_totals_of(t, TM_MIG_ALL, out, NULL);
}

int tm_migration_totals_of(const tm_trace_t *t, int which, tm_migration_totals_t *out,
                           uint64_t *untimed)
{
    memset(out, 0, sizeof(*out));
    if (untimed)
        *untimed = 0;
    size_t nk, nm = 0;
    ival_t *mig = malloc((t->nmigrations ? t->nmigrations : 1) * sizeof(*mig));
    ival_t *ker = kernel_intervals(t, &nk);
    if (!mig || !ker) {
        free(mig);
        free(ker);
        return -ENOMEM;
    }
    nk = merge(ker, nk);
    for (size_t i = 0; i < t->nmigrations; i++) {
        const trc_migration_t *m = &t->migrations[i].m;
        int planned = (m->flags & TRC_MIG_PLANNED) != 0;
        if ((which == TM_MIG_PLANNED && !planned) || (which == TM_MIG_REACTIVE && planned))
            continue;
        if (untimed && !in_kernel_span(ker, nk, m->device, m->start, m->end))
            (*untimed)++;
        out->timed += t->migrations[i].timed;
        if (m->from < TRC_TIERS && m->to < TRC_TIERS) {
            out->count[m->from][m->to]++;
            out->bytes[m->from][m->to] += m->bytes;
        }
        mig[nm++] = (ival_t){ m->device, m->start, m->end };
    }
    nm = merge(mig, nm);
    for (size_t i = 0; i < nm; i++)
        out->busy_ns += mig[i].end - mig[i].start;
    out->hidden_ns = overlap(mig, nm, ker, nk);
    free(mig);
    free(ker);
    return 0;
}

/* ------------------------------------------------------------------ iterations */

static int by_start(const void *a, const void *b)
{
    const tm_iter_stat_t *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* The iteration holding time (the last one starting at or before it), or SIZE_MAX. */
static size_t iteration_of(const tm_iter_stat_t *it, size_t n, uint64_t time)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (it[mid].start <= time)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo && time <= it[lo - 1].end ? lo - 1 : SIZE_MAX;
}

/* Launches (by enqueue time) and migrations (by start) of each iteration. */
static void count_work(const tm_trace_t *t, tm_iter_stat_t *it, size_t ni)
{
    for (size_t i = 0; i < t->nops; i++) {
        size_t k = t->ops[i].type == TRC_EV_LAUNCH ? iteration_of(it, ni, t->ops[i].time)
                                                   : SIZE_MAX;
        if (k != SIZE_MAX)
            it[k].launches++;
    }
    for (size_t i = 0; i < t->nmigrations; i++) {
        size_t k = iteration_of(it, ni, t->migrations[i].m.start);
        if (k != SIZE_MAX) {
            it[k].migrations++;
            it[k].migrated_bytes += t->migrations[i].m.bytes;
        }
    }
}

int tm_iteration_stats(const tm_trace_t *t, tm_iter_stat_t **out, size_t *n)
{
    size_t ni = t->niterations;
    tm_iter_stat_t *it = calloc(ni ? ni : 1, sizeof(*it));
    if (!it)
        return -ENOMEM;
    for (size_t i = 0; i < ni; i++)
        it[i] = (tm_iter_stat_t){ .index = t->iterations[i].index,
                                  .start = t->iterations[i].time };
    qsort(it, ni, sizeof(*it), by_start);
    for (size_t i = 0; i < ni; i++)
        it[i].end = i + 1 < ni ? it[i + 1].start : (t->t_last > it[i].start ? t->t_last
                                                                             : it[i].start);
    count_work(t, it, ni);
    *out = it;
    *n = ni;
    return 0;
}

int tm_iteration_times(const tm_trace_t *t, tm_iter_times_t *out)
{
    tm_iter_stat_t *it;
    size_t n;
    memset(out, 0, sizeof(*out));
    if (tm_iteration_stats(t, &it, &n) < 0)
        return -ENOMEM;
    size_t closed = n > 1 ? n - 1 : 0;
    uint64_t sum = 0;
    out->min_ns = closed ? UINT64_MAX : 0;
    for (size_t i = 0; i < closed; i++) {
        uint64_t d = it[i].end - it[i].start;
        sum += d;
        out->min_ns = d < out->min_ns ? d : out->min_ns;
        out->max_ns = d > out->max_ns ? d : out->max_ns;
    }
    out->marks = n;
    out->measured = closed;
    out->mean_ns = closed ? sum / closed : 0;
    free(it);
    return 0;
}

const char *tm_iteration_text(const tm_iter_times_t *x, int utf8, char *buf, size_t len)
{
    const char *(*ns)(uint64_t, char[32]) = utf8 ? text_ns_utf8 : text_ns;
    char b[3][32];
    if (!x->marks)
        snprintf(buf, len, "none marked");
    else if (!x->measured)
        snprintf(buf, len, "%" PRIu64 " marked; none closed by a next mark: no mean", x->marks);
    else
        snprintf(buf, len, "%" PRIu64 " marked; over %" PRIu64 " between marks: mean %s, "
                 "min %s, max %s", x->marks, x->measured, ns(x->mean_ns, b[0]),
                 ns(x->min_ns, b[1]), ns(x->max_ns, b[2]));
    return buf;
}

/* ------------------------------------------------------------------ call sites */

static const char *base_name(const char *path)
{
    const char *s = path ? strrchr(path, '/') : NULL;
    return s ? s + 1 : path && path[0] ? path : "?";
}

const char *tm_dropped_text(const tm_trace_t *t, int cupti, char *buf, size_t len)
{
    uint64_t n = cupti ? t->dropped_cupti : t->dropped_other;
    if (!n)
        return NULL;
    snprintf(buf, len, cupti ? "CUPTI dropped %" PRIu64 " activity records: kernel timings "
                               "incomplete"
                             : "the timing source lost %" PRIu64 " records: kernel timings "
                               "incomplete", n);
    return buf;
}

void tm_stack_text(const trc_stack_t *s, unsigned frames, char *buf, size_t len)
{
    size_t at = 0;
    if (!len)
        return;
    buf[0] = 0;
    uint32_t depth = s ? s->depth : 0;
    if (frames && frames < depth)
        depth = frames;
    for (uint32_t i = 0; i < depth && at < len; i++) {
        const trc_frame_t *f = &s->frames[i];
        char name[1024];
        uint64_t off;
        const char *sep = i ? " < " : "";
        int k;
        char file[4096], plain[1024];
        uint32_t line;
        if (tsym_lookup(f->module, f->offset, name, sizeof(name), &off) == 0)
            k = snprintf(buf + at, len - at, "%s%s+0x%" PRIx64 " (%s)", sep,
                         tsym_demangle(name, plain, sizeof(plain)), off, base_name(f->module));
        else
            k = snprintf(buf + at, len - at, "%s%s+0x%" PRIx64, sep, base_name(f->module),
                         f->offset);
        at += k > 0 ? (size_t)k : 0;
        if (at < len && tsym_line(f->module, f->offset, file, sizeof(file), &line) == 0) {
            k = snprintf(buf + at, len - at, " at %s:%" PRIu32, base_name(file), line);
            at += k > 0 ? (size_t)k : 0;
        }
    }
}

/* ------------------------------------------------------------------ footprint */

typedef struct step {
    uint64_t time;
    int64_t delta;
} step_t;

static int by_time_frees_first(const void *a, const void *b)
{
    const step_t *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return (x->delta > 0) - (y->delta > 0);
}

int tm_peak_allocated(const tm_trace_t *t, int32_t device, uint64_t *peak)
{
    step_t *v = malloc((2 * t->nallocs + 1) * sizeof(*v));
    size_t n = 0;
    *peak = 0;
    if (!v)
        return -ENOMEM;
    for (size_t i = 0; i < t->nallocs; i++) {
        const tm_alloc_t *a = &t->allocs[i];
        if (a->device != device)
            continue;
        v[n++] = (step_t){ a->t_alloc, (int64_t)a->size };
        if (a->t_free != TM_LIVE)
            v[n++] = (step_t){ a->t_free, -(int64_t)a->size };
    }
    qsort(v, n, sizeof(*v), by_time_frees_first);
    int64_t live = 0;
    for (size_t i = 0; i < n; i++) {
        live += v[i].delta;
        if (live > 0 && (uint64_t)live > *peak)
            *peak = (uint64_t)live;
    }
    free(v);
    return 0;
}
