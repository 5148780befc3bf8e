/* SPDX-License-Identifier: MIT */
/*
 * cupti_sim.h - internal interface of the libcupti.so stand-in.
 *
 * The stand-in implements the subset of CUPTI's public activity API that Elixir's tracer uses,
 * with the record structures of the real CUDA 13 headers, on top of the simulator's activity
 * interface (simcuda.h): the simulator tags kernels, copies and memsets on the submitting
 * thread and reports them, with virtual start and end, from its executor.  Records are queued
 * (buffer.c) and written into the client's buffers by a delivery thread or by
 * cuptiActivityFlushAll, never by the executor, so that no client callback runs while the
 * simulator waits.  Prototypes are grouped under the file that defines them.
 */
#ifndef SIM_CUPTI_SIM_H
#define SIM_CUPTI_SIM_H

#include <cupti.h>
#include <stddef.h>
#include <stdint.h>

#include "simcuda.h"

#define CUPTI_EXPORT __attribute__((visibility("default")))

/* ------------------------------------------------------------------------- activity.c */

#define SIM_CUPTI_BIT(kind) (1ull << (unsigned)(kind))

/* The activity kinds enabled now, one bit per CUpti_ActivityKind. */
uint64_t sim_cupti_enabled(void);
/* cuptiFinalize: every kind off (the stand-in detaches from the simulator). */
void sim_cupti_activity_off(void);

/* ------------------------------------------------------------------------- external.c */

/* Whether the calling thread has an external correlation id pushed, of any kind. */
int sim_cupti_ext_pushed(void);
/* Queue one CUpti_ActivityExternalCorrelation record per external kind with an id pushed on
 * the calling thread (the innermost id), for the API call `correlation`. */
void sim_cupti_ext_emit(uint32_t correlation);

/* ------------------------------------------------------------------------- buffer.c */

/* Size of a record of this kind as the stand-in writes it; 0 for kinds it never writes. */
size_t sim_cupti_record_size(CUpti_ActivityKind kind);
/*
 * Queue one complete record (size from sim_cupti_record_size) for delivery; any thread, at
 * most a short internal lock.  Without registered buffer callbacks it is counted as dropped.
 */
void sim_cupti_emit(const void *record, size_t size);
/* cuptiFinalize: queued records delivered, then the buffer callbacks forgotten. */
void sim_cupti_buffers_forget(void);

#endif /* SIM_CUPTI_SIM_H */
