/* SPDX-License-Identifier: MIT */
/*
 * res_plan_profile.c - recording the profiled iteration (res_plan.c): each operation the shim
 * collects, with its stream, its signature and the runs of chunks it reaches per buffer, the
 * buffers those chunks belong to, and the program's host synchronisations (res_plan_synced).
 * The allocations born and freed in an iteration (res_plan_alloc, res_plan_free,
 * res_plan_slab): recorded as buffers' lives while profiling, and, while the plan is followed,
 * the births that tell where each of the plan's buffers lands this time.
 */
#include <stdlib.h>

#include "../policy/policy.h"
#include "res_int.h"
#include "res_plan_int.h"

#define MAX_PROFILE_OPS (1u << 20)

int res_plan_grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * size);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* The buffer whose first chunk is `first` (n chunks), made when unknown, or, when `born`,
 * made anew, born at the next operation (its key: the allocation's order and size). */
int64_t res_plan_buf_at(res_dev_t *d, res_plan_t *p, uint32_t first, uint32_t n, int born)
{
    if (p->buf_of[first] && !born)
        return p->buf_of[first] - 1;
    size_t need = p->nbufs + 1, c1 = p->cap_bufs, c2 = p->cap_bufs, c3 = p->cap_bufs;
    if (res_plan_grow((void **)&p->bufs, &c1, need, sizeof(*p->bufs)) < 0 ||
        res_plan_grow((void **)&p->first, &c2, need, sizeof(*p->first)) < 0 ||
        res_plan_grow((void **)&p->nch, &c3, need, sizeof(*p->nch)) < 0)
        return -1;
    p->cap_bufs = c1 < c2 ? (c1 < c3 ? c1 : c3) : (c2 < c3 ? c2 : c3);
    uint32_t b = (uint32_t)p->nbufs++;
    p->bufs[b] = (pol_buf_t){ .key = born ? ((uint64_t)p->births << 40) | (uint64_t)n
                                          : (uint64_t)first,
                              .bytes = (uint64_t)n * d->chunk,
                              .born = born ? (int32_t)p->nops : -1,
                              .dies = -1,
                              .slot = (uint64_t)first + 1 };
    p->first[b] = first;
    p->nch[b] = n;
    p->buf_of[first] = b + 1;
    return b;
}

/* Which accesses a copy or memset (arg) makes to the chunk [lo, hi) (res_access_fn_t). */
uint8_t res_plan_copy_access(const void *arg, uint64_t lo, uint64_t hi)
{
    const shim_copy_t *c = arg;
    if (c->desc || c->count || c->rows > 1)
        return POL_RW;
    uint8_t a = 0;
    if (c->dst < hi && c->dst + c->bytes > lo)
        a |= c->dst <= lo && c->dst + c->bytes >= hi ? POL_OVERWRITE : POL_WRITE;
    if (c->kind != SHIM_COPY_MEMSET && c->src && c->src < hi && c->src + c->bytes > lo)
        a |= POL_READ;
    return a ? a : POL_RW;
}

uint8_t res_plan_launch_access(const void *arg, uint64_t lo, uint64_t hi)
{
    const collect_t *k = arg;
    (void)hi;
    return res_collect_behind(k, arena_chunk_of(k->d->arena, lo)) ? POL_RW | POL_NEAR : POL_RW;
}

static uint32_t stream_no(res_plan_t *p, CUstream s)
{
    for (uint32_t i = 0; i < p->nstreams; i++)
        if (p->streams[i] == s)
            return i;
    if (p->nstreams < PLAN_STREAMS)
        p->streams[p->nstreams++] = s;
    return p->nstreams - 1;
}

/* The runs of chunks ids[0, n) reach, appended to p->refs (their count returned, or -1);
 * acc(arg, ...) says how each chunk is reached (NULL: read and written, as by a launch). */
static int64_t refs_of(res_dev_t *d, res_plan_t *p, const uint32_t *ids, size_t n,
                       res_access_fn_t acc, const void *arg)
{
    size_t start = p->nrefs;
    for (size_t i = 0; i < n; i++) {
        uint64_t lo = arena_chunk_addr(d->arena, ids[i]);
        uint8_t a = acc ? acc(arg, lo, lo + d->chunk) : POL_RW;
        if (!a)
            continue;
        const chunk_t *ch = &d->chunks[ids[i]];
        uint32_t first = ch->span_n ? ch->span_first : ids[i];
        int64_t b = res_plan_buf_at(d, p, first, ch->span_n ? ch->span_n : 1, 0);
        if (b < 0)
            return -1;
        uint32_t off = ids[i] - first;
        pol_ref_t *last = p->nrefs > start ? &p->refs[p->nrefs - 1] : NULL;
        if (last && last->buf == b && last->access == a && off == last->chunk + last->nchunks) {
            last->nchunks++;
            continue;
        }
        if (last && last->buf == b && off >= last->chunk && off < last->chunk + last->nchunks)
            continue;
        if (res_plan_grow((void **)&p->refs, &p->cap_refs, p->nrefs + 1, sizeof(*p->refs)) < 0)
            return -1;
        p->refs[p->nrefs++] = (pol_ref_t){ (uint32_t)b, off, 1, a };
    }
    return (int64_t)(p->nrefs - start);
}

int res_plan_away(res_dev_t *d, const collect_t *k)
{
    res_plan_t *p = d->plan;
    int again = p && p->state == P_EXEC && p->retime == RT_TIMING && p->away2;
    if (!p || (p->state != P_REC && !again) || k->timed - 1 >= p->nops)
        return 1;
    uint32_t away = 0;
    for (uint32_t i = 0; i < k->n; i++)
        away += d->chunks[k->ids[i]].tier != TIER_GPU;
    if (!again) {
        p->ops[k->timed - 1].away = away;
        return 1;
    }
    p->away2[k->timed - 1] = away;
    return away != p->ops[k->timed - 1].away;
}

/* Operation (kind, what) reaching ids[0, n) on s, appended to the profile: its index, or -1. */
int64_t res_plan_record(res_dev_t *d, res_plan_t *p, int kind, uintptr_t what,
                        const uint32_t *ids, size_t n, res_access_fn_t acc, const void *arg,
                        CUstream s)
{
    size_t start = p->nrefs, cap = p->cap_ops;
    if (p->nops >= MAX_PROFILE_OPS ||
        res_plan_grow((void **)&p->ops, &cap, p->nops + 1, sizeof(*p->ops)) < 0 ||
        res_plan_grow((void **)&p->sig, &p->cap_ops, p->nops + 1, sizeof(*p->sig)) < 0 ||
        cap != p->cap_ops) {
        p->state = P_OFF;
        SHIM_WARN(RES, "device %d: the iteration is too long to profile; the plan is off",
                  d->device);
        return -1;
    }
    int64_t nr = refs_of(d, p, ids, n, acc, arg);
    if (nr < 0) {
        p->state = P_OFF;
        return -1;
    }
    p->ops[p->nops] = (pol_op_t){ .stream = stream_no(p, s), .ref = (uint32_t)start,
                                  .nref = (uint32_t)nr };
    p->sig[p->nops] = res_plan_signature(kind, what, n);
    return (int64_t)p->nops++;
}

/* A host synchronisation on d's profile: after its last operation so far, the host waited
 * for stream s, or for everything (`all`).  One before the profile's first operation ends
 * the iteration before, whose own synchronisation the profile records at its end: left
 * out; so is a stream the profile has not seen (another device's, or idle in it). */
static void synced_on(res_dev_t *d, res_plan_t *p, CUstream s, int all)
{
    uint32_t k = 0;
    if (p->state != P_REC || p->nops == 0)
        return;
    while (!all && k < p->nstreams && p->streams[k] != s)
        k++;
    if (!all && k == p->nstreams)
        return;
    pol_sync_t y = { (uint32_t)p->nops - 1, all ? POL_SYNC_ALL : k };
    for (size_t j = p->nsyncs; j > 0 && p->syncs[j - 1].op == y.op; j--)
        if (p->syncs[j - 1].stream == y.stream || p->syncs[j - 1].stream == POL_SYNC_ALL)
            return;                     /* (waited for already) */
    if (res_plan_grow((void **)&p->syncs, &p->cap_syncs, p->nsyncs + 1, sizeof(*p->syncs)) < 0) {
        p->state = P_OFF;
        return;
    }
    p->syncs[p->nsyncs++] = y;
}

void res_plan_synced(CUcontext ctx, CUstream s, int all)
{
    shim_pfn_cuCtxGetCurrent_t get = DRV(cuCtxGetCurrent);
    /* (a default stream's handle names the current context's: only its device's profile) */
    int current = all || !s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD;
    if (!res_policy_plan || (current && !ctx && (!get || get(&ctx) != CUDA_SUCCESS || !ctx)))
        return;
    for (int i = 0; i < MAX_DEVICES; i++) {
        res_dev_t *d = &res_devs[i];
        if (!res_dev_ready(d) || (current && d->ctx != ctx))
            continue;
        shim_lock(&d->lock);
        if (d->plan)
            synced_on(d, d->plan, s, all);
        shim_unlock(&d->lock);
    }
}

/* Allocations of whole chunks (not a slab's) are the buffers born and dying in an iteration.
 * Asked of the arena, not of the chunks' span stamps: res_plan_alloc runs before the new
 * allocation's chunks are stamped, and a slab's first slot starts at its chunk's first byte. */
static int whole(const res_dev_t *d, uint64_t base, uint32_t *first)
{
    arena_info_t info;
    if (base < d->base || base >= d->base + d->size ||
        arena_lookup(d->arena, base, &info) != 0 || info.base != base ||
        arena_small_class(d->arena, info.size))
        return 0;
    *first = info.first_chunk;
    return d->chunks[*first].tier != TIER_NONE;
}

/* A buffer of n chunks from arena chunk `first` is born now. */
static void born(res_dev_t *d, res_plan_t *p, uint32_t first, uint32_t n)
{
    if (p->state == P_REC) {
        if (res_plan_buf_at(d, p, first, n, 1) < 0)
            p->state = P_OFF;
    } else if (p->state == P_EXEC) {
        uint32_t b = p->births < p->nborn ? p->born[p->births] : UINT32_MAX;
        if (b != UINT32_MAX && p->nch[b] == n)
            p->first[b] = first;        /* the plan's buffer is here this time */
        else
            p->mism += p->mism < UINT32_MAX;
    }
    p->births++;
}

/* The profile's buffer starting at arena chunk `first`, if any, dies now. */
static void dies(res_dev_t *d, res_plan_t *p, uint32_t first)
{
    if (p->state != P_REC || !p->buf_of[first])
        return;
    pol_buf_t *b = &p->bufs[p->buf_of[first] - 1];
    int32_t last = (int32_t)p->nops - 1;        /* the last operation it was alive for */
    p->buf_of[first] = 0;       /* (what the arena puts there next is another buffer) */
    if (b->dies < 0)            /* (born < 0: res_plan.c, lives()) */
        b->dies = last > b->born ? last : b->born;
    b->free_waits = !d->freed_in_order;     /* (release_chunk waits for its last use) */
}

void res_plan_alloc(res_dev_t *d, uint64_t base, uint64_t bytes)
{
    res_plan_t *p = d->plan;
    uint32_t first, n = (uint32_t)((bytes + d->chunk - 1) / d->chunk);
    if (p && whole(d, base, &first))
        born(d, p, first, n);
}

/* A small allocation's free waits for its slab chunk's last use (free_now): a wait of the
 * host after the profile's last operation, for the chunk's buffer. */
static void slab_free_wait(res_dev_t *d, res_plan_t *p, uint64_t base)
{
    uint32_t ci = (uint32_t)((base - d->base) / d->chunk);
    if (p->state != P_REC || p->nops == 0 || ci >= arena_chunk_count(d->arena) ||
        !p->buf_of[ci] || d->freed_in_order)
        return;
    if (res_plan_grow((void **)&p->waits, &p->cap_waits, p->nwaits + 1, sizeof(*p->waits)) < 0) {
        p->state = P_OFF;
        return;
    }
    p->waits[p->nwaits++] = (pol_wait_t){ (uint32_t)p->nops - 1, p->buf_of[ci] - 1 };
}

void res_plan_free(res_dev_t *d, uint64_t base)
{
    res_plan_t *p = d->plan;
    uint32_t first;
    if (!p)
        return;
    if (whole(d, base, &first))
        dies(d, p, first);
    else
        slab_free_wait(d, p, base);
}

/* A slab chunk's life runs from the allocation that brings it into use to the free that
 * empties it (or the trim that releases it, if later); from then to its next use its contents
 * are dead, so the plan neither copies them nor keeps room for them.  The executor finds the
 * chunk by its place in the births, as a large allocation's. */
void res_plan_slab(res_dev_t *d, uint32_t ci, int is_born)
{
    res_plan_t *p = d->plan;
    if (!p || ci >= arena_chunk_count(d->arena))
        return;
    if (is_born)
        born(d, p, ci, 1);
    else
        dies(d, p, ci);
}
