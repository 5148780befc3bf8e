/* SPDX-License-Identifier: MIT */
/*
 * trace_ops.c - recording operations and residency's events.  Every launch, copy and memset
 * is given an operation id and recorded with its stream, device and, for launches, the function
 * (its name interned once per handle and code generation, cached per thread) and the ids of
 * the allocations its arguments reach; residency reports allocations, frees, migrations,
 * evictions and memory per tier.  Allocation ids come from one counter, and a table from base
 * address to id lets launches and evictions name allocations.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "trace_int.h"

/* ---------------------------------------------------------------- small helpers */

static void spin_lock(spin_t *s)
{
    while (atomic_flag_test_and_set_explicit(&s->f, memory_order_acquire))
        sched_yield();
}

static void spin_unlock(spin_t *s)
{
    atomic_flag_clear_explicit(&s->f, memory_order_release);
}

/* ---------------------------------------------------------------- devices and names */

/* The device of the current context (cached per thread), or -1. */
static int current_device(tstate_t *th)
{
    CUcontext ctx = NULL;
    shim_pfn_cuCtxGetCurrent_t get = SHIM_DRIVER_CALL(cuCtxGetCurrent);
    shim_pfn_cuCtxGetDevice_t dev = SHIM_DRIVER_CALL(cuCtxGetDevice);
    unsigned gen = res_code_generation();
    CUdevice d;

    if (!get || get(&ctx) != CUDA_SUCCESS || !ctx)
        return -1;
    if (ctx == th->ctx && gen == th->ctx_gen)
        return th->ctx_dev;
    th->ctx = ctx;
    th->ctx_gen = gen;
    th->ctx_dev = dev && dev(&d) == CUDA_SUCCESS ? (int)d : -1;
    trace_device_seen(th->ctx_dev);
    return th->ctx_dev;
}

/* current_device's cache refreshed with what residency just looked up: ctx on device. */
static __attribute__((noinline)) void ctx_changed(tstate_t *th, CUcontext ctx, int device)
{
    th->ctx = ctx;
    th->ctx_gen = res_code_generation();
    th->ctx_dev = device;
    trace_device_seen(device);
}

/* The operation's context and device, from residency (the stream's, for an operation on a
 * stream other than a default one).  They also refresh current_device's cache when they
 * differ from it; one that only grew stale (a new code generation) is left for
 * current_device to ask again. */
static inline void launch_ctx(tstate_t *th, CUcontext ctx, int device)
{
    if (!ctx)
        return;
    if (__builtin_expect(ctx != th->ctx || device != th->ctx_dev, 0))
        ctx_changed(th, ctx, device);
    th->ctx_known = 1;
}

/* The string id of a hook's name (launches without a kernel: graphs). */
static uint32_t hook_name_id(shim_hook_t h)
{
    uint32_t id = atomic_load_explicit(&trace_st.hook_ids[h], memory_order_relaxed);

    if (!id) {
        id = (uint32_t)trace_intern(shim_hook_names[h]);
        atomic_store_explicit(&trace_st.hook_ids[h], id, memory_order_relaxed);
    }
    return id;
}

/* The name of kernel f (a CUfunction, or a CUkernel passed as one), interned.  Out of line:
 * asked once per handle and thread. */
static __attribute__((noinline)) uint32_t kernel_name_id(CUfunction f)
{
    const char *name = NULL;

    if (!trace_st.drv.func_name || trace_st.drv.func_name(&name, f) != CUDA_SUCCESS || !name) {
        name = NULL;
        if (trace_st.drv.kernel_name &&
            trace_st.drv.kernel_name(&name, (CUkernel)f) != CUDA_SUCCESS)
            name = NULL;
    }
    return (uint32_t)trace_intern(name ? name : "?");
}

/* The function of launch l as a string id, through the thread's cache (handle + code
 * generation: a handle that new code reuses after an unload is asked again). */
static uint32_t func_id(tstate_t *th, const shim_launch_t *l)
{
    CUfunction f = l->f;

    if (l->kind == SHIM_LAUNCH_MULTI_DEVICE && l->desc)
        f = ((const CUDA_LAUNCH_PARAMS *)l->desc)->function;
    if (!f)
        return hook_name_id(l->hook);
    unsigned gen = res_code_generation();
    fslot_t *s = &th->fcache[trace_hash_ptr((uint64_t)(uintptr_t)f) % FCACHE];
    if (s->f == f && s->gen == gen)
        return s->id;
    *s = (fslot_t){ f, gen, kernel_name_id(f) };
    return s->id;
}

/* ---------------------------------------------------------------- allocation ids */

/* Slot of base in the table (alloc_lock held): its own, or the empty one where it would go. */
static size_t aslot(uint64_t base)
{
    size_t i = trace_hash_ptr(base) & (trace_st.acap - 1);

    while (trace_st.akeys[i] && trace_st.akeys[i] != base)
        i = (i + 1) & (trace_st.acap - 1);
    return i;
}

/* Room for one more entry (alloc_lock held); 0 or -ENOMEM. */
static int agrow(void)
{
    if (trace_st.acap && (trace_st.an + 1) * 2 <= trace_st.acap)
        return 0;
    size_t ocap = trace_st.acap, cap = ocap ? ocap * 2 : 1024;
    uint64_t *ok = trace_st.akeys, *ov = trace_st.avals;
    uint64_t *k = calloc(cap, sizeof(*k)), *v = calloc(cap, sizeof(*v));
    if (!k || !v) {
        free(k);
        free(v);
        return -ENOMEM;
    }
    trace_st.akeys = k;
    trace_st.avals = v;
    trace_st.acap = cap;
    for (size_t i = 0; i < ocap; i++)
        if (ok[i]) {
            size_t j = aslot(ok[i]);
            trace_st.akeys[j] = ok[i];
            trace_st.avals[j] = ov[i];
        }
    free(ok);
    free(ov);
    return 0;
}

/* In the table's values beside the id: the allocation's ALLOC record was kept, so its FREE
 * is kept too, whatever the level by then (ELIXIR_TRACE_LEVEL=summary drops allocations made
 * after the profiled iterations, not the end of those made before). */
#define ALLOC_KEPT (1ull << 63)

static uint64_t aget(uint64_t base)
{
    if (!trace_st.acap || !base)
        return 0;
    size_t i = aslot(base);
    return trace_st.akeys[i] ? trace_st.avals[i] & ~ALLOC_KEPT : 0;
}

/* Removes base (linear probing: later entries of its run move back); its id (with
 * ALLOC_KEPT), or 0. */
static uint64_t adel(uint64_t base)
{
    if (!trace_st.acap || !base)
        return 0;
    size_t i = aslot(base), mask = trace_st.acap - 1;
    uint64_t id = trace_st.avals[i];
    if (!trace_st.akeys[i])
        return 0;
    trace_st.akeys[i] = 0;
    trace_st.an--;
    for (size_t j = (i + 1) & mask; trace_st.akeys[j]; j = (j + 1) & mask) {
        size_t home = trace_hash_ptr(trace_st.akeys[j]) & mask;
        /* Move j back to i when its home is not within (i, j] (cyclically). */
        if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
            trace_st.akeys[i] = trace_st.akeys[j];
            trace_st.avals[i] = trace_st.avals[j];
            trace_st.akeys[j] = 0;
            i = j;
        }
    }
    return id;
}

/* ---------------------------------------------------------------- operations */

/* Common start of an operation: id, time; NULL when not recording. */
static inline tstate_t *op_begin(uint64_t *op)
{
    tstate_t *th = trace_enter();

    *op = 0;
    if (!th)
        return NULL;
    *op = th->op = trace_op_new(th);
    th->time = trace_now();
    th->nids = 0;
    th->hit_ids = NULL;
    th->unsorted = 0;
    th->ctx_known = 0;
    th->timing = NULL;
    if (atomic_load_explicit(&shim_timing_pending, memory_order_relaxed))
        shim_timing_poll();
    return th;
}

void shim_trace_launch_begin(shim_launch_t *l)
{
    tstate_t *th = op_begin(&l->op);

    if (!th)
        return;
    th->launch = 1;
    th->func = func_id(th, l);
    trace_detect(th->func, th->time);
}

/* The trace's kind of copy c: from its hook, its descriptor, or (unified addressing) which
 * operands lie in residency's arenas. */
static uint32_t copy_kind(const shim_copy_t *c)
{
    switch (c->kind) {
    case SHIM_COPY_HTOD: return TRC_COPY_HTOD;
    case SHIM_COPY_DTOH: return TRC_COPY_DTOH;
    case SHIM_COPY_DTOD: return TRC_COPY_DTOD;
    case SHIM_COPY_PEER:
    case SHIM_COPY_3D_PEER: return TRC_COPY_PEER;
    case SHIM_COPY_UNIFIED: {
        int d = c->dst && res_owns(c->dst), s = c->src && res_owns(c->src);
        return d && s ? TRC_COPY_DTOD : d ? TRC_COPY_HTOD : s ? TRC_COPY_DTOH : TRC_COPY_UNKNOWN;
    }
    case SHIM_COPY_2D:
    case SHIM_COPY_3D: {
        /* The descriptor names each side's memory type. */
        const CUDA_MEMCPY2D *p2 = c->desc;
        const CUDA_MEMCPY3D *p3 = c->desc;
        if (!c->desc)
            return TRC_COPY_UNKNOWN;
        CUmemorytype s = c->kind == SHIM_COPY_2D ? p2->srcMemoryType : p3->srcMemoryType;
        CUmemorytype d = c->kind == SHIM_COPY_2D ? p2->dstMemoryType : p3->dstMemoryType;
        int sh = s == CU_MEMORYTYPE_HOST, dh = d == CU_MEMORYTYPE_HOST;
        return sh && dh ? TRC_COPY_HTOH : sh ? TRC_COPY_HTOD : dh ? TRC_COPY_DTOH
                                                                 : TRC_COPY_DTOD;
    }
    default:
        break;
    }
    if (c->hook == SHIM_HOOK_cuMemcpyHtoA_v2 || c->hook == SHIM_HOOK_cuMemcpyHtoA_v2_ptds ||
        c->hook == SHIM_HOOK_cuMemcpyHtoAAsync_v2 || c->hook == SHIM_HOOK_cuMemcpyHtoAAsync_v2_ptsz)
        return TRC_COPY_HTOD;
    if (c->hook == SHIM_HOOK_cuMemcpyAtoH_v2 || c->hook == SHIM_HOOK_cuMemcpyAtoH_v2_ptds ||
        c->hook == SHIM_HOOK_cuMemcpyAtoHAsync_v2 || c->hook == SHIM_HOOK_cuMemcpyAtoHAsync_v2_ptsz)
        return TRC_COPY_DTOH;
    return c->kind == SHIM_COPY_ARRAY ? TRC_COPY_DTOD : TRC_COPY_UNKNOWN;
}

void shim_trace_copy_begin(shim_copy_t *c)
{
    tstate_t *th = op_begin(&c->op);

    if (!th)
        return;
    th->launch = 0;
    if (c->kind == SHIM_COPY_MEMSET)
        return;
    uint32_t k = copy_kind(c);
    /* Data in or out (a batch uploaded, a loss read back): a barrier for the detector. */
    if (k == TRC_COPY_HTOD || k == TRC_COPY_DTOH || k == TRC_COPY_HTOH)
        trace_barrier();
}

/* shim_trace_issue while shim_trace_timed is set (the window decides: the flag is only how
 * the wrappers avoid a call outside it). */
void shim_trace_issue_timed(uint64_t op, CUstream s, shim_hook_t h)
{
    tstate_t *th = trace_tls_self;

    if (op && th && atomic_load_explicit(&trace_st.window, memory_order_relaxed) == WIN_OPEN)
        th->timing = shim_timing_before(op, s, h, th->ctx_known ? th->ctx : NULL);
}

/* Room for n ids (and their offsets) in th->ids (at least 64); 0, or -1 when out of
 * memory. */
static int ids_room(tstate_t *th, uint32_t n)
{
    uint32_t cap = th->cap ? th->cap : 64;

    if (n <= th->cap)
        return 0;
    while (cap < n)
        cap *= 2;
    uint64_t *ids = realloc(th->ids, cap * sizeof(*ids));
    if (ids)
        th->ids = ids;
    uint64_t *offs = ids ? realloc(th->offs, cap * sizeof(*offs)) : NULL;
    if (!offs)
        return -1;
    th->offs = offs;
    th->cap = cap;
    return 0;
}

/* Adds allocation id, reached at offset off, to the launch's list (the same id twice in a
 * row only once, with the lower offset). */
static inline void add_id(tstate_t *th, uint64_t id, uint64_t off)
{
    if (th->nids && th->ids[th->nids - 1] >= id) {
        if (th->ids[th->nids - 1] == id) {
            if (off < th->offs[th->nids - 1])
                th->offs[th->nids - 1] = off;
            return;
        }
        th->unsorted = 1;
    }
    if (__builtin_expect(th->nids == th->cap, 0) && ids_room(th, th->nids + 1) < 0)
        return;
    th->offs[th->nids] = off;
    th->ids[th->nids++] = id;
}

/* Sorts the launch's ids, which are out of order, ascending, each repeat folded into the
 * first with the lower offset. */
static void sort_unsorted(tstate_t *th)
{
    uint64_t *a = th->ids, *o = th->offs;
    uint32_t u = 0;

    for (uint32_t i = 1; i < th->nids; i++) {
        uint64_t v = a[i], w = o[i];
        uint32_t j = i;
        for (; j > 0 && a[j - 1] > v; j--) {
            a[j] = a[j - 1];
            o[j] = o[j - 1];
        }
        a[j] = v;
        o[j] = w;
    }
    for (uint32_t i = 0; i < th->nids; i++)
        if (!u || a[u - 1] != a[i]) {
            a[u] = a[i];
            o[u++] = o[i];
        } else if (o[i] < o[u - 1]) {
            o[u - 1] = o[i];
        }
    th->nids = u;
    th->unsorted = 0;
}

/* The launch's ids ascending, without repeats (usually they are already: arguments tend to
 * come in allocation order); the ids added after stay in order. */
static inline void sort_ids(tstate_t *th)
{
    if (th->unsorted)
        sort_unsorted(th);
}

static wslot_t *wslot(tstate_t *th, uint64_t word)
{
    return &th->wcache[((word >> 4) * 0x9E3779B97F4A7C15ull) >> 55];
}

/* Argument word `word` not cached in w (or stale): its allocation from the table (src->base_of
 * names the base), then cached in w; w. */
static __attribute__((noinline)) const wslot_t *word_miss(wslot_t *w, uint64_t word,
                                                         const shim_trace_arena_t *src)
{
    uint64_t base = src->base_of(src->ctx, word);
    spin_lock(&trace_st.alloc_lock);
    uint64_t gen = atomic_load_explicit(&trace_st.alloc_gen, memory_order_relaxed);
    uint64_t id = base ? aget(base) : 0;
    spin_unlock(&trace_st.alloc_lock);
    *w = (wslot_t){ word, gen, id, id ? word - base : 0 };
    return w;
}

/* An argument word's allocation id and offset there: from the thread's cache while no
 * allocation was made or freed since it was cached (gen), else word_miss. */
static inline const wslot_t *word_slot(tstate_t *th, uint64_t word, uint64_t gen,
                                       const shim_trace_arena_t *src)
{
    wslot_t *w = wslot(th, word);

    if (w->word == word && w->gen == gen)
        return w;
    return word_miss(w, word, src);
}

/* The memo of th's launch for an argument list of `size` bytes, when one may hold it (the
 * list is the launch's first, and short enough); else NULL. */
static memo_t *memo_of(tstate_t *th, size_t size)
{
    if (th->nids || size > MEMO_WORDS * 8 || size < MEMO_MIN * 8 || size % 8 || !th->launch)
        return NULL;
    return &th->memo[trace_hash_ptr(th->func) % MEMO];
}

/* Does m hold the answer for these words?  Then the launch's ids are m's, read in place
 * (th->hit_ids): the memo stays as it is until the thread's next launch. */
static int memo_hit(tstate_t *th, const memo_t *m, const void *buf, size_t size, uint64_t gen,
                    uint64_t lo)
{
    if (m->gen != gen || m->lo != lo || m->nwords * 8 != size || memcmp(m->words, buf, size))
        return 0;
    th->hit_ids = m->ids;
    th->hit_offs = m->offs;
    th->nids = m->nids;
    th->unsorted = 0;
    return 1;
}

/* More words after a memo answered (a list given in batches; the memo answers only a first
 * one): the memo's ids copied into th->ids, where the rest are added. */
static __attribute__((noinline)) void memo_unhit(tstate_t *th)
{
    const uint64_t *ids = th->hit_ids, *offs = th->hit_offs;

    th->hit_ids = th->hit_offs = NULL;
    if (th->nids && ids_room(th, th->nids) < 0) {
        th->nids = 0;
        return;
    }
    if (th->nids) {
        memcpy(th->ids, ids, th->nids * sizeof(*th->ids));
        memcpy(th->offs, offs, th->nids * sizeof(*th->offs));
    }
}

/* Keeps the launch's ids (sorted once here, so that a hit needs no sorting) for these words
 * in m. */
static void memo_keep(tstate_t *th, memo_t *m, const void *buf, size_t size, uint64_t gen,
                      uint64_t lo)
{
    sort_ids(th);
    if (th->nids > MEMO_WORDS) {        /* cannot happen (one id per word at most), but */
        m->nwords = 0;                  /* then the memo matches nothing */
        return;
    }
    m->gen = gen;
    m->lo = lo;
    m->nwords = (uint32_t)(size / 8);
    m->nids = th->nids;
    memcpy(m->words, buf, size);
    if (th->nids) {
        memcpy(m->ids, th->ids, th->nids * sizeof(*th->ids));
        memcpy(m->offs, th->offs, th->nids * sizeof(*th->offs));
    }
}

/* The ids of the allocations the words at buf (n of them) reach, added to the launch's
 * (cached answers valid at allocation generation gen). */
static inline void words_ids(tstate_t *th, const void *buf, size_t n, uint64_t gen,
                             const shim_trace_arena_t *src)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t v;
        memcpy(&v, (const char *)buf + 8 * i, 8);
        if (v - src->lo < src->span) {
            const wslot_t *w = word_slot(th, v, gen, src);
            if (w->id)
                add_id(th, w->id, w->off);
        }
    }
}

/* launch_words for a list long enough for the memo of the launch's function: the whole list
 * compared at once, else word by word (and then remembered). */
static __attribute__((noinline)) void memo_words(tstate_t *th, const uint64_t *words, size_t n,
                                                 uint64_t gen, const shim_trace_arena_t *src)
{
    size_t size = n * 8;
    memo_t *m = memo_of(th, size);

    if (m && memo_hit(th, m, words, size, gen, src->lo))
        return;
    words_ids(th, words, n, gen, src);
    if (m)
        memo_keep(th, m, words, size, gen, src->lo);
}

/* The ids of the allocations n argument words reach, added to the launch's: word by word for
 * a short list, else through memo_words. */
static SHIM_ALWAYS_INLINE void launch_words(tstate_t *th, const uint64_t *words, size_t n,
                                            const shim_trace_arena_t *src)
{
    uint64_t gen = atomic_load_explicit(&trace_st.alloc_gen, memory_order_relaxed);

    if (__builtin_expect(th->hit_ids != NULL, 0))
        memo_unhit(th);
    if (n < MEMO_MIN)
        words_ids(th, words, n, gen, src);
    else
        memo_words(th, words, n, gen, src);
}

void shim_trace_words(const uint64_t *words, size_t n, const shim_trace_arena_t *a)
{
    tstate_t *th = trace_tls_self;

    if (th && th->op)
        launch_words(th, words, n, a);
}

void shim_trace_peer_words(const uint64_t *words, size_t n, const shim_trace_arena_t *a)
{
    tstate_t *th = trace_tls_self;

    if (!th || !th->op)
        return;
    if (th->hit_ids)
        memo_unhit(th);
    words_ids(th, words, n, atomic_load_explicit(&trace_st.alloc_gen, memory_order_relaxed), a);
}

void shim_trace_op_ctx(CUcontext ctx, int device)
{
    tstate_t *th = trace_tls_self;

    if (th && th->op)
        launch_ctx(th, ctx, device);
}

void shim_trace_launch_args(CUcontext ctx, int device, const uint64_t *words, size_t n,
                            const shim_trace_arena_t *a)
{
    tstate_t *th = trace_tls_self;

    if (!th || !th->op)
        return;
    launch_ctx(th, ctx, device);
    if (n)
        launch_words(th, words, n, a);
}

/* Common end: device times, then the thread leaves the operation. */
static void op_end(tstate_t *th, CUresult r, CUstream s, shim_hook_t h)
{
    if (th->timing)
        shim_timing_after(th->timing, r, s, h);
    th->timing = NULL;
    th->op = 0;
    trace_leave(th);
}

void shim_trace_launch_end(const shim_launch_t *l, CUresult r)
{
    tstate_t *th = trace_tls_self;

    if (!l->op || !th)
        return;
    if (r == CUDA_SUCCESS && trace_kept(TRC_EV_LAUNCH)) {
        /* Only the launch member is set (and read), field by field: zeroing the whole union
         * costs more than the rest of the record. */
        trc_event_t ev;
        ev.type = TRC_EV_LAUNCH;
        ev.offset = 0;
        ev.time = th->time;
        trc_launch_t *la = &ev.u.launch;
        la->id = l->op;
        la->func_id = th->func;
        la->stream = trace_stream_no(th, l->stream, l->hook);
        la->device = th->ctx_known ? th->ctx_dev : current_device(th);
        la->span = (trc_span_t){ 0 };  /* times come later, in a TIMING record */
        sort_ids(th);
        la->nallocs = th->nids;
        la->allocs = th->hit_ids ? th->hit_ids : th->ids;
        la->offsets = th->hit_ids ? th->hit_offs : th->offs;
        la->func = NULL;
        trace_record_kept(&ev);
    }
    op_end(th, r, l->stream, l->hook);
}

void shim_trace_copy_end(const shim_copy_t *c, CUresult r)
{
    tstate_t *th = trace_tls_self;

    if (!c->op || !th)
        return;
    if (r == CUDA_SUCCESS && trace_kept(TRC_EV_COPY)) {
        trc_event_t ev = { .time = th->time };
        uint64_t stream = trace_stream_no(th, c->stream, c->hook);
        int dev = th->ctx_known ? th->ctx_dev : current_device(th);
        if (c->kind == SHIM_COPY_MEMSET) {
            ev.type = TRC_EV_MEMSET;
            ev.u.memset = (trc_memset_t){ .dst = c->dst, .bytes = c->bytes, .stream = stream,
                                          .value = c->value, .elem_size = c->elem,
                                          .device = dev, .id = c->op };
        } else {
            ev.type = TRC_EV_COPY;
            ev.u.copy = (trc_copy_t){ .kind = copy_kind(c), .src = c->src, .dst = c->dst,
                                      .bytes = c->bytes, .stream = stream, .device = dev,
                                      .id = c->op };
        }
        shim_trace_emit(&ev);
    }
    op_end(th, r, c->stream, c->hook);
}

_Static_assert((int)SHIM_SYNC_STREAM == (int)TRC_SYNC_STREAM &&
                   (int)SHIM_SYNC_CONTEXT == (int)TRC_SYNC_CONTEXT &&
                   (int)SHIM_SYNC_EVENT == (int)TRC_SYNC_EVENT, "the shim's kinds are the trace's");

void shim_trace_sync(int kind, CUstream s, CUcontext ctx, shim_hook_t h)
{
    tstate_t *th = trace_enter();

    if (!th)
        return;
    trace_barrier();
    if (trace_kept(TRC_EV_SYNC)) {
        trc_event_t ev = { .type = TRC_EV_SYNC, .time = shim_trace_now() };
        int dev = current_device(th);   /* (caches the current context in th->ctx) */
        ev.u.sync = (trc_sync_t){ (uint32_t)kind,
                                  kind == SHIM_SYNC_STREAM ? trace_stream_no(th, s, h) : 0,
                                  ctx && ctx != th->ctx ? -1 : dev };
        shim_trace_emit(&ev);
    }
    trace_leave(th);
}

uint64_t shim_trace_current_op(void)
{
    tstate_t *th = trace_tls_self;
    return th ? th->op : 0;
}

/* ---------------------------------------------------------------- residency's events */

uint64_t shim_trace_alloc(int device, uint64_t base, uint64_t size)
{
    tstate_t *th = trace_enter();

    if (!th)
        return 0;
    uint64_t id = atomic_fetch_add(&trace_st.alloc_next, 1) + 1;
    int keep = trace_kept(TRC_EV_ALLOC);
    spin_lock(&trace_st.alloc_lock);
    if (agrow() == 0) {
        size_t i = aslot(base);
        trace_st.an += !trace_st.akeys[i];
        trace_st.akeys[i] = base;
        trace_st.avals[i] = id | (keep ? ALLOC_KEPT : 0);
    }
    atomic_fetch_add_explicit(&trace_st.alloc_gen, 1, memory_order_relaxed);
    spin_unlock(&trace_st.alloc_lock);
    trace_device_seen(device);
    if (keep) {
        trc_event_t ev = { .type = TRC_EV_ALLOC, .time = shim_trace_now() };
        ev.u.alloc = (trc_alloc_t){ .id = id, .device = device, .addr = base, .size = size,
                                    .stack_id = trace_st.depth ? trace_call_site(th) : 0 };
        trace_record_kept(&ev);
    }
    trace_leave(th);
    return id;
}

void shim_trace_free(uint64_t base)
{
    tstate_t *th = trace_enter();

    if (!th)
        return;
    spin_lock(&trace_st.alloc_lock);
    uint64_t id = adel(base);
    atomic_fetch_add_explicit(&trace_st.alloc_gen, 1, memory_order_relaxed);
    spin_unlock(&trace_st.alloc_lock);
    if (id & ALLOC_KEPT) {
        trc_event_t ev = { .type = TRC_EV_FREE, .time = shim_trace_now() };
        ev.u.free.id = id & ~ALLOC_KEPT;
        trace_record_kept(&ev);
    }
    trace_leave(th);
}

void shim_trace_migration(int device, uint64_t chunk, uint64_t bytes, int from, int to,
                          uint64_t start, uint64_t end, uint64_t cause)
{
    tstate_t *th = trace_enter();

    if (!th)
        return;
    trace_device_seen(device);
    trc_event_t ev = { .type = TRC_EV_MIGRATION, .time = shim_trace_now() };
    ev.u.migration = (trc_migration_t){ .chunk = chunk, .bytes = bytes, .from = (uint32_t)from,
                                        .to = (uint32_t)to, .device = device, .start = start,
                                        .end = end >= start ? end : start, .cause = cause };
    shim_trace_emit(&ev);
    trace_leave(th);
}

void shim_trace_eviction(int device, uint64_t chunk, uint64_t alloc_base, uint64_t bytes,
                         int from, int to, unsigned reason)
{
    tstate_t *th = trace_enter();

    if (!th)
        return;
    trace_device_seen(device);
    spin_lock(&trace_st.alloc_lock);
    uint64_t alloc = aget(alloc_base);
    spin_unlock(&trace_st.alloc_lock);
    if (!reason)
        reason = !th->op ? SHIM_EVICT_FOR_ALLOC
                 : th->launch ? SHIM_EVICT_FOR_LAUNCH : SHIM_EVICT_FOR_COPY;
    trc_event_t ev = { .type = TRC_EV_EVICTION, .time = shim_trace_now() };
    ev.u.eviction = (trc_eviction_t){ .chunk = chunk, .alloc = alloc, .bytes = bytes,
                                      .from = (uint32_t)from, .to = (uint32_t)to,
                                      .reason = reason };
    shim_trace_emit(&ev);
    trace_leave(th);
}

void shim_trace_memory(int device, const uint64_t bytes[4])
{
    tstate_t *th = trace_enter();

    if (!th)
        return;
    trace_device_seen(device);
    trc_event_t ev = { .type = TRC_EV_MEMORY, .time = shim_trace_now() };
    ev.u.memory.device = device;
    memcpy(ev.u.memory.bytes, bytes, sizeof(ev.u.memory.bytes));
    shim_trace_emit(&ev);
    trace_leave(th);
}

void shim_trace_budget(int device, uint64_t gpu, uint64_t host)
{
    tstate_t *th = trace_enter();

    if (!th)
        return;
    trace_device_seen(device);
    trc_event_t ev = { .type = TRC_EV_BUDGET, .time = shim_trace_now() };
    ev.u.budget = (trc_budget_t){ .device = device };
    ev.u.budget.bytes[TRC_TIER_GPU] = gpu;
    ev.u.budget.bytes[TRC_TIER_HOST] = host;
    shim_trace_emit(&ev);
    trace_leave(th);
}
