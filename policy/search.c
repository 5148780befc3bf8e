/* SPDX-License-Identifier: MIT */
/*
 * search.c - pol_plan: the knobs, the plans they give, the best predicted one.
 *
 * A configuration is (lookahead, extent_chunks, pin_bytes, slack_chunks, near).  pin_bytes
 * pins, beyond the buffers the caller pinned, the permanent buffers with the most uses per
 * chunk while their bytes fit; slack_chunks plans for a GPU that much smaller; near plans
 * POL_NEAR references as uses (1) or leaves them out (0: an index each).  lookahead, the
 * pinned set, the slack and near change the chunk-level plan (belady.c); the extent only
 * groups its moves: within the moves issued at one point, moves away from the GPU are put
 * first (they free the room the others take) and consecutive moves of neighbouring chunks of
 * one buffer, same tiers and flags, become one move of up to extent_chunks chunks, needed by
 * the earliest of them: fewer, larger mapping calls (where a move is one handle,
 * m.handle_share, it also waits for its last chunk's last use, and the operation needing its
 * first chunk for its whole copy; a chunk each, the executor moves it chunk by chunk).
 * Every plan is walked (check.c) before it is replayed (replay.c); with knobs == NULL, the
 * knobs are searched coordinate by coordinate: lookahead {0, 4, 16, 64, 256} with no extra
 * pins and near 0 (and 1, where the input has POL_NEAR references), then pins of 1/4 and
 * 1/2 of the GPU with the best lookahead and near, each with extents {1, 8, 64} (7
 * chunk-level plans and 21 replays; 12 and 36 with POL_NEAR references); where the host
 * waits for the copies that free GPU room (not m.room_on_device), slack of 2 and 4 chunks
 * with the best knobs so far (2 more plans and replays); the plan with the least predicted
 * iteration time is kept (ties: the one found first).  The caller may fix the slack instead
 * (pol_input_t.slack): every plan of the search then has that slack, or none.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pol_int.h"

/* The least slack the search tries (then twice it). */
#define SLACK_CHUNKS 2

void pol_plan_free(pol_plan_t *p)
{
    if (!p)
        return;
    free(p->moves);
    free(p->op_first);
    free(p->op_after);
    free(p->start_tier);
    free(p->start_home);
    free(p);
}

/* ---------------------------------------------------------------- assembling extents */

static uint32_t rel_need(const pol_index_t *ix, const pol_cplan_t *cp, uint64_t need_by)
{
    if (need_by == POL_INF)
        return UINT32_MAX;
    uint64_t r = need_by - (uint64_t)cp->pass * ix->nops;
    return (uint32_t)(r >= ix->nops ? r - ix->nops : r);
}

/* Can chunk move b join the extent starting with a (of n chunks so far)?  *capped: set when
 * only the limit `extent` keeps it out. */
static int joins(const pol_index_t *ix, const pol_cmove_t *a, uint32_t n, const pol_cmove_t *b,
                 uint32_t extent, int *capped)
{
    int fits = ix->chunk_buf[a->chunk] == ix->chunk_buf[b->chunk] &&
               b->chunk == a->chunk + n && a->from == b->from && a->to == b->to &&
               a->writeback == b->writeback && a->keep == b->keep;
    if (fits && n >= extent)
        *capped = 1;
    return fits && n < extent;
}

/* Append the group of chunk moves g[0 .. n) (one issue point), downward moves first when
 * `reorder`, as extents. */
static void emit_group(const pol_index_t *ix, const pol_cplan_t *cp, const pol_cmove_t *g,
                       uint64_t n, uint32_t extent, int reorder, pol_plan_t *p, int *capped)
{
    for (int pass = 0; pass < (reorder ? 2 : 1); pass++) {
        const pol_cmove_t *head = NULL;
        uint32_t len = 0;
        uint64_t need = POL_INF;
        for (uint64_t k = 0; k <= n; k++) {
            const pol_cmove_t *m = k < n ? &g[k] : NULL;
            if (m && reorder && (m->to == POL_GPU) != pass)
                continue;
            if (head && m && joins(ix, head, len, m, extent, capped)) {
                len++;
                need = m->need_by < need ? m->need_by : need;
                continue;
            }
            if (head) {
                uint32_t b = ix->chunk_buf[head->chunk];
                p->moves[p->nmoves++] = (pol_move_t){
                    b, (uint32_t)(head->chunk - ix->chunk_base[b]), len, head->from, head->to,
                    head->writeback, head->keep, rel_need(ix, cp, need) };
            }
            head = m, len = 1, need = m ? m->need_by : POL_INF;
        }
    }
}

/* The plan for chunk moves cp with extents of up to `extent` chunks: 0 or -ENOMEM. */
int pol_assemble(const pol_input_t *in, const pol_index_t *ix, const pol_cplan_t *cp,
                 uint32_t extent, int reorder, pol_plan_t **out, int *capped)
{
    int cap = 0;
    pol_plan_t *p = calloc(1, sizeof(*p));
    uint64_t nc = ix->nchunks ? ix->nchunks : 1;
    if (!p)
        return -ENOMEM;
    p->moves = malloc((cp->n ? cp->n : 1) * sizeof(pol_move_t));
    p->op_first = calloc(ix->nops + 1, sizeof(uint32_t));
    p->op_after = calloc(ix->nops + 1, sizeof(uint32_t));
    p->start_tier = malloc(nc);
    p->start_home = malloc(nc);
    if (!p->moves || !p->op_first || !p->op_after || !p->start_tier || !p->start_home) {
        pol_plan_free(p);
        return -ENOMEM;
    }
    memcpy(p->start_tier, cp->start_tier, ix->nchunks);
    memcpy(p->start_home, cp->start_home, ix->nchunks);
    uint64_t k = 0;
    for (uint32_t i = 0; i < ix->nops; i++)
        for (int after = 0; after < 2; after++) {
            uint64_t a = k;
            while (k < cp->n && cp->mv[k].op == i && cp->mv[k].after == after)
                k++;
            (after ? p->op_after : p->op_first)[i] = (uint32_t)p->nmoves;
            emit_group(ix, cp, cp->mv + a, k - a, extent, reorder, p, &cap);
        }
    p->op_first[ix->nops] = p->op_after[ix->nops] = (uint32_t)p->nmoves;
    if (capped && cap)
        *capped = 1;
    *out = p;
    return 0;
}

/* ---------------------------------------------------------------- pinning */

typedef struct reuse {
    double per_chunk;
    uint32_t buf;
} reuse_t;

static int reuse_cmp(const void *a, const void *b)
{
    const reuse_t *x = a, *y = b;
    if (x->per_chunk != y->per_chunk)
        return x->per_chunk < y->per_chunk ? 1 : -1;
    return x->buf < y->buf ? -1 : x->buf > y->buf;
}

/* pin[b]: the caller's pinned buffers, then permanent buffers by uses per chunk while
 * pin_bytes lasts.  0 or -ENOMEM. */
static int choose_pins(const pol_input_t *in, const pol_index_t *ix, uint64_t pin_bytes,
                       uint8_t *pin)
{
    reuse_t *r = malloc((ix->nbufs ? ix->nbufs : 1) * sizeof(*r));
    if (!r)
        return -ENOMEM;
    for (uint32_t b = 0; b < ix->nbufs; b++) {
        pin[b] = in->bufs[b].pinned;
        r[b] = (reuse_t){ 0, b };
    }
    for (uint64_t u = 0; u < ix->nuses; u++)
        r[ix->chunk_buf[ix->use_chunk[u]]].per_chunk += 1;
    for (uint32_t b = 0; b < ix->nbufs; b++)
        r[b].per_chunk /= (double)(ix->chunk_base[b + 1] - ix->chunk_base[b]);
    qsort(r, ix->nbufs, sizeof(*r), reuse_cmp);
    for (uint32_t k = 0; k < ix->nbufs && pin_bytes; k++) {
        uint32_t b = r[k].buf;
        uint64_t bytes = (ix->chunk_base[b + 1] - ix->chunk_base[b]) * in->m.chunk;
        if (pin[b] || ix->buf_wrap[b] || r[k].per_chunk == 0 || bytes > pin_bytes)
            continue;
        pin[b] = 1;
        pin_bytes -= bytes;
    }
    free(r);
    return 0;
}

/* ---------------------------------------------------------------- pol_plan */

typedef struct best {
    pol_plan_t *plan;
} best_t;

/* Assemble, check and replay cp with `extent`; keep it in *best if it predicts less.
 * *capped: set when the extent limit split some extent (see pol_assemble). */
static int try_extent(const pol_input_t *in, const pol_index_t *ix, const pol_cplan_t *cp,
                      pol_knobs_t k, best_t *best, int *capped)
{
    pol_plan_t *p = NULL;
    pol_result_t r;
    /* (a plan that cannot predict less than the best is not replayed to its end) */
    double stop = best->plan ? best->plan->predicted.iter_ns : INFINITY;
    int rc = pol_assemble(in, ix, cp, k.extent_chunks, 1, &p, capped);
    if (!rc) {
        p->knobs = k;
        rc = pol_replay_ix(in, ix, p, &r, stop);    /* walks the plan first */
    }
    if (rc == -EINVAL) {
        pol_plan_free(p);   /* moving evictions first overfilled a lower tier */
        p = NULL;
        rc = pol_assemble(in, ix, cp, k.extent_chunks, 0, &p, capped);
        if (!rc) {
            p->knobs = k;
            rc = pol_replay_ix(in, ix, p, &r, stop);
        }
    }
    if (rc == 1) {
        pol_plan_free(p);   /* no better than the best */
        return 0;
    }
    if (rc) {
        pol_plan_free(p);
        return rc == -EINVAL ? -EPROTO : rc;    /* the planner broke its own promise */
    }
    p->predicted = r;
    if (!best->plan || r.iter_ns < best->plan->predicted.iter_ns) {
        pol_plan_free(best->plan);
        best->plan = p;
    } else {
        pol_plan_free(p);
    }
    return 0;
}

/* The most chunks an operation reaches, of those that do not run in place. */
static uint64_t most_fitting(const pol_index_t *ix)
{
    uint64_t most = 0;
    for (uint32_t i = 0; i < ix->nops; i++) {
        uint64_t n = ix->op_use[i + 1] - ix->op_use[i];
        if (!pol_op_in_place(ix, i) && n > most)
            most = n;
    }
    return most;
}

/* Plan with lookahead, pin_bytes and slack_chunks, each extent of extents[0 .. n)
 * (increasing).  When no extent was split by a limit, a larger limit gives the same plan, the
 * same prediction: it would not be kept (ties keep the first), and is not tried.  The slack
 * is planned as a GPU that holds that much less (ixs), and replayed on the whole GPU. */
static int try_config(const pol_input_t *in, const pol_index_t *ix0, pol_knobs_t k,
                      const uint32_t *extents, int n, uint8_t *pin, best_t *best)
{
    pol_index_t ixs = *ix0;     /* (the same arrays: nothing is written through it) */
    const pol_index_t *ix = &ixs;
    if (k.slack_chunks) {
        /* (not where it would change which operations run in place) */
        if (in->m.room_on_device || most_fitting(ix0) + k.slack_chunks > ix0->gpu_cap)
            return -ENOSPC;
        ixs.gpu_cap -= k.slack_chunks;
        ixs.cap[POL_GPU] -= k.slack_chunks;
    }
    int rc = choose_pins(in, ix, k.pin_bytes, pin);
    if (rc)
        return rc;
    if (pol_min_gpu_chunks(in, ix, pin) > ix->gpu_cap)
        return -ENOSPC;
    pol_cplan_t cp;
    if ((rc = pol_belady(in, ix, pin, k.lookahead, &cp)))
        return rc;
    int capped = 1;
    for (int e = 0; !rc && capped && e < n; e++) {
        k.extent_chunks = extents[e];
        capped = 0;
        rc = try_extent(in, ix, &cp, k, best, &capped);
    }
    pol_cplan_free(&cp);
    return rc;
}

/* Plan one configuration of the search, each extent, on the index of its k.near (ixs[0]
 * leaves POL_NEAR references out, ixs[1] has them as uses); a configuration that cannot be
 * planned (-ENOSPC: pinning too much; -EDOM) is skipped, its error kept in *first. */
static int search_one(const pol_input_t *in, pol_index_t *const *ixs, pol_knobs_t k,
                      uint8_t *pin, best_t *best, int *first)
{
    static const uint32_t extents[] = { 1, 8, 64 };
    int rc = try_config(in, ixs[k.near], k, extents, 3, pin, best);
    if (rc && rc != -ENOSPC && rc != -EDOM)
        return rc;
    if (rc && !*first)
        *first = rc;
    return 0;
}

/* A coordinate search: every lookahead without extra pins, with POL_NEAR references left out
 * and, where there are some, planned as uses (ixs[1] not NULL); then the pin fractions with
 * the best lookahead and treatment of those references so far (each with every extent); the
 * first error if nothing planned. */
static int search(const pol_input_t *in, pol_index_t *const *ixs, uint8_t *pin, best_t *best)
{
    static const uint32_t looks[] = { 0, 4, 16, 64, 256 };
    uint32_t slack = in->slack == POL_SLACK_SEARCH || in->slack == POL_SLACK_NONE ? 0 : in->slack;
    int first = 0, rc = 0;
    for (uint32_t near = 0; near < (ixs[1] ? 2u : 1u); near++)
        for (unsigned l = 0; !rc && l < 5; l++) {
            pol_knobs_t k = { .lookahead = looks[l], .extent_chunks = 1, .slack_chunks = slack,
                              .near = near };
            rc = search_one(in, ixs, k, pin, best, &first);
        }
    pol_knobs_t b = best->plan ? best->plan->knobs : (pol_knobs_t){ 0 };
    for (unsigned q = 1; !rc && q < 3; q++) {
        pol_knobs_t k = { .lookahead = b.lookahead, .extent_chunks = 1,
                          .pin_bytes = in->m.cap[POL_GPU] / 4 * q, .slack_chunks = slack,
                          .near = b.near };
        rc = search_one(in, ixs, k, pin, best, &first);
    }
    int searched = in->slack == POL_SLACK_SEARCH && !in->m.room_on_device;
    for (unsigned q = 0; !rc && best->plan && searched && q < 2; q++) {
        pol_knobs_t k = best->plan->knobs;
        k.slack_chunks = SLACK_CHUNKS << q;
        rc = try_config(in, ixs[k.near], k, &k.extent_chunks, 1, pin, best);
        rc = rc == -ENOSPC || rc == -EDOM ? 0 : rc;
    }
    if (rc)
        return rc;
    return best->plan ? 0 : first;
}

int pol_plan(const pol_input_t *in, const pol_knobs_t *knobs, pol_plan_t **out)
{
    int rc = pol_input_check(in, NULL, 0);
    if (rc)
        return rc;
    if (knobs && (knobs->extent_chunks == 0 || knobs->near > 1))
        return -EINVAL;
    pol_index_t ix[2];
    pol_index_t *ixs[2] = { &ix[0], NULL };
    if ((rc = pol_index_build(in, &ix[0], 0)))
        return rc;
    if (ix[0].near_refs && (!knobs || knobs->near)) {
        if ((rc = pol_index_build(in, &ix[1], 1))) {
            pol_index_free(&ix[0]);
            return rc;
        }
        ixs[1] = &ix[1];
    }
    best_t best = { NULL };
    uint8_t *pin = malloc(ix[0].nbufs ? ix[0].nbufs : 1);
    if (!pin)
        rc = -ENOMEM;
    else if (knobs)
        rc = try_config(in, ixs[knobs->near] ? ixs[knobs->near] : ixs[0], *knobs,
                        &knobs->extent_chunks, 1, pin, &best);
    else
        rc = search(in, ixs, pin, &best);
    free(pin);
    if (!rc && !best.plan)
        rc = -ENOSPC;
    const pol_index_t *bix = best.plan && ixs[best.plan->knobs.near] ? ixs[best.plan->knobs.near]
                                                                      : ixs[0];
    if (!rc && (rc = pol_walk(in, bix, best.plan, NULL, 0, NULL, 2)) == -EINVAL)
        rc = -EPROTO;       /* (the replays walked one iteration: now the second as well) */
    pol_index_free(&ix[0]);
    if (ixs[1])
        pol_index_free(&ix[1]);
    if (rc) {
        pol_plan_free(best.plan);
        return rc;
    }
    *out = best.plan;
    return 0;
}
