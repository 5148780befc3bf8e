/* SPDX-License-Identifier: MIT */
/*
 * unit_arena.c - the allocation arena (shim/arena.c) on its own: geometry checks, small and
 * large allocations, alignment and size classes, lookup of base, interior, slack, one past the
 * end and freed addresses, the exact on_first/on_last sequences (slab sharing, large spans,
 * the empty-slab cache and trim), undo when on_first fails, bad frees, exhaustion, first-fit
 * placement, a repeating training-like pattern, a randomised comparison with a simple model
 * on several geometries, and a throughput print (no timing assert).
 */
#include "../shim/arena.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Sanitizers slow everything down: the benchmark shrinks. */
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

#define MiB  ((uint64_t)1 << 20)
#define GiB  (1024 * MiB)
#define BASE 0x7f0000000000ull

static int failures;

static void fail_u64(const char *test, const char *what, uint64_t expected, uint64_t got)
{
    printf("FAIL %s: %s: expected %" PRIu64 " (0x%" PRIx64 "), got %" PRIu64 " (0x%" PRIx64
           ")\n", test, what, expected, expected, got, got);
    failures++;
}

#define EXPECT(test, what, expected, got)                                                         \
    do {                                                                                          \
        uint64_t e_ = (uint64_t)(expected), g_ = (uint64_t)(got);                                 \
        if (e_ != g_)                                                                             \
            fail_u64(test, what, e_, g_);                                                         \
    } while (0)

/* Stops a loop after the first few failures so one bug does not print a million lines. */
#define BAIL() do { if (failures > 20) { printf("too many failures\n"); exit(1); } } while (0)

/* ------------------------------------------------------------------ callback recorder */

/* Records +(chunk + 1) for on_first and -(chunk + 1) for on_last; tracks which chunks the
 * caller would have backed, and counts protocol errors (first twice, last without first). */
typedef struct cb {
    uint8_t *backed;
    int64_t *log;
    size_t nlog, cap;
    int fail_after;     /* on_first fails with -EIO when this is 0; -1: never */
    int errors;
} cb_t;

static void cb_push(cb_t *c, int64_t ev)
{
    if (c->nlog == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 64;
        c->log = realloc(c->log, c->cap * sizeof(*c->log));
        if (!c->log)
            abort();
    }
    c->log[c->nlog++] = ev;
}

static int on_first(void *ctx, uint32_t chunk)
{
    cb_t *c = ctx;
    if (c->fail_after == 0) {
        c->fail_after = -1;
        return -EIO;
    }
    if (c->fail_after > 0)
        c->fail_after--;
    c->errors += c->backed[chunk];
    c->backed[chunk] = 1;
    cb_push(c, (int64_t)chunk + 1);
    return 0;
}

static int on_last(void *ctx, uint32_t chunk)
{
    cb_t *c = ctx;
    c->errors += !c->backed[chunk];
    c->backed[chunk] = 0;
    cb_push(c, -((int64_t)chunk + 1));
    return 0;
}

static arena_t *fx_new(const char *test, uint64_t size, uint64_t chunk, cb_t *c)
{
    arena_t *a = NULL;
    int err = arena_create(BASE, size, chunk, &a);
    EXPECT(test, "arena_create", 0, err);
    if (err)
        exit(1);
    arena_set_release(a, on_last);
    memset(c, 0, sizeof(*c));
    c->fail_after = -1;
    c->backed = calloc(arena_chunk_count(a), 1);
    if (!c->backed)
        abort();
    return a;
}

static void fx_free(arena_t *a, cb_t *c)
{
    arena_destroy(a);
    free(c->backed);
    free(c->log);
}

/* Checks that the log since `from` is exactly the n events in `want`. */
static void expect_log(const char *test, const cb_t *c, size_t from, const int64_t *want,
                       size_t n)
{
    EXPECT(test, "callback count", n, c->nlog - from);
    for (size_t i = 0; i < n && from + i < c->nlog; i++)
        EXPECT(test, "callback (+first/-last, chunk+1)", want[i], c->log[from + i]);
    EXPECT(test, "callback protocol errors", 0, c->errors);
}

static uint64_t alloc_ok(const char *test, arena_t *a, uint64_t size, cb_t *c, arena_info_t *info)
{
    arena_info_t tmp;
    int err = arena_alloc(a, size, on_first, c, info ? info : &tmp);
    EXPECT(test, "arena_alloc", 0, err);
    return err ? 0 : (info ? info : &tmp)->base;
}

static void free_ok(const char *test, arena_t *a, uint64_t addr, cb_t *c)
{
    EXPECT(test, "arena_free", 0, arena_free(a, addr, on_last, c, NULL));
}

static int stats_equal(const arena_stats_t *x, const arena_stats_t *y)
{
    return memcmp(x, y, sizeof(*x)) == 0;
}

/* ------------------------------------------------------------------ geometry */

static void test_create(void)
{
    const char *t = "create";
    arena_t *a = NULL;
    EXPECT(t, "chunk not a power of two", -EINVAL, arena_create(BASE, 6 * MiB, 3 * MiB, &a));
    EXPECT(t, "chunk too small", -EINVAL, arena_create(BASE, 8192, 2048, &a));
    EXPECT(t, "size not a multiple", -EINVAL, arena_create(BASE, 3 * MiB, 2 * MiB, &a));
    EXPECT(t, "size 0", -EINVAL, arena_create(BASE, 0, 2 * MiB, &a));
    EXPECT(t, "base unaligned", -EINVAL, arena_create(BASE + 4096, 4 * MiB, 2 * MiB, &a));
    EXPECT(t, "wraps", -EINVAL, arena_create(UINT64_MAX - 2 * MiB + 1, 4 * MiB, 2 * MiB, &a));
    EXPECT(t, "reaches the top", 0, arena_create(0ull - 4 * MiB, 4 * MiB, 2 * MiB, &a));
    EXPECT(t, "top: contains last byte", 1, arena_contains(a, UINT64_MAX));
    EXPECT(t, "top: chunk of last byte", 1, arena_chunk_of(a, UINT64_MAX));
    arena_destroy(a);

    EXPECT(t, "1 TiB", 0, arena_create(BASE, 1024 * GiB, 2 * MiB, &a));
    arena_stats_t st;
    arena_stats(a, &st);
    EXPECT(t, "chunk count", 512 * 1024, arena_chunk_count(a));
    EXPECT(t, "largest free run", 512 * 1024, st.largest_free_run);
    EXPECT(t, "contains base", 1, arena_contains(a, BASE));
    EXPECT(t, "contains end-1", 1, arena_contains(a, BASE + 1024 * GiB - 1));
    EXPECT(t, "contains end", 0, arena_contains(a, BASE + 1024 * GiB));
    EXPECT(t, "contains base-1", 0, arena_contains(a, BASE - 1));
    EXPECT(t, "chunk_of", 3, arena_chunk_of(a, BASE + 6 * MiB + 12345));
    EXPECT(t, "chunk_addr", BASE + 10 * MiB, arena_chunk_addr(a, 5));
    EXPECT(t, "lookup empty", -ENOENT, arena_lookup(a, BASE + 4096, NULL));
    arena_destroy(a);
}

/* ------------------------------------------------------------------ small allocations */

static void test_small_sharing(void)
{
    const char *t = "small_sharing";
    cb_t c;
    arena_t *a = fx_new(t, 64 * MiB, 2 * MiB, &c);     /* 32 chunks; slabs from the top */
    arena_info_t i1, i2, i3;
    arena_set_cache_limit(a, 0);

    alloc_ok(t, a, 100, &c, &i1);
    EXPECT(t, "first small: base", arena_chunk_addr(a, 31), i1.base);
    EXPECT(t, "first small: size", 100, i1.size);
    EXPECT(t, "first small: chunk", 31, i1.first_chunk);
    EXPECT(t, "first small: nchunks", 1, i1.nchunks);
    alloc_ok(t, a, 200, &c, &i2);
    EXPECT(t, "same class shares the slab", i1.base + 256, i2.base);
    EXPECT(t, "chunk refs", 2, arena_chunk_refs(a, 31));
    alloc_ok(t, a, 1000, &c, &i3);
    EXPECT(t, "other class: next slab down", arena_chunk_addr(a, 30), i3.base);
    expect_log(t, &c, 0, (int64_t[]){ 32, 31 }, 2);

    free_ok(t, a, i1.base, &c);
    EXPECT(t, "no last while a slot lives", 2, c.nlog);
    free_ok(t, a, i2.base, &c);
    free_ok(t, a, i3.base, &c);
    expect_log(t, &c, 2, (int64_t[]){ -32, -31 }, 2);

    arena_stats_t st;
    arena_stats(a, &st);
    EXPECT(t, "live allocs", 0, st.live_allocs);
    EXPECT(t, "chunk bytes", 0, st.chunk_bytes);
    EXPECT(t, "peak chunk bytes", 4 * MiB, st.peak_chunk_bytes);
    EXPECT(t, "peak live bytes", 1300, st.peak_live_bytes);
    fx_free(a, &c);
}

/* An emptied slab stays cached (in use, no on_last); any class reuses it without on_first;
 * trim releases it; the limit bounds the cache. */
static void test_cache(void)
{
    const char *t = "cache";
    cb_t c;
    arena_t *a = fx_new(t, 64 * MiB, 2 * MiB, &c);
    arena_info_t i;
    arena_stats_t st;

    uint64_t p = alloc_ok(t, a, 4096, &c, &i);
    free_ok(t, a, p, &c);
    expect_log(t, &c, 0, (int64_t[]){ 32 }, 1);
    EXPECT(t, "cached chunk in use", 1, arena_chunk_in_use(a, 31));
    EXPECT(t, "cached chunk refs", 0, arena_chunk_refs(a, 31));
    EXPECT(t, "lookup in cached chunk", -ENOENT, arena_lookup(a, p, NULL));
    EXPECT(t, "free in cached chunk", -EINVAL, arena_free(a, p, on_last, &c, NULL));
    arena_stats(a, &st);
    EXPECT(t, "cached_chunks", 1, st.cached_chunks);
    EXPECT(t, "chunk bytes while cached", 2 * MiB, st.chunk_bytes);

    alloc_ok(t, a, 70000, &c, &i);     /* another class: reuses the cached chunk */
    EXPECT(t, "reused chunk", 31, i.first_chunk);
    EXPECT(t, "no callback on reuse", 1, c.nlog);
    free_ok(t, a, i.base, &c);
    EXPECT(t, "trim count", 1, arena_trim(a, on_last, &c));
    expect_log(t, &c, 1, (int64_t[]){ -32 }, 1);
    EXPECT(t, "trim again", 0, arena_trim(a, on_last, &c));

    /* Six classes at once, then all freed: four stay cached, two are released. */
    uint64_t b[6];
    size_t n0 = c.nlog;
    for (int k = 0; k < 6; k++)
        b[k] = alloc_ok(t, a, 256u << k, &c, NULL);
    for (int k = 0; k < 6; k++)
        free_ok(t, a, b[k], &c);
    EXPECT(t, "firsts + lasts", 6 + 6 - ARENA_CACHE_DEFAULT, c.nlog - n0);
    arena_stats(a, &st);
    EXPECT(t, "cached after burst", ARENA_CACHE_DEFAULT, st.cached_chunks);
    EXPECT(t, "trim after burst", ARENA_CACHE_DEFAULT, arena_trim(a, on_last, &c));
    arena_stats(a, &st);
    EXPECT(t, "chunk bytes after trim", 0, st.chunk_bytes);
    EXPECT(t, "protocol errors", 0, c.errors);
    fx_free(a, &c);
}

static void test_classes(void)
{
    const char *t = "classes";
    cb_t c;
    arena_t *a = fx_new(t, 256 * MiB, 2 * MiB, &c);
    uint64_t prev = 0;
    int nclasses = 0;

    for (uint64_t s = 1; s <= ARENA_SMALL_MAX; s += 1 + s / 97) {
        uint64_t k = arena_small_class(a, s);
        if (k < s || k % 256 || (k > 1024 && k * 4 > s * 5 + 1024))
            fail_u64(t, "class of size (>= size, 256-multiple, <= 1.25 size)", s, k);
        nclasses += k != prev;
        prev = k;
        BAIL();
    }
    EXPECT(t, "class of 1 MiB", ARENA_SMALL_MAX, arena_small_class(a, ARENA_SMALL_MAX));
    EXPECT(t, "1 MiB + 1 is large", 0, arena_small_class(a, ARENA_SMALL_MAX + 1));
    EXPECT(t, "number of classes", 44, nclasses);
    arena_destroy(a);

    /* A 64 KiB chunk: requests above 32 KiB are large. */
    EXPECT(t, "small chunk arena", 0, arena_create(BASE, 64 * MiB, 64 * 1024, &a));
    EXPECT(t, "32 KiB small", 32 * 1024, arena_small_class(a, 32 * 1024));
    EXPECT(t, "32 KiB + 1 large", 0, arena_small_class(a, 32 * 1024 + 1));
    arena_destroy(a);
    free(c.backed);
    free(c.log);
}

static void test_alignment(void)
{
    const char *t = "alignment";
    cb_t c;
    arena_t *a = fx_new(t, 4 * GiB, 2 * MiB, &c);
    uint64_t seed = 12345;

    for (int n = 0; n < 3000; n++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t size = 1 + (seed >> 33) % (n % 3 ? 4096 : 3 * MiB);
        arena_info_t i;
        uint64_t p = alloc_ok(t, a, size, &c, &i);
        uint64_t k = arena_small_class(a, size);
        if (p % ARENA_ALIGN)
            fail_u64(t, "256-byte aligned", 0, p % ARENA_ALIGN);
        if (k && !(k & (k - 1)) && p % k)
            fail_u64(t, "power-of-two class aligned to its size", k, p);
        if (!k && p % (2 * MiB))
            fail_u64(t, "large: chunk-aligned", 0, p % (2 * MiB));
        BAIL();
    }
    fx_free(a, &c);
}

/* ------------------------------------------------------------------ large allocations */

static void test_large(void)
{
    const char *t = "large";
    cb_t c;
    arena_t *a = fx_new(t, 64 * MiB, 2 * MiB, &c);
    arena_info_t i;

    uint64_t p = alloc_ok(t, a, 5 * MiB, &c, &i);
    EXPECT(t, "base", BASE, p);
    EXPECT(t, "size", 5 * MiB, i.size);
    EXPECT(t, "first chunk", 0, i.first_chunk);
    EXPECT(t, "nchunks", 3, i.nchunks);
    expect_log(t, &c, 0, (int64_t[]){ 1, 2, 3 }, 3);
    for (uint32_t k = 0; k < 3; k++)
        EXPECT(t, "refs", 1, arena_chunk_refs(a, k));

    alloc_ok(t, a, ARENA_SMALL_MAX + 1, &c, &i);      /* just above small: one chunk */
    EXPECT(t, "1 MiB + 1: chunk", 3, i.first_chunk);
    EXPECT(t, "1 MiB + 1: nchunks", 1, i.nchunks);
    alloc_ok(t, a, 4 * MiB, &c, &i);                  /* exactly two chunks */
    EXPECT(t, "4 MiB: chunk", 4, i.first_chunk);
    EXPECT(t, "4 MiB: nchunks", 2, i.nchunks);

    size_t n0 = c.nlog;
    arena_info_t f;
    EXPECT(t, "free", 0, arena_free(a, p, on_last, &c, &f));
    EXPECT(t, "freed base", p, f.base);
    EXPECT(t, "freed size", 5 * MiB, f.size);
    EXPECT(t, "freed nchunks", 3, f.nchunks);
    expect_log(t, &c, n0, (int64_t[]){ -1, -2, -3 }, 3);
    fx_free(a, &c);
}

/* Address-ordered first fit for large runs; slabs stay at the top. */
static void test_first_fit(void)
{
    const char *t = "first_fit";
    cb_t c;
    arena_t *a = fx_new(t, 64 * MiB, 2 * MiB, &c);
    arena_info_t x, y, z, w;

    alloc_ok(t, a, 4 * MiB, &c, &x);       /* chunks 0-1 */
    alloc_ok(t, a, 6 * MiB, &c, &y);       /* 2-4 */
    alloc_ok(t, a, 4 * MiB, &c, &z);       /* 5-6 */
    alloc_ok(t, a, 512, &c, &w);           /* slab: 31 */
    EXPECT(t, "slab at the top", 31, w.first_chunk);
    free_ok(t, a, y.base, &c);
    alloc_ok(t, a, 8 * MiB, &c, &w);       /* 4 chunks: the hole (3) is too small */
    EXPECT(t, "4 chunks after the hole", 7, w.first_chunk);
    alloc_ok(t, a, 3 * MiB, &c, &w);       /* 2 chunks: lowest fit is the hole */
    EXPECT(t, "2 chunks into the hole", 2, w.first_chunk);
    alloc_ok(t, a, 2 * MiB, &c, &w);
    EXPECT(t, "1 chunk: rest of the hole", 4, w.first_chunk);
    free_ok(t, a, x.base, &c);
    free_ok(t, a, z.base, &c);
    alloc_ok(t, a, 10 * MiB, &c, &w);      /* 5 chunks: no hole fits, after 7-10 */
    EXPECT(t, "5 chunks", 11, w.first_chunk);
    EXPECT(t, "protocol errors", 0, c.errors);
    fx_free(a, &c);
}

/* ------------------------------------------------------------------ lookup */

static void test_lookup(void)
{
    const char *t = "lookup";
    cb_t c;
    arena_t *a = fx_new(t, 64 * MiB, 2 * MiB, &c);
    arena_info_t big, s1, s2, s3, got;

    alloc_ok(t, a, 3 * MiB + 100, &c, &big);
    EXPECT(t, "large base", 0, arena_lookup(a, big.base, &got));
    EXPECT(t, "large base: base", big.base, got.base);
    EXPECT(t, "large base: size", 3 * MiB + 100, got.size);
    EXPECT(t, "large base: nchunks", 2, got.nchunks);
    EXPECT(t, "large interior (2nd chunk)", 0, arena_lookup(a, big.base + 3 * MiB, &got));
    EXPECT(t, "large interior: base", big.base, got.base);
    EXPECT(t, "large last byte", 0, arena_lookup(a, big.base + big.size - 1, NULL));
    EXPECT(t, "large one past end", -ENOENT, arena_lookup(a, big.base + big.size, NULL));
    EXPECT(t, "large slack", -ENOENT, arena_lookup(a, big.base + 4 * MiB - 1, NULL));

    alloc_ok(t, a, 256, &c, &s1);           /* class 256: back to back */
    alloc_ok(t, a, 256, &c, &s2);
    alloc_ok(t, a, 200, &c, &s3);
    EXPECT(t, "small last byte", 0, arena_lookup(a, s1.base + 255, &got));
    EXPECT(t, "small last byte: base", s1.base, got.base);
    EXPECT(t, "one past end is the next one", 0, arena_lookup(a, s1.base + 256, &got));
    EXPECT(t, "next one: base", s2.base, got.base);
    EXPECT(t, "small slot slack", -ENOENT, arena_lookup(a, s3.base + 200, NULL));
    EXPECT(t, "small interior", 0, arena_lookup(a, s3.base + 199, &got));
    EXPECT(t, "small interior: size", 200, got.size);
    EXPECT(t, "small interior: chunk", s3.first_chunk, got.first_chunk);
    EXPECT(t, "free slot in a slab", -ENOENT, arena_lookup(a, s3.base + 256, NULL));
    EXPECT(t, "free last slot of a slab", -ENOENT,
           arena_lookup(a, arena_chunk_addr(a, s3.first_chunk) + 2 * MiB - 1, NULL));

    free_ok(t, a, s2.base, &c);
    free_ok(t, a, big.base, &c);
    EXPECT(t, "freed small", -ENOENT, arena_lookup(a, s2.base, NULL));
    EXPECT(t, "freed large", -ENOENT, arena_lookup(a, big.base + 5, NULL));
    EXPECT(t, "outside below", -ENOENT, arena_lookup(a, BASE - 1, NULL));
    EXPECT(t, "outside above", -ENOENT, arena_lookup(a, BASE + 64 * MiB, NULL));
    EXPECT(t, "neighbour still there", 0, arena_lookup(a, s1.base, NULL));
    fx_free(a, &c);
}

/* ------------------------------------------------------------------ failures */

static void test_first_fails(void)
{
    const char *t = "first_fails";
    cb_t c;
    arena_t *a = fx_new(t, 64 * MiB, 2 * MiB, &c);
    arena_stats_t before, after;
    arena_info_t i;

    alloc_ok(t, a, 2 * MiB, &c, NULL);           /* chunk 0 */
    arena_stats(a, &before);
    size_t n0 = c.nlog;
    c.fail_after = 2;                            /* the third chunk fails */
    EXPECT(t, "large: error passed", -EIO, arena_alloc(a, 8 * MiB, on_first, &c, &i));
    expect_log(t, &c, n0, (int64_t[]){ 2, 3, -3, -2 }, 4);
    arena_stats(a, &after);
    EXPECT(t, "large: stats unchanged", 1, stats_equal(&before, &after));
    for (uint32_t k = 1; k < 5; k++)
        EXPECT(t, "large: chunk free again", 0, arena_chunk_in_use(a, k));
    alloc_ok(t, a, 8 * MiB, &c, &i);
    EXPECT(t, "large: same place afterwards", 1, i.first_chunk);

    arena_stats(a, &before);
    n0 = c.nlog;
    c.fail_after = 0;
    EXPECT(t, "first chunk fails", -EIO, arena_alloc(a, 6 * MiB, on_first, &c, &i));
    EXPECT(t, "first chunk fails: no callbacks", n0, c.nlog);

    c.fail_after = 0;                            /* a new slab's chunk fails */
    EXPECT(t, "small: error passed", -EIO, arena_alloc(a, 64, on_first, &c, &i));
    EXPECT(t, "small: no callbacks", n0, c.nlog);
    arena_stats(a, &after);
    EXPECT(t, "stats unchanged", 1, stats_equal(&before, &after));
    EXPECT(t, "slab chunk free again", 0, arena_chunk_in_use(a, 31));
    alloc_ok(t, a, 64, &c, &i);
    EXPECT(t, "small: slab afterwards", 31, i.first_chunk);
    EXPECT(t, "protocol errors", 0, c.errors);
    fx_free(a, &c);
}

static void test_bad_free(void)
{
    const char *t = "bad_free";
    cb_t c;
    arena_t *a = fx_new(t, 64 * MiB, 2 * MiB, &c);
    arena_stats_t before, after;
    arena_info_t big, s1, s2;

    alloc_ok(t, a, 5 * MiB, &c, &big);
    alloc_ok(t, a, 1000, &c, &s1);
    alloc_ok(t, a, 1000, &c, &s2);
    free_ok(t, a, s2.base, &c);
    arena_stats(a, &before);
    size_t n0 = c.nlog;
    EXPECT(t, "large interior", -EINVAL, arena_free(a, big.base + 256, on_last, &c, NULL));
    EXPECT(t, "large 2nd chunk", -EINVAL, arena_free(a, big.base + 2 * MiB, on_last, &c, NULL));
    EXPECT(t, "small interior", -EINVAL, arena_free(a, s1.base + 256, on_last, &c, NULL));
    EXPECT(t, "small double free", -EINVAL, arena_free(a, s2.base, on_last, &c, NULL));
    EXPECT(t, "free chunk", -EINVAL, arena_free(a, BASE + 20 * MiB, on_last, &c, NULL));
    EXPECT(t, "outside", -EINVAL, arena_free(a, BASE + 64 * MiB, on_last, &c, NULL));
    EXPECT(t, "slab tail", -EINVAL,
           arena_free(a, arena_chunk_addr(a, s1.first_chunk) + 2 * MiB - 256, on_last, &c, NULL));
    free_ok(t, a, big.base, &c);
    EXPECT(t, "large double free", -EINVAL, arena_free(a, big.base, on_last, &c, NULL));
    alloc_ok(t, a, 5 * MiB, &c, &big);
    arena_stats(a, &after);
    before.total_allocs++;
    before.total_frees++;
    EXPECT(t, "stats unchanged by bad frees", 1, stats_equal(&before, &after));
    EXPECT(t, "only the good free and alloc reported", n0 + 6, c.nlog);
    fx_free(a, &c);
}

static void test_exhaustion(void)
{
    const char *t = "exhaustion";
    cb_t c;
    arena_t *a = fx_new(t, 16 * MiB, 2 * MiB, &c);     /* 8 chunks */
    arena_stats_t before, after;
    arena_info_t i[8];

    EXPECT(t, "larger than the arena", -ENOMEM, arena_alloc(a, 16 * MiB + 1, on_first, &c, NULL));
    EXPECT(t, "huge", -ENOMEM, arena_alloc(a, UINT64_MAX, on_first, &c, NULL));
    EXPECT(t, "zero", -EINVAL, arena_alloc(a, 0, on_first, &c, NULL));
    for (int k = 0; k < 8; k++)
        alloc_ok(t, a, 2 * MiB, &c, &i[k]);
    arena_stats(a, &before);
    size_t n0 = c.nlog;
    EXPECT(t, "full: large", -ENOMEM, arena_alloc(a, 2 * MiB, on_first, &c, NULL));
    EXPECT(t, "full: small", -ENOMEM, arena_alloc(a, 16, on_first, &c, NULL));
    arena_stats(a, &after);
    EXPECT(t, "full: stats unchanged", 1, stats_equal(&before, &after));
    EXPECT(t, "full: no callbacks", n0, c.nlog);

    free_ok(t, a, i[1].base, &c);
    free_ok(t, a, i[3].base, &c);
    free_ok(t, a, i[4].base, &c);
    arena_stats(a, &before);
    EXPECT(t, "largest free run", 2, before.largest_free_run);
    EXPECT(t, "fragmented: 3 chunks", -ENOMEM, arena_alloc(a, 5 * MiB, on_first, &c, NULL));
    alloc_ok(t, a, 3 * MiB, &c, &i[1]);
    EXPECT(t, "2 chunks fit at 3", 3, i[1].first_chunk);

    /* A cached slab holds the last free chunk: large fails until trim. */
    uint64_t s = alloc_ok(t, a, 100, &c, NULL);
    free_ok(t, a, s, &c);
    EXPECT(t, "cached slab blocks", -ENOMEM, arena_alloc(a, 2 * MiB, on_first, &c, NULL));
    EXPECT(t, "trim", 1, arena_trim(a, on_last, &c));
    alloc_ok(t, a, 2 * MiB, &c, &i[2]);
    EXPECT(t, "after trim", 1, i[2].first_chunk);
    EXPECT(t, "protocol errors", 0, c.errors);
    fx_free(a, &c);
}

/* ------------------------------------------------------------------ training-like pattern */

/* Weights stay; each iteration allocates activations of fixed sizes and frees them in
 * reverse.  Large activations land at the same addresses every iteration; from the second on
 * (once the empty-slab cache is in its steady state) every activation does, and the chunks in
 * use peak at the same figure. */
static void test_iterations(void)
{
    const char *t = "iterations";
    cb_t c;
    arena_t *a = fx_new(t, 2 * GiB, 2 * MiB, &c);
    enum { NACT = 300 };
    uint64_t sizes[NACT], first[NACT], second[NACT], p[NACT], seed = 99, peak1 = 0;

    for (int k = 0; k < 50; k++)                 /* weights */
        alloc_ok(t, a, 1 + k * 37 * 1024, &c, NULL);
    for (int k = 0; k < NACT; k++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        sizes[k] = 1 + (seed >> 33) % (k % 4 ? 64 * 1024 : 5 * MiB);
    }
    for (int it = 0; it < 10; it++) {
        for (int k = 0; k < NACT; k++) {
            p[k] = alloc_ok(t, a, sizes[k], &c, NULL);
            if (it == 0)
                first[k] = p[k];
            if (it == 1)
                second[k] = p[k];
            if (sizes[k] > ARENA_SMALL_MAX && p[k] != first[k])
                fail_u64(t, "large activation moved", first[k], p[k]);
            if (it > 1 && p[k] != second[k])
                fail_u64(t, "activation moved after the 2nd iteration", second[k], p[k]);
        }
        for (int k = NACT - 1; k >= 0; k--)
            free_ok(t, a, p[k], &c);
        arena_stats_t st;
        arena_stats(a, &st);
        if (it == 0)
            peak1 = st.peak_chunk_bytes;
        EXPECT(t, "peak chunk bytes", peak1, st.peak_chunk_bytes);
        BAIL();
    }
    EXPECT(t, "protocol errors", 0, c.errors);
    fx_free(a, &c);
}

/* ------------------------------------------------------------------ randomised model */

typedef struct live {
    uint64_t base, size;
} live_t;

typedef struct model {
    const char *name;
    arena_t *a;
    cb_t c;
    live_t *v;
    size_t n, cap;
    uint64_t rng, bytes;
    uint64_t small_max, chunk;
    uint64_t nomem, undone;     /* allocations refused for space, undone by on_first */
    uint32_t max_chunks;        /* largest request, in chunks */
} model_t;

static uint64_t rnd(model_t *m)
{
    m->rng ^= m->rng >> 12;
    m->rng ^= m->rng << 25;
    m->rng ^= m->rng >> 27;
    return m->rng * 2685821657736338717ull;
}

/* Roughly log-uniform in [lo, hi]: a random bit length, then a random value of that length. */
static uint64_t rnd_log(model_t *m, uint64_t lo, uint64_t hi)
{
    unsigned blo = 64 - (unsigned)__builtin_clzll(lo), bhi = 64 - (unsigned)__builtin_clzll(hi);
    unsigned b = blo + (unsigned)(rnd(m) % (bhi - blo + 1));
    uint64_t r = (1ull << (b - 1)) + rnd(m) % (1ull << (b - 1));
    return r < lo ? lo : r > hi ? hi : r;
}

static void model_check_new(model_t *m, const arena_info_t *i, uint64_t size)
{
    const char *t = m->name;
    uint32_t last = arena_chunk_of(m->a, i->base + size - 1);
    if (i->base % ARENA_ALIGN || !arena_contains(m->a, i->base) ||
        !arena_contains(m->a, i->base + size - 1))
        fail_u64(t, "new allocation inside the arena, aligned", BASE, i->base);
    EXPECT(t, "info size", size, i->size);
    EXPECT(t, "info first chunk", arena_chunk_of(m->a, i->base), i->first_chunk);
    EXPECT(t, "info nchunks", last - i->first_chunk + 1, i->nchunks);
    for (size_t k = 0; k < m->n; k++)
        if (i->base < m->v[k].base + m->v[k].size && m->v[k].base < i->base + size)
            fail_u64(t, "overlap with a live allocation", m->v[k].base, i->base);
}

/* After a failed allocation nothing may have changed. */
static void model_check_failed(model_t *m, int err, const arena_stats_t *before, size_t nlog)
{
    arena_stats_t after;
    arena_stats(m->a, &after);
    if (err != -ENOMEM && err != -EIO)
        fail_u64(m->name, "alloc error", (uint64_t)-ENOMEM, (uint64_t)err);
    EXPECT(m->name, "failed alloc: stats unchanged", 1, stats_equal(before, &after));
    size_t firsts = 0, lasts = 0;
    for (size_t k = nlog; k < m->c.nlog; k++)
        *(m->c.log[k] > 0 ? &firsts : &lasts) += 1;
    EXPECT(m->name, "failed alloc: every first undone", firsts, lasts);
}

static void model_alloc(model_t *m)
{
    uint64_t size = rnd(m) % 5 < 3 ? rnd_log(m, 1, m->small_max)
                                   : rnd_log(m, m->small_max + 1, m->max_chunks * m->chunk);
    arena_stats_t before;
    arena_info_t i;
    size_t nlog = m->c.nlog;
    arena_stats(m->a, &before);
    if (rnd(m) % 50 == 0)
        m->c.fail_after = (int)(rnd(m) % 4);
    int err = arena_alloc(m->a, size, on_first, &m->c, &i);
    m->c.fail_after = -1;
    if (err < 0) {
        *(err == -ENOMEM ? &m->nomem : &m->undone) += 1;
        model_check_failed(m, err, &before, nlog);
        return;
    }
    model_check_new(m, &i, size);
    if (m->n == m->cap) {
        m->cap = m->cap ? 2 * m->cap : 256;
        m->v = realloc(m->v, m->cap * sizeof(*m->v));
        if (!m->v)
            abort();
    }
    m->v[m->n++] = (live_t){ i.base, size };
    m->bytes += size;
}

static void model_free(model_t *m)
{
    size_t k = rnd(m) % m->n;
    live_t l = m->v[k];
    arena_info_t i;
    if (l.size > 1 && rnd(m) % 8 == 0)
        EXPECT(m->name, "interior free", -EINVAL,
               arena_free(m->a, l.base + 1 + rnd(m) % (l.size - 1), on_last, &m->c, NULL));
    EXPECT(m->name, "free", 0, arena_free(m->a, l.base, on_last, &m->c, &i));
    EXPECT(m->name, "freed base", l.base, i.base);
    EXPECT(m->name, "freed size", l.size, i.size);
    m->v[k] = m->v[--m->n];
    m->bytes -= l.size;
    EXPECT(m->name, "lookup after free", -ENOENT, arena_lookup(m->a, l.base, NULL));
    EXPECT(m->name, "double free", -EINVAL, arena_free(m->a, l.base, on_last, &m->c, NULL));
}

/* A few random interior points of a random live allocation, its last byte and one past. */
static void model_lookups(model_t *m)
{
    live_t l = m->v[rnd(m) % m->n];
    arena_info_t i;
    for (int k = 0; k < 4; k++) {
        uint64_t off = k == 0 ? 0 : k == 1 ? l.size - 1 : rnd(m) % l.size;
        int err = arena_lookup(m->a, l.base + off, &i);
        EXPECT(m->name, "lookup interior", 0, err);
        if (!err && (i.base != l.base || i.size != l.size))
            fail_u64(m->name, "lookup interior: base", l.base, i.base);
    }
    if (arena_lookup(m->a, l.base + l.size, &i) == 0 && i.base != l.base + l.size)
        fail_u64(m->name, "one past the end: another allocation's base", l.base + l.size, i.base);
}

static uint32_t longest_free_run(const arena_t *a)
{
    uint32_t best = 0, run = 0;
    for (uint32_t k = 0; k < arena_chunk_count(a); k++) {
        run = arena_chunk_in_use(a, k) ? 0 : run + 1;
        best = run > best ? run : best;
    }
    return best;
}

static int live_cmp(const void *x, const void *y)
{
    uint64_t a = ((const live_t *)x)->base, b = ((const live_t *)y)->base;
    return a < b ? -1 : a > b;
}

/* arena_next from below the arena's base visits the model's live allocations in address
 * order, and from one past each base finds the next; from an interior address, the next. */
static void model_walk(model_t *m)
{
    arena_info_t i;
    uint64_t at = BASE - 1;
    qsort(m->v, m->n, sizeof(*m->v), live_cmp);
    for (size_t k = 0; k < m->n; k++, at = i.base + 1) {
        EXPECT(m->name, "walk finds the next allocation", 0, arena_next(m->a, at, &i));
        BAIL();
        if (i.base != m->v[k].base || i.size != m->v[k].size)
            fail_u64(m->name, "walk: base", m->v[k].base, i.base);
        uint64_t mid = m->v[k].base + m->v[k].size / 2 + 1, next = i.base;
        if (arena_next(m->a, mid, &i) != 0)
            i.base = 0;
        if (i.base != (k + 1 < m->n ? m->v[k + 1].base : 0))
            fail_u64(m->name, "walk from an interior address", k + 1 < m->n ? m->v[k + 1].base
                                                                             : 0, i.base);
        i.base = next;
        BAIL();
    }
    EXPECT(m->name, "walk ends", -ENOENT, arena_next(m->a, at, NULL));
}

/* Everything the arena says, chunk by chunk, against the model and the callbacks. */
static void model_full_check(model_t *m)
{
    uint32_t nch = arena_chunk_count(m->a), used = 0, cached = 0;
    uint32_t *refs = calloc(nch, sizeof(*refs));
    arena_stats_t st;
    if (!refs)
        abort();
    for (size_t k = 0; k < m->n; k++)
        for (uint32_t x = arena_chunk_of(m->a, m->v[k].base);
             x <= arena_chunk_of(m->a, m->v[k].base + m->v[k].size - 1); x++)
            refs[x]++;
    for (uint32_t x = 0; x < nch; x++) {
        EXPECT(m->name, "chunk refs", refs[x], arena_chunk_refs(m->a, x));
        EXPECT(m->name, "backed == in use", arena_chunk_in_use(m->a, x), m->c.backed[x]);
        used += arena_chunk_in_use(m->a, x);
        cached += arena_chunk_in_use(m->a, x) && !refs[x];
        BAIL();
    }
    arena_stats(m->a, &st);
    EXPECT(m->name, "stats live allocs", m->n, st.live_allocs);
    EXPECT(m->name, "stats live bytes", m->bytes, st.live_bytes);
    EXPECT(m->name, "stats chunk bytes", (uint64_t)used * m->chunk, st.chunk_bytes);
    EXPECT(m->name, "stats cached chunks", cached, st.cached_chunks);
    EXPECT(m->name, "stats largest free run", longest_free_run(m->a), st.largest_free_run);
    EXPECT(m->name, "protocol errors", 0, m->c.errors);
    model_walk(m);
    free(refs);
}

static void stress(const char *name, uint64_t size, uint64_t chunk, uint32_t max_chunks,
                   size_t target, int ops)
{
    model_t m = { .name = name, .rng = 0x9e3779b97f4a7c15ull ^ size ^ chunk, .chunk = chunk,
                  .max_chunks = max_chunks };
    m.a = fx_new(name, size, chunk, &m.c);
    m.small_max = chunk / 2 < ARENA_SMALL_MAX ? chunk / 2 : ARENA_SMALL_MAX;
    for (int op = 0; op < ops; op++) {
        int grow = m.n < target ? rnd(&m) % 10 < 6 : rnd(&m) % 10 < 4;
        if (grow || m.n == 0)
            model_alloc(&m);
        else
            model_free(&m);
        if (m.n)
            model_lookups(&m);
        if (op % 997 == 0 && rnd(&m) % 4 == 0)
            arena_trim(m.a, on_last, &m.c);
        if (op % 5000 == 4999)
            model_full_check(&m);
        BAIL();
    }
    while (m.n)
        model_free(&m);
    arena_trim(m.a, on_last, &m.c);
    model_full_check(&m);
    arena_stats_t st;
    arena_stats(m.a, &st);
    EXPECT(name, "empty at the end: chunk bytes", 0, st.chunk_bytes);
    EXPECT(name, "empty at the end: free run", arena_chunk_count(m.a), st.largest_free_run);
    printf("%s: %d ops, peak %" PRIu64 " live allocations, peak %" PRIu64 " MiB in chunks, %"
           PRIu64 " refused (no space), %" PRIu64 " undone (on_first failed)\n", name, ops,
           st.peak_live_allocs, st.peak_chunk_bytes / MiB, m.nomem, m.undone);
    fx_free(m.a, &m.c);
    free(m.v);
}

/* ------------------------------------------------------------------ throughput */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int count_cb(void *ctx, uint32_t chunk)
{
    (void)chunk;
    (*(uint64_t *)ctx)++;
    return 0;
}

/* Rounds of `live` allocations of sizes from gen, freed in a shuffled order. */
static void bench(const char *name, uint64_t arena_size, size_t live, int rounds,
                  uint64_t lo, uint64_t hi)
{
    arena_t *a;
    uint64_t *p = malloc(live * sizeof(*p)), calls = 0, seed = 7, lookups = 0;
    if (!p || arena_create(BASE, arena_size, 2 * MiB, &a))
        abort();
    double t0 = now(), tl = 0;
    for (int r = 0; r < rounds; r++) {
        for (size_t k = 0; k < live; k++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            arena_info_t i;
            if (arena_alloc(a, lo + (seed >> 33) % (hi - lo + 1), count_cb, &calls, &i))
                abort();
            p[k] = i.base;
        }
        double l0 = now();
        for (size_t k = 0; k < live; k++)
            lookups += arena_lookup(a, p[(k * 7919) % live] + 17, NULL) == 0;
        tl += now() - l0;
        for (size_t k = live; k > 1; k--) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            size_t j = (seed >> 33) % k;
            uint64_t x = p[j];
            p[j] = p[k - 1];
            p[k - 1] = x;
        }
        for (size_t k = 0; k < live; k++)
            if (arena_free(a, p[k], count_cb, &calls, NULL))
                abort();
    }
    double dt = now() - t0 - tl, ops = 2.0 * (double)live * rounds;
    printf("bench %-28s %8.2f M allocs+frees/s, %8.2f M lookups/s (%" PRIu64 " chunk calls)\n",
           name, ops / dt / 1e6, (double)lookups / tl / 1e6, calls);
    arena_destroy(a);
    free(p);
}

int main(void)
{
    test_create();
    test_small_sharing();
    test_cache();
    test_classes();
    test_alignment();
    test_large();
    test_first_fit();
    test_lookup();
    test_first_fails();
    test_bad_free();
    test_exhaustion();
    test_iterations();
    stress("stress_2MiB", 1 * GiB, 2 * MiB, 16, 400, 100000);
    stress("stress_64KiB_odd", 1000 * 64 * 1024, 64 * 1024, 40, 600, 100000);
    stress("stress_4KiB", 64 * MiB, 4096, 300, 1500, 100000);
    int s = SANITIZED ? 10 : 1;
    bench("small 256B-4KiB x1000", 1 * GiB, 1000, 2000 / s, 256, 4096);
    bench("small 1B-1MiB x1000", 16 * GiB, 1000, 500 / s, 1, ARENA_SMALL_MAX);
    bench("large 1-64MiB x4000, 1TiB", 1024 * GiB, 4000, 100 / s, ARENA_SMALL_MAX + 1,
          64 * MiB);
    if (failures) {
        printf("%d failure(s)\n", failures);
        return 1;
    }
    printf("all arena tests passed\n");
    return 0;
}
