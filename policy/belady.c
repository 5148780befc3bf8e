/* SPDX-License-Identifier: MIT */
/*
 * belady.c - the planner proper: which chunk moves where, and when, chunk by chunk.
 *
 * The iteration is walked operation by operation, repeatedly (passes), with absolute times so
 * that next uses and prefetches look across the iteration's end.  Before operation i:
 *   1. demand: every chunk i reaches that is not on the GPU is brought there, making room by
 *      evicting the GPU chunk whose next use is furthest (Belady), never one i needs; an
 *      operation that reaches more chunks than the GPU holds runs in place (pol_op_in_place):
 *      only what it reaches on NVMe (or not yet placed) comes in, one of its own GPU chunks
 *      going to HOST, where it reaches it too, when the GPU holds nothing else;
 *   2. prefetch: the uses after i, in order, up to knobs.lookahead operations ahead (one
 *      iteration at most: the window), are brought in as long as there is free room or a GPU
 *      chunk whose next use lies beyond the window.  A prefetch never evicts a chunk that the
 *      window needs: evicting anything used sooner than the window's end (the "aggressive"
 *      rule of Cao, Felten, Karlin and Li) turns a loop over more than the GPU holds into
 *      LRU's traffic, every chunk evicted just before it is needed again.  A short window
 *      prefetches into less room, earlier; a long one waits for room: the search tries both.
 * Evicted chunks without a kept copy go to the fastest lower tier with room (PEER, HOST, then
 * NVME for nvme_ok buffers); when HOST is full, the nvme_ok chunk with the furthest next use,
 * the evicted one or one in HOST (demoted: evicted there, placed there at the start, or
 * reached there in place), goes to NVME.  Write-backs are skipped for dead
 * data (the next use overwrites the chunk whole, or its buffer dies first) and for clean data
 * (a chunk brought in with keep = 1 and not written since goes back to its kept copy).
 * Buffers born inside the iteration are materialised on the GPU at first use, with no copy;
 * dying buffers free their room.  Pinned buffers stay on the GPU.
 *
 * The plan is cyclic: passes are repeated from the state the previous one left until a pass
 * ends in the state it started from (usually the second); that pass's moves are the plan and
 * its start state the plan's.  If no pass converges within POL_MAX_PASSES, the last pass's
 * end state is reconciled with its start by moves after the last operation.
 * Cost: O(uses log uses) per pass (the lazy-deletion heaps).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pol_int.h"

#define POL_MAX_PASSES 6

typedef struct hent {
    uint64_t key;               /* absolute op of the chunk's next use */
    uint32_t chunk, stamp;
} hent_t;

typedef struct heap {
    hent_t *a;
    uint64_t n, cap;
} heap_t;

typedef struct st {
    const pol_input_t *in;
    const pol_index_t *ix;
    uint8_t *loc, *home, *cur, *alive, *pin;   /* per chunk (pin per chunk, from buffers) */
    uint32_t *stamp;
    uint64_t *nuu;              /* absolute next use, POL_INF */
    uint64_t used[POL_NTIERS];  /* chunks held, kept copies included */
    uint64_t nohome;            /* unpinned GPU chunks without a kept copy */
    uint64_t nohome_host;       /* of them, those that may not go to NVMe (peer or host only) */
    uint64_t dying[POL_NTIERS]; /* room freed by the deaths after the last operation */
    heap_t gpu, host;           /* eviction candidates; HOST chunks that may go to NVME */
    uint32_t *late;             /* chunks whose gpu heap entry waits (see apply) */
    uint64_t nlate, *late_key;  /* how many; per chunk: that entry's key */
    uint32_t *late_stamp;       /* per chunk: its stamp then (0: none waiting) */
    uint64_t f;                 /* prefetch frontier: absolute use */
    uint64_t now;               /* the operation being planned (absolute) */
    uint32_t pass, lookahead;
    pol_cplan_t *out;
    /* The uses of the operation in place being planned whose chunks may make room for it (see
     * room_in_place), each queue in use order: [0] those on the GPU as demand starts, [1] of
     * them, those with a kept copy in host memory, [2] those demand fetched (new, or from
     * NVMe: none with a kept copy in host memory).  A use joins a queue once at most: each
     * holds the most uses of an operation in place. */
    uint64_t *inpl[3];
    uint64_t inpl_head[3], inpl_n[3], inpl_cap;
} st_t;

/* ---------------------------------------------------------------- heaps */

static int hent_above(const hent_t *a, const hent_t *b)
{
    return a->key > b->key || (a->key == b->key && a->chunk < b->chunk);
}

static int heap_push(heap_t *h, uint64_t key, uint32_t chunk, uint32_t stamp)
{
    if (h->n == h->cap) {
        uint64_t nc = h->cap ? 2 * h->cap : 1024;
        hent_t *na = realloc(h->a, nc * sizeof(*na));
        if (!na)
            return -ENOMEM;
        h->a = na, h->cap = nc;
    }
    uint64_t i = h->n++;
    hent_t e = { key, chunk, stamp };
    while (i > 0 && hent_above(&e, &h->a[(i - 1) / 2])) {
        h->a[i] = h->a[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->a[i] = e;
    return 0;
}

static void heap_pop(heap_t *h)
{
    hent_t e = h->a[--h->n];
    uint64_t i = 0;
    for (;;) {
        uint64_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && hent_above(&h->a[c + 1], &h->a[c]))
            c++;
        if (!hent_above(&h->a[c], &e))
            break;
        h->a[i] = h->a[c];
        i = c;
    }
    if (h->n)
        h->a[i] = e;
}

/* The valid top of a heap whose entries are for chunks in `tier`, or NULL. */
static const hent_t *heap_top(st_t *s, heap_t *h, uint8_t tier)
{
    while (h->n) {
        const hent_t *t = &h->a[0];
        if (t->stamp == s->stamp[t->chunk] && s->loc[t->chunk] == tier)
            return t;
        heap_pop(h);
    }
    return NULL;
}

/* Drop the stale entries (chunks moved or used since) and heapify again: the heap keeps
 * O(chunks in the tier) entries, not O(uses). */
static void heap_compact(st_t *s, heap_t *h, uint8_t tier)
{
    uint64_t k = 0;
    for (uint64_t i = 0; i < h->n; i++) {
        const hent_t *e = &h->a[i];
        if (e->stamp == s->stamp[e->chunk] && s->loc[e->chunk] == tier)
            h->a[k++] = *e;
    }
    h->n = k;
    for (uint64_t i = k / 2; i-- > 0; ) {
        hent_t e = h->a[i];
        uint64_t j = i;
        for (;;) {
            uint64_t c = 2 * j + 1;
            if (c >= h->n)
                break;
            if (c + 1 < h->n && hent_above(&h->a[c + 1], &h->a[c]))
                c++;
            if (!hent_above(&h->a[c], &e))
                break;
            h->a[j] = h->a[c];
            j = c;
        }
        h->a[j] = e;
    }
}

/* heap_push, compacting first when stale entries outnumber the live ones 3 to 1. */
static int heap_push_st(st_t *s, heap_t *h, uint8_t tier, uint64_t key, uint32_t chunk,
                        uint32_t stamp)
{
    if (h->n >= 4 * (s->used[tier] + 256))
        heap_compact(s, h, tier);
    return heap_push(h, key, chunk, stamp);
}

/* ---------------------------------------------------------------- small helpers */

/* Absolute use au as an iteration (*q) and a relative use, without a division: au lies
 * within a few iterations after the current pass's start (the division is the fallback). */
static uint64_t rel_use(const st_t *s, uint64_t au, uint64_t *q)
{
    uint64_t n = s->ix->nuses, k = s->pass, b = (uint64_t)s->pass * n;
    if (!n) {
        *q = 0;
        return 0;
    }
    if (au < b || au - b >= 4 * n) {
        k = au / n;
        b = k * n;
    }
    while (au - b >= n)
        b += n, k++;
    *q = k;
    return au - b;
}

static uint64_t abs_op(const st_t *s, uint64_t au)
{
    if (au == POL_INF)
        return POL_INF;
    uint64_t q, r = rel_use(s, au, &q);
    return q * s->ix->nops + s->ix->use_op[r];
}

/* The access bits of absolute use au. */
static uint8_t use_acc(const st_t *s, uint64_t au)
{
    uint64_t q;
    return s->ix->use_acc[rel_use(s, au, &q)];
}

/* Does chunk c's next use read its data? */
static int needs(const st_t *s, uint32_t c)
{
    return s->nuu[c] != POL_INF && pol_needs_data(use_acc(s, s->nuu[c]));
}

static int has_room(const st_t *s, int t)
{
    return s->ix->cap[t] > s->used[t];
}

static int emit(st_t *s, uint32_t op, uint32_t c, int from, int to, int wb, int keep,
                uint64_t need_by)
{
    pol_cplan_t *o = s->out;
    if (o->n == o->cap) {
        uint64_t nc = o->cap ? 2 * o->cap : 4096;
        pol_cmove_t *na = realloc(o->mv, nc * sizeof(*na));
        if (!na)
            return -ENOMEM;
        o->mv = na, o->cap = nc;
    }
    o->mv[o->n++] = (pol_cmove_t){ op, 0, (uint8_t)from, (uint8_t)to, (uint8_t)wb,
                                   (uint8_t)keep, c, need_by };
    return 0;
}

static int nvme_ok(const st_t *s, uint32_t c)
{
    return s->ix->buf_nvme[s->ix->chunk_buf[c]] && s->ix->cap[POL_NVME] > 0;
}

/* Unpinned GPU chunk c gains (d = 1) or loses (d = -1) its place among those without a kept
 * copy. */
static void homeless(st_t *s, uint32_t c, int d)
{
    s->nohome += (uint64_t)(int64_t)d;
    if (!nvme_ok(s, c))
        s->nohome_host += (uint64_t)(int64_t)d;
}

/* ---------------------------------------------------------------- moves */

/* HOST chunk d goes to NVME before op (relative) `op`: 0, or -ENOMEM. */
static int demote(st_t *s, uint32_t op, uint32_t d)
{
    int rc = emit(s, op, d, POL_HOST, POL_NVME, needs(s, d), 0, POL_INF);
    if (rc)
        return rc;
    s->loc[d] = POL_NVME;
    s->stamp[d]++;
    s->used[POL_HOST]--, s->used[POL_NVME]++;
    return 0;
}

/* Where an evicted chunk without a kept copy goes (see the file's comment): a tier, after a
 * demotion HOST -> NVME if one is needed, POL_NONE when every tier is full. */
static int pick_lower(st_t *s, uint32_t c, uint32_t op, int *rc)
{
    if (has_room(s, POL_PEER))
        return POL_PEER;
    if (has_room(s, POL_HOST))
        return POL_HOST;
    int nvme = nvme_ok(s, c) && has_room(s, POL_NVME);
    const hent_t *h = has_room(s, POL_NVME) ? heap_top(s, &s->host, POL_HOST) : NULL;
    /* (never one the operation being planned reaches: where it runs in place, it reaches
     * its HOST chunks there) */
    if (h && h->key > s->now && (!nvme || h->key > abs_op(s, s->nuu[c]))) {
        *rc = demote(s, op, h->chunk);
        return *rc ? POL_NONE : POL_HOST;
    }
    return nvme ? POL_NVME : POL_NONE;
}

/* Evict GPU chunk v before op (relative) `op`, to its kept copy, or to tier `to` (when it
 * has room; POL_NONE: pick_lower's choice): 0, -ENOSPC, -ENOMEM. */
static int evict_to(st_t *s, uint32_t v, uint32_t op, int to)
{
    int need = needs(s, v), rc = 0, d, wb;
    if (s->home[v] != POL_NONE && (to == POL_NONE || to == s->home[v])) {
        d = s->home[v];
        wb = need && !s->cur[v];
        s->home[v] = POL_NONE;
    } else {
        if (s->home[v] != POL_NONE) {
            s->used[s->home[v]]--;
            s->home[v] = POL_NONE;
            homeless(s, v, 1);
        }
        d = to != POL_NONE && has_room(s, to) ? to : pick_lower(s, v, op, &rc);
        if (rc)
            return rc;
        if (d == POL_NONE)
            return -ENOSPC;
        s->used[d]++;
        homeless(s, v, -1);
        wb = need;
    }
    if ((rc = emit(s, op, v, POL_GPU, d, wb, 0, POL_INF)))
        return rc;
    s->used[POL_GPU]--;
    s->loc[v] = (uint8_t)d;
    s->stamp[v]++;
    if (s->nuu[v] != POL_INF && s->nuu[v] < s->f)
        s->f = s->nuu[v];
    if (d == POL_HOST && nvme_ok(s, v))
        return heap_push_st(s, &s->host, POL_HOST, abs_op(s, s->nuu[v]), v, s->stamp[v]);
    return 0;
}

static int evict(st_t *s, uint32_t v, uint32_t op)
{
    return evict_to(s, v, op, POL_NONE);
}

/* Push the heap entries apply() left waiting: those of chunks unchanged since (an entry of a
 * changed chunk would be stale), on the GPU into the gpu heap, in HOST (an operation reached
 * them in place) into the host heap where they may go to NVME. */
static int push_late(st_t *s)
{
    int rc = 0;
    for (uint64_t k = 0; k < s->nlate; k++) {
        uint32_t c = s->late[k], st = s->late_stamp[c];
        s->late_stamp[c] = 0;
        if (rc || st != s->stamp[c])
            continue;
        if (s->loc[c] == POL_GPU)
            rc = heap_push_st(s, &s->gpu, POL_GPU, s->late_key[c], c, st);
        else if (s->loc[c] == POL_HOST && nvme_ok(s, c))    /* (reached in place there) */
            rc = heap_push_st(s, &s->host, POL_HOST, s->late_key[c], c, st);
    }
    s->nlate = 0;
    return rc;
}

/* Make one GPU chunk of room before op, evicting only a chunk used after absolute op
 * `limit`: 1 done, 0 impossible, < 0 an error. */
static int make_room(st_t *s, uint32_t op, uint64_t limit)
{
    if (has_room(s, POL_GPU))
        return 1;
    int rc = push_late(s);
    if (rc)
        return rc;
    const hent_t *t = heap_top(s, &s->gpu, POL_GPU);
    if (!t || t->key <= limit)
        return 0;
    rc = evict(s, t->chunk, op);
    return rc ? rc : 1;
}

/* Bring chunk c to the GPU (room made) before op, for absolute op need_by, keeping its
 * source copy when force_keep is 1, never when 0, by the rule of the file's comment when -1. */
static int fetch_keep(st_t *s, uint32_t c, uint32_t op, uint64_t need_by, int force_keep)
{
    int from = s->loc[c], rc, keep = 0, wb = 0;
    if (from != POL_NONE && (needs(s, c) || force_keep == 1)) {
        /* (Room for every GPU chunk without a kept copy once c keeps its own, and, for those
         * that may not go to NVMe, in peer or host memory alone.) */
        uint64_t lower_free = 0, near_free = 0;
        for (int t = POL_PEER; t < POL_NTIERS; t++)
            lower_free += s->ix->cap[t] - s->used[t];
        for (int t = POL_PEER; t <= POL_HOST; t++)
            near_free += s->ix->cap[t] - s->used[t];
        wb = 1;
        keep = !(use_acc(s, s->nuu[c]) & POL_WRITE) && lower_free > s->nohome + 1 &&
               (s->nohome_host == 0 || near_free > s->nohome_host + 1);
        if (force_keep >= 0)
            keep = force_keep;
    }
    if ((rc = emit(s, op, c, from == POL_NONE ? POL_NTIERS : from, POL_GPU, wb, keep, need_by)))
        return rc;
    if (from != POL_NONE && !keep)
        s->used[from]--;
    s->home[c] = keep ? (uint8_t)from : POL_NONE;
    s->cur[c] = 1;
    if (!keep && !s->pin[c])
        homeless(s, c, 1);
    s->loc[c] = POL_GPU;
    s->used[POL_GPU]++;
    s->stamp[c]++;
    if (s->pin[c])
        return 0;
    return heap_push_st(s, &s->gpu, POL_GPU, abs_op(s, s->nuu[c]), c, s->stamp[c]);
}

static int fetch(st_t *s, uint32_t c, uint32_t op, uint64_t need_by)
{
    return fetch_keep(s, c, op, need_by, -1);
}

/* ---------------------------------------------------------------- one operation */

static void births(st_t *s, uint32_t i)
{
    const pol_index_t *ix = s->ix;
    uint64_t base = (uint64_t)s->pass * ix->nuses;
    for (uint32_t k = ix->born_first[i]; k < ix->born_first[i + 1]; k++) {
        uint32_t b = ix->born_list[k];
        for (uint64_t c = ix->chunk_base[b]; c < ix->chunk_base[b + 1]; c++) {
            s->alive[c] = 1;
            s->loc[c] = s->home[c] = POL_NONE;
            s->nuu[c] = ix->chunk_born_use[c] == POL_INF ? POL_INF
                                                         : ix->chunk_born_use[c] + base;
            s->stamp[c]++;
        }
    }
}

static void deaths(st_t *s, uint32_t i)
{
    const pol_index_t *ix = s->ix;
    for (uint32_t k = ix->dies_first[i]; k < ix->dies_first[i + 1]; k++) {
        uint32_t b = ix->dies_list[k];
        for (uint64_t c = ix->chunk_base[b]; c < ix->chunk_base[b + 1]; c++) {
            if (s->loc[c] != POL_NONE)
                s->used[s->loc[c]]--, s->dying[s->loc[c]] += i == ix->nops - 1;
            if (s->home[c] != POL_NONE)
                s->used[s->home[c]]--, s->dying[s->home[c]] += i == ix->nops - 1;
            else if (s->loc[c] == POL_GPU && !s->pin[c])
                homeless(s, (uint32_t)c, -1);
            s->loc[c] = s->home[c] = POL_NONE;
            s->alive[c] = 0;
            s->nuu[c] = POL_INF;
            s->stamp[c]++;
        }
    }
}

/* Use u of the operation in place being planned joins room_in_place's candidates (queue 0,
 * or 2 where demand fetched its chunk) if its chunk is on the GPU and not pinned. */
static void inpl_join(st_t *s, uint64_t u, int fetched)
{
    uint32_t c = s->ix->use_chunk[u];
    int q = fetched ? 2 : 0;
    if (s->loc[c] != POL_GPU || s->pin[c] || s->inpl_n[q] == s->inpl_cap)
        return;                         /* (full: not met, see st_t) */
    s->inpl[q][s->inpl_n[q]++] = u;
    if (!fetched && s->home[c] == POL_HOST)
        s->inpl[1][s->inpl_n[1]++] = u;
}

/* The first use in queue q whose chunk may still make room (those before it dropped), or
 * UINT64_MAX. */
static uint64_t inpl_first(st_t *s, int q)
{
    for (; s->inpl_head[q] < s->inpl_n[q]; s->inpl_head[q]++) {
        uint64_t u = s->inpl[q][s->inpl_head[q]];
        uint32_t c = s->ix->use_chunk[u];
        if (s->loc[c] == POL_GPU && !s->pin[c] && (q != 1 || s->home[c] == POL_HOST))
            return u;
    }
    return UINT64_MAX;
}

/* GPU room before operation i (absolute T), which runs in place, where every GPU chunk is
 * one it reaches or pinned: one of its own goes to HOST, where it reaches it as well (the
 * first in use order with a kept copy there, else the first), after a HOST chunk used later
 * than T went to NVMe if HOST is full.  The candidates come from queues in use order (the
 * chunks on the GPU as demand started, and those it fetched since), so that an operation
 * reaching many chunks is planned in time linear in them.  1 done, 0 impossible, < 0 an
 * error. */
static int room_in_place(st_t *s, uint32_t i, uint64_t T)
{
    uint64_t u = inpl_first(s, 1);
    if (u == UINT64_MAX) {
        uint64_t a = inpl_first(s, 0), b = inpl_first(s, 2);
        u = a < b ? a : b;
    }
    if (u == UINT64_MAX)
        return 0;
    uint32_t v = s->ix->use_chunk[u];
    if (s->home[v] == POL_HOST) {
        int rc = evict_to(s, v, i, POL_HOST);
        return rc ? rc : 1;
    }
    if (!has_room(s, POL_HOST)) {
        const hent_t *h = has_room(s, POL_NVME) ? heap_top(s, &s->host, POL_HOST) : NULL;
        if (!h || h->key <= T)
            return 0;
        int rc = demote(s, i, h->chunk);
        if (rc)
            return rc;
    }
    int rc = evict_to(s, v, i, POL_HOST);
    return rc ? rc : 1;
}

/* Everything operation i (absolute T) reaches onto the GPU; for one that runs in place
 * (pol_op_in_place), only its chunks that have no memory yet (born, never placed) or are on
 * NVMe, which no operation reaches there. */
static int demand(st_t *s, uint32_t i, uint64_t T)
{
    const pol_index_t *ix = s->ix;
    int in_place = pol_op_in_place(ix, i);
    if (in_place) {
        memset(s->inpl_head, 0, sizeof(s->inpl_head));
        memset(s->inpl_n, 0, sizeof(s->inpl_n));
        for (uint64_t u = ix->op_use[i]; u < ix->op_use[i + 1]; u++)
            inpl_join(s, u, 0);
    }
    for (uint64_t u = ix->op_use[i]; u < ix->op_use[i + 1]; u++) {
        uint32_t c = ix->use_chunk[u];
        if (s->loc[c] == POL_GPU ||
            (in_place && s->loc[c] != POL_NONE && s->loc[c] != POL_NVME))
            continue;
        int rc = make_room(s, i, T);
        if ((rc == 0 || rc == -ENOSPC) && in_place)
            rc = room_in_place(s, i, T);     /* (make_room's -ENOSPC changed nothing) */
        if (rc <= 0)
            return rc ? rc : -ENOSPC;
        if ((rc = fetch(s, c, i, T)))
            return rc;
        if (in_place)
            inpl_join(s, u, 1);
    }
    return 0;
}

/* Prefetch the uses after operation i (absolute T) while room can be made for them. */
static int prefetch(st_t *s, uint32_t i, uint64_t T)
{
    const pol_index_t *ix = s->ix;
    if (!ix->nuses)
        return 0;                       /* (no operation reaches a chunk: nothing to fetch) */
    uint64_t horizon = T + (s->lookahead ? s->lookahead : ix->nops);
    if (horizon > T + ix->nops - 1)
        horizon = T + ix->nops - 1;
    uint64_t lo = (uint64_t)s->pass * ix->nuses + ix->op_use[i + 1];
    if (s->f < lo)
        s->f = lo;
    for (;; s->f++) {
        uint64_t f = s->f, q, r = rel_use(s, f, &q), J = q * ix->nops + ix->use_op[r];
        uint32_t c = ix->use_chunk[r];
        if (J > horizon)
            return 0;
        if (s->loc[c] == POL_GPU || s->nuu[c] != f || !s->alive[c])
            continue;
        int rc = make_room(s, i, horizon);
        if (rc <= 0)
            return rc;
        if ((rc = fetch(s, c, i, J)))
            return rc;
    }
}

/* Operation i has run: accesses and next uses. */
static int apply(st_t *s, uint32_t i)
{
    const pol_index_t *ix = s->ix;
    uint64_t base = (uint64_t)s->pass * ix->nuses, op0 = (uint64_t)s->pass * ix->nops;
    for (uint64_t u = ix->op_use[i]; u < ix->op_use[i + 1]; u++) {
        uint32_t c = ix->use_chunk[u];
        uint64_t nx = ix->use_next[u];
        if (ix->use_acc[u] & POL_WRITE)
            s->cur[c] = 0;
        s->nuu[c] = nx == POL_INF ? POL_INF : nx + base;
        if (s->pin[c])
            continue;
        if (++s->stamp[c] == 0)
            s->stamp[c] = 1;    /* (0 marks no entry waiting) */
        /* The chunk's gpu heap entry waits until the heap is next read (make_room): only the
         * last of a chunk's uses until then makes one.  abs_op of the next use comes from
         * the index (no lookup far into use_op). */
        if (!s->late_stamp[c])
            s->late[s->nlate++] = c;
        s->late_stamp[c] = s->stamp[c];
        s->late_key[c] = nx == POL_INF ? POL_INF
                                       : op0 + (nx >= ix->nuses ? ix->nops : 0) +
                                             ix->use_next_op[u];
    }
    return 0;
}

static int step(st_t *s, uint32_t i)
{
    uint64_t T = (uint64_t)s->pass * s->ix->nops + i;
    s->now = T;
    births(s, i);
    int rc = demand(s, i, T);
    if (!rc)
        rc = prefetch(s, i, T);
    if (!rc)
        rc = apply(s, i);
    deaths(s, i);
    return rc;
}

/* ---------------------------------------------------------------- passes */

/* The state before the first pass: chunks alive at op 0 in HOST (then NVME, PEER, the GPU),
 * pinned ones on the GPU. */
static int initial(st_t *s)
{
    const pol_index_t *ix = s->ix;
    static const int order[] = { POL_HOST, POL_NVME, POL_PEER, POL_GPU };
    for (uint64_t c = 0; c < ix->nchunks; c++) {
        uint32_t b = ix->chunk_buf[c];
        s->loc[c] = s->home[c] = POL_NONE;
        s->alive[c] = ix->buf_wrap[b] == 0 || ix->buf_wrap[b] == 2;
        s->nuu[c] = ix->chunk_first[c];
        if (!s->alive[c])
            continue;
        int t = POL_GPU;
        for (int k = 0; !s->pin[c] && k < 4; k++) {
            t = order[k];
            if (has_room(s, t) && (t != POL_NVME || ix->buf_nvme[b]))
                break;
        }
        if (!has_room(s, t))
            return -ENOSPC;
        s->loc[c] = (uint8_t)t;
        s->used[t]++;
        int rc = 0;
        if (t == POL_GPU && !s->pin[c]) {
            homeless(s, (uint32_t)c, 1);
            rc = heap_push(&s->gpu, abs_op(s, s->nuu[c]), (uint32_t)c, s->stamp[c]);
        } else if (t == POL_HOST && nvme_ok(s, c)) {
            rc = heap_push(&s->host, abs_op(s, s->nuu[c]), (uint32_t)c, s->stamp[c]);
        }
        if (rc)
            return rc;
    }
    return 0;
}

static int state_equal(const st_t *s, const uint8_t *snap)
{
    uint64_t n = s->ix->nchunks;
    for (uint64_t c = 0; c < n; c++)
        if (s->loc[c] != snap[c] || s->home[c] != snap[n + c] ||
            (s->home[c] != POL_NONE && s->cur[c] != snap[2 * n + c]))
            return 0;
    return 1;
}

static void snapshot(const st_t *s, uint8_t *snap)
{
    uint64_t n = s->ix->nchunks;
    memcpy(snap, s->loc, n);
    memcpy(snap + n, s->home, n);
    memcpy(snap + 2 * n, s->cur, n);
}

static int st_alloc(st_t *s, const pol_input_t *in, const pol_index_t *ix, const uint8_t *pin)
{
    uint64_t n = ix->nchunks ? ix->nchunks : 1;
    memset(s, 0, sizeof(*s));
    s->in = in, s->ix = ix;
    s->loc = malloc(n), s->home = malloc(n), s->cur = calloc(n, 1), s->alive = calloc(n, 1);
    s->pin = malloc(n);
    s->stamp = calloc(n, sizeof(uint32_t));
    s->nuu = malloc(n * sizeof(uint64_t));
    s->late = malloc(n * sizeof(uint32_t));
    s->late_key = malloc(n * sizeof(uint64_t));
    s->late_stamp = calloc(n, sizeof(uint32_t));
    uint64_t most = 1;
    for (uint32_t i = 0; i < ix->nops; i++)
        if (pol_op_in_place(ix, i) && ix->op_use[i + 1] - ix->op_use[i] > most)
            most = ix->op_use[i + 1] - ix->op_use[i];
    for (int q = 0; q < 3; q++)
        s->inpl[q] = malloc(most * sizeof(uint64_t));
    s->inpl_cap = most;
    if (!s->loc || !s->home || !s->cur || !s->alive || !s->pin || !s->stamp || !s->nuu ||
        !s->late || !s->late_key || !s->late_stamp || !s->inpl[0] || !s->inpl[1] || !s->inpl[2])
        return -ENOMEM;
    for (uint64_t c = 0; c < ix->nchunks; c++)
        s->pin[c] = pin[ix->chunk_buf[c]];
    return 0;
}

static void st_free(st_t *s)
{
    free(s->loc), free(s->home), free(s->cur), free(s->alive), free(s->pin);
    free(s->stamp), free(s->nuu);
    free(s->late), free(s->late_key), free(s->late_stamp);
    free(s->inpl[0]), free(s->inpl[1]), free(s->inpl[2]);
    free(s->gpu.a), free(s->host.a);
}

void pol_cplan_free(pol_cplan_t *cp)
{
    free(cp->mv);
    free(cp->start_tier);
    free(cp->start_home);
    memset(cp, 0, sizeof(*cp));
}

/* The plan's start state from a snapshot: tiers, and the kept copies. */
static int start_state(const st_t *s, const uint8_t *snap, pol_cplan_t *out)
{
    uint64_t n = s->ix->nchunks;
    out->start_tier = malloc(n ? n : 1);
    out->start_home = malloc(n ? n : 1);
    if (!out->start_tier || !out->start_home)
        return -ENOMEM;
    for (uint64_t c = 0; c < n; c++) {
        out->start_tier[c] = snap[c] == POL_NONE ? POL_NTIERS : snap[c];
        out->start_home[c] = snap[n + c] == POL_NONE ? POL_NTIERS : snap[n + c];
    }
    return 0;
}

/* One step of chunk c towards the snapshot's state (tier t, kept copy h) after the last
 * operation: 1 a step was made, 0 none can be now (no room), < 0 an error.  A chunk goes
 * between lower tiers through the GPU (host -> nvme directly), and to a kept copy's tier
 * before it is fetched from there with keep. */
static int reconcile_step(st_t *s, uint32_t c, uint8_t t, uint8_t h)
{
    uint32_t op = s->ix->nops - 1;
    int x = s->loc[c], rc;
    if (t == POL_NONE)
        return -EDOM;           /* a chunk materialised early cannot be unmade */
    if (x == POL_GPU) {
        if (t == POL_GPU && s->home[c] != POL_NONE)
            rc = evict_to(s, c, op, s->home[c]);
        else if ((t == POL_GPU ? h : t) != POL_NONE && has_room(s, t == POL_GPU ? h : t))
            rc = evict_to(s, c, op, t == POL_GPU ? h : t);
        else
            return 0;
        return rc ? rc : 1;
    }
    if (x == POL_HOST && t == POL_NVME) {
        if (!has_room(s, POL_NVME))
            return 0;
        rc = demote(s, op, c);
        return rc ? rc : 1;
    }
    if (!has_room(s, POL_GPU))
        return 0;
    rc = fetch_keep(s, c, op, abs_op(s, s->nuu[c]), t == POL_GPU && h == x);
    return rc ? rc : 1;
}

/* Free a GPU chunk of room for reconciling: evict a chunk that is where it should be, to
 * its kept copy if one has one, else preferably to HOST (it comes back last).  1 done, 0
 * none, < 0 an error. */
static int reconcile_scratch(st_t *s, uint8_t *scratched)
{
    for (int pass = 0; pass < 2; pass++)
        for (uint64_t c = 0; c < s->ix->nchunks; c++)
            if (s->loc[c] == POL_GPU && !s->pin[c] && !scratched[c] &&
                (pass || s->home[c] != POL_NONE)) {
                int to = s->home[c] != POL_NONE ? s->home[c] : POL_HOST;
                int rc = evict_to(s, (uint32_t)c, s->ix->nops - 1, to);
                scratched[c] = 1;
                return rc == -ENOSPC ? 0 : rc ? rc : 1;
            }
    return 0;
}

/* One sweep of reconcile_step over the chunks not where snap has them, the scratched ones
 * only when `all`: 1 progress, 0 none, 2 nothing left, < 0 an error. */
static int reconcile_sweep(st_t *s, const uint8_t *snap, const uint8_t *scratched, int all)
{
    uint64_t n = s->ix->nchunks;
    int progress = 0, left = 0;
    for (uint64_t c = 0; c < n; c++) {
        if (s->loc[c] == snap[c] && s->home[c] == snap[n + c] &&
            (s->home[c] == POL_NONE || s->cur[c] || !snap[2 * n + c]))
            continue;           /* (a kept copy the pass began current and left stale: not) */
        left = 1;
        if (scratched[c] && !all)
            continue;
        int rc = reconcile_step(s, (uint32_t)c, snap[c], snap[n + c]);
        if (rc < 0)
            return rc;
        progress |= rc;
    }
    return left ? progress : 2;
}

/* Bring the end state of the last pass back to its start state (snap) by moves after the last
 * operation: 0, or -EDOM when no order of moves fits in the capacities.  Those moves come
 * before the frees of the buffers that die after the last operation: their room is not yet
 * free. */
static int reconcile(st_t *s, const uint8_t *snap)
{
    uint64_t n = s->ix->nchunks, first = s->out->n, rounds = 0;
    uint8_t *scratched = calloc(n ? n : 1, 1);
    int rc = scratched ? 0 : -ENOMEM;
    for (int t = 0; t < POL_NTIERS; t++)
        s->used[t] += s->dying[t];
    while (!rc) {
        if (++rounds > 4 * n + 64) {
            rc = -EDOM;
            break;
        }
        rc = reconcile_sweep(s, snap, scratched, 0);
        if (rc == 0)
            rc = reconcile_sweep(s, snap, scratched, 1);
        if (rc == 2) {
            rc = 0;
            break;
        }
        if (rc == 0 && (rc = reconcile_scratch(s, scratched)) == 0)
            rc = -EDOM;
        if (rc == 1)
            rc = 0;
    }
    free(scratched);
    for (int t = 0; t < POL_NTIERS; t++)
        s->used[t] -= s->dying[t];
    for (uint64_t k = first; !rc && k < s->out->n; k++)
        s->out->mv[k].after = 1;
    return rc;
}

int pol_belady(const pol_input_t *in, const pol_index_t *ix, const uint8_t *pin,
               uint32_t lookahead, pol_cplan_t *out)
{
    st_t s;
    memset(&s, 0, sizeof(s));
    memset(out, 0, sizeof(*out));
    uint8_t *snap = malloc(3 * (ix->nchunks ? ix->nchunks : 1));
    int rc = snap ? st_alloc(&s, in, ix, pin) : -ENOMEM;
    s.out = out;
    s.lookahead = lookahead;
    if (!rc)
        rc = initial(&s);
    for (uint32_t p = 0; !rc && p < POL_MAX_PASSES; p++) {
        s.pass = p;
        snapshot(&s, snap);
        memset(s.dying, 0, sizeof(s.dying));
        out->n = 0;
        for (uint32_t i = 0; !rc && i < ix->nops; i++)
            rc = step(&s, i);
        if (!rc && p > 0 && state_equal(&s, snap)) {
            out->converged = 1;
            break;
        }
    }
    out->pass = s.pass;
    if (!rc)
        rc = start_state(&s, snap, out);
    if (!rc && !out->converged)
        rc = reconcile(&s, snap);
    st_free(&s);
    free(snap);
    if (rc)
        pol_cplan_free(out);
    return rc;
}
