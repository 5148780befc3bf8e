/* SPDX-License-Identifier: MIT */
/*
 * conc_lock.c - the shim's biased lock (shim/lock.c) on its own, meant for ThreadSanitizer too
 * (the CI runs conc_* with SANITIZE=thread).  Every critical section checks that it is alone
 * (a plain flag) and bumps a plain counter, so a lost exclusion shows as a wrong count, a
 * failed check, or a race report.  Cases: one thread taking the lock until it is biased to
 * it (then taken through the bias); two threads handing the lock over in alternating phases
 * (the bias follows); eight threads at once; the owner holding the lock for 50 ms while
 * another thread asks for it; the owner exiting while the lock is biased to it, and a new
 * thread taking its record; one thread holding two locks biased to it, released in either
 * order; a destructor that takes the lock after its thread gave its record back.  Where the kernel has no private expedited membarrier no lock is biased: the
 * exclusion cases still run and the bias checks say they were skipped.
 */
#include "../shim/lock.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define PHASES 12
#define PER_PHASE 3000
#define THREADS 8
#define PER_THREAD 20000

static int failures;
static int biasing;                 /* membarrier works: locks get biased */

static shim_lock_t lock = SHIM_LOCK_INIT;
static int in_cs;                   /* a thread is inside (only ever read inside) */
static unsigned long counter;       /* critical sections run */

static void check(int ok, const char *test, const char *what)
{
    if (!ok) {
        printf("FAIL %s: %s\n", test, what);
        __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
    }
}

/* One critical section: alone, counted, `spin` iterations long. */
static void section(const char *test, unsigned spin)
{
    shim_lock(&lock);
    check(!in_cs, test, "another thread is inside the lock");
    in_cs = 1;
    for (volatile unsigned i = 0; i < spin; i++)
        ;
    counter++;
    in_cs = 0;
    shim_unlock(&lock);
}

/* Is the lock biased to the calling thread? */
static int biased_to_me(void)
{
    return shim_lock_self && atomic_load(&lock.owner) == shim_lock_self;
}

static void single_thread(void)
{
    unsigned long before = counter;
    for (int i = 0; i < 1000; i++)
        section("single_thread", 0);
    check(counter == before + 1000, "single_thread", "count");
    if (biasing)
        check(biased_to_me(), "single_thread", "not biased to its only user after 1000 takes");
}

/* Phases: thread p % 2 takes the lock PER_PHASE times while the other waits at a barrier. */
static pthread_barrier_t phase_barrier;
static int phase_biased[PHASES];

static void *phases_main(void *arg)
{
    int me = (int)(intptr_t)arg;
    for (int p = 0; p < PHASES; p++) {
        if (p % 2 == me) {
            for (int i = 0; i < PER_PHASE; i++)
                section("phases", 10);
            phase_biased[p] = biased_to_me();
        }
        pthread_barrier_wait(&phase_barrier);
    }
    return NULL;
}

static void phases(void)
{
    pthread_t t[2];
    unsigned long before = counter;
    pthread_barrier_init(&phase_barrier, NULL, 2);
    for (intptr_t i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, phases_main, (void *)i);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&phase_barrier);
    check(counter == before + (unsigned long)PHASES * PER_PHASE, "phases", "count");
    if (biasing)
        for (int p = 0; p < PHASES; p++)
            if (!phase_biased[p])
                check(0, "phases", "the bias did not follow a phase's thread");
}

static void *crowd_main(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    for (int i = 0; i < PER_THREAD; i++)
        section("crowd", (seed = seed * 1103515245u + 12345u) >> 28);
    return NULL;
}

static void crowd(void)
{
    pthread_t t[THREADS];
    unsigned long before = counter;
    for (uintptr_t i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, crowd_main, (void *)(i + 1));
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    check(counter == before + (unsigned long)THREADS * PER_THREAD, "crowd", "count");
}

/* The owner holds the lock 50 ms; the asker, started meanwhile, must get it only after. */
static _Atomic int holding;
static int released;                /* written by the holder just before it unlocks */

static void *asker_main(void *arg)
{
    (void)arg;
    while (!atomic_load(&holding))
        ;
    shim_lock(&lock);
    check(released, "owner_holds", "taken while the owner held it");
    shim_unlock(&lock);
    return NULL;
}

static void owner_holds(void)
{
    pthread_t t;
    for (int i = 0; i < 300; i++)
        section("owner_holds", 0);
    int was_biased = biased_to_me();
    pthread_create(&t, NULL, asker_main, NULL);
    shim_lock(&lock);
    released = 0;
    atomic_store(&holding, 1);
    nanosleep(&(struct timespec){ 0, 50 * 1000 * 1000 }, NULL);
    released = 1;
    shim_unlock(&lock);
    pthread_join(t, NULL);
    if (biasing)
        check(was_biased, "owner_holds", "the holder was not the owner");
}

/* The lock is biased to a thread that then exits: the next taker withdraws the bias. */
static void *leaver_main(void *arg)
{
    (void)arg;
    for (int i = 0; i < 300; i++)
        section("owner_exits", 0);
    return (void *)(intptr_t)biased_to_me();
}

static void owner_exits(void)
{
    pthread_t t;
    void *was_biased;
    pthread_create(&t, NULL, leaver_main, NULL);
    pthread_join(t, &was_biased);
    unsigned long before = counter;
    section("owner_exits", 0);
    check(counter == before + 1, "owner_exits", "count");
    if (biasing)
        check(was_biased != NULL, "owner_exits", "the leaver was not the owner");
}

/* A thread that inherits an exited owner's record takes the lock through its bias. */
static void *heir_main(void *arg)
{
    (void)arg;
    section("heir", 0);
    return (void *)(intptr_t)biased_to_me();
}

static void owner_record_reused(void)
{
    pthread_t t;
    void *biased;
    for (int round = 0; round < 2; round++) {
        pthread_create(&t, NULL, round ? heir_main : leaver_main, NULL);
        pthread_join(t, &biased);
    }
    (void)biased;                   /* the heir may or may not have drawn the leaver's record */
    unsigned long before = counter;
    section("heir", 0);
    check(counter == before + 1, "heir", "count");
}

/* A thread-exit destructor that runs after the one that gave the thread's record back takes
 * the lock while another thread, which has just been handed that record, holds it: the late
 * taker must wait (it must not take the lock as the record's owner). */
static pthread_key_t late_key;
static _Atomic int late_started, heir_holding;

static void late_destructor(void *arg)
{
    (void)arg;
    atomic_store(&late_started, 1);
    while (!atomic_load(&heir_holding))
        ;
    section("late_destructor", 0);
}

static void *late_main(void *arg)
{
    (void)arg;
    for (int i = 0; i < 300; i++)
        section("late_destructor", 0);
    pthread_setspecific(late_key, &late_key);
    return NULL;
}

static void *late_heir_main(void *arg)
{
    (void)arg;
    while (!atomic_load(&late_started))
        ;
    shim_lock(&lock);
    in_cs = 1;
    atomic_store(&heir_holding, 1);
    nanosleep(&(struct timespec){ 0, 50 * 1000 * 1000 }, NULL);
    counter++;
    in_cs = 0;
    shim_unlock(&lock);
    return NULL;
}

static void late_destructor_case(void)
{
    pthread_t t[2];
    unsigned long before = counter;
    /* Made after the lock's own key (the first lock taken made that one), so that its
     * destructor runs after the record went back. */
    pthread_key_create(&late_key, late_destructor);
    pthread_create(&t[0], NULL, late_main, NULL);
    pthread_create(&t[1], NULL, late_heir_main, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    check(counter == before + 302, "late_destructor", "count");
}

/* The owner of two locks holds both at once (the second through its futex word), released in
 * either order; another thread then takes each. */
static shim_lock_t second = SHIM_LOCK_INIT;
static unsigned long second_counter;

static void *second_main(void *arg)
{
    (void)arg;
    shim_lock(&second);
    second_counter++;
    shim_unlock(&second);
    section("two_locks", 0);
    return NULL;
}

static void two_locks(void)
{
    pthread_t t;
    for (int i = 0; i < 300; i++) {
        section("two_locks", 0);
        shim_lock(&second);
        second_counter++;
        shim_unlock(&second);
    }
    for (int order = 0; order < 2; order++) {
        shim_lock(&lock);
        shim_lock(&second);
        counter++;
        second_counter++;
        if (order) {
            shim_unlock(&second);
            shim_unlock(&lock);
        } else {
            shim_unlock(&lock);
            shim_unlock(&second);
        }
    }
    pthread_create(&t, NULL, second_main, NULL);
    pthread_join(t, NULL);
    shim_lock(&second);
    check(second_counter == 303, "two_locks", "count of the second lock");
    shim_unlock(&second);
    if (biasing)
        check(atomic_load(&lock.owner) != shim_lock_self, "two_locks",
              "the bias stayed with a thread another one took the lock from");
}

int main(void)
{
    biasing = shim_lock_biasing();
    if (!biasing)
        printf("note: no private expedited membarrier here: locks are never biased, the bias "
               "checks are skipped\n");
    single_thread();
    phases();
    crowd();
    owner_holds();
    owner_exits();
    owner_record_reused();
    two_locks();
    late_destructor_case();
    printf("%s: %lu critical sections\n", failures ? "FAIL" : "ok", counter);
    return failures ? 1 : 0;
}
