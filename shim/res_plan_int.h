/* SPDX-License-Identifier: MIT */
/*
 * res_plan_int.h - a device's plan as res_plan.c keeps it (the profile, the plan and the
 * cursor that follows it), for the files that read it besides res_plan.c: res_plan_victim.c,
 * res_plan_guard.c, and res_plan_profile.c, which records the profile.
 */
#ifndef ELIXIR_RES_PLAN_INT_H
#define ELIXIR_RES_PLAN_INT_H

#include "../policy/policy.h"
#include "res_int.h"
#include "res_ptime.h"

#define PLAN_STREAMS 16     /* streams told apart in a profile (more share the last) */
#define PLAN_RETRIES 64     /* chunks of refused moves tried again at the next operations */
#define RETRY_OPS 8         /* an eviction is tried again for this many operations */

enum { P_WAIT, P_REC, P_TIME, P_EXEC, P_OFF };    /* P_TIME: the profile's times awaited */
/* res_plan_t.retime: the first iteration under a plan made from a profile is timed again
 * (RT_TIMING), its times awaited (RT_READ), then used or not (RT_DONE; res_plan.c). */
enum { RT_NONE, RT_TIMING, RT_READ, RT_DONE };
#define PLAN_RETIME_SHARE 20    /* the model's miss under the plan that makes the plan's
                                 * prediction again: over 1/20 (res_plan_retime.c) */
/* res_plan_t.cover's bits, per operation: an event is due after it (pol_cover_after); the plan
 * has moves before it or after the one before (res_plan_fast's quick path is not for it). */
enum { COVER_EVENT = 1, COVER_MOVES = 2 };

typedef struct res_plan {
    int state;
    uint64_t gpu_chunks;        /* the plan's GPU room: an operation reaching more runs in
                                 * place (pol_op_in_place), nothing brought in for it but
                                 * what it reaches on NVMe */
    int64_t iter;               /* the iteration this device last saw */
    int64_t waited;             /* iterations seen while waiting to profile */
    /* The profile. */
    pol_op_t *ops;
    uint64_t *sig;
    size_t nops, cap_ops;
    pol_ref_t *refs;
    size_t nrefs, cap_refs;
    pol_buf_t *bufs;
    uint32_t *first;            /* per buffer: its first chunk when profiled (now: execution) */
    uint32_t *nch;              /* per buffer: its chunks */
    size_t nbufs, cap_bufs;
    uint32_t *buf_of;           /* per arena chunk: 1 + the buffer starting there; 0: none */
    pol_wait_t *waits;          /* frees of small allocations: the host waits for their chunk */
    size_t nwaits, cap_waits;
    pol_sync_t *syncs;          /* the program's host synchronisations (res_plan_synced) */
    size_t nsyncs, cap_syncs;
    uint32_t births;            /* allocations so far in this iteration */
    CUstream streams[PLAN_STREAMS];
    uint32_t nstreams;
    uint32_t nccl_ops;          /* NCCL calls among the operations */
    /* The plan. */
    pol_plan_t *plan;
    uint32_t *born;             /* birth order -> buffer, for buffers born in the iteration */
    uint32_t nborn;
    uint32_t cursor, mism, after_of;    /* after_of: 1 + the operation whose after-moves are due */
    uint32_t pre;                       /* 1 + the operation whose moves before it went ahead
                                         * (res_plan_due), else 0 */
    uint8_t *ahead;                     /* per move: 1 while issued ahead of its place (hoist) */
    uint8_t *cover;                     /* per operation: COVER_EVENT, COVER_MOVES */
    uint8_t cover_now;                  /* the operation just matched has one due */
    const collect_t *cur;               /* the operation being matched (res_plan_op), or NULL */
    /* Chunks of moves refused for a use still in flight (-EBUSY), tried again before each
     * operation until `until` (res_plan.c, "moves tried again"). */
    struct {
        uint32_t move, ci, until;
    } retry[PLAN_RETRIES];
    uint32_t nretry;
    uint32_t due;                       /* 1 + the operation just matched, whose prefetches
                                         * still refused go once their use is done
                                         * (res_plan_retry_due), else 0 */
    uint32_t bad;                       /* iterations in a row that did not follow the plan */
    double pred_ms, bound_ms, bound_in_ms;  /* the last plan's prediction (for the statistics) */
    /* Timing again under the plan (res_plan.c, "times under the plan"). */
    int retime;                         /* RT_* */
    uint32_t *away2;                    /* per operation: its chunks away as it ran, timed again */
    int64_t retime_iter;                /* the iteration timed again */
    res_ptime_report_t tr;              /* the profile's link figures, for a prediction made
                                         * again */
    /* Statistics. */
    uint64_t foreseen, nccl_foreseen, unforeseen, plans, replans, moves, chunks_moved, skipped,
        reconciled, retried, retimed;   /* retimed: predictions made again with the
                                         * times of an iteration under the plan */
    uint32_t *near, near_epoch;         /* per arena chunk, res_plan_victim's marks */
    uint64_t victims;                   /* reactive evictions whose victim it chose */
    uint64_t host_victims;              /* the same of the demotions host -> NVMe */
    int64_t prof_iter;                  /* the iteration profiled (for the trace; a prediction
                                         * made again names retime_iter) */
    /* The guard (res_plan_guard.c): iterations timed on the host's clock (shim_ht_now). */
    uint64_t t_iter;                    /* when the iteration in progress began; 0: unknown */
    uint64_t react_ns;                  /* the shortest the reactive engine served whole since
                                         * profiling began; 0: none */
    uint64_t planned_ns;                /* the shortest judged iteration under the plan */
    uint32_t judged;                    /* iterations judged under the plan */
    int last_followed;                  /* the last iteration followed the plan */
    int verdict;                        /* GUARD_* */
    shim_trace_follow_t traced;         /* the statistics when the last FOLLOW was traced */
} res_plan_t;

/* The arena chunk where the plan's buffer b begins, or UINT32_MAX where it is not there
 * (freed, or another allocation: the reactive engine's then). */
static inline uint32_t res_plan_buf_first(const res_dev_t *d, const res_plan_t *p, uint32_t b)
{
    uint32_t first = p->first[b];
    if (first >= arena_chunk_count(d->arena) || d->chunks[first].span_first != first)
        return UINT32_MAX;
    return first;
}

/* The chunks operation i of the profile reaches (more than gpu_chunks: it runs in place). */
static inline uint64_t res_plan_op_reach(const res_plan_t *p, size_t i)
{
    uint64_t n = 0;
    for (uint32_t j = 0; j < p->ops[i].nref; j++)
        n += p->refs[p->ops[i].ref + j].nchunks;
    return n;
}

/* res_plan_guard.c: whether the plan is kept.  res_plan_guard: the iteration that ended
 * (took ns; 0: not timed) was served wholly by the reactive engine (reactive) or ran under
 * the plan (followed: it matched it): 1 when the plan is to be dropped now, else 0.
 * res_plan_guard_new: a plan was made (judged afresh).  res_plan_guard_text: the verdict,
 * for the statistics. */
enum { GUARD_PENDING, GUARD_KEPT, GUARD_DROPPED };
int res_plan_guard(const res_dev_t *d, res_plan_t *p, uint64_t took, int reactive, int followed);
void res_plan_guard_new(res_plan_t *p);
void res_plan_guard_text(const res_plan_t *p, char *buf, size_t len);

/* res_plan_machine.c: the machine d's plan is made for, with the link figures the profile
 * measured (tr).  res_plan_gpu_bytes: the GPU memory the plan has (the budget less the
 * application's own memory, a chunk at least).  res_plan_map_costs: the mapping costs per
 * chunk charged (where evictions stay mapped, where they unmap, a birth) and whether they
 * were "measured", "scaled" or "default".  res_plan_link_source: for the log, whether the host
 * link's rate in direction dir was measured (written into buf) or a default. */
pol_machine_t res_plan_machine(const res_dev_t *d, const res_ptime_report_t *tr);
uint64_t res_plan_gpu_bytes(const res_dev_t *d);
const char *res_plan_map_costs(const res_dev_t *d, double *mapped, double *unmapped,
                               double *birth);
const char *res_plan_link_source(const res_ptime_report_t *tr, int dir, char *buf, size_t len);

/* res_plan.c: p's plan (P_EXEC) replayed on the cost model again, on its profile with the
 * times of an iteration under it (res_plan_retime.c): its prediction made again, counted
 * and traced as a plan of its own, the same moves, everything else as it was.  0, or -1 when
 * the replay failed (the prediction stays). */
int res_plan_predict_again(res_dev_t *d, res_plan_t *p);

/* res_plan_retime.c: times under the plan (d locked).  res_plan_retime_begin: the iteration
 * `it`, beginning now under a plan just made from a profile, is timed again.
 * res_plan_retime_read: at the start of a later iteration under the plan, once that one's
 * times are in, they are compared with the cost model's and, where it missed, the plan is
 * predicted again with them.  res_plan_retime_end: its events destroyed and what it holds
 * freed (the plan or its profile goes). */
void res_plan_retime_begin(res_dev_t *d, res_plan_t *p, int64_t it);
void res_plan_retime_read(res_dev_t *d, res_plan_t *p);
void res_plan_retime_end(res_dev_t *d, res_plan_t *p);

/* res_plan_issue.c: issuing the plan's moves (d locked). */
/* The arena chunk of move m's first chunk, or UINT32_MAX (as res_plan_buf_first). */
uint32_t res_plan_move_first(const res_dev_t *d, const res_plan_t *p, const pol_move_t *m);
/* The moves [from, to) of the plan, around operation `at` (`serial`: the operation being
 * matched, whose chunks are not evicted; 0 for none). */
void res_plan_issue_range(res_dev_t *d, res_plan_t *p, uint32_t from, uint32_t to,
                          uint32_t serial, uint32_t at);
/* Before operation `at`: the moves noted to be tried again go, stay noted, or are left. */
void res_plan_retry(res_dev_t *d, res_plan_t *p, uint32_t serial, uint32_t at);
/* The moves noted to be tried again are left: the iteration, or the plan, ends. */
void res_plan_retry_drop(res_dev_t *d, res_plan_t *p);
/* The operation just matched (p->due; `serial`) needs the chunks of prefetches noted to be
 * tried again: the host waits for their uses in flight with d's lock dropped
 * (res_idle_unlocked: d locked, no other lock held, no arena call), as the reactive engine
 * bringing them in would, and they go. */
void res_plan_retry_due(res_dev_t *d, res_plan_t *p, uint32_t serial);

/* res_plan_profile.c: recording the profile. */
/* Grows *p (*cap elements of `size` bytes) to hold `need`: 0, or -1 out of memory. */
int res_plan_grow(void **p, size_t *cap, size_t need, size_t size);
/* The buffer whose first chunk is `first` (n chunks), made when unknown, or, when `born`,
 * made anew, born at the next operation: its index, or -1. */
int64_t res_plan_buf_at(res_dev_t *d, res_plan_t *p, uint32_t first, uint32_t n, int born);
/* Which accesses a copy or memset (arg: a shim_copy_t) makes to the chunk [lo, hi). */
uint8_t res_plan_copy_access(const void *arg, uint64_t lo, uint64_t hi);
/* How a launch (arg: its collect_t) reaches the chunk [lo, hi): POL_RW, with POL_NEAR for a
 * chunk before its pointers (res_collect_behind), which it need not have on the GPU. */
uint8_t res_plan_launch_access(const void *arg, uint64_t lo, uint64_t hi);
/* An operation's signature: its kind, kernel (or copy kind) and the chunks it reaches. */
static inline uint64_t res_plan_signature(int kind, uintptr_t what, size_t n)
{
    uint64_t h = ((uint64_t)what * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)kind << 60);
    return h ^ ((uint64_t)n << 32);
}
/* Operation (kind, what) reaching ids[0, n) on s, appended to the profile: its index, or -1
 * (the profile then off: too long, or out of memory). */
int64_t res_plan_record(res_dev_t *d, res_plan_t *p, int kind, uintptr_t what,
                        const uint32_t *ids, size_t n, res_access_fn_t acc, const void *arg,
                        CUstream s);

#endif
