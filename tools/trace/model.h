/* SPDX-License-Identifier: MIT */
/*
 * model.h - a whole trace loaded into memory, in the shape elixir-trace's commands need.
 *
 * tm_load reads a trace file with the tracer's reader and keeps every event in arrays in file
 * order, resolved: allocations with their free time and call site, device operations (launches,
 * copies, memsets, collectives) with their device times from TIMING records, migrations,
 * eviction decisions, iteration marks, the per-tier memory series of each device, and how many
 * device-time records the timing source lost (an operation that lost its record has no
 * times: none are made up for it).  Strings
 * and stacks stay owned by the model (the reader is kept open until tm_free).  Every command
 * and exporter works on this model and nothing else.
 */
#ifndef ELIXIR_TRACE_MODEL_H
#define ELIXIR_TRACE_MODEL_H

#include <stdint.h>
#include <stdio.h>

#include "../../tracer/trace.h"

#define TM_LIVE UINT64_MAX             /* t_free of an allocation never freed */
/* Distinct devices a trace may name (libelixir.so records at most 16); a trace naming more
 * is refused as corrupt, so that work per device stays bounded. */
#define TM_MAX_DEVICES 1024

typedef struct tm_alloc {
    uint64_t id, addr, size;
    int32_t device;                    /* TRC_DEVICE_HOST for pinned host memory */
    uint64_t t_alloc, t_free;          /* t_free: TM_LIVE when never freed */
    const trc_stack_t *stack;          /* NULL: no call site recorded */
} tm_alloc_t;

/* A launch, copy, memset or collective. */
typedef struct tm_op {
    trc_type_t type;                   /* TRC_EV_LAUNCH, _COPY, _MEMSET or _NCCL */
    uint64_t id;                       /* launch / operation id; 0 when none */
    uint64_t time;                     /* when it was enqueued (recorder clock) */
    int32_t device;
    uint64_t stream;
    const char *name;                  /* kernel (demangled when a C++ name) or collective
                                        * name; "" for copies, memsets */
    uint32_t copy_kind;                /* trc_copy_kind_t, copies only */
    uint64_t bytes;                    /* copies, memsets, collectives */
    uint64_t src, dst;                 /* copies: source and destination addresses; memsets:
                                        * dst; collectives: send (src) and receive (dst) */
    int has_times;                     /* device start/end known (span or TIMING) */
    uint64_t start, end;
    int timed_by_timing;               /* the times come from TIMING records, not the
                                        * operation's own (its span) */
    uint32_t timing_source;            /* when timed_by_timing: the last one's source, any
                                        * u32 (a source this version does not know included) */
    uint32_t nallocs;
    const uint64_t *allocs;            /* allocation ids a launch may touch */
    const uint64_t *offsets;           /* per allocation, the lowest offset of the launch's
                                        * pointers into it (1.8; 0 in older traces) */
} tm_op_t;

typedef struct tm_migration {
    uint64_t time;
    trc_migration_t m;
    int timed;                         /* start and end are its copy's device times, from a
                                        * TIMING record naming its move id (1.5) */
} tm_migration_t;

typedef struct tm_eviction {
    uint64_t time;
    trc_eviction_t e;
} tm_eviction_t;

typedef struct tm_iteration {
    uint64_t time, index;
} tm_iteration_t;

typedef struct tm_memory {
    uint64_t time;
    int32_t device;
    uint64_t bytes[TRC_TIERS];
} tm_memory_t;

/* 1.5: the planned policy's records, with their times. */
typedef struct tm_plan {
    uint64_t time;
    trc_plan_t p;
} tm_plan_t;

typedef struct tm_follow {
    uint64_t time;
    trc_follow_t f;
} tm_follow_t;

typedef struct tm_mapping {
    uint64_t time;
    trc_mapping_t m;
} tm_mapping_t;

typedef struct tm_guard {         /* 1.6 */
    uint64_t time;
    trc_guard_t g;
} tm_guard_t;

typedef struct tm_sync {         /* 1.7 */
    uint64_t time;
    trc_sync_t s;
} tm_sync_t;

typedef struct tm_device {
    int32_t device;
    const char *name;
    uint64_t total_mem;
    uint32_t cc_major, cc_minor, sm_count;
    uint64_t peak[TRC_TIERS];          /* highest bytes per tier seen in the memory series */
} tm_device_t;

typedef struct tm_option {
    const char *name, *value;
} tm_option_t;

typedef struct tm_trace {
    const char *path;
    trc_header_t header;
    int complete;                      /* the END record was read */
    int partial;                       /* loaded with tm_load(..., partial=1) after an error */
    char warning[512];                 /* non-fatal: why `partial` or `!complete`; "" if none */
    int has_process;
    trc_process_t process;
    tm_device_t *devices;       size_t ndevices;
    tm_option_t *options;       size_t noptions;
    tm_alloc_t *allocs;         size_t nallocs;
    tm_op_t *ops;               size_t nops;
    tm_migration_t *migrations; size_t nmigrations;
    tm_eviction_t *evictions;   size_t nevictions;
    tm_iteration_t *iterations; size_t niterations;
    tm_memory_t *memory;        size_t nmemory;
    tm_memory_t *budgets;       size_t nbudgets;   /* BUDGET records (1.2), in file order */
    tm_plan_t *plans;           size_t nplans;     /* PLAN records (1.5), in file order */
    tm_follow_t *follows;       size_t nfollows;   /* FOLLOW records (1.5) */
    tm_mapping_t *mappings;     size_t nmappings;  /* MAPPING records (1.5) */
    tm_guard_t *guards;         size_t nguards;    /* GUARD records (1.6) */
    tm_sync_t *syncs;           size_t nsyncs;     /* SYNC records (1.7), in file order */
    uint64_t t_first, t_last;          /* earliest and latest time of any event; t_last
                                        * also covers the end of device work (operations'
                                        * and migrations' end times) */
    uint64_t events;                   /* events read */
    uint64_t dropped_cupti;            /* device-time records CUPTI dropped (DROPPED, 1.3) */
    uint64_t dropped_other;            /* ... that another timing source lost */
    void *priv;                        /* the reader, indexes, owned copies */
} tm_trace_t;

/* Loads path.  0 on success; on failure a negative errno and `err` (of err_len bytes) says
 * "PATH: offset N: reason" or "PATH: strerror".  With partial=1, a truncated or corrupt file
 * is loaded up to the last whole record before the error and the reason is kept in
 * t->warning instead (the result is 0 unless nothing could be read at all: not a trace, a
 * newer major version, a missing file).  tm_free must be called after a 0 return. */
int tm_load(const char *path, int partial, tm_trace_t *t, char *err, size_t err_len);
/* This process's own key for the hash tables built from a trace (odd, never 0), so that a
 * trace whose ids or names were chosen to share slots cannot make loading it quadratic. */
uint64_t tm_hash_key(void);
void tm_free(tm_trace_t *t);

/* Look-ups by id, O(1) amortised; NULL when absent. */
const tm_alloc_t *tm_alloc_by_id(const tm_trace_t *t, uint64_t id);
const tm_op_t *tm_op_by_id(const tm_trace_t *t, uint64_t id);
/* A device's record, or NULL. */
const tm_device_t *tm_device(const tm_trace_t *t, int32_t device);
/* Name of a tier ("gpu", "peer", "host", "nvme") or of a copy kind ("HtoD", ...). */
const char *tm_tier_name(uint32_t tier);
const char *tm_copy_kind_name(uint32_t kind);
/* Name of a TIMING record's source as FORMAT.md numbers them ("cupti", "events"), or
 * "unknown (N)" for one it does not define (readers pass those through); in buf. */
const char *tm_timing_source_name(uint32_t source, char buf[32]);

#endif
