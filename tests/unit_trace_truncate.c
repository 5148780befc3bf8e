/* SPDX-License-Identifier: MIT */
/*
 * unit_trace_truncate.c - a trace cut at every byte offset: the reader never crashes, returns
 * exactly the events of the records that are whole before the cut (same offsets, types and
 * times as the full read), and then either ends cleanly (the cut falls between records: no
 * END record, so the trace is not complete) or reports truncation (-ENODATA) naming the offset
 * of the record that was cut; a cut inside the header is truncation too, never corruption.
 * One cut trace is also read through trc_reader_open_file.
 */
#include "../tracer/trace.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;

#define CHECK(what, expected, got)                                                            \
    do {                                                                                      \
        int64_t e_ = (int64_t)(expected), g_ = (int64_t)(got);                                \
        if (e_ != g_) {                                                                       \
            printf("FAIL %s:%d: cut at %zu: %s: expected %" PRId64 ", got %" PRId64 "\n",     \
                   __func__, __LINE__, cut, what, e_, g_);                                    \
            if (++failures > 20)                                                              \
                exit(1);                                                                      \
        }                                                                                     \
    } while (0)

#define MAX_EVENTS 4096

static uint8_t *trace;
static size_t trace_len;
static trc_event_t full[MAX_EVENTS];
static int nfull;
static size_t bounds[2 * MAX_EVENTS]; /* offsets where records start, and the end */
static int nbounds;

/* Writes a trace with every record type, many strings and stacks, and reads it into memory. */
static void make_trace(const char *path)
{
    trc_writer_t *w;
    if (trc_writer_open(path, 0, &w) < 0) {
        printf("FAIL: cannot create %s\n", path);
        exit(1);
    }
    uint64_t ids[3] = { 1, 2, 3 };
    for (int i = 0; i < 120; i++) {
        char name[64];
        snprintf(name, sizeof(name), "kernel_%d_with_a_longer_name_%d", i % 40, i);
        uint32_t f = (uint32_t)trc_writer_string(w, name);
        trc_frame_t fr[2] = { { f, (uint64_t)i * 77, NULL }, { f, 5, NULL } };
        uint32_t s = (uint32_t)trc_writer_stack(w, fr, 1 + (uint32_t)(i % 2));
        uint64_t t = 1000000 + (uint64_t)i * 10000;
        trc_event_t ev = { .type = (trc_type_t)(TRC_EV_PROCESS + i % 21), .time = t };
        switch (ev.type) {
        case TRC_EV_PROCESS: ev.u.process.exe_id = f; break;
        case TRC_EV_DEVICE: ev.u.device = (trc_device_t){ 0, f, 1ull << 36, 9, 0, 132, NULL }; break;
        case TRC_EV_OPTIONS: break;
        case TRC_EV_ALLOC: ev.u.alloc = (trc_alloc_t){ (uint64_t)i, 0, 0x7f00000000ull, 4096, s, NULL }; break;
        case TRC_EV_LAUNCH:
            ev.u.launch = (trc_launch_t){ .id = (uint64_t)i, .func_id = f, .nallocs = 3,
                                          .allocs = ids, .span = { 1, t + 5, t + 900 } };
            break;
        case TRC_EV_MIGRATION: ev.u.migration = (trc_migration_t){ 1, 2, 0, 2, 0, t, t + 9, 300, (uint64_t)i % 2, (uint64_t)i % 3 }; break;
        case TRC_EV_COPY: ev.u.copy.id = 1ull << 40; break; /* the trailing 1.1 fields */
        case TRC_EV_MEMSET: ev.u.memset.id = (uint64_t)i; break;
        case TRC_EV_TIMING: ev.u.timing = (trc_timing_t){ (uint64_t)i, 1, t - 700, t + 70000 }; break;
        case TRC_EV_MEMORY: ev.u.memory = (trc_memory_t){ 1, { 1ull << 33, 5, 1ull << 40, 0 } }; break;
        case TRC_EV_BUDGET: ev.u.budget = (trc_budget_t){ 0, { 1ull << 36, 0, 1ull << 39, 0 } }; break;
        case TRC_EV_DROPPED: ev.u.dropped = (trc_dropped_t){ 0, 1ull << 40 }; break;
        case TRC_EV_PLAN: ev.u.plan = (trc_plan_t){ 0, 1, 2, 300, 20, 90, t, t / 2, t / 3, 1ull << 33, 1 << 20, 7, 1 }; break;
        case TRC_EV_FOLLOW: ev.u.follow = (trc_follow_t){ 0, 1, (uint64_t)i, 300, 2, 1, 90, 180, 3, 0 }; break;
        case TRC_EV_MAPPING: ev.u.mapping = (trc_mapping_t){ 0, 180, 1ull << 30, 4, 264000 }; break;
        case TRC_EV_GUARD: ev.u.guard = (trc_guard_t){ 0, 1, (uint64_t)i, 2, t, t / 2, 1100 }; break;
        case TRC_EV_SYNC: ev.u.sync = (trc_sync_t){ TRC_SYNC_STREAM, (uint64_t)i % 3, 0 }; break;
        default: ev.u.nccl.bytes = 1ull << 40; break; /* a few fields of the union, any type */
        }
        if (trc_emit_event(w, &ev) < 0) {
            printf("FAIL: emit\n");
            exit(1);
        }
    }
    trc_writer_close(w);
    FILE *f = fopen(path, "rb");
    trace = malloc(1 << 20);
    trace_len = f ? fread(trace, 1, 1 << 20, f) : 0;
    if (f)
        fclose(f);
}

/* Record boundaries, found independently of the reader: each record is type and length
 * varints and that many payload bytes. */
static void find_bounds(void)
{
    size_t p = TRC_HEADER_LEN;
    bounds[nbounds++] = p;
    while (p < trace_len) {
        uint64_t v[2] = { 0, 0 };
        for (int k = 0; k < 2; k++)
            for (int shift = 0;; shift += 7) {
                uint8_t b = trace[p++];
                v[k] |= (uint64_t)(b & 0x7f) << shift;
                if (!(b & 0x80))
                    break;
            }
        p += v[1];
        bounds[nbounds++] = p;
    }
}

static void read_full(void)
{
    trc_reader_t *r;
    trc_reader_open_mem(trace, trace_len, &r);
    while (nfull < MAX_EVENTS && trc_reader_next(r, &full[nfull]) == 1)
        nfull++;
    if (!trc_reader_complete(r) || *trc_reader_error(r)) {
        printf("FAIL: the whole trace does not read: %s\n", trc_reader_error(r));
        exit(1);
    }
    trc_reader_close(r);
}

/* The largest record boundary at or before cut. */
static size_t boundary_before(size_t cut)
{
    size_t b = bounds[0];
    for (int i = 0; i < nbounds && bounds[i] <= cut; i++)
        b = bounds[i];
    return b;
}

static void check_message(size_t cut, const trc_reader_t *r, uint64_t off)
{
    char want[64];
    snprintf(want, sizeof(want), "offset %" PRIu64 ": ", off);
    if (strncmp(trc_reader_error(r), want, strlen(want)) != 0) {
        printf("FAIL: cut at %zu: message \"%s\" does not start with \"%s\"\n", cut,
               trc_reader_error(r), want);
        failures++;
    }
}

/* Reads the first cut bytes (in a buffer of exactly that size, so an over-read is caught by
 * the address sanitizer) and checks the outcome. */
static void check_cut(size_t cut)
{
    uint8_t *buf = malloc(cut ? cut : 1);
    trc_reader_t *r;
    trc_event_t ev;
    memcpy(buf, trace, cut);
    int rc = trc_reader_open_mem(buf, cut, &r);
    if (cut < TRC_HEADER_LEN) {
        CHECK("open inside the header", -ENODATA, rc);
        check_message(cut, r, cut);
    } else {
        CHECK("open", 0, rc);
        size_t b = boundary_before(cut);
        int n = 0;
        while ((rc = trc_reader_next(r, &ev)) == 1) {
            if (n < nfull) {
                CHECK("event offset", full[n].offset, ev.offset);
                CHECK("event type", full[n].type, ev.type);
                CHECK("event time", full[n].time, ev.time);
            }
            n++;
        }
        int want = 0;
        while (want < nfull && full[want].offset < b)
            want++;
        CHECK("events before the cut", want, n);
        CHECK("status", b == cut ? 0 : -ENODATA, rc);
        CHECK("complete", cut == trace_len, trc_reader_complete(r));
        CHECK("next again (sticky)", rc, trc_reader_next(r, &ev));
        if (rc < 0) {
            CHECK("error offset", b, trc_reader_error_offset(r));
            check_message(cut, r, b);
        }
    }
    trc_reader_close(r);
    free(buf);
}

int main(void)
{
    char path[64];
    size_t cut = 0;
    snprintf(path, sizeof(path), "/tmp/unit_trace_truncate.%d.trace", (int)getpid());
    make_trace(path);
    find_bounds();
    read_full();
    CHECK("last boundary is the end", trace_len, bounds[nbounds - 1]);
    printf("trace: %zu bytes, %d records, %d events\n", trace_len, nbounds - 1, nfull);
    for (cut = 0; cut <= trace_len; cut++)
        check_cut(cut);
    cut = trace_len - 2; /* inside the END record */

    /* The same through a file. */
    unlink(path);
    FILE *f = fopen(path, "wb");
    fwrite(trace, 1, cut, f);
    fclose(f);
    trc_reader_t *r;
    trc_event_t ev;
    int rc = trc_reader_open_file(path, &r);
    CHECK("open_file", 0, rc);
    while ((rc = trc_reader_next(r, &ev)) == 1)
        ;
    CHECK("open_file: truncated", -ENODATA, rc);
    printf("cut file: %s\n", trc_reader_error(r));
    trc_reader_close(r);
    unlink(path);
    rc = trc_reader_open_file(path, &r);
    CHECK("missing file", -ENOENT, rc);
    printf("missing file: %s\n", trc_reader_error(r));
    trc_reader_close(r);
    free(trace);
    if (failures)
        printf("%d failure(s)\n", failures);
    else
        printf("unit_trace_truncate: all %zu cuts passed\n", trace_len + 1);
    return failures ? 1 : 0;
}
