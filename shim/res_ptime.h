/* SPDX-License-Identifier: MIT */
/*
 * res_ptime.h - the profile's clock (res_plan_time.c): each profiled operation timed by events
 * on its stream, the link's rate from the reactive engine's timed migrations and NVMe I/O.
 */
#ifndef ELIXIR_RES_PTIME_H
#define ELIXIR_RES_PTIME_H

#include "res_int.h"

/* A profile of d begins (d locked): its operations are timed from now (any earlier profile's
 * events are destroyed).  res_ptime_close: its events destroyed, nothing more is timed;
 * res_ptime_drop: that, and its memory freed (d's context is about to go). */
void res_ptime_open(res_dev_t *d);
void res_ptime_close(res_dev_t *d);
void res_ptime_drop(res_dev_t *d);
/* Operation k is the profile's operation i (d locked; res_plan_op): it is timed when its
 * enqueue comes (k->timed).  res_ptime_before: right before the driver call, its first event
 * recorded on stream s (ptds: the _ptsz ABI), unless it cannot be timed (k->timed cleared);
 * res_ptime_after: right after the driver returned r, its second (d locked). */
void res_ptime_op(res_dev_t *d, collect_t *k, uint32_t i);
void res_ptime_before(res_dev_t *d, collect_t *k, CUstream s, int ptds);
void res_ptime_after(res_dev_t *d, collect_t *k, CUresult r, CUstream s, int ptds);
/* Instead of res_ptime_after: operation k runs nothing of its own, its work counted in a later
 * operation's time (the calls of an NCCL group on one stream run as one): timed at 0. */
void res_ptime_merged(res_dev_t *d, collect_t *k);
/* The fast launch path's profiled operation i (context ctx) about to be enqueued on s (d
 * locked); its end is res_plan_fast_done (shim.h). */
void res_ptime_fast(res_dev_t *d, uint32_t i, CUcontext ctx, CUstream s);
/* The profile has ended (d locked): 1 when its times can be read, every event complete or
 * planning put off long enough; 0 to put planning off by an iteration. */
int res_ptime_ready(res_dev_t *d);
/* What res_ptime_fill measured: operations timed, estimated from timed ones with their
 * signature, and left at 0; migration bytes each way ([0] to the GPU) and the rate measured
 * from them, GB/s (0: too few bytes); the same of the reactive engine's NVMe I/O ([0] reads,
 * [1] writes). */
typedef struct res_ptime_report {
    uint64_t timed, estimated, untimed;
    uint64_t link_bytes[2];
    double link_gbs[2];
    uint64_t nvme_bytes[2];
    double nvme_gbs[2];
} res_ptime_report_t;
/* The profile's times into ops[i].dur_ns (sig: the operations' signatures), its link figures
 * into *rep; then res_ptime_close (d locked). */
struct pol_op;
void res_ptime_fill(res_dev_t *d, struct pol_op *ops, const uint64_t *sig, size_t nops,
                    res_ptime_report_t *rep);
/* The times of an iteration timed again (res_ptime_open while it followed a plan, its
 * operations numbered as the plan's): ns[i] and timed[i] = 1 for each operation i < nops
 * timed, else timed[i] = 0; how many were.  Then res_ptime_close (d locked). */
size_t res_ptime_times(res_dev_t *d, uint64_t *ns, uint8_t *timed, size_t nops);
/* Around a migration's copy on d->stream (d locked): res_ptime_link_begin just before it is
 * enqueued (1: timed), res_ptime_link_wait after the driver returned r for it, which makes
 * the host wait for the copy as the migration does (cuStreamSynchronize) and returns the
 * result; to_gpu: its direction. */
int res_ptime_link_begin(res_dev_t *d);
CUresult res_ptime_link_wait(res_dev_t *d, int timed, CUresult r, int to_gpu);
/* Around one synchronous NVMe read or write of a chunk by the reactive engine (d locked,
 * nothing of the shim's on d->stream): res_ptime_io_begin before it (1: timed),
 * res_ptime_io_end after it; ok: every byte moved. */
int res_ptime_io_begin(res_dev_t *d);
void res_ptime_io_end(res_dev_t *d, int timed, int ok, int write);

#endif /* ELIXIR_RES_PTIME_H */
