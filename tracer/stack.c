/* SPDX-License-Identifier: MIT */
/*
 * stack.c - call sites: trc_rec_stack captures the caller's return addresses with libunwind
 * (unw_backtrace), turns each into (module path, offset from the module's load base), and
 * interns the result as one stack id.
 *
 * Modules come from a map of the loaded objects' PT_LOAD segments built with dl_iterate_phdr,
 * shared by every recorder and rebuilt when the loader's load/unload counters moved and an
 * address falls in no known module (a library loaded since) or before any look-up after an
 * unload.  An address in no object at all (JIT code) is recorded as module 0 with the absolute
 * address as its offset.  Symbols are resolved when the trace is read, not here.
 *
 * A call site may carry the Python frames of the thread too (trc_rec_stack_py, read by the
 * caller with pyframes.c), interned with the native ones as one stack.
 *
 * Each recorder keeps a cache from raw return-address arrays (hashed, with the Python frames'
 * code objects and lines) to stack ids, so that a call site seen before costs the unwind and
 * one look-up; it is emptied when an object was
 * unloaded, since an address may then belong to another module.  The writer deduplicates the
 * resolved frames by content as well, so equal stacks always get one id.
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "rec_int.h"

#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_SKIP 64

/* unw_backtrace keeps a per-thread cache freed by a pthread key destructor, which under
 * ThreadSanitizer runs after the sanitizer has torn the exiting thread down and crashes it.
 * Those builds walk the stack frame by frame with unw_step instead (slower, no cache). */
#if defined(__SANITIZE_THREAD__)
#define STEP_UNWIND 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STEP_UNWIND 1
#endif
#endif

/* ------------------------------------------------------------------ the module map */

typedef struct module {
    char *path;
    uintptr_t bias;                    /* load base: address = bias + ELF virtual address */
} module_t;

typedef struct range {
    uintptr_t lo, hi;
    uint32_t module;
} range_t;

typedef struct modmap {
    module_t *mods;
    range_t *ranges;
    uint32_t nmods, capmods, nranges, capranges;
    unsigned long long adds, subs;     /* the loader's counters when it was built */
    int built, nomem;
} modmap_t;

static pthread_mutex_t map_lock = PTHREAD_MUTEX_INITIALIZER;
static modmap_t map;

/* The loader's counts of objects loaded and unloaded so far (from the first object only). */
static int first_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    unsigned long long *c = arg;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
        c[0] = info->dlpi_adds;
        c[1] = info->dlpi_subs;
    }
    return 1;
}

static void loader_counts(unsigned long long c[2])
{
    c[0] = c[1] = 0;
    dl_iterate_phdr(first_object, c);
}

/* The main program's path (its dl_iterate_phdr name is empty). */
static char *exe_path(void)
{
    char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    if (n <= 0)
        return strdup("[main program]");
    buf[n] = 0;
    return strdup(buf);
}

static int grow(void *arr, uint32_t *cap, size_t elem)
{
    uint32_t n = *cap ? *cap * 2 : 64;
    void *p = realloc(*(void **)arr, n * elem);
    if (!p)
        return -ENOMEM;
    *(void **)arr = p;
    *cap = n;
    return 0;
}

/* dl_iterate_phdr callback: one module and its loaded segments. */
static int add_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    modmap_t *m = arg;
    (void)size;
    if (m->nmods == m->capmods && grow(&m->mods, &m->capmods, sizeof(module_t)) < 0)
        return m->nomem = 1;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    char *path = name[0] || m->nmods ? strdup(name) : exe_path();
    if (!path)
        return m->nomem = 1;
    m->mods[m->nmods] = (module_t){ path, (uintptr_t)info->dlpi_addr };
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        if (m->nranges == m->capranges && grow(&m->ranges, &m->capranges, sizeof(range_t)) < 0)
            return m->nomem = 1;
        uintptr_t lo = (uintptr_t)info->dlpi_addr + ph->p_vaddr;
        m->ranges[m->nranges++] = (range_t){ lo, lo + ph->p_memsz, m->nmods };
    }
    m->nmods++;
    return 0;
}

static int by_start(const void *a, const void *b)
{
    uintptr_t x = ((const range_t *)a)->lo, y = ((const range_t *)b)->lo;
    return x < y ? -1 : x > y;
}

static void map_clear(modmap_t *m)
{
    for (uint32_t i = 0; i < m->nmods; i++)
        free(m->mods[i].path);
    free(m->mods);
    free(m->ranges);
    *m = (modmap_t){ 0 };
}

/* Rebuilds the map (map_lock held) when it was never built or the loader's counters moved;
 * 1 when rebuilt, 0 when current, -ENOMEM. */
static int map_refresh(void)
{
    unsigned long long c[2];
    loader_counts(c);
    if (map.built && c[0] == map.adds && c[1] == map.subs)
        return 0;
    modmap_t m = { 0 };
    dl_iterate_phdr(add_object, &m);
    if (m.nomem) {
        map_clear(&m);
        return -ENOMEM;
    }
    qsort(m.ranges, m.nranges, sizeof(range_t), by_start);
    m.adds = c[0];
    m.subs = c[1];
    m.built = 1;
    map_clear(&map);
    map = m;
    return 1;
}

/* The module holding address pc, or NULL (map_lock held). */
static const module_t *map_find(uintptr_t pc)
{
    uint32_t lo = 0, hi = map.nranges;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (map.ranges[mid].lo <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || pc >= map.ranges[lo - 1].hi)
        return NULL;
    return &map.mods[map.ranges[lo - 1].module];
}

/* ------------------------------------------------------------------ the per-recorder cache */

typedef struct centry {
    uint64_t hash;
    uint32_t depth, id;
    uintptr_t *pcs;                    /* NULL: empty slot */
} centry_t;

struct trc_stk {
    pthread_mutex_t lock;
    centry_t *slots;
    uint32_t cap, count;
    unsigned long long subs;           /* the loader's unload count the entries are valid for */
};

/* map_lock is held across fork, so that a child never finds it held by a thread that does
 * not exist there. */
static void fork_prepare(void)
{
    pthread_mutex_lock(&map_lock);
}

static void fork_release(void)
{
    pthread_mutex_unlock(&map_lock);
}

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

static void fork_init(void)
{
    pthread_atfork(fork_prepare, fork_release, fork_release);
}

trc_stk_t *trc_stk_new(void)
{
    pthread_once(&fork_once, fork_init);
    trc_stk_t *s = calloc(1, sizeof(*s));
    if (s)
        pthread_mutex_init(&s->lock, NULL);
    return s;
}

static void cache_clear(trc_stk_t *s)
{
    for (uint32_t i = 0; i < s->cap; i++)
        free(s->slots[i].pcs);
    free(s->slots);
    s->slots = NULL;
    s->cap = s->count = 0;
}

void trc_stk_free(trc_stk_t *s)
{
    if (!s)
        return;
    cache_clear(s);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static uint64_t hash_pcs(const uintptr_t *pcs, uint32_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
    for (uint32_t i = 0; i < n; i++) {
        h = (h ^ pcs[i]) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return h;
}

static centry_t *slot_for(centry_t *slots, uint32_t cap, uint64_t h, const uintptr_t *pcs,
                          uint32_t n)
{
    for (uint32_t i = (uint32_t)h & (cap - 1);; i = (i + 1) & (cap - 1)) {
        centry_t *e = &slots[i];
        if (!e->pcs || (e->hash == h && e->depth == n &&
                        memcmp(e->pcs, pcs, n * sizeof(uintptr_t)) == 0))
            return e;
    }
}

/* Doubles the table (kept at most half full); -ENOMEM leaves it as it was. */
static int cache_grow(trc_stk_t *s)
{
    uint32_t cap = s->cap ? s->cap * 2 : 256;
    centry_t *slots = calloc(cap, sizeof(centry_t));
    if (!slots)
        return -ENOMEM;
    for (uint32_t i = 0; i < s->cap; i++)
        if (s->slots[i].pcs)
            *slot_for(slots, cap, s->slots[i].hash, s->slots[i].pcs, s->slots[i].depth) =
                s->slots[i];
    free(s->slots);
    s->slots = slots;
    s->cap = cap;
    return 0;
}

/* Remembers pcs -> id (s->lock held); a failure only costs a later look-up. */
static void cache_put(trc_stk_t *s, uint64_t h, const uintptr_t *pcs, uint32_t n, uint32_t id)
{
    if ((s->count + 1) * 2 > s->cap && cache_grow(s) < 0)
        return;
    centry_t *e = slot_for(s->slots, s->cap, h, pcs, n);
    if (e->pcs)
        return;
    uintptr_t *copy = malloc(n * sizeof(uintptr_t));
    if (!copy)
        return;
    memcpy(copy, pcs, n * sizeof(uintptr_t));
    *e = (centry_t){ h, n, id, copy };
    s->count++;
}

/* ------------------------------------------------------------------ resolving and interning */

/* Fills frames from pcs (map_lock held), interning each module's path; 0 or a negative errno. */
static int resolve(trc_rec_t *rec, const uintptr_t *pcs, uint32_t n, trc_frame_t *frames)
{
    const module_t *last = NULL;
    long last_id = 0;
    for (uint32_t i = 0; i < n; i++) {
        const module_t *m = map_find(pcs[i]);
        if (!m && map_refresh() > 0)
            m = map_find(pcs[i]), last = NULL;
        if (m && m != last) {
            last_id = trc_rec_string(rec, m->path);
            if (last_id < 0)
                return (int)last_id;
            last = m;
        }
        frames[i] = m ? (trc_frame_t){ (uint32_t)last_id, pcs[i] - m->bias, NULL }
                      : (trc_frame_t){ 0, pcs[i], NULL };
    }
    return 0;
}

/* Interns Python frames' names into frames (ids only). */
static int intern_py(trc_rec_t *rec, const trc_pyraw_t *py, uint32_t npy, trc_pyframe_t *out)
{
    for (uint32_t i = 0; i < npy; i++) {
        long f = trc_rec_string(rec, py[i].file), g = f < 0 ? f : trc_rec_string(rec, py[i].func);
        if (g < 0)
            return (int)g;
        out[i] = (trc_pyframe_t){ (uint32_t)f, (uint32_t)g, py[i].line, NULL, NULL };
    }
    return 0;
}

static long intern_new(trc_rec_t *rec, const uintptr_t *pcs, uint32_t n, const trc_pyraw_t *py,
                       uint32_t npy)
{
    trc_frame_t frames[TRC_MAX_DEPTH];
    trc_pyframe_t pyframes[TRC_PY_DEPTH];
    pthread_mutex_lock(&map_lock);
    int rc = map_refresh();
    if (rc >= 0)
        rc = resolve(rec, pcs, n, frames);
    pthread_mutex_unlock(&map_lock);
    if (rc >= 0)
        rc = intern_py(rec, py, npy, pyframes);
    trc_stack_t st = { .depth = n, .frames = frames, .pydepth = npy, .pyframes = pyframes };
    return rc < 0 ? rc : trc_rec_intern_stack_py(rec, &st);
}

/* The cache's key of a call site: the number of Python frames, the return addresses, then
 * each Python frame's code object and line; 0 when a Python frame has no lasting key (its
 * code object is not kept, so its address may be another's later): not cached. */
static uint32_t site_key(uintptr_t *key, const uintptr_t *pcs, uint32_t n,
                         const trc_pyraw_t *py, uint32_t npy)
{
    key[0] = npy;
    memcpy(key + 1, pcs, n * sizeof(uintptr_t));
    for (uint32_t i = 0; i < npy; i++) {
        if (!py[i].key)
            return 0;
        key[1 + n + 2 * i] = py[i].key;
        key[2 + n + 2 * i] = py[i].line;
    }
    return 1 + n + 2 * npy;
}

/* The stack id of pcs and py: from the cache, or resolved, interned and cached. */
static long intern_pcs(trc_rec_t *rec, const uintptr_t *pcs, uint32_t n, const trc_pyraw_t *py,
                       uint32_t npy)
{
    trc_stk_t *s = trc_rec_stk(rec);
    uintptr_t key[1 + TRC_MAX_DEPTH + 2 * TRC_PY_DEPTH];
    uint32_t kn = site_key(key, pcs, n, py, npy);
    if (!kn)
        return intern_new(rec, pcs, n, py, npy);
    unsigned long long c[2];
    uint64_t h = hash_pcs(key, kn);
    loader_counts(c);
    pthread_mutex_lock(&s->lock);
    if (c[1] != s->subs) {
        cache_clear(s);
        s->subs = c[1];
    }
    uint32_t id = s->cap ? slot_for(s->slots, s->cap, h, key, kn)->id : 0;
    pthread_mutex_unlock(&s->lock);
    if (id)
        return id;
    long nid = intern_new(rec, pcs, n, py, npy);
    if (nid > 0) {
        pthread_mutex_lock(&s->lock);
        if (s->subs == c[1])
            cache_put(s, h, key, kn, (uint32_t)nid);
        pthread_mutex_unlock(&s->lock);
    }
    return nid;
}

/* Up to n return addresses, the first in the function this is inlined into. */
static inline __attribute__((always_inline)) int capture(void **raw, int n)
{
#ifdef STEP_UNWIND
    unw_context_t uc;
    unw_cursor_t cur;
    unw_word_t ip;
    int k = 0;
    if (unw_getcontext(&uc) < 0 || unw_init_local(&cur, &uc) < 0)
        return 0;
    do {
        if (unw_get_reg(&cur, UNW_REG_IP, &ip) < 0 || ip == 0)
            break;
        raw[k++] = (void *)ip;
    } while (k < n && unw_step(&cur) > 0);
    return k;
#else
    return unw_backtrace(raw, n);
#endif
}

/* libunwind initialises itself on first use without synchronisation: one unwind under
 * pthread_once first, so that every later one happens after it. */
static pthread_once_t unw_once = PTHREAD_ONCE_INIT;

static void unw_warm(void)
{
    void *raw[4];
    capture(raw, 4);
}

/* The body of trc_rec_stack and trc_rec_stack_py, inlined into each so that frame 0 of the
 * unwind is the public function: it and `skip` more are dropped. */
static inline __attribute__((always_inline)) long stack_of(trc_rec_t *rec, int skip, int depth,
                                                           const trc_pyraw_t *py, int npy)
{
    void *raw[1 + MAX_SKIP + TRC_MAX_DEPTH];
    uintptr_t pcs[TRC_MAX_DEPTH];
    if (skip < 0 || skip > MAX_SKIP || depth < 0 || npy < 0 || npy > TRC_PY_DEPTH)
        return -EINVAL;
    int rc = trc_rec_status(rec);
    if (rc < 0)
        return rc;
    if (depth > TRC_MAX_DEPTH)
        depth = TRC_MAX_DEPTH;
    pthread_once(&unw_once, unw_warm);
    int n = depth ? capture(raw, 1 + skip + depth) - 1 - skip : 0;
    if (n < 0)
        n = 0;
    if (n == 0 && npy == 0)
        return 0;
    for (int i = 0; i < n; i++)
        pcs[i] = (uintptr_t)raw[1 + skip + i];
    return intern_pcs(rec, pcs, (uint32_t)n, py, (uint32_t)npy);
}

__attribute__((noinline)) long trc_rec_stack(trc_rec_t *rec, int skip, int depth)
{
    return stack_of(rec, skip, depth, NULL, 0);
}

__attribute__((noinline)) long trc_rec_stack_py(trc_rec_t *rec, int skip, int depth,
                                                const trc_pyraw_t *py, int npy)
{
    return stack_of(rec, skip, depth, py, npy);
}
