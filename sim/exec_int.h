/* SPDX-License-Identifier: MIT */
/*
 * exec_int.h - what the executor's files share: exec.c (the FIFO and the executor thread,
 * virtual time and races), exec_run.c (running one operation), exec_aside.c (blocked waits),
 * host.c (the host clock and the host's race state) and activity.c (the activity observer).
 * Nothing else includes it.
 */
#ifndef ELIXIR_SIM_EXEC_INT_H
#define ELIXIR_SIM_EXEC_INT_H

#include "sim.h"

/* ---------------------------------------------------------------- exec.c */

/* Set on the executor thread. */
extern _Thread_local int exec_on_executor;
extern double exec_t_max;               /* latest end of any executed op, under sim_lock */
/* Statistics, executor-only until printed. */
typedef struct exec_stats {
    uint64_t ops[SIM_OP_NOP + 1];
    uint64_t bytes[SIM_ENG_COUNT];
    uint64_t faults;
    double host_ns[SIM_HOST_WHY];   /* host clock moved, by what moved it (sim_lock) */
    uint64_t polls_early;           /* queries of work done, but after the host's now */
    double kernel_ns;               /* kernels' device time */
    double kernel_link_ns;          /* ... of kernels whose host memory set their duration */
    uint64_t kernels_link;          /* and how many */
} exec_stats_t;
extern exec_stats_t exec_stats;

/* ---------------------------------------------------------------- exec_run.c */

/* The kernel running on the executor: cost and declared accesses. */
typedef struct access_rec {
    uint64_t addr, len;
    int mode;
} access_rec_t;

typedef struct exec_kernel {
    int active;
    CUcontext ctx;                  /* its context, whose device's access is checked */
    double flops, bytes;
    access_rec_t *acc;
    size_t nacc, cap;
} exec_kernel_t;
extern exec_kernel_t exec_cur;

const char *exec_op_name(const sim_op_t *op);
void exec_fault(sim_op_t *op, uint64_t addr);
/* Execute the body of op under the fault guard; returns 0 or -EFAULT. */
int exec_run(sim_op_t *op);

/* ---------------------------------------------------------------- exec_aside.c */

/* The list set aside is looked at again every AWAIT_POLL_US for the host's own stores. */
#define AWAIT_POLL_US 200
/* The operations set aside, in order, and whether to look at them again before taking from
 * the FIFO (executor thread). */
extern sim_op_t *aside_head;
extern int aside_dirty;
/* Note what executed op wrote (bounding ranges: more than it wrote orders more, never less). */
void aside_note_write(const sim_op_t *op, double t, sim_vc_t *vc);
/* Must op wait for an operation set aside (as marked in this generation)? */
int aside_depends(const sim_op_t *op);
/* A wait set aside while the record it waits for has run keeps that record's time and
 * clock: a later record may replace the event's before the wait runs. */
void aside_snap(sim_op_t *w, double t, sim_vc_t *vc);
/* Set op aside at the end of the list (it is later than everything on it).  Under sim_lock. */
void aside_append(sim_op_t *op);
/*
 * May wait op run now?  Reads its word with sim_lock released (the read may fault, and the
 * access check takes the registry's lock).  Yes when its condition holds, noting what wrote
 * the value seen, and when it cannot be read or its context is lost: it then runs as the
 * fault it is.  Under sim_lock, which it drops and takes again.
 */
int aside_wait_ready(sim_op_t *op);
/*
 * Look at the list again: take, in order, what no longer depends on anything left on it into
 * b (a wait only first in a batch, a host function only alone).  Returns how many; *stopped
 * when the look ended early, so that the marks are incomplete and the FIFO must wait for the
 * next look.  Under sim_lock.
 */
int aside_take(sim_op_t **b, int max, int *stopped);

/* ---------------------------------------------------------------- host.c */

extern double exec_host_clock;                 /* ns, under sim_lock */
/* exec_host_clock as sim_activity_clock reports it, stored under sim_lock after every change, so
 * that the activity clock (read once per recorded operation) is read without the lock. */
extern _Atomic uint64_t exec_host_clock_ns;
extern sim_race_t *exec_race;
/* Lock order: exec_race_lock, then sim_lock; never exec_race_lock while holding sim_lock. */
extern pthread_mutex_t exec_race_lock;
extern uint32_t exec_host_tid;
extern sim_vc_t *exec_host_snap;
/* exec.c: one access of [addr, +len) by race thread tid, checked on the physical memory behind
 * VMM mappings (the address itself then read), by address elsewhere.  Under exec_race_lock. */
void sim_race_data(uint32_t tid, uint64_t addr, uint64_t len, int write,
                   const sim_race_who_t *who);
/* Publishes exec_host_clock to the activity clock (sim_lock held). */
void exec_host_clock_publish(void);

/* ---------------------------------------------------------------- activity.c */

/* The observer attached by a profiling library; NULL unless one is. */
extern _Atomic(const sim_activity_ops_t *) exec_act_ops;
/* On the submitting thread: let the observer tag a kernel, copy or memset. */
void exec_activity_submit(const sim_activity_ops_t *a, sim_op_t *op);
/* On the executor: tell the observer that a tagged op ran from start to end (ns). */
void exec_activity_complete(const sim_op_t *op, double start, double end);

#endif
