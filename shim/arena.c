/* SPDX-License-Identifier: MIT */
/*
 * arena.c - the allocation arena: address placement inside one reserved range, and the O(1)
 * pointer-to-allocation index (see arena.h for the layout and the guarantees).
 *
 * Three structures:
 *  - the chunk index, one 8-byte record per chunk: a kind and a value packed in one word
 *    (free; head of a large allocation with its chunk count and the bytes used in its last
 *    chunk; body of a large allocation with its head; slab with its slab id; cached with the
 *    next cached chunk), so any address finds its allocation with one load and a few checks;
 *  - the free-chunk index: a bitmap (1 = free) under a segment tree whose leaves are the
 *    bitmap's 64-bit words and whose nodes keep the free run at their left edge, at their right
 *    edge and the longest inside; first fit of k chunks and "highest free chunk" walk one path
 *    from the root, and marking a run walks the touched leaves and their ancestors;
 *  - slabs, allocated separately for slab chunks only: a used-slot bitmap and the requested
 *    size of each slot, linked into a list of partly filled slabs per size class.
 */
#include "arena.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define NCLASSES   44           /* 256 B .. 1 MiB, four per power of two */
#define NONE       UINT32_MAX
#define KIND_SHIFT 29
#define VAL_MASK   ((1u << KIND_SHIFT) - 1)

enum { K_FREE, K_HEAD, K_BODY, K_SLAB, K_CACHED };

/* kind in the top three bits of tag; val: HEAD chunk count, BODY head chunk, SLAB slab id,
 * CACHED next cached chunk + 1 (0 ends the list).  aux: HEAD bytes used in the last chunk. */
typedef struct crec {
    uint32_t tag, aux;
} crec_t;

typedef struct slab {
    struct slab *prev, *next;   /* the partial list of its class */
    uint32_t chunk, cls, slot, nslots, nwords, live, hint, id;
    uint64_t used[];            /* nwords words of used bits, then nslots uint32 sizes */
} slab_t;

struct arena {
    uint64_t base, size, chunk, small_max;
    unsigned shift;
    uint32_t nchunks, nwords, leaves;
    crec_t *recs;
    uint64_t *freemap;
    uint32_t *pre, *suf, *best;         /* segment tree, heap order, 2 * leaves nodes */
    slab_t **slabs;                     /* by id */
    uint32_t *free_ids, nfree_ids, next_id, slab_cap;
    slab_t *partial[NCLASSES];
    uint32_t cache_head, ncached, cache_limit;
    uint32_t class_size[NCLASSES];
    arena_chunk_fn release;
    arena_stats_t st;
};

/* ---------------------------------------------------------------- small helpers */

static inline crec_t mkrec(unsigned kind, uint32_t val, uint32_t aux)
{
    return (crec_t){ (uint32_t)kind << KIND_SHIFT | val, aux };
}

static inline unsigned kind_of(crec_t r) { return r.tag >> KIND_SHIFT; }
static inline uint32_t val_of(crec_t r) { return r.tag & VAL_MASK; }

static inline uint32_t max3(uint32_t x, uint32_t y, uint32_t z)
{
    uint32_t m = x > y ? x : y;
    return m > z ? m : z;
}

static void peak(uint64_t *cur, uint64_t *top, uint64_t add)
{
    *cur += add;
    if (*cur > *top)
        *top = *cur;
}

/* Index of the class of a small request: sizes in 256-byte units u; classes 1..4, then four
 * per power of two: (2^p, 2^(p+1)] is cut in steps of 2^(p-2). */
static uint32_t class_of(uint64_t size)
{
    uint32_t u = (uint32_t)((size + ARENA_ALIGN - 1) / ARENA_ALIGN);
    if (u <= 4)
        return u - 1;
    unsigned p = 31 - (unsigned)__builtin_clz(u - 1);
    return 4 + 4 * (p - 2) + ((u - 1 - (1u << p)) >> (p - 2));
}

static uint32_t class_bytes(uint32_t idx)
{
    if (idx < 4)
        return (idx + 1) * ARENA_ALIGN;
    unsigned p = (idx - 4) / 4 + 2, j = (idx - 4) % 4 + 1;
    return ((1u << p) + j * (1u << (p - 2))) * ARENA_ALIGN;
}

/* ---------------------------------------------------------------- free-chunk index */

/* Longest run of set bits in w. */
static uint32_t word_best(uint64_t w)
{
    uint32_t n = 0;
    for (; w; n++)
        w &= w << 1;
    return n;
}

static void leaf_pull(arena_t *a, uint32_t i)
{
    uint64_t w = a->freemap[i - a->leaves];
    a->pre[i] = ~w ? (uint32_t)__builtin_ctzll(~w) : 64;
    a->suf[i] = ~w ? (uint32_t)__builtin_clzll(~w) : 64;
    a->best[i] = word_best(w);
}

/* Node i from its children, each clen chunks long. */
static void node_pull(arena_t *a, uint32_t i, uint32_t clen)
{
    uint32_t l = 2 * i, r = l + 1;
    a->pre[i] = a->pre[l] == clen ? clen + a->pre[r] : a->pre[l];
    a->suf[i] = a->suf[r] == clen ? clen + a->suf[l] : a->suf[r];
    a->best[i] = max3(a->best[l], a->best[r], a->suf[l] + a->pre[r]);
}

/* Recomputes the leaves of words [wlo, whi] and all their ancestors. */
static void tree_update(arena_t *a, uint32_t wlo, uint32_t whi)
{
    uint32_t lo = a->leaves + wlo, hi = a->leaves + whi, clen = 64;
    for (uint32_t i = lo; i <= hi; i++)
        leaf_pull(a, i);
    while (lo > 1) {
        lo >>= 1;
        hi >>= 1;
        for (uint32_t i = lo; i <= hi; i++)
            node_pull(a, i, clen);
        clen *= 2;
    }
}

/* Marks chunks [first, first + n) free (1) or used (0). */
static void mark(arena_t *a, uint32_t first, uint32_t n, int free)
{
    uint32_t last = first + n - 1, wlo = first / 64, whi = last / 64;
    for (uint32_t w = wlo; w <= whi; w++) {
        unsigned lo = w == wlo ? first % 64 : 0, hi = w == whi ? last % 64 : 63;
        uint64_t m = (~0ull >> (63 - hi)) & (~0ull << lo);
        a->freemap[w] = free ? a->freemap[w] | m : a->freemap[w] & ~m;
    }
    tree_update(a, wlo, whi);
}

/* Lowest bit position p with bits p .. p + k - 1 all set in w (k <= 64; one exists). */
static uint32_t word_fit(uint64_t w, uint32_t k)
{
    for (uint32_t have = 1; have < k;) {
        uint32_t s = have < k - have ? have : k - have;
        w &= w >> s;
        have += s;
    }
    return (uint32_t)__builtin_ctzll(w);
}

/* Address-ordered first fit: the lowest chunk starting k free chunks, or NONE. */
static uint32_t first_fit(const arena_t *a, uint32_t k)
{
    uint32_t i = 1, start = 0, len = 64 * a->leaves;
    if (a->best[1] < k)
        return NONE;
    while (i < a->leaves) {     /* invariant: best[i] >= k */
        uint32_t l = 2 * i, r = l + 1;
        len /= 2;
        if (a->best[l] >= k) {
            i = l;
        } else if (a->suf[l] + a->pre[r] >= k) {
            return start + len - a->suf[l];
        } else {
            i = r;
            start += len;
        }
    }
    return start + word_fit(a->freemap[i - a->leaves], k);
}

/* The highest free chunk, or NONE. */
static uint32_t last_free(const arena_t *a)
{
    uint32_t i = 1;
    if (a->best[1] == 0)
        return NONE;
    while (i < a->leaves)
        i = a->best[2 * i + 1] ? 2 * i + 1 : 2 * i;
    uint64_t w = a->freemap[i - a->leaves];
    return (i - a->leaves) * 64 + 63 - (uint32_t)__builtin_clzll(w);
}

/* ---------------------------------------------------------------- create / destroy */

static int check_geometry(uint64_t base, uint64_t size, uint64_t chunk)
{
    if (chunk < 4096 || chunk > (1ull << 30) || (chunk & (chunk - 1)))
        return -EINVAL;
    if (size == 0 || size % chunk || base % chunk || size - 1 > UINT64_MAX - base)
        return -EINVAL;
    return size / chunk > ARENA_MAX_CHUNKS ? -EINVAL : 0;
}

static int alloc_index(arena_t *a)
{
    a->nwords = (a->nchunks + 63) / 64;
    for (a->leaves = 1; a->leaves < a->nwords; a->leaves *= 2)
        ;
    a->recs = calloc(a->nchunks, sizeof(*a->recs));
    a->freemap = calloc(a->leaves, sizeof(*a->freemap));
    a->pre = calloc(2 * (size_t)a->leaves, sizeof(uint32_t));
    a->suf = calloc(2 * (size_t)a->leaves, sizeof(uint32_t));
    a->best = calloc(2 * (size_t)a->leaves, sizeof(uint32_t));
    if (!a->recs || !a->freemap || !a->pre || !a->suf || !a->best)
        return -ENOMEM;
    mark(a, 0, a->nchunks, 1);      /* bits and leaves past the end stay 0: used */
    return 0;
}

int arena_create(uint64_t base, uint64_t size, uint64_t chunk, arena_t **out)
{
    int err = check_geometry(base, size, chunk);
    if (err)
        return err;
    arena_t *a = calloc(1, sizeof(*a));
    if (!a)
        return -ENOMEM;
    a->base = base;
    a->size = size;
    a->chunk = chunk;
    a->shift = (unsigned)__builtin_ctzll(chunk);
    a->nchunks = (uint32_t)(size / chunk);
    a->small_max = chunk / 2 < ARENA_SMALL_MAX ? chunk / 2 : ARENA_SMALL_MAX;
    a->cache_limit = ARENA_CACHE_DEFAULT;
    for (uint32_t c = 0; c < NCLASSES; c++)
        a->class_size[c] = class_bytes(c);
    if (alloc_index(a) < 0) {
        arena_destroy(a);
        return -ENOMEM;
    }
    a->st.largest_free_run = a->best[1];
    *out = a;
    return 0;
}

void arena_destroy(arena_t *a)
{
    if (!a)
        return;
    for (uint32_t i = 0; i < a->next_id; i++)
        free(a->slabs[i]);
    free(a->slabs);
    free(a->free_ids);
    free(a->recs);
    free(a->freemap);
    free(a->pre);
    free(a->suf);
    free(a->best);
    free(a);
}

void arena_set_release(arena_t *a, arena_chunk_fn on_last) { a->release = on_last; }
void arena_set_cache_limit(arena_t *a, uint32_t chunks) { a->cache_limit = chunks; }

/* ---------------------------------------------------------------- slabs */

static inline uint32_t *slab_sizes(const slab_t *s)
{
    return (uint32_t *)(uintptr_t)(s->used + s->nwords);
}

static int id_get(arena_t *a, uint32_t *id)
{
    if (a->nfree_ids) {
        *id = a->free_ids[--a->nfree_ids];
        return 0;
    }
    if (a->next_id == a->slab_cap) {
        uint32_t cap = a->slab_cap ? 2 * a->slab_cap : 16;
        slab_t **s = realloc(a->slabs, cap * sizeof(*s));
        if (s)
            a->slabs = s;
        uint32_t *f = s ? realloc(a->free_ids, cap * sizeof(*f)) : NULL;
        if (!f)
            return -ENOMEM;
        a->free_ids = f;
        a->slab_cap = cap;
    }
    *id = a->next_id++;
    return 0;
}

static void id_put(arena_t *a, uint32_t id)
{
    a->slabs[id] = NULL;
    a->free_ids[a->nfree_ids++] = id;
}

/* Partial lists are kept in descending chunk order, and allocation takes the head: the choice
 * depends only on which slots are used, never on the history of the list, so a repeated
 * pattern of allocations repeats its addresses.  Inserting walks the list: O(partial slabs of
 * the class), a handful in practice. */
static void list_insert(slab_t **head, slab_t *s)
{
    slab_t *prev = NULL, *next = *head;
    while (next && next->chunk > s->chunk) {
        prev = next;
        next = next->next;
    }
    s->prev = prev;
    s->next = next;
    if (prev)
        prev->next = s;
    else
        *head = s;
    if (next)
        next->prev = s;
}

static void list_remove(slab_t **head, slab_t *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        *head = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->prev = s->next = NULL;
}

/* Slab metadata for class cls, its id reserved, not yet placed on a chunk. */
static slab_t *slab_make(arena_t *a, uint32_t cls)
{
    uint32_t slot = a->class_size[cls], nslots = (uint32_t)(a->chunk / slot);
    uint32_t nwords = (nslots + 63) / 64;
    slab_t *s = calloc(1, sizeof(*s) + nwords * sizeof(uint64_t) + nslots * sizeof(uint32_t));
    if (!s || id_get(a, &s->id) < 0) {
        free(s);
        return NULL;
    }
    s->cls = cls;
    s->slot = slot;
    s->nslots = nslots;
    s->nwords = nwords;
    if (nslots % 64)    /* bits past the last slot read as used */
        s->used[nwords - 1] = ~0ull << (nslots % 64);
    a->slabs[s->id] = s;
    return s;
}

static void slab_unmake(arena_t *a, slab_t *s)
{
    id_put(a, s->id);
    free(s);
}

/* The highest cached chunk, or NONE; *before: the cached chunk whose link points at it (NONE
 * when it is the head).  The cache holds at most a few chunks. */
static uint32_t cache_max(const arena_t *a, uint32_t *before)
{
    uint32_t best = NONE;
    *before = NONE;
    for (uint32_t c = a->cache_head, prev = NONE; c; prev = c - 1, c = val_of(a->recs[c - 1]))
        if (best == NONE || c - 1 > best) {
            best = c - 1;
            *before = prev;
        }
    return best;
}

static void cache_unlink(arena_t *a, uint32_t c, uint32_t before)
{
    uint32_t next = val_of(a->recs[c]);
    if (before == NONE)
        a->cache_head = next;
    else
        a->recs[before] = mkrec(K_CACHED, next, 0);
    a->ncached--;
}

/* A chunk for a new slab: the highest chunk that is cached (already in use, *fresh = 0) or
 * free (*fresh = 1, the caller reports it), or NONE.  Taking the highest of either keeps
 * placement a function of what is in use, not of the order in which slabs emptied. */
static uint32_t slab_chunk(arena_t *a, int *fresh)
{
    uint32_t before, cached = cache_max(a, &before), c = last_free(a);
    if (cached != NONE && (c == NONE || cached > c)) {
        cache_unlink(a, cached, before);
        *fresh = 0;
        return cached;
    }
    if (c != NONE)
        mark(a, c, 1, 0);
    *fresh = 1;
    return c;
}

/* Gives back a chunk taken by slab_chunk that never got a slab. */
static void slab_chunk_undo(arena_t *a, uint32_t c, int fresh)
{
    if (fresh) {
        a->recs[c] = mkrec(K_FREE, 0, 0);
        mark(a, c, 1, 1);
    } else {
        a->recs[c] = mkrec(K_CACHED, a->cache_head, 0);
        a->cache_head = c + 1;
        a->ncached++;
    }
}

/* A new slab of class cls on a chunk; *fresh tells whether the chunk came into use. */
static int slab_new(arena_t *a, uint32_t cls, arena_chunk_fn on_first, void *ctx, slab_t **out,
                    int *fresh)
{
    slab_t *s = slab_make(a, cls);
    if (!s)
        return -ENOMEM;
    uint32_t c = slab_chunk(a, fresh);
    if (c == NONE) {
        slab_unmake(a, s);
        return -ENOMEM;
    }
    s->chunk = c;
    a->recs[c] = mkrec(K_SLAB, s->id, 0);
    int err = *fresh && on_first ? on_first(ctx, c) : 0;
    if (err < 0) {
        slab_chunk_undo(a, c, 1);
        slab_unmake(a, s);
        return err;
    }
    list_insert(&a->partial[cls], s);
    a->st.slab_chunks++;
    *out = s;
    return 0;
}

/* Takes the lowest free slot of a partial slab (words before hint are full). */
static uint32_t slot_take(arena_t *a, slab_t *s, uint64_t size)
{
    while (!~s->used[s->hint])
        s->hint++;
    uint32_t bit = (uint32_t)__builtin_ctzll(~s->used[s->hint]);
    uint32_t i = s->hint * 64 + bit;
    s->used[s->hint] |= 1ull << bit;
    slab_sizes(s)[i] = (uint32_t)size;
    if (++s->live == s->nslots)
        list_remove(&a->partial[s->cls], s);
    return i;
}

static int alloc_small(arena_t *a, uint64_t size, arena_chunk_fn on_first, void *ctx,
                       arena_info_t *out)
{
    uint32_t cls = class_of(size);
    slab_t *s = a->partial[cls];
    int fresh = 0;
    if (!s) {
        int err = slab_new(a, cls, on_first, ctx, &s, &fresh);
        if (err < 0)
            return err;
    }
    uint32_t i = slot_take(a, s, size);
    *out = (arena_info_t){ arena_chunk_addr(a, s->chunk) + (uint64_t)i * s->slot, size,
                           s->chunk, 1 };
    if (fresh)
        peak(&a->st.chunk_bytes, &a->st.peak_chunk_bytes, a->chunk);
    return 0;
}

/* The empty slab s leaves service; its chunk is cached or released. */
static void slab_retire(arena_t *a, slab_t *s, arena_chunk_fn on_last, void *ctx)
{
    uint32_t c = s->chunk;
    list_remove(&a->partial[s->cls], s);
    slab_unmake(a, s);
    a->st.slab_chunks--;
    if (a->ncached < a->cache_limit) {
        slab_chunk_undo(a, c, 0);
        return;
    }
    slab_chunk_undo(a, c, 1);
    a->st.chunk_bytes -= a->chunk;
    if (on_last)
        on_last(ctx, c);
}

/* The slot of slab s that starts at offset off of its chunk, or NONE. */
static uint32_t slot_at(const slab_t *s, uint32_t off)
{
    uint32_t i = off / s->slot;
    if (off % s->slot || i >= s->nslots || !(s->used[i / 64] >> (i % 64) & 1))
        return NONE;
    return i;
}

static int free_small(arena_t *a, slab_t *s, uint64_t addr, arena_chunk_fn on_last, void *ctx,
                      arena_info_t *out)
{
    uint64_t cbase = arena_chunk_addr(a, s->chunk);
    uint32_t i = slot_at(s, (uint32_t)(addr - cbase));
    if (i == NONE)
        return -EINVAL;
    *out = (arena_info_t){ addr, slab_sizes(s)[i], s->chunk, 1 };
    if (s->live == s->nslots)
        list_insert(&a->partial[s->cls], s);
    s->used[i / 64] &= ~(1ull << (i % 64));
    if (i / 64 < s->hint)
        s->hint = i / 64;
    if (--s->live == 0)
        slab_retire(a, s, on_last, ctx);
    return 0;
}

/* ---------------------------------------------------------------- large allocations */

static void large_place(arena_t *a, uint32_t first, uint32_t n, uint32_t tail, int on)
{
    mark(a, first, n, !on);
    for (uint32_t i = 0; i < n; i++)
        a->recs[first + i] = !on ? mkrec(K_FREE, 0, 0)
                           : i ? mkrec(K_BODY, first, 0) : mkrec(K_HEAD, n, tail);
}

static int alloc_large(arena_t *a, uint64_t size, arena_chunk_fn on_first, void *ctx,
                       arena_info_t *out)
{
    if (size > a->size)
        return -ENOMEM;
    uint32_t n = (uint32_t)((size + a->chunk - 1) >> a->shift);
    uint32_t first = first_fit(a, n);
    if (first == NONE)
        return -ENOMEM;
    large_place(a, first, n, (uint32_t)(size - ((uint64_t)(n - 1) << a->shift)), 1);
    for (uint32_t i = 0; on_first && i < n; i++) {
        int err = on_first(ctx, first + i);
        if (err >= 0)
            continue;
        while (a->release && i-- > 0)
            a->release(ctx, first + i);
        large_place(a, first, n, 0, 0);
        return err;
    }
    *out = (arena_info_t){ arena_chunk_addr(a, first), size, first, n };
    peak(&a->st.chunk_bytes, &a->st.peak_chunk_bytes, (uint64_t)n << a->shift);
    return 0;
}

static int free_large(arena_t *a, uint32_t head, uint64_t addr, arena_chunk_fn on_last,
                      void *ctx, arena_info_t *out)
{
    crec_t r = a->recs[head];
    uint32_t n = val_of(r);
    if (addr != arena_chunk_addr(a, head))
        return -EINVAL;
    *out = (arena_info_t){ addr, ((uint64_t)(n - 1) << a->shift) + r.aux, head, n };
    large_place(a, head, n, 0, 0);
    a->st.chunk_bytes -= (uint64_t)n << a->shift;
    for (uint32_t i = 0; on_last && i < n; i++)
        on_last(ctx, head + i);
    return 0;
}

/* ---------------------------------------------------------------- the interface */

int arena_alloc(arena_t *a, uint64_t size, arena_chunk_fn on_first, void *ctx,
                arena_info_t *info)
{
    arena_info_t got;
    if (size == 0)
        return -EINVAL;
    int err = size <= a->small_max ? alloc_small(a, size, on_first, ctx, &got)
                                   : alloc_large(a, size, on_first, ctx, &got);
    if (err < 0)
        return err;
    peak(&a->st.live_bytes, &a->st.peak_live_bytes, size);
    peak(&a->st.live_allocs, &a->st.peak_live_allocs, 1);
    a->st.total_allocs++;
    if (info)
        *info = got;
    return 0;
}

int arena_free(arena_t *a, uint64_t addr, arena_chunk_fn on_last, void *ctx, arena_info_t *info)
{
    arena_info_t got;
    int err = -EINVAL;
    if (!arena_contains(a, addr))
        return -EINVAL;
    uint32_t c = arena_chunk_of(a, addr);
    crec_t r = a->recs[c];
    if (kind_of(r) == K_HEAD)
        err = free_large(a, c, addr, on_last, ctx, &got);
    else if (kind_of(r) == K_SLAB)
        err = free_small(a, a->slabs[val_of(r)], addr, on_last, ctx, &got);
    if (err < 0)
        return err;
    a->st.live_bytes -= got.size;
    a->st.live_allocs--;
    a->st.total_frees++;
    if (info)
        *info = got;
    return 0;
}

static int lookup_slab(const arena_t *a, const slab_t *s, uint64_t addr, arena_info_t *info)
{
    uint64_t cbase = arena_chunk_addr(a, s->chunk);
    uint32_t off = (uint32_t)(addr - cbase), i = off / s->slot;
    if (i >= s->nslots || !(s->used[i / 64] >> (i % 64) & 1))
        return -ENOENT;
    uint32_t size = slab_sizes(s)[i];
    if (off - i * s->slot >= size)
        return -ENOENT;
    if (info)
        *info = (arena_info_t){ cbase + (uint64_t)i * s->slot, size, s->chunk, 1 };
    return 0;
}

int arena_lookup(const arena_t *a, uint64_t addr, arena_info_t *info)
{
    if (!arena_contains(a, addr))
        return -ENOENT;
    uint32_t c = arena_chunk_of(a, addr);
    crec_t r = a->recs[c];
    switch (kind_of(r)) {
    case K_SLAB:
        return lookup_slab(a, a->slabs[val_of(r)], addr, info);
    case K_BODY:
        c = val_of(r);
        r = a->recs[c];
        /* fall through */
    case K_HEAD: {
        uint64_t base = arena_chunk_addr(a, c);
        uint64_t size = ((uint64_t)(val_of(r) - 1) << a->shift) + r.aux;
        if (addr - base >= size)
            return -ENOENT;
        if (info)
            *info = (arena_info_t){ base, size, c, val_of(r) };
        return 0;
    }
    default:
        return -ENOENT;
    }
}

/* The first used slot of slab s at or after slot i, or NONE. */
static uint32_t slot_next(const slab_t *s, uint32_t i)
{
    for (; i < s->nslots; i++)
        if (s->used[i / 64] >> (i % 64) & 1)
            return i;
    return NONE;
}

int arena_next(const arena_t *a, uint64_t addr, arena_info_t *info)
{
    uint32_t c = addr <= a->base ? 0 : addr - a->base < a->size ? arena_chunk_of(a, addr)
                                                                 : a->nchunks;
    for (; c < a->nchunks; c++) {
        crec_t r = a->recs[c];
        uint64_t cbase = arena_chunk_addr(a, c);
        if (kind_of(r) == K_HEAD && cbase >= addr) {
            if (info)
                *info = (arena_info_t){ cbase, ((uint64_t)(val_of(r) - 1) << a->shift) + r.aux,
                                        c, val_of(r) };
            return 0;
        }
        if (kind_of(r) == K_HEAD) {
            c += val_of(r) - 1;         /* an allocation that starts below addr: past it */
            continue;
        }
        if (kind_of(r) != K_SLAB)
            continue;
        const slab_t *s = a->slabs[val_of(r)];
        uint32_t i = cbase >= addr ? 0 : (uint32_t)((addr - cbase + s->slot - 1) / s->slot);
        if ((i = slot_next(s, i)) != NONE) {
            if (info)
                *info = (arena_info_t){ cbase + (uint64_t)i * s->slot, slab_sizes(s)[i], c, 1 };
            return 0;
        }
    }
    return -ENOENT;
}

uint32_t arena_trim(arena_t *a, arena_chunk_fn on_last, void *ctx)
{
    uint32_t n = 0;
    while (a->ncached) {
        uint32_t c = a->cache_head - 1;
        a->cache_head = val_of(a->recs[c]);
        a->ncached--;
        slab_chunk_undo(a, c, 1);
        a->st.chunk_bytes -= a->chunk;
        if (on_last)
            on_last(ctx, c);
        n++;
    }
    return n;
}

int arena_contains(const arena_t *a, uint64_t addr) { return addr - a->base < a->size; }

uint64_t arena_chunk_addr(const arena_t *a, uint32_t chunk)
{
    return a->base + ((uint64_t)chunk << a->shift);
}

uint32_t arena_chunk_of(const arena_t *a, uint64_t addr)
{
    return (uint32_t)((addr - a->base) >> a->shift);
}

uint32_t arena_chunk_count(const arena_t *a) { return a->nchunks; }
uint64_t arena_chunk_size(const arena_t *a) { return a->chunk; }

uint32_t arena_chunk_refs(const arena_t *a, uint32_t chunk)
{
    crec_t r = a->recs[chunk];
    switch (kind_of(r)) {
    case K_HEAD:
    case K_BODY:
        return 1;
    case K_SLAB:
        return a->slabs[val_of(r)]->live;
    default:
        return 0;
    }
}

int arena_chunk_in_use(const arena_t *a, uint32_t chunk)
{
    return kind_of(a->recs[chunk]) != K_FREE;
}

uint64_t arena_small_class(const arena_t *a, uint64_t size)
{
    return size && size <= a->small_max ? a->class_size[class_of(size)] : 0;
}

void arena_stats(const arena_t *a, arena_stats_t *out)
{
    *out = a->st;
    out->cached_chunks = a->ncached;
    out->largest_free_run = a->best[1];
}
