/* SPDX-License-Identifier: MIT */
/*
 * race.c - the race checker: vector clocks, an interval shadow of memory, race reports.
 *
 * Each logical thread owns a vector clock; snapshots of it are immutable and reference-counted
 * (atomically, since the simulator may drop them from other threads), sized to the number of
 * threads when taken, and cached until the clock changes.
 *
 * The shadow is a treap (a search tree balanced by random heap priorities) of disjoint byte
 * intervals, each holding one history as in FastTrack: the last write epoch and the read epochs
 * since it, at most one per thread, sorted by thread.  An access to exactly one existing interval
 * (a tensor used again) is checked and recorded in place after one descent.  Any other access
 * splits the treap into the intervals before, inside and after its range, cutting the two that
 * straddle its ends; walks the inside ones in address order, checking and updating each and
 * filling the gaps; rebuilds the middle in linear time from the sorted sequence, coalescing
 * adjacent intervals whose histories became identical; and joins the three back.  That is
 * O(log n + k) for n live intervals of which k are touched.  Intervals outside the range never
 * coalesce with those inside: an epoch names its whole access, so the new history appears in no
 * interval outside it.  Bounds are inclusive so that a range may end at the last byte.
 *
 * A race is one pair (earlier operation, current operation); each pair is counted and reported
 * once, at the end of the access that finds it, with the hull of the bytes where they overlap.
 * The report callback gets at most REPORT_LIMIT lines, then one line saying that the rest are not
 * printed; the count goes on.
 */
#include "race.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPORT_LIMIT 100

struct sim_vc {
    atomic_uint refs;
    uint32_t n;             /* components stored; the ones beyond are 0 */
    uint64_t c[];
};

/* One access as the shadow remembers it; what == NULL means none (and the rest is zero). */
typedef struct epoch {
    uint64_t clk;           /* the thread's own clock component when it accessed */
    uint64_t op;
    uint64_t addr, len;     /* the whole access, for the report */
    const char *what;       /* interned label */
    uint32_t tid;
    uint32_t stream;
} epoch_t;

/* A shadow interval: bytes [lo, hi] with one history. */
typedef struct ival {
    uint64_t lo, hi;
    struct ival *left, *right;
    uint32_t prio;          /* a parent's priority is >= its children's */
    uint32_t nreads, readcap;
    epoch_t write;
    epoch_t *reads;         /* reads since the write, one per thread, sorted by tid */
} ival_t;

typedef struct thr {
    uint64_t *c;            /* vector clock, n components */
    uint32_t n;
    sim_vc_t *snap;         /* a snapshot of c taken since it last changed, or NULL */
} thr_t;

/* A race already found: (earlier op, current op), and in which access call. */
typedef struct pair {
    uint64_t early, late;
    uint64_t gen;           /* 0: empty slot */
    size_t idx;             /* its candidate while gen is the current call */
} pair_t;

/* A race found by the current access call, reported when the call ends. */
typedef struct cand {
    epoch_t early;
    bool early_write;
    uint64_t lo, hi;        /* hull of the overlapping bytes */
} cand_t;

/* The right spine of the treap being built from sorted intervals, and the last interval. */
typedef struct builder {
    ival_t *last;
    size_t sp;
} builder_t;

struct sim_race {
    sim_race_report_fn report;
    void *ctx;
    thr_t *thr;
    uint32_t nthr;
    size_t thrcap;
    ival_t *root;
    uint64_t rng;
    char **strs;            /* interned labels, open addressing */
    size_t strcap, nstrs;
    pair_t *pairs;          /* races found, open addressing */
    size_t paircap, npairs;
    uint64_t gen;           /* access calls so far */
    cand_t *cands;
    size_t candcap, ncands;
    ival_t **list;          /* scratch: the intervals inside an access, in order */
    size_t listcap, nlist;
    ival_t **stack;         /* scratch: a builder's spine */
    size_t stackcap;
    uint64_t races, printed;
    sim_race_name_fn name;  /* how a report names bytes; NULL: by address */
};

/* ------------------------------------------------------------------ memory */

static void oom(void)
{
    fputs("sim race: out of memory\n", stderr);
    abort();
}

static void *xalloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (!p)
        oom();
    return p;
}

/* Return arr (or its reallocation) with room for `need` elements of `size` bytes. */
static void *reserve(void *arr, size_t *cap, size_t need, size_t size)
{
    size_t n = *cap ? *cap : 16;
    void *p;

    if (need <= *cap)
        return arr;
    while (n < need)
        n *= 2;
    p = realloc(arr, n * size);
    if (!p)
        oom();
    *cap = n;
    return p;
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

/* ------------------------------------------------------------------ interned labels */

static uint64_t hash_str(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;

    while (*s)
        h = (h ^ (unsigned char)*s++) * 0x100000001b3ULL;
    return h;
}

static char **str_slot(char **tab, size_t cap, const char *s)
{
    size_t mask = cap - 1, i = hash_str(s) & mask;

    while (tab[i] && strcmp(tab[i], s))
        i = (i + 1) & mask;
    return &tab[i];
}

static void str_grow(sim_race_t *r)
{
    size_t cap = r->strcap ? 2 * r->strcap : 64;
    char **tab = xalloc(cap * sizeof *tab);

    for (size_t i = 0; i < r->strcap; i++)
        if (r->strs[i])
            *str_slot(tab, cap, r->strs[i]) = r->strs[i];
    free(r->strs);
    r->strs = tab;
    r->strcap = cap;
}

/* The checker's own copy of label s (NULL reads "?"), made on first sight. */
static const char *intern(sim_race_t *r, const char *s)
{
    char **slot;

    if (!s)
        s = "?";
    if (2 * (r->nstrs + 1) > r->strcap)
        str_grow(r);
    slot = str_slot(r->strs, r->strcap, s);
    if (!*slot) {
        *slot = strdup(s);
        if (!*slot)
            oom();
        r->nstrs++;
    }
    return *slot;
}

/* ------------------------------------------------------------------ vector clocks */

sim_vc_t *sim_vc_ref(sim_vc_t *vc)
{
    if (vc)
        atomic_fetch_add_explicit(&vc->refs, 1, memory_order_relaxed);
    return vc;
}

void sim_vc_unref(sim_vc_t *vc)
{
    if (vc && atomic_fetch_sub_explicit(&vc->refs, 1, memory_order_acq_rel) == 1)
        free(vc);
}

static uint64_t comp(const thr_t *t, uint32_t u)
{
    return u < t->n ? t->c[u] : 0;
}

/* Whether the access e happens before thread t's present. */
static bool ordered(const thr_t *t, const epoch_t *e)
{
    return e->clk <= comp(t, e->tid);
}

static void drop_snap(thr_t *t)
{
    sim_vc_unref(t->snap);
    t->snap = NULL;
}

static void grow_clock(thr_t *t, uint32_t n)
{
    uint64_t *c = realloc(t->c, n * sizeof *c);

    if (!c)
        oom();
    memset(c + t->n, 0, (n - t->n) * sizeof *c);
    t->c = c;
    t->n = n;
}

uint32_t sim_race_thread(sim_race_t *r)
{
    thr_t *t;

    if (!r)
        return UINT32_MAX;
    r->thr = reserve(r->thr, &r->thrcap, r->nthr + 1, sizeof *r->thr);
    t = &r->thr[r->nthr];
    t->n = r->nthr + 1;
    t->c = xalloc(t->n * sizeof *t->c);
    t->snap = NULL;
    return r->nthr++;
}

void sim_race_tick(sim_race_t *r, uint32_t tid)
{
    if (!r || tid >= r->nthr)
        return;
    r->thr[tid].c[tid]++;
    drop_snap(&r->thr[tid]);
}

sim_vc_t *sim_race_release(sim_race_t *r, uint32_t tid)
{
    thr_t *t;
    sim_vc_t *vc;

    if (!r || tid >= r->nthr)
        return NULL;
    t = &r->thr[tid];
    if (!t->snap) {
        vc = xalloc(sizeof *vc + (size_t)r->nthr * sizeof vc->c[0]);
        atomic_init(&vc->refs, 1);
        vc->n = r->nthr;
        memcpy(vc->c, t->c, t->n * sizeof *t->c);
        t->snap = vc;
    }
    return sim_vc_ref(t->snap);
}

void sim_race_acquire(sim_race_t *r, uint32_t tid, const sim_vc_t *vc)
{
    thr_t *t;
    bool changed = false;

    if (!r || !vc || tid >= r->nthr)
        return;
    t = &r->thr[tid];
    if (vc->n > t->n)
        grow_clock(t, vc->n);
    for (uint32_t i = 0; i < vc->n; i++) {
        if (vc->c[i] > t->c[i]) {
            t->c[i] = vc->c[i];
            changed = true;
        }
    }
    if (changed)
        drop_snap(t);
}

/* ------------------------------------------------------------------ shadow intervals */

static ival_t *new_ival(sim_race_t *r, uint64_t lo, uint64_t hi)
{
    ival_t *n = xalloc(sizeof *n);

    r->rng ^= r->rng << 13;
    r->rng ^= r->rng >> 7;
    r->rng ^= r->rng << 17;
    n->lo = lo;
    n->hi = hi;
    n->prio = (uint32_t)(r->rng >> 32);
    return n;
}

static void free_ival(ival_t *n)
{
    free(n->reads);
    free(n);
}

static void free_tree(ival_t *t)
{
    if (!t)
        return;
    free_tree(t->left);
    free_tree(t->right);
    free_ival(t);
}

static bool same_epoch(const epoch_t *a, const epoch_t *b)
{
    if (!a->what || !b->what)
        return a->what == b->what;
    return a->what == b->what && a->clk == b->clk && a->op == b->op && a->tid == b->tid &&
           a->addr == b->addr && a->len == b->len && a->stream == b->stream;
}

static bool same_history(const ival_t *a, const ival_t *b)
{
    if (a->nreads != b->nreads || !same_epoch(&a->write, &b->write))
        return false;
    for (uint32_t i = 0; i < a->nreads; i++)
        if (!same_epoch(&a->reads[i], &b->reads[i]))
            return false;
    return true;
}

/* Add access cur to n's history: a write replaces it all, a read replaces its thread's read. */
static void record(ival_t *n, const epoch_t *cur, bool write)
{
    uint32_t i = 0;

    if (write) {
        n->nreads = 0;      /* the buffer stays: it will most likely be needed again */
        n->write = *cur;
        return;
    }
    while (i < n->nreads && n->reads[i].tid < cur->tid)
        i++;
    if (i == n->nreads || n->reads[i].tid != cur->tid) {
        if (n->nreads == n->readcap) {
            n->readcap = n->readcap ? 2 * n->readcap : 2;
            n->reads = realloc(n->reads, n->readcap * sizeof *n->reads);
            if (!n->reads)
                oom();
        }
        memmove(&n->reads[i + 1], &n->reads[i], (n->nreads - i) * sizeof *n->reads);
        n->nreads++;
    }
    n->reads[i] = *cur;
}

/* A new interval [lo, hi] whose only history is cur. */
static ival_t *fresh(sim_race_t *r, uint64_t lo, uint64_t hi, const epoch_t *cur, bool write)
{
    ival_t *n = new_ival(r, lo, hi);

    record(n, cur, write);
    return n;
}

/*
 * Split n = [lo, hi] at `at`, lo < at <= hi: n keeps [lo, at - 1]; the returned new interval,
 * childless and with a copy of the history, holds [at, hi].
 */
static ival_t *cut(sim_race_t *r, ival_t *n, uint64_t at)
{
    ival_t *m = new_ival(r, at, n->hi);

    m->write = n->write;
    if (n->nreads) {
        m->reads = xalloc(n->nreads * sizeof *m->reads);
        memcpy(m->reads, n->reads, n->nreads * sizeof *m->reads);
        m->nreads = m->readcap = n->nreads;
    }
    n->hi = at - 1;
    return m;
}

/* ------------------------------------------------------------------ treap */

/*
 * Split t into *l (intervals starting below key) and *r (the others); returns the last
 * interval of *l, NULL when it is empty.
 */
static ival_t *split(ival_t *t, uint64_t key, ival_t **l, ival_t **r)
{
    ival_t *last = NULL;

    while (t) {
        if (t->lo < key) {
            *l = last = t;
            l = &t->right;
            t = t->right;
        } else {
            *r = t;
            r = &t->left;
            t = t->left;
        }
    }
    *l = *r = NULL;
    return last;
}

/* Join two treaps, every interval of l lying before every interval of r. */
static ival_t *merge(ival_t *l, ival_t *r)
{
    ival_t *root = NULL, **link = &root;

    while (l && r) {
        if (l->prio > r->prio) {
            *link = l;
            link = &l->right;
            l = l->right;
        } else {
            *link = r;
            link = &r->left;
            r = r->left;
        }
    }
    *link = l ? l : r;
    return root;
}

static void push(sim_race_t *r, ival_t *n)
{
    r->list = reserve(r->list, &r->listcap, r->nlist + 1, sizeof *r->list);
    r->list[r->nlist++] = n;
}

/* Append the treap t's intervals, in order, to r->list. */
static void collect(sim_race_t *r, ival_t *t)
{
    if (!t)
        return;
    collect(r, t->left);
    push(r, t);
    collect(r, t->right);
}

/*
 * Take the shadow apart: *l gets the intervals before a, *r those after b, and r->list those
 * inside [a, b] in order, the ones straddling a or b cut there.  Returns the piece cut off above
 * b, which belongs after the range, or NULL.  The shadow is empty until the caller joins them.
 */
static ival_t *isolate(sim_race_t *rc, uint64_t a, uint64_t b, ival_t **l, ival_t **r)
{
    ival_t *rest, *inside = NULL, *last;

    last = split(rc->root, a, l, &rest);
    rc->root = NULL;
    rc->nlist = 0;
    if (last && last->hi >= a)
        push(rc, cut(rc, last, a));
    *r = NULL;
    if (b == UINT64_MAX)
        inside = rest;
    else
        split(rest, b + 1, &inside, r);
    collect(rc, inside);
    last = rc->nlist ? rc->list[rc->nlist - 1] : NULL;
    return last && last->hi > b ? cut(rc, last, b + 1) : NULL;
}

/*
 * Append n, which lies after everything appended so far, to the treap being built (a Cartesian
 * tree built left to right: r->stack holds its right spine), or coalesce it into the previous
 * interval when adjacent with the same history.
 */
static void append(sim_race_t *r, builder_t *b, ival_t *n)
{
    ival_t *child = NULL;

    if (b->last && b->last->hi + 1 == n->lo && same_history(b->last, n)) {
        b->last->hi = n->hi;
        free_ival(n);
        return;
    }
    while (b->sp && r->stack[b->sp - 1]->prio < n->prio)
        child = r->stack[--b->sp];
    n->left = child;
    n->right = NULL;
    if (b->sp)
        r->stack[b->sp - 1]->right = n;
    r->stack = reserve(r->stack, &r->stackcap, b->sp + 1, sizeof *r->stack);
    r->stack[b->sp++] = n;
    b->last = n;
}

/* ------------------------------------------------------------------ races */

static pair_t *pair_slot(pair_t *tab, size_t cap, uint64_t early, uint64_t late)
{
    size_t mask = cap - 1, i = mix(early ^ mix(late)) & mask;

    while (tab[i].gen && (tab[i].early != early || tab[i].late != late))
        i = (i + 1) & mask;
    return &tab[i];
}

static void pair_grow(sim_race_t *r)
{
    size_t cap = r->paircap ? 2 * r->paircap : 64;
    pair_t *tab = xalloc(cap * sizeof *tab);

    for (size_t i = 0; i < r->paircap; i++)
        if (r->pairs[i].gen)
            *pair_slot(tab, cap, r->pairs[i].early, r->pairs[i].late) = r->pairs[i];
    free(r->pairs);
    r->pairs = tab;
    r->paircap = cap;
}

/*
 * The earlier access e (a write when ew) to interval n does not happen before cur: make it a
 * candidate of this call unless the pair of operations was found before; a pair found earlier
 * in this call grows its hull instead (intervals come in address order).
 */
static void note(sim_race_t *r, const epoch_t *e, bool ew, const ival_t *n, const epoch_t *cur)
{
    pair_t *p;

    if (2 * (r->npairs + 1) > r->paircap)
        pair_grow(r);
    p = pair_slot(r->pairs, r->paircap, e->op, cur->op);
    if (p->gen == r->gen) {
        r->cands[p->idx].hi = n->hi;
        return;
    }
    if (p->gen)
        return;
    *p = (pair_t){ .early = e->op, .late = cur->op, .gen = r->gen, .idx = r->ncands };
    r->npairs++;
    r->cands = reserve(r->cands, &r->candcap, r->ncands + 1, sizeof *r->cands);
    r->cands[r->ncands++] = (cand_t){ .early = *e, .early_write = ew, .lo = n->lo, .hi = n->hi };
}

/* Note every access in n's history that conflicts with cur by thread t and is not ordered. */
static void check(sim_race_t *r, const thr_t *t, const ival_t *n, const epoch_t *cur, bool write)
{
    if (n->write.what && !ordered(t, &n->write))
        note(r, &n->write, true, n, cur);
    if (!write)
        return;
    for (uint32_t i = 0; i < n->nreads; i++)
        if (!ordered(t, &n->reads[i]))
            note(r, &n->reads[i], false, n, cur);
}

/* Bytes [addr, +len) as a report names them: by the caller's namer, else their addresses. */
static void name_bytes(const sim_race_t *r, char *buf, size_t size, uint64_t addr, uint64_t len)
{
    if (r->name)
        r->name(addr, len, buf, size);
    else
        snprintf(buf, size, "[0x%" PRIx64 "..+%" PRIu64 ")", addr, len);
}

/* One report line for candidate c of access cur; the caller frees it.  NULL if out of memory. */
static char *describe(const sim_race_t *r, const epoch_t *cur, bool write, const cand_t *c)
{
    const epoch_t *e = &c->early;
    char a[96], b[96], o[96], *line;

    name_bytes(r, a, sizeof(a), cur->addr, cur->len);
    name_bytes(r, b, sizeof(b), e->addr, e->len);
    name_bytes(r, o, sizeof(o), c->lo, c->hi - c->lo + 1);
    if (asprintf(&line,
                 "race: %s of %s by %s (op %" PRIu64 ", stream %" PRIu32 ") is unordered with "
                 "earlier %s of %s by %s (op %" PRIu64 ", stream %" PRIu32 "); overlap %s",
                 write ? "write" : "read", a, cur->what, cur->op, cur->stream,
                 c->early_write ? "write" : "read", b, e->what, e->op, e->stream, o) < 0)
        return NULL;
    return line;
}

/* Count and (within the limit) report the candidates of this call; returns how many. */
static unsigned emit(sim_race_t *r, const epoch_t *cur, bool write)
{
    for (size_t i = 0; i < r->ncands; i++) {
        r->races++;
        if (!r->report || r->printed > REPORT_LIMIT)
            continue;
        if (r->printed++ == REPORT_LIMIT) {
            r->report(r->ctx, "race: further races not printed (they are still counted)");
            continue;
        }
        char *line = describe(r, cur, write, &r->cands[i]);
        r->report(r->ctx, line ? line : "race: (out of memory describing a race)");
        free(line);
    }
    return (unsigned)r->ncands;
}

/*
 * Check and record access cur by thread t to [a, b] against r->list, the intervals inside the
 * range in order, appending them and new intervals for the gaps to builder bld.
 */
static void sweep(sim_race_t *r, const thr_t *t, const epoch_t *cur, bool write, uint64_t b,
                  builder_t *bld)
{
    uint64_t pos = cur->addr;
    bool done = false;

    for (size_t i = 0; i < r->nlist; i++) {
        ival_t *n = r->list[i];

        if (n->lo > pos)
            append(r, bld, fresh(r, pos, n->lo - 1, cur, write));
        check(r, t, n, cur, write);
        record(n, cur, write);
        done = n->hi == b;
        pos = n->hi + 1;    /* wraps only when n is the last one and done */
        append(r, bld, n);
    }
    if (!done)
        append(r, bld, fresh(r, pos, b, cur, write));
}

/* The interval holding byte a, or NULL. */
static ival_t *find(ival_t *t, uint64_t a)
{
    ival_t *best = NULL;

    while (t) {
        if (t->lo <= a) {
            best = t;
            t = t->right;
        } else {
            t = t->left;
        }
    }
    return best && best->hi >= a ? best : NULL;
}

/*
 * The common case, an access to exactly one existing interval (a whole tensor again): check
 * and record in place, leaving the tree alone.  Returns false when the case does not apply.
 */
static bool access_exact(sim_race_t *r, const thr_t *t, const epoch_t *cur, bool write,
                         uint64_t b)
{
    ival_t *n = find(r->root, cur->addr);

    if (!n || n->lo != cur->addr || n->hi != b)
        return false;
    check(r, t, n, cur, write);
    record(n, cur, write);
    return true;
}

/* The last byte of [addr, addr + len), len > 0, clamped to the address space. */
static uint64_t last_byte(uint64_t addr, uint64_t len)
{
    return len - 1 > UINT64_MAX - addr ? UINT64_MAX : addr + (len - 1);
}

unsigned sim_race_access(sim_race_t *r, uint32_t tid, uint64_t addr, uint64_t len, int write,
                         const sim_race_who_t *who)
{
    ival_t *before, *after, *tail;
    builder_t bld = { NULL, 0 };
    uint64_t b;
    epoch_t cur;

    if (!r || !len || tid >= r->nthr)
        return 0;
    b = last_byte(addr, len);
    cur = (epoch_t){ .clk = r->thr[tid].c[tid], .op = who ? who->op : 0, .addr = addr,
                     .len = b - addr + 1, .what = intern(r, who ? who->what : NULL),
                     .tid = tid, .stream = who ? who->stream : 0 };
    r->gen++;
    r->ncands = 0;
    if (!access_exact(r, &r->thr[tid], &cur, write != 0, b)) {
        tail = isolate(r, addr, b, &before, &after);
        sweep(r, &r->thr[tid], &cur, write != 0, b, &bld);
        if (tail)
            append(r, &bld, tail);
        r->root = merge(merge(before, r->stack[0]), after);
    }
    return emit(r, &cur, write != 0);
}

void sim_race_forget(sim_race_t *r, uint64_t addr, uint64_t len)
{
    ival_t *before, *after, *tail;

    if (!r || !len)
        return;
    tail = isolate(r, addr, last_byte(addr, len), &before, &after);
    for (size_t i = 0; i < r->nlist; i++)
        free_ival(r->list[i]);
    r->root = merge(merge(before, tail), after);
}

uint64_t sim_race_count(const sim_race_t *r)
{
    return r ? r->races : 0;
}

/* ------------------------------------------------------------------ life cycle */

sim_race_t *sim_race_new(sim_race_report_fn report, void *ctx)
{
    sim_race_t *r = calloc(1, sizeof *r);

    if (!r)
        return NULL;
    r->report = report;
    r->ctx = ctx;
    r->rng = 0x9e3779b97f4a7c15ULL;
    return r;
}

void sim_race_set_namer(sim_race_t *r, sim_race_name_fn name)
{
    r->name = name;
}

void sim_race_free(sim_race_t *r)
{
    if (!r)
        return;
    free_tree(r->root);
    for (uint32_t i = 0; i < r->nthr; i++) {
        free(r->thr[i].c);
        sim_vc_unref(r->thr[i].snap);
    }
    free(r->thr);
    for (size_t i = 0; i < r->strcap; i++)
        free(r->strs[i]);
    free(r->strs);
    free(r->pairs);
    free(r->cands);
    free(r->list);
    free(r->stack);
    free(r);
}
