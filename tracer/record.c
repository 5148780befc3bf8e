/* SPDX-License-Identifier: MIT */
/*
 * record.c - the recorder: many threads append events to one trace file (record.h).
 *
 * Each thread has a state of its own (found through a pthread key) holding its open buffer:
 * a block of records that starts with a TIME_BASE record, so it decodes wherever it lands in
 * the file.  The buffer is passed by ownership, never locked: the writer thread takes it out
 * of its slot with an atomic exchange to flush a quiet thread, and the owner, finding its slot
 * empty, starts a new block.  Whoever holds a block is the only one touching it.  The owner
 * either takes its buffer out of the slot for each event with an atomic exchange and puts it
 * back, or, where the kernel offers membarrier (the usual case), leaves it in the slot: it
 * marks itself inside an event (an odd `seq`, a plain store), reads the slot, encodes, and
 * marks itself out (release); a full block is taken back with a compare-and-swap, and handed
 * over after the owner marked itself out.  The writer exchanges the slot, makes every running
 * thread execute a full barrier (membarrier), and then waits until a thread that was inside
 * an event has left it before it queues the block: either that thread saw the empty slot, or
 * the writer sees it inside (the two sides of the barrier).  Inside an event an owner takes
 * no lock and waits for nothing, so the writer's wait is short.  Full blocks, blocks of exiting
 * threads (the key's destructor) and blocks taken by the writer all join one queue, under the
 * queue lock, in the order they were taken, and the writer thread appends them to the file in
 * that order: one thread's events reach the file in the order it recorded them.  Written blocks
 * of the usual size (a few) are kept and filled again rather than freed and allocated anew.
 *
 * Strings and stacks are interned by the trace writer (writer.c) under the file lock, and its
 * table record is written to the file before the id is returned, so a definition precedes any
 * buffer that uses it.  The writer thread appends blocks under the same lock.  A failed write
 * disables recording (every call returns the error from then on) and is returned by close.
 *
 * Lock order: g_lock (the live recorders) > reg_lock (a recorder's threads) > q_lock (its
 * queue) ; stack.c's map lock > file_lock (the writer).  No lock is taken per event, and
 * with membarrier no atomic read-modify-write either: two plain stores around the encoding.
 */
#include "rec_int.h"

#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_BUFFER   (64u << 10)
#define MIN_BUFFER       256u
#define DEFAULT_FLUSH_MS 200u
#define QUEUE_LIMIT      (64u << 20)  /* bytes handed over, not yet written: producers wait */
#define MAX_BLOCK        (4u << 20)   /* an oversized record gets a block of its own, up to */
#define SPARE_BLOCKS     8u           /* written blocks kept for reuse (see `spare`) */

enum { REC_ON, REC_FAILED, REC_ABANDONED };

typedef struct block {
    struct block *next;
    size_t len, cap;
    uint64_t events;
    uint8_t data[];
} block_t;

/* The calling thread's state in the recorder it recorded into last (the common case: one
 * recorder), so that an event needs no pthread_getspecific.  `serial` tells a recorder from a
 * later one at the same address; an exiting thread's key destructor clears it. */
static __thread __attribute__((tls_model("initial-exec"))) struct {
    const struct trc_rec *rec;
    uint64_t serial;
    struct tstate *t;
} tls_last;
static _Atomic uint64_t rec_serials;

/* One thread's state in one recorder.  A block belongs to whoever took it out of the slot
 * `cur` (in asym mode the owner also writes into the block left there, between the marks of
 * `seq`); enc and count are the owner's, events its published copy. */
typedef struct tstate {
    struct tstate *next;
    _Atomic(block_t *) cur;
    trc_enc_t enc;
    uint64_t count;
    _Atomic uint64_t events;
    _Atomic uint64_t seq;              /* odd while the owner is inside an event (asym mode) */
    block_t *swept;                    /* taken by a sweep, waiting to be queued (sweep only) */
} tstate_t;

struct trc_rec {
    _Atomic int off;                   /* REC_*: checked first by every call */
    _Atomic int error;                 /* the first write error */
    uint64_t serial;                   /* unique per recorder opened (tls_last) */
    pthread_key_t key;                 /* -> this thread's tstate_t */
    size_t buffer_bytes;
    uint32_t flush_ms;
    uint64_t (*clock)(void);
    void (*on_error)(int err);

    pthread_mutex_t reg_lock;          /* threads, retired */
    tstate_t *threads;
    uint64_t retired;                  /* events of threads that have exited */

    pthread_mutex_t q_lock;            /* everything down to `writer` */
    pthread_cond_t q_cond;             /* to the writer: work, flush request, stop */
    pthread_cond_t space_cond;         /* to producers: the queue shrank */
    pthread_cond_t done_cond;          /* to flushers: flush_done advanced */
    block_t *head, **tail;
    size_t q_bytes;
    /* Written blocks of the usual size, kept to be filled again: freeing one (64 KiB) makes
     * the C library consolidate the heap the application is using, and a fresh one costs
     * page faults. */
    block_t *spare;
    unsigned nspare;
    uint64_t flush_req, flush_done;
    int stop;
    pthread_t writer;

    pthread_mutex_t file_lock;         /* w */
    trc_writer_t *w;
    _Atomic uint64_t bytes;

    trc_stk_t *stk;
    struct trc_rec *next_live;         /* g_live, under g_lock */
};

/* Recorders that exiting threads may still hand buffers to.  A key destructor cannot know
 * whether its recorder was closed meanwhile, so it looks its state up here, under g_lock. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static trc_rec_t *g_live;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
/* The process registered for private expedited membarrier: owners keep their buffer in its
 * slot while encoding (see the top of the file).  Set once, before any recorder opens. */
static int g_asym;

/* ------------------------------------------------------------------ errors and time */

int trc_rec_status(const trc_rec_t *rec)
{
    switch (atomic_load_explicit(&rec->off, memory_order_acquire)) {
    case REC_ON: return 0;
    case REC_FAILED: return atomic_load(&rec->error);
    default: return -ECANCELED;
    }
}

/* Remembers the first write error and turns recording off; wakes producers waiting for room;
 * the first time, tells the owner (on_error). */
static void fail(trc_rec_t *rec, int err)
{
    int zero = 0;
    int first = atomic_compare_exchange_strong(&rec->error, &zero, err);
    int on = REC_ON;
    atomic_compare_exchange_strong(&rec->off, &on, REC_FAILED);
    pthread_mutex_lock(&rec->q_lock);
    pthread_cond_broadcast(&rec->space_cond);
    pthread_mutex_unlock(&rec->q_lock);
    if (first && rec->on_error)
        rec->on_error(err);
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t trc_rec_now(const trc_rec_t *rec)
{
    return rec->clock ? rec->clock() : mono_ns();
}

/* ------------------------------------------------------------------ the queue */

/* Keeps written (or empty) block b for reuse, or frees it (q_lock held). */
static void recycle(trc_rec_t *rec, block_t *b)
{
    if (b->cap != rec->buffer_bytes || rec->nspare >= SPARE_BLOCKS) {
        free(b);
        return;
    }
    b->next = rec->spare;
    rec->spare = b;
    rec->nspare++;
}

/* Appends b to the queue (q_lock held); an empty block is kept for reuse instead. */
static void enqueue(trc_rec_t *rec, block_t *b)
{
    if (!b->events) {
        recycle(rec, b);
        return;
    }
    b->next = NULL;
    *rec->tail = b;
    rec->tail = &b->next;
    rec->q_bytes += b->len;
    pthread_cond_signal(&rec->q_cond);
}

/* A full buffer to the writer.  Waits while too much is queued (the disk is behind). */
static void hand_over(trc_rec_t *rec, block_t *b)
{
    pthread_mutex_lock(&rec->q_lock);
    enqueue(rec, b);
    while (rec->q_bytes > QUEUE_LIMIT && !atomic_load(&rec->off) && !rec->stop)
        pthread_cond_wait(&rec->space_cond, &rec->q_lock);
    pthread_mutex_unlock(&rec->q_lock);
}

/* Writes a list of blocks in order (no lock held on entry); their bytes.  The list stays the
 * caller's to recycle. */
static size_t write_blocks(trc_rec_t *rec, block_t *b)
{
    size_t bytes = 0;
    for (; b; b = b->next) {
        if (!atomic_load(&rec->off)) {
            pthread_mutex_lock(&rec->file_lock);
            int rc = trc_writer_append(rec->w, b->data, b->len, b->events);
            atomic_store(&rec->bytes, trc_writer_bytes(rec->w));
            pthread_mutex_unlock(&rec->file_lock);
            if (rc < 0)
                fail(rec, rc);
        }
        bytes += b->len;
    }
    return bytes;
}

/* Writes everything queued (called and returning with q_lock held). */
static void drain(trc_rec_t *rec)
{
    while (rec->head) {
        block_t *list = rec->head;
        rec->head = NULL;
        rec->tail = &rec->head;
        pthread_mutex_unlock(&rec->q_lock);
        size_t bytes = write_blocks(rec, list);
        pthread_mutex_lock(&rec->q_lock);
        for (block_t *next; list; list = next) {
            next = list->next;
            recycle(rec, list);
        }
        rec->q_bytes -= bytes;
        pthread_cond_broadcast(&rec->space_cond);
    }
}

/* After t's buffer was taken out of its slot and every running thread passed a full
 * barrier: waits until t is outside the event it may have been encoding into the buffer. */
static void wait_quiet(tstate_t *t)
{
    uint64_t s = atomic_load_explicit(&t->seq, memory_order_acquire);
    if (!(s & 1))
        return;
    for (unsigned spins = 0; atomic_load_explicit(&t->seq, memory_order_acquire) == s; spins++)
        if (spins > 64)
            sched_yield();
}

/* Takes every thread's open buffer into the queue.  Taking a buffer and queueing it happen
 * under q_lock, so its owner cannot queue a later buffer of its own in between (an owner that
 * lost its buffer takes no lock before it leaves its event, so waiting for it here is safe). */
static void sweep(trc_rec_t *rec)
{
    int taken = 0;
    pthread_mutex_lock(&rec->reg_lock);
    pthread_mutex_lock(&rec->q_lock);
    for (tstate_t *t = rec->threads; t; t = t->next)
        if ((t->swept = atomic_exchange_explicit(&t->cur, NULL, memory_order_acquire)))
            taken = 1;
    if (taken && g_asym)
        syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
    for (tstate_t *t = rec->threads; t; t = t->next)
        if (t->swept) {
            if (g_asym)
                wait_quiet(t);
            enqueue(rec, t->swept);
            t->swept = NULL;
        }
    pthread_mutex_unlock(&rec->q_lock);
    pthread_mutex_unlock(&rec->reg_lock);
}

static void deadline(struct timespec *ts, uint64_t mono)
{
    ts->tv_sec = (time_t)(mono / 1000000000u);
    ts->tv_nsec = (long)(mono % 1000000000u);
}

/* The writer thread: writes the queue as it fills; every flush interval, on a flush request
 * and at stop, first takes every thread's buffer (sweep).  A flush request is done once a
 * sweep that began after it and the drain after that are over. */
static void *writer_main(void *arg)
{
    trc_rec_t *rec = arg;
    uint64_t interval = (uint64_t)rec->flush_ms * 1000000u, next = mono_ns() + interval;
    pthread_mutex_lock(&rec->q_lock);
    for (;;) {
        uint64_t want = rec->flush_req;
        int stop = rec->stop, swept = stop || want != rec->flush_done || mono_ns() >= next;
        if (swept) {
            pthread_mutex_unlock(&rec->q_lock);
            sweep(rec);
            next = mono_ns() + interval;
            pthread_mutex_lock(&rec->q_lock);
        }
        drain(rec);
        if (swept && rec->flush_done != want) {
            rec->flush_done = want;
            pthread_cond_broadcast(&rec->done_cond);
        }
        if (stop)
            break;
        if (!rec->head && rec->flush_req == rec->flush_done && !rec->stop) {
            struct timespec ts;
            deadline(&ts, next);
            pthread_cond_timedwait(&rec->q_cond, &rec->q_lock, &ts);
        }
    }
    pthread_mutex_unlock(&rec->q_lock);
    return NULL;
}

/* ------------------------------------------------------------------ threads */

/* If t is one of r's threads: queues its buffer, forgets and frees it; 1 when it was. */
static int retire(trc_rec_t *r, tstate_t *t)
{
    int found = 0;
    pthread_mutex_lock(&r->reg_lock);
    for (tstate_t **p = &r->threads; *p; p = &(*p)->next)
        if (*p == t) {
            *p = t->next;
            found = 1;
            break;
        }
    if (found) {
        r->retired += t->count;
        pthread_mutex_lock(&r->q_lock);
        block_t *b = atomic_exchange_explicit(&t->cur, NULL, memory_order_acquire);
        if (b)
            enqueue(r, b);
        pthread_mutex_unlock(&r->q_lock);
        free(t);
    }
    pthread_mutex_unlock(&r->reg_lock);
    return found;
}

/* The key destructor of an exiting thread.  Its recorder may have been closed (t freed) or
 * abandoned after a fork: t is only touched when a live recorder still lists it. */
static void thread_exit(void *arg)
{
    if (tls_last.t == arg)
        tls_last.rec = NULL, tls_last.t = NULL;
    pthread_mutex_lock(&g_lock);
    for (trc_rec_t *r = g_live; r; r = r->next_live)
        if (atomic_load(&r->off) != REC_ABANDONED && retire(r, arg))
            break;
    pthread_mutex_unlock(&g_lock);
}

/* Registers the calling thread with rec; NULL when out of memory. */
static tstate_t *join(trc_rec_t *rec)
{
    tstate_t *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    pthread_mutex_lock(&rec->reg_lock);
    t->next = rec->threads;
    rec->threads = t;
    pthread_mutex_unlock(&rec->reg_lock);
    if (pthread_setspecific(rec->key, t) != 0) {
        retire(rec, t);
        return NULL;
    }
    return t;
}

/* g_lock is held across fork, so that a child (which has only the forking thread) never finds
 * it locked by a thread that does not exist there. */
static void fork_prepare(void)
{
    pthread_mutex_lock(&g_lock);
}

static void fork_release(void)
{
    pthread_mutex_unlock(&g_lock);
}

static void once_init(void)
{
    pthread_atfork(fork_prepare, fork_release, fork_release);
    g_asym = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

/* ------------------------------------------------------------------ the hot path */

/* Begins empty block b with a TIME_BASE record at `time`; its length, or a negative errno. */
static __attribute__((noinline)) long put_time_base(tstate_t *t, block_t *b, uint64_t time)
{
    trc_event_t base = { .type = TRC_REC_TIME_BASE, .time = time };
    long n = trc_encode_event(&t->enc, b->data, b->cap, &base);

    if (n >= 0)
        b->len = (size_t)n;
    return n;
}

/* Encodes ev at the end of b, after a TIME_BASE when b is empty; the record's length, or a
 * negative errno with b as it was (-ENOSPC also when there is no b). */
static inline long try_put(tstate_t *t, block_t *b, const trc_event_t *ev)
{
    if (!b)
        return -ENOSPC;
    size_t len0 = b->len;
    long n;
    if (__builtin_expect(len0 == 0, 0) && (n = put_time_base(t, b, ev->time)) < 0)
        return n;
    n = trc_encode_event(&t->enc, b->data + b->len, b->cap - b->len, ev);
    if (n < 0) {
        b->len = len0;
        return n;
    }
    b->len += (size_t)n;
    b->events++;
    return n;
}

/* An empty block of `cap` bytes: a spare one when there is one of that size. */
static block_t *new_block(trc_rec_t *rec, size_t cap)
{
    block_t *b = NULL;
    if (cap == rec->buffer_bytes) {
        pthread_mutex_lock(&rec->q_lock);
        if ((b = rec->spare)) {
            rec->spare = b->next;
            rec->nspare--;
        }
        pthread_mutex_unlock(&rec->q_lock);
    }
    if (b || (b = malloc(sizeof(*b) + cap)))
        *b = (block_t){ .cap = cap };
    return b;
}

/* Puts ev in the buffer *bp: when it does not fit, a full buffer goes to the writer and a new
 * one (larger, for a record bigger than a buffer) takes its place.  0 or a negative errno. */
static int put(trc_rec_t *rec, tstate_t *t, block_t **bp, const trc_event_t *ev)
{
    long n = try_put(t, *bp, ev);
    if (n != -ENOSPC)
        return n < 0 ? (int)n : 0;
    if (*bp)
        hand_over(rec, *bp);
    *bp = NULL;
    for (size_t cap = rec->buffer_bytes; cap <= MAX_BLOCK; cap *= 2) {
        block_t *b = new_block(rec, cap);
        if (!b)
            return -ENOMEM;
        n = try_put(t, b, ev);
        if (n >= 0) {
            *bp = b;
            return 0;
        }
        free(b);
        if (n != -ENOSPC)
            return (int)n;
    }
    return -E2BIG;
}

/* The calling thread's state in rec when it is not the one it recorded into last:
 * registered on first use; NULL when out of memory. */
static __attribute__((noinline)) tstate_t *other_thread_state(const trc_rec_t *rec)
{
    tstate_t *t = pthread_getspecific(rec->key);
    if (!t && !(t = join((trc_rec_t *)rec)))
        return NULL;
    tls_last.rec = rec;
    tls_last.serial = rec->serial;
    tls_last.t = t;
    return t;
}

/* The calling thread's state in rec, registered on first use; NULL when out of memory. */
static inline tstate_t *this_thread(const trc_rec_t *rec)
{
    if (__builtin_expect(tls_last.rec == rec && tls_last.serial == rec->serial, 1))
        return tls_last.t;
    return other_thread_state(rec);
}

/* put_in_place's event did not fit in b (or b is NULL), inside the event that began with
 * seq s: takes b back from the slot unless the writer took it, leaves the event, then puts
 * ev in a new buffer.  0 or a negative errno. */
static __attribute__((noinline)) int put_full(trc_rec_t *rec, tstate_t *t, block_t *b,
                                              const trc_event_t *ev, uint64_t s)
{
    block_t *mine = b;

    if (b && !atomic_compare_exchange_strong_explicit(&t->cur, &mine, NULL, memory_order_acquire,
                                                      memory_order_relaxed))
        b = NULL;                                   /* the writer has it */
    atomic_store_explicit(&t->seq, s + 2, memory_order_release);
    int rc = put(rec, t, &b, ev);                   /* hands b over when it is ours */
    if (b)
        atomic_store_explicit(&t->cur, b, memory_order_release);
    return rc;
}

/*
 * ev into t's buffer, left in its slot (asym mode, see the top of the file).  Inside the
 * event (odd seq) the owner only encodes and, for a full buffer, takes it back from the slot
 * with a compare-and-swap: no lock, no wait, so a sweep may wait for it.  It leaves the event
 * before handing the full buffer over (it is then the buffer's only holder) or, when the
 * writer took the buffer first, before starting a new one; a new buffer is published in the
 * slot with the event in it.  0 or a negative errno.
 */
static inline int put_in_place(trc_rec_t *rec, tstate_t *t, const trc_event_t *ev)
{
    uint64_t s = atomic_load_explicit(&t->seq, memory_order_relaxed);
    atomic_store_explicit(&t->seq, s + 1, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);      /* the writer's membarrier does the rest */
    block_t *b = atomic_load_explicit(&t->cur, memory_order_relaxed);
    long n = try_put(t, b, ev);
    if (__builtin_expect(n != -ENOSPC, 1)) {
        atomic_store_explicit(&t->seq, s + 2, memory_order_release);
        return n < 0 ? (int)n : 0;
    }
    return put_full(rec, t, b, ev, s);
}

int trc_rec_event(trc_rec_t *rec, const trc_event_t *ev)
{
    if (atomic_load_explicit(&rec->off, memory_order_relaxed))
        return trc_rec_status(rec);
    if (ev->type < TRC_EV_PROCESS)
        return -EINVAL;
    tstate_t *t = this_thread(rec);
    if (!t)
        return -ENOMEM;
    if (__builtin_expect(g_asym, 1)) {
        int rc = put_in_place(rec, t, ev);
        if (rc == 0)
            atomic_store_explicit(&t->events, ++t->count, memory_order_relaxed);
        return rc;
    }
    block_t *b = atomic_exchange_explicit(&t->cur, NULL, memory_order_acquire);
    int rc = put(rec, t, &b, ev);
    atomic_store_explicit(&t->cur, b, memory_order_release);
    if (rc == 0)
        atomic_store_explicit(&t->events, ++t->count, memory_order_relaxed);
    return rc;
}

/* ------------------------------------------------------------------ interning */

/* After a failed intern: a write error (sticky in the writer) turns recording off. */
static long intern_failed(trc_rec_t *rec, long rc)
{
    int werr = trc_writer_flush(rec->w);
    if (werr < 0) {
        pthread_mutex_unlock(&rec->file_lock);
        fail(rec, werr);
        return werr;
    }
    pthread_mutex_unlock(&rec->file_lock);
    return rc;
}

/* Called with file_lock held, releases it: writes the new table record at once. */
static long intern_done(trc_rec_t *rec, long id)
{
    if (id < 0)
        return intern_failed(rec, id);
    int rc = trc_writer_flush(rec->w);
    atomic_store(&rec->bytes, trc_writer_bytes(rec->w));
    if (rc < 0)
        return intern_failed(rec, rc);
    pthread_mutex_unlock(&rec->file_lock);
    return id;
}

long trc_rec_string(trc_rec_t *rec, const char *s)
{
    int rc = trc_rec_status(rec);
    if (rc < 0)
        return rc;
    pthread_mutex_lock(&rec->file_lock);
    return intern_done(rec, trc_writer_string(rec->w, s));
}

long trc_rec_intern_stack(trc_rec_t *rec, const trc_frame_t *frames, uint32_t depth)
{
    int rc = trc_rec_status(rec);
    if (rc < 0)
        return rc;
    pthread_mutex_lock(&rec->file_lock);
    return intern_done(rec, trc_writer_stack(rec->w, frames, depth));
}

long trc_rec_intern_stack_py(trc_rec_t *rec, const trc_stack_t *s)
{
    int rc = trc_rec_status(rec);
    if (rc < 0)
        return rc;
    pthread_mutex_lock(&rec->file_lock);
    return intern_done(rec, trc_writer_stack_py(rec->w, s));
}

trc_stk_t *trc_rec_stk(trc_rec_t *rec)
{
    return rec->stk;
}

/* ------------------------------------------------------------------ flushing */

void trc_rec_flush_thread(trc_rec_t *rec)
{
    tstate_t *t = atomic_load(&rec->off) ? NULL : pthread_getspecific(rec->key);
    if (!t)
        return;
    pthread_mutex_lock(&rec->q_lock);
    block_t *b = atomic_exchange_explicit(&t->cur, NULL, memory_order_acquire);
    if (b)
        enqueue(rec, b);
    pthread_mutex_unlock(&rec->q_lock);
}

int trc_rec_flush(trc_rec_t *rec)
{
    int rc = trc_rec_status(rec);
    if (rc < 0)
        return rc;
    trc_rec_flush_thread(rec);
    pthread_mutex_lock(&rec->q_lock);
    uint64_t gen = ++rec->flush_req;
    pthread_cond_signal(&rec->q_cond);
    while (rec->flush_done < gen)
        pthread_cond_wait(&rec->done_cond, &rec->q_lock);
    pthread_mutex_unlock(&rec->q_lock);
    return trc_rec_status(rec);
}

uint64_t trc_rec_events(const trc_rec_t *rec)
{
    trc_rec_t *r = (trc_rec_t *)rec; /* the registry lock is not part of the value */
    pthread_mutex_lock(&r->reg_lock);
    uint64_t n = r->retired;
    for (tstate_t *t = r->threads; t; t = t->next)
        n += atomic_load_explicit(&t->events, memory_order_relaxed);
    pthread_mutex_unlock(&r->reg_lock);
    return n;
}

uint64_t trc_rec_bytes(const trc_rec_t *rec)
{
    return atomic_load(&rec->bytes);
}

/* ------------------------------------------------------------------ open and close */

static void destroy(trc_rec_t *rec)
{
    while (rec->threads) {
        tstate_t *t = rec->threads;
        rec->threads = t->next;
        free(atomic_load(&t->cur));
        free(t);
    }
    for (block_t *next; rec->spare; rec->spare = next) {
        next = rec->spare->next;
        free(rec->spare);
    }
    trc_stk_free(rec->stk);
    pthread_cond_destroy(&rec->q_cond);
    pthread_cond_destroy(&rec->space_cond);
    pthread_cond_destroy(&rec->done_cond);
    pthread_mutex_destroy(&rec->q_lock);
    pthread_mutex_destroy(&rec->reg_lock);
    pthread_mutex_destroy(&rec->file_lock);
    free(rec);
}

/* Locks and condition variables (the waits use CLOCK_MONOTONIC, as the flush interval). */
static int init_sync(trc_rec_t *rec)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&rec->reg_lock, NULL);
    pthread_mutex_init(&rec->q_lock, NULL);
    pthread_mutex_init(&rec->file_lock, NULL);
    pthread_cond_init(&rec->q_cond, &ca);
    pthread_cond_init(&rec->space_cond, NULL);
    pthread_cond_init(&rec->done_cond, NULL);
    pthread_condattr_destroy(&ca);
    return -pthread_key_create(&rec->key, thread_exit);
}

static int configure(trc_rec_t *rec, const trc_rec_config_t *cfg)
{
    rec->buffer_bytes = cfg && cfg->buffer_bytes ? cfg->buffer_bytes : DEFAULT_BUFFER;
    rec->flush_ms = cfg && cfg->flush_ms ? cfg->flush_ms : DEFAULT_FLUSH_MS;
    rec->clock = cfg ? cfg->clock : NULL;
    rec->on_error = cfg ? cfg->on_error : NULL;
    rec->tail = &rec->head;
    rec->serial = atomic_fetch_add(&rec_serials, 1) + 1;
    if (rec->buffer_bytes < MIN_BUFFER || rec->buffer_bytes > MAX_BLOCK)
        return -EINVAL;
    return (rec->stk = trc_stk_new()) ? 0 : -ENOMEM;
}

/* Starts the writer thread and makes rec known to exiting threads. */
static int start(trc_rec_t *rec)
{
    int rc = -pthread_create(&rec->writer, NULL, writer_main, rec);
    if (rc < 0)
        return rc;
    pthread_mutex_lock(&g_lock);
    rec->next_live = g_live;
    g_live = rec;
    pthread_mutex_unlock(&g_lock);
    return 0;
}

int trc_rec_open(const char *path, const trc_rec_config_t *cfg, trc_rec_t **out)
{
    *out = NULL;
    pthread_once(&g_once, once_init);
    trc_rec_t *rec = calloc(1, sizeof(*rec));
    if (!rec)
        return -ENOMEM;
    int rc = init_sync(rec);
    if (rc < 0) {
        destroy(rec);
        return rc;
    }
    if ((rc = configure(rec, cfg)) < 0 ||
        (rc = trc_writer_open(path, cfg ? cfg->flags : 0, &rec->w)) < 0 ||
        (rc = start(rec)) < 0) {
        trc_writer_close(rec->w); /* a file made before the failure stays, with its END */
        pthread_key_delete(rec->key);
        destroy(rec);
        return rc;
    }
    atomic_store(&rec->bytes, trc_writer_bytes(rec->w));
    *out = rec;
    return 0;
}

/* Takes rec off the live list: no exiting thread touches it after this returns. */
static void unpublish(trc_rec_t *rec)
{
    pthread_mutex_lock(&g_lock);
    for (trc_rec_t **p = &g_live; *p; p = &(*p)->next_live)
        if (*p == rec) {
            *p = rec->next_live;
            break;
        }
    pthread_key_delete(rec->key);
    pthread_mutex_unlock(&g_lock);
}

int trc_rec_close(trc_rec_t *rec)
{
    if (!rec)
        return 0;
    unpublish(rec);
    pthread_mutex_lock(&rec->q_lock);
    rec->stop = 1;
    pthread_cond_broadcast(&rec->q_cond);
    pthread_cond_broadcast(&rec->space_cond);
    pthread_mutex_unlock(&rec->q_lock);
    pthread_join(rec->writer, NULL);
    int rc = trc_writer_close(rec->w);
    int err = atomic_load(&rec->error);
    destroy(rec);
    return err ? err : rc;
}

/* In a forked child: the writer thread and every other thread are gone, and any lock of ours
 * may be held by one of them, so nothing is locked, freed, written or closed.  The child keeps
 * the parent's file descriptor (close-on-exec) and the memory, which it never uses again. */
void trc_rec_abandon(trc_rec_t *rec)
{
    if (rec)
        atomic_store(&rec->off, REC_ABANDONED);
}
