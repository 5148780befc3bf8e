/* SPDX-License-Identifier: MIT */
/*
 * res_plan_victim.c - which chunk a reactive eviction takes while a plan is followed.
 *
 * What the plan did not foresee (an allocation it took for another, a chunk brought in late,
 * an operation of another shape) falls to the reactive engine, whose evictions take the
 * least recently used GPU chunk.  Under a plan that is often the wrong one: the plan keeps
 * on the GPU what the next operations use, and LRU evicts exactly that when the loop cycles
 * through more memory than the GPU holds.  The chunk evicted then misses at its next use,
 * whose reactive bring-in evicts another the plan keeps, and so on: measured on
 * bench/plan_patterns' `small` job at a quarter of its footprint, two in three chunks brought
 * in reactively in a planned iteration had been evicted reactively earlier in it.
 *
 * So while a plan is followed, the victim is chosen the way the plan chooses (Belady): of the
 * first VICTIM_CANDIDATES chunks of the LRU list that the operation being prepared does not
 * reach, the one whose next use in the plan's iteration, from its cursor on (across the
 * iteration's end), comes last.  The operations ahead are read from the profile as the plan
 * places them now (res_plan_buf_first), until one candidate is left unused or
 * VICTIM_VISITS chunk references were read; a candidate not used within them is taken first,
 * in LRU order; an operation that runs in place uses nothing on the GPU and is passed over.
 * Without a plan to follow, LRU as always.
 *
 * With an NVMe area, the host chunk the reactive engine sends to NVMe when host memory is full
 * is chosen the same way among the oldest in host memory (res_plan_host_victim), where every
 * use counts: an operation in place and a kernel behind its pointers reach the chunk where it
 * is, and on NVMe it would have to be read back first.  Measured on bench/nvme_train with the
 * GPU and host at 1/4: per tensor 53.4 ms a step with the oldest chunks going (GPU and host),
 * 47.7 ms with both victims chosen so; pooled 99.0 and 97.4 ms.
 */
#include <stdlib.h>
#include <string.h>

#include "res_plan_int.h"

#define VICTIM_CANDIDATES 32    /* LRU chunks looked at */
#define VICTIM_VISITS 4096      /* chunk references of the operations ahead read, at most */

/* Candidate marks in p->near: 2 epoch (a candidate not used yet), 2 epoch + 1 (used). */
static uint32_t new_epoch(res_dev_t *d, res_plan_t *p)
{
    if (!p->near) {
        p->near = calloc(arena_chunk_count(d->arena), sizeof(*p->near));
        if (!p->near)
            return 0;
    }
    if (++p->near_epoch >= 1u << 30) {
        memset(p->near, 0, arena_chunk_count(d->arena) * sizeof(*p->near));
        p->near_epoch = 1;
    }
    return p->near_epoch;
}

/* The chunks of operation `at` of the profile, as they lie now: each candidate among them
 * marked used (the last one marked in *last); returns how many were newly marked.  Unless
 * `all` (every reference counts), an operation that runs in place (it reaches more than the
 * plan's GPU room) uses none, and chunks behind a kernel's pointers count only where the plan
 * brings them in. */
static uint32_t mark_uses(res_dev_t *d, res_plan_t *p, uint32_t at, uint32_t epoch, int all,
                          uint32_t *visits, uint32_t *last)
{
    const pol_op_t *o = &p->ops[at];
    uint32_t marked = 0, nchunks = arena_chunk_count(d->arena);
    if (!all && res_plan_op_reach(p, at) > p->gpu_chunks)
        return 0;                       /* (in place: it needs nothing on the GPU) */
    for (uint32_t r = o->ref; r < o->ref + o->nref && *visits < VICTIM_VISITS; r++) {
        const pol_ref_t *ref = &p->refs[r];
        uint32_t first = res_plan_buf_first(d, p, ref->buf);
        if (first == UINT32_MAX || (!all && (ref->access & POL_NEAR) && !p->plan->knobs.near))
            continue;                   /* (a plan without them leaves them where they are) */
        for (uint32_t k = 0; k < ref->nchunks && *visits < VICTIM_VISITS; k++, (*visits)++) {
            uint32_t ci = first + ref->chunk + k;
            if (ci < nchunks && p->near[ci] == 2 * epoch) {
                p->near[ci] = 2 * epoch + 1;
                *last = ci;
                marked++;
            }
        }
    }
    return marked;
}

/* Of the n candidates (n > 1), the first not used within the operations ahead, else the one
 * used last; `all` as mark_uses. */
static uint32_t used_last(res_dev_t *d, res_plan_t *p, const uint32_t *cand, uint32_t n,
                          int all)
{
    uint32_t epoch = new_epoch(d, p);
    if (!epoch)
        return cand[0];
    for (uint32_t i = 0; i < n; i++)
        p->near[cand[i]] = 2 * epoch;
    uint32_t left = n, visits = 0, last = UINT32_MAX;
    for (uint32_t j = 0; j < p->nops && left > 1 && visits < VICTIM_VISITS; j++)
        left -= mark_uses(d, p, (p->cursor + j) % (uint32_t)p->nops, epoch, all, &visits,
                          &last);
    for (uint32_t i = 0; i < n; i++)
        if (p->near[cand[i]] == 2 * epoch)
            return cand[i];
    return last;
}

uint32_t res_plan_victim(res_dev_t *d, uint32_t serial)
{
    res_plan_t *p = d->plan;
    uint32_t cand[VICTIM_CANDIDATES], n = 0;
    if (!p || p->state != P_EXEC || !p->nops)
        return UINT32_MAX;
    for (uint32_t i = d->lru.head; i && n < VICTIM_CANDIDATES; i = d->chunks[i - 1].next)
        if (serial == 0 || d->chunks[i - 1].seen != serial)
            cand[n++] = i - 1;
    if (n < 2)
        return n ? cand[0] : UINT32_MAX;
    p->victims++;
    return used_last(d, p, cand, n, 0);
}

uint32_t res_plan_host_victim(res_dev_t *d, int (*may_go)(const chunk_t *c))
{
    res_plan_t *p = d->plan;
    uint32_t cand[VICTIM_CANDIDATES], n = 0;
    if (!p || p->state != P_EXEC || !p->nops)
        return UINT32_MAX;
    for (uint32_t i = d->host.head; i && n < VICTIM_CANDIDATES; i = d->chunks[i - 1].next)
        if (may_go(&d->chunks[i - 1]) && d->chunks[i - 1].seen != d->serial)
            cand[n++] = i - 1;          /* (not one the operation being prepared reaches) */
    if (n < 2)
        return n ? cand[0] : UINT32_MAX;
    p->host_victims++;
    return used_last(d, p, cand, n, 1);
}
