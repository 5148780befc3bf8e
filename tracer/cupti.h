/* SPDX-License-Identifier: MIT */
/*
 * cupti.h - device timings from CUPTI's activity API, loaded with dlopen.
 *
 * trc_cupti_open loads libcupti (never linked), subscribes (failing when another tool already
 * did: a profiler is running), and registers activity buffers.  While enabled, kernel, memcpy
 * and memset activity is collected with external correlation: the caller pushes its own
 * operation id around each launch, copy or memset (trc_cupti_push / trc_cupti_pop), and every
 * completed activity record is reported to the sink as (op id, start, end) on CUPTI's clock.
 * The sink is called from CUPTI's buffer-completion callback: it must not call CUDA (DESIGN.md,
 * invariant 7) and must be thread-safe.  Records CUPTI dropped (no buffer room) are counted,
 * from its global queue and from the context and stream queues the caller watches.
 */
#ifndef ELIXIR_TRACE_CUPTI_H
#define ELIXIR_TRACE_CUPTI_H

#include <stddef.h>
#include <stdint.h>

typedef struct trc_cupti trc_cupti_t;

/* kind: 0 kernel, 1 memcpy, 2 memset.  Called once per piece of device work done under a
 * pushed id (every kernel of a graph launched under one id reports that id); work without an
 * id, or whose times CUPTI could not collect, is not reported.  An activity whose external
 * correlation record never comes (or the reverse) is forgotten after some thousands more. */
typedef void (*trc_cupti_sink_t)(void *ctx, uint64_t op, int kind, uint64_t start, uint64_t end);

/* lib: a path or soname to dlopen; NULL tries "libcupti.so" then "libcupti.so.13".
 * -ENOENT: no library (or a symbol is missing); -EBUSY: another subscriber; -EIO: other CUPTI
 * error; -EINVAL: no sink.  why (when not NULL) receives one line saying what happened (on
 * success: the library's path).  One client at a time per process (CUPTI's own rule). */
int trc_cupti_open(const char *lib, trc_cupti_sink_t sink, void *ctx, trc_cupti_t **c,
                   char *why, size_t why_len);
/* Turns kernel, memcpy, memset and external-correlation activity on (1) or off (0). Turning
 * it off flushes what was collected.  -EIO when CUPTI refuses a kind (none is left on). */
int trc_cupti_enable(trc_cupti_t *c, int on);
/* External correlation of the calling thread's next CUDA call(s). */
void trc_cupti_push(trc_cupti_t *c, uint64_t op);
void trc_cupti_pop(trc_cupti_t *c);
/* CUPTI's clock, ns (cuptiGetTimestamp). */
uint64_t trc_cupti_now(trc_cupti_t *c);
/* Bytes of each activity buffer handed to CUPTI from now on (0: the default, 1 MiB).  CUPTI
 * drops a record that does not fit one. */
void trc_cupti_buffer_size(size_t bytes);
/* Queues of dropped-record counts watched besides CUPTI's global one, at most. */
#define TRC_CUPTI_MAX_QUEUES 4096
/* CUPTI counts the records it drops per context and stream (cuptiActivityGetNumDroppedRecords):
 * ctx (a CUcontext) and stream (its id, cuStreamGetId's) are read too from now on.  Once per
 * queue is enough; the same one again is ignored. */
void trc_cupti_watch(trc_cupti_t *c, void *ctx, uint32_t stream);
/* Records CUPTI dropped since the last call (0 where the library cannot tell): the global
 * queue's and the watched ones', read now unless the client is detached (detaching reads them
 * a last time, after its flush). */
uint64_t trc_cupti_dropped(trc_cupti_t *c);
/* Delivers every completed record to the sink (cuptiActivityFlushAll). */
int trc_cupti_flush(trc_cupti_t *c);
/* Disables, flushes, unsubscribes, and detaches CUPTI from the process (cuptiFinalize, where
 * the library has it), after which nothing may call into CUPTI: not even trc_cupti_now.
 * Another tool may subscribe then.  Once is enough; close does it if it was not done. */
void trc_cupti_detach(trc_cupti_t *c);
/* Detaches (above) and frees the client; the library stays loaded. */
void trc_cupti_close(trc_cupti_t *c);

#endif
