/* SPDX-License-Identifier: MIT */
/*
 * iter.c - the iteration detector: which launch begins each iteration of a training loop.
 *
 * The rule is stated in iter.h.  The state is small: per kernel key, its last two launches
 * (launch number, time, and the hash of the launch sequence before it), and for the loop the
 * anchor, the launch number where the current iteration began and the counts measured over the
 * last complete one.  Rule 2 compares two stretches of the launch sequence in O(log n) with a
 * polynomial hash of the sequence's prefixes (modulo 2^61 - 1): hash(i, j), the hash of the
 * launches [i, j), is H[j] - H[i] * B^(j - i), so no history of launches is kept.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iter.h"

#define MOD ((1ull << 61) - 1)
#define BASE (0x1f3a5c79e2d4b68bull % MOD)

enum { LEARNING, TRACKING };

/* x mod 2^61 - 1 for x < 2^63, without a division. */
static uint64_t reduce(uint64_t x)
{
    x = (x & MOD) + (x >> 61);
    return x >= MOD ? x - MOD : x;
}

/* a * b mod 2^61 - 1 for a, b < 2^61 - 1. */
static uint64_t mulmod(uint64_t a, uint64_t b)
{
    unsigned __int128 p = (unsigned __int128)a * b;

    return reduce((uint64_t)(p & MOD) + (uint64_t)(p >> 61));
}

static uint64_t powmod(uint64_t b, uint64_t e)
{
    uint64_t r = 1;

    for (; e; e >>= 1, b = mulmod(b, b))
        if (e & 1)
            r = mulmod(r, b);
    return r;
}

/* The hash of the launches between prefix hashes hi (before launch i) and hj (before j). */
static uint64_t span_hash(uint64_t hi, uint64_t hj, uint64_t len)
{
    uint64_t sub = mulmod(hi, powmod(BASE, len));

    return hj >= sub ? hj - sub : hj + MOD - sub;
}

int iter_create(iter_t **out)
{
    iter_t *it = calloc(1, sizeof(*it));

    if (!it)
        return -ENOMEM;
    it->index = -1;
    *out = it;
    return 0;
}

void iter_destroy(iter_t *it)
{
    if (!it)
        return;
    free(it->keys);
    free(it);
}

void iter_barrier(iter_t *it)
{
    it->barrier = 1;
    it->any_barrier = 1;
    it->quiet_below = 0;            /* the next launch is not quiet */
}

int64_t iter_current(const iter_t *it)
{
    return it->index;
}

/* The table grown to hold key; 0, or -1 when out of memory. */
static int grow_keys(iter_t *it, uint32_t key)
{
    uint32_t n = it->nkeys ? it->nkeys : 256;

    while (n <= key)
        n *= 2;
    iter_key_state_t *k = realloc(it->keys, (size_t)n * sizeof(*k));
    if (!k)
        return -1;
    memset(k + it->nkeys, 0, (size_t)(n - it->nkeys) * sizeof(*k));
    it->keys = k;
    it->nkeys = n;
    return 0;
}

/* The state of key, growing the table as needed; NULL when out of memory. */
static inline iter_key_state_t *key_state(iter_t *it, uint32_t key)
{
    if (__builtin_expect(key >= it->nkeys, 0) && grow_keys(it, key) < 0)
        return NULL;
    return &it->keys[key];
}

static void begin(iter_t *it, iter_mark_t *marks, int *m, uint64_t time)
{
    marks[(*m)++] = (iter_mark_t){ (uint64_t)++it->index, time };
}

/* Rule 3: does this launch of the anchor begin an iteration?  Measures the one that ends. */
static int track(iter_t *it, iter_mark_t *marks, uint64_t time)
{
    int m = 0;

    if (it->barrier || (it->per_iter && it->anchor_count == it->per_iter)) {
        it->length = it->n - it->start_n;
        it->per_iter = it->anchor_count;
        it->start_n = it->n;
        it->anchor_count = 1;
        begin(it, marks, &m, time);
    } else {
        it->anchor_count++;
    }
    return m;
}

static void start_tracking(iter_t *it, uint32_t key, uint32_t per_iter)
{
    it->state = TRACKING;
    it->anchor = key;
    it->start_n = it->n;
    it->length = 0;
    it->per_iter = per_iter;
    it->anchor_count = 1;
}

/* Rules 1 and 2 at a launch of key (state k, not yet updated with this launch).  Out of line:
 * a loop being tracked never comes here. */
static __attribute__((noinline)) int learn(iter_t *it, uint32_t key, const iter_key_state_t *k,
                                           iter_mark_t *marks, uint64_t time)
{
    int m = 0, first = it->index < 0;

    if (it->barrier && k->seen) {
        if (first)
            begin(it, marks, &m, k->last_t);
        begin(it, marks, &m, time);
        start_tracking(it, key, 0);
        return m;
    }
    if (it->any_barrier || k->seen < 2)
        return 0;
    uint64_t p = it->n - k->last_n;
    if (p < 2 || k->last_n - k->prev_n != p ||
        span_hash(k->prev_h, k->last_h, p) != span_hash(k->last_h, it->h, p))
        return 0;
    if (first) {
        begin(it, marks, &m, k->prev_t);
        begin(it, marks, &m, k->last_t);
    }
    begin(it, marks, &m, time);
    start_tracking(it, key, 1);
    it->length = p;
    return m;
}

/* Notes a launch of the key whose state is k at `time`.  Only rule 2 reads the launch
 * numbers and prefix hashes of the last two launches, and it is off for good after the first
 * barrier: from then on only what rule 1 reads (seen, last_t) is kept. */
static void note(iter_t *it, iter_key_state_t *k, uint64_t time)
{
    k->seen++;
    if (it->any_barrier) {
        k->last_t = time;
        return;
    }
    k->prev_n = k->last_n;
    k->prev_t = k->last_t;
    k->prev_h = k->last_h;
    k->last_n = it->n;
    k->last_t = time;
    k->last_h = it->h;
}

/* The prefix hash advanced by a launch of key (only rule 2 reads it: before any barrier). */
static __attribute__((noinline)) void hash_launch(iter_t *it, uint32_t key)
{
    it->h = reduce(mulmod(it->h, BASE) + (uint64_t)key + 1);
}

/* What iter_launch's usual path (iter.h) asks of the state, the barrier and the loss rule, as
 * one bound on the launch number, set after every launch that is not quiet (which any change
 * to them takes): while tracking after a barrier, below the launch that would lose the loop
 * (rule 4: more than 2 L + 16 launches into an iteration), else 0. */
static void set_quiet_below(iter_t *it)
{
    if (it->state != TRACKING || !it->any_barrier || it->barrier)
        it->quiet_below = 0;
    else if (it->length)
        it->quiet_below = it->start_n + 2 * it->length + 17;
    else
        it->quiet_below = UINT64_MAX;
}

/* A launch, in any state (rules 1 to 4). */
int iter_launch_slow(iter_t *it, uint32_t key, uint64_t time, iter_mark_t marks[ITER_MAX_MARKS])
{
    iter_key_state_t *k = key < ITER_MAX_KEY ? key_state(it, key) : NULL;
    int m = 0;

    if (it->state == TRACKING) {
        if (key == it->anchor)
            m = track(it, marks, time);
        if (!m && it->length && it->n - it->start_n > 2 * it->length + 16)
            it->state = LEARNING;
    }
    if (it->state == LEARNING && k)
        m = learn(it, key, k, marks, time);
    if (k)
        note(it, k, time);
    if (!it->any_barrier)
        hash_launch(it, key);
    it->n++;
    it->barrier = 0;
    set_quiet_below(it);
    return m;
}
