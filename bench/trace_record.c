/* SPDX-License-Identifier: MIT */
/*
 * trace_record.c - what recording costs, in bytes and in time, measured side by side in one
 * run against the budgets.
 *
 * A training-like mix of events (kernel launches touching 1-4 allocations with known device
 * times, allocations with their call stacks captured by trc_rec_stack, frees, copies and
 * memsets with operation ids, all-reduces, migrations with their cause and eviction decisions,
 * memory-per-tier updates, timings, iteration marks) is generated into a ring per thread and
 * recorded through the recorder, the stack captures timed with the events.
 *  - bytes per event: the file's size (header, string and stack tables, TIME_BASE records
 *    included) over the events, against the 32-byte budget;
 *  - ns per event, one thread, and per event per thread with two threads recording at once,
 *    against an empty function call (through a pointer, given the same event) in the same
 *    run, as ratios: the time the recording thread spends in the recorder (the writer
 *    thread's own work, running beside it, and the file's close are not in it).  Each figure
 *    is the best of a few rounds.
 * It asserts nothing about time; it fails only when recording fails.
 */
#include "../tracer/record.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"

#define RING 8192                     /* pre-generated events per thread (a power of two) */
#define EVENTS 1000000                /* recorded per thread per round */
#define ROUNDS 3
#define STACK_DEPTH 16
#define BUDGET 32.0

typedef struct ring {
    trc_event_t ev[RING];
    uint64_t allocs[RING][4];
} ring_t;

typedef struct mix {
    uint64_t rng, time, next_alloc, next_op, addr, host;
    uint32_t funcs[64], nccl_op;
} mix_t;

static uint64_t rnd(mix_t *m, uint64_t n)
{
    m->rng ^= m->rng << 13;
    m->rng ^= m->rng >> 7;
    m->rng ^= m->rng << 17;
    return m->rng % n;
}

/* ------------------------------------------------------------------ the mix */

static void gen_launch(mix_t *m, trc_event_t *ev, uint64_t *allocs)
{
    uint32_t n = 1 + (uint32_t)rnd(m, 4);
    for (uint32_t k = 0; k < n; k++) /* ascending, as the shim lists them */
        allocs[k] = (k ? allocs[k - 1] : 0) + 1 + rnd(m, m->next_alloc / n + 1);
    uint64_t start = m->time + 2000 + rnd(m, 200000);
    ev->type = TRC_EV_LAUNCH;
    ev->u.launch = (trc_launch_t){ .id = m->next_op++, .func_id = m->funcs[rnd(m, 64)],
                                   .stream = rnd(m, 4) == 0, .span = { 1, start, start + 1000 + rnd(m, 300000) },
                                   .nallocs = n, .allocs = allocs };
}

static void gen_transfer(mix_t *m, uint64_t r, trc_event_t *ev)
{
    trc_span_t span = { 1, m->time + 500, m->time + 500 + rnd(m, 100000) };
    if (r < 906) {
        ev->type = TRC_EV_COPY;
        ev->u.copy = (trc_copy_t){ TRC_COPY_HTOD, 0x55d0c0000000ull + rnd(m, 1 << 30),
                                   m->addr - rnd(m, 1 << 30), 1 + rnd(m, 1 << 26), 1, 0, span,
                                   m->next_op++ };
    } else if (r < 916) {
        ev->type = TRC_EV_MEMSET;
        ev->u.memset = (trc_memset_t){ m->addr - rnd(m, 1 << 30), 1 + rnd(m, 1 << 24), 0, 1, 0,
                                       0, span, m->next_op++ };
    } else {
        ev->type = TRC_EV_NCCL;
        ev->u.nccl = (trc_nccl_t){ m->nccl_op, m->addr - (1 << 28), m->addr - (1 << 28),
                                   1 << 28, 0x5a5a, -1, 2, 0, span, NULL };
    }
}

static void gen_residency(mix_t *m, uint64_t r, trc_event_t *ev)
{
    if (r < 939) {
        uint64_t start = m->time + rnd(m, 50000);
        ev->type = TRC_EV_MIGRATION;
        ev->u.migration = (trc_migration_t){ rnd(m, 40000), 2 << 20, TRC_TIER_GPU,
                                             TRC_TIER_HOST, 0, start, start + 80000, m->next_op - 1,
                                             0, 0 };
        m->host += 2 << 20;
    } else if (r < 959) {
        ev->type = TRC_EV_EVICTION;
        ev->u.eviction = (trc_eviction_t){ rnd(m, 40000), 1 + rnd(m, m->next_alloc), 2 << 20,
                                           TRC_TIER_GPU, TRC_TIER_HOST, TRC_EVICT_FOR_LAUNCH };
    } else {
        uint64_t total = m->addr - 0x7f4000000000ull;
        ev->type = TRC_EV_MEMORY;
        ev->u.memory = (trc_memory_t){ 0, { total - m->host, 0, m->host, 0 } };
    }
}

/* One event of the mix; allocations get their call stack when recorded (stack_id 0 here). */
static void gen(mix_t *m, uint64_t i, trc_event_t *ev, uint64_t *allocs)
{
    uint64_t r = rnd(m, 1000);
    memset(ev, 0, sizeof(*ev));
    m->time += 3000 + rnd(m, 25000);
    ev->time = m->time;
    if (i < 16 || r < 8) {
        uint64_t size = (1 + rnd(m, 64)) << 21;
        ev->type = TRC_EV_ALLOC;
        ev->u.alloc = (trc_alloc_t){ ++m->next_alloc, 0, m->addr, size, 0, NULL };
        m->addr += size;
    } else if (r < 16) {
        ev->type = TRC_EV_FREE;
        ev->u.free.id = 1 + rnd(m, m->next_alloc);
    } else if (r < 886) {
        gen_launch(m, ev, allocs);
    } else if (r < 918) {
        gen_transfer(m, r, ev);
    } else if (r < 989) {
        gen_residency(m, r, ev);
    } else if (r < 999) {
        uint64_t start = m->time - 50000 - rnd(m, 200000);
        ev->type = TRC_EV_TIMING;
        ev->u.timing = (trc_timing_t){ m->next_op - 1 - rnd(m, 8), TRC_TIMING_CUPTI, start,
                                       start + rnd(m, 300000) };
    } else {
        ev->type = TRC_EV_ITERATION;
        ev->u.iteration.index = i;
    }
}

/* Fills a thread's ring; names interned through rec. */
static int fill(trc_rec_t *rec, ring_t *ring, uint64_t seed)
{
    mix_t m = { .rng = seed, .time = 1700000000000000000ull, .addr = 0x7f4000000000ull };
    char name[64];
    for (int i = 0; i < 64; i++) {
        snprintf(name, sizeof(name), "void at::native::elementwise_kernel_%d<float>", i);
        long id = trc_rec_string(rec, name);
        if (id <= 0)
            return -1;
        m.funcs[i] = (uint32_t)id;
    }
    m.nccl_op = (uint32_t)trc_rec_string(rec, "allReduce");
    for (uint64_t i = 0; i < RING; i++)
        gen(&m, i, &ring->ev[i], ring->allocs[i]);
    return 0;
}

/* ------------------------------------------------------------------ recording */

/* Allocation call sites: a few distinct ones, as a program has.  Each pair is an outer site
 * calling an inner one that captures the stack, so that the four stacks differ in their first
 * or second frame.  The volatile stores after the calls keep them from becoming tail calls,
 * which would merge the stacks, and the different tags keep the pairs from being folded into
 * one by the compiler. */
static volatile int keep;

#define CALL_SITE_PAIR(inner, outer, tag)                                                        \
    __attribute__((noinline)) static long inner(trc_rec_t *rec)                                  \
    {                                                                                            \
        long id = trc_rec_stack(rec, 0, STACK_DEPTH);                                            \
        keep = (tag);                                                                            \
        return id;                                                                               \
    }                                                                                            \
    __attribute__((noinline)) static long outer(trc_rec_t *rec)                                  \
    {                                                                                            \
        long id = inner(rec);                                                                    \
        keep = (tag) + 1;                                                                        \
        return id;                                                                               \
    }

CALL_SITE_PAIR(site_a, site_b, 1)
CALL_SITE_PAIR(site_c, site_d, 3)

typedef struct job {
    trc_rec_t *rec;
    ring_t *ring;
    uint64_t events;
    pthread_barrier_t *start;
    double ns;                         /* wall time of the loop */
    int failed;
} job_t;

static void *record_loop(void *arg)
{
    job_t *j = arg;
    long (*const sites[4])(trc_rec_t *) = { site_a, site_b, site_c, site_d };
    if (j->start)
        pthread_barrier_wait(j->start);
    double t0 = bench_now_ns();
    for (uint64_t i = 0; i < j->events; i++) {
        trc_event_t *ev = &j->ring->ev[i & (RING - 1)];
        if (ev->type == TRC_EV_ALLOC)
            ev->u.alloc.stack_id = (uint32_t)sites[i & 3](j->rec);
        if (trc_rec_event(j->rec, ev) != 0)
            j->failed = 1;
    }
    j->ns = bench_now_ns() - t0;
    return NULL;
}

/* The empty call the recording is compared with: same argument, through a pointer. */
__attribute__((noinline)) static void empty_call(const trc_event_t *ev)
{
    __asm__ volatile("" : : "r"(ev) : "memory");
}

static double empty_ns(const ring_t *ring)
{
    void (*volatile fn)(const trc_event_t *) = empty_call;
    double t0 = bench_now_ns();
    for (uint64_t i = 0; i < EVENTS; i++)
        fn(&ring->ev[i & (RING - 1)]);
    return (bench_now_ns() - t0) / EVENTS;
}

/* One round with n threads recording EVENTS each into a new file: per-thread ns per event
 * (the slowest thread), and bytes per event of the file. */
static int round_of(int n, ring_t **rings, const char *dir, int round, double *ns, double *bpe)
{
    char path[256];
    trc_rec_t *rec;
    job_t jobs[2];
    pthread_t th[2];
    pthread_barrier_t start;
    struct stat st;
    snprintf(path, sizeof(path), "%s/r%d-%d.trace", dir, n, round);
    if (trc_rec_open(path, NULL, &rec) < 0)
        return -1;
    pthread_barrier_init(&start, NULL, (unsigned)n);
    int failed = 0;
    for (int i = 0; i < n; i++) {
        jobs[i] = (job_t){ rec, rings[i], EVENTS, &start, 0, 0 };
        failed |= fill(rec, rings[i], 88172645463325252ull + (uint64_t)i);
        pthread_create(&th[i], NULL, record_loop, &jobs[i]);
    }
    *ns = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        failed |= jobs[i].failed;
        *ns = jobs[i].ns / EVENTS > *ns ? jobs[i].ns / EVENTS : *ns;
    }
    uint64_t events = trc_rec_events(rec);
    failed |= trc_rec_close(rec) != 0 || stat(path, &st) != 0;
    *bpe = failed ? 0 : (double)st.st_size / (double)events;
    pthread_barrier_destroy(&start);
    unlink(path);
    return failed ? -1 : 0;
}

static double min(double a, double b)
{
    return a < b ? a : b;
}

int main(void)
{
    char dir[] = "/tmp/bench_trace_record.XXXXXX";
    ring_t *rings[2] = { malloc(sizeof(ring_t)), malloc(sizeof(ring_t)) };
    double call = 1e30, one = 1e30, two = 1e30, bpe1 = 0, bpe2 = 0, ns;
    int failed = !mkdtemp(dir) || !rings[0] || !rings[1];
    for (int r = 0; r < ROUNDS && !failed; r++) {
        call = min(call, empty_ns(rings[0]));
        failed |= round_of(1, rings, dir, r, &ns, &bpe1) < 0;
        one = min(one, ns);
        failed |= round_of(2, rings, dir, r, &ns, &bpe2) < 0;
        two = min(two, ns);
    }
    rmdir(dir);
    free(rings[0]);
    free(rings[1]);
    if (failed) {
        printf("trace_record: FAIL: recording failed\n");
        return 1;
    }
    printf("trace_record: bytes per event, training-like mix (%d events a thread, call stacks "
           "of allocations, header and tables included): %.1f with 1 thread, %.1f with 2; "
           "budget %.0f: %s\n", EVENTS, bpe1, bpe2, BUDGET,
           bpe1 <= BUDGET && bpe2 <= BUDGET ? "met" : "NOT met");
    printf("trace_record: empty function call           %6.1f ns  (%ld CPUs online; the "
           "writer thread runs beside the recording ones)\n", call, sysconf(_SC_NPROCESSORS_ONLN));
    printf("trace_record: record an event, 1 thread     %6.1f ns  (%.1fx an empty call)\n", one,
           one / call);
    printf("trace_record: record an event, 2 threads    %6.1f ns per event per thread  "
           "(%.1fx an empty call, %.2fx one thread)\n", two, two / call, two / one);
    return 0;
}
