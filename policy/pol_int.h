/* SPDX-License-Identifier: MIT */
/*
 * pol_int.h - the policy's internal interfaces, grouped under the file that defines them.
 *
 * Everything here works on a chunk-level view of one iteration (pol_index_t, built once per
 * input by index.c): chunks are numbered globally (buffer by buffer, chunk by chunk), every
 * operation's references are expanded into *uses* (one per operation and chunk, access bits
 * merged), and every use knows the next use of its chunk, in the same life of its buffer,
 * possibly in the next iteration.  Times are absolute: operation i of pass p is p * nops + i,
 * use u of pass p is p * nuses + u, so that plans can look across the iteration's end.
 */
#ifndef ELIXIR_POL_INT_H
#define ELIXIR_POL_INT_H

#include <stdint.h>

#include "policy.h"

#define POL_NONE 0xff           /* "no tier": a chunk not yet born or dead, or no home copy */
#define POL_INF UINT64_MAX      /* "no next use" in absolute times */

/* The chunks of a buffer of `bytes` (no overflow near 2^64). */
static inline uint64_t pol_chunks_of(uint64_t bytes, uint64_t chunk)
{
    return bytes / chunk + (bytes % chunk != 0);
}

/* How a use needs the chunk's contents: all accesses but a whole overwrite read them. */
static inline int pol_needs_data(uint8_t access)
{
    return (access & POL_READ) || !(access & 4);
}

/* ---------------------------------------------------------------- index.c */

typedef struct pol_index {
    uint32_t nops, nbufs;
    uint64_t nchunks, nuses;
    uint64_t *chunk_base;       /* nbufs + 1: first global chunk of each buffer */
    uint32_t *chunk_buf;        /* nchunks: the buffer of each chunk */
    uint64_t *op_use;           /* nops + 1: uses of op i are op_use[i] .. op_use[i + 1] */
    uint32_t *use_chunk;        /* nuses: the chunk of each use */
    uint32_t *use_op;           /* nuses: its operation */
    uint8_t *use_acc;           /* nuses: merged access bits */
    uint64_t *use_next;         /* nuses: relative index of the next use of the chunk in the
                                 * same life (+ nuses: in the next iteration), or POL_INF */
    uint32_t *use_next_op;      /* nuses: the operation of that next use (relative to its
                                 * iteration), UINT32_MAX for none */
    uint64_t *op_run;           /* nops + 1: the runs of op i are op_run[i] .. op_run[i + 1]:
                                 * its uses' chunks grouped into runs of consecutive chunks */
    uint32_t *run_chunk, *run_n;    /* the first chunk of a run and how many */
    uint64_t *chunk_first;      /* nchunks: the first use of a chunk alive at op 0, relative
                                 * (POL_INF: none in that life, or not alive at op 0) */
    uint64_t *chunk_born_use;   /* nchunks: first use after its buffer's birth (maybe + nuses) */
    uint8_t *buf_wrap;          /* nbufs: 0 permanent, 1 lives born..dies, 2 wraps the end */
    uint32_t *born_first, *born_list; /* buffers born before op i: born_list[born_first[i] ..
                                       * born_first[i + 1]) */
    uint32_t *dies_first, *dies_list; /* and dying after it */
    uint32_t *life_born, *life_dies;  /* nbufs: the life born .. dies (inclusive) of a buffer
                                       * that is not permanent; dies < born wraps */
    uint8_t *buf_nvme;          /* nbufs: may go to NVMe (nvme_ok, and, where the index
                                 * leaves POL_NEAR references out, none of those reaches it) */
    uint32_t *chunk_slot;       /* nchunks: a dense number of the chunk's address for the
                                 * chunks of buffers born or dying in the iteration whose
                                 * slot is known (pol_buf_t.slot), else UINT32_MAX */
    uint32_t nslots;            /* how many numbers */
    uint8_t near_refs;          /* the input has POL_NEAR references (used or not) */
    uint64_t forced;            /* the chunks that must come in (bound.c), computed once */
    uint64_t forced_out;        /* and those that must go back with a copy (bound.c) */
    uint64_t gpu_cap;           /* chunks */
    uint64_t cap[POL_NTIERS];   /* chunks per tier */
} pol_index_t;

/* Does operation i reach more chunks than the GPU holds?  Such an operation runs where its
 * chunks are (in place: those in host memory are reached there, over the link), and the plan
 * brings none in for it but those that have no memory yet or are on NVMe; the other
 * operations' moves are planned around it.  Not with a peer tier (a machine with one gets no
 * plan then, -ENOSPC). */
static inline int pol_op_in_place(const pol_index_t *ix, uint32_t i)
{
    return ix->op_use[i + 1] - ix->op_use[i] > ix->gpu_cap && ix->cap[POL_PEER] == 0;
}

/* 0, -EINVAL (a reference outside its buffer's life) or -ENOMEM.  `in` must have passed
 * pol_input_check.  POL_NEAR references are uses as the others when `near`
 * (pol_knobs_t.near), else left out; the bound (forced, forced_out) is the lesser of the two
 * ways' (a plan may take either). */
int pol_index_build(const pol_input_t *in, pol_index_t *ix, int near);
void pol_index_free(pol_index_t *ix);
/* Is buffer b alive at operation op (relative)? */
int pol_buf_alive(const pol_input_t *in, const pol_index_t *ix, uint32_t b, uint32_t op);
/* The smallest GPU capacity, in chunks, some operation needs with the pinned chunks. */
uint64_t pol_min_gpu_chunks(const pol_input_t *in, const pol_index_t *ix, const uint8_t *pin);

/* ---------------------------------------------------------------- bound.c */

/* Lower bounds of the chunks that come to the GPU with a copy in one iteration, whatever the
 * plan (pol_index_build keeps the larger in forced): the most chunks ever alive holding data
 * a later use reads, beyond the GPU's capacity; and Belady's MIN over repeated iterations. */
uint64_t pol_forced_chunks(const pol_input_t *in, const pol_index_t *ix);
uint64_t pol_least_fetches(const pol_input_t *in, const pol_index_t *ix);
/* The chunks that leave the GPU with a copy in one iteration, whatever the plan: those whose
 * data a use wrote and a later use reads, where the GPU cannot keep them between. */
uint64_t pol_least_writebacks(const pol_input_t *in, const pol_index_t *ix);

/* ---------------------------------------------------------------- link.c */

/* A link's two directions, 0 to the GPU and 1 from it: the stretches each one's copies occupy,
 * oldest first (zeroed to start; oom set where a stretch could not be kept). */
typedef struct pol_seg {
    double s, e, rate;          /* ns, ns, bytes per ns */
} pol_seg_t;

typedef struct pol_lanes {
    pol_seg_t *seg[2];
    size_t head[2], n[2], cap[2];   /* seg[d][head[d] .. n[d]) are remembered */
    double last[2];                 /* when each direction's last copy ends */
    int oom;
} pol_lanes_t;

/* A copy of `bytes` in direction dir from time t (ns; no earlier than the direction's last
 * copy ended) at up to gbps, both directions together at no more than duplex: its end.
 * `floor`: a time before which no later copy, either way, starts. */
double pol_lanes_copy(pol_lanes_t *k, int dir, double t, double bytes, double gbps,
                      double duplex, double floor);
void pol_lanes_free(pol_lanes_t *k);

/* ---------------------------------------------------------------- belady.c */

/* One move of one chunk as the planner emits it, before extents are formed. */
typedef struct pol_cmove {
    uint32_t op;                /* relative operation it is issued at */
    uint8_t after;              /* 0: before op, 1: after it */
    uint8_t from, to, writeback, keep;
    uint32_t chunk;             /* global chunk */
    uint64_t need_by;           /* absolute op of the use it serves, POL_INF for evictions */
} pol_cmove_t;

typedef struct pol_cplan {
    pol_cmove_t *mv;
    uint64_t n, cap;
    uint8_t *start_tier;        /* nchunks */
    uint8_t *start_home;        /* nchunks */
    uint32_t pass;              /* the pass the moves come from (their absolute base) */
    int converged;              /* 1: the pass's end state is its start state */
} pol_cplan_t;

/* Plan one iteration chunk by chunk: Belady eviction, aggressive prefetch within lookahead
 * operations (0: one iteration), pinned buffers in pin[] (nbufs flags) never moving.  0,
 * -ENOSPC or -ENOMEM; out is filled (free with pol_cplan_free). */
int pol_belady(const pol_input_t *in, const pol_index_t *ix, const uint8_t *pin,
               uint32_t lookahead, pol_cplan_t *out);
void pol_cplan_free(pol_cplan_t *cp);

/* ---------------------------------------------------------------- search.c */

/* Turn chunk moves into a plan with extents of up to `extent` chunks, moves away from the GPU
 * first at each issue point when `reorder`: 0, -ENOMEM.  *capped (may be NULL) is set to 1
 * when the limit split some extent (a larger limit would give another plan), else left. */
int pol_assemble(const pol_input_t *in, const pol_index_t *ix, const pol_cplan_t *cp,
                 uint32_t extent, int reorder, pol_plan_t **out, int *capped);

/* ---------------------------------------------------------------- check.c */

/* Walk a plan over `passes` iterations (1 or 2) as an executor would (check.c): 0, or -EINVAL
 * with the first violation in err.  The second iteration catches a move back to a kept copy
 * written in the first.  peak (may be NULL) gets the most chunks each tier held. */
int pol_walk(const pol_input_t *in, const pol_index_t *ix, const pol_plan_t *p,
             char *err, size_t errlen, uint64_t peak[POL_NTIERS], int passes);

/* ---------------------------------------------------------------- replay.c */

/* pol_replay on an index, the plan walked first (pol_walk's -EINVAL).  With stop_ns, the
 * replay gives up, returning 1, as soon as iter_ns is known to be no less than stop_ns
 * (INFINITY: never); r is then incomplete. */
int pol_replay_ix(const pol_input_t *in, const pol_index_t *ix, const pol_plan_t *p,
                  pol_result_t *r, double stop_ns);

#endif
