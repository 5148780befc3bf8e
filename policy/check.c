/* SPDX-License-Identifier: MIT */
/*
 * check.c - what the policy accepts and what a plan must guarantee.
 *
 * pol_input_check names the first bad field of an input and the values it accepts.
 * pol_walk follows a plan over iterations as an executor would, chunk by chunk, and stops
 * at the first broken promise: a move whose source is not where the chunk is, a buffer
 * materialised while it is not alive, a tier over its capacity (kept copies counted), an
 * operation whose chunk is not on the GPU, a pinned buffer that moves, a non-nvme_ok buffer on
 * NVME, data lost (writeback = 0 where the destination has no current copy and a later use
 * reads the data), or an end state that is not the start state (the plan would not repeat).  The first iteration starts with every kept copy
 * current; the second starts as the first ended, so a kept copy written meanwhile is stale
 * there, and a move back to it without a copy loses data.  pol_plan_verify is that walk over
 * two iterations; the search's replays walk one (for the peaks and the other promises) and
 * pol_plan walks its chosen plan over two.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pol_int.h"

const char *pol_tier_name(int tier)
{
    static const char *names[] = { "gpu", "peer", "host", "nvme" };
    return tier >= 0 && tier < POL_NTIERS ? names[tier] : "none";
}

static int fail(char *err, size_t len, const char *fmt, ...)
{
    if (err && len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, len, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

/* ---------------------------------------------------------------- pol_input_check */

static int check_machine(const pol_machine_t *m, char *err, size_t len)
{
    if (m->chunk == 0)
        return fail(err, len, "m.chunk is 0: the chunk size must be at least 1 byte");
    if (m->cap[POL_GPU] < m->chunk)
        return fail(err, len, "m.cap[gpu] is %llu bytes: at least one chunk (%llu) is needed",
                    (unsigned long long)m->cap[POL_GPU], (unsigned long long)m->chunk);
    for (int t = POL_PEER; t < POL_NTIERS; t++) {
        const pol_link_t *l = &m->link[t];
        if (!m->cap[t])
            continue;
        if (!(l->to_gpu_gbs > 0) || !(l->from_gpu_gbs > 0) || !(l->duplex_gbs > 0))
            return fail(err, len, "m.link[%s]: to_gpu_gbs, from_gpu_gbs and duplex_gbs must "
                        "be > 0 for a tier with a capacity", pol_tier_name(t));
        if (!(l->latency_us >= 0))
            return fail(err, len, "m.link[%s].latency_us must be >= 0", pol_tier_name(t));
    }
    if (!(m->map_us_per_call >= 0) || !(m->map_us_per_chunk >= 0) ||
        !(m->birth_us_per_chunk >= 0) || !(m->mapback_us_per_chunk >= 0) ||
        !(m->drop_us_per_chunk >= 0))
        return fail(err, len, "m.map_us_per_call, m.map_us_per_chunk, m.birth_us_per_chunk, "
                              "m.mapback_us_per_chunk and m.drop_us_per_chunk must be >= 0");
    if (!(m->handle_share >= 0 && m->handle_share <= 1))
        return fail(err, len, "m.handle_share is %g: 0 (a handle a chunk) to 1",
                    m->handle_share);
    if (!(m->host_us_per_op >= 0) || m->host_us_per_op > 1e6)
        return fail(err, len, "m.host_us_per_op is %g: 0 to 1e6 microseconds",
                    m->host_us_per_op);
    if (m->copy_engines < 1)
        return fail(err, len, "m.copy_engines is 0: 1 or more");
    return 0;
}

static int check_buf(const pol_input_t *in, size_t b, char *err, size_t len)
{
    const pol_buf_t *bf = &in->bufs[b];
    long n = (long)in->nops;
    if (bf->bytes == 0)
        return fail(err, len, "bufs[%zu].bytes is 0: a buffer has at least one byte", b);
    if (bf->born < -1 || bf->born >= n || bf->dies < -1 || bf->dies >= n)
        return fail(err, len, "bufs[%zu]: born %d, dies %d: each must be -1 or an operation "
                    "index below nops (%zu)", b, bf->born, bf->dies, in->nops);
    if (bf->born == -1 && bf->dies >= 0)
        return fail(err, len, "bufs[%zu]: dies at %d but was allocated before the iteration; "
                    "a buffer alive across the iteration's end has born > dies", b, bf->dies);
    return 0;
}

/* Is bufs[b] alive at operation i (see index.c for lives)? */
static int alive_at(const pol_input_t *in, uint32_t b, size_t i)
{
    const pol_buf_t *bf = &in->bufs[b];
    if (bf->born < 0)
        return 1;
    size_t lb = (size_t)bf->born;
    size_t ld = bf->dies >= 0 ? (size_t)bf->dies : (lb + in->nops - 1) % in->nops;
    return ld >= lb ? i >= lb && i <= ld : i >= lb || i <= ld;
}

/* Every reference, whether an operation names it or not (the index reads them all). */
static int check_ref(const pol_input_t *in, size_t r, char *err, size_t len)
{
    const pol_ref_t *rf = &in->refs[r];
    if (rf->buf >= in->nbufs)
        return fail(err, len, "refs[%zu].buf is %u: nbufs is %zu", r, rf->buf, in->nbufs);
    uint64_t nch = pol_chunks_of(in->bufs[rf->buf].bytes, in->m.chunk);
    if (rf->nchunks == 0 || (uint64_t)rf->chunk + rf->nchunks > nch)
        return fail(err, len, "refs[%zu]: chunks %u + %u of bufs[%u], which has %llu", r,
                    rf->chunk, rf->nchunks, rf->buf, (unsigned long long)nch);
    uint8_t a = rf->access & ~POL_NEAR;
    if (a != POL_READ && a != POL_WRITE && a != POL_RW && a != POL_OVERWRITE)
        return fail(err, len, "refs[%zu].access is %u: POL_READ (1), POL_WRITE (2), "
                    "POL_RW (3) or POL_OVERWRITE (6), each with or without POL_NEAR (8)", r,
                    rf->access);
    return 0;
}

static int check_op(const pol_input_t *in, size_t i, char *err, size_t len)
{
    const pol_op_t *op = &in->ops[i];
    if (op->stream >= in->nstreams)
        return fail(err, len, "ops[%zu].stream is %u: streams are 0 .. %u", i, op->stream,
                    in->nstreams - 1);
    if ((uint64_t)op->ref + op->nref > in->nrefs)
        return fail(err, len, "ops[%zu]: refs %u .. %u, beyond nrefs (%zu)", i, op->ref,
                    op->ref + op->nref, in->nrefs);
    for (uint32_t r = op->ref; r < op->ref + op->nref; r++) {
        const pol_ref_t *rf = &in->refs[r];
        if (!alive_at(in, rf->buf, i))
            return fail(err, len, "ops[%zu] reaches bufs[%u], which is not alive then (born "
                        "%d, dies %d)", i, rf->buf, in->bufs[rf->buf].born,
                        in->bufs[rf->buf].dies);
    }
    return 0;
}

int pol_input_check(const pol_input_t *in, char *err, size_t len)
{
    if (!in)
        return fail(err, len, "no input");
    if (in->nops == 0 || !in->ops)
        return fail(err, len, "nops is 0: an iteration has at least one operation");
    if (in->nops >= UINT32_MAX / 2)
        return fail(err, len, "nops is %zu: at most %u", in->nops, UINT32_MAX / 2 - 1);
    if ((in->nrefs && !in->refs) || (in->nbufs && !in->bufs))
        return fail(err, len, "refs or bufs is NULL with a count above 0");
    if (in->nstreams == 0)
        return fail(err, len, "nstreams is 0: 1 or more");
    int rc = check_machine(&in->m, err, len);
    if (!rc && in->slack != POL_SLACK_SEARCH && in->slack != POL_SLACK_NONE) {
        if (in->m.room_on_device)
            return fail(err, len, "slack is %u chunks with m.room_on_device set: the slack "
                        "serves a host that waits for evictions' copies (POL_SLACK_SEARCH or "
                        "POL_SLACK_NONE)", in->slack);
        if (in->slack >= in->m.cap[POL_GPU] / in->m.chunk)
            return fail(err, len, "slack is %u chunks: fewer than the GPU's %llu", in->slack,
                        (unsigned long long)(in->m.cap[POL_GPU] / in->m.chunk));
    }
    for (size_t b = 0; !rc && b < in->nbufs; b++)
        rc = check_buf(in, b, err, len);
    uint64_t chunks = 0;
    for (size_t b = 0; !rc && b < in->nbufs && chunks < UINT32_MAX; b++) {
        uint64_t n = pol_chunks_of(in->bufs[b].bytes, in->m.chunk);
        chunks = n >= UINT32_MAX ? UINT32_MAX : chunks + n;     /* (both below 2^32) */
    }
    if (!rc && chunks >= UINT32_MAX)
        return fail(err, len, "%llu chunks or more: at most %u", (unsigned long long)chunks,
                    UINT32_MAX - 1);
    for (size_t r = 0; !rc && r < in->nrefs; r++)
        rc = check_ref(in, r, err, len);
    for (size_t i = 0; !rc && i < in->nops; i++)
        rc = check_op(in, i, err, len);
    if (rc)
        return rc;
    if (in->nwaits && !in->waits)
        return fail(err, len, "waits is NULL with nwaits %zu", in->nwaits);
    for (size_t w = 0; w < in->nwaits; w++) {
        const pol_wait_t *wt = &in->waits[w];
        if (wt->op >= in->nops || wt->buf >= in->nbufs)
            return fail(err, len, "waits[%zu]: operation %u of %zu, buffer %u of %zu", w,
                        wt->op, in->nops, wt->buf, in->nbufs);
        if (w && wt->op < in->waits[w - 1].op)
            return fail(err, len, "waits[%zu].op is %u, before waits[%zu]'s %u: in operation "
                        "order", w, wt->op, w - 1, in->waits[w - 1].op);
    }
    if (in->nsyncs && !in->syncs)
        return fail(err, len, "syncs is NULL with nsyncs %zu", in->nsyncs);
    for (size_t k = 0; k < in->nsyncs; k++) {
        const pol_sync_t *sy = &in->syncs[k];
        if (sy->op >= in->nops || (sy->stream >= in->nstreams && sy->stream != POL_SYNC_ALL))
            return fail(err, len, "syncs[%zu]: operation %u of %zu, stream %u of %u (or "
                        "POL_SYNC_ALL)", k, sy->op, in->nops, sy->stream, in->nstreams);
        if (k && sy->op < in->syncs[k - 1].op)
            return fail(err, len, "syncs[%zu].op is %u, before syncs[%zu]'s %u: in operation "
                        "order", k, sy->op, k - 1, in->syncs[k - 1].op);
    }
    return rc;
}

/* ---------------------------------------------------------------- the walk */

typedef struct walk {
    const pol_input_t *in;
    const pol_index_t *ix;
    uint8_t *loc, *home, *cur;
    uint64_t *nxt;              /* relative next use (maybe + nuses), POL_INF */
    uint64_t used[POL_NTIERS], peak[POL_NTIERS];
    char *err;
    size_t len;
} walk_t;

static int w_needs(const walk_t *w, uint64_t c)
{
    return w->nxt[c] != POL_INF && pol_needs_data(w->ix->use_acc[w->nxt[c] % w->ix->nuses]);
}

static int w_take(walk_t *w, int t, uint64_t c, uint32_t i)
{
    if (++w->used[t] > w->peak[t])
        w->peak[t] = w->used[t];
    if (w->used[t] > w->ix->cap[t])
        return fail(w->err, w->len, "op %u: %s holds %llu chunks, capacity %llu (moving "
                    "chunk %llu of bufs[%u])", i, pol_tier_name(t),
                    (unsigned long long)w->used[t], (unsigned long long)w->ix->cap[t],
                    (unsigned long long)(c - w->ix->chunk_base[w->ix->chunk_buf[c]]),
                    w->ix->chunk_buf[c]);
    return 0;
}

/* A move of global chunk c away from the GPU (or a demotion) to tier `to`. */
static int w_down(walk_t *w, uint64_t c, const pol_move_t *m, uint32_t i)
{
    int to = m->to, dead = !w_needs(w, c);
    if (m->from == POL_GPU && w->home[c] == to) {
        if (!m->writeback && !w->cur[c] && !dead)
            return fail(w->err, w->len, "op %u: bufs[%u] chunk %llu goes back to %s with no "
                        "write-back, but its kept copy is stale and a later use reads it", i,
                        m->buf, (unsigned long long)(m->chunk), pol_tier_name(to));
        w->home[c] = POL_NONE;
    } else {
        if (!m->writeback && !dead)
            return fail(w->err, w->len, "op %u: bufs[%u] moves %s -> %s with no write-back, "
                        "but a later use reads its data", i, m->buf, pol_tier_name(m->from),
                        pol_tier_name(to));
        if (w->home[c] != POL_NONE)
            w->used[w->home[c]]--;
        w->home[c] = POL_NONE;
        int rc = w_take(w, to, c, i);
        if (rc)
            return rc;
    }
    w->used[m->from]--;
    w->loc[c] = (uint8_t)to;
    return 0;
}

/* A move of global chunk c to the GPU. */
static int w_up(walk_t *w, uint64_t c, const pol_move_t *m, uint32_t i)
{
    if (m->from == POL_NTIERS) {
        if (w->loc[c] != POL_NONE || m->writeback || m->keep)
            return fail(w->err, w->len, "op %u: bufs[%u] materialised, but it is on %s "
                        "(or the move copies or keeps)", i, m->buf, pol_tier_name(w->loc[c]));
        if (!alive_at(w->in, m->buf, i))
            return fail(w->err, w->len, "op %u: bufs[%u] materialised, but it is not alive "
                        "then (born %d, dies %d)", i, m->buf, w->in->bufs[m->buf].born,
                        w->in->bufs[m->buf].dies);
    } else {
        if (!m->writeback && w_needs(w, c))
            return fail(w->err, w->len, "op %u: bufs[%u] comes to the GPU with no copy, but "
                        "its next use reads it", i, m->buf);
        if (m->keep) {
            w->home[c] = m->from;
            w->cur[c] = 1;
        } else {
            w->used[m->from]--;
        }
    }
    w->loc[c] = POL_GPU;
    return w_take(w, POL_GPU, c, i);
}

static int w_move(walk_t *w, const pol_move_t *m, uint32_t i)
{
    const pol_input_t *in = w->in;
    if (m->buf >= in->nbufs || m->nchunks == 0 ||
        (uint64_t)m->chunk + m->nchunks > w->ix->chunk_base[m->buf + 1] - w->ix->chunk_base[m->buf])
        return fail(w->err, w->len, "op %u: a move names bufs[%u] chunks %u + %u, which do "
                    "not exist", i, m->buf, m->chunk, m->nchunks);
    if (m->from > POL_NTIERS || m->to >= POL_NTIERS || m->from == m->to ||
        !(m->from == POL_GPU || m->to == POL_GPU || (m->from == POL_HOST && m->to == POL_NVME)))
        return fail(w->err, w->len, "op %u: a move of bufs[%u] from %s to %s: moves have the "
                    "GPU at one end, or go from host to nvme", i, m->buf,
                    pol_tier_name(m->from), pol_tier_name(m->to));
    if (m->to == POL_NVME && !w->ix->buf_nvme[m->buf])
        return fail(w->err, w->len, "op %u: bufs[%u] goes to nvme, but it is not nvme_ok", i,
                    m->buf);
    if (in->bufs[m->buf].pinned && m->from != POL_NTIERS)
        return fail(w->err, w->len, "op %u: bufs[%u] is pinned, but a move takes it from %s",
                    i, m->buf, pol_tier_name(m->from));
    for (uint32_t k = 0; k < m->nchunks; k++) {
        uint64_t c = w->ix->chunk_base[m->buf] + m->chunk + k;
        if (m->from != POL_NTIERS && w->loc[c] != m->from)
            return fail(w->err, w->len, "op %u: bufs[%u] chunk %u moves from %s, but it is on "
                        "%s", i, m->buf, m->chunk + k, pol_tier_name(m->from),
                        pol_tier_name(w->loc[c]));
        int rc = m->to == POL_GPU ? w_up(w, c, m, i) : w_down(w, c, m, i);
        if (rc)
            return rc;
    }
    return 0;
}

static int w_moves(walk_t *w, const pol_plan_t *p, uint32_t a, uint32_t b, uint32_t i)
{
    if (a > b || b > p->nmoves)
        return fail(w->err, w->len, "op %u: op_first / op_after out of order", i);
    for (uint32_t k = a; k < b; k++) {
        int rc = w_move(w, &p->moves[k], i);
        if (rc)
            return rc;
    }
    return 0;
}

static void w_life(walk_t *w, uint32_t i, int birth)
{
    const pol_index_t *ix = w->ix;
    const uint32_t *first = birth ? ix->born_first : ix->dies_first;
    const uint32_t *list = birth ? ix->born_list : ix->dies_list;
    for (uint32_t k = first[i]; k < first[i + 1]; k++)
        for (uint64_t c = ix->chunk_base[list[k]]; c < ix->chunk_base[list[k] + 1]; c++) {
            if (!birth && w->loc[c] != POL_NONE)
                w->used[w->loc[c]]--;
            if (!birth && w->home[c] != POL_NONE)
                w->used[w->home[c]]--;
            w->loc[c] = w->home[c] = POL_NONE;
            w->nxt[c] = birth ? ix->chunk_born_use[c] : POL_INF;
        }
}

static int w_op(walk_t *w, const pol_plan_t *p, uint32_t i)
{
    const pol_index_t *ix = w->ix;
    w_life(w, i, 1);
    int rc = w_moves(w, p, p->op_first[i], p->op_after[i], i);
    for (uint64_t u = ix->op_use[i]; !rc && u < ix->op_use[i + 1]; u++) {
        uint32_t c = ix->use_chunk[u];
        if (w->loc[c] != POL_GPU && !(pol_op_in_place(ix, i) && w->loc[c] == POL_HOST))
            return fail(w->err, w->len, "op %u reaches bufs[%u] chunk %llu, which is on %s",
                        i, ix->chunk_buf[c],
                        (unsigned long long)(c - ix->chunk_base[ix->chunk_buf[c]]),
                        pol_tier_name(w->loc[c]));
        if (ix->use_acc[u] & POL_WRITE)
            w->cur[c] = 0;
        w->nxt[c] = ix->use_next[u];
    }
    if (!rc)
        rc = w_moves(w, p, p->op_after[i], p->op_first[i + 1], i);
    w_life(w, i, 0);
    return rc;
}

/* The start state: tiers, kept copies (current), their rooms within the capacities. */
static int w_start(walk_t *w, const pol_plan_t *p)
{
    const pol_index_t *ix = w->ix;
    for (uint64_t c = 0; c < ix->nchunks; c++) {
        uint8_t t = p->start_tier[c], h = p->start_home[c];
        w->loc[c] = t >= POL_NTIERS ? POL_NONE : t;
        w->home[c] = h >= POL_NTIERS || t != POL_GPU ? POL_NONE : h;
        w->cur[c] = 1;
        w->nxt[c] = ix->chunk_first[c];
        if ((w->loc[c] == POL_NVME || w->home[c] == POL_NVME) && !ix->buf_nvme[ix->chunk_buf[c]])
            return fail(w->err, w->len, "bufs[%u] chunk %llu starts on nvme, but it is not "
                        "nvme_ok", ix->chunk_buf[c],
                        (unsigned long long)(c - ix->chunk_base[ix->chunk_buf[c]]));
        int rc = 0;
        if (w->loc[c] != POL_NONE)
            rc = w_take(w, w->loc[c], c, 0);
        if (!rc && w->home[c] != POL_NONE)
            rc = w_take(w, w->home[c], c, 0);
        if (rc)
            return rc;
    }
    return 0;
}

/* The end state must be the start state, or the next iteration's plan starts elsewhere. */
static int w_end(walk_t *w, const pol_plan_t *p)
{
    const pol_index_t *ix = w->ix;
    for (uint64_t c = 0; c < ix->nchunks; c++) {
        uint8_t t = p->start_tier[c] >= POL_NTIERS ? POL_NONE : p->start_tier[c];
        uint8_t h = p->start_home[c] >= POL_NTIERS || t != POL_GPU ? POL_NONE
                                                                   : p->start_home[c];
        if (w->loc[c] != t || w->home[c] != h)
            return fail(w->err, w->len, "bufs[%u] chunk %llu ends the iteration on %s (copy "
                        "on %s), but the plan starts it on %s (copy on %s)", ix->chunk_buf[c],
                        (unsigned long long)(c - ix->chunk_base[ix->chunk_buf[c]]),
                        pol_tier_name(w->loc[c]), pol_tier_name(w->home[c]),
                        pol_tier_name(t), pol_tier_name(h));
    }
    return 0;
}

int pol_walk(const pol_input_t *in, const pol_index_t *ix, const pol_plan_t *p,
             char *err, size_t len, uint64_t peak[POL_NTIERS], int passes)
{
    walk_t w = { .in = in, .ix = ix, .err = err, .len = len };
    uint64_t n = ix->nchunks ? ix->nchunks : 1;
    w.loc = malloc(n), w.home = malloc(n), w.cur = malloc(n);
    w.nxt = malloc(n * sizeof(uint64_t));
    int rc = w.loc && w.home && w.cur && w.nxt ? 0 : -ENOMEM;
    if (!rc && (p->op_first[0] != 0 || p->op_first[ix->nops] != p->nmoves))
        rc = fail(err, len, "op_first[0] must be 0 and op_first[nops] nmoves (%zu)",
                  p->nmoves);
    if (!rc)
        rc = w_start(&w, p);
    for (int pass = 0; pass < passes; pass++) { /* (see the file's comment) */
        for (uint32_t i = 0; !rc && i < ix->nops; i++)
            rc = w_op(&w, p, i);
        if (!rc)
            rc = w_end(&w, p);
    }
    if (!rc && peak)
        memcpy(peak, w.peak, sizeof(w.peak));
    free(w.loc), free(w.home), free(w.cur), free(w.nxt);
    return rc;
}

int pol_plan_verify(const pol_input_t *in, const pol_plan_t *p, char *err, size_t len)
{
    int rc = pol_input_check(in, err, len);
    if (rc)
        return rc;
    if (!p || !p->op_first || !p->op_after || !p->start_tier || !p->start_home ||
        (p->nmoves && !p->moves))
        return fail(err, len, "the plan is incomplete (NULL arrays)");
    pol_index_t ix;
    if ((rc = pol_index_build(in, &ix, p->knobs.near != 0)))
        return rc;
    /* A plan of slack_chunks holds that much less of the GPU (as search.c plans it). */
    uint64_t slack = p->knobs.slack_chunks, gpu = ix.cap[POL_GPU], fit = ix.gpu_cap;
    if (slack >= gpu)
        rc = fail(err, len, "the plan's slack, %llu chunks, leaves none of the GPU's %llu",
                  (unsigned long long)slack, (unsigned long long)gpu);
    ix.cap[POL_GPU] -= slack < gpu ? slack : 0;
    ix.gpu_cap -= slack < fit ? slack : 0;
    if (!rc)
        rc = pol_walk(in, &ix, p, err, len, NULL, 2);
    ix.cap[POL_GPU] = gpu, ix.gpu_cap = fit;
    pol_index_free(&ix);
    return rc;
}
