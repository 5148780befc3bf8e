/* SPDX-License-Identifier: MIT */
/*
 * unit_trace_roundtrip.c - the trace writer and reader together: every record type written
 * through the typed emitters (with interned strings and stacks, spans known and unknown,
 * extreme values) is read back and compared field by field, strings and stacks resolved; the
 * file is 0600, "%p" names it after the pid and an existing file is never overwritten; the
 * encoder reports -ENOSPC without side effects and honours TIME_BASE records (which reset every
 * delta base, so a block encoded on its own and handed to trc_writer_append decodes in the
 * middle of a file, and the writer's own next event resynchronises); and a realistic
 * training-like mix of 200k events is written and its average size per event (tables
 * included) printed and checked against the 32-byte budget.
 * With ELIXIR_TRACE_SEED_DIR set, the traces are also copied there (the fuzzer's seeds).
 */
#include "../tracer/trace.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int failures;

#define CHECK(what, expected, got)                                                            \
    do {                                                                                      \
        uint64_t e_ = (uint64_t)(expected), g_ = (uint64_t)(got);                             \
        if (e_ != g_) {                                                                       \
            printf("FAIL %s:%d: %s: expected %" PRIu64 " (0x%" PRIx64 "), got %" PRIu64     \
                   " (0x%" PRIx64 ")\n", __func__, __LINE__, what, e_, e_, g_, g_);           \
            if (++failures > 20)                                                              \
                exit(1);                                                                      \
        }                                                                                     \
    } while (0)

#define CHECK_STR(what, expected, got)                                                        \
    do {                                                                                      \
        const char *e_ = (expected), *g_ = (got);                                             \
        if (!g_ || strcmp(e_, g_) != 0) {                                                     \
            printf("FAIL %s:%d: %s: expected \"%s\", got \"%s\"\n", __func__, __LINE__, what,  \
                   e_, g_ ? g_ : "(null)");                                                   \
            failures++;                                                                       \
        }                                                                                     \
    } while (0)

static char dir[] = "/tmp/unit_trace_rt.XXXXXX";

/* ------------------------------------------------------------------ expected events */

#define MAX_EXPECT 64

static trc_event_t expect[MAX_EXPECT];
static int nexpect;
static const char *names[256] = { "" }; /* string id -> the string the test interned */

static uint32_t sid(trc_writer_t *w, const char *s)
{
    long id = trc_writer_string(w, s);
    if (id <= 0 || id >= 256) {
        printf("FAIL: trc_writer_string(%s) = %ld\n", s, id);
        exit(1);
    }
    names[id] = s;
    return (uint32_t)id;
}

static void emit(trc_writer_t *w, const trc_event_t *ev)
{
    int rc = trc_emit_event(w, ev);
    CHECK("trc_emit_event", 0, rc);
    expect[nexpect++] = *ev;
}

static void same_span(const trc_span_t *e, const trc_span_t *g)
{
    CHECK("span.has_times", e->has_times, g->has_times);
    if (e->has_times) {
        CHECK("span.start", e->start, g->start);
        CHECK("span.end", e->end, g->end);
    }
}

static void same_stack(const trc_alloc_t *e, const trc_alloc_t *g, const trc_frame_t *frames,
                       uint32_t depth)
{
    CHECK("alloc.stack_id", e->stack_id, g->stack_id);
    if (!e->stack_id) {
        CHECK("alloc.stack", 0, g->stack != NULL);
        return;
    }
    CHECK("stack.depth", depth, g->stack ? g->stack->depth : 99999);
    for (uint32_t i = 0; g->stack && i < depth && i < g->stack->depth; i++) {
        CHECK("frame.module_id", frames[i].module_id, g->stack->frames[i].module_id);
        CHECK("frame.offset", frames[i].offset, g->stack->frames[i].offset);
        CHECK_STR("frame.module", names[frames[i].module_id], g->stack->frames[i].module);
    }
}

static trc_frame_t frames_a[3], frames_b[1];
static uint32_t stack_a, stack_b;
static const trc_frame_t *stack_frames[64]; /* stack id -> the frames the test interned */
static uint32_t stack_depth[64];

static uint32_t stk(trc_writer_t *w, const trc_frame_t *frames, uint32_t depth)
{
    long id = trc_writer_stack(w, frames, depth);
    if (id <= 0 || id >= 64) {
        printf("FAIL: trc_writer_stack = %ld\n", id);
        exit(1);
    }
    stack_frames[id] = frames;
    stack_depth[id] = depth;
    return (uint32_t)id;
}

static void same_event(const trc_event_t *e, const trc_event_t *g)
{
    CHECK("type", e->type, g->type);
    CHECK("time", e->time, g->time);
    if (e->type != g->type)
        return;
    const trc_process_t *pe = &e->u.process, *pg = &g->u.process;
    const trc_device_t *de = &e->u.device, *dg = &g->u.device;
    const trc_alloc_t *ae = &e->u.alloc, *ag = &g->u.alloc;
    const trc_launch_t *le = &e->u.launch, *lg = &g->u.launch;
    const trc_copy_t *ce = &e->u.copy, *cg = &g->u.copy;
    const trc_memset_t *me = &e->u.memset, *mg = &g->u.memset;
    const trc_nccl_t *ne = &e->u.nccl, *ng = &g->u.nccl;
    const trc_migration_t *ge = &e->u.migration, *gg = &g->u.migration;
    const trc_eviction_t *ve = &e->u.eviction, *vg = &g->u.eviction;
    const trc_timing_t *te = &e->u.timing, *tg = &g->u.timing;
    switch (e->type) {
    case TRC_EV_PROCESS:
        CHECK("pid", pe->pid, pg->pid);
        CHECK("ppid", pe->ppid, pg->ppid);
        CHECK("exe_id", pe->exe_id, pg->exe_id);
        CHECK_STR("exe", names[pe->exe_id], pg->exe);
        CHECK_STR("cmdline", names[pe->cmdline_id], pg->cmdline);
        CHECK_STR("host", names[pe->host_id], pg->host);
        break;
    case TRC_EV_DEVICE:
        CHECK("device", de->device, dg->device);
        CHECK_STR("name", names[de->name_id], dg->name);
        CHECK("total_mem", de->total_mem, dg->total_mem);
        CHECK("cc_major", de->cc_major, dg->cc_major);
        CHECK("cc_minor", de->cc_minor, dg->cc_minor);
        CHECK("sm_count", de->sm_count, dg->sm_count);
        break;
    case TRC_EV_OPTIONS:
        CHECK("options.count", e->u.options.count, g->u.options.count);
        for (uint32_t i = 0; i < e->u.options.count && i < g->u.options.count; i++) {
            CHECK_STR("option.name", names[e->u.options.opts[i].name_id],
                      g->u.options.opts[i].name);
            CHECK_STR("option.value", names[e->u.options.opts[i].value_id],
                      g->u.options.opts[i].value);
        }
        break;
    case TRC_EV_ALLOC:
        CHECK("alloc.id", ae->id, ag->id);
        CHECK("alloc.device", ae->device, ag->device);
        CHECK("alloc.addr", ae->addr, ag->addr);
        CHECK("alloc.size", ae->size, ag->size);
        same_stack(ae, ag, stack_frames[ae->stack_id], stack_depth[ae->stack_id]);
        break;
    case TRC_EV_FREE: CHECK("free.id", e->u.free.id, g->u.free.id); break;
    case TRC_EV_LAUNCH:
        CHECK("launch.id", le->id, lg->id);
        CHECK_STR("launch.func", names[le->func_id], lg->func);
        CHECK("launch.stream", le->stream, lg->stream);
        CHECK("launch.device", le->device, lg->device);
        same_span(&le->span, &lg->span);
        CHECK("launch.nallocs", le->nallocs, lg->nallocs);
        for (uint32_t i = 0; i < le->nallocs && i < lg->nallocs; i++) {
            CHECK("launch.allocs[i]", le->allocs[i], lg->allocs[i]);
            CHECK("launch.offsets[i]", le->offsets ? le->offsets[i] : 0,
                  lg->offsets ? lg->offsets[i] : 0);
        }
        break;
    case TRC_EV_COPY:
        CHECK("copy.kind", ce->kind, cg->kind);
        CHECK("copy.src", ce->src, cg->src);
        CHECK("copy.dst", ce->dst, cg->dst);
        CHECK("copy.bytes", ce->bytes, cg->bytes);
        CHECK("copy.stream", ce->stream, cg->stream);
        CHECK("copy.device", ce->device, cg->device);
        same_span(&ce->span, &cg->span);
        CHECK("copy.id", ce->id, cg->id);
        break;
    case TRC_EV_MEMSET:
        CHECK("memset.dst", me->dst, mg->dst);
        CHECK("memset.bytes", me->bytes, mg->bytes);
        CHECK("memset.value", me->value, mg->value);
        CHECK("memset.elem_size", me->elem_size, mg->elem_size);
        CHECK("memset.stream", me->stream, mg->stream);
        CHECK("memset.device", me->device, mg->device);
        same_span(&me->span, &mg->span);
        CHECK("memset.id", me->id, mg->id);
        break;
    case TRC_EV_NCCL:
        CHECK_STR("nccl.op", names[ne->op_id], ng->op);
        CHECK("nccl.send", ne->send, ng->send);
        CHECK("nccl.recv", ne->recv, ng->recv);
        CHECK("nccl.bytes", ne->bytes, ng->bytes);
        CHECK("nccl.comm", ne->comm, ng->comm);
        CHECK("nccl.peer", ne->peer, ng->peer);
        CHECK("nccl.stream", ne->stream, ng->stream);
        CHECK("nccl.device", ne->device, ng->device);
        same_span(&ne->span, &ng->span);
        break;
    case TRC_EV_MIGRATION:
        CHECK("migration.chunk", ge->chunk, gg->chunk);
        CHECK("migration.from", ge->from, gg->from);
        CHECK("migration.to", ge->to, gg->to);
        CHECK("migration.bytes", ge->bytes, gg->bytes);
        CHECK("migration.device", ge->device, gg->device);
        CHECK("migration.start", ge->start, gg->start);
        CHECK("migration.end", ge->end, gg->end);
        CHECK("migration.cause", ge->cause, gg->cause);
        CHECK("migration.flags", ge->flags, gg->flags);
        CHECK("migration.move", ge->move, gg->move);
        break;
    case TRC_EV_EVICTION:
        CHECK("eviction.chunk", ve->chunk, vg->chunk);
        CHECK("eviction.alloc", ve->alloc, vg->alloc);
        CHECK("eviction.from", ve->from, vg->from);
        CHECK("eviction.to", ve->to, vg->to);
        CHECK("eviction.bytes", ve->bytes, vg->bytes);
        CHECK("eviction.reason", ve->reason, vg->reason);
        break;
    case TRC_EV_TIMING:
        CHECK("timing.op", te->op, tg->op);
        CHECK("timing.source", te->source, tg->source);
        CHECK("timing.start", te->start, tg->start);
        CHECK("timing.end", te->end, tg->end);
        break;
    case TRC_EV_MEMORY:
    case TRC_EV_BUDGET:                 /* (the same fields) */
        CHECK("memory.device", e->u.memory.device, g->u.memory.device);
        for (int i = 0; i < TRC_TIERS; i++)
            CHECK("memory.bytes[i]", e->u.memory.bytes[i], g->u.memory.bytes[i]);
        break;
    case TRC_EV_DROPPED:
        CHECK("dropped.source", e->u.dropped.source, g->u.dropped.source);
        CHECK("dropped.count", e->u.dropped.count, g->u.dropped.count);
        break;
    case TRC_EV_PLAN:
        CHECK("plan.device", e->u.plan.device, g->u.plan.device);
        CHECK("plan.plan", e->u.plan.plan, g->u.plan.plan);
        CHECK("plan.iteration", e->u.plan.iteration, g->u.plan.iteration);
        CHECK("plan.ops", e->u.plan.ops, g->u.plan.ops);
        CHECK("plan.buffers", e->u.plan.buffers, g->u.plan.buffers);
        CHECK("plan.moves", e->u.plan.moves, g->u.plan.moves);
        CHECK("plan.predicted_ns", e->u.plan.predicted_ns, g->u.plan.predicted_ns);
        CHECK("plan.bound_ns", e->u.plan.bound_ns, g->u.plan.bound_ns);
        CHECK("plan.compute_ns", e->u.plan.compute_ns, g->u.plan.compute_ns);
        CHECK("plan.bytes_in", e->u.plan.bytes_in, g->u.plan.bytes_in);
        CHECK("plan.bytes_out", e->u.plan.bytes_out, g->u.plan.bytes_out);
        CHECK("plan.planning_ns", e->u.plan.planning_ns, g->u.plan.planning_ns);
        CHECK("plan.again", e->u.plan.again, g->u.plan.again);
        break;
    case TRC_EV_FOLLOW:
        CHECK("follow.device", e->u.follow.device, g->u.follow.device);
        CHECK("follow.plan", e->u.follow.plan, g->u.follow.plan);
        CHECK("follow.iteration", e->u.follow.iteration, g->u.follow.iteration);
        CHECK("follow.foreseen", e->u.follow.foreseen, g->u.follow.foreseen);
        CHECK("follow.unforeseen", e->u.follow.unforeseen, g->u.follow.unforeseen);
        CHECK("follow.missed", e->u.follow.missed, g->u.follow.missed);
        CHECK("follow.moves", e->u.follow.moves, g->u.follow.moves);
        CHECK("follow.chunks", e->u.follow.chunks, g->u.follow.chunks);
        CHECK("follow.left", e->u.follow.left, g->u.follow.left);
        CHECK("follow.partial", e->u.follow.partial, g->u.follow.partial);
        break;
    case TRC_EV_MAPPING:
        CHECK("mapping.device", e->u.mapping.device, g->u.mapping.device);
        CHECK("mapping.planned_remaps", e->u.mapping.planned_remaps, g->u.mapping.planned_remaps);
        CHECK("mapping.planned_ns", e->u.mapping.planned_ns, g->u.mapping.planned_ns);
        CHECK("mapping.reactive_remaps", e->u.mapping.reactive_remaps,
              g->u.mapping.reactive_remaps);
        CHECK("mapping.reactive_ns", e->u.mapping.reactive_ns, g->u.mapping.reactive_ns);
        break;
    case TRC_EV_GUARD:
        CHECK("guard.device", e->u.guard.device, g->u.guard.device);
        CHECK("guard.plan", e->u.guard.plan, g->u.guard.plan);
        CHECK("guard.iteration", e->u.guard.iteration, g->u.guard.iteration);
        CHECK("guard.verdict", e->u.guard.verdict, g->u.guard.verdict);
        CHECK("guard.planned_ns", e->u.guard.planned_ns, g->u.guard.planned_ns);
        CHECK("guard.reactive_ns", e->u.guard.reactive_ns, g->u.guard.reactive_ns);
        CHECK("guard.limit", e->u.guard.limit, g->u.guard.limit);
        break;
    case TRC_EV_SYNC:
        CHECK("sync.kind", e->u.sync.kind, g->u.sync.kind);
        CHECK("sync.stream", e->u.sync.stream, g->u.sync.stream);
        CHECK("sync.device", e->u.sync.device, g->u.sync.device);
        break;
    default: CHECK("iteration.index", e->u.iteration.index, g->u.iteration.index); break;
    }
}

/* ------------------------------------------------------------------ every record type */

static const uint64_t launch_allocs[] = { 7, 3, 0xffffffffffffffffull, 8, 8 };
static const uint64_t launch_offsets[] = { 0, 4096, 0, 0xffffffffffffffffull, 2 };

/* Writes one or more of each event type, the extremes included. */
static void write_all_types(trc_writer_t *w)
{
    trc_event_t ev = { .type = TRC_EV_PROCESS, .time = 1000 };
    ev.u.process = (trc_process_t){ .pid = 4242, .ppid = 1, .exe_id = sid(w, "/usr/bin/python3"),
                                    .cmdline_id = sid(w, "python3 train.py --steps 3") };
    emit(w, &ev);
    ev = (trc_event_t){ .type = TRC_EV_DEVICE, .time = 1001 };
    ev.u.device = (trc_device_t){ 0, sid(w, "NVIDIA H100 80GB HBM3"), 85520809984ull, 9, 0, 132, NULL };
    emit(w, &ev);
    static trc_option_t opts[3];
    opts[0] = (trc_option_t){ sid(w, "ELIXIR_GPU_MEMORY"), sid(w, "24G"), NULL, NULL };
    opts[1] = (trc_option_t){ sid(w, "ELIXIR_TRACE_LEVEL"), sid(w, "everything"), NULL, NULL };
    opts[2] = (trc_option_t){ sid(w, "ELIXIR_EMPTY"), sid(w, ""), NULL, NULL };
    ev = (trc_event_t){ .type = TRC_EV_OPTIONS, .time = 1001, .u.options = { 3, opts } };
    emit(w, &ev);
    ev = (trc_event_t){ .type = TRC_EV_OPTIONS, .time = 1002, .u.options = { 0, NULL } };
    emit(w, &ev);
    frames_a[0] = (trc_frame_t){ sid(w, "/usr/lib/libtorch_cuda.so"), 0x1234567, NULL };
    frames_a[1] = (trc_frame_t){ sid(w, "/usr/lib/libc10.so"), 0x42, NULL };
    frames_a[2] = (trc_frame_t){ frames_a[0].module_id, 0xffffffffffffffffull, NULL };
    frames_b[0] = (trc_frame_t){ frames_a[1].module_id, 0, NULL };
    stack_a = stk(w, frames_a, 3);
    stack_b = stk(w, frames_b, 1);
    CHECK("stack_a id", 1, stack_a);
    CHECK("stack_b id", 2, stack_b);
    CHECK("stack_a again", stack_a, trc_writer_stack(w, frames_a, 3));
    CHECK("string again", frames_a[0].module_id, trc_writer_string(w, "/usr/lib/libtorch_cuda.so"));
    ev = (trc_event_t){ .type = TRC_EV_ALLOC, .time = 2000 };
    ev.u.alloc = (trc_alloc_t){ 7, 0, 0x7f0000000000ull, 1 << 20, stack_a, NULL };
    emit(w, &ev);
    ev.time = 1500; /* time may go backwards (per-thread buffers) */
    ev.u.alloc = (trc_alloc_t){ 3, TRC_DEVICE_HOST, 0x1000, 0, stack_b, NULL };
    emit(w, &ev);
    ev.time = 2500;
    ev.u.alloc = (trc_alloc_t){ 8, 3, 0xffffffffffffffffull, 0xffffffffffffffffull, 0, NULL };
    emit(w, &ev);
    ev = (trc_event_t){ .type = TRC_EV_FREE, .time = 2600, .u.free = { 3 } };
    emit(w, &ev);
    ev = (trc_event_t){ .type = TRC_EV_LAUNCH, .time = 3000 };
    ev.u.launch = (trc_launch_t){ .id = 1, .func_id = sid(w, "sgemm_128x64_nn"), .stream = 2,
                                  .device = 0, .span = { 1, 3100, 5100 }, .nallocs = 5,
                                  .allocs = launch_allocs, .offsets = launch_offsets };
    emit(w, &ev);
    ev.time = 3001;
    ev.u.launch = (trc_launch_t){ .id = 0xfffffffffffffff0ull, .func_id = sid(w, "k"),
                                  .device = 1, .span = { 1, 10, 10 }, .nallocs = 0 };
    emit(w, &ev);
    ev.u.launch = (trc_launch_t){ .id = 2, .func_id = 0, .stream = 0xffffffffffffffffull,
                                  .device = -7, .span = { 0, 0, 0 }, .nallocs = 1,
                                  .allocs = launch_allocs + 2, .offsets = launch_offsets + 4 };
    emit(w, &ev);
    ev = (trc_event_t){ .type = TRC_EV_COPY, .time = 4000 };
    ev.u.copy = (trc_copy_t){ TRC_COPY_HTOD, 0x55550000, 0x7f0000000000ull, 4096, 1, 0,
                              { 1, 4100, 4200 }, 3 };
    emit(w, &ev);
    ev.u.copy = (trc_copy_t){ TRC_COPY_PEER, 1, 2, 3, 4, 1, { 0, 0, 0 }, 0 };
    emit(w, &ev);
    ev.u.copy = (trc_copy_t){ TRC_COPY_DTOH, 1, 2, 3, 4, 1, { 0, 0, 0 }, UINT64_MAX };
    emit(w, &ev);
    ev = (trc_event_t){ .type = TRC_EV_MEMSET, .time = 4300 };
    ev.u.memset = (trc_memset_t){ 0x7f0000001000ull, 1 << 20, 0xdeadbeef, 4, 1, 0,
                                  { 1, 4300, 4400 }, 4 };
    emit(w, &ev);
    ev = (trc_event_t){ .type = TRC_EV_TIMING, .time = 4500 };
    ev.u.timing = (trc_timing_t){ 3, TRC_TIMING_CUPTI, 4100, 4200 };
    emit(w, &ev);
    ev.u.timing = (trc_timing_t){ UINT64_MAX, TRC_TIMING_EVENTS, 0, UINT64_MAX };
    emit(w, &ev);
    ev = (trc_event_t){ .type = TRC_EV_MEMORY, .time = 4600 };
    ev.u.memory = (trc_memory_t){ 0, { 1 << 30, 0, 2 << 20, UINT64_MAX } };
    emit(w, &ev);
    ev.u.memory = (trc_memory_t){ -1, { 0, 0, 0, 0 } };
    emit(w, &ev);
    ev.time = 4601;
    ev.u.memory = (trc_memory_t){ 1, { 5, 6, 7, 8 } };
    CHECK("trc_emit_memory", 0, trc_emit_memory(w, ev.time, &ev.u.memory));
    expect[nexpect++] = ev;
    ev = (trc_event_t){ .type = TRC_EV_BUDGET, .time = 4700 };
    ev.u.budget = (trc_budget_t){ 0, { 80ull << 30, 0, 512ull << 30, 0 } };
    emit(w, &ev);
    ev.time = 4701;
    ev.u.budget = (trc_budget_t){ 3, { 1, 0, UINT64_MAX, 2 } };
    CHECK("trc_emit_budget", 0, trc_emit_budget(w, ev.time, &ev.u.budget));
    expect[nexpect++] = ev;
    ev = (trc_event_t){ .type = TRC_EV_DROPPED, .time = 4800 };
    ev.u.dropped = (trc_dropped_t){ TRC_TIMING_CUPTI, 12345 };
    emit(w, &ev);
    ev.time = 4801;
    ev.u.dropped = (trc_dropped_t){ 7, UINT64_MAX };
    CHECK("trc_emit_dropped", 0, trc_emit_dropped(w, ev.time, &ev.u.dropped));
    expect[nexpect++] = ev;
    ev = (trc_event_t){ .type = TRC_EV_PLAN, .time = 4900 };
    ev.u.plan = (trc_plan_t){ 0, 1, 2, 100000, 4000, 250000, 3000000, 2500000, 1000000,
                              1ull << 33, 1ull << 32, 750000000, 0 };
    emit(w, &ev);
    ev.time = 4901;
    ev.u.plan = (trc_plan_t){ -7, UINT64_MAX, 0, 0, 0, 0, UINT64_MAX, 0, 0, 0, UINT64_MAX, 1,
                              UINT64_MAX - 1 };
    CHECK("trc_emit_plan", 0, trc_emit_plan(w, ev.time, &ev.u.plan));
    expect[nexpect++] = ev;
    ev = (trc_event_t){ .type = TRC_EV_FOLLOW, .time = 4910 };
    ev.u.follow = (trc_follow_t){ 1, 1, 3, 120, 2, 1, 40, 80, 3, 0 };
    emit(w, &ev);
    ev.time = 4911;
    ev.u.follow = (trc_follow_t){ 0, 2, UINT64_MAX, 0, UINT64_MAX, 0, 0, UINT64_MAX, 0, 1 };
    CHECK("trc_emit_follow", 0, trc_emit_follow(w, ev.time, &ev.u.follow));
    expect[nexpect++] = ev;
    ev = (trc_event_t){ .type = TRC_EV_MAPPING, .time = 4920 };
    ev.u.mapping = (trc_mapping_t){ 0, 64, 4224000, 3, 198000 };
    emit(w, &ev);
    ev.time = 4921;
    ev.u.mapping = (trc_mapping_t){ 2, UINT64_MAX, 0, 0, UINT64_MAX };
    CHECK("trc_emit_mapping", 0, trc_emit_mapping(w, ev.time, &ev.u.mapping));
    expect[nexpect++] = ev;
    ev = (trc_event_t){ .type = TRC_EV_GUARD, .time = 4930 };
    ev.u.guard = (trc_guard_t){ 0, 1, 6, TRC_GUARD_DROPPED, 950000000, 851000000, 1100 };
    emit(w, &ev);
    ev.time = 4931;
    ev.u.guard = (trc_guard_t){ -3, UINT64_MAX, 0, UINT32_MAX, 0, UINT64_MAX, 0 };
    CHECK("trc_emit_guard", 0, trc_emit_guard(w, ev.time, &ev.u.guard));
    expect[nexpect++] = ev;
    ev = (trc_event_t){ .type = TRC_EV_SYNC, .time = 4940 };
    ev.u.sync = (trc_sync_t){ TRC_SYNC_STREAM, 3, 0 };
    emit(w, &ev);
    ev.time = 4941;
    ev.u.sync = (trc_sync_t){ UINT32_MAX, UINT64_MAX, -1 };
    CHECK("trc_emit_sync", 0, trc_emit_sync(w, ev.time, &ev.u.sync));
    expect[nexpect++] = ev;
    ev = (trc_event_t){ .type = TRC_EV_NCCL, .time = 5000 };
    ev.u.nccl = (trc_nccl_t){ sid(w, "allReduce"), 0x7f0000000000ull, 0x7f0000000000ull,
                              1 << 24, 0xabcdef, 3, -1, 0, { 1, 5001, 9000 }, NULL };
    emit(w, &ev);
    ev = (trc_event_t){ .type = TRC_EV_MIGRATION, .time = 6000 };
    ev.u.migration = (trc_migration_t){ 17, 2 << 20, TRC_TIER_GPU, TRC_TIER_HOST, 0, 5990, 7000, 1, 0, 0 };
    emit(w, &ev);
    ev.u.migration = (trc_migration_t){ 18, 2 << 20, TRC_TIER_HOST, TRC_TIER_GPU, 0, 6000, 6000, 0,
                                        TRC_MIG_PLANNED, 1ull << 45 };
    emit(w, &ev);
    ev = (trc_event_t){ .type = TRC_EV_EVICTION, .time = 5990 };
    ev.u.eviction = (trc_eviction_t){ 17, 7, 2 << 20, TRC_TIER_GPU, TRC_TIER_NVME, 3 };
    emit(w, &ev);
    ev = (trc_event_t){ .type = TRC_EV_ITERATION, .time = 10000, .u.iteration = { 1 } };
    emit(w, &ev);
    ev = (trc_event_t){ .type = TRC_EV_ITERATION, .time = 0, .u.iteration = { UINT64_MAX } };
    emit(w, &ev);
}

/* Reads path back and compares with expect[]; returns the reader's final status. */
static void read_back(const char *path)
{
    trc_reader_t *r;
    trc_event_t ev;
    int rc = trc_reader_open_file(path, &r), n = 0;
    CHECK("trc_reader_open_file", 0, rc);
    if (rc < 0) {
        printf("  %s\n", trc_reader_error(r));
        trc_reader_close(r);
        return;
    }
    CHECK("header.major", TRC_VERSION_MAJOR, trc_reader_header(r)->major);
    CHECK("header.minor", TRC_VERSION_MINOR, trc_reader_header(r)->minor);
    CHECK("header.flags", TRC_FLAG_VIRTUAL_TIME, trc_reader_header(r)->flags);
    CHECK("header.pid", getpid(), trc_reader_header(r)->pid);
    CHECK("header.created", 1, trc_reader_header(r)->created_ns > 1600000000ull * 1000000000);
    while ((rc = trc_reader_next(r, &ev)) == 1) {
        if (n < nexpect)
            same_event(&expect[n], &ev);
        n++;
    }
    CHECK("trc_reader_next at end", 0, rc);
    CHECK("events read", nexpect, n);
    CHECK("complete", 1, trc_reader_complete(r));
    CHECK_STR("error when none", "", trc_reader_error(r));
    for (int i = 0; i < nexpect; i++)
        if (expect[i].type == TRC_EV_NCCL)
            CHECK_STR("string look-up", "allReduce", trc_reader_string(r, expect[i].u.nccl.op_id));
    CHECK("stack look-up", 3, trc_reader_stack(r, stack_a) ? trc_reader_stack(r, stack_a)->depth : 0);
    CHECK("undefined string", 0, trc_reader_string(r, 200) != NULL);
    trc_reader_close(r);
}

static void test_all_types(void)
{
    char pattern[128], path[128];
    struct stat st;
    trc_writer_t *w, *w2;
    snprintf(pattern, sizeof(pattern), "%s/all-%%p-100%%%%.trace", dir);
    snprintf(path, sizeof(path), "%s/all-%d-100%%.trace", dir, (int)getpid());
    int rc = trc_writer_open(pattern, TRC_FLAG_VIRTUAL_TIME, &w);
    CHECK("trc_writer_open", 0, rc);
    if (rc < 0)
        exit(1);
    CHECK("file named by %p", 0, stat(path, &st));
    CHECK("mode 0600", 0600, st.st_mode & 0777);
    CHECK("header written at once", TRC_HEADER_LEN, st.st_size);
    CHECK("second open: -EEXIST", -EEXIST, trc_writer_open(pattern, 0, &w2));
    CHECK("no writer on error", 0, w2 != NULL);
    CHECK("unknown event type", -EINVAL, trc_emit_event(w, &(trc_event_t){ .type = 99 }));
    trc_launch_t bad = { .span = { 1, 10, 5 } };
    CHECK("span end before start", -EINVAL, trc_emit_launch(w, 0, &bad));
    trc_timing_t bad_timing = { 1, 0, 10, 5 };
    CHECK("timing end before start", -EINVAL, trc_emit_timing(w, 0, &bad_timing));
    write_all_types(w);
    CHECK("flush", 0, trc_writer_flush(w));
    CHECK("flushed bytes on disk", trc_writer_bytes(w), stat(path, &st) == 0 ? st.st_size : 0);
    CHECK("events counted", nexpect, trc_writer_events(w));
    CHECK("trc_writer_close", 0, trc_writer_close(w));
    read_back(path);
    CHECK("missing directory", -ENOENT, trc_writer_open("/nonexistent-dir/x.trace", 0, &w2));
}

/* ------------------------------------------------------------------ the encoder on its own */

static void test_encoder(void)
{
    uint8_t buf[256], hdr[TRC_HEADER_LEN];
    trc_enc_t e = { 0 };
    trc_event_t ev = { .type = TRC_EV_ITERATION, .time = 123456789, .u.iteration = { 5 } };
    for (size_t cap = 0; cap < 8; cap++) {
        long n = trc_encode_event(&e, buf, cap, &ev);
        if (n > 0) {
            CHECK("smallest cap that fits", 1, cap >= (size_t)n);
            break;
        }
        CHECK("-ENOSPC", -ENOSPC, n);
        CHECK("ctx unchanged on -ENOSPC", 0, e.time);
    }
    CHECK("string with NUL", -EINVAL, trc_encode_string(&e, buf, sizeof(buf), 1, "a\0b", 3));
    CHECK("stack too deep", -EINVAL, trc_encode_stack(&e, buf, sizeof(buf), 1, NULL, 1000));
    CHECK("header too small", -ENOSPC, trc_encode_header(hdr, 31, 0, 1, 2));

    /* A hand-built stream: header, TIME_BASE, an event relative to it, END. */
    size_t len = (size_t)trc_encode_header(buf, sizeof(buf), 0, 77, 99);
    trc_enc_t ctx = { .time = 5 };
    trc_event_t tb = { .type = TRC_REC_TIME_BASE, .time = 1000000000000ull };
    len += (size_t)trc_encode_event(&ctx, buf + len, sizeof(buf) - len, &tb);
    ev.time = 1000000000007ull;
    long n = trc_encode_event(&ctx, buf + len, sizeof(buf) - len, &ev);
    CHECK("delta after TIME_BASE is one byte", 4, n);
    len += (size_t)n;
    trc_event_t end = { .type = TRC_REC_END, .u.end_count = 1 };
    len += (size_t)trc_encode_event(&ctx, buf + len, sizeof(buf) - len, &end);
    trc_reader_t *r;
    trc_event_t got;
    CHECK("open_mem", 0, trc_reader_open_mem(buf, len, &r));
    CHECK("header pid", 77, trc_reader_header(r)->pid);
    CHECK("next", 1, trc_reader_next(r, &got));
    CHECK("time after TIME_BASE", ev.time, got.time);
    CHECK("iteration", 5, got.u.iteration.index);
    CHECK("end", 0, trc_reader_next(r, &got));
    CHECK("complete", 1, trc_reader_complete(r));
    trc_reader_close(r);
}

/* Records whose length takes 1, 2 and 3 bytes (options lists of 2-byte entries): exact
 * capacities fit, one byte less does not, and they read back. */
static void test_lengths(void)
{
    static trc_option_t opts[12000];
    static uint8_t buf[40000];
    static const uint32_t counts[] = { 1, 70, 9000, 12000 };
    /* string id 0 ("no string") needs no table record */
    for (int k = 0; k < 4; k++) {
        trc_enc_t e = { 0 };
        trc_event_t ev = { .type = TRC_EV_OPTIONS, .time = 9, .u.options = { counts[k], opts } };
        size_t len = (size_t)trc_encode_header(buf, sizeof(buf), 0, 1, 2);
        long n = trc_encode_event(&e, buf + len, sizeof(buf) - len, &ev);
        CHECK("options record encodes", 1, n > 0);
        if (n <= 0)
            continue;
        trc_enc_t e2 = { 0 };
        CHECK("one byte short: -ENOSPC", -ENOSPC, trc_encode_event(&e2, buf + len, (size_t)n - 1, &ev));
        CHECK("exact capacity fits", n, trc_encode_event(&e2, buf + len, (size_t)n, &ev));
        trc_reader_t *r;
        trc_event_t got;
        CHECK("open", 0, trc_reader_open_mem(buf, len + (size_t)n, &r));
        CHECK("read", 1, trc_reader_next(r, &got));
        CHECK("option count", counts[k], got.u.options.count);
        CHECK("end", 0, trc_reader_next(r, &got));
        trc_reader_close(r);
    }
}

/* ------------------------------------------------------------------ blocks encoded apart */

/* Encodes ev into the block at *len with ctx, or fails the test. */
static void put_ev(uint8_t *buf, size_t *len, trc_enc_t *ctx, const trc_event_t *ev)
{
    long n = trc_encode_event(ctx, buf + *len, 512 - *len, ev);
    CHECK("encode into block", 1, n > 0);
    if (n > 0)
        *len += (size_t)n;
    if (ev->type != TRC_REC_TIME_BASE)
        expect[nexpect++] = *ev;
}

/* A per-thread buffer in miniature: TIME_BASE, then records relative to zeroed bases, handed to
 * trc_writer_append between events the writer encoded itself (with other bases). */
static void test_append(void)
{
    static const uint64_t ids_block[] = { 5, 6 }, ids_after[] = { 100, 101 };
    char path[128];
    uint8_t block[512];
    size_t len = 0;
    trc_enc_t ctx = { .time = 123, .alloc = 77, .launch = 88, .addr = 99 }; /* reset below */
    trc_writer_t *w;
    snprintf(path, sizeof(path), "%s/append.trace", dir);
    CHECK("open", 0, trc_writer_open(path, 0, &w));
    nexpect = 0;
    trc_event_t ev = { .type = TRC_EV_ALLOC, .time = 5000000 };
    ev.u.alloc = (trc_alloc_t){ 100, 0, 0x7f0000000000ull, 4096, 0, NULL };
    emit(w, &ev);
    ev = (trc_event_t){ .type = TRC_EV_LAUNCH, .time = 5000100 };
    ev.u.launch = (trc_launch_t){ .id = 50, .nallocs = 1, .allocs = ids_after };
    emit(w, &ev);

    put_ev(block, &len, &ctx, &(trc_event_t){ .type = TRC_REC_TIME_BASE, .time = 7000 });
    CHECK("TIME_BASE resets every base", 0, ctx.alloc | ctx.launch | ctx.addr);
    ev = (trc_event_t){ .type = TRC_EV_ALLOC, .time = 7001 };
    ev.u.alloc = (trc_alloc_t){ 5, 1, 0x1000, 64, 0, NULL };
    put_ev(block, &len, &ctx, &ev);
    ev = (trc_event_t){ .type = TRC_EV_LAUNCH, .time = 7002 };
    ev.u.launch = (trc_launch_t){ .id = 9, .device = 1, .nallocs = 2, .allocs = ids_block };
    put_ev(block, &len, &ctx, &ev);
    ev = (trc_event_t){ .type = TRC_EV_EVICTION, .time = 7003 };
    ev.u.eviction = (trc_eviction_t){ 1, 6, 64, TRC_TIER_GPU, TRC_TIER_HOST, 1 };
    put_ev(block, &len, &ctx, &ev);
    ev = (trc_event_t){ .type = TRC_EV_FREE, .time = 7004, .u.free = { 5 } };
    put_ev(block, &len, &ctx, &ev);
    CHECK("a block must start with TIME_BASE", -EINVAL,
          trc_writer_append(w, block + 2, len - 2, 3));
    CHECK("trc_writer_append", 0, trc_writer_append(w, block, len, 4));
    CHECK("events after append", 6, trc_writer_events(w));

    ev = (trc_event_t){ .type = TRC_EV_ALLOC, .time = 5000200 }; /* writer's bases are stale */
    ev.u.alloc = (trc_alloc_t){ 101, 0, 0x7f0000001000ull, 4096, 0, NULL };
    emit(w, &ev);
    ev = (trc_event_t){ .type = TRC_EV_LAUNCH, .time = 5000300 };
    ev.u.launch = (trc_launch_t){ .id = 51, .nallocs = 2, .allocs = ids_after };
    emit(w, &ev);
    CHECK("close", 0, trc_writer_close(w));

    trc_reader_t *r;
    trc_event_t got;
    int rc = trc_reader_open_file(path, &r), n = 0;
    while (rc >= 0 && (rc = trc_reader_next(r, &got)) == 1)
        if (n < nexpect)
            same_event(&expect[n++], &got);
    CHECK("append: end", 0, rc);
    CHECK("append: events", nexpect, n);
    CHECK("append: complete", 1, trc_reader_complete(r));
    trc_reader_close(r);
}

/* ------------------------------------------------------------------ a realistic mix */

/* A training-like job: set-up (process, device, options, weights and allocator segments with
 * call sites), then iterations of kernel launches touching 1-4 allocations, a few copies,
 * memsets and all-reduces, migrations with their eviction decisions, some alloc/free churn,
 * memory-per-tier updates and device timings learnt after the fact. */
typedef struct mix {
    uint64_t rng, time, next_alloc, next_launch, addr, i, host;
    uint64_t ids[4];
    uint32_t funcs[64], stacks[16], nccl_op;
    trc_option_t opts[4];
} mix_t;

static uint64_t rnd(mix_t *m, uint64_t n)
{
    m->rng ^= m->rng << 13;
    m->rng ^= m->rng >> 7;
    m->rng ^= m->rng << 17;
    return m->rng % n;
}

static void mix_launch(mix_t *m, trc_event_t *ev)
{
    uint32_t n = 1 + (uint32_t)rnd(m, 4);
    for (uint32_t k = 0; k < n; k++)
        m->ids[k] = 1 + rnd(m, m->next_alloc - 1);
    ev->type = TRC_EV_LAUNCH;
    uint64_t start = m->time + 2000 + rnd(m, 200000);
    ev->u.launch = (trc_launch_t){ .id = m->next_launch++, .func_id = m->funcs[rnd(m, 64)],
                                   .stream = rnd(m, 4) == 0, .device = 0,
                                   .span = { 1, start, start + 1000 + rnd(m, 300000) },
                                   .nallocs = n, .allocs = m->ids };
}

/* The i-th event of the mix (set-up first), deterministic from the seed. */
static void mix_event(mix_t *m, trc_event_t *ev)
{
    uint64_t i = m->i++, r = rnd(m, 1000);
    memset(ev, 0, sizeof(*ev));
    m->time += 3000 + rnd(m, 25000);
    ev->time = m->time;
    if (i < 300 || r < 8) { /* weights and segments at first, churn later */
        ev->type = TRC_EV_ALLOC;
        uint64_t size = (1 + rnd(m, 64)) << 21;
        ev->u.alloc = (trc_alloc_t){ m->next_alloc++, 0, m->addr, size, m->stacks[rnd(m, 16)], NULL };
        m->addr += size;
    } else if (r < 16) {
        ev->type = TRC_EV_FREE;
        ev->u.free.id = 300 + rnd(m, m->next_alloc - 300);
    } else if (r < 886) {
        mix_launch(m, ev);
    } else if (r < 906) {
        ev->type = TRC_EV_COPY;
        ev->u.copy = (trc_copy_t){ TRC_COPY_HTOD, 0x55d0c0000000ull + rnd(m, 1 << 30),
                                   m->addr - rnd(m, 1 << 30), 1 + rnd(m, 1 << 26), 1, 0,
                                   { 1, m->time + 500, m->time + 500 + rnd(m, 100000) },
                                   m->next_launch++ };
    } else if (r < 916) {
        ev->type = TRC_EV_MEMSET;
        ev->u.memset = (trc_memset_t){ m->addr - rnd(m, 1 << 30), 1 + rnd(m, 1 << 24), 0, 1,
                                       0, 0, { 1, m->time + 800, m->time + 900 },
                                       m->next_launch++ };
    } else if (r < 918) {
        ev->type = TRC_EV_NCCL;
        ev->u.nccl = (trc_nccl_t){ m->nccl_op, m->addr - (1 << 28), m->addr - (1 << 28),
                                   1 << 28, 0x5a5a, -1, 2, 0, { 1, m->time, m->time + 900000 }, NULL };
    } else if (r < 939) {
        ev->type = TRC_EV_MIGRATION;
        uint64_t start = m->time + rnd(m, 50000);
        ev->u.migration = (trc_migration_t){ rnd(m, 40000), 2 << 20, TRC_TIER_GPU,
                                             TRC_TIER_HOST, 0, start, start + 80000,
                                             m->next_launch - 1, 0, 0 };
        m->host += 2 << 20;
    } else if (r < 959) {
        ev->type = TRC_EV_EVICTION;
        ev->u.eviction = (trc_eviction_t){ rnd(m, 40000), 1 + rnd(m, m->next_alloc - 1),
                                           2 << 20, TRC_TIER_GPU, TRC_TIER_HOST, 1 };
    } else if (r < 989) {
        ev->type = TRC_EV_MEMORY;
        uint64_t total = m->addr - 0x7f4000000000ull;
        ev->u.memory = (trc_memory_t){ 0, { total - m->host, 0, m->host, 0 } };
    } else if (r < 999) {
        ev->type = TRC_EV_TIMING;
        uint64_t start = m->time - 50000 - rnd(m, 200000);
        ev->u.timing = (trc_timing_t){ m->next_launch - 1 - rnd(m, 8), TRC_TIMING_CUPTI, start,
                                       start + rnd(m, 300000) };
    } else {
        ev->type = TRC_EV_ITERATION;
        ev->u.iteration.index = i;
    }
}

static char fnames[64][48];
static trc_frame_t sframes[16][8];
static const char *const modules[] = { "/usr/lib/libtorch_cuda.so", "/usr/lib/libc10_cuda.so",
                                       "/usr/lib/libtorch_python.so", "/usr/bin/python3.11",
                                       "/usr/lib/libc.so.6" };

/* Interns the mix's strings and stacks and emits its set-up events into expect[]. */
static void mix_init(mix_t *m, trc_writer_t *w)
{
    nexpect = 0;
    *m = (mix_t){ .rng = 88172645463325252ull, .time = 1700000000000000000ull, .next_alloc = 1,
                  .next_launch = 1, .addr = 0x7f4000000000ull };
    for (int i = 0; i < 64; i++) {
        snprintf(fnames[i], sizeof(fnames[i]), "void at::native::kernel_%d<float>", i);
        m->funcs[i] = sid(w, fnames[i]);
    }
    for (int s = 0; s < 16; s++) {
        for (int d = 0; d < 8; d++)
            sframes[s][d] = (trc_frame_t){ sid(w, modules[(s + d) % 5]),
                                           0x10000 + (uint64_t)(s * 8 + d) * 0x1234, NULL };
        m->stacks[s] = stk(w, sframes[s], 8);
    }
    m->nccl_op = sid(w, "allReduce");
    trc_event_t ev = { .type = TRC_EV_PROCESS, .time = m->time };
    ev.u.process = (trc_process_t){ 100, 1, sid(w, "/usr/bin/python3.11"),
                                    sid(w, "python3 examples/train.py"), sid(w, "node1"), NULL, NULL, NULL };
    emit(w, &ev);
    ev = (trc_event_t){ .type = TRC_EV_DEVICE, .time = m->time };
    ev.u.device = (trc_device_t){ 0, sid(w, "NVIDIA H100 80GB HBM3"), 85520809984ull, 9, 0, 132, NULL };
    emit(w, &ev);
    m->opts[0] = (trc_option_t){ sid(w, "ELIXIR_GPU_MEMORY"), sid(w, "24G"), NULL, NULL };
    m->opts[1] = (trc_option_t){ sid(w, "ELIXIR_TRACE"), sid(w, "/tmp/t.%p.trace"), NULL, NULL };
    ev = (trc_event_t){ .type = TRC_EV_OPTIONS, .time = m->time, .u.options = { 2, m->opts } };
    emit(w, &ev);
}

/* Writes n mix events to path; returns the file's size.  sizes[type] sums record bytes. */
static uint64_t write_mix(const char *path, uint64_t n, mix_t *m0, uint64_t sizes[2][32])
{
    trc_writer_t *w;
    trc_event_t ev;
    if (trc_writer_open(path, 0, &w) < 0) {
        printf("FAIL: cannot create %s\n", path);
        exit(1);
    }
    mix_init(m0, w);
    mix_t m = *m0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t before = trc_writer_bytes(w);
        mix_event(&m, &ev);
        CHECK("emit", 0, trc_emit_event(w, &ev));
        sizes[0][ev.type] += trc_writer_bytes(w) - before;
        sizes[1][ev.type]++;
    }
    CHECK("close", 0, trc_writer_close(w));
    struct stat st;
    stat(path, &st);
    return (uint64_t)st.st_size;
}

/* Reads the mix back, every event compared with the regenerated one. */
static void read_mix(const char *path, uint64_t n, const mix_t *m0)
{
    trc_reader_t *r;
    trc_event_t got, want;
    mix_t m = *m0;
    uint64_t i = 0;
    int rc = trc_reader_open_file(path, &r);
    CHECK("open mix", 0, rc);
    while (rc >= 0 && (rc = trc_reader_next(r, &got)) == 1) {
        if (i < (uint64_t)nexpect) {
            same_event(&expect[i++], &got);
            continue;
        }
        mix_event(&m, &want);
        same_event(&want, &got);
        i++;
    }
    if (rc < 0)
        printf("  reader: %s\n", trc_reader_error(r));
    CHECK("mix: end", 0, rc);
    CHECK("mix: events", n + (uint64_t)nexpect, i);
    trc_reader_close(r);
}

static void test_mix(void)
{
    char path[128];
    uint64_t sizes[2][32] = { { 0 } }, n = 200000, total = 0, events = 0;
    mix_t m0;
    snprintf(path, sizeof(path), "%s/mix.trace", dir);
    uint64_t bytes = write_mix(path, n, &m0, sizes);
    read_mix(path, n, &m0);
    for (int t = 0; t < 32; t++)
        if (sizes[1][t]) {
            printf("  %-10s %7" PRIu64 " events, %5.1f bytes each\n", trc_type_name((uint32_t)t),
                   sizes[1][t], (double)sizes[0][t] / (double)sizes[1][t]);
            total += sizes[0][t];
            events += sizes[1][t];
        }
    double avg = (double)bytes / (double)(n + (uint64_t)nexpect);
    printf("mix: %" PRIu64 " events, %" PRIu64 " bytes in the file (header and tables included)"
           ": %.2f bytes per event (events alone: %.2f); budget 32\n", n + (uint64_t)nexpect,
           bytes, avg, (double)total / (double)events);
    CHECK("average bytes per event <= 32", 1, avg <= 32.0);
}

/* ------------------------------------------------------------------ seeds for the fuzzer */

static void copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    char buf[4096];
    size_t n;
    while (in && out && (n = fread(buf, 1, sizeof(buf), in)) > 0)
        fwrite(buf, 1, n, out);
    if (in)
        fclose(in);
    if (out)
        fclose(out);
}

static void write_seeds(const char *seeds)
{
    char from[128], to[512];
    uint64_t sizes[2][32] = { { 0 } };
    mix_t m0;
    snprintf(from, sizeof(from), "%s/all-%d-100%%.trace", dir, (int)getpid());
    snprintf(to, sizeof(to), "%s/all-types.trace", seeds);
    copy_file(from, to);
    snprintf(from, sizeof(from), "%s/append.trace", dir); /* blocks behind TIME_BASE records */
    snprintf(to, sizeof(to), "%s/time-base-blocks.trace", seeds);
    copy_file(from, to);
    snprintf(to, sizeof(to), "%s/mix-small.trace", seeds);
    unlink(to);
    write_mix(to, 400, &m0, sizes);
    printf("seeds written to %s\n", seeds);
}

static void cleanup(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        printf("warning: could not remove %s\n", dir);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_all_types();
    test_encoder();
    test_lengths();
    test_append();
    const char *seeds = getenv("ELIXIR_TRACE_SEED_DIR");
    if (seeds)
        write_seeds(seeds);
    test_mix();
    cleanup();
    if (failures)
        printf("%d failure(s)\n", failures);
    else
        printf("unit_trace_roundtrip: all passed\n");
    return failures ? 1 : 0;
}
