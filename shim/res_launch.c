/* SPDX-License-Identifier: MIT */
/*
 * res_launch.c - what a launch or copy reaches, and making it resident before it is enqueued.
 *
 * Pointers are found in every 8-byte word of every kernel parameter (sizes from
 * cuFuncGetParamInfo, cached per function) or of the `extra` buffer, and in copy operands;
 * each names the chunks of its allocation.  Chunks on the host are brought into GPU memory,
 * evicting others, before the driver enqueues the operation; afterwards the operation becomes
 * their last use (res_use.c).  The device's lock is held from begin to end.  While a trace is
 * recorded (the launch has an operation id), the tracer sees the same words
 * (shim_trace_launch_args, with the context and device) and asks for the base of the
 * allocation of those it does not know yet, to name the allocations in the launch's record.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "res_int.h"

/* ---------------------------------------------------------------- launches and copies */


static SHIM_TLS collect_t thread_collect;

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
    k->unknown = k->capturing = k->away = 0;
    k->fast = 0;
    shim_lock(&d->lock);
    k->serial = ++d->serial ? d->serial : ++d->serial;
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
} geo_t;

static inline geo_t geo_of(const collect_t *k)
{
    const res_dev_t *d = k->d;
    return (geo_t){ d->base, d->size, d->chunk, d->chunk_shift, d->chunks, k->serial };
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
 * Every chunk of the allocation containing p, when p lies in a chunk in use.  Read from the
 * chunk's span stamp, not arena_lookup: a value that points into a chunk in use but into no
 * allocation (the slack of a slot, a freed slot, a word that only looks like a pointer)
 * collects the chunk too, which costs residency and a recorded use, never correctness.
 */
static SHIM_ALWAYS_INLINE void collect_ptr(collect_t *k, const geo_t *g, uint64_t p)
{
    uint64_t off = p - g->base;
    if (off >= g->size)
        return;
    uint32_t ci = (uint32_t)(g->shift >= 0 ? off >> g->shift : off / g->chunk);
    const chunk_t *c = &g->chunks[ci];
    if (c->tier == TIER_NONE || c->seen == g->serial)
        return;
    if (c->span_n <= 1) {
        collect_chunk(k, g, ci);
        return;
    }
    for (uint32_t i = 0, first = c->span_first, n = c->span_n; i < n; i++)
        collect_chunk(k, g, first + i);
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

/* For the trace: the base of the allocation holding p (inside k's arena), or 0. */
static uint64_t arena_base(void *ctx, uint64_t p)
{
    const res_dev_t *d = ((collect_t *)ctx)->d;
    arena_info_t info;
    uint64_t off = p - d->base;
    uint32_t ci = (uint32_t)(d->chunk_shift >= 0 ? off >> d->chunk_shift : off / d->chunk);
    int found = d->chunks[ci].tier != TIER_NONE && arena_lookup(d->arena, p, &info) == 0;
    return found ? info.base : 0;
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
 * handle that cuFuncGetParamInfo does not answer for is asked as a CUkernel. */
static void kparams_read(CUfunction f, kparams_t *kp)
{
    size_t off, size, cap = 0;
    int kernel = DRV(cuFuncGetParamInfo)(f, 0, &off, &size) != CUDA_SUCCESS &&
                 DRV(cuKernelGetParamInfo) &&
                 DRV(cuKernelGetParamInfo)((CUkernel)(void *)f, 0, &off, &size) == CUDA_SUCCESS;
    kp->n = 0;
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
    if (!l->f || l->kind == SHIM_LAUNCH_LEGACY)
        k->unknown = 1;     /* a graph (nodes not inspected), or arguments set by cuParamSet* */
    else if (l->extra)
        collect_extra(k, l, t);
    else if (l->params)
        collect_params(k, l->f, l->params, t);
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
 * on the stream of the device's last slot, with no capture possibly open (read under the
 * lock: a capture that begins later covers this launch's use when it takes the lock).  Every
 * word pointing into a chunk in use must find the chunk in GPU memory, alone in its
 * allocation (or a slab), and last used on that stream or never: then nothing moves and
 * nothing is joined, and res_launch_end records the use as one tick of the slot (k->fast).
 * A recorded launch (`words` not NULL) also hands the tracer its argument words, as
 * collect_traced does.  Returns 1 when it collected the launch; 0 otherwise, with k as
 * collect_open left it but for a new serial (the chunks marked seen carry the old one).
 */
static SHIM_ALWAYS_INLINE int collect_fast(collect_t *k, const shim_launch_t *l, uint64_t *words)
{
    res_dev_t *d = k->d;
    CUfunction f = l->f;
    void **params = l->params;
    CUstream s = l->stream;

    if (!params || l->extra || !f || l->kind == SHIM_LAUNCH_LEGACY ||
        s == CU_STREAM_PER_THREAD || (!s && shim_hook_per_thread[l->hook]) ||
        ((!s || s == CU_STREAM_LEGACY) && k->ctx != d->ctx) || d->chunk_shift < 0 ||
        atomic_load_explicit(&res_captures, memory_order_acquire) != 0)
        return 0;
    unsigned gen = atomic_load_explicit(&res_code_gen, memory_order_acquire);
    const kparams_t *kp = &d->kcache[kparams_hash(f) % KCACHE];
    unsigned slot = d->last_slot;
    const strm_t *st = &d->streams[slot];
    if (kp->f != f || kp->gen != gen || !kp->words || st->live <= 0 || st->s != s)
        return 0;
    uint16_t me = (uint16_t)(slot + 1);
    uint32_t serial = k->serial;
    uint64_t base = d->base, size = d->size;
    int shift = d->chunk_shift;
    chunk_t *chunks = d->chunks;
    unsigned n = 0, np = kp->n;
    for (unsigned i = 0; i < np; i++) {
        uint64_t v;
        memcpy(&v, params[i], 8);
        if (words)
            words[i] = v;
        uint64_t off = v - base;
        if (off >= size)
            continue;
        uint32_t ci = (uint32_t)(off >> shift);
        chunk_t *c = &chunks[ci];
        if (c->tier == TIER_NONE || c->seen == serial)
            continue;
        if (c->tier != TIER_GPU || c->span_n > 1 || (c->use.slot && c->use.slot != me)) {
            k->serial = ++d->serial ? d->serial : ++d->serial;
            return 0;
        }
        c->seen = serial;
        k->inline_ids[n++] = ci;
    }
    k->n = n;
    k->fast = me;
    if (words) {
        shim_trace_arena_t a = trace_arena(k);
        shim_trace_launch_args(k->ctx, d->device, words, np, &a);
    }
    return 1;
}

void res_launch_begin(shim_launch_t *l)
{
    CUcontext ctx = NULL;
    res_dev_t *d = res_active_dev(&ctx);
    collect_t *k;
    l->res = NULL;
    if (!d || !(k = collect_open(d, ctx)))
        return;
    l->res = k;             /* the lock stays held until res_launch_end */
    if (l->op) {
        uint64_t words[INLINE_IDS];
        if (collect_fast(k, l, words))
            return;
    } else if (collect_fast(k, l, NULL)) {
        return;
    }
    relax_t rx = relax_begin();
    if (l->op)
        collect_traced(k, l, ctx);
    else
        collect_launch(k, l, NULL);
    k->capturing = res_stream_capturing(l->stream, shim_hook_per_thread[l->hook]);
    if (!k->capturing)
        res_reach(d, k, 1);
    relax_end(rx);
}

/* The end of an operation k on stream s: record its use if the driver took it. */
static SHIM_ALWAYS_INLINE void op_end(collect_t *k, CUresult r, CUstream s, shim_hook_t h)
{
    if (r == CUDA_SUCCESS && !k->capturing) {
        relax_t rx = relax_begin();
        res_finish(k->d, k, s, shim_hook_per_thread[h]);
        relax_end(rx);
    }
    collect_close(k);
}

void res_launch_end(shim_launch_t *l, CUresult r)
{
    collect_t *k = l->res;
    if (!k)
        return;
    l->res = NULL;
    if (SHIM_LIKELY(k->fast)) {         /* collected by collect_fast */
        if (r == CUDA_SUCCESS)
            res_use_tick(k->d, k, k->fast - 1);
        collect_close(k);
    } else {
        op_end(k, r, l->stream, l->hook);
    }
}

/* ---------------------------------------------------------------- operands on other devices */

/* A copy's operands in the arenas of devices other than the current context's: their
 * allocations' chunks [first, +n) on device o. */
typedef struct foreign {
    int dev;                    /* the device the copy was issued on */
    int count;
    int pinned;                 /* captured: pinned for good, access left granted */
    struct {
        res_dev_t *o;
        uint32_t first, n;
    } op[2];
} foreign_t;

/* Grant (or take back) device `dev` access to chunks [first, +n) of o's arena. */
static CUresult peer_access(res_dev_t *o, uint32_t first, uint32_t n, int dev, int on)
{
    CUmemAccessDesc a = { .location = { CU_MEM_LOCATION_TYPE_DEVICE, dev },
                          .flags = on ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                                      : CU_MEM_ACCESS_FLAGS_PROT_NONE };
    return DRV(cuMemSetAccess)(arena_chunk_addr(o->arena, first), (size_t)n * o->chunk, &a, 1);
}

/*
 * Operand p of a copy issued from device `dev` lies in o's arena: the chunks of its
 * allocation are made addressable (brought back where evicted chunks are unmapped), held
 * where they are until the copy is done (pinned for good when it is captured), and device
 * `dev` is given access to them, which the arena grants its own device only.  Done under
 * o's lock, with o's context current for any migration, before the current device's lock is
 * taken: no thread holds two devices' locks.  A p in no chunk in use is left to the driver.
 */
static void foreign_take(foreign_t *f, res_dev_t *o, uint64_t p, int dev, int capturing)
{
    CUcontext popped;
    int pushed = DRV(cuCtxPushCurrent_v2)(o->ctx) == CUDA_SUCCESS;
    shim_lock(&o->lock);
    uint32_t ci = (uint32_t)((p - o->base) / o->chunk);
    const chunk_t *c = &o->chunks[ci];
    if (c->tier != TIER_NONE) {
        uint32_t first = c->span_n > 1 ? c->span_first : ci, n = c->span_n > 1 ? c->span_n : 1;
        for (uint32_t i = first; i < first + n; i++) {
            res_map_back(o, i);
            if (capturing)
                res_pin(o, i);
            else
                res_hold(o, i);
        }
        if (peer_access(o, first, n, dev, 1) != CUDA_SUCCESS)
            SHIM_WARN(RES, "device %d cannot be given access to device %d's memory at 0x%llx: "
                      "the copy will fail", dev, o->device, (unsigned long long)p);
        f->op[f->count].o = o;
        f->op[f->count].first = first;
        f->op[f->count].n = n;
        f->count++;
    }
    shim_unlock(&o->lock);
    if (pushed)
        DRV(cuCtxPopCurrent_v2)(&popped);
}

/* The first byte a structured copy's side reaches, when it names device memory (a device or
 * unified address), else 0. */
static CUdeviceptr side_start(CUmemorytype type, CUdeviceptr base, size_t x, size_t y,
                              size_t z, size_t pitch, size_t height)
{
    if (type != CU_MEMORYTYPE_DEVICE && type != CU_MEMORYTYPE_UNIFIED)
        return 0;
    return base + (z * height + y) * pitch + x;
}

/* ops[] (destination, source) from 3D descriptor p: a CUDA_MEMCPY3D or a CUDA_MEMCPY3D_PEER,
 * whose fields have the same names. */
#define OPERANDS_3D(ops, p)                                                                    \
    ((ops)[0] = side_start((p)->dstMemoryType, (p)->dstDevice, (p)->dstXInBytes, (p)->dstY,   \
                           (p)->dstZ, (p)->dstPitch, (p)->dstHeight),                          \
     (ops)[1] = side_start((p)->srcMemoryType, (p)->srcDevice, (p)->srcXInBytes, (p)->srcY,   \
                           (p)->srcZ, (p)->srcPitch, (p)->srcHeight))

/* Copy c's destination and source as device addresses (0: none): its operands, or the first
 * bytes a 2D, 3D or 3D peer copy's descriptor reaches on each side. */
static void copy_operands(const shim_copy_t *c, CUdeviceptr ops[2])
{
    ops[0] = c->dst;
    ops[1] = c->src;
    if (!c->desc)
        return;
    if (c->kind == SHIM_COPY_2D) {
        const CUDA_MEMCPY2D *p = c->desc;
        ops[0] = side_start(p->dstMemoryType, p->dstDevice, p->dstXInBytes, p->dstY, 0,
                            p->dstPitch, 0);
        ops[1] = side_start(p->srcMemoryType, p->srcDevice, p->srcXInBytes, p->srcY, 0,
                            p->srcPitch, 0);
    } else if (c->kind == SHIM_COPY_3D) {
        OPERANDS_3D(ops, (const CUDA_MEMCPY3D *)c->desc);
    } else if (c->kind == SHIM_COPY_3D_PEER) {
        OPERANDS_3D(ops, (const CUDA_MEMCPY3D_PEER *)c->desc);
    }
}

/* The operands of copy c (issued on device d) in other devices' arenas, taken; NULL when
 * there are none (the usual case: one comparison per operand). */
static foreign_t *foreign_begin(const shim_copy_t *c, const res_dev_t *d, int capturing)
{
    CUdeviceptr ops[2];
    foreign_t *f = NULL;

    copy_operands(c, ops);

    for (int i = 0; i < 2; i++) {
        res_dev_t *o;
        if (!ops[i] || ops[i] - d->base < d->size || !(o = res_owner(ops[i])) || o == d)
            continue;
        if (!f && !(f = calloc(1, sizeof(*f))))
            return NULL;
        f->pinned = capturing;
        f->dev = d->device;
        foreign_take(f, o, ops[i], d->device, capturing);
    }
    if (f && !f->count) {
        free(f);
        f = NULL;
    }
    return f;
}

/* After the copy: the host waits for it (the foreign chunks' use is recorded nowhere), then
 * the chunks are released and the access taken back; a captured copy keeps both. */
static void foreign_end(foreign_t *f, const shim_copy_t *c)
{
    if (!f->pinned) {
        CUstream s = !c->stream && shim_hook_per_thread[c->hook] ? CU_STREAM_PER_THREAD
                                                                  : c->stream;
        DRV(cuStreamSynchronize)(s);
    }
    for (int i = 0; i < f->count && !f->pinned; i++) {
        res_dev_t *o = f->op[i].o;
        shim_lock(&o->lock);
        peer_access(o, f->op[i].first, f->op[i].n, f->dev, 0);
        for (uint32_t ci = f->op[i].first; ci < f->op[i].first + f->op[i].n; ci++)
            res_unhold(o, ci);
        shim_unlock(&o->lock);
    }
    free(f);
}

void res_copy_begin(shim_copy_t *c)
{
    CUcontext ctx = NULL;
    res_dev_t *d = res_active_dev(&ctx);
    collect_t *k;
    c->res = NULL;
    c->foreign = NULL;
    if (!d)
        return;
    if (__builtin_expect(atomic_load_explicit(&res_multi, memory_order_relaxed), 0))
        c->foreign = foreign_begin(c, d, res_stream_capturing(c->stream,
                                                              shim_hook_per_thread[c->hook]));
    if (!(k = collect_open(d, ctx)))
        return;
    geo_t g = geo_of(k);
    collect_ptr(k, &g, c->dst);
    collect_ptr(k, &g, c->src);
    if (c->desc || c->count)
        k->unknown = 1;     /* structured and batched copies: operands not decoded */
    k->capturing = res_stream_capturing(c->stream, shim_hook_per_thread[c->hook]);
    if (!k->capturing) {
        relax_t rx = relax_begin();
        res_reach(d, k, 0);
        relax_end(rx);
    }
    c->res = k;
}

void res_copy_end(shim_copy_t *c, CUresult r)
{
    if (c->res)
        op_end(c->res, r, c->stream, c->hook);
    c->res = NULL;
    if (c->foreign) {
        foreign_end(c->foreign, c);
        c->foreign = NULL;
    }
}

