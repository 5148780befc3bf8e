/* SPDX-License-Identifier: MIT */
/*
 * trace_reader.c - libFuzzer target for the trace reader: any input is opened with
 * trc_reader_open_mem and read to the end, touching every string the events resolve to and
 * every frame of their stacks, so an out-of-bounds pointer handed out is caught too.  Built and
 * run for a bounded time by tests/fuzz_trace.sh (clang -fsanitize=fuzzer,address,undefined).
 */
#include "../../tracer/trace.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t touch(const char *s)
{
    return s ? strlen(s) : 0;
}

/* Reads every resolved pointer an event carries. */
static size_t visit(const trc_event_t *ev)
{
    size_t n = 0;
    switch (ev->type) {
    case TRC_EV_PROCESS:
        n += touch(ev->u.process.exe) + touch(ev->u.process.cmdline) + touch(ev->u.process.host);
        break;
    case TRC_EV_DEVICE: n += touch(ev->u.device.name); break;
    case TRC_EV_OPTIONS:
        for (uint32_t i = 0; i < ev->u.options.count; i++)
            n += touch(ev->u.options.opts[i].name) + touch(ev->u.options.opts[i].value);
        break;
    case TRC_EV_ALLOC:
        for (uint32_t i = 0; ev->u.alloc.stack && i < ev->u.alloc.stack->depth; i++)
            n += touch(ev->u.alloc.stack->frames[i].module) + ev->u.alloc.stack->frames[i].offset;
        break;
    case TRC_EV_LAUNCH:
        n += touch(ev->u.launch.func);
        for (uint32_t i = 0; i < ev->u.launch.nallocs; i++)
            n += ev->u.launch.allocs[i];
        break;
    case TRC_EV_NCCL: n += touch(ev->u.nccl.op); break;
    case TRC_EV_TIMING: n += ev->u.timing.end - ev->u.timing.start; break;
    case TRC_EV_MEMORY:
    case TRC_EV_BUDGET:
        for (int i = 0; i < TRC_TIERS; i++)
            n += ev->u.memory.bytes[i];
        break;
    case TRC_EV_DROPPED: n += ev->u.dropped.count + ev->u.dropped.source; break;
    case TRC_EV_MIGRATION: n += ev->u.migration.flags + ev->u.migration.cause; break;
    case TRC_EV_PLAN: n += ev->u.plan.predicted_ns + ev->u.plan.planning_ns; break;
    case TRC_EV_FOLLOW: n += ev->u.follow.foreseen + ev->u.follow.left; break;
    case TRC_EV_MAPPING: n += ev->u.mapping.planned_ns + ev->u.mapping.reactive_remaps; break;
    case TRC_EV_GUARD: n += ev->u.guard.planned_ns + ev->u.guard.verdict; break;
    case TRC_EV_SYNC: n += ev->u.sync.stream + ev->u.sync.kind; break;
    default: break;
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    trc_reader_t *r;
    trc_event_t ev;
    volatile size_t sink = 0;
    int rc = trc_reader_open_mem(data, size, &r);
    while (rc >= 0 && (rc = trc_reader_next(r, &ev)) == 1)
        sink += visit(&ev);
    if (r) {
        if (rc < 0 && strncmp(trc_reader_error(r), "offset ", 7) != 0)
            abort();
        trc_reader_close(r);
    }
    (void)sink;
    return 0;
}
