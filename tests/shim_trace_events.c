/* SPDX-License-Identifier: MIT */
/*
 * shim_trace_events.c - what libelixir.so records with ELIXIR_TRACE set: the process, the
 * device, the option snapshot, allocations with call sites and frees, launches with the
 * allocations they reach, copies and memsets with their operation ids and streams.
 *
 * The scenario (under the shim) allocates A (1 MiB), B (4 KiB) and C (3 MiB), sets A and
 * uploads B on a stream of its own, launches tt_k2(A, B) there and tt_k1(C + 4 KiB) on the
 * legacy stream, reads A back, sets part of C, frees B, and prints its pid and the three
 * addresses.  The test reads the trace and checks each record's fields against what the
 * scenario did: exactly these operations, in this order, with distinct increasing ids; then
 * elixir-trace's summary, kernels --json, allocs --live --json and Chrome timeline of it.
 */
#define TT_KERNELS
#include "shim_trace_test.h"

#define A_BYTES (1u << 20)
#define B_BYTES 4096u
#define C_BYTES (3u << 20)

static void scenario(void)
{
    static uint32_t host[B_BYTES / 4];
    CUdeviceptr a, b, c;
    CUstream s;

    st_setup(0);
    CUfunction k1 = st_function(tt_ptx, "tt_k1"), k2 = st_function(tt_ptx, "tt_k2");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&a, A_BYTES));
    CHECK_CU(cuMemAlloc(&b, B_BYTES));
    CHECK_CU(cuMemAlloc(&c, C_BYTES));
    for (uint32_t i = 0; i < B_BYTES / 4; i++)
        host[i] = i;
    CHECK_CU(cuMemsetD32Async(a, 7, A_BYTES / 4, s));
    CHECK_CU(cuMemcpyHtoDAsync(b, host, B_BYTES, s));
    CHECK_CU(tt_launch2(k2, s, a, b, B_BYTES / 4));
    CHECK_CU(tt_launch1(k1, NULL, c + 4096, 16));
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuMemcpyDtoH(host, a, B_BYTES));
    EXPECT(host[5] == 12, "A[5] is %u, expected 7 + 5", host[5]);
    CHECK_CU(cuMemsetD8(c, 0, 100));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuMemFree(b));
    printf("pid %d a 0x%llx b 0x%llx c 0x%llx\n", (int)getpid(), (unsigned long long)a,
           (unsigned long long)b, (unsigned long long)c);
}

typedef struct expect_ctx {
    const tt_trace_t *t;
    uint64_t a, b, c;           /* addresses */
    uint64_t ida, idb, idc;     /* their allocation ids */
} expect_ctx_t;

static void check_process(const tt_trace_t *t, int pid)
{
    const trc_event_t *p = tt_nth(t, TRC_EV_PROCESS, 0);
    char self[PATH_MAX];

    EXPECT(tt_count(t, TRC_EV_PROCESS) == 1, "%zu PROCESS records", tt_count(t, TRC_EV_PROCESS));
    EXPECT(p->u.process.pid == (uint32_t)pid, "pid %u, the scenario's was %d", p->u.process.pid,
           pid);
    EXPECT(p->u.process.ppid == (uint32_t)getpid(), "ppid %u, expected %d", p->u.process.ppid,
           (int)getpid());
    EXPECT(realpath("/proc/self/exe", self) && strcmp(p->u.process.exe, self) == 0,
           "exe '%s', expected '%s'", p->u.process.exe, self);
    EXPECT(strstr(p->u.process.cmdline, "self scenario") != NULL, "cmdline '%s'",
           p->u.process.cmdline);
    EXPECT(p->u.process.host[0] != '\0', "no host name");
}

static void check_device_options(const tt_trace_t *t, const char *path)
{
    const trc_event_t *d = tt_nth(t, TRC_EV_DEVICE, 0);
    const char *v;

    EXPECT(tt_count(t, TRC_EV_DEVICE) == 1, "%zu DEVICE records", tt_count(t, TRC_EV_DEVICE));
    EXPECT(d->u.device.device == 0 && d->u.device.name[0] && d->u.device.total_mem > 0 &&
               d->u.device.sm_count > 0 && d->u.device.cc_major > 0,
           "device %d '%s' %llu bytes sm_%u%u %u SMs", d->u.device.device, d->u.device.name,
           (unsigned long long)d->u.device.total_mem, d->u.device.cc_major, d->u.device.cc_minor,
           d->u.device.sm_count);
    EXPECT((v = tt_option(t, "ELIXIR_TRACE")) && strcmp(v, path) == 0, "ELIXIR_TRACE is '%s'",
           v ? v : "(absent)");
    EXPECT((v = tt_option(t, "ELIXIR_TRACE_LEVEL")) && strcmp(v, "all") == 0,
           "ELIXIR_TRACE_LEVEL is '%s'", v ? v : "(absent)");
    EXPECT((v = tt_option(t, "ELIXIR_TRACE_DEPTH")) && strcmp(v, "16") == 0,
           "ELIXIR_TRACE_DEPTH is '%s'", v ? v : "(absent)");
    EXPECT((v = tt_option(t, "ELIXIR_SIM_RACECHECK")) && strcmp(v, "fail") == 0,
           "the environment's ELIXIR_SIM_RACECHECK is '%s' in the snapshot", v ? v : "(absent)");
}

/* ALLOC of addr: its id; the record's size, device and call site (in this program). */
static uint64_t check_alloc(const tt_trace_t *t, uint64_t addr, uint64_t size)
{
    char self[PATH_MAX];

    EXPECT(realpath("/proc/self/exe", self) != NULL, "realpath");
    for (size_t i = 0; i < t->n; i++) {
        const trc_alloc_t *a = &t->ev[i].u.alloc;
        if (t->ev[i].type != TRC_EV_ALLOC || a->addr != addr)
            continue;
        EXPECT(a->size == size && a->device == 0, "ALLOC 0x%llx: size %llu device %d",
               (unsigned long long)addr, (unsigned long long)a->size, a->device);
        EXPECT(a->stack && a->stack->depth > 1 && a->stack->depth <= 16,
               "ALLOC 0x%llx: call site of %u frames", (unsigned long long)addr,
               a->stack ? a->stack->depth : 0);
        EXPECT(strcmp(a->stack->frames[0].module, self) == 0,
               "ALLOC 0x%llx: first frame in '%s', expected this program '%s'",
               (unsigned long long)addr, a->stack->frames[0].module, self);
        return a->id;
    }
    EXPECT(0, "no ALLOC record of 0x%llx", (unsigned long long)addr);
    return 0;
}

/* The operations, in order: memset A, copy to B, launch k2(A, B), launch k1(C + 4K), copy
 * from A, memset C. */
static void check_ops(const expect_ctx_t *x)
{
    const tt_trace_t *t = x->t;
    const trc_event_t *ops[8];
    size_t n = 0;

    for (size_t i = 0; i < t->n && n < 8; i++)
        if (tt_op(&t->ev[i]))
            ops[n++] = &t->ev[i];
    EXPECT(n == 6, "%zu launches, copies and memsets, expected 6", n);
    for (size_t i = 1; i < n; i++)
        EXPECT(tt_op(ops[i]) > tt_op(ops[i - 1]) && ops[i]->time >= ops[i - 1]->time,
               "operation %zu: id %llu time %llu after id %llu time %llu", i,
               (unsigned long long)tt_op(ops[i]), (unsigned long long)ops[i]->time,
               (unsigned long long)tt_op(ops[i - 1]), (unsigned long long)ops[i - 1]->time);
    const trc_memset_t *m = &ops[0]->u.memset;
    EXPECT(ops[0]->type == TRC_EV_MEMSET && m->dst == x->a && m->bytes == A_BYTES &&
               m->value == 7 && m->elem_size == 4 && m->stream != 0 && m->device == 0,
           "first: type %d dst 0x%llx bytes %llu value %u elem %u stream %llu", ops[0]->type,
           (unsigned long long)m->dst, (unsigned long long)m->bytes, m->value, m->elem_size,
           (unsigned long long)m->stream);
    uint64_t s = m->stream;
    const trc_copy_t *c = &ops[1]->u.copy;
    EXPECT(ops[1]->type == TRC_EV_COPY && c->kind == TRC_COPY_HTOD && c->dst == x->b &&
               c->bytes == B_BYTES && c->stream == s,
           "second: type %d kind %u dst 0x%llx bytes %llu stream %llu (memset's %llu)",
           ops[1]->type, c->kind, (unsigned long long)c->dst, (unsigned long long)c->bytes,
           (unsigned long long)c->stream, (unsigned long long)s);
    const trc_launch_t *l = &ops[2]->u.launch;
    uint64_t lo = x->ida < x->idb ? x->ida : x->idb, hi = x->ida < x->idb ? x->idb : x->ida;
    EXPECT(ops[2]->type == TRC_EV_LAUNCH && strcmp(l->func, "tt_k2") == 0 && l->stream == s &&
               l->device == 0 && l->nallocs == 2 && l->allocs[0] == lo && l->allocs[1] == hi,
           "third: type %d '%s' stream %llu, %u allocations (%llu, %llu), expected A and B "
           "(%llu, %llu)", ops[2]->type, ops[2]->type == TRC_EV_LAUNCH ? l->func : "",
           (unsigned long long)l->stream, l->nallocs,
           l->nallocs ? (unsigned long long)l->allocs[0] : 0,
           l->nallocs > 1 ? (unsigned long long)l->allocs[1] : 0, (unsigned long long)lo,
           (unsigned long long)hi);
    l = &ops[3]->u.launch;
    EXPECT(ops[3]->type == TRC_EV_LAUNCH && strcmp(l->func, "tt_k1") == 0 && l->stream == 0 &&
               l->nallocs == 1 && l->allocs[0] == x->idc,
           "fourth: '%s' stream %llu, %u allocations (first %llu), expected C (%llu) on the "
           "legacy stream", ops[3]->type == TRC_EV_LAUNCH ? l->func : "",
           (unsigned long long)l->stream, l->nallocs,
           l->nallocs ? (unsigned long long)l->allocs[0] : 0, (unsigned long long)x->idc);
    c = &ops[4]->u.copy;
    EXPECT(ops[4]->type == TRC_EV_COPY && c->kind == TRC_COPY_DTOH && c->src == x->a &&
               c->bytes == B_BYTES && c->stream == 0,
           "fifth: type %d kind %u src 0x%llx bytes %llu stream %llu", ops[4]->type, c->kind,
           (unsigned long long)c->src, (unsigned long long)c->bytes,
           (unsigned long long)c->stream);
    m = &ops[5]->u.memset;
    EXPECT(ops[5]->type == TRC_EV_MEMSET && m->dst == x->c && m->bytes == 100 && m->value == 0 &&
               m->elem_size == 1 && m->stream == 0,
           "sixth: type %d dst 0x%llx bytes %llu elem %u stream %llu", ops[5]->type,
           (unsigned long long)m->dst, (unsigned long long)m->bytes, m->elem_size,
           (unsigned long long)m->stream);
}

/* ELIXIR_TRACE_DEPTH: at most that many frames per call site, none with 0. */
static void check_depth(int depth)
{
    const char *path = tt_path("events", 1);
    char denv[64];
    const char *env[] = { tt_env_trace(path, 1), denv, NULL };
    tt_trace_t t;

    snprintf(denv, sizeof(denv), "ELIXIR_TRACE_DEPTH=%d", depth);
    sh_run_t r = sh_run_ok("scenario", env);
    tt_load(path, &t);
    tt_expect_clean(&t, path);
    EXPECT(tt_count(&t, TRC_EV_ALLOC) == 3, "depth %d: %zu ALLOC records", depth,
           tt_count(&t, TRC_EV_ALLOC));
    for (size_t i = 0; i < 3; i++) {
        const trc_alloc_t *a = &tt_nth(&t, TRC_EV_ALLOC, i)->u.alloc;
        EXPECT(depth ? a->stack && a->stack->depth >= 1 && a->stack->depth <= (uint32_t)depth
                     : a->stack_id == 0 && !a->stack,
               "ELIXIR_TRACE_DEPTH=%d: a call site of %u frames (stack id %u)", depth,
               a->stack ? a->stack->depth : 0, a->stack_id);
    }
    tt_free(&t);
    unlink(path);
    sh_run_free(&r);
}

/* `allocs --live --json`: A and C, never freed, and not B, whose FREE the tool must apply. */
static void check_live(const char *path, const char *out, const expect_ctx_t *x)
{
    char want[3][64];
    const char *live[] = { "allocs", path, "--live", "--json", NULL };
    const char *text = tt_tool(live, out, out);
    const uint64_t addr[3] = { x->a, x->b, x->c };

    for (int i = 0; i < 3; i++)
        snprintf(want[i], sizeof(want[i]), "\"addr\": %llu,", (unsigned long long)addr[i]);
    EXPECT(strstr(text, "\"matched\": 2,") && strstr(text, want[0]) && !strstr(text, want[1]) &&
               strstr(text, want[2]),
           "allocs --live --json does not list exactly A and C (B was freed):\n%s", text);
}

/* What elixir-trace makes of this trace: the summary, the kernels as JSON, the allocations
 * still live, the timeline. */
static void check_tool(const char *path, size_t events, const expect_ctx_t *x)
{
    char out[256], json[256], want[64];
    snprintf(out, sizeof(out), "%s.out", path);
    snprintf(json, sizeof(json), "%s.json", path);

    const char *summary[] = { "summary", path, NULL };
    const char *text = tt_tool(summary, out, out);
    snprintf(want, sizeof(want), ", %zu events, complete", events);
    static const char *const lines[] = { "devices     1", "  ELIXIR_TRACE_LEVEL=all",
                                         "top allocations by size (3 of 3)",
                                         "(shim_trace_events)", "migrations  0" };
    EXPECT(strstr(text, want), "the summary does not say '%s':\n%s", want, text);
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
        EXPECT(strstr(text, lines[i]), "the summary lacks '%s':\n%s", lines[i], text);

    const char *kernels[] = { "kernels", path, "--json", NULL };
    text = tt_tool(kernels, out, out);
    EXPECT(strstr(text, "{\"name\": \"tt_k1\", \"launches\": 1,") &&
               strstr(text, "{\"name\": \"tt_k2\", \"launches\": 1,"),
           "kernels --json does not list tt_k1 and tt_k2 once each:\n%s", text);

    check_live(path, out, x);
    const char *timeline[] = { "timeline", "--chrome", json, path, NULL };
    text = tt_tool(timeline, out, json);
    unlink(out);
    static const char *const names[] = { "\"tt_k1\"", "\"tt_k2\"", "\"copy HtoD\"",
                                         "\"copy DtoH\"", "\"memset\"" };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        EXPECT(strstr(text, names[i]), "the Chrome timeline does not name %s", names[i]);
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    const char *path = tt_path("events", 0);
    const char *env[] = { tt_env_trace(path, 0), NULL };
    sh_run_t r = sh_run_ok("scenario", env);
    expect_ctx_t x = { 0 };
    unsigned long long a, b, c;
    int pid;
    tt_trace_t t;

    EXPECT(sscanf(r.out, "pid %d a %llx b %llx c %llx", &pid, &a, &b, &c) == 4,
           "the scenario printed '%s'", r.out);
    struct stat st;
    EXPECT(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "trace mode %o, expected 600",
           (unsigned)(st.st_mode & 0777));
    tt_load(path, &t);
    tt_expect_clean(&t, path);
    EXPECT(t.complete, "the trace has no END record");
    EXPECT(trc_reader_header(t.reader)->flags & TRC_FLAG_VIRTUAL_TIME,
           "the simulator's trace does not say its times are virtual");
    check_process(&t, pid);
    check_device_options(&t, path);
    x = (expect_ctx_t){ .t = &t, .a = a, .b = b, .c = c };
    x.ida = check_alloc(&t, a, A_BYTES);
    x.idb = check_alloc(&t, b, B_BYTES);
    x.idc = check_alloc(&t, c, C_BYTES);
    EXPECT(x.ida && x.idb && x.idc && x.ida != x.idb && x.idb != x.idc && x.ida != x.idc,
           "allocation ids %llu %llu %llu", (unsigned long long)x.ida,
           (unsigned long long)x.idb, (unsigned long long)x.idc);
    const trc_event_t *f = tt_nth(&t, TRC_EV_FREE, 0);
    EXPECT(tt_count(&t, TRC_EV_FREE) == 1 && f->u.free.id == x.idb,
           "%zu FREE records, the first of id %llu; expected one, of B (%llu)",
           tt_count(&t, TRC_EV_FREE), f ? (unsigned long long)f->u.free.id : 0,
           (unsigned long long)x.idb);
    check_ops(&x);
    check_tool(path, t.n, &x);
    printf("trace of %zu events: process, device, options, 3 allocations with call sites, "
           "1 free, 2 launches, 2 copies, 2 memsets as done\n", t.n);
    check_depth(2);
    check_depth(0);
    printf("call sites of at most 2 frames with ELIXIR_TRACE_DEPTH=2, none with 0\n");
    tt_free(&t);
    unlink(path);
    sh_run_free(&r);
    return 0;
}
