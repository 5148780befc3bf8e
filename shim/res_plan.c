/* SPDX-License-Identifier: MIT */
/*
 * res_plan.c - the computed policy in the shim (ELIXIR_POLICY=plan): profile one steady
 * iteration, plan it (policy/), then follow the plan.
 *
 * Iterations.  One iteration detector (iter.h) for the process, fed every launch on a device
 * with an arena (the kernel's handle turned into a small key) and every barrier (host
 * synchronisations, copies between host and device).  Each device's plan notices a new
 * iteration at its first operation after the detector moved on.
 *
 * Profiling.  The second iteration the detector finds (the first allocates) is recorded, per
 * device, under the device's lock: each operation the shim collects (launches, copies,
 * memsets, NCCL calls: res_nccl.c; the fast launch path included) with its stream, a
 * signature (kind, kernel, copy kind or NCCL call's kind, number of chunks) and the chunks it
 * reaches as runs per buffer.  The launches NCCL makes inside a call are part of the call.
 * A buffer is an arena allocation's chunks (a slab chunk, shared by small allocations, is a
 * buffer of its own).  Buffers that outlive the iteration are keyed by their arena address
 * (their first chunk); those allocated inside it by their allocation order within the
 * iteration and their size, so that the plan applies when the next iteration's allocation
 * lands elsewhere.
 * Access: a launch reads and writes what it reaches; a copy reads its source and writes its
 * destination, overwriting the chunks it covers whole, as a memset does; an NCCL call as
 * res_nccl.c says.  Each operation's
 * device time is measured with events around it, and the host link's rate each way from the
 * reactive engine's migrations in that iteration (res_plan_time.c).
 *
 * Planning.  At the start of the next iteration, once the profile's events have completed
 * (planning is put off by an iteration while some have not: res_plan_time.c), the profile is
 * planned (policy/) on the machine of d's budgets, the measured times and link (res_plan_machine.c);
 * the log says what was measured and what the plan predicts.
 *
 * Execution.  From the iteration after the profiled one, each operation is matched against
 * the plan by position (a cursor) and signature; a match issues the moves the plan puts
 * after the previous operation and before this one, as asynchronous moves (res_flight.c,
 * res_prefetch and res_evict_async).  The moves after an iteration's last operation (those
 * across its end) go out at the next iteration's first; there, chunks of the plan's buffers
 * that are not where the plan starts them are moved there first (reconcile), so that the
 * room the plan counts on is there.  Chunks that the plan names but that are not where it
 * expects them, and operations it did not foresee, are left to the reactive engine, which
 * runs after this as always.  Write-back is never skipped: a plan is a hint, and an iteration
 * that diverges from it may read what the plan thought dead.  When more than an eighth of the
 * operations of two iterations in a row did not match, the next iteration is profiled and
 * planned again (one odd iteration, such as an evaluation pass, keeps the plan).  A plan whose
 * iterations measure slower than the reactive one profiled before it is dropped for good
 * (res_plan_guard.c).  The first iteration under a plan is timed again, and where its
 * operations took other times than the cost model said, the plan is predicted again with
 * them (res_plan_retime.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../policy/policy.h"
#include "../policy/iter.h"
#include "res_int.h"
#include "res_nvme.h"
#include "res_plan_int.h"

#define FKEYS 4096          /* kernels the detector tells apart (more share keys) */
#define REPLAN_SHARE 8      /* an iteration where over 1/REPLAN_SHARE of operations */
#define REPLAN_AFTER 2      /* mismatch, REPLAN_AFTER times in a row: profiled again (one
                             * odd iteration, an evaluation pass, keeps the plan) */

int res_policy_plan;

/* The detector, for every device. */
static struct {
    shim_lock_t lock;
    iter_t *it;
    int failed;
    uintptr_t fkeys[FKEYS];
    uint32_t nkeys;
    _Atomic int64_t cur;        /* the iteration in progress, -1 before the first */
} det = { .lock = SHIM_LOCK_INIT, .cur = -1 };

/* ---------------------------------------------------------------- iterations */

static uint32_t fkey(CUfunction f)
{
    uintptr_t v = (uintptr_t)f;
    uint32_t h = (uint32_t)((v >> 4) * 0x9E3779B97F4A7C15ull >> 52) % FKEYS;
    for (uint32_t i = 0; i < FKEYS; i++, h = (h + 1) % FKEYS) {
        if (det.fkeys[h] == v)
            return h;
        if (!det.fkeys[h]) {
            det.fkeys[h] = v;
            return h;
        }
    }
    return 0;
}

/* The last function each thread launched and its key: a loop launches the same kernel in
 * runs often enough (a function's key never changes). */
static SHIM_TLS struct {
    uintptr_t f;
    uint32_t key;
} fmemo;

/* A launch of f: the detector moves on (det.cur) when it begins an iteration. */
void res_plan_detect(CUfunction f)
{
    iter_mark_t marks[ITER_MAX_MARKS];
    shim_lock(&det.lock);
    if (SHIM_UNLIKELY(!det.it) && !det.failed && iter_create(&det.it) < 0)
        det.failed = 1;
    if (SHIM_UNLIKELY(fmemo.f != (uintptr_t)f)) {
        fmemo.f = (uintptr_t)f;
        fmemo.key = fkey(f);
    }
    int n = det.it && f ? iter_launch(det.it, fmemo.key, 0, marks) : 0;
    if (n > 0)
        atomic_store(&det.cur, (int64_t)marks[n - 1].index);
    shim_unlock(&det.lock);
}

void res_plan_barrier(void)
{
    if (!res_policy_plan)
        return;
    shim_lock(&det.lock);
    if (det.it)
        iter_barrier(det.it);
    shim_unlock(&det.lock);
}

/* ---------------------------------------------------------------- the profile */

static void profile_clear(res_plan_t *p)
{
    p->nops = p->nrefs = p->nbufs = p->nwaits = p->nsyncs = 0;
    p->nstreams = p->nccl_ops = 0;
    p->births = 0;
    p->nborn = 0;
}

static void plan_clear(res_plan_t *p)
{
    p->skipped += p->nretry;            /* (moves noted to be tried again: left) */
    p->nretry = 0;
    pol_plan_free(p->plan);
    p->plan = NULL;
    free(p->born);
    p->born = NULL;
    free(p->ahead);
    p->ahead = NULL;
    free(p->cover);
    p->cover = NULL;
    p->cover_now = 0;
}

/* ---------------------------------------------------------------- planning */

/* The profile's lives made whole before planning.  A buffer allocated before the iteration
 * and freed inside it at operation f is the previous iteration's instance of one allocated
 * inside it later, at born > f, of the same size and not freed in it: the two are one buffer
 * whose life wraps the iteration's end (born > dies), so that the planner does not count
 * both for the whole iteration.  The first such buffer in allocation order is taken; the
 * old one's references go to it.  One with no such partner stays alive all along (dies -1:
 * the longest life it may have).
 * An allocation made after the profile's last operation (born == nops: after the copies that
 * close the iteration, before the launch that begins the next, as a step that allocates its
 * first activation before its first kernel does) is the next iteration's, made early: it is
 * born at operation 0, and its partner's death ends its life there (born 0 .. f, no wrap).
 * The executor counts it, as the profile did, among the births of the iteration before
 * (res_plan_alloc): last in birth order, which this leaves as it is. */
static void lives(res_plan_t *p)
{
    for (uint32_t o = 0; o < p->nbufs; o++) {
        pol_buf_t *old = &p->bufs[o];
        if (old->born >= 0 || old->dies < 0)
            continue;
        uint32_t b = 0;
        for (; b < p->nbufs; b++)
            if (p->bufs[b].born > old->dies && p->bufs[b].dies < 0 && p->nch[b] == p->nch[o])
                break;
        if (b < p->nbufs) {
            p->bufs[b].dies = old->dies;
            for (size_t r = 0; r < p->nrefs; r++)
                if (p->refs[r].buf == o)
                    p->refs[r].buf = b;
            for (size_t w = 0; w < p->nwaits; w++)
                if (p->waits[w].buf == o)
                    p->waits[w].buf = b;
        }
        old->dies = -1;
    }
    for (uint32_t b = 0; b < p->nbufs; b++)
        if (p->bufs[b].born == (int32_t)p->nops) {
            p->bufs[b].born = 0;
            if (p->bufs[b].dies == (int32_t)p->nops)
                p->bufs[b].dies = 0;        /* (freed again before any operation) */
        }
}

/* The planner's input: p's profile on d's machine, with the link figures the profile measured
 * (p->tr). */
static pol_input_t input_of(const res_dev_t *d, const res_plan_t *p)
{
    long slack = shim_opt_int(SHIM_OPT_PLAN_SLACK);   /* (not with unmapped: options.c) */
    return (pol_input_t){ p->ops, p->nops, p->refs, p->nrefs, p->bufs, p->nbufs, p->nstreams,
                          res_plan_machine(d, &p->tr), slack == SHIM_SLACK_AUTO ? POL_SLACK_SEARCH
                                              : slack == 0 ? POL_SLACK_NONE : (uint32_t)slack,
                          p->waits, p->nwaits, p->syncs, p->nsyncs };
}

/* The trace's PLAN record of the plan just made (or predicted again: of plan `again`). */
static void trace_plan(const res_dev_t *d, const res_plan_t *p, double planning_s,
                       uint64_t again)
{
    const pol_result_t *pr = &p->plan->predicted;
    shim_trace_plan_t t = {
        .plan = p->plans, .iteration = (uint64_t)(again ? p->retime_iter : p->prof_iter),
        .ops = p->nops, .buffers = p->nbufs, .moves = p->plan->nmoves,
        .predicted_ns = pr->iter_ns, .bound_ns = pr->bound_ns, .compute_ns = pr->compute_ns,
        .bytes_in = pr->bytes[POL_HOST][0], .bytes_out = pr->bytes[POL_HOST][1],
        .planning_ns = (uint64_t)(planning_s * 1e9), .again = again,
    };
    shim_trace_plan(d->device, &t);
}

/* The profile's times read (res_ptime_fill), then planned. */
static void plan_now(res_dev_t *d, res_plan_t *p)
{
    res_ptime_fill(d, p->ops, p->sig, p->nops, &p->tr);
    for (size_t i = 0; i < p->nops; i++)
        p->ops[i].dur2_ns = p->ops[i].away2 = 0;
    long slack = shim_opt_int(SHIM_OPT_PLAN_SLACK);
    pol_input_t in = input_of(d, p);
    const res_ptime_report_t tr = p->tr;
    char err[160], src[2][48];
    double mapped, unmapped, birth;            /* (for the log: res_plan_map_costs) */
    plan_clear(p);
    lives(p);
    for (uint32_t b = 0; b < p->nbufs; b++)
        p->bufs[b].nvme_ok = (uint8_t)res_plan_nvme_ok(d, p->first[b], p->nch[b]);
    if (slack > 0 && (uint64_t)slack >= in.m.cap[POL_GPU] / d->chunk) {
        SHIM_WARN(RES, "device %d: ELIXIR_PLAN_SLACK=%ld leaves the plan no GPU memory (it has "
                  "%llu chunks: the budget less %llu MiB of memory outside the arena); no plan, "
                  "the reactive engine serves the iteration", d->device, slack,
                  (unsigned long long)(in.m.cap[POL_GPU] / d->chunk),
                  (unsigned long long)((d->app_used + d->pool_used) >> 20));
        p->state = P_OFF;
        return;
    }
    if (pol_input_check(&in, err, sizeof(err)) < 0) {
        SHIM_WARN(RES, "device %d: the profiled iteration is no planner input (%s); the plan "
                  "is off", d->device, err);
        p->state = P_OFF;
        return;
    }
    double t0 = res_now_s();
    int r = pol_plan(&in, NULL, &p->plan);
    /* (the plan's slack changes no operation of the profile into one in place: search.c) */
    p->gpu_chunks = in.m.cap[POL_GPU] / d->chunk;
    if (r < 0) {
        size_t most = 0;
        for (size_t i = 0; i < p->nops; i++) {
            size_t n = (size_t)res_plan_op_reach(p, i);
            most = n > most ? n : most;
        }
        if (r == -ENOSPC && slack > 0)
            SHIM_WARN(RES, "device %d: no plan for the profiled iteration with "
                      "ELIXIR_PLAN_SLACK=%ld (%zu operations, one reaching up to %zu chunks, "
                      "room for %llu less the slack); the reactive engine serves it",
                      d->device, slack, p->nops, most,
                      (unsigned long long)(in.m.cap[POL_GPU] / d->chunk));
        else
            SHIM_INFO(RES, "device %d: no plan for the profiled iteration (%s; %zu operations, "
                      "one reaching up to %zu chunks, room for %llu%s); the reactive engine "
                      "serves it", d->device, r == -ENOSPC ? "not enough memory"
                      : "planner error", p->nops, most,
                      (unsigned long long)(in.m.cap[POL_GPU] / d->chunk),
                      most > p->gpu_chunks && in.m.cap[POL_NVME]
                          ? "; an operation that runs in place needs all it reaches in GPU "
                            "and host memory at once" : "");
        p->state = P_OFF;
        return;
    }
    p->born = calloc(p->nbufs ? p->nbufs : 1, sizeof(*p->born));
    p->ahead = calloc(p->plan->nmoves ? p->plan->nmoves : 1, 1);
    p->cover = malloc(p->nops ? p->nops : 1);
    if (!p->born || !p->ahead || !p->cover || pol_cover_after(&in, p->plan, p->cover) < 0) {
        plan_clear(p);
        p->state = P_OFF;
        return;
    }
    const pol_plan_t *pl = p->plan;
    for (size_t i = 0; i < p->nops; i++)
        if (i == 0 || pl->op_after[i - 1] < pl->op_first[i] || pl->op_first[i] < pl->op_after[i])
            p->cover[i] |= COVER_MOVES;
    for (uint32_t b = 0; b < p->nbufs; b++)
        if (p->bufs[b].born >= 0)
            p->born[p->nborn++] = b;
    p->plans++;
    const pol_result_t *pr = &p->plan->predicted;
    double planning_s = res_now_s() - t0;
    p->pred_ms = pr->iter_ns / 1e6;
    p->bound_ms = pr->bound_ns / 1e6;
    p->bound_in_ms = pr->bound_in_ns / 1e6;
    uint64_t nowb = 0, keep = 0, born = 0;
    for (size_t i = 0; i < p->plan->nmoves; i++) {
        const pol_move_t *m = &p->plan->moves[i];
        nowb += m->from != POL_NTIERS && !m->writeback ? m->nchunks : 0;
        keep += m->keep ? m->nchunks : 0;
        born += m->from == POL_NTIERS ? m->nchunks : 0;
    }
    SHIM_INFO(RES, "device %d: planned %zu operations (NCCL calls %u), host synchronisations "
              "%zu, %zu buffers in %.1f ms: "
              "%zu moves (chunks remapped only %llu, kept %llu, new %llu), predicted %llu MiB to "
              "the GPU and %llu MiB back, iteration %.3f ms against %.3f ms of compute (bound "
              "%.3f ms, %.3f ms with the chunks in alone; of chunks that must move, %llu in and "
              "%llu back)",
              d->device, p->nops, p->nccl_ops, p->nsyncs, p->nbufs, planning_s * 1e3,
              p->plan->nmoves,
              (unsigned long long)nowb, (unsigned long long)keep, (unsigned long long)born,
              (unsigned long long)(pr->bytes[POL_HOST][0] >> 20),
              (unsigned long long)(pr->bytes[POL_HOST][1] >> 20),
              pr->iter_ns / 1e6, pr->compute_ns / 1e6, pr->bound_ns / 1e6,
              pr->bound_in_ns / 1e6, (unsigned long long)pr->bound_chunks[0],
              (unsigned long long)pr->bound_chunks[1]);
    SHIM_INFO(RES, "device %d: the plan's machine: %llu operations timed, %llu estimated from "
              "timed ones of their kernel, %llu untimed (0); host link %.1f GB/s to the GPU (%s), "
              "%.1f GB/s back (%s), %.1f GB/s both ways; its choice: lookahead %u, extents of up "
              "to %u chunks, %llu MiB pinned, %u chunks of slack%s; mapping calls %.1f us a chunk "
              "moved, %.1f us a chunk born (%s), %.1f us of it the unmap of the room it takes; "
              "per iteration %.3f ms of host mapping calls, "
              "%.3f ms of operations waiting for moves", d->device,
              (unsigned long long)tr.timed, (unsigned long long)tr.estimated,
              (unsigned long long)tr.untimed, in.m.link[POL_HOST].to_gpu_gbs,
              res_plan_link_source(&tr, 0, src[0], sizeof(src[0])), in.m.link[POL_HOST].from_gpu_gbs,
              res_plan_link_source(&tr, 1, src[1], sizeof(src[1])), in.m.link[POL_HOST].duplex_gbs,
              p->plan->knobs.lookahead, p->plan->knobs.extent_chunks,
              (unsigned long long)(p->plan->knobs.pin_bytes >> 20),
              p->plan->knobs.slack_chunks,
              !pol_has_near(&in) ? "" : p->plan->knobs.near
                  ? ", chunks behind kernels' pointers brought in"
                  : ", chunks behind kernels' pointers left where they are",
              in.m.map_us_per_chunk, in.m.birth_us_per_chunk,
              res_plan_map_costs(d, &mapped, &unmapped, &birth), in.m.drop_us_per_chunk, pr->map_ns / 1e6,
              pr->stall_ns / 1e6);
    p->state = P_EXEC;
    res_plan_guard_new(p);
    p->cursor = p->mism = p->after_of = p->pre = p->bad = 0;
    p->traced = (shim_trace_follow_t){ .foreseen = p->foreseen, .unforeseen = p->unforeseen,
                                       .moves = p->moves, .chunks = p->chunks_moved,
                                       .left = p->skipped };
    if (SHIM_TRACING())
        trace_plan(d, p, planning_s, 0);
}

int res_plan_predict_again(res_dev_t *d, res_plan_t *p)
{
    pol_input_t in = input_of(d, p);
    in.m.cap[POL_GPU] = p->gpu_chunks * d->chunk;      /* (the room it was made for) */
    pol_result_t now;
    double t0 = res_now_s(), before = p->pred_ms;
    if (p->state != P_EXEC || pol_replay(&in, p->plan, &now) < 0) {
        SHIM_INFO(RES, "device %d: the plan's replay with the times under it failed; its "
                  "prediction stays", d->device);
        return -1;
    }
    double planning_s = res_now_s() - t0;
    p->plan->predicted = now;
    p->plans++;
    p->retimed++;
    p->pred_ms = now.iter_ns / 1e6;
    p->bound_ms = now.bound_ns / 1e6;
    p->bound_in_ms = now.bound_in_ns / 1e6;
    SHIM_INFO(RES, "device %d: plan %llu predicted again with the times of iteration %lld under "
              "it (plan %llu, the same moves), in %.1f ms: iteration %.3f ms against %.3f ms of "
              "compute (bound %.3f ms, %.3f ms with the chunks in alone; %.3f ms predicted "
              "before); per iteration %.3f ms of host mapping calls, %.3f ms of operations "
              "waiting for moves", d->device, (unsigned long long)(p->plans - 1),
              (long long)p->retime_iter, (unsigned long long)p->plans, planning_s * 1e3,
              now.iter_ns / 1e6, now.compute_ns / 1e6, now.bound_ns / 1e6,
              now.bound_in_ns / 1e6, before, now.map_ns / 1e6, now.stall_ns / 1e6);
    if (SHIM_TRACING())
        trace_plan(d, p, planning_s, p->plans - 1);
    return 0;
}

/* The trace's FOLLOW record of iteration `it`, which followed the plan: what the statistics
 * gained since the last one; `partial`: it is still in progress. */
static void trace_follow(res_dev_t *d, res_plan_t *p, int64_t it, int partial)
{
    shim_trace_follow_t *o = &p->traced;
    uint64_t seen = p->foreseen - o->foreseen;
    shim_trace_follow_t f = { .plan = p->plans, .iteration = (uint64_t)it, .foreseen = seen,
                              .unforeseen = p->unforeseen - o->unforeseen,
                              .missed = p->nops > seen ? p->nops - seen : 0,
                              .moves = p->moves - o->moves,
                              .chunks = p->chunks_moved - o->chunks,
                              .left = p->skipped - o->left, .partial = partial };
    shim_trace_follow(d->device, &f);
    *o = (shim_trace_follow_t){ .foreseen = p->foreseen, .unforeseen = p->unforeseen,
                                .moves = p->moves, .chunks = p->chunks_moved,
                                .left = p->skipped };
}

/* ---------------------------------------------------------------- execution */

/* Do moves a and b move a chunk in common? */
static int same_chunks(const pol_move_t *a, const pol_move_t *b)
{
    return a->buf == b->buf && a->chunk < b->chunk + b->nchunks &&
           b->chunk < a->chunk + a->nchunks;
}

/* Does an operation that runs in place (it reaches chunks where they are) come after
 * operation `at` and before move i's place, reaching chunks of move m? */
static int in_place_before(const res_plan_t *p, uint32_t at, uint32_t i, const pol_move_t *m)
{
    const pol_plan_t *pl = p->plan;
    for (uint32_t o = at + 1; o < p->nops && pl->op_after[o] <= i; o++) {
        if (res_plan_op_reach(p, o) <= p->gpu_chunks)
            continue;
        for (uint32_t r = p->ops[o].ref; r < p->ops[o].ref + p->ops[o].nref; r++) {
            const pol_ref_t *f = &p->refs[r];
            if (f->buf == m->buf && f->chunk < m->chunk + m->nchunks &&
                m->chunk < f->chunk + f->nchunks)
                return 1;
        }
    }
    return 0;
}

/*
 * Moves host -> NVMe that the plan places within the next HOIST_OPS operations after
 * operation `at` are issued now, where no other move of their chunks comes before them: the
 * write that makes host room for an eviction then runs while those operations do, instead of
 * the eviction waiting for it (the planner puts a demotion just before the eviction that
 * needs its room).  The chunk is not used before the move's place: a use would need a move of
 * it to the GPU first, and such a move keeps the demotion in its place, as an operation that
 * runs in place and reaches it there does (its use would cancel the demotion, as any use of a
 * chunk going out does).
 * Each chunk goes where it is in host memory and not moving (res_plan_nvme_ahead); the move
 * is marked, and at its place only its chunks still in host memory go (issue_rest).
 */
#define HOIST_OPS 8

static void hoist(res_dev_t *d, res_plan_t *p, uint32_t at, uint32_t serial)
{
    const pol_plan_t *pl = p->plan;
    uint32_t end = at + 1 + HOIST_OPS < p->nops ? at + 1 + HOIST_OPS : (uint32_t)p->nops;
    uint32_t from = pl->op_after[at], to = pl->op_first[end];
    for (uint32_t i = from; i < to; i++) {
        const pol_move_t *m = &pl->moves[i];
        if (m->from != POL_HOST || m->to != POL_NVME || p->ahead[i])
            continue;
        int clash = 0;
        for (uint32_t j = from; j < i && !clash; j++)
            clash = same_chunks(&pl->moves[j], m);
        uint32_t first = res_plan_move_first(d, p, m);
        if (clash || first == UINT32_MAX || in_place_before(p, at, i, m))
            continue;
        uint32_t k = 0;
        while (k < m->nchunks && res_plan_nvme_ahead(d, first + k, serial) == 0)
            k++;
        if (k > 0) {                    /* (the rest go at its place: issue_rest) */
            p->ahead[i] = 1;
            p->moves++;
            p->chunks_moved += k;
        }
    }
}

/* The iteration begins: chunks that are not where the plan starts them (moves left to the
 * reactive engine, or its evictions, in the iteration before) are moved there, evictions
 * first, so that the plan's room is there when its moves count on it. */
static void reconcile(res_dev_t *d, res_plan_t *p, uint32_t serial)
{
    for (int pass = 0; pass < 2; pass++) {
        size_t at = 0;
        for (uint32_t b = 0; b < p->nbufs; at += p->nch[b], b++) {
            uint32_t first = res_plan_buf_first(d, p, b);
            if (first == UINT32_MAX)
                continue;
            for (uint32_t i = 0; i < p->nch[b]; i++) {
                uint8_t want = p->plan->start_tier[at + i];
                uint32_t ci = first + i;
                const chunk_t *c = &d->chunks[ci];
                if (c->moving)
                    continue;
                if (pass == 0 && want == POL_HOST && c->tier == TIER_GPU)
                    p->reconciled += res_evict_async(d, ci, serial) == 0;
                else if (pass == 1 && want == POL_GPU && c->tier == TIER_HOST)
                    p->reconciled += res_prefetch(d, ci) == 0;
            }
        }
    }
}

/* An operation with signature `sig` in the plan's iteration: matched and its moves issued;
 * its index in the plan, or -1 when it did not match. */
static int64_t follow(res_dev_t *d, res_plan_t *p, uint64_t sig, uint32_t serial)
{
    const pol_plan_t *pl = p->plan;
    uint32_t at = p->cursor;
    if (at < p->nops && p->sig[at] != sig && at + 1 < p->nops && p->sig[at + 1] == sig) {
        at++;                           /* one operation of the plan did not come: its moves
                                         * are not issued, nor marked as issued ahead */
        memset(p->ahead + pl->op_first[at - 1], 0, pl->op_first[at] - pl->op_first[at - 1]);
    }
    if (at >= p->nops || p->sig[at] != sig) {
        SHIM_TRACE(RES, "device %d: operation %u of the plan expected, another came", d->device,
                   at);
        p->unforeseen++;
        p->mism += p->mism < UINT32_MAX;    /* (a long stray phase: it saturates) */
        p->cover_now = 0;
        return -1;
    }
    p->foreseen++;
    p->cover_now = p->cover[at] & COVER_EVENT;
    if (p->nretry)
        res_plan_retry(d, p, serial, at);
    if (p->after_of)
        res_plan_issue_range(d, p, pl->op_after[p->after_of - 1], pl->op_first[p->after_of],
                             serial, at);
    if (at == 0)
        reconcile(d, p, serial);
    if (p->pre != at + 1)
        res_plan_issue_range(d, p, pl->op_first[at], pl->op_after[at], serial, at);
    p->pre = 0;
    p->after_of = at + 1;
    p->cursor = at + 1;
    p->due = p->nretry ? at + 1 : 0;
    if (d->nvme_on)
        hoist(d, p, at, serial);
    return at;
}

/* The FOLLOW record of the iteration in progress, when any operation of it came: the plan
 * goes (its context does), or the trace closes. */
static void trace_end(res_dev_t *d, res_plan_t *p)
{
    if (p->foreseen + p->unforeseen > p->traced.foreseen + p->traced.unforeseen)
        trace_follow(d, p, p->iter, 1);
}

/* The iteration `it`, beginning now, is profiled. */
static void profile_start(res_dev_t *d, res_plan_t *p, int64_t it)
{
    res_plan_retime_end(d, p);
    profile_clear(p);
    memset(p->buf_of, 0, arena_chunk_count(d->arena) * sizeof(*p->buf_of));
    res_ptime_open(d);
    p->state = P_REC;
    p->prof_iter = it;
    p->react_ns = 0;                    /* (the guard's reactive figure: from here) */
}

/* A new iteration begins at this operation. */
static void iteration(res_dev_t *d, res_plan_t *p, int64_t it)
{
    int64_t ended = p->iter;
    uint64_t now = shim_ht_now();
    uint64_t took = p->t_iter && ended >= 0 && it == ended + 1 ? now - p->t_iter : 0;
    p->t_iter = now;
    p->iter = it;
    p->births = 0;
    switch (p->state) {
    case P_WAIT:
        if (++p->waited >= 2)           /* (the first iteration allocates) */
            profile_start(d, p, it);
        break;
    case P_REC:
    case P_TIME:                        /* (planned once the profile's times are in) */
        res_plan_guard(d, p, took, 1, 1);
        p->state = P_TIME;
        if (res_ptime_ready(d))
            plan_now(d, p);
        if (p->state == P_EXEC)
            res_plan_retime_begin(d, p, it);
        break;
    case P_EXEC:
        res_plan_retry_drop(d, p);
        if (SHIM_TRACING())
            trace_follow(d, p, ended, 0);
        uint64_t left = p->cursor < p->nops ? p->nops - p->cursor : 0;
        p->mism = (uint32_t)(p->mism + left < UINT32_MAX ? p->mism + left : UINT32_MAX);
        if (p->cursor < p->nops)        /* (marks of moves the iteration did not reach) */
            memset(p->ahead + p->plan->op_first[p->cursor], 0,
                   p->plan->nmoves - p->plan->op_first[p->cursor]);
        p->bad = (uint64_t)p->mism * REPLAN_SHARE > p->nops ? p->bad + 1 : 0;
        if (p->bad >= REPLAN_AFTER) {
            SHIM_INFO(RES, "device %d: %u of %zu operations of iteration %lld did not follow "
                      "the plan, %d iterations in a row; profiling again", d->device, p->mism,
                      p->nops, (long long)it - 1, REPLAN_AFTER);
            p->replans++;
            p->bad = 0;
            plan_clear(p);
            profile_start(d, p, it);
        } else if (res_plan_guard(d, p, took, 0, p->bad == 0)) {
            res_plan_retime_end(d, p);
            plan_clear(p);              /* (the moves in flight complete as ever: res_flight.c) */
            p->state = P_OFF;
        } else if (p->retime == RT_TIMING || p->retime == RT_READ) {
            res_plan_retime_read(d, p);
        }
        p->cursor = p->mism = p->pre = 0;   /* (after_of: the last operation's moves after
                                             * it, those across the iteration's end, are still
                                             * due) */
        break;
    }
}

static res_plan_t *plan_of(res_dev_t *d)
{
    if (SHIM_LIKELY(d->plan != NULL))
        return d->plan;
    res_plan_t *p = calloc(1, sizeof(*p));
    if (p && !(p->buf_of = calloc(arena_chunk_count(d->arena), sizeof(*p->buf_of)))) {
        free(p);
        p = NULL;
    }
    if (p)
        p->iter = -1;
    d->plan = p;
    return p;
}

/* Whether the operation just matched (this call's) is the last use of a chunk the plan
 * evicts, so that an event is recorded after it (res_use_cover_flush); cleared. */
static int cover_take(res_dev_t *d)
{
    res_plan_t *p = d->plan;
    if (!p || !p->cover_now)
        return 0;
    p->cover_now = 0;
    return 1;
}

/* The common part of res_plan_op and res_plan_fast: the operation's index in the profile
 * when it was recorded, or in the plan when a launch matched it in an iteration timed again,
 * else -1. */
static int64_t plan_step(res_dev_t *d, int kind, uintptr_t what, const uint32_t *ids, size_t n,
                         res_access_fn_t acc, const void *arg, CUstream s, uint32_t serial)
{
    res_plan_t *p = plan_of(d);
    if (!p || p->state == P_OFF)
        return -1;
    int64_t it = atomic_load(&det.cur);
    if (it != p->iter)
        iteration(d, p, it);
    if (p->state == P_REC)
        return res_plan_record(d, p, kind, what, ids, n, acc, arg, s);
    if (p->state == P_EXEC) {
        int64_t at = follow(d, p, res_plan_signature(kind, what, n), serial);
        return p->retime == RT_TIMING && kind == PLAN_LAUNCH ? at : -1; /* (res_plan_retime.c) */
    }
    return -1;
}

/* Chunks of operation k with moves in flight are settled before it is enqueued on s.  The
 * eviction of a chunk behind k's pointers (res_collect_behind), which k most likely does not
 * touch, completes (the host waits for its copy) rather than being cancelled as a use that may
 * write the chunk cancels it: the plan counts on its room. */
static void settle(res_dev_t *d, collect_t *k, CUstream s, int ptds)
{
    if (k->unknown) {
        res_flights_drain(d);           /* it may reach anything */
        return;
    }
    for (size_t i = 0; i < k->n; i++)
        if (SHIM_UNLIKELY(d->chunks[k->ids[i]].moving)) {
            if (k->capturing || (k->nbehind && res_collect_behind(k, k->ids[i]) &&
                                 res_flight_out(d, k->ids[i])))
                res_flight_settle(d, k->ids[i], 0);
            else
                res_flight_use(d, k->ids[i], s, ptds);
        }
}

/* k->away again, after the moves around k: a chunk of k that was in GPU memory when k
 * collected it may have left (the eviction of a chunk behind its pointers, completed by
 * settle or by the room a prefetch took), and res_reach maps back what is unmapped. */
static void away_again(const res_dev_t *d, collect_t *k)
{
    for (size_t i = 0; i < k->n && !k->away; i++)
        k->away = d->chunks[k->ids[i]].tier != TIER_GPU;
}

/* (An operation the plan lets run in place: its chunks in host memory are not brought in,
 * which would evict what the plan keeps for the next ones.  Every chunk it collected counts,
 * those behind its pointers too: see reach_acc.) */
static void in_place(const res_dev_t *d, collect_t *k)
{
    const res_plan_t *p = d->plan;
    k->in_place = p && p->state == P_EXEC && k->n > p->gpu_chunks;
}

/*
 * How the profile records what operation k reaches (res_access_fn_t): a copy's or memset's
 * operands as they read and write; a launch's chunks behind its pointers (res_collect_behind)
 * as POL_NEAR, where all it collected fits in GPU memory: the planner brings them in with the
 * rest or leaves them where they are, whichever its cost model predicts faster (the launch
 * itself never brings them in: res_reach_away).  A launch that collected more runs in place,
 * as every chunk it collected says: it is recorded whole, and runs where its chunks are
 * (in_place) rather than bring in the chunks from its pointers on, which, where kernels touch
 * a little of a large allocation, costs more than reaching those bytes over the link.
 */
static res_access_fn_t reach_acc(const res_dev_t *d, const collect_t *k, const shim_copy_t *c)
{
    if (c)
        return res_plan_copy_access;
    return k->nbehind && k->n <= res_plan_gpu_bytes(d) / d->chunk ? res_plan_launch_access : NULL;
}

void res_plan_op(res_dev_t *d, collect_t *k, int kind, uintptr_t what, const shim_copy_t *c,
                 CUstream s, int ptds)
{
    if (kind == PLAN_LAUNCH && !k->detected)
        res_plan_detect((CUfunction)what);
    else if (c && (c->kind == SHIM_COPY_HTOD || c->kind == SHIM_COPY_DTOH))
        res_plan_barrier();
    if (d->nflights || d->npend || d->nvme_flights) {
        settle(d, k, s, ptds);
        res_flights_poll(d);
    }
    if (k->capturing || k->unknown || res_nccl_inside()) {
        away_again(d, k);
        return;                         /* (not part of an iteration the plan can follow; an
                                         * NCCL call's own launches are part of it) */
    }
    if (d->plan)
        d->plan->cur = k;               /* (the moves before k: see res_plan_issue.c, behind;
                                         * only while the lock is held throughout) */
    int64_t i = plan_step(d, kind, what, k->ids, k->n, reach_acc(d, k, c),
                          c ? (const void *)c : k, s, k->serial);
    if (d->plan)
        d->plan->cur = NULL;
    k->cover = cover_take(d);
    if (SHIM_UNLIKELY(d->plan && d->plan->due) && !d->arena_busy)
        res_plan_retry_due(d, d->plan, k->serial);
    /* (The prefetches the plan issued before it, of its own chunks: s waits for their copies.) */
    if (d->nflights || d->nvme_flights)
        settle(d, k, s, ptds);
    if (i >= 0)
        res_ptime_op(d, k, (uint32_t)i);
    away_again(d, k);
    in_place(d, k);
}

void res_plan_nccl(res_dev_t *d, collect_t *k, uintptr_t what, res_access_fn_t acc,
                   const void *arg, CUstream s)
{
    if (d->nflights || d->npend || d->nvme_flights)
        res_flights_poll(d);
    uint64_t seen = d->plan ? d->plan->foreseen : 0;
    int64_t i = plan_step(d, PLAN_NCCL, what, k->ids, k->n, acc, arg, s, k->serial);
    k->cover = cover_take(d);
    /* (After the plan's moves before it: the prefetches it needs are in flight now.) */
    if (d->nflights || d->nvme_flights)
        settle(d, k, s, 0);
    if (i >= 0) {
        d->plan->nccl_ops += d->plan->state == P_REC;
        res_ptime_op(d, k, (uint32_t)i);
    }
    if (d->plan && d->plan->foreseen > seen)
        d->plan->nccl_foreseen++;
    away_again(d, k);
    in_place(d, k);
}

/* follow() for the usual launch, of the iteration in progress, that the plan expects at its
 * cursor, after the one before, with no moves before it nor after the one before
 * (COVER_MOVES), and no NVMe tier (whose moves follow() issues ahead: hoist), unless the
 * iteration is timed again and the profile timed it with chunks away (a launch on this path
 * has none: res_plan_retime.c): its cover (COVER_EVENT, or 0) when it was, else -1 and
 * nothing changed. */
static SHIM_ALWAYS_INLINE int follow_quiet(res_plan_t *p, uint64_t sig)
{
    uint32_t at = p->cursor;
    if (p->state != P_EXEC || p->iter != atomic_load_explicit(&det.cur, memory_order_relaxed) ||
        at >= p->nops || p->after_of != at || p->sig[at] != sig || p->nretry ||
        (p->cover[at] & COVER_MOVES) || (p->retime == RT_TIMING && p->ops[at].away))
        return -1;
    p->foreseen++;
    p->after_of = p->cursor = at + 1;
    return p->cover[at];
}

/* res_plan_fast past follow_quiet. */
static __attribute__((noinline)) void plan_fast_slow(res_dev_t *d, CUcontext ctx, CUfunction f,
                                                     const uint32_t *ids, unsigned n, CUstream s)
{
    if (d->nflights || d->npend || d->nvme_flights)
        res_flights_poll(d);
    if (res_nccl_inside())
        return;
    int64_t i = plan_step(d, PLAN_LAUNCH, (uintptr_t)f, ids, n, NULL, NULL, s, d->serial);
    const res_plan_t *p = d->plan;
    if (i >= 0 && (p->state == P_REC || p->ops[i].away))  /* (timed again: only with another
                                                           * count away than profiled, 0) */
        res_ptime_fast(d, (uint32_t)i, ctx, s);
}

int res_plan_fast(res_dev_t *d, CUcontext ctx, CUfunction f, const uint32_t *ids, unsigned n,
                  CUstream s)
{
    res_plan_t *p = d->plan;
    if (SHIM_LIKELY(p != NULL && !d->nflights && !d->npend && !d->nvme_flights && !d->nvme_on &&
                    !res_nccl_inside())) {
        int cover = follow_quiet(p, res_plan_signature(PLAN_LAUNCH, (uintptr_t)f, n));
        if (SHIM_LIKELY(cover >= 0))
            return cover;
    }
    plan_fast_slow(d, ctx, f, ids, n, s);
    return cover_take(d);
}

void res_plan_due(res_dev_t *d)
{
    res_plan_t *p = d->plan;
    if (!p || p->state != P_EXEC || p->cursor == 0 || p->cursor >= p->nops ||
        p->pre == p->cursor + 1 || p->iter != atomic_load_explicit(&det.cur, memory_order_relaxed))
        return;
    const pol_plan_t *pl = p->plan;
    if (p->after_of)
        res_plan_issue_range(d, p, pl->op_after[p->after_of - 1], pl->op_first[p->after_of], 0,
                             p->cursor);
    p->after_of = 0;
    res_plan_issue_range(d, p, pl->op_first[p->cursor], pl->op_after[p->cursor], 0, p->cursor);
    p->pre = p->cursor + 1;
}

void res_plan_drop(res_dev_t *d)
{
    res_plan_t *p = d->plan;
    res_ptime_drop(d);
    if (!p)
        return;
    if (p->state == P_EXEC && SHIM_TRACING())
        trace_end(d, p);
    res_plan_retime_end(d, p);
    plan_clear(p);
    free(p->ops);
    free(p->sig);
    free(p->refs);
    free(p->waits);
    free(p->syncs);
    free(p->bufs);
    free(p->first);
    free(p->nch);
    p->ops = NULL;
    p->sig = NULL;
    p->refs = NULL;
    p->waits = NULL;
    p->syncs = NULL;
    p->bufs = NULL;
    p->first = p->nch = NULL;
    p->cap_ops = p->cap_refs = p->cap_bufs = p->cap_waits = p->cap_syncs = 0;
    profile_clear(p);
    p->state = P_WAIT;                  /* (its statistics stay; a new context profiles anew) */
    p->waited = 0;
}

void res_plan_trace_end(void)
{
    if (!res_policy_plan)
        return;
    for (int i = 0; i < MAX_DEVICES; i++) {
        res_dev_t *d = &res_devs[i];
        if (atomic_load_explicit((_Atomic int *)&d->ready, memory_order_acquire) <= 0)
            continue;
        shim_lock(&d->lock);
        if (d->plan && d->plan->state == P_EXEC)
            trace_end(d, d->plan);
        shim_unlock(&d->lock);
    }
}

void res_plan_stats(const res_dev_t *d)
{
    static const res_plan_t none;
    const res_plan_t *p = d->plan ? d->plan : &none;
    char guard[128];
    if (!res_policy_plan)
        return;
    res_plan_guard_text(p, guard, sizeof(guard));
    shim_log_plain("device %d: plan: %llu planned, %llu re-planned, %llu predicted again with "
                   "the times of an iteration under the plan; operations foreseen %llu, "
                   "not foreseen %llu, NCCL calls foreseen %llu; moves issued %llu (%llu "
                   "chunks, %llu of them once a use in flight completed, %llu left to the "
                   "reactive engine, %llu put where the plan starts them); prefetches %llu, "
                   "evictions %llu (cancelled %llu, waited for %llu, done ahead of their "
                   "copies %llu, %llu freed as their copy ran, %llu left unmapped; %llu "
                   "mapped back unforeseen); reactive evictions that took the victim the plan "
                   "uses last %llu, demotions to NVMe %llu; blocked on moves %.3f s; predicted "
                   "iteration %.3f ms (bound %.3f ms, %.3f ms with the chunks in alone); guard: "
                   "%s",
                   d->device, (unsigned long long)(p->plans - p->retimed),
                   (unsigned long long)p->replans, (unsigned long long)p->retimed,
                   (unsigned long long)p->foreseen, (unsigned long long)p->unforeseen,
                   (unsigned long long)p->nccl_foreseen, (unsigned long long)p->moves,
                   (unsigned long long)p->chunks_moved, (unsigned long long)p->retried,
                   (unsigned long long)p->skipped, (unsigned long long)p->reconciled,
                   (unsigned long long)d->prefetches, (unsigned long long)d->evictions_async,
                   (unsigned long long)d->flights_cancelled,
                   (unsigned long long)d->flights_waited, (unsigned long long)d->flights_early,
                   (unsigned long long)d->flights_early_freed,
                   (unsigned long long)d->unmapped_out, (unsigned long long)d->unmapped_back,
                   (unsigned long long)p->victims, (unsigned long long)p->host_victims,
                   d->blocked_flight_s, p->pred_ms, p->bound_ms, p->bound_in_ms, guard);
}
