/* SPDX-License-Identifier: MIT */
/*
 * race.h - the simulator's race checker: happens-before with vector clocks.
 *
 * Logical threads are the streams of every context plus one for the host.  Each operation the
 * simulator executes is an event of its stream's thread; synchronisation (stream order, events,
 * the legacy default stream, host synchronisation) is expressed with acquire/release of
 * vector clocks.  Accesses are checked against a shadow of byte ranges that remembers the last
 * write and the reads since it, and every pair of unordered accesses to overlapping bytes with
 * at least one write is reported, naming both operations.
 *
 * Not thread-safe: the simulator calls it from its executor thread under its own lock.
 */
#ifndef SIM_RACE_H
#define SIM_RACE_H

#include <stddef.h>
#include <stdint.h>

typedef struct sim_race sim_race_t;
typedef struct sim_vc sim_vc_t;     /* an immutable, reference-counted vector clock snapshot */

/* Who did an access: a label (copied, interned by the checker) and an operation number. */
typedef struct sim_race_who {
    const char *what;   /* e.g. "kernel matmul_fwd", "memcpy HtoD", "memset" */
    uint64_t op;        /* the simulator's global operation number */
    uint32_t stream;    /* the simulator's stream id, for the report */
} sim_race_who_t;

/* Called for every race found; `detail` is a complete one-line description. */
typedef void (*sim_race_report_fn)(void *ctx, const char *detail);

sim_race_t *sim_race_new(sim_race_report_fn report, void *ctx);
/* How a report names the bytes [addr, +len) (into buf, NUL-terminated); by default their
 * address range.  A caller whose addresses are keys of its own (sim_vmm_phys_pieces) says
 * what they stand for. */
typedef void (*sim_race_name_fn)(uint64_t addr, uint64_t len, char *buf, size_t size);
void sim_race_set_namer(sim_race_t *r, sim_race_name_fn name);
void sim_race_free(sim_race_t *r);

/* A new logical thread with an all-zero clock; returns its id (dense, from 0). */
uint32_t sim_race_thread(sim_race_t *r);

/* Advance thread `tid`'s own clock component: call once before each operation it performs. */
void sim_race_tick(sim_race_t *r, uint32_t tid);

/* Snapshot thread `tid`'s current vector clock (caller owns one reference). */
sim_vc_t *sim_race_release(sim_race_t *r, uint32_t tid);

/* Thread `tid` now happens after everything `vc` covers (join).  vc may be NULL (no-op). */
void sim_race_acquire(sim_race_t *r, uint32_t tid, const sim_vc_t *vc);

/* Reference counting of snapshots (NULL is accepted and ignored). */
sim_vc_t *sim_vc_ref(sim_vc_t *vc);
void sim_vc_unref(sim_vc_t *vc);

/*
 * Thread `tid` accesses [addr, addr + len), writing when `write` is non-zero.  Reports a race
 * with every earlier access to overlapping bytes that does not happen before this one and of
 * which at least one of the two writes, then records this access.  Returns the number of
 * races reported by this call.
 */
unsigned sim_race_access(sim_race_t *r, uint32_t tid, uint64_t addr, uint64_t len, int write,
                         const sim_race_who_t *who);

/* Forget the history of [addr, addr + len) (memory freed or unmapped). */
void sim_race_forget(sim_race_t *r, uint64_t addr, uint64_t len);

/* Races reported so far. */
uint64_t sim_race_count(const sim_race_t *r);

#endif /* SIM_RACE_H */
