/* SPDX-License-Identifier: MIT */
/*
 * rec_int.h - internal to tracer/: what record.c and stack.c need from each other.
 *
 * The recorder (record.c) owns one call-stack cache per recorder, made and freed by stack.c;
 * stack.c interns the frames it resolves through the recorder, under the recorder's intern
 * lock, so that the STACK record reaches the file before any event that uses its id.
 */
#ifndef ELIXIR_TRACE_REC_INT_H
#define ELIXIR_TRACE_REC_INT_H

#include "record.h"

typedef struct trc_stk trc_stk_t;

/* ------------------------------------------------------------------ stack.c */

/* A recorder's stack cache (raw return addresses -> stack id); NULL when out of memory. */
trc_stk_t *trc_stk_new(void);
void trc_stk_free(trc_stk_t *s);

/* ------------------------------------------------------------------ record.c */

trc_stk_t *trc_rec_stk(trc_rec_t *rec);
/* 0 while recording, else why not: the first write error, or -ECANCELED once abandoned. */
int trc_rec_status(const trc_rec_t *rec);
/* Interns resolved frames (module string ids from trc_rec_string): the stack id (> 0), the
 * STACK record written to the file before this returns. */
long trc_rec_intern_stack(trc_rec_t *rec, const trc_frame_t *frames, uint32_t depth);
/* The same with Python frames too (their string ids from trc_rec_string). */
long trc_rec_intern_stack_py(trc_rec_t *rec, const trc_stack_t *s);

#endif
