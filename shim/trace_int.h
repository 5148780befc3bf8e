/* SPDX-License-Identifier: MIT */
/*
 * trace_int.h - what trace.c (the recording), trace_name.c (the file's name) and trace_time.c
 * (device times of the profiled iterations) share.  Nothing else includes it.
 */
#ifndef ELIXIR_TRACE_INT_H
#define ELIXIR_TRACE_INT_H

#include "shim.h"
/* By path: CUDA's include directory, searched before tracer/, has a cupti.h of its own. */
#include "../tracer/cupti.h"
#include "../tracer/record.h"

typedef uint64_t (*trace_clock_t)(void);

/* ---------------------------------------------------------------- trace.c */

/* The recorder while recording (set before shim_trace_on, cleared after it). */
extern trc_rec_t *shim_trace_rec;
/* Records ev unless the level drops its type (ELIXIR_TRACE_LEVEL after the profiled
 * iterations); ev->time must be set. */
void shim_trace_emit(const trc_event_t *ev);

/* For the other files' hooks: enter returns 1 while recording (device described when first
 * seen; shim_trace_exit must follow), 0 when not recording. */
int shim_trace_enter(int device);
void shim_trace_exit(void);

/* ---------------------------------------------------------------- trace_plan.c */

/* Emits a MAPPING record for every device with remaps since its last one (an iteration mark,
 * and at exit while the recorder is still open). */
void shim_trace_mapping_flush(void);

/* ---------------------------------------------------------------- trace_name.c */

/* The trace file's n-th name from the ELIXIR_TRACE pattern into out (cap bytes): %p is the
 * process id, %h the host name, %% a '%'; n > 0 puts ".n" before the extension of the file's
 * name (the names tried when the previous ones exist).  0 or -ENAMETOOLONG. */
int shim_trace_name(const char *pattern, unsigned n, char *out, size_t cap);

/* ---------------------------------------------------------------- trace_time.c */

/* Chooses where device times come from (ELIXIR_CUPTI; CUPTI's activity or CUDA events) and
 * says so in the log, once.  elapsed: the driver's cuEventElapsedTime (NULL: no events
 * timing); base: the trace's clock until now, which carries CUPTI's on once it is retired.
 * Returns CUPTI's clock when CUPTI is in use, else NULL. */
trace_clock_t shim_timing_open(PFN_cuEventElapsedTime_v2000 elapsed, trace_clock_t base);
/* The profiled iterations begin (1) or end (0). */
void shim_timing_window(int open);
/* Around the driver call of operation op on stream s (hook h) of context ctx (NULL: the
 * current one): before returns a handle for after (NULL when not timed). */
void *shim_timing_before(uint64_t op, CUstream s, shim_hook_t h, CUcontext ctx);
void shim_timing_after(void *handle, CUresult r, CUstream s, shim_hook_t h);
/* The copy of a planned move (id: its move id) on stream s of context ctx, timed by a pair of
 * events whatever the operations' source, when ctx has a fresh reference; else NULL, and the
 * next poll makes one (never waits: called under residency's lock).  after records the second
 * event (handle not NULL); the pair's TIMING record names the move id. */
void *shim_timing_move_before(uint64_t id, CUcontext ctx, CUstream s);
void shim_timing_move_after(void *handle, CUresult r, CUstream s);
/* For trace_plan.c: a new id from the operation id counter (0 when not recording). */
uint64_t shim_trace_new_id(void);
/* Records the times of operations whose events have completed (never waits); nothing to do
 * while shim_timing_pending (event pairs not yet read) is 0, which callers test inline. */
extern _Atomic unsigned shim_timing_pending;
void shim_timing_poll(void);
/* Before context ctx, or when ctx is NULL the primary context of device dev, may be destroyed:
 * the pairs of those contexts (of every context of dev, for a primary one) are waited for
 * and read, and their events and streams destroyed while the contexts exist; a context that
 * lives on gets new ones when it is timed again. */
void shim_timing_ctx_gone(CUcontext ctx, int dev);
/* A stream is being destroyed: its handle may name another stream from now on. */
void shim_timing_stream_gone(void);
/* Once the profiled iterations' records have all come (an iteration after them): CUPTI's
 * records flushed, its subscription given up, and its clock replaced, since reading it costs
 * a call into the library per event; the client stays open, as a thread may be reading its
 * clock.  Returns the clock to use from now on (CUPTI's last time carried on by the
 * monotonic clock), or NULL to keep the current one. */
trace_clock_t shim_timing_retire(void);
/* At exit: the last times (waiting for their events), then CUPTI retired and closed; returns
 * the clock to use from now on, or NULL to keep the current one. */
trace_clock_t shim_timing_stop(void);
void shim_timing_after_fork(void);

#endif
