/* SPDX-License-Identifier: MIT */
/*
 * plan_input.h - one iteration of a loaded trace as the planner's input (policy/policy.h).
 *
 * `elixir-trace plan` asks the shim's own planner what it would do with a recorded iteration
 * on another machine.  This file chooses the iteration and the device, and turns the trace's
 * operations into pol_op_t (issue order, dense stream numbers, device times), what they reach
 * into pol_ref_t runs of chunks, the allocations they reach into pol_buf_t (keyed by the
 * trace's allocation id; born and dying inside the iteration when the trace says so), and the
 * program's host synchronisations (SYNC records) into pol_sync_t.
 * The machine (capacities, links) is the caller's.
 */
#ifndef ELIXIR_TRACE_PLAN_INPUT_H
#define ELIXIR_TRACE_PLAN_INPUT_H

#include "model.h"
#include "../../policy/policy.h"

/* What to take from the trace. */
typedef struct tp_select {
    int64_t iteration;                 /* iteration index; -1: the closed one with most timings */
    int32_t device;                    /* -1: the device with the most operations in it */
    uint64_t chunk;                    /* bytes per chunk */
} tp_select_t;

/* A launch's allocations with chunks behind its pointers, at most (the shim's BEHIND_SPANS):
 * beyond, it reaches the others whole. */
#define TP_BEHIND_SPANS 8

/* The most chunks an iteration's buffers may come to (32 TiB of 2 MiB chunks): the planner
 * keeps arrays per chunk, so a damaged trace's huge sizes are refused, not planned. */
#define TP_MAX_CHUNKS (1ll << 24)

/* The planner's input and what was chosen; arrays owned (tp_free). */
typedef struct tp_input {
    pol_input_t in;                    /* in.m is left zero: the caller fills the machine */
    int64_t iteration;                 /* the iteration taken */
    int32_t device;
    uint64_t start, end;               /* its window (recorder clock) */
    size_t timed;                      /* operations with device times */
    uint64_t footprint;                /* most bytes its live buffers held at once (chunks) */
    uint64_t unknown_refs;             /* copy or memset operands in no allocation of it */
    pol_op_t *ops;
    pol_ref_t *refs;
    pol_buf_t *bufs;
    pol_sync_t *syncs;
    uint8_t *behind;                   /* per reference: 1 for chunks before the launch's
                                        * lowest pointer into their allocation (tp_fit) */
} tp_input_t;

/* Builds the input.  0, or a negative errno with the reason in err ("no closed iteration",
 * "iteration 7 not in the trace", ...). */
int tp_build(const tm_trace_t *t, const tp_select_t *sel, tp_input_t *out, char *err,
             size_t len);
void tp_free(tp_input_t *x);
/* The chunks behind launches' pointers as the shim profiles them for a GPU of gpu_chunks:
 * POL_NEAR (the planner brings them in or leaves them where they are) where all the launch
 * reaches fits in it, else reached as the rest (the launch runs in place). */
void tp_fit(tp_input_t *x, uint64_t gpu_chunks);

#endif
