/* SPDX-License-Identifier: MIT */
/*
 * lock.c - the slow paths of the biased lock (lock.h), the threads' records, membarrier.
 */
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lock.h"

/* Futex acquisitions in a row that give a thread the bias (see lock.h). */
#define BIAS_STREAK 256

SHIM_TLS shim_lock_rec_t *shim_lock_self;

static pthread_once_t bias_once = PTHREAD_ONCE_INIT;
static int bias_ok;                     /* membarrier registered and a thread-exit key made */
static pthread_key_t rec_key;
static pthread_mutex_t rec_lock = PTHREAD_MUTEX_INITIALIZER;
static shim_lock_rec_t *rec_free;       /* records of threads that exited */

/* At a thread's exit: its record (never inside a lock then) goes to the free list, and the
 * thread forgets it (a later destructor that takes a lock gets another), so that no two
 * threads ever share one. */
static void rec_put(void *p)
{
    shim_lock_rec_t *r = p;
    shim_lock_self = NULL;
    pthread_mutex_lock(&rec_lock);
    r->next_free = rec_free;
    rec_free = r;
    pthread_mutex_unlock(&rec_lock);
}

static int membarrier_register(void)
{
    return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

/* A forked child: the free list's lock may have been held by a thread that is gone, and the
 * registration is made again (it is the process's; a child whose kernel refuses it biases
 * nothing new, and locks already biased are the caller's to reset, as for any lock held at
 * the fork). */
static void after_fork(void)
{
    pthread_mutex_init(&rec_lock, NULL);
    bias_ok = bias_ok && membarrier_register();
}

static void bias_init(void)
{
    bias_ok = membarrier_register() && pthread_key_create(&rec_key, rec_put) == 0 &&
              pthread_atfork(NULL, NULL, after_fork) == 0;
}

int shim_lock_biasing(void)
{
    pthread_once(&bias_once, bias_init);
    return bias_ok;
}

/* The calling thread's record, made (or taken from the free list) on first use; NULL where
 * locks are never biased or memory is short (the thread then never takes a bias). */
static shim_lock_rec_t *rec_self(void)
{
    shim_lock_rec_t *r = shim_lock_self;
    if (r || !shim_lock_biasing())
        return r;
    pthread_mutex_lock(&rec_lock);
    if ((r = rec_free))
        rec_free = r->next_free;
    pthread_mutex_unlock(&rec_lock);
    if (!r && !(r = calloc(1, sizeof(*r))))
        return NULL;
    r->next_free = NULL;
    if (pthread_setspecific(rec_key, r) != 0) {
        rec_put(r);
        return NULL;
    }
    return shim_lock_self = r;
}

static void futex_lock(_Atomic uint32_t *v)
{
    uint32_t c = 0;
    if (atomic_compare_exchange_strong_explicit(v, &c, 1, memory_order_acquire,
                                                memory_order_relaxed))
        return;
    if (c != 2)
        c = atomic_exchange_explicit(v, 2, memory_order_acquire);
    while (c != 0) {
        syscall(SYS_futex, v, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
        c = atomic_exchange_explicit(v, 2, memory_order_acquire);
    }
}

static void futex_unlock(_Atomic uint32_t *v)
{
    if (atomic_exchange_explicit(v, 0, memory_order_release) == 2)
        syscall(SYS_futex, v, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* Until owner o is not inside l (it may hold l across a migration's wait for the GPU: spin
 * briefly, then yield, then sleep). */
static void wait_out(const shim_lock_rec_t *o, const shim_lock_t *l)
{
    for (unsigned i = 0; atomic_load_explicit(&o->inside, memory_order_acquire) == l; i++) {
        if (i < 64)
            __builtin_ia32_pause();
        else if (i < 128)
            sched_yield();
        else
            nanosleep(&(struct timespec){ 0, 20000 }, NULL);
    }
}

void shim_lock_slow(shim_lock_t *l)
{
    shim_lock_rec_t *me = rec_self();
    futex_lock(&l->v);
    shim_lock_rec_t *o = atomic_load_explicit(&l->owner, memory_order_relaxed);
    if (o && o != me) {
        /* Withdraw the bias: after the barrier the owner either sees it gone or is seen
         * inside (lock.h).  A bias is only ever given where membarrier is registered, and
         * then the call cannot fail. */
        atomic_store(&l->owner, NULL);
        syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
        wait_out(o, l);
    }
    if (me && l->streak_of == me) {
        l->streak++;
    } else {
        l->streak_of = me;
        l->streak = 1;
    }
}

void shim_unlock_slow(shim_lock_t *l)
{
    if (l->streak >= BIAS_STREAK && l->streak_of &&
        !atomic_load_explicit(&l->owner, memory_order_relaxed)) {
        /* Published by the futex word's release; only this thread reads it before then. */
        atomic_store_explicit(&l->owner, l->streak_of, memory_order_relaxed);
        l->streak = 0;
    }
    futex_unlock(&l->v);
}
