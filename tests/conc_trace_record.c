/* SPDX-License-Identifier: MIT */
/*
 * conc_trace_record.c - the recorder under contention, meant for ThreadSanitizer (the CI runs
 * conc_* with SANITIZE=thread): three waves of threads record at once with small buffers and a
 * 1 ms flush interval (so the writer thread keeps taking buffers from threads in the middle of
 * recording), intern shared strings and capture call stacks concurrently, call trc_rec_flush
 * and trc_rec_flush_thread, read the counters, and exit while others still record (their
 * buffers handed over by the key destructor during sweeps).  The trace must then hold every
 * event exactly once, each thread's in order, with one id per distinct string and stack.
 */
#include "unit_trace_util.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#define WAVES 3
#define PER_WAVE 4
#define EVENTS 4000
#define NAMES 16

static trc_rec_t *rec;
static uint32_t ids[WAVES * PER_WAVE][NAMES], stacks[WAVES * PER_WAVE];
static atomic_int errors;

static void record(int thread, uint64_t seq)
{
    static const uint64_t allocs[2] = { 1, 2 };
    trc_event_t ev = { .time = TU_TAG(thread + 1, seq) };
    if (seq % 5 == 0) {
        ev.type = TRC_EV_ALLOC;
        ev.u.alloc = (trc_alloc_t){ ev.time, 0, 0x7f0000000000ull, 4096, stacks[thread], NULL };
    } else {
        ev.type = TRC_EV_LAUNCH;
        ev.u.launch = (trc_launch_t){ .id = ev.time, .func_id = ids[thread][seq % NAMES],
                                      .device = thread, .nallocs = 2, .allocs = allocs };
    }
    if (trc_rec_event(rec, &ev) != 0)
        atomic_fetch_add(&errors, 1);
}

static void *worker(void *arg)
{
    int thread = (int)(intptr_t)arg;
    char name[32];
    for (int k = 0; k < NAMES; k++) {
        snprintf(name, sizeof(name), "kernel_%d", (k + thread) % NAMES);
        long id = trc_rec_string(rec, name);
        ids[thread][(k + thread) % NAMES] = (uint32_t)(id > 0 ? id : 0);
    }
    long s = trc_rec_stack(rec, 0, 8);
    stacks[thread] = (uint32_t)(s > 0 ? s : 0);
    for (uint64_t seq = 0; seq < EVENTS; seq++) {
        record(thread, seq);
        if (seq % 1000 == 999 && thread % 2)
            trc_rec_flush(rec);
        else if (seq % 700 == 0)
            trc_rec_flush_thread(rec);
        if (seq % 500 == 0)
            (void)(trc_rec_events(rec) + trc_rec_bytes(rec));
    }
    return NULL;
}

/* Overlapping waves: wave w+1 starts before wave w is joined. */
static void run(void)
{
    pthread_t th[WAVES * PER_WAVE];
    for (int w = 0; w < WAVES; w++) {
        for (int i = 0; i < PER_WAVE; i++)
            pthread_create(&th[w * PER_WAVE + i], NULL, worker, (void *)(intptr_t)(w * PER_WAVE + i));
        if (w > 0)
            for (int i = 0; i < PER_WAVE; i++)
                pthread_join(th[(w - 1) * PER_WAVE + i], NULL);
    }
    for (int i = 0; i < PER_WAVE; i++)
        pthread_join(th[(WAVES - 1) * PER_WAVE + i], NULL);
}

static void check(const char *path)
{
    trc_reader_t *r;
    trc_event_t ev;
    uint64_t next[WAVES * PER_WAVE] = { 0 }, n = 0, bad = 0;
    int rc = trc_reader_open_file(path, &r);
    while (rc >= 0 && (rc = trc_reader_next(r, &ev)) == 1) {
        int t = TU_THREAD(ev.time) - 1;
        uint64_t seq = TU_SEQ(ev.time);
        n++;
        if (t < 0 || t >= WAVES * PER_WAVE || seq != next[t]++) {
            bad++;
            continue;
        }
        char want[32];
        snprintf(want, sizeof(want), "kernel_%d", (int)(seq % NAMES));
        if (ev.type == TRC_EV_LAUNCH && strcmp(ev.u.launch.func, want) != 0)
            bad++;
        if (ev.type == TRC_EV_ALLOC && (!ev.u.alloc.stack || ev.u.alloc.stack->depth == 0))
            bad++;
    }
    tu_read_clean("reads cleanly", r, rc);
    CHECK("complete", 1, trc_reader_complete(r));
    CHECK("events", WAVES * PER_WAVE * EVENTS, n);
    CHECK("out of order or wrong", 0, bad);
    trc_reader_close(r);
}

int main(void)
{
    char path[64];
    trc_rec_config_t cfg = { .buffer_bytes = 512, .flush_ms = 1 };
    tu_scratch(path, sizeof(path), "conc_trace_record");
    CHECK("open", 0, trc_rec_open(path, &cfg, &rec));
    run();
    CHECK("recording errors", 0, atomic_load(&errors));
    CHECK("events counted", WAVES * PER_WAVE * EVENTS, trc_rec_events(rec));
    CHECK("close", 0, trc_rec_close(rec));
    for (int t = 1; t < WAVES * PER_WAVE; t++) {
        for (int k = 0; k < NAMES; k++)
            CHECK("one id per string", ids[0][k], ids[t][k]);
        CHECK("one id per stack", stacks[0], stacks[t]);
    }
    check(path);
    unlink(path);
    return tu_done("conc_trace_record");
}
