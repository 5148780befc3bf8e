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
int iter_launch(iter_t *it, uint32_t key, uint64_t time, iter_mark_t marks[ITER_MAX_MARKS]);
/* The index of the iteration in progress, or -1 before the first one. */
int64_t iter_current(const iter_t *it);

#endif
