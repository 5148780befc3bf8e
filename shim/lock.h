/* SPDX-License-Identifier: MIT */
/*
 * lock.h - the shim's lock for state taken on every launch: a futex lock biased to the thread
 * that keeps taking it.
 *
 * Residency takes its device's lock around every launch and copy, and the tracer its
 * iteration detector's lock at every recorded launch; a training loop launches from one thread
 * at a time (one per phase at most), so these locks are taken by the same thread over and
 * over.  An uncontended futex lock still costs an atomic read-modify-write to take and
 * another to release, about 15 ns of the shim's 45-90 per launch measured in one process
 * (bench/shim_launch's own-cost table, with the atomics replaced by plain stores).
 *
 * A shim_lock_t is a futex word (v: 0 free, 1 held, 2 held and maybe waited for) and a bias:
 * the record of the thread it is biased to (its owner).  Each thread that takes a shim lock
 * through the futex word gets a record, whose one field, `inside`, says which lock it holds
 * through a bias, if any; only that thread ever writes it.  The owner takes the lock without
 * the futex word: it stores inside = the lock, checks (after a compiler barrier only) that the
 * bias is still its own, and releases it with a release store of inside = NULL.  Any other
 * thread takes the futex word, withdraws the bias (owner = NULL), makes every running thread
 * of the process execute a full memory barrier (membarrier), and waits until the owner's
 * record no longer names the lock.  Either the owner's check came after the barrier and saw
 * the bias gone, or its store came before it and the waiter sees it (the two sides of the
 * barrier).  A thread that took the futex word BIAS_STREAK times in a row, with no other
 * thread in between, takes the bias when it releases it; withdrawing one costs a system call
 * and a wait, so a lock changes hands through the bias at most once per BIAS_STREAK
 * acquisitions.  A thread holds at most one lock through a bias at a time (others it takes
 * through their futex words).  Where the kernel offers no private expedited membarrier no
 * lock is ever biased: each is a plain futex lock.  A record outlives its thread: it goes back
 * to a free list, and the next thread to need one becomes the owner of whatever locks it was
 * the owner of.
 *
 * Like a mutex: not recursive, released by the thread that took it, and never held across a
 * fork whose child goes on using it.
 */
#ifndef ELIXIR_LOCK_H
#define ELIXIR_LOCK_H

#include <stdatomic.h>
#include <stdint.h>

#include "shim.h"

struct shim_lock;

/* A thread's record: the lock it holds through a bias, or NULL. */
typedef struct shim_lock_rec {
    _Atomic(struct shim_lock *) inside;
    struct shim_lock_rec *next_free;
} shim_lock_rec_t;

typedef struct shim_lock {
    _Atomic uint32_t v;                     /* futex word */
    _Atomic(shim_lock_rec_t *) owner;       /* the thread it is biased to; NULL: none */
    /* The futex holder's own (read and written only with the futex word held). */
    shim_lock_rec_t *streak_of;             /* futex acquisitions in a row by this thread */
    uint32_t streak;
} shim_lock_t;

#define SHIM_LOCK_INIT { 0 }

/* This thread's record; NULL until it first takes a lock through the futex word (and for
 * good where locks are never biased). */
extern SHIM_TLS shim_lock_rec_t *shim_lock_self;

void shim_lock_slow(shim_lock_t *l);
void shim_unlock_slow(shim_lock_t *l);

static SHIM_ALWAYS_INLINE void shim_lock(shim_lock_t *l)
{
    shim_lock_rec_t *me = shim_lock_self;
    if (SHIM_LIKELY(me && atomic_load_explicit(&l->owner, memory_order_relaxed) == me &&
                    !atomic_load_explicit(&me->inside, memory_order_relaxed))) {
        atomic_store_explicit(&me->inside, l, memory_order_relaxed);
        atomic_signal_fence(memory_order_seq_cst);  /* the withdrawer's membarrier does the rest */
        if (SHIM_LIKELY(atomic_load_explicit(&l->owner, memory_order_acquire) == me))
            return;
        atomic_store_explicit(&me->inside, NULL, memory_order_release);
    }
    shim_lock_slow(l);
}

static SHIM_ALWAYS_INLINE void shim_unlock(shim_lock_t *l)
{
    shim_lock_rec_t *me = shim_lock_self;
    if (SHIM_LIKELY(me && atomic_load_explicit(&me->inside, memory_order_relaxed) == l)) {
        atomic_store_explicit(&me->inside, NULL, memory_order_release);
        return;
    }
    shim_unlock_slow(l);
}

/* Are locks biased at all here (private expedited membarrier registered, on the first call)? */
int shim_lock_biasing(void);

#endif
