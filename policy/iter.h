/* SPDX-License-Identifier: MIT */
/*
 * iter.h - finding the iterations of a training loop in the sequence of its launches.
 *
 * A pure data structure (no CUDA, no I/O, no locking: the caller serialises calls).  It is fed
 * every kernel launch, as a small integer key naming the kernel (the trace's string id of its
 * name), and every barrier: a host synchronisation or a copy between host and device, the
 * points where a training step hands its data in or its loss out.  It answers, at each launch,
 * whether that launch begins a new iteration.
 *
 * The rule.  A *segment start* is the first launch after a barrier.
 *   1. Learning, with barriers: at a segment start whose kernel K was launched before, an
 *      iteration begins (K is its *anchor*); the first time, the previous launch of K is taken
 *      as the start of iteration 0, so a loop whose first step is preceded by no barrier is
 *      still counted from its first step.
 *   2. Learning, in a program that has had no barrier at all: a kernel whose last three
 *      launches are equally spaced, P >= 2 launches apart, with the same P kernels in both
 *      gaps, is the anchor; its three launches begin three iterations (0, 1 and 2 the first
 *      time).  Nothing in the launches alone tells a loop's phase, or its inner repetitions
 *      (identical layers, accumulation steps) from the loop: that is why one barrier, even
 *      before the first launch, turns this rule off for good, and why a program without any
 *      copy or synchronisation may be cut at an inner repetition.
 *   3. Tracking: once an anchor is known, its launch begins an iteration when it follows a
 *      barrier, or when it is the (c + 1)-th launch of the anchor since the iteration began,
 *      c being the anchor's launches in the last complete iteration (1 for an anchor learnt by
 *      rule 2; unknown, so barriers only, until one iteration has completed after rule 1).
 *   4. Lost: once an iteration length L (launches) has been measured, more than 2 L + 16
 *      launches without a new iteration forget the anchor and learning starts again; indexes
 *      go on from where they were.
 * An iteration's boundary is a launch: copies issued before the anchor (the next batch's
 * upload) belong to the iteration before.
 */
#ifndef ELIXIR_ITER_H
#define ELIXIR_ITER_H

#include <stdint.h>

#define ITER_MAX_MARKS 3        /* iterations one launch can reveal at once (rule 2) */
#define ITER_MAX_KEY (1u << 24) /* larger keys are ignored (never anchors) */

typedef struct iter iter_t;

/* The detector's state: iter.c's, laid out here only so that iter_launch's usual path (a launch
 * that only counts) inlines into its callers.  Nothing else reads it. */
typedef struct iter_key_state {
    uint64_t seen;                  /* launches so far */
    uint64_t last_n, last_t, last_h;  /* its last launch: number, time, prefix hash before it */
    uint64_t prev_n, prev_t, prev_h;  /* the one before */
} iter_key_state_t;

struct iter {
    iter_key_state_t *keys;
    uint32_t nkeys;
    uint64_t n;                     /* launches so far */
    uint64_t h;                     /* hash of launches [0, n) (until the first barrier) */
    int barrier;                    /* a barrier since the last launch */
    int any_barrier;                /* a barrier was ever seen: rule 2 is off */
    int state;
    int64_t index;                  /* the iteration in progress; -1: none yet */
    uint32_t anchor;
    uint64_t start_n;               /* launch number that began the current iteration */
    uint64_t length;                /* launches of the last complete iteration; 0: unknown */
    uint32_t per_iter;              /* anchor launches per iteration; 0: unknown */
    uint32_t anchor_count;          /* anchor launches since the iteration began */
    uint64_t quiet_below;           /* launches numbered below it may be quiet (iter_launch) */
};

/* An iteration that begins: its index and the time given with the launch that began it. */
typedef struct iter_mark {
    uint64_t index, time;
} iter_mark_t;

/* 0 or -ENOMEM. */
int iter_create(iter_t **out);
void iter_destroy(iter_t *it);
/* A host synchronisation or a host <-> device copy happened. */
void iter_barrier(iter_t *it);
/* A launch of kernel `key` at `time`: fills marks[] with the iterations that begin (in index
 * order; the last one begins at this launch, earlier ones at earlier launches) and returns
 * how many (0 to ITER_MAX_MARKS).  A key that memory cannot be found for is not learnt. */
static inline int iter_launch(iter_t *it, uint32_t key, uint64_t time,
                              iter_mark_t marks[ITER_MAX_MARKS]);
/* iter_launch past its usual path (iter.c). */
int iter_launch_slow(iter_t *it, uint32_t key, uint64_t time, iter_mark_t marks[ITER_MAX_MARKS]);
/* The index of the iteration in progress, or -1 before the first one. */
int64_t iter_current(const iter_t *it);

/* Is a launch of key one that only counts: a loop is tracked after its first barrier (rule 2
 * is off), no barrier came since the last launch, the launch does not complete the anchor's
 * count of an iteration (rule 3), the loop is not lost (rule 4), and key has its state
 * (quiet_below, set after every launch that is not quiet, says the first four)?  Most launches
 * of a training loop are; after the first barrier a key's state keeps only seen and last_t. */
static inline int iter_launch(iter_t *it, uint32_t key, uint64_t time,
                              iter_mark_t marks[ITER_MAX_MARKS])
{
    if (it->n >= it->quiet_below || key >= it->nkeys ||
        (key == it->anchor && it->per_iter && it->anchor_count == it->per_iter))
        return iter_launch_slow(it, key, time, marks);
    it->keys[key].seen++;
    it->keys[key].last_t = time;
    it->anchor_count += key == it->anchor;
    it->n++;
    return 0;
}

#endif
