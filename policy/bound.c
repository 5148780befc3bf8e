/* SPDX-License-Identifier: MIT */
/*
 * bound.c - how many chunks must come to the GPU in one iteration, and how many must go back
 * with a copy, whatever the plan: the lower bound that predictions are measured against
 * (replay.c's bound_ns).
 *
 * Chunks in: two bounds, both valid, the larger taken:
 *
 *   pol_forced_chunks - at some point more chunks hold data a later use reads than the GPU
 *   holds; the excess comes in at least once.  Cheap and loose: it counts one crossing of the
 *   capacity, while a loop that cycles through more memory than the GPU holds pays on every
 *   turn.
 *
 *   pol_least_fetches - Belady's MIN.  Evicting the chunk whose next use is farthest brings
 *   in the fewest chunks of any demand schedule on a given reference string, and a plan that
 *   prefetches can be turned into a demand schedule with no more copies, so no plan copies
 *   fewer chunks in than MIN does on the same uses.  The uses are taken one at a time (an
 *   operation's chunks need not be on the GPU together: a relaxation, which only lowers the
 *   count), uses of operations in place are left out (they are served where the chunk is),
 *   and a chunk whose next use overwrites it whole holds nothing worth keeping: its next life
 *   is a new page whose first use costs no copy under any schedule.
 *
 *   The iteration repeats, and a plan is cyclic: F chunks in per iteration from a start state
 *   of at most C chunks on the GPU.  Running k iterations from an empty GPU, fetching that
 *   start state first and then following the plan costs at most C + k F; MIN costs no more.
 *   So F >= (MIN_k - C) / k, and F is a whole number.
 *
 * Chunks back: pol_least_writebacks - the same kind of count over the gaps in which a chunk
 * holds data that was written on the GPU and is read later: away from the GPU during one, it
 * went with a copy.  Since a launch counts as writing every chunk it reaches (policy.h), most
 * chunks a training loop brings in go back with a copy, and the link's two directions share
 * its duplex rate: a bound of the chunks in alone would be far below what any plan reaches.
 */
#include <errno.h>
#include <stdlib.h>

#include "pol_int.h"

#define LEAST_PASSES 4          /* k above: the bound approaches MIN's steady rate as 1/k */

/* ---------------------------------------------------------------- pol_forced_chunks */

/* Take a position x (before op x) and the set L(x) of the chunks whose next use, within one
 * iteration from x, needs data they hold at x (pol_needs_data: not a whole overwrite, in the
 * same life).  At x the GPU holds at most gpu_cap of them, so at least |L(x)| - gpu_cap are
 * elsewhere, and each of those distinct chunks comes to the GPU, with a copy, before its
 * next use, all within the one iteration after x.  So max over x of |L(x)| - gpu_cap, counted
 * here over a difference array with wrap-around.  Only what the input says counts: a buffer
 * described as permanent holds data between its last use and its first, one born and dying
 * inside the iteration holds none before its first use or after its last. */
uint64_t pol_forced_chunks(const pol_input_t *in, const pol_index_t *ix)
{
    (void)in;
    uint32_t n = ix->nops;
    int64_t *d = calloc(n + 1, sizeof(int64_t));
    if (!d)
        return 0;
    for (uint64_t u = 0; u < ix->nuses; u++) {
        uint64_t nx = ix->use_next[u];
        if (nx == POL_INF || !pol_needs_data(ix->use_acc[nx % ix->nuses]) ||
            pol_op_in_place(ix, ix->use_op[nx % ix->nuses]))
            continue;               /* (an operation in place reads it where it is) */
        uint32_t a = ix->use_op[u] + 1, b = ix->use_op[nx % ix->nuses];  /* [a, b] */
        if (nx < ix->nuses) {
            d[a]++, d[b + 1]--;
        } else {                /* wraps: [a, n) and [0, b] */
            d[a]++, d[n]--;
            d[0]++, d[b + 1]--;
        }
    }
    int64_t run = 0, most = 0;
    for (uint32_t x = 0; x < n; x++) {
        run += d[x];
        if (run > most)
            most = run;
    }
    free(d);
    return (uint64_t)most > ix->gpu_cap ? (uint64_t)most - ix->gpu_cap : 0;
}

/* ---------------------------------------------------------------- pol_least_fetches */

/* The chunks on the GPU, a max-heap on the time of each one's next use (POL_INF first); the
 * keys sit in the heap's entries, where the comparisons read them. */
typedef struct entry {
    uint64_t key;               /* absolute time of the next use that needs the chunk */
    uint32_t c;
} entry_t;

typedef struct heap {
    entry_t *e;                 /* heap order */
    uint32_t *pos;              /* nchunks: position in e, UINT32_MAX when not on the GPU */
    uint32_t n;
} heap_t;

static void heap_set(heap_t *h, uint32_t i, entry_t x)
{
    h->e[i] = x;
    h->pos[x.c] = i;
}

static void heap_up(heap_t *h, uint32_t i)
{
    entry_t x = h->e[i];
    while (i > 0 && h->e[(i - 1) / 2].key < x.key) {
        heap_set(h, i, h->e[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    heap_set(h, i, x);
}

static void heap_down(heap_t *h, uint32_t i)
{
    entry_t x = h->e[i];
    for (;;) {
        uint32_t l = 2 * i + 1, big = l;
        if (l >= h->n)
            break;
        if (l + 1 < h->n && h->e[l + 1].key > h->e[l].key)
            big = l + 1;
        if (h->e[big].key <= x.key)
            break;
        heap_set(h, i, h->e[big]);
        i = big;
    }
    heap_set(h, i, x);
}

/* Take out the chunk whose next use is farthest (the top). */
static void heap_pop(heap_t *h)
{
    h->pos[h->e[0].c] = UINT32_MAX;
    if (--h->n > 0) {
        h->e[0] = h->e[h->n];
        heap_down(h, 0);
    }
}

/* Chunk c is used, its next use at `key`: 1 when it had to come in (evicting the farthest). */
static int heap_use(heap_t *h, uint32_t c, uint64_t key, uint64_t cap)
{
    uint32_t i = h->pos[c];
    if (i != UINT32_MAX) {
        uint64_t old = h->e[i].key;
        h->e[i].key = key;
        key > old ? heap_up(h, i) : heap_down(h, i);
        return 0;
    }
    if (h->n == cap)
        heap_pop(h);
    h->e[h->n++] = (entry_t){ .key = key, .c = c };
    heap_up(h, h->n - 1);
    return 1;
}

/* Of each use u (first iteration): the time of the next use that needs the chunk on the GPU,
 * within one iteration, relative to the first iteration (maybe >= nuses: in the next one);
 * POL_INF when there is none or it overwrites the chunk whole (what the chunk holds is dead
 * until then).  Uses in place are passed over.  In time linear in the uses: backwards over
 * two iterations, at[c] holding the first use not in place from chunk c's last use seen on
 * (POL_INF: none in that life). */
static void next_needs(const pol_index_t *ix, uint64_t *need, uint64_t *at)
{
    uint64_t nu = ix->nuses;
    for (uint64_t c = 0; c < ix->nchunks; c++)
        at[c] = POL_INF;
    for (uint64_t x = 2 * nu; x-- > 0;) {
        uint64_t u = x % nu, f = ix->use_next[u] == POL_INF ? POL_INF : at[ix->use_chunk[u]];
        if (x < nu)
            need[u] = f != POL_INF && f <= x + nu && pol_needs_data(ix->use_acc[f % nu])
                          ? f : POL_INF;
        at[ix->use_chunk[u]] = pol_op_in_place(ix, ix->use_op[u]) ? f : x;
    }
}

enum { SKIP = 1, COPIES = 2 };

/* What the passes read of each use, in order: its next use that needs it (next_needs) and
 * flags: SKIP, an operation in place; COPIES, a miss there copies: it reads data an earlier
 * use left in this life (maybe in the previous iteration); a miss at a life's first use does
 * not, nor one right after a use in place (which may have written the chunk on the GPU, given
 * GPU memory at its birth: the uses in place are not taken, so MIN cannot tell). */
static int least_prepare(const pol_index_t *ix, uint64_t *need, uint8_t *flag)
{
    uint64_t nu = ix->nuses;
    uint64_t *at = malloc((ix->nchunks ? ix->nchunks : 1) * sizeof(uint64_t));
    if (!at)
        return -ENOMEM;
    next_needs(ix, need, at);
    free(at);
    for (uint64_t u = 0; u < nu; u++)
        flag[u] = 0;
    for (uint64_t u = 0; u < nu; u++)
        if (ix->use_next[u] != POL_INF && !pol_op_in_place(ix, ix->use_op[u]))
            flag[ix->use_next[u] % nu] |= COPIES;
    for (uint64_t u = 0; u < nu; u++) {
        if (!pol_needs_data(ix->use_acc[u]))
            flag[u] &= ~COPIES;
        if (pol_op_in_place(ix, ix->use_op[u]))
            flag[u] |= SKIP;
    }
    return 0;
}

uint64_t pol_least_fetches(const pol_input_t *in, const pol_index_t *ix)
{
    (void)in;
    uint64_t nu = ix->nuses, cap = ix->gpu_cap, misses = 0;
    if (!cap || ix->nchunks <= cap)
        return 0;                       /* (everything fits: nothing comes in twice) */
    heap_t h = { .e = malloc(cap * sizeof(entry_t)),
                 .pos = malloc(ix->nchunks * sizeof(uint32_t)) };
    uint64_t *need = malloc(nu * sizeof(uint64_t));
    uint8_t *flag = malloc(nu);
    if (h.e && h.pos && need && flag && !least_prepare(ix, need, flag)) {
        for (uint64_t c = 0; c < ix->nchunks; c++)
            h.pos[c] = UINT32_MAX;
        for (uint64_t p = 0; p < LEAST_PASSES; p++)
            for (uint64_t u = 0; u < nu; u++) {
                if (flag[u] & SKIP)
                    continue;
                uint64_t key = need[u] == POL_INF ? POL_INF : p * nu + need[u];
                misses += heap_use(&h, ix->use_chunk[u], key, cap) && (flag[u] & COPIES);
            }
    }
    free(h.e), free(h.pos), free(need), free(flag);
    return misses > cap ? (misses - cap + LEAST_PASSES - 1) / LEAST_PASSES : 0;
}

/* ---------------------------------------------------------------- pol_least_writebacks */

/* Take chunk c out of the heap, wherever it sits. */
static void heap_remove(heap_t *h, uint32_t c)
{
    uint32_t i = h->pos[c];
    h->pos[c] = UINT32_MAX;
    if (i == --h->n)
        return;
    uint64_t old = h->e[i].key;
    heap_set(h, i, h->e[h->n]);
    h->e[i].key > old ? heap_up(h, i) : heap_down(h, i);
}

/* Of use u: the relative time of the next use whose data u wrote, when the chunk must keep
 * that data until then (a dirty gap: evicted in between, it is copied out), else POL_INF.
 * Counted only where no plan can avoid the copy: u writes (a launch's references count as
 * writes, see policy.h), it is not in place, and the next use in the same life (within one
 * iteration: use_next) reads and is not in place (left out to keep the count simple: a gap
 * left out only lowers it). */
static uint64_t dirty_until(const pol_index_t *ix, uint64_t u)
{
    uint64_t nu = ix->nuses, nx = ix->use_next[u];
    if (!(ix->use_acc[u] & POL_WRITE) || pol_op_in_place(ix, ix->use_op[u]) || nx == POL_INF)
        return POL_INF;
    if (pol_op_in_place(ix, ix->use_op[nx % nu]) || !pol_needs_data(ix->use_acc[nx % nu]))
        return POL_INF;
    return nx;
}

/* The fewest chunks that go back from the GPU with a copy in one iteration, whatever the plan.
 * A chunk in a dirty gap (dirty_until) that leaves the GPU during the gap costs one copy out
 * there: its data is in no other tier, and no two gaps share a copy.  Outside such gaps a
 * chunk may be away at no cost (clean, or its data dead).  So the question is how few dirty
 * gaps must be given up, at each use the used chunk and the dirty gaps kept on the GPU filling
 * at most its capacity: intervals kept under a bound on their overlap, which giving up the one
 * that ends last whenever the bound is crossed answers exactly (Belady's choice again; uses
 * taken one at a time, a relaxation).  Over k iterations from an empty GPU the gaps are those
 * of k iterations of any cyclic plan but for the ones open at the start, so that plan's
 * k W copies out solve them and W >= MIN_k / k. */
uint64_t pol_least_writebacks(const pol_input_t *in, const pol_index_t *ix)
{
    (void)in;
    uint64_t nu = ix->nuses, cap = ix->gpu_cap, drops = 0;
    if (!cap || ix->nchunks <= cap)
        return 0;
    heap_t h = { .e = malloc(cap * sizeof(entry_t)),
                 .pos = malloc(ix->nchunks * sizeof(uint32_t)) };
    uint64_t *until = malloc(nu * sizeof(uint64_t));
    if (h.e && h.pos && until) {
        for (uint64_t c = 0; c < ix->nchunks; c++)
            h.pos[c] = UINT32_MAX;
        for (uint64_t u = 0; u < nu; u++)
            until[u] = dirty_until(ix, u);
        for (uint64_t p = 0; p < LEAST_PASSES; p++)
            for (uint64_t u = 0; u < nu; u++) {
                if (pol_op_in_place(ix, ix->use_op[u]))
                    continue;
                uint32_t c = ix->use_chunk[u];
                if (h.pos[c] != UINT32_MAX)
                    heap_remove(&h, c);             /* (its gap ends here) */
                for (; h.n >= cap; drops++)         /* room for c beside the gaps kept */
                    heap_pop(&h);
                if (until[u] != POL_INF) {
                    h.e[h.n++] = (entry_t){ .key = p * nu + until[u], .c = c };
                    heap_up(&h, h.n - 1);
                }
            }
    }
    free(h.e), free(h.pos), free(until);
    return (drops + LEAST_PASSES - 1) / LEAST_PASSES;
}
