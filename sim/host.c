/* SPDX-License-Identifier: MIT */
/*
 * host.c - the host's side of the virtual clock and of the race checker: the host clock
 * that API calls, submissions and waits move, and the host thread's vector clock that
 * synchronisations acquire and host accesses are checked against (exec.c runs the device's side).
 */
#include <stdatomic.h>

#include "exec_int.h"

double exec_host_clock;                 /* ns, under sim_lock */
/* exec_host_clock as sim_activity_clock reports it, stored under sim_lock after every change, so
 * that the activity clock (read once per recorded operation) is read without the lock. */
_Atomic uint64_t exec_host_clock_ns;

sim_race_t *exec_race;
/* Lock order: exec_race_lock, then sim_lock; never exec_race_lock while holding sim_lock. */
pthread_mutex_t exec_race_lock = PTHREAD_MUTEX_INITIALIZER;
uint32_t exec_host_tid;
sim_vc_t *exec_host_snap;

/* ---------------------------------------------------------------- host clock and race glue */

double sim_host_now(void)
{
    pthread_mutex_lock(&sim_lock);
    double t = exec_host_clock;
    pthread_mutex_unlock(&sim_lock);
    return t;
}

/* Publishes exec_host_clock to the activity clock (sim_lock held). */
void exec_host_clock_publish(void)
{
    atomic_store_explicit(&exec_host_clock_ns, (uint64_t)exec_host_clock, memory_order_release);
}

void sim_host_advance(double t, int why)
{
    pthread_mutex_lock(&sim_lock);
    if (t > exec_host_clock) {
        exec_stats.host_ns[why] += t - exec_host_clock;
        exec_host_clock = t;
    }
    exec_host_clock_publish();
    pthread_mutex_unlock(&sim_lock);
}

int sim_host_reached(const double *t)
{
    pthread_mutex_lock(&sim_lock);
    int reached = *t <= exec_host_clock;
    if (!reached) {
        exec_host_clock += sim_cfg.model.api_us * 1000.0;
        exec_stats.host_ns[SIM_HOST_POLL] += sim_cfg.model.api_us * 1000.0;
        exec_stats.polls_early++;
        exec_host_clock_publish();
    }
    pthread_mutex_unlock(&sim_lock);
    return reached;
}

void sim_host_charge(double us)
{
    pthread_mutex_lock(&sim_lock);
    exec_host_clock += us * 1000.0;
    exec_stats.host_ns[SIM_HOST_CALL] += us * 1000.0;
    exec_host_clock_publish();
    pthread_mutex_unlock(&sim_lock);
}

void sim_alloc_cost(double us)
{
    if (sim_cfg.alloc_costs)
        sim_host_charge(us);
}

uint32_t sim_race_new_thread(void)
{
    if (!exec_race)
        return 0;
    pthread_mutex_lock(&exec_race_lock);
    uint32_t tid = sim_race_thread(exec_race);
    pthread_mutex_unlock(&exec_race_lock);
    return tid;
}

void sim_host_acquire(const sim_vc_t *vc)
{
    if (!exec_race || !vc)
        return;
    pthread_mutex_lock(&exec_race_lock);
    sim_race_acquire(exec_race, exec_host_tid, vc);
    sim_vc_t *old = exec_host_snap;
    exec_host_snap = sim_race_release(exec_race, exec_host_tid);
    pthread_mutex_unlock(&exec_race_lock);
    sim_vc_unref(old);
}

/* One host access for the race checker, the n-th of its kind (*ops counts them): at
 * addresses as the process sees them, or (`data`) at the physical memory behind them. */
static void host_check(uint64_t addr, uint64_t len, int write, const char *what,
                       _Atomic uint64_t *ops, int data)
{
    sim_race_who_t who = { what, atomic_fetch_add(ops, 1) + 1, 0 };
    pthread_mutex_lock(&exec_race_lock);
    sim_race_tick(exec_race, exec_host_tid);
    if (data)
        sim_race_data(exec_host_tid, addr, len, write, &who);
    else
        sim_race_access(exec_race, exec_host_tid, addr, len, write, &who);
    sim_vc_t *old = exec_host_snap;
    exec_host_snap = sim_race_release(exec_race, exec_host_tid);
    pthread_mutex_unlock(&exec_race_lock);
    sim_vc_unref(old);
}

void sim_host_access(uint64_t addr, uint64_t len, int write, const char *what)
{
    static _Atomic uint64_t host_ops;
    if (exec_race)
        host_check(addr, len, write, what, &host_ops, 0);
}

void sim_host_data(uint64_t addr, uint64_t len, int write, const char *what)
{
    static _Atomic uint64_t host_data_ops;
    if (exec_race && len)
        host_check(addr, len, write, what, &host_data_ops, 1);
}

sim_vc_t *sim_host_vc(void)
{
    if (!exec_race)
        return NULL;
    pthread_mutex_lock(&exec_race_lock);
    sim_vc_t *vc = sim_vc_ref(exec_host_snap);
    pthread_mutex_unlock(&exec_race_lock);
    return vc;
}

void sim_race_forget_range(uint64_t base, uint64_t size)
{
    if (!exec_race)
        return;
    pthread_mutex_lock(&exec_race_lock);
    sim_race_forget(exec_race, base, size);
    pthread_mutex_unlock(&exec_race_lock);
}
