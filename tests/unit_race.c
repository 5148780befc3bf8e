/* SPDX-License-Identifier: MIT */
/*
 * unit_race.c - the race checker (sim/race.c) on its own: happens-before through ticks and
 * snapshots, the interval shadow (splits, spans, forget, the top of the address space), report
 * text, deduplication and the report limit, a randomised comparison with a per-byte model,
 * snapshot reference counts across threads, and a throughput figure.
 */
#include "race.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Sanitizers slow everything down tenfold: the benchmark shrinks and its time limit goes. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

static int failures;

static void fail_u64(const char *test, const char *what, uint64_t expected, uint64_t got)
{
    printf("FAIL %s: %s: expected %" PRIu64 ", got %" PRIu64 "\n", test, what, expected, got);
    failures++;
}

#define EXPECT(test, what, expected, got)                                                         \
    do {                                                                                          \
        uint64_t e_ = (expected), g_ = (got);                                                     \
        if (e_ != g_)                                                                             \
            fail_u64(test, what, e_, g_);                                                         \
    } while (0)

/* ------------------------------------------------------------------ fixture */

typedef struct fx {
    sim_race_t *r;
    char **lines;
    size_t nlines, cap;
    uint32_t t[8];
    uint64_t op;
} fx_t;

static void on_race(void *ctx, const char *detail)
{
    fx_t *f = ctx;

    if (f->nlines == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 16;
        f->lines = realloc(f->lines, f->cap * sizeof *f->lines);
        if (!f->lines)
            abort();
    }
    f->lines[f->nlines++] = strdup(detail);
}

static void fx_init(fx_t *f, unsigned nthreads)
{
    memset(f, 0, sizeof *f);
    f->r = sim_race_new(on_race, f);
    if (!f->r)
        abort();
    for (unsigned i = 0; i < nthreads; i++)
        f->t[i] = sim_race_thread(f->r);
    f->op = 1000;
}

static void fx_fini(fx_t *f)
{
    sim_race_free(f->r);
    for (size_t i = 0; i < f->nlines; i++)
        free(f->lines[i]);
    free(f->lines);
}

/* Thread i starts a new operation; returns its number. */
static uint64_t begin(fx_t *f, unsigned i)
{
    sim_race_tick(f->r, f->t[i]);
    return ++f->op;
}

static unsigned acc(fx_t *f, unsigned i, uint64_t op, uint64_t addr, uint64_t len, int write,
                    const char *what)
{
    sim_race_who_t who = { .what = what, .op = op, .stream = i };

    return sim_race_access(f->r, f->t[i], addr, len, write, &who);
}

/* Thread `to` happens after everything thread `from` has done so far. */
static void order(fx_t *f, unsigned from, unsigned to)
{
    sim_vc_t *vc = sim_race_release(f->r, f->t[from]);

    sim_race_acquire(f->r, f->t[to], vc);
    sim_vc_unref(vc);
}

static void expect_has(const char *test, const char *line, const char *needle)
{
    if (!line || !strstr(line, needle)) {
        printf("FAIL %s: expected a report containing \"%s\", got \"%s\"\n", test, needle,
               line ? line : "(none)");
        failures++;
    }
}

/* ------------------------------------------------------------------ basic orderings */

static void test_same_thread(void)
{
    fx_t f;
    unsigned n = 0;

    fx_init(&f, 2);
    for (int i = 0; i < 4; i++) {
        uint64_t op = begin(&f, 0);
        n += acc(&f, 0, op, 0x1000, 64, 1, "kernel a");
        n += acc(&f, 0, op, 0x1010, 64, 0, "kernel a");
        n += acc(&f, 0, op, 0x1000, 128, 1, "kernel a");
    }
    EXPECT("same_thread", "races", 0, n);
    EXPECT("same_thread", "count", 0, sim_race_count(f.r));
    fx_fini(&f);
}

static void test_read_read(void)
{
    fx_t f;
    unsigned n = 0;

    fx_init(&f, 3);
    for (unsigned i = 0; i < 3; i++)
        n += acc(&f, i, begin(&f, i), 0x2000, 4096, 0, "memcpy DtoH");
    EXPECT("read_read", "races", 0, n);
    EXPECT("read_read", "lines", 0, f.nlines);
    fx_fini(&f);
}

static void test_write_write(void)
{
    fx_t f;

    fx_init(&f, 2);
    uint64_t a = begin(&f, 0), b = begin(&f, 1);
    EXPECT("write_write", "first", 0, acc(&f, 0, a, 0x3000, 256, 1, "memset"));
    EXPECT("write_write", "second", 1, acc(&f, 1, b, 0x3080, 256, 1, "kernel fill"));
    EXPECT("write_write", "lines", 1, f.nlines);
    if (f.nlines) {
        expect_has("write_write", f.lines[0], "write of [0x3080..+256) by kernel fill");
        expect_has("write_write", f.lines[0], "earlier write of [0x3000..+256) by memset");
        expect_has("write_write", f.lines[0], "overlap [0x3080..+128)");
    }
    fx_fini(&f);
}

/* Reads by threads 1 and 2; thread 0 is ordered after 1 only and writes: one race, with 2. */
static void test_write_after_two_reads(void)
{
    fx_t f;
    char want[64];

    fx_init(&f, 3);
    uint64_t r1 = begin(&f, 1), r2 = begin(&f, 2);
    acc(&f, 1, r1, 0x4000, 1024, 0, "read one");
    acc(&f, 2, r2, 0x4000, 1024, 0, "read two");
    order(&f, 1, 0);
    uint64_t w = begin(&f, 0);
    EXPECT("two_reads", "races", 1, acc(&f, 0, w, 0x4000, 1024, 1, "writer"));
    snprintf(want, sizeof want, "earlier read of [0x4000..+1024) by read two (op %" PRIu64, r2);
    expect_has("two_reads", f.nlines ? f.lines[0] : NULL, want);
    fx_fini(&f);
}

/* A snapshot taken after a write orders it; one taken before a later write does not. */
static void test_snapshots(void)
{
    fx_t f;

    fx_init(&f, 2);
    uint64_t a = begin(&f, 0);
    acc(&f, 0, a, 0x5000, 64, 1, "first");
    sim_vc_t *after_first = sim_race_release(f.r, f.t[0]);
    uint64_t b = begin(&f, 0);
    acc(&f, 0, b, 0x6000, 64, 1, "second");
    sim_race_acquire(f.r, f.t[1], after_first);
    sim_vc_unref(after_first);
    uint64_t c = begin(&f, 1);
    EXPECT("snapshots", "covered write", 0, acc(&f, 1, c, 0x5000, 64, 1, "reader"));
    EXPECT("snapshots", "later write", 1, acc(&f, 1, c, 0x6000, 64, 0, "reader"));
    expect_has("snapshots", f.nlines ? f.lines[0] : NULL, "read of [0x6000..+64) by reader");
    sim_race_acquire(f.r, f.t[1], NULL);   /* a no-op */
    order(&f, 0, 1);
    uint64_t d = begin(&f, 1);
    EXPECT("snapshots", "after full order", 0, acc(&f, 1, d, 0x6000, 64, 1, "reader"));

    /* a snapshot narrower than a thread created after it: the missing components are 0 */
    sim_vc_t *narrow = sim_race_release(f.r, f.t[1]);
    f.t[2] = sim_race_thread(f.r);
    EXPECT("snapshots", "new thread id", 2, f.t[2]);
    sim_race_acquire(f.r, f.t[2], narrow);
    sim_vc_unref(narrow);
    uint64_t e = begin(&f, 2);
    EXPECT("snapshots", "through a narrow one", 0, acc(&f, 2, e, 0x5000, 128, 1, "late"));
    fx_fini(&f);
}

/* ------------------------------------------------------------------ intervals */

static void test_partial_overlap(void)
{
    fx_t f;
    char want[64];

    fx_init(&f, 4);
    uint64_t w0 = begin(&f, 0), r1 = begin(&f, 1);
    acc(&f, 0, w0, 0x1000, 0x1000, 1, "w0");
    EXPECT("partial", "read over write tail", 1, acc(&f, 1, r1, 0x1800, 0x1000, 0, "r1"));
    expect_has("partial", f.nlines ? f.lines[0] : NULL, "overlap [0x1800..+2048)");

    /* thread 2 after thread 0: its write races only with r1's read, in [0x2000, 0x2800) */
    order(&f, 0, 2);
    uint64_t w2 = begin(&f, 2);
    EXPECT("partial", "write over read tail", 1, acc(&f, 2, w2, 0x2000, 0x1000, 1, "w2"));
    snprintf(want, sizeof want, "earlier read of [0x1800..+4096) by r1 (op %" PRIu64, r1);
    expect_has("partial", f.nlines > 1 ? f.lines[1] : NULL, want);
    expect_has("partial", f.nlines > 1 ? f.lines[1] : NULL, "overlap [0x2000..+2048)");

    /* thread 3 after thread 1 only: bytes below 0x1800 hold w0 alone, above it w0 and r1 */
    order(&f, 1, 3);
    uint64_t w3 = begin(&f, 3);
    EXPECT("partial", "write across the split", 1, acc(&f, 3, w3, 0x17f0, 0x20, 1, "w3"));
    snprintf(want, sizeof want, "earlier write of [0x1000..+4096) by w0 (op %" PRIu64, w0);
    expect_has("partial", f.nlines > 2 ? f.lines[2] : NULL, want);
    expect_has("partial", f.nlines > 2 ? f.lines[2] : NULL, "overlap [0x17f0..+32)");
    EXPECT("partial", "count", 3, sim_race_count(f.r));
    fx_fini(&f);
}

/* One write spanning three intervals written by three unordered threads, and gaps. */
static void test_span(void)
{
    fx_t f;

    fx_init(&f, 4);
    for (unsigned i = 0; i < 3; i++)
        acc(&f, i, begin(&f, i), 0x10000 + i * 0x100, 0x100, 1, "piece");
    uint64_t w = begin(&f, 3);
    EXPECT("span", "races", 3, acc(&f, 3, w, 0x10000 - 0x40, 0x400, 1, "span"));
    EXPECT("span", "same op again", 0, acc(&f, 3, w, 0x10000, 0x300, 0, "span"));
    EXPECT("span", "lines", 3, f.nlines);
    uint64_t w2 = begin(&f, 3);
    EXPECT("span", "own history", 0, acc(&f, 3, w2, 0x10000 - 0x80, 0x500, 1, "span"));
    order(&f, 3, 0);
    uint64_t w3 = begin(&f, 0);
    EXPECT("span", "ordered", 0, acc(&f, 0, w3, 0x10000 + 0x10, 0x20, 0, "after"));
    EXPECT("span", "count", 3, sim_race_count(f.r));
    fx_fini(&f);
}

static void test_forget(void)
{
    fx_t f;

    fx_init(&f, 2);
    uint64_t a = begin(&f, 0);
    acc(&f, 0, a, 0, 300, 1, "old");
    sim_race_forget(f.r, 0, 300);
    EXPECT("forget", "whole", 0, acc(&f, 1, begin(&f, 1), 0, 300, 1, "new"));

    uint64_t b = begin(&f, 0);
    acc(&f, 0, b, 0x1000, 300, 1, "old");
    sim_race_forget(f.r, 0x1000 + 100, 100);
    EXPECT("forget", "hole", 0, acc(&f, 1, begin(&f, 1), 0x1000 + 100, 100, 1, "new"));
    EXPECT("forget", "edges", 1, acc(&f, 1, begin(&f, 1), 0x1000, 300, 1, "new"));
    sim_race_forget(f.r, 0x500, 0);     /* len 0: nothing */
    sim_race_forget(f.r, 0x9000, 10);   /* nothing there */
    EXPECT("forget", "count", 1, sim_race_count(f.r));
    fx_fini(&f);
}

static void test_len_zero(void)
{
    fx_t f;

    fx_init(&f, 2);
    EXPECT("len_zero", "access", 0, acc(&f, 0, begin(&f, 0), 0x7000, 0, 1, "empty"));
    EXPECT("len_zero", "after", 0, acc(&f, 1, begin(&f, 1), 0x7000, 16, 1, "real"));
    EXPECT("len_zero", "bad thread", 0, sim_race_access(f.r, 99, 0x7000, 16, 1, NULL));
    fx_fini(&f);
}

static void test_top_of_space(void)
{
    fx_t f;
    const uint64_t top = UINT64_MAX;

    fx_init(&f, 3);
    acc(&f, 0, begin(&f, 0), top - 15, 16, 1, "top write");
    EXPECT("top", "clamped write", 1, acc(&f, 1, begin(&f, 1), top - 7, 100, 1, "past end"));
    expect_has("top", f.nlines ? f.lines[0] : NULL, "[0xfffffffffffffff8..+8) by past end");
    EXPECT("top", "last byte", 1, acc(&f, 2, begin(&f, 2), top, 1, 0, "last"));
    sim_race_forget(f.r, top - 3, 4);
    EXPECT("top", "after forget", 0, acc(&f, 2, begin(&f, 2), top - 3, 4, 1, "again"));
    EXPECT("top", "below forget", 1, acc(&f, 2, begin(&f, 2), top - 4, 1, 1, "again"));
    /* t1's write below the hole, t2's two writes: t0 is ordered with none of them */
    EXPECT("top", "whole space", 3, acc(&f, 0, begin(&f, 0), 0, UINT64_MAX, 0, "all"));
    EXPECT("top", "bottom byte", 0, acc(&f, 1, begin(&f, 1), 0, 1, 0, "zero"));
    fx_fini(&f);
}

/* ------------------------------------------------------------------ reports */

static void test_report_text(void)
{
    fx_t f;
    char label[32];

    fx_init(&f, 6);
    strcpy(label, "memcpy DtoH");       /* interned: the buffer is overwritten below */
    sim_race_who_t rd = { .what = label, .op = 1200, .stream = 5 };
    sim_race_tick(f.r, f.t[5]);
    sim_race_access(f.r, f.t[5], 0x7f120000, 8192, 0, &rd);
    strcpy(label, "garbage");
    sim_race_who_t wr = { .what = "kernel matmul_fwd", .op = 1234, .stream = 3 };
    sim_race_tick(f.r, f.t[3]);
    EXPECT("report", "races", 1, sim_race_access(f.r, f.t[3], 0x7f120000, 4096, 1, &wr));
    expect_has("report", f.nlines ? f.lines[0] : NULL,
               "race: write of [0x7f120000..+4096) by kernel matmul_fwd (op 1234, stream 3) is "
               "unordered with earlier read of [0x7f120000..+8192) by memcpy DtoH (op 1200, "
               "stream 5); overlap [0x7f120000..+4096)");
    sim_race_tick(f.r, f.t[4]);
    sim_race_access(f.r, f.t[4], 0x7f120000, 1, 1, NULL);
    expect_has("report", f.nlines > 1 ? f.lines[1] : NULL, "write of [0x7f120000..+1) by ? (op 0");
    fx_fini(&f);
}

/* One report per pair of operations, even across calls. */
static void test_dedupe(void)
{
    fx_t f;

    fx_init(&f, 2);
    uint64_t a = begin(&f, 0), b = begin(&f, 1);
    acc(&f, 0, a, 0x100, 16, 1, "a");
    acc(&f, 0, a, 0x200, 16, 1, "a");
    EXPECT("dedupe", "first call", 1, acc(&f, 1, b, 0x100, 16, 1, "b"));
    EXPECT("dedupe", "second call", 0, acc(&f, 1, b, 0x200, 16, 0, "b"));
    EXPECT("dedupe", "count", 1, sim_race_count(f.r));
    EXPECT("dedupe", "lines", 1, f.nlines);
    fx_fini(&f);
}

/* 100 lines, one saying the rest are not printed, then silence; the count goes on. */
static void test_limit(void)
{
    fx_t f;

    fx_init(&f, 2);
    for (int i = 0; i < 150; i++) {
        uint64_t x = begin(&f, 0), y = begin(&f, 1);
        acc(&f, 0, x, 0x1000, 8, 1, "x");
        acc(&f, 1, y, 0x1000, 8, 1, "y");
    }
    EXPECT("limit", "count", 150 * 2 - 1, sim_race_count(f.r));   /* the first x is alone */
    EXPECT("limit", "lines", 101, f.nlines);
    expect_has("limit", f.nlines ? f.lines[f.nlines - 1] : NULL, "further races not printed");
    fx_fini(&f);
}

/* ------------------------------------------------------------------ randomised model */

/*
 * The same FastTrack rules kept per byte over a small space, with its own vector clocks: the
 * checker's intervals must find exactly the same pairs of operations, call by call.
 */
enum { NT = 4, SPACE = 160, POOL = 8, MAXPAIRS = 8192 };

typedef struct ref_ep {
    uint64_t clk, op;
    unsigned tid;
    bool valid;
} ref_ep_t;

typedef struct model {
    fx_t f;
    uint64_t base;
    uint64_t vc[NT][NT];
    ref_ep_t w[SPACE], rd[SPACE][NT];
    sim_vc_t *pool[POOL];
    uint64_t pool_vc[POOL][NT];
    uint64_t pairs[MAXPAIRS][2];
    size_t npairs;
    uint64_t rng;
    uint64_t compared;                  /* races whose report lines were compared */
} model_t;

static uint64_t rnd(uint64_t *state, uint64_t n)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (*state >> 33) % n;
}

/* Record pair (early, late) unless known; returns whether it was new. */
static bool add_pair(model_t *m, uint64_t early, uint64_t late)
{
    for (size_t i = 0; i < m->npairs; i++)
        if (m->pairs[i][0] == early && m->pairs[i][1] == late)
            return false;
    if (m->npairs == MAXPAIRS)
        abort();
    m->pairs[m->npairs][0] = early;
    m->pairs[m->npairs++][1] = late;
    return true;
}

static void conflict(model_t *m, unsigned t, const ref_ep_t *e, uint64_t op, uint64_t *found,
                     unsigned *nfound)
{
    if (e->valid && e->clk > m->vc[t][e->tid] && add_pair(m, e->op, op))
        found[(*nfound)++] = e->op;
}

/* The model's access: fills found with the earlier operations of new races; returns how many. */
static unsigned model_access(model_t *m, unsigned t, uint64_t op, unsigned lo, unsigned n,
                             bool write, uint64_t *found)
{
    ref_ep_t cur = { m->vc[t][t], op, t, true };
    unsigned nfound = 0;

    for (unsigned x = lo; x < lo + n; x++) {
        conflict(m, t, &m->w[x], op, found, &nfound);
        for (unsigned u = 0; write && u < NT; u++)
            conflict(m, t, &m->rd[x][u], op, found, &nfound);
    }
    for (unsigned x = lo; x < lo + n; x++) {
        if (write) {
            m->w[x] = cur;
            memset(m->rd[x], 0, sizeof m->rd[x]);
        } else {
            m->rd[x][t] = cur;
        }
    }
    return nfound;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* The earlier operation named by report line `line` (the second "(op N"). */
static uint64_t early_op(const char *line)
{
    const char *p = strstr(line, "(op ");
    uint64_t op = UINT64_MAX;

    if (p)
        p = strstr(p + 4, "(op ");
    if (p)
        sscanf(p + 4, "%" SCNu64, &op);
    return op;
}

/* One random access; compares the checker with the model.  Returns 0 when they agree. */
static int random_access(model_t *m, unsigned t, uint64_t op)
{
    uint64_t found[SPACE * (NT + 1)], got[SPACE * (NT + 1)];
    unsigned lo = (unsigned)rnd(&m->rng, SPACE), n = 1 + (unsigned)rnd(&m->rng, 48);
    bool write = rnd(&m->rng, 2);
    size_t before = m->f.nlines;

    if (n > SPACE - lo)
        n = SPACE - lo;
    unsigned want = model_access(m, t, op, lo, n, write, found);
    unsigned have = acc(&m->f, t, op, m->base + lo, n, write, "k");
    if (want != have) {
        printf("FAIL model: op %" PRIu64 " [%u, +%u) %s: expected %u races, got %u\n", op, lo, n,
               write ? "write" : "read", want, have);
        return 1;
    }
    if (!want || m->f.nlines - before != want || strstr(m->f.lines[m->f.nlines - 1], "further"))
        return 0;                       /* at the report limit */
    m->compared += want;
    for (unsigned i = 0; i < want; i++)
        got[i] = early_op(m->f.lines[before + i]);
    qsort(found, want, sizeof *found, cmp_u64);
    qsort(got, want, sizeof *got, cmp_u64);
    for (unsigned i = 0; i < want; i++) {
        if (found[i] != got[i]) {
            printf("FAIL model: op %" PRIu64 ": expected a race with op %" PRIu64 ", got %" PRIu64
                   "\n", op, found[i], got[i]);
            return 1;
        }
    }
    return 0;
}

/* Thread t acquires a random pooled snapshot, or releases into the pool. */
static void random_sync(model_t *m, unsigned t)
{
    unsigned k = (unsigned)rnd(&m->rng, POOL);

    if (rnd(&m->rng, 2) && m->pool[k]) {
        sim_race_acquire(m->f.r, m->f.t[t], m->pool[k]);
        for (unsigned u = 0; u < NT; u++)
            if (m->pool_vc[k][u] > m->vc[t][u])
                m->vc[t][u] = m->pool_vc[k][u];
    } else {
        sim_vc_unref(m->pool[k]);
        m->pool[k] = sim_race_release(m->f.r, m->f.t[t]);
        memcpy(m->pool_vc[k], m->vc[t], sizeof m->vc[t]);
    }
}

/* Forget a random range, possibly empty. */
static void random_forget(model_t *m)
{
    unsigned lo = (unsigned)rnd(&m->rng, SPACE), n = (unsigned)rnd(&m->rng, SPACE - lo);

    sim_race_forget(m->f.r, m->base + lo, n);
    memset(&m->w[lo], 0, n * sizeof m->w[0]);
    memset(&m->rd[lo], 0, n * sizeof m->rd[0]);
}

static uint64_t compared_total, races_total;

static int random_round(uint64_t seed, uint64_t base)
{
    model_t *m = calloc(1, sizeof *m);
    int bad = 0;

    fx_init(&m->f, NT);
    m->rng = seed;
    m->base = base;
    for (int i = 0; i < 80 && !bad; i++) {
        unsigned t = (unsigned)rnd(&m->rng, NT), nacc = 1 + (unsigned)rnd(&m->rng, 3);
        uint64_t op = begin(&m->f, t);

        m->vc[t][t]++;
        if (rnd(&m->rng, 3) == 0)
            random_sync(m, t);
        for (unsigned a = 0; a < nacc && !bad; a++)
            bad = random_access(m, t, op);
        if (rnd(&m->rng, 4) == 0)
            random_sync(m, t);
        if (rnd(&m->rng, 16) == 0)
            random_forget(m);
    }
    for (unsigned k = 0; k < POOL; k++)
        sim_vc_unref(m->pool[k]);
    compared_total += m->compared;
    races_total += sim_race_count(m->f.r);
    fx_fini(&m->f);
    free(m);
    return bad;
}

static void test_random(void)
{
    for (uint64_t seed = 1; seed <= (SANITIZED ? 1000 : 3000); seed++) {
        uint64_t base = seed % 3 == 0 ? UINT64_MAX - (SPACE - 1) : seed % 3 == 1 ? 0 : 0x10000;

        if (random_round(seed, base)) {
            printf("FAIL model: seed %" PRIu64 "\n", seed);
            failures++;
            return;
        }
    }
    printf("model: %" PRIu64 " races found, %" PRIu64 " report lines compared\n", races_total,
           compared_total);
}

/* ------------------------------------------------------------------ snapshots across threads */

static void *churn(void *arg)
{
    sim_vc_t *vc = arg;

    for (int i = 0; i < 20000; i++)
        sim_vc_unref(sim_vc_ref(vc));
    sim_vc_unref(vc);
    return NULL;
}

/* Snapshots are referenced and dropped by other threads while the checker moves on. */
static void test_threads(void)
{
    fx_t f;
    pthread_t th[4];

    fx_init(&f, 2);
    for (int round = 0; round < 8; round++) {
        sim_race_tick(f.r, f.t[0]);
        sim_vc_t *vc = sim_race_release(f.r, f.t[0]);
        for (int i = 0; i < 4; i++)
            if (pthread_create(&th[i], NULL, churn, sim_vc_ref(vc)))
                abort();
        sim_race_tick(f.r, f.t[0]);     /* drops the checker's cached reference */
        sim_race_acquire(f.r, f.t[1], vc);
        sim_vc_unref(vc);
        for (int i = 0; i < 4; i++)
            pthread_join(th[i], NULL);
    }
    fx_fini(&f);
}

/* ------------------------------------------------------------------ throughput */

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * Accesses by 4 threads synchronised in a chain (so no races) to 10,000 disjoint 4 KiB ranges,
 * or to random ranges around them that split and coalesce intervals: no race may be reported.
 * The rate is printed for a reader; it is not judged (the machine may be busy).
 */
static void bench(const char *name, unsigned nacc, bool random_ranges)
{
    const unsigned nranges = 10000;
    uint64_t rng = 42;
    fx_t f;

    fx_init(&f, 4);
    double t0 = now();
    for (unsigned i = 0; i < nacc; i++) {
        unsigned t = i % 4;
        uint64_t op = begin(&f, t), addr, len = 4096;

        if (i)
            order(&f, (t + 3) % 4, t);
        addr = 0x100000000ULL + rnd(&rng, nranges) * 8192;
        if (random_ranges) {
            addr += rnd(&rng, 8192) - 4096;
            len = 1 + rnd(&rng, 3 * 8192);
        }
        acc(&f, t, op, addr, len, (int)rnd(&rng, 2), "bench");
    }
    double dt = now() - t0;
    printf("bench %s: %u accesses over %u ranges in %.3f s (%.2f M accesses/s)\n", name, nacc,
           nranges, dt, nacc / dt / 1e6);
    EXPECT("bench", "races", 0, sim_race_count(f.r));
    fx_fini(&f);
}

int main(void)
{
    test_same_thread();
    test_read_read();
    test_write_write();
    test_write_after_two_reads();
    test_snapshots();
    test_partial_overlap();
    test_span();
    test_forget();
    test_len_zero();
    test_top_of_space();
    test_report_text();
    test_dedupe();
    test_limit();
    test_random();
    test_threads();
    bench("disjoint", SANITIZED ? 100000 : 1000000, false);
    bench("overlapping", SANITIZED ? 25000 : 250000, true);
    if (failures) {
        printf("unit_race: %d failure(s)\n", failures);
        return 1;
    }
    printf("unit_race: ok\n");
    return 0;
}
