/* SPDX-License-Identifier: MIT */
/*
 * res_nvme.h - what the residency files share of the NVMe tier: the reactive engine's swap
 * (res_nvme.c) and the plan's asynchronous moves (res_plan_nvme.c).  Included after
 * res_int.h by the residency files that reach the tier; nothing else includes it.
 */
#ifndef ELIXIR_RES_NVME_H
#define ELIXIR_RES_NVME_H

#include "res_int.h"

/* ---------------------------------------------------------------- res_nvme.c */
/* At d's set-up (setup_lock held): the process's NVMe tier opened with the first arena when
 * ELIXIR_NVME_PATH is set; d->nvme_on; *bytes: what it holds (0: no tier).  -ERANGE where the
 * tier asked for cannot be had (a path that does not open, no room, a size under one chunk:
 * reported, and the caller stops the program), else 0. */
int res_nvme_setup(res_dev_t *d, uint64_t *bytes);
/* The host budget has no room (d locked): host chunks go to NVMe until it has; 1 when it
 * has, 0 when nothing (more) may go. */
int res_nvme_room(res_dev_t *d);
/* Chunk ci, if on NVMe, is read back into GPU memory at its address (d locked). */
void res_nvme_back(res_dev_t *d, uint32_t ci);
/* NVMe chunk ci goes out of use: its slot is free (d locked; out_of_use does the rest). */
void res_nvme_release(res_dev_t *d, uint32_t ci);
/* Before operation k is enqueued (d locked): the NVMe chunks it reaches (every one, when it
 * reached unknown memory, which also exposes every chunk in use) are read back; 0, or
 * -ENOMEM when some could not be. */
int res_nvme_reach(res_dev_t *d, collect_t *k);
void res_nvme_stats_print(void);
/* Staging chunks of the plan's asynchronous NVMe moves (with ELIXIR_POLICY=plan). */
#define RES_NVME_STAGES 16
/* A chunk goes between GPU and NVMe in pieces, so that it is on both links at once: piece k
 * is written to its slot as soon as its copy to staging completed while piece k + 1 is
 * copied, and copied to the GPU as soon as its read completed.  A piece is one NVMe request
 * (ELIXIR_NVME_BLOCK), or several where a chunk has more than RES_NVME_PIECES of them (the
 * events per move stay few).  res_nvme_piece: the piece's bytes for d's chunk (the area
 * open). */
#define RES_NVME_PIECES 8
uint32_t res_nvme_piece(const res_dev_t *d);
/* For res_plan_nvme.c: the area (NULL: none); staging chunk k (NULL: none); is the tier
 * healthy (else its degradation is logged, once); a chunk written (write) or read, or not
 * (ok 0), counted.  res_nvme_now_out: chunk ci (d locked), in host or GPU memory, whose
 * contents slot now holds, goes to NVMe (its memory back, unmapped; `start` for the trace).
 * res_nvme_now_in: chunk ci came back from slot, which is freed. */
struct nvme_area *res_nvme_area(void);
void *res_nvme_stage(unsigned k);
int res_nvme_healthy(void);
/* d's context ctx is about to be destroyed (d locked, its moves drained): the staging memory,
 * where it is pinned in ctx, is unpinned (the memory stays the shim's).  d took a context
 * (d locked): the staging memory, where no context pins it, is pinned in d's. */
void res_nvme_home_lost(res_dev_t *d, CUcontext ctx);
void res_nvme_home_taken(res_dev_t *d);
void res_nvme_count(int write, int ok);
void res_nvme_now_out(res_dev_t *d, uint32_t ci, uint32_t slot, uint64_t start);
void res_nvme_now_in(res_dev_t *d, uint32_t ci, uint32_t slot, uint64_t start);

/* ---------------------------------------------------------------- res_plan_nvme.c */
/* The plan's NVMe moves (d locked).  res_plan_nvme_machine: the NVMe tier's capacity and
 * link in the planner's machine (the link measured in the profile tr where enough bytes
 * moved, else the default), said in the log once per plan.  res_plan_nvme_ok: may chunks
 * [first, +n) go to NVMe (none exposed)?  res_plan_nvme_move: chunk ci from tier `from` to
 * `to` (enum pol_tier, one of them POL_NVME), started asynchronously; 0 when issued, -1 when
 * left to the reactive engine. */
struct pol_machine;
struct res_ptime_report;
void res_plan_nvme_machine(const res_dev_t *d, const struct res_ptime_report *tr,
                           struct pol_machine *m);
int res_plan_nvme_ok(const res_dev_t *d, uint32_t first, uint32_t n);
int res_plan_nvme_move(res_dev_t *d, uint32_t ci, int from, int to, uint32_t serial);
/* The plan's move host -> NVMe of chunk ci is issued ahead of its place (res_plan.c's hoist),
 * where the chunk is in host memory, not moving, not used by operation `serial`, and half the
 * staging chunks at least are free (the reads ahead need them more): 0, or -1. */
int res_plan_nvme_ahead(res_dev_t *d, uint32_t ci, uint32_t serial);
/* As res_flight_use, res_flight_settle, res_flights_poll and res_flights_drain (which call
 * these), for the plan's NVMe moves. */
void res_nvme_flight_use(res_dev_t *d, uint32_t ci, CUstream s, int ptds);
void res_nvme_flight_settle(res_dev_t *d, uint32_t ci, int gone);
void res_nvme_flights_poll(res_dev_t *d);
void res_nvme_flights_drain(res_dev_t *d);
void res_plan_nvme_stats(void);
/* GPU room for the reactive engine (d locked): one of the plan's moves GPU -> NVMe in flight,
 * of a chunk that operation `serial` (0: none) does not reach, completes (the host waits for
 * its copy and write), which frees its GPU memory unless the move failed or its chunk stays;
 * 0 when one ended, -1 when none was in flight or could end. */
int res_nvme_flight_room(res_dev_t *d, uint32_t serial);
/* The bytes the NVMe tier may hold for d: the area's size while it is healthy, what is on it
 * once it is degraded (nothing more goes to it); 0 without a tier. */
uint64_t res_nvme_capacity(const res_dev_t *d);

#endif
