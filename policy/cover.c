/* SPDX-License-Identifier: MIT */
/*
 * cover.c - the operations after which an executor records an event: each that is the last
 * use of a chunk before a move of the plan takes that chunk away from the GPU.
 *
 * A move away waits for its chunk's last use: its copy starts after it, and the GPU memory it
 * frees is handed out after it.  An executor that records uses lazily (the shim counts them
 * and records an event only when something must wait) records that event when the wait
 * comes, which is after everything issued since: a host that ran ahead of the GPU then waits
 * for all of it, where the cost model (replay.c) has the move wait for the use alone.  An
 * event recorded right after each operation marked here covers that use and nothing later.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pol_int.h"

/* For each chunk of move m away from the GPU, the operation that used it last (last[], by
 * global chunk number from base[]) is marked. */
static void mark_move(const pol_move_t *m, const uint64_t *base, const uint32_t *last,
                      uint8_t *after)
{
    if (m->from != POL_GPU)
        return;
    for (uint32_t k = 0; k < m->nchunks; k++) {
        uint32_t i = last[base[m->buf] + m->chunk + k];
        if (i != UINT32_MAX)
            after[i] = 1;
    }
}

/* Operation i's references: it is the last use of every chunk they reach. */
static void use_op(const pol_input_t *in, uint32_t i, const uint64_t *base, uint32_t *last)
{
    const pol_op_t *op = &in->ops[i];
    for (uint32_t r = op->ref; r < op->ref + op->nref; r++) {
        const pol_ref_t *rf = &in->refs[r];
        for (uint32_t k = 0; k < rf->nchunks; k++)
            last[base[rf->buf] + rf->chunk + k] = i;
    }
}

/* (Chunks numbered as index.c numbers them, buffer after buffer, without building an index:
 * pol_index_build also computes the bounds, which this does not need.) */
int pol_cover_after(const pol_input_t *in, const pol_plan_t *pl, uint8_t *after)
{
    uint64_t *base = malloc((in->nbufs + 1) * sizeof(*base));
    if (!base)
        return -ENOMEM;
    base[0] = 0;
    for (size_t b = 0; b < in->nbufs; b++)
        base[b + 1] = base[b] + pol_chunks_of(in->bufs[b].bytes, in->m.chunk);
    uint32_t *last = malloc((base[in->nbufs] ? base[in->nbufs] : 1) * sizeof(*last));
    if (!last) {
        free(base);
        return -ENOMEM;
    }
    memset(last, 0xff, (base[in->nbufs] ? base[in->nbufs] : 1) * sizeof(*last));
    memset(after, 0, in->nops);
    /* (a chunk not used yet in the iteration was used last in the one before: its uses
     * first, as the plan repeats) */
    for (uint32_t i = 0; i < in->nops; i++)
        use_op(in, i, base, last);
    for (uint32_t i = 0; i < in->nops; i++) {
        for (uint32_t k = pl->op_first[i]; k < pl->op_after[i]; k++)
            mark_move(&pl->moves[k], base, last, after);
        use_op(in, i, base, last);
        for (uint32_t k = pl->op_after[i]; k < pl->op_first[i + 1]; k++)
            mark_move(&pl->moves[k], base, last, after);
    }
    free(last);
    free(base);
    return 0;
}
