/* SPDX-License-Identifier: MIT */
/*
 * lock.c - the slow paths of the biased lock (lock.h) and the process's membarrier.
 */
#include <errno.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lock.h"

/* Futex acquisitions in a row that give a thread the bias (see lock.h). */
#define BIAS_STREAK 256

SHIM_TLS uint64_t shim_lock_self;
static _Atomic uint64_t next_token;

static pthread_once_t membarrier_once = PTHREAD_ONCE_INIT;
static int membarrier_ok;

static void membarrier_register(void)
{
    membarrier_ok = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

int shim_membarrier_ready(void)
{
    pthread_once(&membarrier_once, membarrier_register);
    return membarrier_ok;
}

int shim_membarrier(void)
{
    if (!shim_membarrier_ready()) {
        errno = ENOSYS;
        return -1;
    }
    return (int)syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
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

/* Until the owner that lost the bias is out (it may hold the lock across a migration's wait
 * for the GPU: spin briefly, then yield, then sleep). */
static void wait_out(shim_lock_t *l)
{
    for (unsigned i = 0; atomic_load_explicit(&l->inside, memory_order_acquire); i++) {
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
    uint64_t me = shim_lock_self;
    if (!me)
        me = shim_lock_self = atomic_fetch_add_explicit(&next_token, 1, memory_order_relaxed) + 1;
    futex_lock(&l->v);
    uint64_t owner = atomic_load_explicit(&l->owner, memory_order_relaxed);
    if (owner && owner != me) {
        /* Withdraw the bias: after the barrier the owner either sees it gone or is seen
         * inside (lock.h).  The bias is only ever given where membarrier works. */
        atomic_store(&l->owner, 0);
        shim_membarrier();
        wait_out(l);
    }
    if (l->streak_of == me) {
        l->streak++;
    } else {
        l->streak_of = me;
        l->streak = 1;
    }
}

void shim_unlock_slow(shim_lock_t *l)
{
    if (l->streak >= BIAS_STREAK && shim_membarrier_ready()) {
        /* Published by the futex word's release; only this thread reads it before then. */
        atomic_store_explicit(&l->owner, l->streak_of, memory_order_relaxed);
        l->streak = 0;
    }
    futex_unlock(&l->v);
}
