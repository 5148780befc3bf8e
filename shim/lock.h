/* SPDX-License-Identifier: MIT */
/*
 * lock.h - the shim's lock for state taken on every launch: a futex lock biased to the thread
 * that keeps taking it.
 *
 * Residency takes its device's lock around every launch and copy, and the tracer its
 * iteration detector's lock at every recorded launch; a training loop launches from one thread
 * at a time (one per phase at most), so these locks are taken by the same thread over and
 * over.  An uncontended futex lock still costs an atomic read-modify-write to take and
 * another to release; taking them off the launch path saved a median 10-18 ns a launch in
 * bench/shim_launch's setting, a fifth to a third of what the shim may add to one.
 *
 * A shim_lock_t is a futex word (v: 0 free, 1 held, 2 held and maybe waited for) and a bias.
 * The thread it is biased to (its owner) takes it without the futex word: it stores
 * inside = 1, checks (after a compiler barrier only) that the bias is still its own, and
 * releases it with a release store of inside = 0.  Any other thread takes the futex word,
 * withdraws the bias (owner = 0), makes every running thread of the process execute a full
 * memory barrier (membarrier), and waits until the owner is not inside.  Either the owner's
 * check came after the barrier and saw the bias gone, or its store of inside came before it
 * and the waiter sees it (the two sides of the barrier).  A thread that took the futex word
 * BIAS_STREAK times in a row, with no other thread in between, takes the bias when it
 * releases it; withdrawing one costs a system call and a wait, so a lock changes hands
 * through the bias at most once per BIAS_STREAK acquisitions.  Where the kernel offers no
 * private expedited membarrier no lock is ever biased: each is a plain futex lock.
 *
 * Like a mutex: not recursive, released by the thread that took it, and never held across a
 * fork whose child goes on using it.
 */
#ifndef ELIXIR_LOCK_H
#define ELIXIR_LOCK_H

#include <stdatomic.h>
#include <stdint.h>

#include "shim.h"

typedef struct shim_lock {
    _Atomic uint32_t v;             /* futex word */
    _Atomic uint32_t inside;        /* the owner holds the lock through the bias */
    _Atomic uint64_t owner;         /* token of the thread it is biased to; 0: none */
    /* The holder's own (read and written only with the lock held). */
    uint32_t biased;                /* taken through the bias: released with inside = 0 */
    uint32_t streak;                /* futex acquisitions in a row by streak_of */
    uint64_t streak_of;
} shim_lock_t;

#define SHIM_LOCK_INIT { 0 }

/* This thread's token (never 0 once given, never given twice); 0 until it first takes a lock
 * through the futex word. */
extern SHIM_TLS uint64_t shim_lock_self;

void shim_lock_slow(shim_lock_t *l);
void shim_unlock_slow(shim_lock_t *l);

static SHIM_ALWAYS_INLINE void shim_lock(shim_lock_t *l)
{
    uint64_t me = shim_lock_self;
    if (SHIM_LIKELY(me && atomic_load_explicit(&l->owner, memory_order_relaxed) == me)) {
        atomic_store_explicit(&l->inside, 1, memory_order_relaxed);
        atomic_signal_fence(memory_order_seq_cst);  /* the withdrawer's membarrier does the rest */
        if (SHIM_LIKELY(atomic_load_explicit(&l->owner, memory_order_acquire) == me)) {
            l->biased = 1;
            return;
        }
        atomic_store_explicit(&l->inside, 0, memory_order_release);
    }
    shim_lock_slow(l);
}

static SHIM_ALWAYS_INLINE void shim_unlock(shim_lock_t *l)
{
    if (SHIM_LIKELY(l->biased)) {
        l->biased = 0;
        atomic_store_explicit(&l->inside, 0, memory_order_release);
        return;
    }
    shim_unlock_slow(l);
}

/* The process is registered for private expedited membarrier (registering it on the first
 * call): shim_membarrier then makes every running thread of the process execute a full
 * memory barrier. */
int shim_membarrier_ready(void);
/* 0, or -1 with errno set (not registered, or the kernel refused). */
int shim_membarrier(void);

#endif
