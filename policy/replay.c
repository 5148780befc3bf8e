/* SPDX-License-Identifier: MIT */
/*
 * replay.c - the cost model: how long an iteration takes when the executor follows a plan.
 *
 * The host issues, in plan order, each operation's moves before it, the operation, and its
 * moves after it.  Issuing an operation costs the host host_us_per_op (the driver call that
 * enqueues it: the operation is queued when the call begins, the host goes on when it
 * returns), so a GPU faster than the host waits for it.  A move costs the host its mapping
 * calls (map_us_per_call + map_us_per_chunk * nchunks per move, or of one handle's chunks:
 * m.handle_share), and waits for GPU room, so
 * they delay the issue of everything after them, as in the shim's executor (res_flight.c).
 * Where each chunk is a handle of its own (m.handle_share 0, as the shim maps them), a move of
 * several chunks goes chunk by chunk, as the executor issues it (res_plan_issue.c): each
 * chunk takes its room, is mapped and copied in turn, and is ready when its own copy is done;
 * a move of one handle, or a birth, is one piece, all its room taken before its one copy
 * (rp_move):
 *   - a move to the GPU maps its chunks when it is issued, once the room it takes is free:
 *     room that a move away from the GPU frees is free only when that move's copy completed,
 *     and the host waits for it there (it cannot hand out memory a copy still reads), or,
 *     with m.room_on_device, the host waits only for the freed chunks' last use and the
 *     copy of the move in waits for the freeing copy on the device (but for a birth: the
 *     program may use a new allocation's memory at once, so the host waits for the copy);
 *   - a move away from the GPU maps its chunks (its remap to the other tier) only when its copy
 *     completed: the host pays that mapping when the room is taken (the executor completes
 *     the move then, or polls it complete before), not when the move is issued.
 * Then, in virtual nanoseconds:
 *   - an operation starts when it is issued, its stream is free (one stream runs its
 *     operations in order; streams overlap freely: the iteration's own events are not
 *     modelled) and every chunk it reaches has arrived; it runs dur_ns, or, where it reaches
 *     more chunks away from the GPU (in host memory, over the link) than it did when it was
 *     timed (pol_op_t.away > 0), dur_ns scaled by their ratio: a kernel's time held to the
 *     link's rate by what it reaches there, each chunk taken to cost it alike (not known: what
 *     it touches of them); where it was timed again with another count away (dur2_ns, away2:
 *     an iteration under a plan), the line through the two times instead (pol_op_time);
 *   - a move starts after the last operation that used its chunks (one that ran in place, on
 *     a chunk in host memory, included: the executor moves a chunk only once the operations
 *     that may use it are done, trying again until then); a move to the GPU after the moves
 *     that freed the GPU room it takes (room is handed out first freed, first taken, as the
 *     plan's order makes it), and after its chunks' previous move.  The room is the whole
 *     GPU's: a plan with slack (pol_knobs_t.slack_chunks) holds that much less, so its moves
 *     in take room freed that many chunks earlier;
 *   - a copy occupies its link's queue for its direction (to or from the GPU; a demotion host
 *     -> nvme is the nvme link's "from" direction) at that direction's bandwidth, and where
 *     the other direction's copies run meanwhile, at what their rates leave of duplex_gbs
 *     (link.c: a copy placed earlier keeps its rate); it completes latency_us after its last
 *     byte.  Copy engines per direction share the direction's bandwidth: one queue models
 *     them all.
 *   - an operation's POL_NEAR references that the plan leaves out (pol_knobs_t.near = 0)
 *     are no uses of its index: the operation waits for their chunks' moves in flight, and
 *     their moves for it, as for its uses, and the host, before it issues the operation, maps
 *     back each of those chunks away from the GPU (m.mapback_us_per_chunk; once until the
 *     chunk moves again); so does an operation that runs in place (pol_op_in_place), for
 *     its chunks away from the GPU, where m.mapback_us_per_chunk says evictions unmap;
 *   - a move without write-back (or a materialisation) copies nothing: it is done when its
 *     dependencies are; a materialisation costs the host birth_us_per_chunk a chunk, of
 *     which drop_us_per_chunk is the unmap of the room it takes, owed by that room (room
 *     that owes none, as the iteration's free room at the start, costs it the rest).  A dying
 *     buffer's GPU room is free when its last use ends (its memory then owes the unmap); with
 *     free_waits the host waits for that too (a cuMemFree), as at each of the input's waits
 *     for the buffer it names.  Where the input says where buffers lie (pol_buf_t.slot), a
 *     chunk that dies on the GPU stays mapped at its address (parked, as the shim keeps it):
 *     a chunk born there later takes it as it is, at no host cost and no other room; a move
 *     to the GPU (or a birth elsewhere) takes room free by then first (its freeing copy
 *     done), then the chunk parked first (the host unmaps it: drop_us_per_chunk), then waits
 *     for the next room to be freed (with m.room_on_device, an eviction's once its chunk's
 *     last use ended, its copy perhaps still running), as the shim's executor does;
 *   - at a host synchronisation of the input (pol_sync_t), after its operation and before
 *     that operation's moves after it (the executor issues those at the next operation), the
 *     host waits for its stream's operations so far, or every stream's and every copy of a
 *     move over the GPU's links: the moves after it are issued no earlier (an iteration that
 *     ends with one starts the next from an idle GPU).
 * The plan repeats: four iterations are replayed back to back from the plan's start state, so
 * that prefetches issued across the iteration's end count as they will.  iter_ns is the mean
 * time between the ends of the first and the last (an iteration ends with its last
 * operation), and never less than compute_ns, the busiest stream's work (of an operation
 * timed twice, its shorter time) or the host's time to issue the operations (what a steady
 * state takes at least, whatever the transients); the other figures are the last iteration's.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pol_int.h"

#define REPLAY_ITERS 4

typedef struct rp {
    const pol_input_t *in;
    const pol_index_t *ix;
    double h;                   /* host time */
    double *stream_free;
    double streams_free;        /* the latest of stream_free (each only grows in a replay) */
    double *ready, *last_end;   /* per chunk: its last move's end, its last use's end */
    uint8_t *loc;
    uint8_t *mapped;            /* per chunk: its host memory mapped back since it last moved */
    uint32_t *seen, stamp;      /* per chunk: the last op_dur call that counted it */
    int near_out;               /* POL_NEAR references are not uses of the plan's index */
    double *tok;                /* GPU room: when each free chunk of room became free (FIFO) */
    double *tok_host;           /* when the host may hand it out (m.room_on_device) */
    double *owed;               /* and the host's mapping time its freeing move still owes */
    uint64_t tok_head, tok_n, tok_cap;
    /* parked chunks (by ix->chunk_slot), in the order they died: when each died, the list */
    double *park_t;
    uint32_t *park_next, *park_prev, park_head, park_tail;
    uint8_t *parked;
    double q[POL_NTIERS][2];    /* per link and direction: when its last copy ends */
    pol_lanes_t lanes[POL_NTIERS];
    pol_result_t *r;
    int measure;
    double it_end;
    double first_end, stop_ns;  /* the first iteration's end; see pol_replay_ix */
} rp_t;

static void tok_push(rp_t *p, double t, double host, double owed)
{
    if (p->tok_n < p->tok_cap) {
        uint64_t k = (p->tok_head + p->tok_n++) % p->tok_cap;
        p->tok[k] = t;
        p->tok_host[k] = p->in->m.room_on_device ? host : t;
        p->owed[k] = owed;
    }
}

/* The time the next chunk of GPU room is free, -1 when there is none (a bad plan); *host:
 * when the host may hand it out; *owed: the mapping time its freeing move still owes. */
static double tok_pop(rp_t *p, double *host, double *owed)
{
    if (!p->tok_n)
        return -1;
    double t = p->tok[p->tok_head];
    *host = p->tok_host[p->tok_head];
    *owed = p->owed[p->tok_head];
    p->tok_head = (p->tok_head + 1) % p->tok_cap;
    p->tok_n--;
    return t;
}

static double max2(double a, double b)
{
    return a > b ? a : b;
}

/* The chunk at slot s died on the GPU at time t: parked, last in the list. */
static void park(rp_t *p, uint32_t s, double t)
{
    p->parked[s] = 1;
    p->park_t[s] = t;
    p->park_next[s] = UINT32_MAX;
    p->park_prev[s] = p->park_tail;
    if (p->park_tail != UINT32_MAX)
        p->park_next[p->park_tail] = s;
    else
        p->park_head = s;
    p->park_tail = s;
}

/* The chunk parked at slot s is taken: when it died. */
static double unpark(rp_t *p, uint32_t s)
{
    uint32_t a = p->park_prev[s], b = p->park_next[s];
    if (a != UINT32_MAX)
        p->park_next[a] = b;
    else
        p->park_head = b;
    if (b != UINT32_MAX)
        p->park_prev[b] = a;
    else
        p->park_tail = a;
    p->parked[s] = 0;
    return p->park_t[s];
}

/* GPU room for a chunk coming in, in the order the shim's executor takes it (res_flight.c:
 * flight_room, after res_flights_poll gave back the memory of copies done before each
 * operation): room already free (its freeing copy done; only the oldest room is looked at),
 * else the chunk parked first, which the host unmaps from its address (*owed:
 * m.drop_us_per_chunk), else the next room to be freed (tok_pop; with m.room_on_device,
 * perhaps while its freeing copy still runs). */
static double room_pop(rp_t *p, double *host, double *owed)
{
    if (p->park_head != UINT32_MAX && !(p->tok_n && p->tok[p->tok_head] <= p->h)) {
        double t = unpark(p, p->park_head);
        *host = t;
        *owed = p->in->m.drop_us_per_chunk * 1e3;
        return t;
    }
    return tok_pop(p, host, owed);
}

/* A copy of `bytes` over link l's direction dir from time t0: its end. */
static double copy_end(rp_t *p, int l, int dir, uint64_t bytes, double t0)
{
    const pol_link_t *lk = &p->in->m.link[l];
    double bw = dir == 0 ? lk->to_gpu_gbs : lk->from_gpu_gbs;   /* GB/s == bytes/ns */
    double start = max2(t0, p->q[l][dir]);
    double end = pol_lanes_copy(&p->lanes[l], dir, start, (double)bytes, bw, lk->duplex_gbs,
                                p->h);
    p->q[l][dir] = end;
    if (p->measure)
        p->r->bytes[l][dir] += bytes;
    return end + lk->latency_us * 1e3;
}

/* The host's mapping time t (ns), counted. */
static void host_map(rp_t *p, double t)
{
    p->h += t;
    if (p->measure)
        p->r->map_ns += t;
}

/* When move m's dependencies are met (see the file's comment); -1 for a bad plan.  A move to
 * the GPU first has the host wait for its room and complete the moves that freed it; a birth
 * takes the chunks parked where it is born as they are (*reused: how many), before it takes
 * room for the others (the shim skips an allocation's own parked chunks: res_park_drop). */
static double move_ready(rp_t *p, const pol_move_t *m, uint64_t c0, uint32_t *reused)
{
    double dev = 0;
    uint32_t need = m->to == POL_GPU ? m->nchunks : 0;
    *reused = 0;
    for (uint32_t k = 0; m->from == POL_NTIERS && k < need; k++) {
        uint32_t s = p->ix->chunk_slot[c0 + k];
        if (s != UINT32_MAX && p->parked[s]) {
            dev = max2(dev, unpark(p, s));
            ++*reused;
        }
    }
    for (uint32_t k = *reused; k < need; k++) {
        double host, owed, t = room_pop(p, &host, &owed);
        if (t < 0)
            return -1;
        p->h = max2(p->h, m->from == POL_NTIERS ? t : host);  /* (a birth: its copy done) */
        dev = max2(dev, t);
        host_map(p, owed);
    }
    double t0 = max2(p->h, dev);
    for (uint32_t k = 0; k < m->nchunks; k++)
        t0 = max2(t0, max2(p->ready[c0 + k], p->last_end[c0 + k]));
    return t0;
}

/* Move m as one piece: its chunks wait for all its room and its dependencies, its copy is one
 * (`call`: it pays the move's map_us_per_call). */
static int rp_piece(rp_t *p, const pol_move_t *m, int call)
{
    const pol_machine_t *mc = &p->in->m;
    /* (a birth's figure includes the unmap of the room it takes, which that room owes) */
    double per = m->from == POL_NTIERS && mc->birth_us_per_chunk > 0
                     ? max2(mc->birth_us_per_chunk - mc->drop_us_per_chunk, 0)
                     : mc->map_us_per_chunk;
    uint64_t c0 = p->ix->chunk_base[m->buf] + m->chunk;
    uint32_t reused;
    double end = move_ready(p, m, c0, &reused), start = end;
    if (end < 0)
        return -EINVAL;
    uint32_t fresh = m->nchunks - reused;      /* (the chunks mapped: a birth's not parked) */
    double n = mc->handle_share > 0 ? 1 - mc->handle_share + mc->handle_share * fresh
                                    : (double)fresh;
    double map = fresh ? ((call ? mc->map_us_per_call : 0) + per * n) * 1e3 : 0;
    if (m->from != POL_GPU)
        host_map(p, map);               /* (a move away maps when its room is taken) */
    if (m->writeback && m->from != POL_NTIERS) {
        int l = m->to == POL_GPU ? m->from : m->to;
        end = copy_end(p, l, m->to == POL_GPU ? 0 : 1, (uint64_t)m->nchunks * mc->chunk, end);
    }
    for (uint32_t k = 0; k < m->nchunks; k++) {
        p->ready[c0 + k] = end;
        p->loc[c0 + k] = m->to;
        p->mapped[c0 + k] = 0;
        if (m->from == POL_GPU)
            tok_push(p, end, start, k == 0 ? map : 0);
    }
    return 0;
}

/* Move m.  Where each chunk is a handle of its own (m.handle_share 0), the executor moves an
 * extent chunk by chunk: each chunk's room, mapping and copy in turn, each chunk ready when its
 * own copy is done (and its GPU room free then), as res_plan_issue.c issues them; a move
 * of one handle is one piece, and so is a birth (the arena places a new buffer whole, its
 * own parked chunks first). */
static int rp_move(rp_t *p, const pol_move_t *m)
{
    if (p->in->m.handle_share > 0 || m->nchunks == 1 || m->from == POL_NTIERS)
        return rp_piece(p, m, 1);       /* (a birth: the arena places it whole) */
    for (uint32_t k = 0; k < m->nchunks; k++) {
        pol_move_t one = *m;
        one.chunk = m->chunk + k;
        one.nchunks = 1;
        int rc = rp_piece(p, &one, k == 0);
        if (rc)
            return rc;
    }
    return 0;
}

static int rp_moves(rp_t *p, const pol_plan_t *pl, uint32_t a, uint32_t b)
{
    for (uint32_t k = a; k < b; k++) {
        int rc = rp_move(p, &pl->moves[k]);
        if (rc)
            return rc;
    }
    return 0;
}

/* Chunk c, reached where it is: the host maps it back when it is away from the GPU, once
 * until it moves again (m.mapback_us_per_chunk). */
static void rp_map_back(rp_t *p, uint64_t c)
{
    if (p->loc[c] != POL_GPU && p->loc[c] != POL_NONE && !p->mapped[c]) {
        host_map(p, p->in->m.mapback_us_per_chunk * 1e3);
        p->mapped[c] = 1;
    }
}

/* Operation op's POL_NEAR references left out of the plan: the host maps back those of their
 * chunks that are not on the GPU (once until they move: m.mapback_us_per_chunk), and the
 * operation, issued then, waits for their moves in flight; with `end` (>= 0), it has run
 * until then: their last use. */
static double rp_near(rp_t *p, const pol_op_t *op, double start, double end)
{
    const pol_index_t *ix = p->ix;
    for (uint32_t r = op->ref; r < op->ref + op->nref; r++) {
        const pol_ref_t *rf = &p->in->refs[r];
        if (!(rf->access & POL_NEAR))
            continue;
        uint64_t c0 = ix->chunk_base[rf->buf] + rf->chunk;
        for (uint64_t c = c0; c < c0 + rf->nchunks; c++) {
            if (end >= 0) {
                p->last_end[c] = max2(p->last_end[c], end);
                continue;
            }
            rp_map_back(p, c);
            start = max2(start, p->ready[c]);
        }
    }
    return start;
}

/* Operation i runs in place where evictions unmap (m.mapback_us_per_chunk > 0): the host maps
 * back each of its chunks away from the GPU before it issues it, once until the chunk moves
 * again, as for the POL_NEAR references left out (rp_near). */
static void rp_in_place(rp_t *p, uint32_t i)
{
    const pol_index_t *ix = p->ix;
    for (uint64_t r = ix->op_run[i]; r < ix->op_run[i + 1]; r++)
        for (uint64_t c = ix->run_chunk[r]; c < ix->run_chunk[r] + ix->run_n[r]; c++)
            rp_map_back(p, c);
}

double pol_op_time(const pol_op_t *op, uint64_t away)
{
    if (op->dur2_ns && op->away2 != op->away) {
        double per = ((double)op->dur2_ns - (double)op->dur_ns) /
                     ((double)op->away2 - (double)op->away);
        double t = (double)op->dur_ns + (per > 0 ? per : 0) * ((double)away - (double)op->away);
        double least = (double)(op->dur2_ns < op->dur_ns ? op->dur2_ns : op->dur_ns);
        return away < op->away && away < op->away2 && t < least ? least : t;
    }
    return op->away && away > op->away ? (double)op->dur_ns * (double)away / op->away
                                        : (double)op->dur_ns;
}

/* Operation i's device time: pol_op_time for the chunks it reaches that lie away from the GPU
 * now. */
static double op_dur(rp_t *p, uint32_t i)
{
    const pol_op_t *op = &p->in->ops[i];
    if (!op->away && !op->dur2_ns)
        return (double)op->dur_ns;
    uint64_t away = 0;
    if (++p->stamp == 0) {          /* (wrapped: the marks start again) */
        memset(p->seen, 0, (p->ix->nchunks ? p->ix->nchunks : 1) * sizeof(uint32_t));
        p->stamp = 1;
    }
    for (uint32_t r = op->ref; r < op->ref + op->nref; r++) {
        const pol_ref_t *rf = &p->in->refs[r];
        uint64_t c0 = p->ix->chunk_base[rf->buf] + rf->chunk;
        for (uint64_t c = c0; c < c0 + rf->nchunks; c++) {
            if (p->seen[c] == p->stamp)
                continue;               /* (references that overlap count a chunk once) */
            p->seen[c] = p->stamp;
            away += p->loc[c] != POL_GPU && p->loc[c] != POL_NONE;
        }
    }
    return pol_op_time(op, away);
}

static void rp_op(rp_t *p, uint32_t i)
{
    const pol_index_t *ix = p->ix;
    const pol_op_t *op = &p->in->ops[i];
    if (p->in->m.mapback_us_per_chunk > 0 && pol_op_in_place(ix, i))
        rp_in_place(p, i);
    double near_ready = p->near_out ? rp_near(p, op, 0, -1) : 0;
    double issue = max2(p->h, p->stream_free[op->stream]), start = max2(issue, near_ready);
    /* (by runs of consecutive chunks; two running maxima, so that the loads do not wait
     * for each other's comparisons) */
    for (uint64_t r = ix->op_run[i]; r < ix->op_run[i + 1]; r++) {
        const double *rd = p->ready + ix->run_chunk[r];
        uint32_t n = ix->run_n[r], k = 0;
        double s1 = start;
        for (; k + 2 <= n; k += 2) {
            start = max2(start, rd[k]);
            s1 = max2(s1, rd[k + 1]);
        }
        if (k < n)
            start = max2(start, rd[k]);
        start = max2(start, s1);
    }
    double end = start + op_dur(p, i);
    for (uint64_t r = ix->op_run[i]; r < ix->op_run[i + 1]; r++) {
        double *le = p->last_end + ix->run_chunk[r];
        uint32_t n = ix->run_n[r];
        for (uint32_t k = 0; k < n; k++)
            le[k] = max2(le[k], end);
    }
    if (p->near_out)
        rp_near(p, op, 0, end);
    p->h += p->in->m.host_us_per_op * 1e3;
    p->stream_free[op->stream] = end;
    p->streams_free = max2(p->streams_free, end);
    p->it_end = max2(p->it_end, end);
    if (p->measure)
        p->r->stall_ns += start - issue;
}

/* The buffers that die after operation i: their GPU chunks parked (pol_buf_t.slot) or their
 * room freed, which owes the unmap of their memory (m.drop_us_per_chunk; with
 * m.handle_share, a buffer's n chunks freed are one handle, whose unmap, (1 - s + s x n) of
 * a chunk's, its first chunk owes). */
static void rp_deaths(rp_t *p, uint32_t i)
{
    const pol_index_t *ix = p->ix;
    const pol_machine_t *m = &p->in->m;
    for (uint32_t k = ix->dies_first[i]; k < ix->dies_first[i + 1]; k++) {
        uint32_t b = ix->dies_list[k], n = 0;
        uint64_t c0 = ix->chunk_base[b], c1 = ix->chunk_base[b + 1];
        for (uint64_t c = c0; m->handle_share > 0 && c < c1; c++)
            n += p->loc[c] == POL_GPU && ix->chunk_slot[c] == UINT32_MAX;
        double drop = m->drop_us_per_chunk * 1e3 *
                      (m->handle_share > 0 ? 1 - m->handle_share + m->handle_share * n : 1);
        for (uint64_t c = ix->chunk_base[b]; c < ix->chunk_base[b + 1]; c++) {
            double t = max2(p->last_end[c], p->ready[c]);
            uint32_t s = ix->chunk_slot[c];
            if (p->loc[c] == POL_GPU && s != UINT32_MAX) {
                if (p->parked[s]) {     /* (two buffers at one address: the older's room) */
                    double o = unpark(p, s);
                    tok_push(p, o, o, m->drop_us_per_chunk * 1e3);
                }
                park(p, s, t);
            } else if (p->loc[c] == POL_GPU) {
                tok_push(p, t, t, drop);
                if (m->handle_share > 0)
                    drop = 0;           /* (the handle's unmap: owed once) */
            }
            if (p->in->bufs[b].free_waits)
                p->h = max2(p->h, t);   /* (the free waits for its last use) */
            p->loc[c] = POL_NONE;
        }
    }
}

/* The host waits for the last use of buffer b's chunks (pol_wait_t). */
static void rp_wait(rp_t *p, uint32_t b)
{
    const pol_index_t *ix = p->ix;
    for (uint64_t c = ix->chunk_base[b]; c < ix->chunk_base[b + 1]; c++)
        if (p->loc[c] != POL_NONE)
            p->h = max2(p->h, max2(p->last_end[c], p->ready[c]));
}

/* A host synchronisation (pol_sync_t) on stream s: the host waits for the stream's last
 * operation so far, or, with POL_SYNC_ALL, every stream's and every copy of a move over the
 * GPU's links (not the NVMe link's transfers: the drive's I/O is no GPU work). */
static void rp_sync(rp_t *p, uint32_t s)
{
    if (s != POL_SYNC_ALL) {
        p->h = max2(p->h, p->stream_free[s]);
        return;
    }
    double t = p->streams_free;
    for (int l = POL_PEER; l <= POL_HOST; l++)
        for (int dir = 0; dir < 2; dir++)
            if (p->q[l][dir] > 0)
                t = max2(t, p->q[l][dir] + p->in->m.link[l].latency_us * 1e3);
    p->h = max2(p->h, t);
}

/* One iteration: 0, -EINVAL, or 1 when iter_ns is known to reach stop_ns (it_end only grows)
 * after the first iteration. */
static int rp_iteration(rp_t *p, const pol_plan_t *pl, int first)
{
    size_t w = 0, y = 0;
    for (uint32_t i = 0; i < p->ix->nops; i++) {
        int rc = rp_moves(p, pl, pl->op_first[i], pl->op_after[i]);
        if (rc)
            return rc;
        rp_op(p, i);
        if (!first && (i & 63) == 63 &&
            (p->it_end - p->first_end) / (REPLAY_ITERS - 1) >= p->stop_ns)
            return 1;           /* (looked at every 64 operations: it_end only grows) */
        for (; y < p->in->nsyncs && p->in->syncs[y].op == i; y++)
            rp_sync(p, p->in->syncs[y].stream);
        if ((rc = rp_moves(p, pl, pl->op_after[i], pl->op_first[i + 1])))
            return rc;
        rp_deaths(p, i);
        for (; w < p->in->nwaits && p->in->waits[w].op == i; w++)
            rp_wait(p, p->in->waits[w].buf);
    }
    return 0;
}

static int rp_init(rp_t *p, const pol_input_t *in, const pol_index_t *ix, const pol_plan_t *pl)
{
    /* (the whole GPU: a plan with slack holds less; ix may be the planner's, with less) */
    uint64_t n = ix->nchunks ? ix->nchunks : 1, gpu = 0, room = in->m.cap[POL_GPU] / in->m.chunk;
    p->stream_free = calloc(in->nstreams, sizeof(double));
    p->ready = calloc(n, sizeof(double));
    p->last_end = calloc(n, sizeof(double));
    p->loc = malloc(n);
    p->mapped = calloc(n, 1);
    p->seen = calloc(n, sizeof(uint32_t));
    p->near_out = !pl->knobs.near && ix->near_refs;
    p->tok_cap = room + 1;
    p->tok = malloc(p->tok_cap * sizeof(double));
    p->tok_host = malloc(p->tok_cap * sizeof(double));
    p->owed = malloc(p->tok_cap * sizeof(double));
    uint32_t ns = ix->nslots ? ix->nslots : 1;
    p->park_t = malloc(ns * sizeof(double));
    p->park_next = malloc(ns * sizeof(uint32_t));
    p->park_prev = malloc(ns * sizeof(uint32_t));
    p->parked = calloc(ns, 1);
    p->park_head = p->park_tail = UINT32_MAX;
    if (!p->stream_free || !p->ready || !p->last_end || !p->loc || !p->mapped || !p->seen ||
        !p->tok || !p->tok_host || !p->owed || !p->park_t || !p->park_next || !p->park_prev ||
        !p->parked)
        return -ENOMEM;
    for (uint64_t c = 0; c < ix->nchunks; c++) {
        p->loc[c] = pl->start_tier[c] >= POL_NTIERS ? POL_NONE : pl->start_tier[c];
        gpu += p->loc[c] == POL_GPU;
    }
    for (uint64_t k = gpu; k < room; k++)
        tok_push(p, 0, 0, 0);
    return 0;
}

/* The least time the forced chunks (bound.c) take to move: each comes in over one link to the
 * GPU, or goes back over one, at no more than that direction's rate (to_gpu_gbs or
 * from_gpu_gbs, duplex_gbs when lower), and both directions of a link together at no more
 * than duplex_gbs; the links of the tiers present work side by side, so no faster than at
 * the sum of their rates.  (Capacities are not counted: a chunk waiting in host memory may
 * reach the GPU over the NVMe link after a demotion, and over one iteration a tier's link
 * may bring in more chunks than the tier holds at once.)  *in_ns: the chunks in alone. */
static double forced_ns(const pol_input_t *in, const pol_index_t *ix, double *in_ns)
{
    double to = 0, from = 0, both = 0;  /* bytes per ns */
    for (int t = POL_PEER; t < POL_NTIERS; t++) {
        const pol_link_t *l = &in->m.link[t];
        if (!ix->cap[t])
            continue;
        to += l->duplex_gbs < l->to_gpu_gbs ? l->duplex_gbs : l->to_gpu_gbs;
        from += l->duplex_gbs < l->from_gpu_gbs ? l->duplex_gbs : l->from_gpu_gbs;
        both += l->duplex_gbs < l->to_gpu_gbs + l->from_gpu_gbs
                    ? l->duplex_gbs : l->to_gpu_gbs + l->from_gpu_gbs;
    }
    double chunk = (double)in->m.chunk, a = (double)ix->forced * chunk,
           b = (double)ix->forced_out * chunk;
    *in_ns = to > 0 ? a / to : 0;
    if (!(to > 0))
        return 0;
    return max2(max2(*in_ns, b / from), (a + b) / both);
}

/* Operation op's device time for compute_ns: the shorter of its two timings where it has two
 * (the line through them may say less where fewer chunks are away: not measured). */
static double least_dur(const pol_op_t *op)
{
    uint64_t d = op->dur2_ns && op->dur2_ns < op->dur_ns ? op->dur2_ns : op->dur_ns;
    return (double)d;
}

/* compute_ns and bound_ns: the operations alone (the busiest stream, or the host's time to
 * issue them, whichever is more), and the chunks that must come in and go back (forced_ns);
 * bound_in_ns with the chunks in alone; bound_chunks, those chunks. */
static void rp_bounds(const pol_input_t *in, const pol_index_t *ix, pol_result_t *r,
                      const double *busy)
{
    double in_ns;
    r->compute_ns = (double)ix->nops * in->m.host_us_per_op * 1e3;
    for (uint32_t s = 0; s < in->nstreams; s++)
        r->compute_ns = max2(r->compute_ns, busy[s]);
    r->bound_ns = max2(r->compute_ns, forced_ns(in, ix, &in_ns));
    r->bound_in_ns = max2(r->compute_ns, in_ns);
    r->bound_chunks[0] = ix->forced;
    r->bound_chunks[1] = ix->forced_out;
}

int pol_replay_ix(const pol_input_t *in, const pol_index_t *ix, const pol_plan_t *pl,
                  pol_result_t *r, double stop_ns)
{
    rp_t p = { .in = in, .ix = ix, .r = r, .stop_ns = stop_ns };
    memset(r, 0, sizeof(*r));
    int rc = pol_walk(in, ix, pl, NULL, 0, r->peak, 1);
    if (!rc)
        rc = rp_init(&p, in, ix, pl);
    for (int k = 0; !rc && k < REPLAY_ITERS; k++) {
        p.measure = k == REPLAY_ITERS - 1;
        rc = rp_iteration(&p, pl, k == 0);
        if (k == 0)
            p.first_end = p.it_end;
    }
    if (!rc) {
        for (uint32_t s = 0; s < in->nstreams; s++)
            p.stream_free[s] = 0;
        for (uint32_t i = 0; i < ix->nops; i++)
            p.stream_free[in->ops[i].stream] += least_dur(&in->ops[i]);
        rp_bounds(in, ix, r, p.stream_free);
        r->iter_ns = max2(r->compute_ns, (p.it_end - p.first_end) / (REPLAY_ITERS - 1));
        for (int t = 0; t < POL_NTIERS; t++)
            r->peak[t] *= in->m.chunk;
    }
    free(p.stream_free), free(p.ready), free(p.last_end), free(p.loc), free(p.mapped);
    free(p.seen), free(p.tok);
    free(p.tok_host), free(p.owed);
    free(p.park_t), free(p.park_next), free(p.park_prev), free(p.parked);
    for (int l = 0; l < POL_NTIERS; l++) {
        rc = !rc && p.lanes[l].oom ? -ENOMEM : rc;
        pol_lanes_free(&p.lanes[l]);
    }
    return rc;
}

int pol_replay(const pol_input_t *in, const pol_plan_t *pl, pol_result_t *r)
{
    int rc = pol_input_check(in, NULL, 0);
    if (rc)
        return rc;
    pol_index_t ix;
    if ((rc = pol_index_build(in, &ix, pl->knobs.near != 0)))
        return rc;
    rc = pol_replay_ix(in, &ix, pl, r, INFINITY);
    pol_index_free(&ix);
    return rc;
}
