/* SPDX-License-Identifier: MIT */
/*
 * res_plan_issue.c - the plan's moves issued, chunk by chunk, as res_plan.c matches each
 * operation: a prefetch (res_prefetch) or an eviction (res_evict_async) through the host, the
 * NVMe tier's moves through res_plan_nvme.c.  A chunk not where its move starts, or whose move
 * is refused, is left to the reactive engine (counted), except a move refused only because an
 * operation that may use the chunk is still in flight, which is tried again.
 */
#include <errno.h>

#include "res_int.h"
#include "res_nvme.h"
#include "res_plan_int.h"

uint32_t res_plan_move_first(const res_dev_t *d, const res_plan_t *p, const pol_move_t *m)
{
    if (m->buf >= p->nbufs || m->chunk + m->nchunks > p->nch[m->buf])
        return UINT32_MAX;
    uint32_t first = res_plan_buf_first(d, p, m->buf);
    return first == UINT32_MAX ? first : first + m->chunk;
}

/* Does chunk ci lie behind the pointers of the operation being matched?  The plan may evict
 * such a chunk before it (a POL_NEAR use): the operation does not keep it, and res_plan_op
 * has its eviction complete before it is enqueued (settle). */
static int behind(const res_plan_t *p, uint32_t ci)
{
    return p->cur && p->cur->nbehind && res_collect_behind(p->cur, ci);
}

/*
 * Moves tried again.  A chunk's move refused because an operation that may use the chunk is
 * still in flight (-EBUSY: a prefetch of a chunk an operation running in place, or reaching it
 * behind its pointers, still uses; an eviction of a chunk the operation being matched reached)
 * is noted and tried again before each of the next operations: a prefetch until the operation
 * that needs it, which then has the host wait for that use (res_plan_retry_due), an eviction
 * for RETRY_OPS operations.  The chunk is left to the reactive engine when its time is up, when
 * it is no longer where the move starts, or when the list is full.
 */
static int move_dispatch(res_dev_t *d, const res_plan_t *p, const pol_move_t *m, uint32_t ci,
                         uint32_t serial)
{
    uint32_t evict = m->from == POL_GPU && m->to == POL_HOST && behind(p, ci) ? 0 : serial;
    if (m->from == POL_NVME || m->to == POL_NVME || d->chunks[ci].tier == TIER_NVME ||
        (m->to == POL_HOST && d->nvme_on))
        return res_plan_nvme_move(d, ci, m->from, m->to, evict);
    if (m->to == POL_GPU && m->from == POL_HOST)
        return res_prefetch(d, ci);
    if (m->from == POL_GPU && m->to == POL_HOST)
        return res_evict_async(d, ci, evict);
    return -1;
}

static void left(res_dev_t *d, res_plan_t *p, const pol_move_t *m, uint32_t ci)
{
    SHIM_TRACE(RES, "device %d: plan move of chunk %u, tier %d -> %d, left (now tier %d%s)",
               d->device, ci, m->from, m->to, d->chunks[ci].tier,
               d->chunks[ci].moving ? ", moving" : "");
    p->skipped++;
}

/* Chunk ci's part of move m, before or after operation `at`: 0 when issued, -1 when left or
 * to be tried again (counted either way). */
static int issue_chunk(res_dev_t *d, res_plan_t *p, const pol_move_t *m, uint32_t ci,
                       uint32_t serial, uint32_t at)
{
    int r = move_dispatch(d, p, m, ci, serial);
    if (r == 0) {
        p->chunks_moved++;
        return 0;
    }
    if (r == -EBUSY && p->nretry < PLAN_RETRIES) {
        uint32_t until = m->to != POL_GPU ? at + RETRY_OPS
                         : m->need_by >= at && m->need_by < p->nops ? m->need_by
                                                                     : (uint32_t)p->nops;
        p->retry[p->nretry].move = (uint32_t)(m - p->plan->moves);
        p->retry[p->nretry].ci = ci;
        p->retry[p->nretry++].until = until;
        return -1;
    }
    left(d, p, m, ci);
    return -1;
}

void res_plan_retry(res_dev_t *d, res_plan_t *p, uint32_t serial, uint32_t at)
{
    uint32_t keep = 0;
    for (uint32_t i = 0; i < p->nretry; i++) {
        const pol_move_t *m = &p->plan->moves[p->retry[i].move];
        uint32_t ci = p->retry[i].ci;
        int where = m->from == POL_GPU ? TIER_GPU : m->from == POL_HOST ? TIER_HOST : TIER_NVME;
        int r = d->chunks[ci].tier == where && !d->chunks[ci].moving
                    ? move_dispatch(d, p, m, ci, serial) : -1;
        if (r == 0) {
            p->chunks_moved++;
            p->retried++;
        } else if (r == -EBUSY && (at < p->retry[i].until ||
                                   (m->to == POL_GPU && m->need_by == at))) {
            p->retry[keep++] = p->retry[i];
        } else {
            left(d, p, m, ci);
        }
    }
    p->nretry = keep;
}

void res_plan_retry_due(res_dev_t *d, res_plan_t *p, uint32_t serial)
{
    uint32_t at = p->due - 1;
    const pol_plan_t *pl = p->plan;
    p->due = 0;
    for (uint32_t i = 0; at < p->nops && p->state == P_EXEC && p->plan == pl && i < p->nretry; ) {
        pol_move_t m = pl->moves[p->retry[i].move];
        uint32_t ci = p->retry[i].ci;
        if (m.to != POL_GPU || m.need_by != at) {
            i++;
            continue;
        }
        p->retry[i] = p->retry[--p->nretry];
        /* (another thread may follow the plan meanwhile: the list is looked at again, and the
         * move goes only if the plan is still the one it is of) */
        int w = res_idle_unlocked(d, ci, &d->blocked_flight_s);
        const chunk_t *c = &d->chunks[ci];
        int r = w >= 0 && p->state == P_EXEC && p->plan == pl && c->tier == TIER_HOST &&
                        !c->moving ? move_dispatch(d, p, &m, ci, serial) : -1;
        if (r == 0) {
            p->chunks_moved++;
            p->retried++;
        } else {
            left(d, p, &m, ci);
        }
        i = 0;
    }
}

void res_plan_retry_drop(res_dev_t *d, res_plan_t *p)
{
    for (uint32_t i = 0; i < p->nretry; i++)
        left(d, p, &p->plan->moves[p->retry[i].move], p->retry[i].ci);
    p->nretry = 0;
}

/* Issue move m of the plan (operation `serial` must keep its chunks). */
static void issue(res_dev_t *d, res_plan_t *p, const pol_move_t *m, uint32_t serial, uint32_t at)
{
    uint32_t first = res_plan_move_first(d, p, m);
    if (first == UINT32_MAX)
        return;
    p->moves++;
    if (m->from == POL_NTIERS)
        return;                         /* a new buffer's chunks: the arena places them */
    for (uint32_t i = 0; i < m->nchunks; i++)
        issue_chunk(d, p, m, first + i, serial, at);
}

/* Move m, issued ahead of its place (hoist), at its place: its chunks whose move ahead was
 * refused, or cancelled since by a use (one that ran in place, on host memory), go now. */
static void issue_rest(res_dev_t *d, res_plan_t *p, const pol_move_t *m, uint32_t serial,
                       uint32_t at)
{
    uint32_t first = res_plan_move_first(d, p, m);
    for (uint32_t i = 0; first != UINT32_MAX && i < m->nchunks; i++)
        if (d->chunks[first + i].tier == TIER_HOST && !d->chunks[first + i].moving)
            issue_chunk(d, p, m, first + i, serial, at);
}

void res_plan_issue_range(res_dev_t *d, res_plan_t *p, uint32_t from, uint32_t to,
                          uint32_t serial, uint32_t at)
{
    for (uint32_t i = from; i < to && i < p->plan->nmoves; i++) {
        if (SHIM_UNLIKELY(p->ahead[i])) {
            p->ahead[i] = 0;
            issue_rest(d, p, &p->plan->moves[i], serial, at);
        } else {
            issue(d, p, &p->plan->moves[i], serial, at);
        }
    }
}
