/* SPDX-License-Identifier: MIT */
/*
 * policy.h - the computed policy: one profiled iteration in, a plan of moves out.
 *
 * Pure C: no CUDA, no I/O, no locks, no globals.  The shim fills a pol_input_t from the
 * iteration it profiled and executes the plan; elixir-trace fills the same input from a trace
 * file and prints what the plan would do on hardware the user does not have.  Both call the
 * same functions, so a prediction of `elixir-trace plan` is the shim's own.
 *
 * The model.  An iteration is a sequence of operations (launches, copies, memsets, NCCL calls)
 * in the order the host issued them, each on a stream, each with a device time, each reaching
 * chunks of buffers (allocations).  A buffer is divided into chunks of pol_machine_t.chunk
 * bytes; a chunk is the unit that lives in exactly one tier at a time.  The iteration repeats:
 * a plan is cyclic, the residency it leaves at the end of the iteration is the residency it
 * assumes at the start.
 *
 * The plan.  For each operation i, moves[op_first[i] .. op_after[i]) are issued before
 * operation i is enqueued (prefetches, and the evictions that make their room), and
 * moves[op_after[i] .. op_first[i + 1]) right after it (write-backs and evictions whose
 * source's last use is i); op_first[nops] == op_after[nops] == nmoves.  Moves are listed in
 * the order they must take effect.  Every chunk operation i reaches is on POL_GPU when i runs,
 * and at no point does any tier hold more than its capacity, counting chunks in flight at both
 * ends and the copies a chunk keeps (pol_move_t.keep).
 *
 * Kept copies.  A chunk brought to the GPU with keep = 1 leaves its source copy in place (its
 * room in that tier stays held) until the chunk goes back there; while no operation has
 * written the chunk, that copy is current and the eviction back is writeback = 0, a remap with
 * no transfer.  A chunk brought with keep = 0 frees its source room once the copy is done.
 *
 * Buffer identity across iterations is the caller's business (pol_buf_t.key): the shim uses
 * the allocation order within the iteration for buffers born inside it and the arena address
 * for buffers that outlive it (see shim/res_plan.c); elixir-trace uses the trace's allocation ids.
 */
#ifndef ELIXIR_POLICY_H
#define ELIXIR_POLICY_H

#include <stddef.h>
#include <stdint.h>

/* Tiers, fastest first.  The order is part of the trace format (MIGRATE records name them). */
enum pol_tier { POL_GPU, POL_PEER, POL_HOST, POL_NVME, POL_NTIERS };

/* How an operation reaches a chunk.  A kernel's arguments say nothing of what it writes: a
 * launch's references are POL_RW unless the caller has evidence (a copy's source is
 * POL_READ, its destination POL_WRITE; a memset writes).  POL_NEAR with one of those: the
 * operation may reach the chunk but need not have it on the GPU (a launch's chunks behind the
 * pointers it passes into an allocation: it most likely does not touch them, and reaches them
 * where they are if it does).  The plan either brings such chunks in as any other
 * (pol_knobs_t.near = 1) or leaves them where they are (0); the search tries both. */
enum pol_access { POL_READ = 1, POL_WRITE = 2, POL_RW = 3, POL_OVERWRITE = 4 | 2, POL_NEAR = 8 };

/* A buffer of the iteration.  born/dies are operation indexes (-1: allocated before the
 * iteration / still alive after it); a buffer born inside the iteration starts nowhere and
 * needs no prefetch before its first use, one that dies needs no write-back.  The buffer
 * exists for operations born .. dies inclusive; each iteration allocates it anew at born.
 * dies < born is a life across the iteration's end (allocated at born, freed at dies of the
 * next iteration); born >= 0 with dies == -1 means dies = born - 1 (modulo nops: the next
 * iteration's allocation replaces it); born == -1 with dies >= 0 cannot repeat and is refused
 * (write it as born > dies). */
typedef struct pol_buf {
    uint64_t key;        /* the caller's identity of the buffer across iterations */
    uint64_t bytes;      /* its size; its chunks are ceil(bytes / chunk) */
    int32_t born, dies;  /* see above */
    uint8_t pinned;      /* may never leave the GPU (NCCL buffers, IPC, pointers not seen) */
    uint8_t nvme_ok;     /* every use was visible: it may go to POL_NVME (DESIGN invariant 2) */
    uint8_t clean;       /* its host copy is current at the iteration's start (read-only data);
                          * advisory: a cyclic plan tracks which chunks stay clean itself */
    uint8_t free_waits;  /* its free (after dies) has the host wait for its last use (a
                          * cuMemFree; a stream-ordered free does not) */
    uint64_t slot;       /* 1 + the number of its first chunk in the caller's address range,
                          * for the cost model: a buffer born where one died on the GPU takes
                          * that one's memory as it is, still mapped there (the shim parks
                          * it), with no mapping calls; 0: not known */
} pol_buf_t;

/* A run of chunks of one buffer that one operation reaches. */
typedef struct pol_ref {
    uint32_t buf;               /* index into pol_input_t.bufs */
    uint32_t chunk, nchunks;    /* first chunk of the buffer and how many */
    uint8_t access;             /* enum pol_access */
} pol_ref_t;

/* A wait of the host outside the buffers' deaths: after operation op (and its moves after
 * it), the host waits for the last use of buffer buf's chunks so far (a cuMemFree of an
 * allocation that shares those chunks with others: the free waits for the chunks). */
typedef struct pol_wait {
    uint32_t op, buf;
} pol_wait_t;

/* A host synchronisation: after operation op (before its moves after it, which the executor
 * issues at the next operation), the host waits for every operation issued so far on stream
 * `stream` (cuStreamSynchronize), or, with POL_SYNC_ALL, on every stream, and for every
 * move's copy to or from the GPU (cuCtxSynchronize: the moves' copies run in the same
 * context).  The program issues nothing meanwhile, nor does the executor. */
typedef struct pol_sync {
    uint32_t op, stream;
} pol_sync_t;

#define POL_SYNC_ALL UINT32_MAX

/* One operation, in host issue order. */
typedef struct pol_op {
    uint32_t stream;            /* dense stream number, 0 .. nstreams - 1 */
    uint32_t ref, nref;         /* its references: refs[ref .. ref + nref) */
    uint64_t dur_ns;            /* device time; 0 when unknown (the cost model then uses 0) */
    uint32_t away;              /* of the chunks it reaches, those away from the GPU (reached
                                 * over the link) while dur_ns was measured; 0: none, or not
                                 * known.  The cost model scales dur_ns by the count away in
                                 * the plan where that is larger (see replay.c) */
    uint64_t dur2_ns;           /* its device time measured again, with away2 of its chunks
                                 * away (an iteration that followed a plan); 0: not.  Where
                                 * away2 != away the cost model draws the line through the two
                                 * (see replay.c) */
    uint32_t away2;
} pol_op_t;

/* One link between POL_GPU and another tier: GB/s (1e9 bytes/s) each way and both together
 * (a PCIe link is not fully duplex), and a fixed cost per transfer. */
typedef struct pol_link {
    double to_gpu_gbs, from_gpu_gbs, duplex_gbs;
    double latency_us;
} pol_link_t;

/* Host time of the shim's mapping calls per 2 MiB chunk, for a pol_machine_t of the shim's
 * (shim/res_plan.c, elixir-trace plan): what H200s took (driver 580.159.04,
 * bench/vmm_inflight; the simulator charges the same, docs/simulator.md).  A move that keeps
 * the chunk mapped at its address: the mean of an eviction (device unmap, host map and set
 * access: 142 us) and its way back (host unmap, device map and set access: 123 us).  A move of
 * the plan whose evictions unmap: the mean of the unmap (33 us) and the prefetch's map and set
 * access (65 us).  A birth: a freed chunk's device memory unmapped, mapped and set (99 us). */
#define POL_MAP_US_PER_CHUNK   132.0
#define POL_UNMAP_US_PER_CHUNK  49.0
#define POL_BIRTH_US_PER_CHUNK  99.0
/* Of a birth's: the unmap of the freed chunk's device memory, as of an eviction (33 us). */
#define POL_DROP_US_PER_CHUNK   33.0
/* Host memory mapped back at a chunk's address for an operation that reaches it there (a
 * POL_NEAR use, or one in place, of a chunk a plan's eviction left unmapped): map and set
 * access of a 2 MiB host-located handle (108 us), and its unmap when the chunk moves again
 * (58 us). */
#define POL_MAPBACK_US_PER_CHUNK 166.0
/* The share of a 2 MiB device handle's map, set access and unmap (98.65 us in all) that the
 * driver charges per granule (1.35 us; the rest is per handle: on the H200, setting access
 * over 16 handles of 2 MiB took 352 us, over one 32 MiB handle 37 us), as the simulator
 * charges it (SIM_COST_*, sim/include/simcuda.h): pol_machine_t.handle_share for moves of one
 * handle each (elixir-trace plan --handles extent).  Moves between device and host handles
 * have a smaller share, about 1%: there it slightly understates what one handle saves. */
#define POL_HANDLE_GRANULE_SHARE (1.35 / 98.65)
/* Moves (remaps) timed before their mean replaces those defaults, in the shim and in
 * elixir-trace plan. */
#define POL_MAP_SAMPLES 16

/* The machine the plan is for. */
typedef struct pol_machine {
    uint64_t chunk;                 /* bytes per chunk (the mapping granularity, 2 MiB typical) */
    uint64_t cap[POL_NTIERS];       /* bytes each tier may hold; 0: the tier is absent */
    pol_link_t link[POL_NTIERS];    /* link[t]: between POL_GPU and t (link[POL_GPU] unused) */
    double map_us_per_call;         /* host time of one unmap + map + set-access of an extent */
    double map_us_per_chunk;        /* and per chunk of that extent */
    double handle_share;            /* 0: each chunk of a move is a physical handle of its own,
                                     * charged the per-chunk figures whole; s in (0, 1]: a
                                     * move's chunks (a birth's too) are one handle, whose
                                     * mapping calls cost (1 - s + s x chunks) x the per-chunk
                                     * figure (1: the same as 0; a what-if: elixir-trace plan
                                     * --handles extent) */
    double birth_us_per_chunk;      /* host time to give a chunk of a buffer born in the
                                     * iteration its GPU memory; 0: map_us_per_chunk */
    double mapback_us_per_chunk;    /* host time to map a chunk's host memory back at its
                                     * address for a use of it there where the plan's
                                     * evictions unmap: a POL_NEAR use, when a plan left out
                                     * such uses (pol_knobs_t.near = 0), or an operation that
                                     * runs in place; 0: nothing to map back */
    double drop_us_per_chunk;       /* host time to unmap the device memory of a chunk that
                                     * died on the GPU (freed, or parked: still mapped at its
                                     * address, pol_buf_t.slot) when a chunk at another
                                     * address takes it; a birth's birth_us_per_chunk includes
                                     * it, and charges the rest; 0: free */
    double host_us_per_op;          /* host time to issue one operation of the iteration (the
                                     * driver call that enqueues it): a GPU that is fast
                                     * enough waits for the host at this rate */
    uint32_t copy_engines;          /* engines per direction (1 or 2 on PCIe GPUs) */
    uint32_t room_on_device;        /* 1: GPU room a move away frees goes to a move in whose
                                     * copy waits for the freeing copy on the device, the host
                                     * waiting only for the freed chunks' last use (the shim's
                                     * executor with unmapped evictions); 0: the host waits for
                                     * the freeing copy */
} pol_machine_t;

typedef struct pol_input {
    const pol_op_t *ops;
    size_t nops;
    const pol_ref_t *refs;
    size_t nrefs;
    const pol_buf_t *bufs;
    size_t nbufs;
    uint32_t nstreams;
    pol_machine_t m;
    uint32_t slack;             /* for a search (pol_plan's knobs == NULL), the slack
                                 * (pol_knobs_t.slack_chunks) of its plans: POL_SLACK_SEARCH
                                 * tries none and, where the host waits for the copies that
                                 * free GPU room (not m.room_on_device), 2 and 4 chunks;
                                 * POL_SLACK_NONE none; any other value exactly that many
                                 * chunks (not with m.room_on_device; fewer than the GPU's) */
    const pol_wait_t *waits;    /* the host's waits, in operation order (may be NULL) */
    size_t nwaits;
    const pol_sync_t *syncs;    /* the host's synchronisations, in operation order (may be
                                 * NULL; none: the host runs ahead of the GPU throughout) */
    size_t nsyncs;
} pol_input_t;

#define POL_SLACK_SEARCH 0u
#define POL_SLACK_NONE UINT32_MAX

/* The knobs the search varies; pol_plan with knobs == NULL searches them. */
typedef struct pol_knobs {
    uint32_t lookahead;         /* prefetch at most this many operations ahead (0: unbounded) */
    uint32_t extent_chunks;     /* move runs of up to this many chunks as one extent */
    uint64_t pin_bytes;         /* bytes of the most reused buffers kept on the GPU for good */
    uint32_t slack_chunks;      /* GPU room the plan leaves free: where the host waits for the
                                 * copy of a move away before its room is taken (not
                                 * m.room_on_device), moves in take this room while such copies
                                 * still run; the plan holds at most cap[POL_GPU] less these */
    uint32_t near;              /* POL_NEAR references: 1 planned as the others (their chunks
                                 * brought to the GPU), 0 left out of the plan (the operation
                                 * reaches them where they are; the cost model charges
                                 * m.mapback_us_per_chunk where they are not on the GPU) */
} pol_knobs_t;

/* One move: chunks [chunk, chunk + nchunks) of buf from one tier to another.  Every move
 * has POL_GPU at one end, except a demotion POL_HOST -> POL_NVME (over link[POL_NVME]).
 * from == POL_NTIERS materialises chunks of a buffer born in this iteration on the GPU: they
 * have no contents yet, nothing is copied (the executor maps GPU memory there).
 * need_by: for a move to the GPU, the operation that needs it; when need_by is less than the
 * operation the move is issued before (or not more than the one it is issued after), it is
 * the next iteration's operation need_by (the plan prefetches across the iteration's end).
 * UINT32_MAX for moves away from the GPU. */
typedef struct pol_move {
    uint32_t buf, chunk, nchunks;
    uint8_t from, to;           /* enum pol_tier; from may be POL_NTIERS (see above) */
    uint8_t writeback;          /* 1: copy the data.  0: the destination holds a current copy
                                 * kept there (keep) or the data is dead (the next use
                                 * overwrites it whole, or the buffer dies first): remap only */
    uint8_t keep;               /* to the GPU: keep the source copy (see "Kept copies") */
    uint32_t need_by;           /* see above */
} pol_move_t;

/* What the cost model predicts for a plan (pol_replay), in nanoseconds and bytes. */
typedef struct pol_result {
    double iter_ns;             /* predicted iteration time */
    double compute_ns;          /* the operations alone: the unlimited GPU's time (the
                                 * busiest stream's, or the host's to issue them all) */
    double bound_ns;            /* a lower bound: max(compute, chunks that must come in and
                                 * go back / the links' rates; see bound.c and replay.c) */
    double bound_in_ns;         /* the same with the chunks that must come in alone: below
                                 * bound_ns by the write-backs that launches force, since a
                                 * launch counts as writing every chunk it reaches */
    uint64_t bound_chunks[2];   /* the chunks behind bound_ns: [0] that must come in, [1] that
                                 * must go back with a copy, in one iteration of any plan */
    double stall_ns;            /* time operations waited for moves */
    double map_ns;              /* host time in mapping calls */
    uint64_t bytes[POL_NTIERS][2];  /* bytes moved over link[t]: [t][0] to GPU, [t][1] from */
    uint64_t peak[POL_NTIERS];  /* the most bytes each tier held */
} pol_result_t;

typedef struct pol_plan {
    pol_move_t *moves;
    size_t nmoves;
    uint32_t *op_first;         /* nops + 1 entries: moves issued before operation i */
    uint32_t *op_after;         /* nops + 1 entries: moves issued after operation i */
    uint8_t *start_tier;        /* per chunk (buffers' chunks in order): its tier at the start
                                 * (POL_NTIERS: not alive at the start, or never used) */
    uint8_t *start_home;        /* per chunk on the GPU at the start: the tier where it keeps a
                                 * copy (see "Kept copies"; its room is held), POL_NTIERS for
                                 * none.  An executor that starts following the plan makes
                                 * that copy current there */
    pol_knobs_t knobs;          /* the configuration chosen */
    pol_result_t predicted;     /* pol_replay of this plan */
} pol_plan_t;

/* Check an input: 0, or -EINVAL with a message naming the first bad field in err. */
int pol_input_check(const pol_input_t *in, char *err, size_t errlen);
/* Does the input have POL_NEAR references (chunks behind kernels' pointers)? */
int pol_has_near(const pol_input_t *in);
/* Plan `in` with `knobs` (NULL: search the knobs for the best predicted time).  0 and *out,
 * -EINVAL for a bad input, -ENOSPC when the pinned and concurrently needed chunks of some
 * operation exceed the GPU's capacity (no plan can exist) or every tier is full, or for
 * knobs (or a fixed in->slack) with slack that leaves some operation that fits the GPU too
 * little room, or knobs with slack where m.room_on_device is set, -EDOM when these knobs give
 * no cyclic plan (the residency at the iteration's end oscillates and cannot be brought back
 * to the start within the capacities; rare, other knobs or NULL may plan), -ENOMEM, -EPROTO
 * when the plan it chose fails its own checks (a planner bug: no plan is returned and the
 * caller goes without one).  The plan returned has passed pol_plan_verify's checks. */
int pol_plan(const pol_input_t *in, const pol_knobs_t *knobs, pol_plan_t **out);
void pol_plan_free(pol_plan_t *p);
/* Replay a plan on the cost model: compute streams, one queue per link direction, the two
 * directions' rates together held to the duplex limit (a copy keeps its rate, one the other
 * way beside it gets the rest), a move of several chunks copied chunk by chunk unless it is
 * one handle (m.handle_share), mapping costs on the host, every dependency.  0, -EINVAL or
 * -ENOMEM. */
int pol_replay(const pol_input_t *in, const pol_plan_t *p, pol_result_t *r);
/* The cost model's device time (ns) of operation op where `away` of the chunks it reaches lie
 * away from the GPU: dur_ns scaled by away / op->away where that is more than 1 (op->away >
 * 0), else dur_ns; where it was timed again with another count away (dur2_ns, away2), the
 * line through the two timings, its slope held at 0 or more, and below both counts never
 * below the shorter timing (fewer chunks away than either was not measured). */
double pol_op_time(const pol_op_t *op, uint64_t away);
/* Check that a plan keeps every operation's chunks on the GPU and every tier within its
 * capacity and loses no data, over two iterations (a kept copy written in the first is stale
 * in the second): 0, or -EINVAL with the first violation described in err.  Used by the tests
 * and by the shim in debug runs. */
int pol_plan_verify(const pol_input_t *in, const pol_plan_t *p, char *err, size_t errlen);
/* after[i] (nops entries) = 1 where operation i is the last use, in the plan's repeating
 * order, of a chunk that a move of plan p then takes away from the GPU: an executor that
 * records an event right after it lets that move wait for the use alone (cover.c).  `in`
 * must have passed pol_input_check and p be a plan of it.  0 or -ENOMEM. */
int pol_cover_after(const pol_input_t *in, const pol_plan_t *p, uint8_t *after);
const char *pol_tier_name(int tier);

#endif
