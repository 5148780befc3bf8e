/* SPDX-License-Identifier: MIT */
/*
 * trace_stream.c - the small numbers a trace gives streams: 0 for the legacy stream, then one
 * per stream handle (a lock-free table, a locked overflow beyond it) and one per thread for
 * per-thread default streams; a handle that the driver gives a new stream after
 * cuStreamDestroy gets a new number, but not one whose stream went with its context.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace_int.h"

/* ---------------------------------------------------------------- streams */

/* Slot of key in trace_st.over (stream_lock held, trace_st.over.cap > 0): its own, or the empty
 * one where it would go. */
static size_t over_slot(uintptr_t key)
{
    size_t i = trace_hash_ptr(key) & (trace_st.over.cap - 1);

    while (trace_st.over.keys[i] && trace_st.over.keys[i] != key)
        i = (i + 1) & (trace_st.over.cap - 1);
    return i;
}

/* Room for one more key in trace_st.over (stream_lock held); 0 or -ENOMEM. */
static int over_grow(void)
{
    if (trace_st.over.cap && (trace_st.over.n + 1) * 2 <= trace_st.over.cap)
        return 0;
    size_t ocap = trace_st.over.cap, cap = ocap ? ocap * 2 : 256;
    uintptr_t *ok = trace_st.over.keys, *k = calloc(cap, sizeof(*k));
    _Atomic uint64_t *ov = trace_st.over.vals, *v = calloc(cap, sizeof(*v));
    if (!k || !v) {
        free(k);
        free(v);
        return -ENOMEM;
    }
    trace_st.over.keys = k;
    trace_st.over.vals = v;
    trace_st.over.cap = cap;
    for (size_t i = 0; i < ocap; i++)
        if (ok[i]) {
            size_t j = over_slot(ok[i]);
            trace_st.over.keys[j] = ok[i];
            atomic_init(&trace_st.over.vals[j], atomic_load_explicit(&ov[i], memory_order_relaxed));
        }
    free(ok);
    free(ov);
    return 0;
}

/* The slot of key in the table, or of the empty entry where it would go, from slot `start`
 * on (stream_lock held, or a reader that checks under it what it did not find); STREAMS when
 * the table is full. */
static unsigned stream_slot(uintptr_t key, unsigned start)
{
    for (unsigned p = 0, i = start; p < STREAMS; p++, i = (i + 1) % STREAMS) {
        uintptr_t k = atomic_load_explicit(&trace_st.skeys[i], memory_order_acquire);
        if (k == key || k == 0)
            return i;
    }
    return STREAMS;
}

/* Where key's number is kept (stream_lock held), or NULL when it has none. */
static _Atomic uint64_t *stream_val(uintptr_t key)
{
    unsigned i = stream_slot(key, (unsigned)(trace_hash_ptr(key) % STREAMS));

    if (i < STREAMS)
        return atomic_load_explicit(&trace_st.skeys[i], memory_order_relaxed) == key
                   ? &trace_st.svals[i] : NULL;
    i = trace_st.over.cap ? (unsigned)over_slot(key) : 0;
    return trace_st.over.cap && trace_st.over.keys[i] == key ? &trace_st.over.vals[i] : NULL;
}

/* The number of key kept in trace_st.over, for a handle that found no room in the table
 * (stream_lock held): made when it has none.  Such a handle takes the lock at each lookup. */
static uint64_t over_number(uintptr_t key)
{
    _Atomic uint64_t *v = stream_val(key);
    uint64_t no = v ? atomic_load_explicit(v, memory_order_relaxed) : STREAM_GONE;

    if (no != STREAM_GONE)
        return no;
    if (!v) {
        if (over_grow() < 0)
            return STREAM_UNKNOWN;
        size_t i = over_slot(key);
        trace_st.over.keys[i] = key;
        trace_st.over.n++;
        v = &trace_st.over.vals[i];
    }
    no = atomic_fetch_add(&trace_st.stream_next, 1) + 1;
    atomic_store_explicit(v, no, memory_order_relaxed);
    return no;
}

/* The number of key, made when it has none (a new handle, or one whose stream was
 * destroyed): in the table, or in trace_st.over when the table is full. */
static uint64_t stream_insert(uintptr_t key, unsigned start)
{
    uint64_t no;

    pthread_mutex_lock(&trace_st.stream_lock);
    unsigned i = stream_slot(key, start);
    if (i == STREAMS) {
        no = over_number(key);
    } else if ((no = atomic_load_explicit(&trace_st.svals[i], memory_order_relaxed)) ==
               STREAM_GONE) {
        /* (An empty entry's value is STREAM_GONE too.) */
        no = atomic_fetch_add(&trace_st.stream_next, 1) + 1;
        atomic_store_explicit(&trace_st.svals[i], no, memory_order_relaxed);
        atomic_store_explicit(&trace_st.skeys[i], key, memory_order_release);
    }
    pthread_mutex_unlock(&trace_st.stream_lock);
    return no;
}

/* The number of stream handle s from the table.  Keys are never removed, so readers need no
 * lock: a key is published (release) after its value.  A handle whose stream was destroyed,
 * or that is not in the table, is numbered under the lock.  Out of line: trace_stream_no asks only
 * when its memo misses. */
__attribute__((noinline)) uint64_t trace_stream_lookup(CUstream s)
{
    uintptr_t key = (uintptr_t)s;
    unsigned start = (unsigned)(trace_hash_ptr(key) % STREAMS);
    for (unsigned p = 0, i = start; p < STREAMS; p++, i = (i + 1) % STREAMS) {
        uintptr_t k = atomic_load_explicit(&trace_st.skeys[i], memory_order_acquire);
        if (k == key) {
            uint64_t no = atomic_load_explicit(&trace_st.svals[i], memory_order_relaxed);
            if (no != STREAM_GONE)
                return no;
            break;
        }
        if (k == 0)
            break;
    }
    return stream_insert(key, start);
}

uint64_t shim_trace_stream_destroy(CUstream s)
{
    tstate_t *th = trace_enter();
    uint64_t no;

    if (!th)
        return STREAM_GONE;
    if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) {
        trace_leave(th);
        return STREAM_GONE;
    }
    pthread_mutex_lock(&trace_st.stream_lock);
    _Atomic uint64_t *v = stream_val((uintptr_t)s);
    no = v ? atomic_exchange_explicit(v, STREAM_GONE, memory_order_relaxed) : STREAM_GONE;
    pthread_mutex_unlock(&trace_st.stream_lock);
    /* Every thread's memo of it too (a thread's next use of the handle, by a new stream,
     * happens after this returns). */
    pthread_mutex_lock(&trace_st.states_lock);
    for (tstate_t *t = trace_st.states; t; t = t->next) {
        CUstream want = s;
        atomic_compare_exchange_strong_explicit(&t->last_s, &want, NULL, memory_order_relaxed,
                                                memory_order_relaxed);
    }
    pthread_mutex_unlock(&trace_st.states_lock);
    shim_timing_stream_gone();
    trace_leave(th);
    return no;
}

void shim_trace_ctx_destroy(CUcontext ctx, int dev)
{
    tstate_t *th = trace_enter();

    if (!th)
        return;
    /* (Not while a capture may be open: the waits would invalidate it.) */
    if (!res_capture_open())
        shim_timing_ctx_gone(ctx, dev);
    trace_leave(th);
}

void shim_trace_stream_kept(CUstream s, uint64_t no)
{
    tstate_t *th = no != STREAM_GONE ? trace_enter() : NULL;

    if (!th)
        return;
    pthread_mutex_lock(&trace_st.stream_lock);
    _Atomic uint64_t *v = stream_val((uintptr_t)s);
    uint64_t gone = STREAM_GONE;
    if (v)      /* unless a use meanwhile numbered it again */
        atomic_compare_exchange_strong_explicit(v, &gone, no, memory_order_relaxed,
                                                memory_order_relaxed);
    pthread_mutex_unlock(&trace_st.stream_lock);
    trace_leave(th);
}
