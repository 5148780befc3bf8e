/* SPDX-License-Identifier: MIT */
/*
 * record.h - the recorder: many threads append events to one trace file cheaply.
 *
 * Each thread encodes its events into a buffer of its own (no lock on the hot path); a full
 * buffer, or one older than the flush interval, is handed to a writer thread that appends it
 * to the file.  Strings and call stacks are interned under one lock and their table records
 * are written to the file at once, so a definition always precedes the buffers that use it
 * (tracer/FORMAT.md).  Every buffer starts with a TIME_BASE record, which resets the delta
 * bases.  A crash leaves a readable file up to the last buffer written.
 *
 * Call sites are captured with libunwind (unw_backtrace) and recorded as (module, offset)
 * frames; the module map comes from dl_iterate_phdr and is refreshed when an address is in no
 * known module (a library loaded later).  Symbols are resolved when the trace is read.
 *
 * Every function returns 0 (or an id / a count) on success and a negative errno on failure.
 * All are safe to call from any thread; none makes a CUDA call.
 */
#ifndef ELIXIR_TRACE_RECORD_H
#define ELIXIR_TRACE_RECORD_H

#include "pyframes.h"
#include "trace.h"

typedef struct trc_rec trc_rec_t;

typedef struct trc_rec_config {
    uint32_t flags;                    /* TRC_FLAG_* for the header */
    size_t buffer_bytes;               /* per-thread buffer, 256 B to 4 MiB; 0: 64 KiB */
    uint32_t flush_ms;                 /* hand over a buffer at least this often; 0: 200 ms */
    uint64_t (*clock)(void);           /* event times in ns; NULL: CLOCK_MONOTONIC */
    /* Called once, by whichever thread met it, when a write error (disk full, file too large,
     * I/O error: the negative errno) turned recording off; NULL: none.  No lock of the
     * recorder is held, but it must not call the recorder. */
    void (*on_error)(int err);
} trc_rec_config_t;

/* Creates the file as trc_writer_open does (%p = pid, 0600, never overwrites: -EEXIST) and
 * starts the writer thread.  -EINVAL for a buffer size out of range. */
int trc_rec_open(const char *path, const trc_rec_config_t *cfg, trc_rec_t **rec);
/* The recorder's clock (cfg->clock or CLOCK_MONOTONIC), in ns. */
uint64_t trc_rec_now(const trc_rec_t *rec);
/* Appends one event to the calling thread's buffer.  ev->time is used as given.  No lock is
 * taken, except when a full buffer is handed over (then it waits while more than 64 MiB is
 * queued for the file).  -EINVAL for a table or control type or a value the format cannot
 * hold; after a write error, that error; after trc_rec_abandon, -ECANCELED. */
int trc_rec_event(trc_rec_t *rec, const trc_event_t *ev);
/* Interns a string: its id (> 0).  Hot callers should cache the id. */
long trc_rec_string(trc_rec_t *rec, const char *s);
/* Captures the caller's stack (skipping `skip` innermost frames, 0 to 64; at most `depth`
 * frames, capped at TRC_MAX_DEPTH) and interns it: its id (> 0), or 0 when nothing was
 * captured.  A return address in no loaded object (JIT code) is recorded as module 0 with
 * the absolute address as its offset. */
long trc_rec_stack(trc_rec_t *rec, int skip, int depth);
/* The same, with the Python frames py[0..npy) (read by the caller with trc_py_capture;
 * npy <= TRC_PY_DEPTH) as the call site's Python stack: its id, or 0 when there is neither
 * a native nor a Python frame. */
long trc_rec_stack_py(trc_rec_t *rec, int skip, int depth, const trc_pyraw_t *py, int npy);
/* Hands the calling thread's buffer to the writer now. */
void trc_rec_flush_thread(trc_rec_t *rec);
/* Writes every thread's pending events (buffers of exited threads included) and waits until
 * they are on the file.  Threads still appending keep their current buffer. */
int trc_rec_flush(trc_rec_t *rec);
/* Events recorded (accepted by trc_rec_event), bytes written to the file so far. */
uint64_t trc_rec_events(const trc_rec_t *rec);
uint64_t trc_rec_bytes(const trc_rec_t *rec);
/* Flushes everything, writes END, stops the writer and frees; the first error seen, if any.
 * No thread may append after this begins. */
int trc_rec_close(trc_rec_t *rec);
/* In a forked child: forgets the parent's recorder without touching its file or threads
 * (frees nothing that another thread may hold, takes no lock); the child records nothing more:
 * every later call returns -ECANCELED or does nothing.  The child keeps the descriptor
 * (close-on-exec) and the memory. */
void trc_rec_abandon(trc_rec_t *rec);

#endif
