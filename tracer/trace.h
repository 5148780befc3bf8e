/* SPDX-License-Identifier: MIT */
/*
 * trace.h - the trace file: event types, the encoder, the append-only writer and the reader.
 *
 * The format is described in tracer/FORMAT.md.  One set of event structs serves both ends:
 * the writer reads the id fields (string ids, stack ids) and ignores the resolved pointers;
 * the reader fills both.  Strings and stacks are interned by the writer (trc_writer_string,
 * trc_writer_stack), which emits the table record the first time a value is seen, so events
 * carry small ids.  The encoder (trc_encode_*) writes one record into a caller-provided buffer
 * with a caller-owned delta context, so per-thread buffers can be built without the writer.
 *
 * Every function returns 0 (or a count) on success and a negative errno value on failure.
 * Reader errors: -ENOEXEC not a trace (bad magic), -EPROTONOSUPPORT newer major version,
 * -ENODATA truncated, -EBADMSG corrupt; trc_reader_error() gives "offset N: reason".
 */
#ifndef ELIXIR_TRACE_H
#define ELIXIR_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TRC_MAGIC         "ELXTRACE"
#define TRC_VERSION_MAJOR 1
#define TRC_VERSION_MINOR 10
#define TRC_HEADER_LEN    32          /* of this version; a reader skips a longer header */
#define TRC_MAX_RECORD    (1u << 20)  /* largest record payload a reader accepts */
#define TRC_MAX_DEPTH     256         /* deepest call stack (native frames; Python frames too) */
#define TRC_MAX_STRING    65535       /* longest string, in bytes */

/* Header flags (informational: a reader ignores flags it does not know). */
#define TRC_FLAG_VIRTUAL_TIME 0x1u    /* event times are the simulator's virtual clock */

/* Record types.  Values below 16 are tables and control; 16 and up are events. */
typedef enum trc_type {
    TRC_REC_STRING = 1,
    TRC_REC_STACK = 2,
    TRC_REC_TIME_BASE = 3,
    TRC_REC_END = 4,
    TRC_EV_PROCESS = 16,
    TRC_EV_DEVICE = 17,
    TRC_EV_OPTIONS = 18,
    TRC_EV_ALLOC = 19,
    TRC_EV_FREE = 20,
    TRC_EV_LAUNCH = 21,
    TRC_EV_COPY = 22,
    TRC_EV_MEMSET = 23,
    TRC_EV_NCCL = 24,
    TRC_EV_MIGRATION = 25,
    TRC_EV_EVICTION = 26,
    TRC_EV_ITERATION = 27,
    TRC_EV_TIMING = 28,               /* 1.1: device times of an earlier launch, copy or memset */
    TRC_EV_MEMORY = 29,               /* 1.1: bytes resident per tier on one device */
    TRC_EV_BUDGET = 30,               /* 1.2: the budgets per tier of one device */
    TRC_EV_DROPPED = 31,              /* 1.3: device-time records a timing source lost */
    TRC_EV_PLAN = 32,                 /* 1.5: the planned policy made a plan */
    TRC_EV_FOLLOW = 33,               /* 1.5: one iteration followed a plan */
    TRC_EV_MAPPING = 34,              /* 1.5: host time in the shim's mapping calls */
    TRC_EV_GUARD = 35,                /* 1.6: the guard's verdict on a plan */
    TRC_EV_SYNC = 36,                 /* 1.7: a host synchronisation of the program */
} trc_type_t;

typedef enum trc_tier { TRC_TIER_GPU, TRC_TIER_PEER, TRC_TIER_HOST, TRC_TIER_NVME } trc_tier_t;
#define TRC_TIERS 4

typedef enum trc_copy_kind {
    TRC_COPY_UNKNOWN, TRC_COPY_HTOD, TRC_COPY_DTOH, TRC_COPY_DTOD, TRC_COPY_HTOH, TRC_COPY_PEER
} trc_copy_kind_t;

/* Device number meaning "the host" (pinned host allocations). */
#define TRC_DEVICE_HOST (-1)

typedef struct trc_header {
    uint16_t major, minor;
    uint32_t header_len, flags, pid;
    uint64_t created_ns;               /* CLOCK_REALTIME when the file was created */
} trc_header_t;

typedef struct trc_frame {
    uint32_t module_id;                /* string id of the module (shared object path) */
    uint64_t offset;                   /* return address minus the module's load base */
    const char *module;                /* reader only */
} trc_frame_t;

/* 1.4: one frame of the Python interpreter's stack at the call: source file, function
 * (qualified name) and line (0: not known). */
typedef struct trc_pyframe {
    uint32_t file_id, func_id;         /* string ids */
    uint32_t line;
    const char *file, *func;           /* reader only */
} trc_pyframe_t;

typedef struct trc_stack {
    uint32_t id, depth;
    const trc_frame_t *frames;         /* native frames, innermost first */
    uint32_t pydepth;                  /* 1.4: Python frames, innermost first (0: none) */
    const trc_pyframe_t *pyframes;
} trc_stack_t;

/* Start and end of the work on the device, when known (flag has_times). */
typedef struct trc_span {
    int has_times;
    uint64_t start, end;               /* end >= start */
} trc_span_t;

typedef struct trc_process {
    uint32_t pid, ppid;
    uint32_t exe_id, cmdline_id, host_id;
    const char *exe, *cmdline, *host;
} trc_process_t;

typedef struct trc_device {
    int32_t device;
    uint32_t name_id;
    uint64_t total_mem;
    uint32_t cc_major, cc_minor, sm_count;
    const char *name;
} trc_device_t;

typedef struct trc_option {
    uint32_t name_id, value_id;
    const char *name, *value;
} trc_option_t;

typedef struct trc_options {
    uint32_t count;
    const trc_option_t *opts;          /* reader: valid until the next trc_reader_next */
} trc_options_t;

typedef struct trc_alloc {
    uint64_t id;                       /* allocation id, unique in the trace */
    int32_t device;                    /* or TRC_DEVICE_HOST */
    uint64_t addr, size;
    uint32_t stack_id;                 /* 0: no call site */
    const trc_stack_t *stack;          /* reader only; NULL when stack_id is 0 */
} trc_alloc_t;

typedef struct trc_free {
    uint64_t id;
} trc_free_t;

typedef struct trc_launch {
    uint64_t id;                       /* launch id (CUPTI external correlation id) */
    uint32_t func_id;                  /* string id of the function name */
    uint64_t stream;                   /* the recorder's small stream number */
    int32_t device;
    trc_span_t span;
    uint32_t nallocs;
    const uint64_t *allocs;            /* allocation ids it may touch; reader: until next */
    const uint64_t *offsets;           /* 1.8: per allocation, the lowest byte offset of the
                                        * launch's pointers into it (NULL: all 0); reader:
                                        * until next */
    const char *func;
} trc_launch_t;

typedef struct trc_copy {
    uint32_t kind;                     /* trc_copy_kind_t */
    uint64_t src, dst, bytes, stream;
    int32_t device;
    trc_span_t span;
    uint64_t id;                       /* 1.1: operation id (shares the launch id counter); 0 none */
} trc_copy_t;

typedef struct trc_memset {
    uint64_t dst, bytes, stream;
    uint32_t value, elem_size;
    int32_t device;
    trc_span_t span;
    uint64_t id;                       /* 1.1: operation id (shares the launch id counter); 0 none */
} trc_memset_t;

typedef struct trc_nccl {
    uint32_t op_id;                    /* string id of the collective ("allReduce", ...) */
    uint64_t send, recv, bytes, comm, stream;
    int32_t peer;                      /* root or peer rank; -1 when none */
    int32_t device;
    trc_span_t span;
    const char *op;
} trc_nccl_t;

typedef struct trc_migration {
    uint64_t chunk, bytes;
    uint32_t from, to;                 /* trc_tier_t */
    int32_t device;
    uint64_t start, end;               /* end >= start */
    uint64_t cause;                    /* 1.1: id of the launch/copy/memset that needed it; 0 */
    uint64_t flags;                    /* 1.5: TRC_MIG_*; 0 in older files */
    uint64_t move;                     /* 1.5: id of the shim's copy that made it (TIMING
                                        * records may give its device times); 0: none */
} trc_migration_t;

/* 1.5: MIGRATION flags (a reader passes the bits it does not know through). */
#define TRC_MIG_PLANNED 0x1u           /* issued by the plan: an asynchronous move on a copy
                                        * stream; start: when its copy was issued, end: when
                                        * the shim saw it complete (the copy ran in between) */

typedef struct trc_eviction {
    uint64_t chunk, alloc, bytes;
    uint32_t from, to;                 /* trc_tier_t */
    uint32_t reason;                   /* recorder-defined reason code */
} trc_eviction_t;

/* Reason codes of EVICTION records written by the shim (readers pass unknown ones through). */
enum {
    TRC_EVICT_FOR_LAUNCH = 1,          /* room for the chunks a launch needs */
    TRC_EVICT_FOR_COPY = 2,            /* room for a copy's or memset's operands */
    TRC_EVICT_FOR_ALLOC = 3,           /* room for a new allocation */
    TRC_EVICT_PLAN = 4,                /* the planned policy's schedule */
};

typedef struct trc_iteration {
    uint64_t index;
} trc_iteration_t;

/* Where a TIMING record's times come from. */
typedef enum trc_timing_source { TRC_TIMING_CUPTI = 0, TRC_TIMING_EVENTS = 1 } trc_timing_source_t;

/* 1.1: the device start and end of operation `op` (the id of an earlier LAUNCH, COPY or
 * MEMSET record), learnt after the fact from CUPTI activity or from CUDA events. */
typedef struct trc_timing {
    uint64_t op;
    uint32_t source;                   /* trc_timing_source_t */
    uint64_t start, end;               /* end >= start */
} trc_timing_t;

/* 1.1: bytes of one device's managed memory resident in each tier (indexed by trc_tier_t),
 * written by the shim after every change (allocation, free, migration). */
typedef struct trc_memory {
    int32_t device;
    uint64_t bytes[TRC_TIERS];
} trc_memory_t;

/* 1.2 (BUDGET, the same fields as MEMORY): the budgets in force from then on, in bytes per
 * tier, written when a device's arena is set up and whenever a budget comes down.  The HOST
 * value is the process's host budget, shared by all its devices; 0: none (a tier not used). */
typedef trc_memory_t trc_budget_t;

/* 1.3 (DROPPED): `count` records of device times that timing source `source` (a
 * trc_timing_source_t; CUPTI only, so far) lost since the previous DROPPED record: the
 * operations they would have timed have no TIMING record from it, and which ones is not
 * known. */
typedef struct trc_dropped {
    uint32_t source;
    uint64_t count;
} trc_dropped_t;

/* 1.5 (PLAN): device `device` made plan number `plan` (1, then 2 after a re-plan, ...) from
 * the iteration its policy profiled (`iteration`, the policy's own count): its size, what
 * its cost model predicts for one iteration (ns; bytes to and from the GPU) and the host
 * time the planning took (ns of real time, not the trace's clock).  1.10: again, the number
 * of the plan this one predicts again, the same moves, with the times of an iteration under
 * it (`iteration`, then); 0 for a plan of its own (and in older traces). */
typedef struct trc_plan {
    int32_t device;
    uint64_t plan, iteration;
    uint64_t ops, buffers, moves;
    uint64_t predicted_ns, bound_ns, compute_ns;
    uint64_t bytes_in, bytes_out;
    uint64_t planning_ns;
    uint64_t again;
} trc_plan_t;

/* 1.5 (FOLLOW): one iteration of device `device` under plan `plan`, written as the next one
 * begins: operations the plan foresaw (matched), those it did not (came, no match), those of
 * the plan that did not come (missed), and the plan's moves issued (moves), their chunks moved
 * and those left to the reactive engine (left).  1.9: partial, 1 for the record of the
 * iteration in progress when the plan's context went or the trace closed (not a whole
 * iteration; 0 in older traces). */
typedef struct trc_follow {
    int32_t device;
    uint64_t plan, iteration;
    uint64_t foreseen, unforeseen, missed;
    uint64_t moves, chunks, left;
    uint64_t partial;
} trc_follow_t;

/* 1.5 (MAPPING): host time in the mapping calls (cuMemUnmap, cuMemMap, cuMemSetAccess) the
 * shim made to move chunks of device `device` since its previous MAPPING record: remaps (one
 * chunk's address given other memory) and their time on the trace's clock, for the plan's
 * moves and for the reactive engine's. */
typedef struct trc_mapping {
    int32_t device;
    uint64_t planned_remaps, planned_ns;
    uint64_t reactive_remaps, reactive_ns;
} trc_mapping_t;

/* 1.6 (GUARD): the guard's verdict (TRC_GUARD_*) on plan `plan` of device `device`, given as
 * iteration `iteration` (the policy's count) began: the shortest of the iterations it judged
 * under the plan (`planned_ns`) against the shortest reactive one since profiling began
 * (`reactive_ns`), both on the trace's clock, and the limit (`limit`, in thousandths of the
 * reactive figure; 0: the guard was off, the plan kept). */
enum { TRC_GUARD_KEPT = 1, TRC_GUARD_DROPPED = 2 };
typedef struct trc_guard {
    int32_t device;
    uint64_t plan, iteration;
    uint32_t verdict;
    uint64_t planned_ns, reactive_ns, limit;
} trc_guard_t;

/* 1.7 (SYNC): the program's host synchronisation returned success: `kind` TRC_SYNC_STREAM
 * (cuStreamSynchronize of stream `stream`, numbered as operations' streams are), _CONTEXT
 * (cuCtxSynchronize: everything of the context current on device `device`), _EVENT
 * (cuEventSynchronize: an event's stream, not known); `device`, the current context's, or -1. */
enum { TRC_SYNC_STREAM = 1, TRC_SYNC_CONTEXT = 2, TRC_SYNC_EVENT = 3 };
typedef struct trc_sync {
    uint32_t kind;
    uint64_t stream;
    int32_t device;
} trc_sync_t;

/* One record as returned by the reader (and accepted by trc_encode_event). */
typedef struct trc_event {
    trc_type_t type;
    uint64_t offset;                   /* reader: byte offset of the record in the file */
    uint64_t time;                     /* ns; for TRC_REC_TIME_BASE the new base */
    union {
        trc_process_t process;
        trc_device_t device;
        trc_options_t options;
        trc_alloc_t alloc;
        trc_free_t free;
        trc_launch_t launch;
        trc_copy_t copy;
        trc_memset_t memset;
        trc_nccl_t nccl;
        trc_migration_t migration;
        trc_eviction_t eviction;
        trc_iteration_t iteration;
        trc_timing_t timing;
        trc_memory_t memory;
        trc_budget_t budget;
        trc_dropped_t dropped;
        trc_plan_t plan;
        trc_follow_t follow;
        trc_mapping_t mapping;
        trc_guard_t guard;
        trc_sync_t sync;
        uint64_t end_count;            /* TRC_REC_END: events the writer emitted */
    } u;
} trc_event_t;

/* ------------------------------------------------------------------ encode.c */

/* Delta state of one record stream: start zeroed; a TIME_BASE record sets the time and resets
 * the other bases to 0 (1.1), so a block that starts with one decodes on its own. */
typedef struct trc_enc {
    uint64_t time, alloc, launch, addr;
} trc_enc_t;

/* Each encoder writes one whole record at buf and returns its length, or -ENOSPC when cap is
 * too small (nothing written, ctx unchanged), or -EINVAL for a value the format cannot hold
 * (end before start, a too-long string, a too-deep stack, a record over TRC_MAX_RECORD). */
int trc_encode_header(void *buf, size_t cap, uint32_t flags, uint32_t pid, uint64_t created_ns);
long trc_encode_string(trc_enc_t *e, void *buf, size_t cap, uint32_t id, const char *s,
                       size_t len);
long trc_encode_stack(trc_enc_t *e, void *buf, size_t cap, uint32_t id,
                      const trc_frame_t *frames, uint32_t depth);
/* 1.4: a stack with Python frames too (pydepth <= TRC_MAX_DEPTH; none written when 0, so
 * that the record is the 1.3 one). */
long trc_encode_stack_py(trc_enc_t *e, void *buf, size_t cap, const trc_stack_t *s);
long trc_encode_event(trc_enc_t *e, void *buf, size_t cap, const trc_event_t *ev);

/* ------------------------------------------------------------------ writer.c */

typedef struct trc_writer trc_writer_t;

/* Creates path (with "%p" replaced by the pid, "%%" by "%"), mode 0600, O_EXCL: an existing
 * file is never overwritten (-EEXIST).  Writes the header at once.  flags: TRC_FLAG_*. */
int trc_writer_open(const char *path, uint32_t flags, trc_writer_t **w);
/* Interns a string / a call stack: returns its id (> 0) or a negative errno; the table
 * record is emitted on first use.  The same content always yields the same id. */
long trc_writer_string(trc_writer_t *w, const char *s);
long trc_writer_stack(trc_writer_t *w, const trc_frame_t *frames, uint32_t depth);
/* 1.4: interns native and Python frames as one stack (s->id ignored; the Python frames'
 * string ids from trc_writer_string).  Equal content, equal id. */
long trc_writer_stack_py(trc_writer_t *w, const trc_stack_t *s);
/* Typed emitters: append one event record to the buffer (flushing when full). */
int trc_emit_process(trc_writer_t *w, uint64_t time, const trc_process_t *p);
int trc_emit_device(trc_writer_t *w, uint64_t time, const trc_device_t *d);
int trc_emit_options(trc_writer_t *w, uint64_t time, const trc_options_t *o);
int trc_emit_alloc(trc_writer_t *w, uint64_t time, const trc_alloc_t *a);
int trc_emit_free(trc_writer_t *w, uint64_t time, const trc_free_t *f);
int trc_emit_launch(trc_writer_t *w, uint64_t time, const trc_launch_t *l);
int trc_emit_copy(trc_writer_t *w, uint64_t time, const trc_copy_t *c);
int trc_emit_memset(trc_writer_t *w, uint64_t time, const trc_memset_t *m);
int trc_emit_nccl(trc_writer_t *w, uint64_t time, const trc_nccl_t *n);
int trc_emit_migration(trc_writer_t *w, uint64_t time, const trc_migration_t *m);
int trc_emit_eviction(trc_writer_t *w, uint64_t time, const trc_eviction_t *e);
int trc_emit_iteration(trc_writer_t *w, uint64_t time, const trc_iteration_t *i);
int trc_emit_timing(trc_writer_t *w, uint64_t time, const trc_timing_t *t);
int trc_emit_memory(trc_writer_t *w, uint64_t time, const trc_memory_t *m);
int trc_emit_budget(trc_writer_t *w, uint64_t time, const trc_budget_t *m);
int trc_emit_dropped(trc_writer_t *w, uint64_t time, const trc_dropped_t *d);
int trc_emit_plan(trc_writer_t *w, uint64_t time, const trc_plan_t *p);
int trc_emit_follow(trc_writer_t *w, uint64_t time, const trc_follow_t *f);
int trc_emit_mapping(trc_writer_t *w, uint64_t time, const trc_mapping_t *m);
int trc_emit_guard(trc_writer_t *w, uint64_t time, const trc_guard_t *g);
int trc_emit_sync(trc_writer_t *w, uint64_t time, const trc_sync_t *s);
int trc_emit_event(trc_writer_t *w, const trc_event_t *ev);
/* Writes the buffered records to the file. */
int trc_writer_flush(trc_writer_t *w);
/* Writes records encoded elsewhere (trc_encode_* with a delta state of their own: the block
 * must start with a TIME_BASE record, else -EINVAL) after the buffered ones, at once; events
 * is the number of events in the block.  A failed write is sticky like any other. */
int trc_writer_append(trc_writer_t *w, const void *records, size_t len, uint64_t events);
/* Bytes written to the file so far plus those buffered; events emitted. */
uint64_t trc_writer_bytes(const trc_writer_t *w);
uint64_t trc_writer_events(const trc_writer_t *w);
/* Emits the END record, flushes, closes and frees; returns the first error seen, if any. */
int trc_writer_close(trc_writer_t *w);

/* ------------------------------------------------------------------ reader.c */

typedef struct trc_reader trc_reader_t;

/* Opens a trace held in memory (not copied: buf must outlive the reader) or a file (read
 * whole).  On -ENOMEM *r is NULL; on any other error *r is set so that trc_reader_error()
 * can say why, and must still be closed. */
int trc_reader_open_mem(const void *buf, size_t len, trc_reader_t **r);
int trc_reader_open_file(const char *path, trc_reader_t **r);
const trc_header_t *trc_reader_header(const trc_reader_t *r);
/* Reads the next event (table records are consumed silently; unknown types are skipped):
 * 1 with *ev filled, 0 at a clean end of data, or a negative errno (sticky). */
int trc_reader_next(trc_reader_t *r, trc_event_t *ev);
/* "offset N: reason" for the last error, or "" when none. */
const char *trc_reader_error(const trc_reader_t *r);
uint64_t trc_reader_error_offset(const trc_reader_t *r);
/* Whether the END record was seen (a trace cut at a record boundary reads cleanly without). */
int trc_reader_complete(const trc_reader_t *r);
/* Look-ups of defined ids: NULL when id is not (yet) defined. */
const char *trc_reader_string(const trc_reader_t *r, uint32_t id);
const trc_stack_t *trc_reader_stack(const trc_reader_t *r, uint32_t id);
void trc_reader_close(trc_reader_t *r);

/* A short name for a record type ("alloc"), or NULL for an unknown one. */
const char *trc_type_name(uint32_t type);

#endif
