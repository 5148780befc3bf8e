/* SPDX-License-Identifier: MIT */
/*
 * shim_trace_test.h - helpers for the tests of the shim's recording (tests/shim_trace_*.c).
 *
 * A test runs a scenario of its own under libelixir.so with ELIXIR_TRACE set (shim_test.h's
 * sh_run), then reads the trace back with the tracer's reader (tt_load: every event, with
 * what the reader hands out only until the next event copied), and checks it;
 * tt_record_scenario does both for a program whose scenario is `self scenario`.  The scenario's
 * kernels are declared here (tt_ptx) and defined in the program that defines TT_KERNELS
 * before including this header: tt_k1(p, n), tt_k2(p, q, n) and tt_k3(p, n), each touching
 * n words of each pointer.
 */
#ifndef SHIM_TRACE_TEST_H
#define SHIM_TRACE_TEST_H

#include <fcntl.h>
#include <spawn.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "../tracer/trace.h"
#include "shim_test.h"
#include "simtest.h"

typedef struct tt_trace {
    trc_reader_t *reader;       /* kept open: strings and stacks stay valid */
    trc_event_t *ev;
    size_t n;
    int rc;                     /* the reader's last result: 0 clean end, < 0 an error */
    int complete;               /* END seen */
    char error[256];
} tt_trace_t;

/* Reads every event of the trace at path; exits 1 when it cannot be opened at all. */
static inline void tt_load(const char *path, tt_trace_t *t)
{
    size_t cap = 0;
    trc_event_t ev;
    int rc = trc_reader_open_file(path, &t->reader);

    *t = (tt_trace_t){ .reader = t->reader };
    if (rc < 0) {
        fprintf(stderr, "cannot read the trace %s: %s (%s)\n", path, strerror(-rc),
                t->reader ? trc_reader_error(t->reader) : "");
        exit(1);
    }
    while ((rc = trc_reader_next(t->reader, &ev)) > 0) {
        if (t->n == cap) {
            cap = cap ? 2 * cap : 1024;
            t->ev = realloc(t->ev, cap * sizeof(*t->ev));
            EXPECT(t->ev != NULL, "out of memory");
        }
        if (ev.type == TRC_EV_LAUNCH && ev.u.launch.nallocs) {
            uint32_t n = ev.u.launch.nallocs;
            uint64_t *a = calloc(2 * (size_t)n, sizeof(*a));  /* (ids, then offsets) */
            EXPECT(a != NULL, "out of memory");
            memcpy(a, ev.u.launch.allocs, n * sizeof(*a));
            if (ev.u.launch.offsets)
                memcpy(a + n, ev.u.launch.offsets, n * sizeof(*a));
            ev.u.launch.allocs = a;
            ev.u.launch.offsets = a + n;
        }
        if (ev.type == TRC_EV_OPTIONS) {
            trc_option_t *o = malloc((ev.u.options.count + 1) * sizeof(*o));
            EXPECT(o != NULL, "out of memory");
            memcpy(o, ev.u.options.opts, ev.u.options.count * sizeof(*o));
            ev.u.options.opts = o;
        }
        t->ev[t->n++] = ev;
    }
    t->rc = rc;
    t->complete = trc_reader_complete(t->reader);
    snprintf(t->error, sizeof(t->error), "%s", trc_reader_error(t->reader));
}

/* The trace must have been read to its end without an error. */
static inline void tt_expect_clean(const tt_trace_t *t, const char *what)
{
    EXPECT(t->rc == 0, "%s: the reader stopped with %s: %s", what, strerror(-t->rc), t->error);
}

static inline size_t tt_count(const tt_trace_t *t, trc_type_t type)
{
    size_t n = 0;

    for (size_t i = 0; i < t->n; i++)
        n += t->ev[i].type == type;
    return n;
}

/* The i-th event of a type (from 0), or NULL. */
static inline const trc_event_t *tt_nth(const tt_trace_t *t, trc_type_t type, size_t nth)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->ev[i].type == type && nth-- == 0)
            return &t->ev[i];
    return NULL;
}

/* The value of option `name` in the first OPTIONS record, or NULL. */
static inline const char *tt_option(const tt_trace_t *t, const char *name)
{
    const trc_event_t *o = tt_nth(t, TRC_EV_OPTIONS, 0);

    for (uint32_t i = 0; o && i < o->u.options.count; i++)
        if (strcmp(o->u.options.opts[i].name, name) == 0)
            return o->u.options.opts[i].value;
    return NULL;
}

/* The i-th launch of function `func` (from 0), or NULL. */
static inline const trc_event_t *tt_launch_of(const tt_trace_t *t, const char *func, size_t nth)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->ev[i].type == TRC_EV_LAUNCH && strcmp(t->ev[i].u.launch.func, func) == 0 &&
            nth-- == 0)
            return &t->ev[i];
    return NULL;
}

/* The ids of a scenario's first n allocations: its ALLOC records in order, each at the address
 * the scenario printed in `out` (hexadecimal, one after another). */
static inline void tt_alloc_ids(const tt_trace_t *t, const char *out, uint64_t *ids, int n)
{
    const char *s = out;

    EXPECT(tt_count(t, TRC_EV_ALLOC) == (size_t)n, "%zu ALLOC records, expected %d",
           tt_count(t, TRC_EV_ALLOC), n);
    for (int i = 0; i < n; i++) {
        char *end;
        unsigned long long addr = strtoull(s, &end, 16);
        const trc_alloc_t *a = &tt_nth(t, TRC_EV_ALLOC, (size_t)i)->u.alloc;
        EXPECT(end != s && a->addr == addr, "allocation %d at 0x%llx, its ALLOC record's 0x%llx",
               i, addr, (unsigned long long)a->addr);
        ids[i] = a->id;
        s = end;
    }
}

/* Launch i (l) is of kernel `func` and names exactly the allocations ids[want[0]],
 * ids[want[1]], ... in that order (want ends at a negative index). */
static inline void tt_expect_launch(const trc_launch_t *l, int i, const char *func,
                                    const uint64_t *ids, const int *want)
{
    uint32_t n = 0;

    EXPECT(l->func && strcmp(l->func, func) == 0, "launch %d: '%s', expected %s", i,
           l->func ? l->func : "(none)", func);
    while (want[n] >= 0)
        n++;
    EXPECT(l->nallocs == n, "launch %d: %u allocations, expected %u", i, l->nallocs, n);
    for (uint32_t k = 0; k < n && k < l->nallocs; k++)
        EXPECT(l->allocs[k] == ids[want[k]],
               "launch %d: allocation %u is id %llu, expected %llu (P%d)", i, k,
               (unsigned long long)l->allocs[k], (unsigned long long)ids[want[k]], want[k]);
}

/* The operation id of a LAUNCH, COPY or MEMSET event (0 for other types). */
static inline uint64_t tt_op(const trc_event_t *e)
{
    switch (e->type) {
    case TRC_EV_LAUNCH: return e->u.launch.id;
    case TRC_EV_COPY: return e->u.copy.id;
    case TRC_EV_MEMSET: return e->u.memset.id;
    default: return 0;
    }
}

static inline void tt_free(tt_trace_t *t)
{
    for (size_t i = 0; i < t->n; i++) {
        if (t->ev[i].type == TRC_EV_LAUNCH && t->ev[i].u.launch.nallocs)
            free((void *)t->ev[i].u.launch.allocs);
        if (t->ev[i].type == TRC_EV_OPTIONS)
            free((void *)t->ev[i].u.options.opts);
    }
    free(t->ev);
    trc_reader_close(t->reader);
    *t = (tt_trace_t){ 0 };
}

static char tt_made[16][128];       /* every path tt_path handed out, removed at exit */

static inline void tt_cleanup(void)
{
    for (int i = 0; i < 16; i++)
        if (tt_made[i][0])
            unlink(tt_made[i]);
}

/* A fresh path for this test's trace number `k` (0 to 15; no file there, and none left when
 * the test exits, whether it passes or fails). */
static inline const char *tt_path(const char *test, int k)
{
    static char path[4][128];
    char *p = path[k & 3];

    static int registered;

    if (!registered++)
        atexit(tt_cleanup);
    snprintf(p, sizeof(path[0]), "/tmp/elixir-%.40s-%d-%d.trace", test, (int)getpid(), k);
    memcpy(tt_made[k & 15], p, sizeof(tt_made[0]));
    unlink(p);
    return p;
}

/* "ELIXIR_TRACE=path" (static storage, one per slot; paths come from tt_path). */
static inline const char *tt_env_trace(const char *path, int slot)
{
    static char e[4][256];
    int n = snprintf(e[slot & 3], sizeof(e[0]), "ELIXIR_TRACE=%.200s", path);

    EXPECT(n > 0 && (size_t)n < sizeof(e[0]) && strlen(path) <= 200, "path too long: %s", path);
    return e[slot & 3];
}

/*
 * Runs this program again as `self scenario` under the shim, recording into tt_path(test, 0);
 * it must exit with `status` (128 + signal for a signal), else its output is shown and the
 * test exits 1.  Its trace, which must read without error up to its last record, goes into *t.
 * Returns the run (sh_run_free is the caller's).
 */
static inline sh_run_t tt_record_scenario(const char *test, int status, tt_trace_t *t)
{
    const char *path = tt_path(test, 0);
    const char *env[] = { tt_env_trace(path, 0), NULL };
    sh_run_t r = sh_run("scenario", 1, env);

    EXPECT(r.status == status, "the scenario under the shim exited %d, expected %d\nstdout:\n%s\n"
           "stderr:\n%s", r.status, status, r.out, r.err);
    tt_load(path, t);
    tt_expect_clean(t, path);
    return r;
}

extern char **environ;

/* Runs $BUILD/bin/elixir-trace with args, its output into `out`; it must exit 0.  Returns
 * what it wrote into `file` (static; "" when none). */
static inline const char *tt_tool(const char *const *args, const char *out, const char *file)
{
    const char *build = getenv("BUILD");
    char path[512];
    char *argv[8];
    size_t n = 0;
    pid_t pid;
    int status;
    posix_spawn_file_actions_t fa;
    snprintf(path, sizeof(path), "%s/bin/elixir-trace", build && *build ? build : "build");
    argv[n++] = path;
    while (*args && n < 7)
        argv[n++] = (char *)*args++;
    argv[n] = NULL;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    EXPECT(posix_spawn(&pid, path, &fa, NULL, argv, environ) == 0, "cannot run %s", path);
    posix_spawn_file_actions_destroy(&fa);
    EXPECT(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "%s %s failed (status 0x%x)", path, argv[1], status);
    static char text[1 << 20];
    FILE *f = fopen(file, "r");
    size_t len = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
    if (f)
        fclose(f);
    unlink(file);
    text[len] = 0;
    return text;
}

static const char tt_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry tt_k1(.param .u64 p, .param .u64 n)\n{\n ret;\n}\n"
    ".visible .entry tt_k2(.param .u64 p, .param .u64 q, .param .u64 n)\n{\n ret;\n}\n"
    ".visible .entry tt_k3(.param .u64 p, .param .u64 n)\n{\n ret;\n}\n";

#ifdef TT_KERNELS
/* tt_k1(p, n): p[i] += 1; tt_k2(p, q, n): p[i] += q[i]; tt_k3(p, n): p[i] *= 2. */
SIM_KERNEL void tt_k1(const sim_launch_t *l, void **params)
{
    uint32_t *p = *(uint32_t **)params[0];
    uint64_t n = *(uint64_t *)params[1];

    (void)l;
    sim_kernel_access(p, n * 4, SIM_ACCESS_READWRITE);
    for (uint64_t i = 0; i < n; i++)
        p[i] += 1;
}

SIM_KERNEL void tt_k2(const sim_launch_t *l, void **params)
{
    uint32_t *p = *(uint32_t **)params[0];
    const uint32_t *q = *(const uint32_t **)params[1];
    uint64_t n = *(uint64_t *)params[2];

    (void)l;
    sim_kernel_access(p, n * 4, SIM_ACCESS_READWRITE);
    sim_kernel_access(q, n * 4, SIM_ACCESS_READ);
    for (uint64_t i = 0; i < n; i++)
        p[i] += q[i];
}

SIM_KERNEL void tt_k3(const sim_launch_t *l, void **params)
{
    uint32_t *p = *(uint32_t **)params[0];
    uint64_t n = *(uint64_t *)params[1];

    (void)l;
    sim_kernel_access(p, n * 4, SIM_ACCESS_READWRITE);
    for (uint64_t i = 0; i < n; i++)
        p[i] *= 2;
}

static inline CUresult tt_launch1(CUfunction f, CUstream s, CUdeviceptr p, uint64_t n)
{
    void *args[] = { &p, &n };
    return cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
}

static inline CUresult tt_launch2(CUfunction f, CUstream s, CUdeviceptr p, CUdeviceptr q,
                                  uint64_t n)
{
    void *args[] = { &p, &q, &n };
    return cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
}

/* Device 0 set up, a 4 KiB buffer at *p, and tt_k1 launched n times on its first 16 words,
 * the context synchronised; returns tt_k1. */
static inline CUfunction tt_k1_runs(CUdeviceptr *p, int n)
{
    CUfunction k1;

    st_setup(0);
    k1 = st_function(tt_ptx, "tt_k1");
    CHECK_CU(cuMemAlloc(p, 4096));
    for (int i = 0; i < n; i++)
        CHECK_CU(tt_launch1(k1, NULL, *p, 16));
    CHECK_CU(cuCtxSynchronize());
    return k1;
}
#endif /* TT_KERNELS */

#endif /* SHIM_TRACE_TEST_H */
