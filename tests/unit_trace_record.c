/* SPDX-License-Identifier: MIT */
/*
 * unit_trace_record.c - the recorder (tracer/record.h) end to end, each trace read back:
 *  - every event type recorded by one thread comes back field for field;
 *  - 8 threads record 20000 events each (every type, small buffers so that many are handed
 *    over) while interning shared and private strings and a call stack: one id per distinct
 *    string and stack across threads, every event present once, each thread's events in the
 *    order it recorded them, close drains everything and END counts the events;
 *  - a quiet thread's events reach the file within the flush interval, an exited thread's
 *    without any flush, and trc_rec_flush writes other threads' buffers;
 *  - a child that records, flushes, records a little more and SIGKILLs itself leaves a file
 *    that reads cleanly (no END) with exactly the flushed events;
 *  - after fork, an abandoned recorder refuses events in the child, whose thread can exit,
 *    and the parent's file holds only the parent's events;
 *  - a write error (a file size limit) disables recording and is returned by flush and close;
 *  - an existing file is never overwritten and bad configurations are refused.
 * Events are tagged by their time (thread << 40 | sequence) and compared by encoding the
 * expected and the read event with fresh delta states: equal bytes, equal fields.
 */
#include "unit_trace_util.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char dir[] = "/tmp/unit_trace_record.XXXXXX";

static void path_of(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s.trace", dir, name);
}

/* ------------------------------------------------------------------ generated events */

#define NSHARED 50

/* What one thread interned: the ids its events use. */
typedef struct names {
    uint32_t shared[NSHARED], own[NSHARED];
    uint32_t stack;
    uint64_t allocs[3];
    trc_option_t opts[2];
} names_t;

/* The seq-th event of a thread, of type seq % 14, every field derived from (thread, seq). */
static void gen(int thread, uint64_t seq, names_t *n, trc_event_t *ev)
{
    uint64_t t = TU_TAG(thread, seq), k = seq % NSHARED;
    memset(ev, 0, sizeof(*ev));
    ev->type = (trc_type_t)(TRC_EV_PROCESS + seq % 14);
    ev->time = t;
    trc_span_t span = { (int)(seq & 1), t + 10, t + 10 + seq % 1000 };
    switch (ev->type) {
    case TRC_EV_PROCESS: ev->u.process = (trc_process_t){ .pid = (uint32_t)seq, .exe_id = n->own[k] }; break;
    case TRC_EV_DEVICE: ev->u.device = (trc_device_t){ thread, n->shared[k], 1ull << 34, 9, 0, 132, NULL }; break;
    case TRC_EV_OPTIONS: ev->u.options = (trc_options_t){ 2, n->opts }; break;
    case TRC_EV_ALLOC: ev->u.alloc = (trc_alloc_t){ t, thread, 0x7f0000000000ull + seq * 4096, 4096, n->stack, NULL }; break;
    case TRC_EV_FREE: ev->u.free.id = t - 1; break;
    case TRC_EV_LAUNCH:
        n->allocs[0] = t - 3, n->allocs[1] = t - 2, n->allocs[2] = t + 100;
        ev->u.launch = (trc_launch_t){ .id = t, .func_id = n->shared[k], .stream = seq % 3,
                                       .device = thread, .span = span, .nallocs = 3,
                                       .allocs = n->allocs };
        break;
    case TRC_EV_COPY: ev->u.copy = (trc_copy_t){ 1, 0x1000 + seq, 0x7f0000000000ull, seq, 1, thread, span, t }; break;
    case TRC_EV_MEMSET: ev->u.memset = (trc_memset_t){ 0x7f0000000000ull, seq, 0, 4, 2, thread, span, t }; break;
    case TRC_EV_NCCL: ev->u.nccl = (trc_nccl_t){ n->own[k], 1, 2, seq, 5, -1, 0, thread, span, NULL }; break;
    case TRC_EV_MIGRATION: ev->u.migration = (trc_migration_t){ seq, 2 << 20, 0, 2, thread, t - 5, t + 50, t - 4, 0, 0 }; break;
    case TRC_EV_EVICTION: ev->u.eviction = (trc_eviction_t){ seq, t - 9, 2 << 20, 0, 3, 1 }; break;
    case TRC_EV_ITERATION: ev->u.iteration.index = seq; break;
    case TRC_EV_TIMING: ev->u.timing = (trc_timing_t){ t - 7, (uint32_t)(seq & 1), t + 100, t + 300 }; break;
    default: ev->u.memory = (trc_memory_t){ thread, { seq, 0, 1ull << 40, 7 } }; break;
    }
}

/* Equal fields: the same bytes from fresh encoders (ids included; resolved pointers aside). */
static int same(const trc_event_t *a, const trc_event_t *b)
{
    uint8_t x[1024], y[1024];
    trc_enc_t ea = { 0 }, eb = { 0 };
    long n = trc_encode_event(&ea, x, sizeof(x), a), m = trc_encode_event(&eb, y, sizeof(y), b);
    return n > 0 && n == m && memcmp(x, y, (size_t)n) == 0;
}

static char shared_name[NSHARED][32];

/* Interns the shared names (each thread from another starting point) and its own. */
static void intern_names(trc_rec_t *rec, int thread, names_t *n)
{
    char own[64];
    for (int i = 0; i < NSHARED; i++) {
        int k = (i + thread * 7) % NSHARED;
        long id = trc_rec_string(rec, shared_name[k]);
        CHECK("shared string id", 1, id > 0);
        n->shared[k] = (uint32_t)id;
        snprintf(own, sizeof(own), "thread_%d_name_%d", thread, i);
        id = trc_rec_string(rec, own);
        CHECK("own string id", 1, id > 0);
        n->own[i] = (uint32_t)id;
    }
    n->opts[0] = (trc_option_t){ n->shared[0], n->own[1], NULL, NULL };
    n->opts[1] = (trc_option_t){ n->own[2], n->shared[3], NULL, NULL };
}

/* ------------------------------------------------------------------ reading back */

typedef struct readback {
    int rc, complete;
    uint64_t events, end_count, next[256], bad;
    char error[256];
} readback_t;

/* Reads path; every event must be the next of its thread (by tag) and equal to gen()'s. */
static void read_back(const char *path, names_t *names, readback_t *rb)
{
    trc_reader_t *r;
    trc_event_t ev, want;
    memset(rb, 0, sizeof(*rb));
    rb->rc = trc_reader_open_file(path, &r);
    while (rb->rc >= 0 && (rb->rc = trc_reader_next(r, &ev)) == 1) {
        int thread = TU_THREAD(ev.time);
        uint64_t seq = TU_SEQ(ev.time);
        rb->events++;
        if (thread > 255 || seq != rb->next[thread]) {
            if (rb->bad++ < 5)
                printf("FAIL: thread %d: event %" PRIu64 " where %" PRIu64 " was next\n",
                       thread, seq, thread > 255 ? 0 : rb->next[thread]);
            continue;
        }
        rb->next[thread]++;
        gen(thread, seq, &names[thread], &want);
        if (!same(&want, &ev) && rb->bad++ < 5)
            printf("FAIL: thread %d event %" PRIu64 " (%s) differs\n", thread, seq,
                   trc_type_name(ev.type));
        if (ev.type == TRC_EV_LAUNCH && strcmp(ev.u.launch.func, shared_name[seq % NSHARED]))
            if (rb->bad++ < 5)
                printf("FAIL: launch function \"%s\"\n", ev.u.launch.func);
    }
    rb->complete = trc_reader_complete(r);
    snprintf(rb->error, sizeof(rb->error), "%s", trc_reader_error(r));
    trc_reader_close(r);
}

/* ------------------------------------------------------------------ one thread, every type */

static names_t names[256];

/* Closes rec and reads path back into rb, whose status must be 0 (`what` names the case). */
static void close_and_read(trc_rec_t *rec, const char *path, const char *what, readback_t *rb)
{
    char msg[96];
    CHECK("close", 0, trc_rec_close(rec));
    read_back(path, names, rb);
    snprintf(msg, sizeof(msg), "%s: status", what);
    CHECK(msg, 0, rb->rc);
    if (rb->rc < 0)
        printf("  %s\n", rb->error);
}

static void test_types(void)
{
    char path[128];
    trc_rec_t *rec;
    path_of(path, sizeof(path), "types");
    CHECK("open", 0, trc_rec_open(path, NULL, &rec));
    intern_names(rec, 99, &names[99]);
    names[99].stack = (uint32_t)trc_rec_stack(rec, 0, 16);
    CHECK("stack id", 1, names[99].stack > 0);
    trc_event_t ev;
    for (uint64_t seq = 0; seq < 28; seq++) {
        gen(99, seq, &names[99], &ev);
        CHECK("trc_rec_event", 0, trc_rec_event(rec, &ev));
    }
    CHECK("a table record is not an event", -EINVAL,
          trc_rec_event(rec, &(trc_event_t){ .type = TRC_REC_TIME_BASE }));
    CHECK("unknown type", -EINVAL, trc_rec_event(rec, &(trc_event_t){ .type = 99 }));
    trc_timing_t bad = { 1, 0, 10, 5 };
    CHECK("timing end before start", -EINVAL,
          trc_rec_event(rec, &(trc_event_t){ .type = TRC_EV_TIMING, .u.timing = bad }));
    CHECK("events counted", 28, trc_rec_events(rec));
    readback_t rb;
    close_and_read(rec, path, "types", &rb);
    CHECK("types: events", 28, rb.events);
    CHECK("types: mismatches", 0, rb.bad);
    CHECK("types: complete", 1, rb.complete);
}

/* ------------------------------------------------------------------ many threads */

#define NTHREADS 8
#define PER_THREAD 20000

typedef struct worker {
    trc_rec_t *rec;
    int thread;
    uint64_t count;
} worker_t;

static void *record_many(void *arg)
{
    worker_t *w = arg;
    names_t *n = &names[w->thread];
    trc_event_t ev;
    intern_names(w->rec, w->thread, n);
    n->stack = (uint32_t)trc_rec_stack(w->rec, 0, 16);
    for (uint64_t seq = 0; seq < w->count; seq++) {
        gen(w->thread, seq, n, &ev);
        int rc = trc_rec_event(w->rec, &ev);
        if (rc != 0) {
            printf("FAIL: thread %d: trc_rec_event = %d\n", w->thread, rc);
            failures++;
            break;
        }
    }
    return NULL;
}

static void run_workers(trc_rec_t *rec, int first, int n, uint64_t count)
{
    pthread_t th[NTHREADS];
    worker_t w[NTHREADS];
    for (int i = 0; i < n; i++) {
        w[i] = (worker_t){ rec, first + i, count };
        pthread_create(&th[i], NULL, record_many, &w[i]);
    }
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
}

static void test_threads(void)
{
    char path[128];
    trc_rec_t *rec;
    trc_rec_config_t cfg = { .buffer_bytes = 4096, .flush_ms = 20 };
    path_of(path, sizeof(path), "threads");
    CHECK("open", 0, trc_rec_open(path, &cfg, &rec));
    run_workers(rec, 0, NTHREADS, PER_THREAD);
    CHECK("events counted", NTHREADS * PER_THREAD, trc_rec_events(rec));
    readback_t rb;
    close_and_read(rec, path, "threads", &rb);
    for (int t = 1; t < NTHREADS; t++) {
        for (int k = 0; k < NSHARED; k++)
            CHECK("one id per string across threads", names[0].shared[k], names[t].shared[k]);
        CHECK("one id per stack across threads", names[0].stack, names[t].stack);
        CHECK("own strings differ", 1, names[t].own[0] != names[0].own[0]);
    }
    CHECK("threads: complete", 1, rb.complete);
    CHECK("threads: mismatches", 0, rb.bad);
    CHECK("threads: events", NTHREADS * PER_THREAD, rb.events);
    for (int t = 0; t < NTHREADS; t++)
        CHECK("every event of the thread, in order", PER_THREAD, rb.next[t]);
    struct stat st;
    stat(path, &st);
    printf("threads: %d x %d events, %.1f bytes per event\n", NTHREADS, PER_THREAD,
           (double)st.st_size / (NTHREADS * PER_THREAD));
}

/* ------------------------------------------------------------------ flushing */

/* Polls path until n events of thread `thread` are in it (up to 5 s); the count seen. */
static uint64_t wait_for(const char *path, int thread, uint64_t n, readback_t *rb)
{
    for (int i = 0; i < 500; i++) {
        read_back(path, names, rb);
        if (rb->next[thread] >= n || rb->rc < 0)
            break;
        usleep(10000);
    }
    return rb->next[thread];
}

typedef struct quiet {
    trc_rec_t *rec;
    int thread, exit_early;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int recorded, release;
} quiet_t;

/* Records 10 events, says so, then waits (alive and quiet) until released. */
static void *quiet_thread(void *arg)
{
    quiet_t *q = arg;
    trc_event_t ev;
    for (uint64_t seq = 0; seq < 10; seq++) {
        gen(q->thread, seq, &names[q->thread], &ev);
        CHECK("quiet: event", 0, trc_rec_event(q->rec, &ev));
    }
    pthread_mutex_lock(&q->lock);
    q->recorded = 1;
    pthread_cond_broadcast(&q->cond);
    while (!q->release && !q->exit_early)
        pthread_cond_wait(&q->cond, &q->lock);
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

/* One quiet thread; `how` says how its events must reach the file: "interval" (flush_ms 50),
 * "flush" (trc_rec_flush from this thread) or "exit" (the thread exits; no flush). */
static void run_quiet(const char *how)
{
    char path[128];
    trc_rec_t *rec;
    int interval = strcmp(how, "interval") == 0, exits = strcmp(how, "exit") == 0;
    trc_rec_config_t cfg = { .flush_ms = interval ? 50 : 600000 };
    quiet_t q = { .thread = 20 + (int)strlen(how), .exit_early = exits };
    pthread_t th;
    readback_t rb;
    path_of(path, sizeof(path), how);
    CHECK("open", 0, trc_rec_open(path, &cfg, &rec));
    intern_names(rec, q.thread, &names[q.thread]);
    names[q.thread].stack = 0;
    q.rec = rec;
    pthread_mutex_init(&q.lock, NULL);
    pthread_cond_init(&q.cond, NULL);
    pthread_create(&th, NULL, quiet_thread, &q);
    pthread_mutex_lock(&q.lock);
    while (!q.recorded)
        pthread_cond_wait(&q.cond, &q.lock);
    pthread_mutex_unlock(&q.lock);
    if (exits)
        pthread_join(th, NULL);
    if (strcmp(how, "flush") == 0) {
        CHECK("trc_rec_flush", 0, trc_rec_flush(rec));
        read_back(path, names, &rb);
        CHECK("flush: all there at once", 10, rb.next[q.thread]);
        struct stat st;
        CHECK("flush: bytes written = file size", trc_rec_bytes(rec),
              stat(path, &st) == 0 ? st.st_size : -1);
    }
    CHECK(how, 10, wait_for(path, q.thread, 10, &rb));
    CHECK("read while recording: status", 0, rb.rc);
    CHECK("read while recording: not complete", 0, rb.complete);
    pthread_mutex_lock(&q.lock);
    q.release = 1;
    pthread_cond_broadcast(&q.cond);
    pthread_mutex_unlock(&q.lock);
    if (!exits)
        pthread_join(th, NULL);
    CHECK("close", 0, trc_rec_close(rec));
}

/* ------------------------------------------------------------------ crashes and forks */

/* Runs child(path), which never returns, in a child process: its wait status. */
static int in_child(void (*child)(const char *path), const char *path)
{
    int status = 0;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        child(path);
    waitpid(pid, &status, 0);
    return status;
}

/* A wait status as a shell shows it: the exit status, or 128 + the signal. */
static int exit_code(int status)
{
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* In a child: two threads record, flush, record 5 more each (left in their buffers), SIGKILL. */
static void killed_child(const char *path)
{
    trc_rec_t *rec;
    trc_rec_config_t cfg = { .buffer_bytes = 4096, .flush_ms = 600000 };
    if (trc_rec_open(path, &cfg, &rec) < 0)
        _exit(3);
    run_workers(rec, 30, 2, 3000);
    if (trc_rec_flush(rec) < 0)
        _exit(4);
    trc_event_t ev;
    for (uint64_t seq = 3000; seq < 3005; seq++) {
        gen(30, seq, &names[30], &ev);
        trc_rec_event(rec, &ev);
    }
    kill(getpid(), SIGKILL);
    _exit(5);
}

static void test_sigkill(void)
{
    char path[128];
    path_of(path, sizeof(path), "killed");
    int status = in_child(killed_child, path);
    CHECK("child killed by SIGKILL", SIGKILL, WIFSIGNALED(status) ? WTERMSIG(status) : -status);
    trc_reader_t *r;
    trc_event_t ev;
    CHECK("killed: opens", 0, trc_reader_open_file(path, &r));
    uint64_t n = 0, threads[2] = { 0, 0 };
    int rc;
    while ((rc = trc_reader_next(r, &ev)) == 1) {
        n++;
        int t = TU_THREAD(ev.time) - 30;
        if (t == 0 || t == 1)
            CHECK("killed: in order", threads[t]++, TU_SEQ(ev.time));
    }
    tu_read_clean("killed: reads cleanly", r, rc);
    CHECK("killed: not complete", 0, trc_reader_complete(r));
    CHECK("killed: the flushed events, no more", 6000, n);
    CHECK("killed: thread 30", 3000, threads[0]);
    CHECK("killed: thread 31", 3000, threads[1]);
    trc_reader_close(r);
}

typedef struct forker {
    trc_rec_t *rec;
    pid_t child;
} forker_t;

/* AddressSanitizer's allocator (the runtime GCC ships here) takes no lock around fork: when
 * the writer thread was inside it at the fork, a child that exits a thread (which hands the
 * thread's allocator cache back) waits forever for the lock it held.  Under ASan the child
 * therefore leaves with _exit after its checks; the plain build checks the thread exit. */
#if defined(__SANITIZE_ADDRESS__)
#define CHILD_THREAD_EXIT 0
#else
#define CHILD_THREAD_EXIT 1
#endif

/* Records, forks: the child abandons the recorder and exits this (its only) thread, so the key
 * destructor runs there; the parent records 10 more. */
static void *fork_thread(void *arg)
{
    forker_t *f = arg;
    trc_event_t ev;
    for (uint64_t seq = 0; seq < 10; seq++) {
        gen(40, seq, &names[40], &ev);
        trc_rec_event(f->rec, &ev);
    }
    fflush(stdout);
    f->child = fork();
    if (f->child == 0) {
        alarm(10);
        trc_rec_abandon(f->rec);
        gen(40, 10, &names[40], &ev);
        if (trc_rec_event(f->rec, &ev) != -ECANCELED || trc_rec_string(f->rec, "x") != -ECANCELED ||
            trc_rec_stack(f->rec, 0, 4) != -ECANCELED || trc_rec_flush(f->rec) != -ECANCELED)
            _exit(2);
        trc_rec_flush_thread(f->rec);
        if (!CHILD_THREAD_EXIT)
            _exit(0);
        pthread_exit(NULL); /* the last thread: the child exits with status 0 */
    }
    for (uint64_t seq = 10; seq < 20; seq++) {
        gen(40, seq, &names[40], &ev);
        trc_rec_event(f->rec, &ev);
    }
    return NULL;
}

static void test_fork(void)
{
    char path[128];
    trc_rec_t *rec;
    pthread_t th;
    forker_t f;
    int status = -1;
    path_of(path, sizeof(path), "fork");
    CHECK("open", 0, trc_rec_open(path, NULL, &rec));
    intern_names(rec, 40, &names[40]);
    names[40].stack = 0;
    f.rec = rec;
    pthread_create(&th, NULL, fork_thread, &f);
    pthread_join(th, NULL);
    waitpid(f.child, &status, 0);
    CHECK("child: abandoned recorder refuses, thread exits", 0, exit_code(status));
    readback_t rb;
    close_and_read(rec, path, "fork", &rb);
    CHECK("fork: the parent's events only", 20, rb.events);
    CHECK("fork: in order", 20, rb.next[40]);
}

/* ------------------------------------------------------------------ errors */

static _Atomic int error_calls, error_seen;

static void on_error(int err)
{
    atomic_fetch_add(&error_calls, 1);
    atomic_store(&error_seen, err);
}

static void write_error_child(const char *path)
{
    struct rlimit rl = { 16384, 16384 };
    trc_rec_t *rec;
    trc_rec_config_t cfg = { .buffer_bytes = 4096, .on_error = on_error };
    trc_event_t ev;
    signal(SIGXFSZ, SIG_IGN);
    setrlimit(RLIMIT_FSIZE, &rl);
    if (trc_rec_open(path, &cfg, &rec) < 0)
        _exit(3);
    intern_names(rec, 50, &names[50]);
    for (uint64_t seq = 0; seq < 5000; seq++) {
        gen(50, seq, &names[50], &ev);
        trc_rec_event(rec, &ev);
    }
    int flush = trc_rec_flush(rec);
    gen(50, 5000, &names[50], &ev);
    int after = trc_rec_event(rec, &ev), close = trc_rec_close(rec);
    int calls = atomic_load(&error_calls), seen = atomic_load(&error_seen);
    printf("write error: flush %d, event after %d, close %d; on_error called %d times (%d)\n",
           flush, after, close, calls, seen);
    fflush(stdout);
    _exit(flush == -EFBIG && after == -EFBIG && close == -EFBIG && calls == 1 && seen == -EFBIG
              ? 0 : 1);
}

static void test_errors(void)
{
    char path[128], pattern[128];
    trc_rec_t *rec, *rec2;
    snprintf(pattern, sizeof(pattern), "%s/pid-%%p.trace", dir);
    snprintf(path, sizeof(path), "%s/pid-%d.trace", dir, (int)getpid());
    CHECK("open with %p", 0, trc_rec_open(pattern, NULL, &rec));
    CHECK("file named by pid", 0, access(path, F_OK));
    CHECK("never overwritten", -EEXIST, trc_rec_open(pattern, NULL, &rec2));
    CHECK("no recorder on error", 0, rec2 != NULL);
    CHECK("close", 0, trc_rec_close(rec));
    trc_rec_config_t tiny = { .buffer_bytes = 16 };
    path_of(path, sizeof(path), "tiny");
    CHECK("buffer too small", -EINVAL, trc_rec_open(path, &tiny, &rec2));
    CHECK("missing directory", -ENOENT, trc_rec_open("/nonexistent-dir/x.trace", NULL, &rec2));

    path_of(path, sizeof(path), "write-error");
    CHECK("write error disables recording, told once, returned by flush and close", 0,
          exit_code(in_child(write_error_child, path)));
    /* The file was cut back to its last whole buffer: it reads to its end without an error
     * (and without END). */
    trc_reader_t *r;
    trc_event_t ev;
    uint64_t n = 0;
    int rc = trc_reader_open_file(path, &r);
    while (rc >= 0 && (rc = trc_reader_next(r, &ev)) == 1)
        n++;
    CHECK("write error: the file ends at a record boundary", 0, rc);
    if (rc < 0)
        printf("  %s\n", trc_reader_error(r));
    CHECK("write error: events kept", 1, n > 0);
    CHECK("write error: no END", 0, trc_reader_complete(r));
    trc_reader_close(r);
}

/* A record larger than a buffer gets a buffer of its own. */
static void test_big_record(void)
{
    char path[128];
    trc_rec_t *rec;
    trc_rec_config_t cfg = { .buffer_bytes = 256 };
    static trc_option_t opts[2000];
    path_of(path, sizeof(path), "big");
    CHECK("open", 0, trc_rec_open(path, &cfg, &rec));
    long id = trc_rec_string(rec, "a-long-option-name");
    for (int i = 0; i < 2000; i++)
        opts[i] = (trc_option_t){ (uint32_t)id, (uint32_t)id, NULL, NULL };
    trc_event_t ev = { .type = TRC_EV_OPTIONS, .time = 5, .u.options = { 2000, opts } };
    CHECK("big options record", 0, trc_rec_event(rec, &ev));
    ev.u.options.count = 1;
    CHECK("small one after it", 0, trc_rec_event(rec, &ev));
    CHECK("close", 0, trc_rec_close(rec));
    trc_reader_t *r;
    CHECK("big: opens", 0, trc_reader_open_file(path, &r));
    CHECK("big: first", 1, trc_reader_next(r, &ev));
    CHECK("big: option count", 2000, ev.u.options.count);
    CHECK("big: second", 1, trc_reader_next(r, &ev));
    CHECK("big: end", 0, trc_reader_next(r, &ev));
    trc_reader_close(r);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    for (int k = 0; k < NSHARED; k++)
        snprintf(shared_name[k], sizeof(shared_name[k]), "kernel_%d", k);
    test_types();
    test_threads();
    run_quiet("interval");
    run_quiet("flush");
    run_quiet("exit");
    test_sigkill();
    test_fork();
    test_errors();
    test_big_record();
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        printf("warning: could not remove %s\n", dir);
    return tu_done("unit_trace_record");
}
