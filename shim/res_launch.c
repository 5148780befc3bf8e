/* SPDX-License-Identifier: MIT */
/*
 * res_launch.c - what a launch or copy reaches, and making it resident before it is enqueued.
 *
 * Pointers are found in every 8-byte word of every kernel parameter (sizes from
 * cuFuncGetParamInfo, cached per function) or of the `extra` buffer, and in copy operands;
 * each names the chunks of its allocation.  Chunks on the host are brought into GPU memory,
 * evicting others, before the driver enqueues the operation; afterwards the operation becomes
 * their last use (res_use.c).  The device's lock is held from a launch's begin to its end; a
 * copy, which may wait for the GPU in the driver, holds its chunks instead (copy_unlock).
 * While a trace is recorded (the launch has an operation id), the tracer sees the same words
 * (shim_trace_launch_args, with the context and device) and asks for the base of the
 * allocation of those it does not know yet, to name the allocations in the launch's record.
 * What a copy's operands are is read from its description by res_copy.c; a graph launch's
 * fence on the other devices is res_fence.c's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "res_int.h"
#include "res_ptime.h"

/* ---------------------------------------------------------------- launches and copies */

static SHIM_TLS collect_t thread_collect;

/* The fast path saw this thread's launch for the iteration detector and left it to the
 * general path (res_launch_begin, which the wrapper calls next). */
static SHIM_TLS int fast_detected;

/* Start collecting an operation on d: the thread's collect (a heap one if it is in use),
 * with d's lock taken; NULL when out of memory. */
static SHIM_ALWAYS_INLINE collect_t *collect_open(res_dev_t *d, CUcontext ctx)
{
    collect_t *k = &thread_collect;
    if (k->busy && !(k = calloc(1, sizeof(*k))))
        return NULL;
    k->busy = 1;
    k->d = d;
    k->ctx = ctx;
    k->ids = k->inline_ids;
    k->n = 0;
    k->cap = INLINE_IDS;
    k->unknown = k->capturing = k->away = k->in_place = k->detected = k->cover = 0;
    k->timed = 0;
    k->forward = 0;
    k->nbehind = 0;
    shim_lock(&d->lock);
    if (SHIM_UNLIKELY(d->cover_slot))
        res_use_cover_flush(d);
    k->serial = res_next_serial(d);
    return k;
}

/* Release d's lock and the collect. */
static void collect_close(collect_t *k)
{
    shim_unlock(&k->d->lock);
    if (k->ids != k->inline_ids)
        free(k->ids);
    k->ids = NULL;
    k->busy = 0;
    if (k != &thread_collect)
        free(k);
}

/* Room for twice as many chunk ids; 0, or -1 (the operation then counts as unknown). */
static int collect_grow(collect_t *k)
{
    size_t cap = k->cap * 2;
    uint32_t *ids = malloc(cap * sizeof(*ids));
    if (!ids) {
        k->unknown = 1;
        return -1;
    }
    memcpy(ids, k->ids, k->n * sizeof(*ids));
    if (k->ids != k->inline_ids)
        free(k->ids);
    k->ids = ids;
    k->cap = cap;
    return 0;
}

/* What collecting reads of k and its device, copied once per operation into locals (the
 * compiler cannot keep them in registers across the stores collecting makes). */
typedef struct geo {
    uint64_t base, size, chunk;
    int shift;
    chunk_t *chunks;
    uint32_t serial;
    uint64_t span_lo, span_len;     /* res_span_*: where other devices' arenas may be */
} geo_t;

static inline geo_t geo_of(const collect_t *k)
{
    const res_dev_t *d = k->d;
    return (geo_t){ d->base, d->size, d->chunk, d->chunk_shift, d->chunks, k->serial,
                    atomic_load_explicit(&res_span_lo, memory_order_relaxed),
                    atomic_load_explicit(&res_span_len, memory_order_relaxed) };
}

/* Word p lies outside k's arena but inside the span of all arenas: kept (once) when it points
 * into another device's arena, for others_take.  Out of memory, it is lost (and said so). */
static SHIM_COLD __attribute__((noinline)) void collect_other(collect_t *k, uint64_t p)
{
    if (!res_owner(p))
        return;
    for (uint32_t i = 0; i < k->nothers; i++)
        if (k->others[i] == p)
            return;
    if (k->nothers == k->cap_others) {
        uint32_t cap = k->cap_others ? k->cap_others * 2 : 8;
        uint64_t *w = realloc(k->others, cap * sizeof(*w));
        if (!w) {
            SHIM_WARN(RES, "out of memory: an operation on device %d may fault on another "
                      "device's memory at 0x%llx", k->d->device, (unsigned long long)p);
            return;
        }
        k->others = w;
        k->cap_others = cap;
    }
    k->others[k->nothers++] = p;
}

static SHIM_ALWAYS_INLINE void collect_chunk(collect_t *k, const geo_t *g, uint32_t ci)
{
    chunk_t *c = &g->chunks[ci];
    if (c->seen == g->serial)
        return;
    c->seen = g->serial;
    k->away |= c->tier != TIER_GPU;
    if (k->n < k->cap || collect_grow(k) == 0)
        k->ids[k->n++] = ci;
}

/*
 * A launch's pointer into chunk ci of an allocation of several chunks (k->forward): every
 * chunk of the allocation is collected, once, and the chunks before the lowest pointer the
 * launch passes into it are told apart (collect_t.behind).  A kernel indexes forward from the
 * pointers it is given (a tensor's data pointer, a matrix's first element), so in an
 * allocation that holds many tensors (a caching allocator's segment) only the chunks from the
 * pointer on come into GPU memory for it; those before it stay mapped where they are, so a
 * kernel that does reach back still finds them, in host memory.  Beyond BEHIND_SPANS such
 * allocations, the rest are collected whole, none of their chunks behind.
 */
static SHIM_COLD __attribute__((noinline)) void collect_forward(collect_t *k, const geo_t *g,
                                                                uint32_t ci)
{
    const chunk_t *c = &g->chunks[ci];
    uint32_t first = c->span_first, i = 0;
    while (i < k->nbehind && k->behind[i].first != first)
        i++;
    if (i < k->nbehind) {                   /* (its chunks are collected already) */
        if (ci < k->behind[i].lo)
            k->behind[i].lo = ci;
        return;
    }
    if (c->seen == g->serial)
        return;                             /* collected whole: nothing of it is behind */
    if (ci > first && k->nbehind < BEHIND_SPANS) {
        k->behind[i].first = first;
        k->behind[i].lo = ci;
        k->nbehind++;
    }
    for (uint32_t j = 0, n = c->span_n; j < n; j++)
        collect_chunk(k, g, first + j);
}

/*
 * Every chunk of the allocation containing p, when p lies in a chunk in use.  Read from the
 * chunk's span stamp, not arena_lookup: a value that points into a chunk in use but into no
 * allocation (the slack of a slot, a freed slot, a word that only looks like a pointer)
 * collects the chunk too, which costs residency and a recorded use, never correctness.  A
 * launch's pointer into an allocation of several chunks: see collect_forward.
 */
static SHIM_ALWAYS_INLINE void collect_ptr(collect_t *k, const geo_t *g, uint64_t p)
{
    uint64_t off = p - g->base;
    if (off >= g->size) {
        if (SHIM_UNLIKELY(p - g->span_lo < g->span_len))
            collect_other(k, p);
        return;
    }
    uint32_t ci = (uint32_t)(g->shift >= 0 ? off >> g->shift : off / g->chunk);
    const chunk_t *c = &g->chunks[ci];
    if (c->tier == TIER_NONE || (c->seen == g->serial && !(k->forward && c->span_n > 1)))
        return;
    if (c->span_n <= 1) {
        collect_chunk(k, g, ci);
        return;
    }
    if (k->forward) {
        collect_forward(k, g, ci);
        return;
    }
    for (uint32_t i = 0, first = c->span_first, n = c->span_n; i < n; i++)
        collect_chunk(k, g, first + i);
}

/*
 * The chunks in use of [p, p + bytes), a copy's or memset's operand: a copy reaches only the
 * bytes it names, so a slice of a large allocation does not bring the whole allocation in,
 * and one of no bytes reaches nothing.  The range may run from one allocation into the next
 * (the driver copies any mapped range of the address space, and the arena is one
 * reservation), so every chunk in use that it covers is collected, whichever allocation
 * holds it.  A part outside the arena (another device's arena) is collected as the pointer
 * to its first byte is.
 */
static void collect_range(collect_t *k, const geo_t *g, uint64_t p, uint64_t bytes)
{
    uint64_t off = p - g->base;
    if (!bytes)
        return;
    if (off >= g->size) {
        collect_ptr(k, g, p);
        return;
    }
    uint64_t end = bytes > g->size - off ? g->size : off + bytes;
    uint32_t first = (uint32_t)(g->shift >= 0 ? off >> g->shift : off / g->chunk);
    uint32_t last = (uint32_t)(g->shift >= 0 ? (end - 1) >> g->shift : (end - 1) / g->chunk);
    for (uint32_t ci = first; ci <= last; ci++)
        if (g->chunks[ci].tier != TIER_NONE)
            collect_chunk(k, g, ci);
    if (end == g->size && bytes > g->size - off)
        collect_ptr(k, g, g->base + g->size);
}

void res_collect_chunk(collect_t *k, uint32_t ci)
{
    geo_t g = geo_of(k);
    collect_chunk(k, &g, ci);
}

void res_collect_ptr(collect_t *k, uint64_t p)
{
    geo_t g = geo_of(k);
    collect_ptr(k, &g, p);
}

/* For the trace: the base of the allocation holding p (inside d's arena, d's lock held), or
 * 0. */
static uint64_t dev_base(const res_dev_t *d, uint64_t p)
{
    arena_info_t info;
    uint64_t off = p - d->base;
    uint32_t ci = (uint32_t)(d->chunk_shift >= 0 ? off >> d->chunk_shift : off / d->chunk);
    int found = d->chunks[ci].tier != TIER_NONE && arena_lookup(d->arena, p, &info) == 0;
    return found ? info.base : 0;
}

/* dev_base for the device of collect ctx (shim_trace_arena_t.base_of). */
static uint64_t arena_base(void *ctx, uint64_t p)
{
    return dev_base(((collect_t *)ctx)->d, p);
}

/* dev_base for device ctx (shim_trace_arena_t.base_of, on the fast path). */
static uint64_t dev_base_of(void *ctx, uint64_t p)
{
    return dev_base(ctx, p);
}

/* The words a launch's arguments hold, gathered for the tracer (one call per batch). */
typedef struct trace_words {
    size_t n;
    uint64_t w[64];
} trace_words_t;

/* The arena the words of an operation collected by k may point into, for the tracer. */
static shim_trace_arena_t trace_arena(collect_t *k)
{
    return (shim_trace_arena_t){ k->d->base, k->d->size, arena_base, k };
}

/* A full batch of words handed to the tracer (the last one goes with shim_trace_launch_args). */
static SHIM_COLD void trace_flush(collect_t *k, trace_words_t *t)
{
    shim_trace_arena_t a = trace_arena(k);
    shim_trace_words(t->w, t->n, &a);
    t->n = 0;
}

/* Scan every 8-byte word of a parameter value for arena pointers (and, traced (t not NULL),
 * gather them for the tracer, which learns which allocations they name). */
static void collect_words(collect_t *k, const void *buf, size_t size, trace_words_t *t)
{
    geo_t g = geo_of(k);
    for (size_t off = 0; off + 8 <= size; off += 8) {
        uint64_t v;
        memcpy(&v, (const char *)buf + off, 8);
        collect_ptr(k, &g, v);
        if (t) {
            if (t->n == SHIM_ARRAY_LEN(t->w))
                trace_flush(k, t);
            t->w[t->n++] = v;
        }
    }
}

/* Parameter i of f: a CUfunction's, or a CUkernel's (which launches accept in a CUfunction's
 * place, but cuFuncGetParamInfo need not). */
static CUresult param_info(CUfunction f, int kernel, unsigned i, size_t *off, size_t *size)
{
    return kernel ? DRV(cuKernelGetParamInfo)((CUkernel)(void *)f, i, off, size)
                  : DRV(cuFuncGetParamInfo)(f, i, off, size);
}

/* Read f's parameter sizes from the driver into kp (n = 0 when it has none to give).  A
 * handle that cuFuncGetParamInfo does not answer for is asked as a CUkernel.  A driver before
 * 12.4 has neither call: every launch's arguments are then opaque (a fence). */
static void kparams_read(CUfunction f, kparams_t *kp)
{
    size_t off, size, cap = 0;
    int func = DRV(cuFuncGetParamInfo) != NULL;
    int kernel = (!func || DRV(cuFuncGetParamInfo)(f, 0, &off, &size) != CUDA_SUCCESS) &&
                 DRV(cuKernelGetParamInfo) &&
                 DRV(cuKernelGetParamInfo)((CUkernel)(void *)f, 0, &off, &size) == CUDA_SUCCESS;
    kp->n = 0;
    kp->words = 0;
    if (!func && !kernel)
        return;
    kp->words = 1;
    for (unsigned i = 0; param_info(f, kernel, i, &off, &size) == CUDA_SUCCESS; i++) {
        if (i == cap) {
            cap = cap ? cap * 2 : 8;
            uint32_t *sizes = realloc(kp->sizes, cap * sizeof(*sizes));
            if (!sizes) {
                kp->n = 0;          /* read as opaque: the launch becomes a fence */
                return;
            }
            kp->sizes = sizes;
        }
        kp->sizes[i] = (uint32_t)size;
        kp->n = i + 1;
        kp->words &= size == 8;
    }
    kp->words &= kp->n > 0 && kp->n <= INLINE_IDS;
}

/*
 * The parameter layout of kernel f, read once and cached on d, keyed by the handle and
 * res_code_gen: a module or library unload and a context teardown bump res_code_gen, so a handle
 * that new code reuses is read again.  When the probed slots are all taken by live kernels
 * the layout is read into *tmp (whose sizes the caller frees).
 */
static inline unsigned kparams_hash(CUfunction f)
{
    return (unsigned)(((uint64_t)(uintptr_t)f * 0x9E3779B97F4A7C15ull) >> 40);
}

static const kparams_t *kparams(res_dev_t *d, CUfunction f, kparams_t *tmp)
{
    unsigned gen = atomic_load_explicit(&res_code_gen, memory_order_acquire);
    unsigned h = kparams_hash(f);
    kparams_t *kp = &d->kcache[h % KCACHE];

    if (SHIM_LIKELY(kp->f == f && kp->gen == gen))
        return kp;                      /* the usual case: found at the first probe */
    kp = tmp;
    for (unsigned p = 0; p < KPROBE; p++) {
        kparams_t *e = &d->kcache[(h + p) % KCACHE];
        if (e->f == f && e->gen == gen)
            return e;
        if (kp == tmp && (!e->f || e->gen != gen))
            kp = e;
    }
    if (kp == tmp)
        tmp->sizes = NULL;
    kp->f = f;
    kp->gen = gen;
    kparams_read(f, kp);
    return kp;
}

/* The kernelParams of kernel f (traced when t is not NULL).  Out of line: inlined into
 * res_launch_begin it costs the untraced launch a call to kparams. */
static __attribute__((noinline)) void collect_params(collect_t *k, CUfunction f, void **params,
                                                     trace_words_t *t)
{
    kparams_t tmp;
    const kparams_t *kp = kparams(k->d, f, &tmp);
    geo_t g = geo_of(k);

    if (kp->n == 0)
        k->unknown = 1;             /* no parameter information: the arguments are opaque */
    if (!t) {                       /* untraced: a pointer-sized parameter is one word */
        for (unsigned i = 0; i < kp->n; i++) {
            uint64_t v;
            if (kp->sizes[i] != 8) {
                collect_words(k, params[i], kp->sizes[i], NULL);
                continue;
            }
            memcpy(&v, params[i], 8);
            collect_ptr(k, &g, v);
        }
    } else {                        /* traced: the words gathered for the tracer too */
        for (unsigned i = 0; i < kp->n; i++) {
            if (kp->sizes[i] != 8 || t->n == SHIM_ARRAY_LEN(t->w)) {
                collect_words(k, params[i], kp->sizes[i], t);
                continue;
            }
            memcpy(&t->w[t->n], params[i], 8);
            collect_ptr(k, &g, t->w[t->n++]);
        }
    }
    if (kp == &tmp)
        free(tmp.sizes);
}

/* A launch that passes `extra` (gathering the words for the tracer when t is not NULL). */
static SHIM_COLD void collect_extra(collect_t *k, const shim_launch_t *l, trace_words_t *t)
{
    for (size_t i = 0; l->extra[i] != CU_LAUNCH_PARAM_END && i < 64; i += 2)
        if (l->extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
            size_t size = 0;
            for (size_t j = 0; l->extra[j] != CU_LAUNCH_PARAM_END && j < 64; j += 2)
                if (l->extra[j] == CU_LAUNCH_PARAM_BUFFER_SIZE)
                    size = *(size_t *)l->extra[j + 1];
            collect_words(k, l->extra[i + 1], size, t);
        }
}

/* What launch l reaches, collected into k (and its words gathered into t when not NULL). */
static inline void collect_launch(collect_t *k, const shim_launch_t *l, trace_words_t *t)
{
    k->forward = k->d->reach_forward;
    if (!l->f || l->kind == SHIM_LAUNCH_LEGACY)
        k->unknown = 1;     /* a graph (nodes not inspected), or arguments set by cuParamSet* */
    else if (l->extra)
        collect_extra(k, l, t);
    else if (l->params)
        collect_params(k, l->f, l->params, t);
    k->forward = 0;
}

/* A recorded launch: collected as collect_launch does, its argument words gathered, and the
 * tracer told the context, the device and the last batch of words in one call.  Not cold:
 * while a trace is recorded, every launch comes here. */
static void collect_traced(collect_t *k, const shim_launch_t *l, CUcontext ctx)
{
    trace_words_t words;

    words.n = 0;                    /* (not the whole buffer: only words[0, n) are read) */
    collect_launch(k, l, &words);
    shim_trace_arena_t a = trace_arena(k);
    shim_trace_launch_args(ctx, k->d->device, words.w, words.n, &a);
}

/*
 * Captured work runs only when its graph is launched, so nothing is made resident for it and
 * no use is recorded now.  No capture can be open while none was begun through the shim: then
 * the driver is not asked.
 */
int res_stream_capturing(CUstream s, int ptds)
{
    if (atomic_load_explicit(&res_captures, memory_order_acquire) == 0)
        return 0;
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult r = ptds ? DRV(cuStreamIsCapturing_ptsz)(s, &st) : DRV(cuStreamIsCapturing)(s, &st);
    return r != CUDA_SUCCESS || st != CU_STREAM_CAPTURE_STATUS_NONE;
}

/*
 * The usual launch, collected in one pass without the general machinery: kernelParams of a
 * kernel whose layout is cached at its first probe and whose parameters are all single words,
 * on the stream of the device's last slot, with no capture possibly open (read under d's
 * lock: a capture that begins later covers this launch's use when it takes the lock).  Every
 * word pointing into a chunk in use must find the chunk in GPU memory, alone in its
 * allocation (or a slab), and last used on that stream or never, and no word may point into
 * another device's arena: then nothing moves and nothing is joined, and the use is recorded
 * as one tick of the slot (res_use_tick).  The chunks' ids go to ids[], each once (marked
 * seen with `serial`, a new one of d's), their number to *n; the words to words[] and their
 * number to *nw when words is not NULL (for the tracer).  With d locked, ctx the context of
 * the operation; returns 1 + the slot, or 0 when the launch takes the general path (chunks
 * may have been marked seen, nothing else changed).
 */
static SHIM_ALWAYS_INLINE unsigned fast_collect(res_dev_t *d, CUcontext ctx, CUfunction f,
                                                void **params, CUstream s, uint32_t serial,
                                                uint32_t *ids, unsigned *n, uint64_t *words,
                                                unsigned *nw)
{
    if (((!s || s == CU_STREAM_LEGACY) && ctx != d->ctx) || d->chunk_shift < 0 ||
        atomic_load_explicit(&res_captures, memory_order_acquire) != 0)
        return 0;
    unsigned gen = atomic_load_explicit(&res_code_gen, memory_order_acquire);
    const kparams_t *kp = &d->kcache[kparams_hash(f) % KCACHE];
    unsigned slot = d->last_slot;
    const strm_t *st = &d->streams[slot];
    if (kp->f != f || kp->gen != gen || !kp->words || st->live <= 0 || st->s != s)
        return 0;
    uint16_t me = (uint16_t)(slot + 1);
    uint64_t base = d->base, size = d->size;
    uint64_t span_lo = atomic_load_explicit(&res_span_lo, memory_order_relaxed);
    uint64_t span_len = atomic_load_explicit(&res_span_len, memory_order_relaxed);
    int shift = d->chunk_shift;
    chunk_t *chunks = d->chunks;
    unsigned got = 0, np = kp->n;
    for (unsigned i = 0; i < np; i++) {
        uint64_t v;
        memcpy(&v, params[i], 8);
        if (words)
            words[i] = v;
        uint64_t off = v - base;
        if (off >= size) {
            if (v - span_lo < span_len)
                return 0;
            continue;
        }
        uint32_t ci = (uint32_t)(off >> shift);
        chunk_t *c = &chunks[ci];
        if (c->tier == TIER_NONE || c->seen == serial)
            continue;
        if (c->tier != TIER_GPU || c->span_n > 1 || c->moving ||
            (c->use.slot && c->use.slot != me))
            return 0;
        c->seen = serial;
        ids[got++] = ci;
    }
    *n = got;
    if (words)
        *nw = np;
    return me;
}

/* The bases of the allocations that a recorded launch's words in other arenas name. */
typedef struct peer_bases {
    const uint64_t *w;
    const uint64_t *base;
    uint32_t n;
} peer_bases_t;

/* shim_trace_arena_t.base_of for those words. */
static uint64_t peer_base_of(void *ctx, uint64_t word)
{
    const peer_bases_t *p = ctx;
    for (uint32_t i = 0; i < p->n; i++)
        if (p->w[i] == word)
            return p->base[i];
    return 0;
}

/* A recorded launch's n words w in other devices' arenas named for the tracer: each one's
 * allocation looked up under its own device's lock (no other lock held). */
static SHIM_COLD void trace_peer_words(const uint64_t *w, uint32_t n)
{
    uint64_t *base = malloc(n * sizeof(*base));
    if (!base)
        return;                     /* out of memory: the record names fewer allocations */
    for (uint32_t i = 0; i < n; i++) {
        res_dev_t *o = res_owner(w[i]);
        base[i] = 0;
        if (o) {
            shim_lock(&o->lock);
            base[i] = dev_base(o, w[i]);
            shim_unlock(&o->lock);
        }
    }
    peer_bases_t p = { w, base, n };
    shim_trace_arena_t a = { atomic_load_explicit(&res_span_lo, memory_order_relaxed),
                             atomic_load_explicit(&res_span_len, memory_order_relaxed),
                             peer_base_of, &p };
    shim_trace_peer_words(w, n, &a);
    free(base);
}

/*
 * Operation k, collected on d under d's lock, reached the other devices' arenas at the words
 * k->others: d's lock is dropped, their allocations are taken there (and named to the tracer
 * when the operation is a recorded launch: `traced`), and k is opened again
 * (the caller collects the operation afresh: its chunks may have moved meanwhile), carrying
 * what was taken in k->foreign for res_launch_end or res_copy_end.  NULL when out of memory;
 * then nothing stays taken.
 */
static SHIM_COLD __attribute__((noinline)) collect_t *others_take(collect_t *k, CUstream s,
                                                                 int ptds, int traced)
{
    res_dev_t *d = k->d;
    CUcontext ctx = k->ctx;
    uint64_t *w = k->others;
    uint32_t n = k->nothers;

    k->others = NULL;
    k->nothers = k->cap_others = 0;
    collect_close(k);
    void *f = res_foreign_take(d, ctx, w, n, 0, res_stream_capturing(s, ptds));
    if (traced)
        trace_peer_words(w, n);
    free(w);
    if (!(k = collect_open(d, ctx))) {
        if (f)
            res_foreign_end(f, s, ptds, CUDA_ERROR_OUT_OF_MEMORY);   /* (nothing enqueued) */
        return NULL;
    }
    k->foreign = f;
    return k;
}

/* ---------------------------------------------------------------- launches */

/*
 * A launch on a stream other than a default one runs in the stream's context (cuda.h: a
 * CUkernel takes its context from the stream; the current one counts for the null stream
 * only), so the stream names the device; so it does for a copy or memset, whose use is
 * recorded on its stream, which only its own context's events can mark.  Each thread remembers
 * the last few such streams it used, each with its context and device, and an operation on one
 * of them does without asking the driver anything.  A stream is remembered once the driver
 * named its context (cuStreamGetCtx): an arena's own, the current one, whose device
 * res_active_dev gives, or any other, whose device res_ctx_dev gives, its arena set up if the
 * device has none yet (the operation runs there, and what it reaches in other devices' arenas
 * must be made reachable from there: others_take).  res_stream_gen, bumped before and after a
 * stream or context is destroyed (and on code unloads), retires every entry: a stream created
 * later may get a destroyed one's handle.
 */
#define STREAM_MEMO 4

typedef struct stream_memo {
    unsigned gen;                   /* res_stream_gen when the entries were made */
    unsigned next;                  /* the entry replaced next */
    struct {
        CUstream s;
        CUcontext ctx;
        res_dev_t *d;
    } e[STREAM_MEMO];
} stream_memo_t;

static SHIM_TLS stream_memo_t stream_memo;

/* op_dev past the memo: the device of ordinary stream s's context, remembered. */
static SHIM_COLD __attribute__((noinline)) res_dev_t *stream_dev_slow(CUstream s, CUcontext *ctx)
{
    unsigned gen = atomic_load_explicit(&res_stream_gen, memory_order_acquire);
    CUcontext sc = NULL;
    res_dev_t *d = NULL;
    if (DRV(cuStreamGetCtx)(s, &sc) != CUDA_SUCCESS || !sc)
        return res_active_dev(ctx);
    for (int i = 0; i < MAX_DEVICES && !d; i++)
        if (atomic_load_explicit((_Atomic int *)&res_devs[i].ready, memory_order_acquire) > 0 &&
            res_dev_ctx(&res_devs[i]) == sc)
            d = &res_devs[i];
    if (!d && (!(d = res_active_dev(ctx)) || *ctx != sc) && !(d = res_ctx_dev(sc)))
        return NULL;
    stream_memo_t *m = &stream_memo;
    if (m->gen != gen) {
        memset(m, 0, sizeof(*m));
        m->gen = gen;
    }
    unsigned i = m->next++ % STREAM_MEMO;
    m->e[i].s = s;
    m->e[i].ctx = *ctx = sc;
    m->e[i].d = d;
    return d;
}

/* The device (and context, in *ctx) an operation on stream s concerns: its stream's, through
 * the thread's memo, for an ordinary stream; the current context's otherwise (res_active_dev). */
static SHIM_ALWAYS_INLINE res_dev_t *op_dev(CUstream s, CUcontext *ctx)
{
    if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD ||
        atomic_load_explicit(&res_arenas, memory_order_acquire) == 0)
        return res_active_dev(ctx);
    const stream_memo_t *m = &stream_memo;
    if (SHIM_LIKELY(m->gen == atomic_load_explicit(&res_stream_gen, memory_order_acquire)))
        for (unsigned i = 0; i < STREAM_MEMO; i++)
            if (m->e[i].s == s) {
                res_dev_t *d = m->e[i].d;
                if (SHIM_UNLIKELY(atomic_load_explicit((_Atomic int *)&d->ready,
                                                       memory_order_acquire) <= 0))
                    return NULL;    /* a forked child */
                *ctx = m->e[i].ctx;
                return d;
            }
    return stream_dev_slow(s, ctx);
}

/* What the log says of an operation refused because what it reaches does not fit. */
#define REFUSED "refused with CUDA_ERROR_OUT_OF_MEMORY"

CUresult res_launch_begin(shim_launch_t *l)
{
    CUcontext ctx = NULL;
    res_dev_t *d = op_dev(l->stream, &ctx);
    collect_t *k;
    CUresult r = CUDA_SUCCESS;
    int detected = fast_detected;
    fast_detected = 0;
    l->res = NULL;
    if (!d || !(k = collect_open(d, ctx)))
        return r;
    k->detected = detected;
    l->res = k;             /* the lock stays held until res_launch_end */
    relax_t rx = relax_begin();
    if (l->op)
        collect_traced(k, l, ctx);
    else
        collect_launch(k, l, NULL);
    if (SHIM_UNLIKELY(k->nothers) &&
        (l->res = k = others_take(k, l->stream, shim_hook_per_thread[l->hook], l->op != 0)))
        collect_launch(k, l, NULL);     /* (the tracer has its words already) */
    if (k) {
        k->capturing = res_stream_capturing(l->stream, shim_hook_per_thread[l->hook]);
        if (SHIM_UNLIKELY(res_policy_plan))
            res_plan_op(d, k, PLAN_LAUNCH, (uintptr_t)l->f, NULL, l->stream,
                        shim_hook_per_thread[l->hook]);
        /* (A launch whose arguments the shim cannot read may reach other devices' memory
         * through peer access as a graph may: it fences them too.) */
        if ((l->kind == SHIM_LAUNCH_GRAPH || k->unknown) && !k->capturing &&
            atomic_load_explicit(&res_arenas, memory_order_acquire) > 1)
            res_fence_others_begin(k);
        if (!k->capturing &&
            res_reach(d, k, !k->in_place, !k->fenced, shim_hook_names[l->hook], REFUSED) < 0) {
            r = CUDA_ERROR_OUT_OF_MEMORY;
            d->refused++;
        }
        if (SHIM_UNLIKELY(k->timed)) {
            if (r == CUDA_SUCCESS && res_plan_away(d, k))
                res_ptime_before(d, k, l->stream, shim_hook_per_thread[l->hook]);
            else
                k->timed = 0;
        }
    }
    relax_end(rx);
    return r;
}

/* A recorded launch's fast path: its words handed to the tracer, as collect_traced does.  Out
 * of line, so that the untraced launch carries neither its stack nor its registers. */
static __attribute__((noinline)) unsigned fast_traced(res_dev_t *d, CUcontext ctx, CUfunction f,
                                                      void **params, CUstream s, uint32_t *ids,
                                                      unsigned *n)
{
    uint64_t words[INLINE_IDS];
    unsigned nw;
    unsigned me = fast_collect(d, ctx, f, params, s, res_next_serial(d), ids, n, words, &nw);
    if (me) {
        shim_trace_arena_t a = { d->base, d->size, dev_base_of, d };
        shim_trace_launch_args(ctx, d->device, words, nw, &a);
    }
    return me;
}

shim_lock_t *res_launch_fast(CUfunction f, void **params, CUstream s, int ptds, int traced)
{
    CUcontext ctx = NULL;
    res_dev_t *d;
    uint32_t ids[INLINE_IDS];
    unsigned n;
    if (s == CU_STREAM_PER_THREAD || (!s && ptds) || !(d = op_dev(s, &ctx)))
        return NULL;
    if (SHIM_UNLIKELY(res_policy_plan))
        res_plan_detect(f);
    shim_lock(&d->lock);
    if (SHIM_UNLIKELY(d->cover_slot))
        res_use_cover_flush(d);
    unsigned me = SHIM_LIKELY(!traced)
                      ? fast_collect(d, ctx, f, params, s, res_next_serial(d), ids, &n, NULL, NULL)
                      : fast_traced(d, ctx, f, params, s, ids, &n);
    if (!me) {
        shim_unlock(&d->lock);
        fast_detected = res_policy_plan;    /* (res_launch_begin follows at once) */
        return NULL;
    }
    int cover = SHIM_UNLIKELY(res_policy_plan) && res_plan_fast(d, ctx, f, ids, n, s);
    res_use_tick(d, ids, n, 0, (int)me - 1);
    if (SHIM_UNLIKELY(cover))
        res_use_cover_due(d, (int)me - 1);      /* (the event: once the driver enqueued it) */
    return &d->lock;
}

/* The end of an operation k on stream s: record its use if the driver took it; release what
 * it took on other devices (and the words of theirs it kept once more: see others_take). */
static SHIM_ALWAYS_INLINE void op_end(collect_t *k, CUresult r, CUstream s, shim_hook_t h)
{
    void *f = k->foreign;
    if (SHIM_UNLIKELY(k->timed)) {
        relax_t rx = relax_begin();
        res_ptime_after(k->d, k, r, s, shim_hook_per_thread[h]);
        relax_end(rx);
    }
    if (r == CUDA_SUCCESS && !k->capturing) {
        relax_t rx = relax_begin();
        res_finish(k->d, k, s, shim_hook_per_thread[h]);
        if (SHIM_UNLIKELY(k->fenced))
            res_fence_others_end(k, r, s, shim_hook_per_thread[h]);
        relax_end(rx);
    }
    if (SHIM_UNLIKELY(k->fenced))   /* (refused or failed: their locks only) */
        res_fence_others_end(k, r, s, shim_hook_per_thread[h]);
    if (SHIM_UNLIKELY(f != NULL || k->others != NULL)) {
        free(k->others);
        k->others = NULL;
        k->nothers = k->cap_others = 0;
        k->foreign = NULL;
    }
    collect_close(k);
    if (SHIM_UNLIKELY(f != NULL))
        res_foreign_end(f, s, shim_hook_per_thread[h], r);
}

void res_launch_end(shim_launch_t *l, CUresult r)
{
    collect_t *k = l->res;
    if (!k)
        return;
    l->res = NULL;
    op_end(k, r, l->stream, l->hook);
}

/* ---------------------------------------------------------------- copies */

/*
 * The chunks in use that the rows of shape s from p touch.  Rows (or slices) less than a
 * chunk apart leave no chunk between them untouched, so those are collected as one range;
 * rows further apart (a large pitch) one by one, since the allocations between them are not
 * reached and must not count against the GPU memory the operation needs (what a row
 * collects is bounded by the chunks between it and the next).  A row past the arena ends it:
 * the rest is collected as collect_range collects a range leaving the arena.
 */
static void collect_shape(collect_t *k, const geo_t *g, uint64_t p, shape_t s)
{
    if (!s.width || !s.rows || !s.depth)
        return;
    uint64_t row_gap = s.pitch > s.width ? s.pitch - s.width : 0;
    uint64_t slice_bytes = (s.rows - 1) * s.pitch + s.width;
    uint64_t slice_pitch = s.height * s.pitch;
    uint64_t slice_gap = slice_pitch > slice_bytes ? slice_pitch - slice_bytes : 0;
    if (row_gap < g->chunk && (s.depth == 1 || slice_gap < g->chunk)) {
        collect_range(k, g, p, (s.depth - 1) * slice_pitch + slice_bytes);
        return;
    }
    for (uint64_t z = 0; z < s.depth; z++) {
        uint64_t base = p + z * slice_pitch;
        if (base - g->base >= g->size) {
            collect_range(k, g, base, 1);
            return;
        }
        if (row_gap < g->chunk) {
            collect_range(k, g, base, slice_bytes);
            continue;
        }
        for (uint64_t y = 0; y < s.rows; y++) {
            uint64_t row = base + y * s.pitch;
            if (row - g->base >= g->size) {
                collect_range(k, g, row, 1);
                return;
            }
            collect_range(k, g, row, s.width);
        }
    }
}

/* What copy c reaches, collected into k. */
static void collect_copy(collect_t *k, const shim_copy_t *c)
{
    geo_t g = geo_of(k);
    if (SHIM_UNLIKELY(c->rows > 1)) {           /* 2D memset: its rows only */
        uint64_t width = c->bytes - (c->rows - 1) * c->pitch;
        collect_shape(k, &g, c->dst, (shape_t){ width, c->rows, 1, c->pitch, 0 });
        return;
    }
    if (SHIM_LIKELY(!c->desc && !c->count)) {   /* 1D: each operand's bytes, c->bytes long */
        collect_range(k, &g, c->dst, c->bytes);
        collect_range(k, &g, c->src, c->bytes);
        return;
    }
    for (size_t i = 0, n = res_copy_noperands(c); i < n; i++) {
        CUdeviceptr p = res_copy_operand(c, i);
        if (!res_copy_moves(c, i) || !p)
            continue;
        /* Its rows, in bytes, except a 3D batch's, whose elements are an array's when the
         * other side is one (wider than the bytes res_copy_shape counts): the allocation of its
         * first byte is collected whole as well, as a kernel's. */
        if (c->kind == SHIM_COPY_BATCH && c->desc)
            collect_ptr(k, &g, p);
        collect_shape(k, &g, p, res_copy_shape(c, i));
    }
}

/*
 * A copy with a host side may wait for the GPU inside the driver (a synchronous one, or one
 * of pageable host memory), so the device's lock is not held across the driver call (DESIGN.md,
 * invariant 7): the chunks it collected are held instead (res_hold: neither evicted nor
 * moved), and res_copy_end takes the lock again to release them and record the use.  A copy
 * from device memory to device memory, and a memset of device memory (of the arena: it
 * collected a chunk), do no host-side synchronisation (the driver API's "API synchronization
 * behavior"), so they keep the lock, as launches do, and skip the holds.
 */
static int copy_keeps_lock(const shim_copy_t *c, const collect_t *k)
{
    return c->kind == SHIM_COPY_DTOD || (c->kind == SHIM_COPY_MEMSET && k->n > 0);
}

static void copy_unlock(collect_t *k)
{
    for (size_t i = 0; i < k->n; i++)
        res_hold(k->d, k->ids[i]);
    shim_unlock(&k->d->lock);
}

CUresult res_copy_begin(shim_copy_t *c)
{
    CUcontext ctx = NULL;
    res_dev_t *d = op_dev(c->stream, &ctx);
    collect_t *k;
    int ptds = shim_hook_per_thread[c->hook];
    CUresult r = CUDA_SUCCESS;
    c->res = NULL;
    if (d && c->op)
        shim_trace_op_ctx(ctx, d->device);
    if (!d || !(k = collect_open(d, ctx)))
        return r;
    /* Relaxed from here, as a launch is: taking what the copy reaches on another device may
     * wait for evictions there even when the copy is captured (it pins what it reaches). */
    relax_t rx = relax_begin();
    collect_copy(k, c);
    if (SHIM_UNLIKELY(k->nothers) && (k = others_take(k, c->stream, ptds, 0)))
        collect_copy(k, c);
    if (k)
        k->capturing = res_stream_capturing(c->stream, ptds);
    if (k && SHIM_UNLIKELY(res_policy_plan))
        res_plan_op(d, k, c->kind == SHIM_COPY_MEMSET ? PLAN_MEMSET : PLAN_COPY,
                    (uintptr_t)c->kind, c, c->stream, ptds);
    if (k && c->kind == SHIM_COPY_BATCH)    /* (it may read out of stream order) */
        res_flights_wait_for(d, k);
    /* (Its evictions may wait without the lock, as a launch's.) */
    if (k && !k->capturing && res_reach(d, k, 0, 1, shim_hook_names[c->hook], REFUSED) < 0) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
        d->refused++;
    }
    if (k && SHIM_UNLIKELY(k->timed)) {
        if (r == CUDA_SUCCESS)
            res_ptime_before(d, k, c->stream, ptds);
        else
            k->timed = 0;               /* (refused: not timed) */
    }
    relax_end(rx);
    if (!k)
        return r;
    c->res = k;
    if (!copy_keeps_lock(c, k))
        copy_unlock(k);
    return r;
}

void res_copy_end(shim_copy_t *c, CUresult r)
{
    collect_t *k = c->res;
    if (!k)
        return;
    c->res = NULL;
    if (!copy_keeps_lock(c, k)) {
        shim_lock(&k->d->lock);
        for (size_t i = 0; i < k->n; i++)
            res_unhold(k->d, k->ids[i]);
    }
    op_end(k, r, c->stream, c->hook);
}

/* ---------------------------------------------------------------- stream memory operations */

/*
 * A stream memory operation (cuStreamWaitValue*, cuStreamWriteValue*, the entries of a
 * cuStreamBatchMemOp) reads or writes one word, which may lie in an arena, its stream's
 * device's or another's.  A wait may stay pending as long as the application likes: its
 * condition may wait for work not yet submitted, or for the host.  So it is not recorded as a
 * use of the chunk, since an eviction would then wait for it, perhaps while the thread that
 * would release it waits for the eviction; the word's chunk is made addressable and held where
 * it is, as another device's operation holds what it reaches (res_foreign.c), until an
 * event recorded behind the operation completes, and a captured one pins it.  A held chunk is
 * neither evicted nor moved, and a free of it waits for the event.  Another device's chunk is
 * also made accessible to the stream's device, as for a peer operation.
 */
void *res_memop_begin(CUstream s, int ptds, const CUdeviceptr *p, uint32_t n)
{
    CUcontext ctx = NULL;
    res_dev_t *d;
    if (atomic_load_explicit(&res_arenas, memory_order_acquire) == 0 || !(d = op_dev(s, &ctx)))
        return NULL;
    uint64_t *w = malloc(n * sizeof(*w));     /* (CUdeviceptr is another type) */
    if (!w) {
        SHIM_WARN(RES, "out of memory: a stream memory operation on device %d may reach "
                  "memory being paged", d->device);
        return NULL;
    }
    for (uint32_t i = 0; i < n; i++)
        w[i] = p[i];
    relax_t rx = relax_begin();
    void *f = res_foreign_take(d, ctx, w, n, 1, res_stream_capturing(s, ptds));
    relax_end(rx);
    free(w);
    return f;
}

void res_memop_end(void *held, CUstream s, int ptds, CUresult r)
{
    if (held)
        res_foreign_end(held, s, ptds, r);
}
