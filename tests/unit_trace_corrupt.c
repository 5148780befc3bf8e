/* SPDX-License-Identifier: MIT */
/*
 * unit_trace_corrupt.c - the reader against hostile input: hand-built traces with a foreign
 * magic, a newer major version (and a newer minor one with a longer header and extra fields,
 * which must read), bad header and record lengths, huge counts (launch allocations, options,
 * stack frames, string lengths), overlong varints, out-of-range and undefined ids, bad span
 * flags, time overflows; the 1.1 additions (TIMING, MEMORY with fewer or more tiers than this
 * reader knows, trailing ids that a 1.0 record lacks, TIME_BASE resetting every delta base);
 * the 1.3 DROPPED record (its fields, a source beyond 32 bits, a missing count);
 * unknown record types of every kind skipped; and 20000 traces with
 * random bytes flipped, each read to the end without a crash and with a sane outcome.  Every
 * error must carry "offset N: reason" and the right errno.
 */
#include "../tracer/trace.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

typedef struct bb {
    uint8_t d[8192];
    size_t n;
} bb_t;

static void u(bb_t *b, uint64_t v)
{
    do {
        b->d[b->n++] = (uint8_t)((v & 0x7f) | (v >> 7 ? 0x80 : 0));
        v >>= 7;
    } while (v);
}

static void s(bb_t *b, int64_t v)
{
    u(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static void raw(bb_t *b, const void *p, size_t n)
{
    memcpy(b->d + b->n, p, n);
    b->n += n;
}

/* A header: magic, version, header length (extra bytes zero-filled), flags, pid, time. */
static void header(bb_t *b, const char *magic, uint16_t major, uint16_t minor, uint32_t hlen)
{
    uint8_t h[64] = { 0 };
    memcpy(h, magic, 8);
    h[8] = (uint8_t)major, h[9] = (uint8_t)(major >> 8);
    h[10] = (uint8_t)minor, h[11] = (uint8_t)(minor >> 8);
    memcpy(h + 12, &hlen, 4);
    h[20] = 42;
    raw(b, h, hlen >= 32 && hlen <= 64 ? hlen : 32);
}

static void rec(bb_t *b, uint64_t type, const bb_t *payload)
{
    u(b, type);
    u(b, payload->n);
    raw(b, payload->d, payload->n);
}

static void string_rec(bb_t *b, uint64_t id, const char *str)
{
    bb_t p = { .n = 0 };
    u(&p, id);
    u(&p, strlen(str));
    raw(&p, str, strlen(str));
    rec(b, TRC_REC_STRING, &p);
}

/* Launch payload: time delta, id delta, func, stream, device, flags, [start, dur], n, ids. */
static void launch_rec(bb_t *b, uint64_t func, uint64_t flags, uint64_t nallocs, int extra)
{
    bb_t p = { .n = 0 };
    s(&p, 1000), s(&p, 1), u(&p, func), u(&p, 0), s(&p, 0), u(&p, flags);
    if (flags & 1)
        s(&p, 5), u(&p, 10);
    u(&p, nallocs);
    for (uint64_t i = 0; i < nallocs && i < 4; i++)
        s(&p, 1);
    if (extra)
        u(&p, 1), u(&p, 1), u(&p, 4096);   /* 1.8's offsets: one, the second allocation's */
    for (int i = 0; i < extra; i++)
        u(&p, 0x1234);
    rec(b, TRC_EV_LAUNCH, &p);
}

/* A small valid trace: header, two strings, a stack, an alloc, two launches, END. */
static void valid(bb_t *b)
{
    header(b, TRC_MAGIC, 1, 0, 32);
    string_rec(b, 1, "libfoo.so");
    string_rec(b, 2, "kern");
    bb_t p = { .n = 0 };
    u(&p, 1), u(&p, 2), u(&p, 1), u(&p, 0x100), u(&p, 0), u(&p, 7);
    rec(b, TRC_REC_STACK, &p);
    p.n = 0;
    s(&p, 500), s(&p, 1), s(&p, 0), s(&p, 0x7f0000000000ll), u(&p, 4096), u(&p, 1);
    rec(b, TRC_EV_ALLOC, &p);
    launch_rec(b, 2, 1, 2, 0);
    launch_rec(b, 0, 0, 0, 0);
    p.n = 0;
    u(&p, 3);
    rec(b, TRC_REC_END, &p);
}

/* Reads b to the end: the status, the events read, and the error text. */
static int read_all(const bb_t *b, int *events, char *msg, size_t cap)
{
    trc_reader_t *r;
    trc_event_t ev;
    uint8_t *copy = malloc(b->n ? b->n : 1); /* exact size: over-reads are caught */
    memcpy(copy, b->d, b->n);
    int rc = trc_reader_open_mem(copy, b->n, &r);
    *events = 0;
    while (rc >= 0 && (rc = trc_reader_next(r, &ev)) == 1)
        ++*events;
    snprintf(msg, cap, "%s", trc_reader_error(r));
    if (rc < 0 && strncmp(msg, "offset ", 7) != 0) {
        printf("FAIL: error without an offset: \"%s\"\n", msg);
        failures++;
    }
    trc_reader_close(r);
    free(copy);
    return rc;
}

/* Expects status rc (and events, when >= 0) and, for an error, a message containing why. */
static void expect(const char *name, const bb_t *b, int rc, int events, const char *why)
{
    char msg[300];
    int n, got = read_all(b, &n, msg, sizeof(msg));
    if (got != rc || (events >= 0 && n != events) || (why && !strstr(msg, why))) {
        printf("FAIL %s: expected status %d, %d events, message with \"%s\"; got %d, %d, \"%s\"\n",
               name, rc, events, why ? why : "", got, n, msg);
        failures++;
    } else {
        printf("ok   %-28s %s\n", name, msg[0] ? msg : "(read cleanly)");
    }
}

/* ------------------------------------------------------------------ headers */

static void test_headers(void)
{
    bb_t b = { .n = 0 };
    valid(&b);
    expect("valid trace", &b, 0, 3, NULL);
    b.n = 0;
    header(&b, "ELXTRACF", 1, 0, 32);
    expect("bad magic", &b, -ENOEXEC, 0, "bad magic");
    b.n = 0;
    raw(&b, "\x7f" "ELF\x02\x01\x01", 7);
    expect("an ELF file, short", &b, -ENOEXEC, 0, "not an Elixir trace");
    b.n = 0;
    header(&b, TRC_MAGIC, 2, 0, 32);
    expect("newer major version", &b, -EPROTONOSUPPORT, 0, "version 2.0");
    b.n = 0;
    header(&b, TRC_MAGIC, 0, 9, 32);
    expect("major version 0", &b, -EPROTONOSUPPORT, 0, "version 0.9");
    b.n = 0;
    header(&b, TRC_MAGIC, 1, 0, 16);
    expect("header length below 32", &b, -EBADMSG, 0, "header length 16 below 32");
    b.n = 0;
    header(&b, TRC_MAGIC, 1, 0, 1000);
    expect("header length beyond end", &b, -ENODATA, 0, "header length 1000 beyond end");

    /* A newer minor version: longer header, an extra field in a known record. */
    b.n = 0;
    header(&b, TRC_MAGIC, 1, 9, 48);
    string_rec(&b, 1, "k");
    launch_rec(&b, 1, 1, 2, 3);
    expect("newer minor, extra fields", &b, 0, 1, NULL);
}

/* ------------------------------------------------------------------ lengths and counts */

static void test_lengths(void)
{
    bb_t b = { .n = 0 }, p = { .n = 0 };
    header(&b, TRC_MAGIC, 1, 0, 32);
    u(&b, TRC_EV_ITERATION), u(&b, 0x7fffffff);
    expect("record length over the limit", &b, -EBADMSG, 0, "offset 32: record length 2147483647 exceeds");
    b.n = 32;
    u(&b, TRC_EV_ITERATION), u(&b, 9000), u(&b, 0), u(&b, 1);
    expect("record length beyond end", &b, -ENODATA, 0,
           "offset 32: record length 9000 beyond end of file");
    b.n = 32;
    launch_rec(&b, 0, 0, 1ull << 40, 0);
    expect("huge allocation count", &b, -EBADMSG, 0, "allocation count 1099511627776");
    b.n = 32;
    s(&p, 1), u(&p, 0xffffffffffull), u(&p, 1), u(&p, 1);
    rec(&b, TRC_EV_OPTIONS, &p);
    expect("huge option count", &b, -EBADMSG, 0, "option count");
    b.n = 32, p.n = 0;
    u(&p, 1), u(&p, 1000000000), u(&p, 0), u(&p, 0);
    rec(&b, TRC_REC_STACK, &p);
    expect("huge stack depth", &b, -EBADMSG, 0, "frame count 1000000000");
    b.n = 32, p.n = 0;
    u(&p, 1), u(&p, 300);
    for (int i = 0; i < 300; i++)
        u(&p, 0), u(&p, 0);
    rec(&b, TRC_REC_STACK, &p);
    expect("stack deeper than 256", &b, -EBADMSG, 0, "stack depth 300 exceeds 256");
    b.n = 32, p.n = 0;
    u(&p, 1), u(&p, 1ull << 62), raw(&p, "abc", 3);
    rec(&b, TRC_REC_STRING, &p);
    expect("huge string length", &b, -EBADMSG, 0, "string length");
    b.n = 32;
    launch_rec(&b, 0, 1, 0, 0);
    b.d[33] = 3; /* the record claims 3 payload bytes: fields run past them */
    b.n = 32 + 2 + 3;
    expect("record shorter than fields", &b, -EBADMSG, 0, "fields run past its length");
}

/* ------------------------------------------------------------------ ids and values */

static void test_values(void)
{
    bb_t b = { .n = 0 }, p = { .n = 0 };
    header(&b, TRC_MAGIC, 1, 0, 32);
    string_rec(&b, 2, "x");
    expect("string id out of sequence", &b, -EBADMSG, 0, "string id 2 out of sequence");
    b.n = 32;
    string_rec(&b, 1, "k");
    launch_rec(&b, 9, 0, 0, 0);
    expect("undefined string id", &b, -EBADMSG, 0, "string id 9 not defined");
    b.n = 32;
    u(&p, 1), u(&p, 3), raw(&p, "a\0b", 3);
    rec(&b, TRC_REC_STRING, &p);
    expect("NUL in a string", &b, -EBADMSG, 0, "NUL");
    b.n = 32, p.n = 0;
    u(&p, 1), u(&p, 1), u(&p, 5), u(&p, 0);
    rec(&b, TRC_REC_STACK, &p);
    expect("frame with undefined module", &b, -EBADMSG, 0, "string id 5 not defined");
    b.n = 32, p.n = 0;
    s(&p, 1), s(&p, 1), s(&p, 0), s(&p, 0), u(&p, 1), u(&p, 3);
    rec(&b, TRC_EV_ALLOC, &p);
    expect("undefined stack id", &b, -EBADMSG, 0, "stack id 3 not defined");
    b.n = 32;
    launch_rec(&b, 0, 2, 0, 0);
    expect("unknown span flags", &b, -EBADMSG, 0, "span flags");
    b.n = 32, p.n = 0;                  /* 1.8: an offset for a third of two allocations */
    s(&p, 1), s(&p, 1), u(&p, 0), u(&p, 0), s(&p, 0), u(&p, 0), u(&p, 2), s(&p, 1), s(&p, 1);
    u(&p, 1), u(&p, 2), u(&p, 4096);
    rec(&b, TRC_EV_LAUNCH, &p);
    expect("launch offset past its allocations", &b, -EBADMSG, 0,
           "launch offset index 2 past its 2 allocations");
    b.n = 32, p.n = 0;                  /* two offsets for one allocation */
    s(&p, 1), s(&p, 1), u(&p, 0), u(&p, 0), s(&p, 0), u(&p, 0), u(&p, 2), s(&p, 1), s(&p, 1);
    u(&p, 2), u(&p, 1), u(&p, 4096), u(&p, 0), u(&p, 8192);
    rec(&b, TRC_EV_LAUNCH, &p);
    expect("two offsets for one allocation", &b, -EBADMSG, 0,
           "launch offsets: allocation 1 given twice");
    b.n = 32, p.n = 0;                  /* an offset list cut short */
    s(&p, 1), s(&p, 1), u(&p, 0), u(&p, 0), s(&p, 0), u(&p, 0), u(&p, 2), s(&p, 1), s(&p, 1);
    u(&p, 2), u(&p, 0), u(&p, 16384);   /* (3 bytes: the second offset's index missing) */
    rec(&b, TRC_EV_LAUNCH, &p);
    expect("offset list cut short", &b, -EBADMSG, 0, "fields run past its length");
    b.n = 32, p.n = 0;
    s(&p, 1), s(&p, 1), u(&p, 0), u(&p, 0), s(&p, 1ll << 40);
    rec(&b, TRC_EV_LAUNCH, &p);
    expect("device out of range", &b, -EBADMSG, 0, "device 1099511627776 out of range");
    b.n = 32, p.n = 0;
    s(&p, 1), u(&p, 1), u(&p, 0), u(&p, 1), u(&p, 1), s(&p, 0), s(&p, 0), u(&p, UINT64_MAX);
    rec(&b, TRC_EV_MIGRATION, &p);
    expect("end time overflows", &b, -EBADMSG, 0, "end time overflows");
    b.n = 32;
    for (int i = 0; i < 11; i++)
        b.d[b.n++] = 0x80;
    b.d[b.n++] = 0;
    expect("overlong varint (header)", &b, -EBADMSG, 0, "overlong varint in record header");
    b.n = 32, p.n = 0;
    raw(&p, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", 10);
    rec(&b, TRC_EV_ITERATION, &p);
    expect("overlong varint (payload)", &b, -EBADMSG, 0, "overlong varint");
}

/* ------------------------------------------------------------------ format 1.1 */

/* Reads the last event of b (which must read cleanly) into *last; returns the status. */
static int read_last(const bb_t *b, trc_event_t *last)
{
    trc_reader_t *r;
    trc_event_t ev;
    int rc = trc_reader_open_mem(b->d, b->n, &r);
    memset(last, 0xa5, sizeof(*last));
    while (rc >= 0 && (rc = trc_reader_next(r, &ev)) == 1)
        *last = ev;
    trc_reader_close(r);
    return rc;
}

#define CHECK_FIELD(name, expected, got)                                                      \
    do {                                                                                      \
        if ((uint64_t)(expected) != (uint64_t)(got)) {                                        \
            printf("FAIL %s: expected %" PRIu64 ", got %" PRIu64 "\n", name,                   \
                   (uint64_t)(expected), (uint64_t)(got));                                    \
            failures++;                                                                       \
        }                                                                                     \
    } while (0)

/* 1.0 payloads end before the 1.1 trailing fields: they read as 0. */
static void test_v10_records(void)
{
    bb_t b = { .n = 0 }, p = { .n = 0 };
    trc_event_t ev;
    header(&b, TRC_MAGIC, 1, 0, 32);
    s(&p, 10), u(&p, 1), u(&p, 0x1000), u(&p, 0x2000), u(&p, 64), u(&p, 1), s(&p, 0), u(&p, 0);
    rec(&b, TRC_EV_COPY, &p);
    CHECK_FIELD("1.0 copy reads", 0, read_last(&b, &ev));
    CHECK_FIELD("1.0 copy: id 0", 0, ev.u.copy.id);
    CHECK_FIELD("1.0 copy: bytes", 64, ev.u.copy.bytes);
    b.n = 32, p.n = 0;
    s(&p, 10), u(&p, 0x1000), u(&p, 64), u(&p, 7), u(&p, 1), u(&p, 0), s(&p, 0), u(&p, 0);
    rec(&b, TRC_EV_MEMSET, &p);
    CHECK_FIELD("1.0 memset reads", 0, read_last(&b, &ev));
    CHECK_FIELD("1.0 memset: id 0", 0, ev.u.memset.id);
    CHECK_FIELD("1.0 memset: value", 7, ev.u.memset.value);
    b.n = 32, p.n = 0;
    s(&p, 10), u(&p, 3), u(&p, 0), u(&p, 2), u(&p, 4096), s(&p, 0), s(&p, -5), u(&p, 20);
    rec(&b, TRC_EV_MIGRATION, &p);
    CHECK_FIELD("1.0 migration reads", 0, read_last(&b, &ev));
    CHECK_FIELD("1.0 migration: cause 0", 0, ev.u.migration.cause);
    CHECK_FIELD("1.0 migration: end", 25, ev.u.migration.end);
    u(&p, 77);
    b.n = 32;
    rec(&b, TRC_EV_MIGRATION, &p);
    CHECK_FIELD("1.1 migration: cause", 77, read_last(&b, &ev) == 0 ? ev.u.migration.cause : 0);
    p.n--;
    raw(&p, "\x80", 1); /* the cause cut inside its varint: corrupt, not absent */
    b.n = 32;
    rec(&b, TRC_EV_MIGRATION, &p);
    expect("cause cut inside its varint", &b, -EBADMSG, 0, "fields run past its length");
}

static void test_v11_records(void)
{
    bb_t b = { .n = 0 }, p = { .n = 0 };
    trc_event_t ev;
    header(&b, TRC_MAGIC, 1, 1, 32);
    s(&p, 1000), s(&p, -1), u(&p, 2);
    for (int i = 0; i < 2; i++)
        u(&p, 100u + (unsigned)i);
    rec(&b, TRC_EV_MEMORY, &p);
    CHECK_FIELD("memory with 2 tiers reads", 0, read_last(&b, &ev));
    CHECK_FIELD("memory: device", (uint64_t)-1, (uint64_t)(int64_t)ev.u.memory.device);
    CHECK_FIELD("memory: tier 1", 101, ev.u.memory.bytes[1]);
    CHECK_FIELD("memory: missing tier 3 is 0", 0, ev.u.memory.bytes[3]);
    b.n = 32, p.n = 0;
    s(&p, 1000), s(&p, 2), u(&p, 6);
    for (int i = 0; i < 6; i++)
        u(&p, 1ull << (40 + i));
    u(&p, 12345); /* and a field after the list, from a later version */
    rec(&b, TRC_EV_MEMORY, &p);
    CHECK_FIELD("memory with 6 tiers reads", 0, read_last(&b, &ev));
    CHECK_FIELD("memory: tier 3 of 6", 1ull << 43, ev.u.memory.bytes[3]);
    b.n = 32, p.n = 0;
    s(&p, 1000), s(&p, 0), u(&p, 1ull << 40), u(&p, 1);
    rec(&b, TRC_EV_MEMORY, &p);
    expect("huge tier count", &b, -EBADMSG, 0, "tier count 1099511627776");
    b.n = 32, p.n = 0;
    s(&p, 1000), u(&p, 42), u(&p, 1), s(&p, -300), u(&p, 200);
    rec(&b, TRC_EV_TIMING, &p);
    CHECK_FIELD("timing reads", 0, read_last(&b, &ev));
    CHECK_FIELD("timing: op", 42, ev.u.timing.op);
    CHECK_FIELD("timing: source", TRC_TIMING_EVENTS, ev.u.timing.source);
    CHECK_FIELD("timing: start", 700, ev.u.timing.start);
    CHECK_FIELD("timing: end", 900, ev.u.timing.end);
    b.n = 32, p.n = 0;
    s(&p, 1000), u(&p, 42), u(&p, 1ull << 33), s(&p, 0), u(&p, 0);
    rec(&b, TRC_EV_TIMING, &p);
    expect("timing source out of range", &b, -EBADMSG, 0, "timing source 8589934592 out of range");
    b.n = 32, p.n = 0;
    s(&p, 1000), u(&p, 42), u(&p, 0), s(&p, 0), u(&p, UINT64_MAX);
    rec(&b, TRC_EV_TIMING, &p);
    expect("timing end overflows", &b, -EBADMSG, 0, "end time overflows");
}

/* DROPPED (1.3): read with a later version's trailing field; its source must fit 32 bits and
 * its count must be there (it is no appended field). */
static void test_v13_records(void)
{
    bb_t b = { .n = 0 }, p = { .n = 0 };
    trc_event_t ev;
    header(&b, TRC_MAGIC, 1, 3, 32);
    s(&p, 1000), u(&p, TRC_TIMING_CUPTI), u(&p, 1ull << 40), u(&p, 99);
    rec(&b, TRC_EV_DROPPED, &p);
    CHECK_FIELD("dropped reads", 0, read_last(&b, &ev));
    CHECK_FIELD("dropped: type", TRC_EV_DROPPED, ev.type);
    CHECK_FIELD("dropped: time", 1000, ev.time);
    CHECK_FIELD("dropped: source", TRC_TIMING_CUPTI, ev.u.dropped.source);
    CHECK_FIELD("dropped: count", 1ull << 40, ev.u.dropped.count);
    b.n = 32, p.n = 0;
    s(&p, 1000), u(&p, 1ull << 33), u(&p, 1);
    rec(&b, TRC_EV_DROPPED, &p);
    expect("dropped source out of range", &b, -EBADMSG, 0,
           "timing source 8589934592 out of range");
    b.n = 32, p.n = 0;
    s(&p, 1000), u(&p, TRC_TIMING_CUPTI);
    rec(&b, TRC_EV_DROPPED, &p);
    expect("dropped without its count", &b, -EBADMSG, 0, "fields run past its length");
}

/* FOLLOW (1.5) without 1.9's trailing `partial`, read as a whole iteration's; with it. */
static void test_v19_follow(void)
{
    for (int v = 0; v < 3; v++) {
        bb_t b = { .n = 0 }, p = { .n = 0 };
        trc_event_t ev;
        header(&b, TRC_MAGIC, 1, v ? 9 : 8, 32);
        s(&p, 2000), s(&p, 0);
        for (int k = 0; k < 8; k++)
            u(&p, 10 + (uint64_t)k);    /* plan, iteration, ... left */
        if (v)
            u(&p, (uint64_t)v - 1);
        rec(&b, TRC_EV_FOLLOW, &p);
        CHECK_FIELD("follow reads", 0, read_last(&b, &ev));
        CHECK_FIELD("follow: type", TRC_EV_FOLLOW, ev.type);
        CHECK_FIELD("follow: iteration", 11, ev.u.follow.iteration);
        CHECK_FIELD("follow: left", 17, ev.u.follow.left);
        CHECK_FIELD("follow: partial", v == 2, ev.u.follow.partial);
    }
}

/* PLAN (1.5) without 1.10's trailing `again`, read as a plan of its own; with it. */
static void test_v110_plan(void)
{
    for (int v = 0; v < 3; v++) {
        bb_t b = { .n = 0 }, p = { .n = 0 };
        trc_event_t ev;
        header(&b, TRC_MAGIC, 1, v ? 10 : 9, 32);
        s(&p, 2000), s(&p, 0);
        for (int k = 0; k < 11; k++)
            u(&p, 10 + (uint64_t)k);    /* plan, iteration, ... planning */
        if (v)
            u(&p, (uint64_t)v + 4);
        rec(&b, TRC_EV_PLAN, &p);
        CHECK_FIELD("plan reads", 0, read_last(&b, &ev));
        CHECK_FIELD("plan: type", TRC_EV_PLAN, ev.type);
        CHECK_FIELD("plan: iteration", 11, ev.u.plan.iteration);
        CHECK_FIELD("plan: planning", 20, ev.u.plan.planning_ns);
        CHECK_FIELD("plan: again", v ? (uint64_t)v + 4 : 0, ev.u.plan.again);
    }
}

/* TIME_BASE resets the alloc, launch and addr bases too (1.1). */
static void test_time_base(void)
{
    bb_t b = { .n = 0 }, p = { .n = 0 };
    trc_event_t ev;
    header(&b, TRC_MAGIC, 1, 1, 32);
    s(&p, 10), s(&p, 1000), s(&p, 0), s(&p, 0x7f0000000000ll), u(&p, 4096), u(&p, 0);
    rec(&b, TRC_EV_ALLOC, &p);
    p.n = 0;
    u(&p, 5000);
    rec(&b, TRC_REC_TIME_BASE, &p);
    p.n = 0;
    s(&p, 1), s(&p, 5);
    rec(&b, TRC_EV_FREE, &p);
    CHECK_FIELD("free after TIME_BASE reads", 0, read_last(&b, &ev));
    CHECK_FIELD("free id from a zero base", 5, ev.u.free.id);
    CHECK_FIELD("time from TIME_BASE", 5001, ev.time);
    p.n = 0;
    s(&p, 1), s(&p, 7), s(&p, 0), s(&p, 0x1000), u(&p, 16), u(&p, 0);
    rec(&b, TRC_EV_ALLOC, &p);
    CHECK_FIELD("alloc after TIME_BASE reads", 0, read_last(&b, &ev));
    CHECK_FIELD("alloc id from a zero base", 7, ev.u.alloc.id);
    CHECK_FIELD("alloc addr from a zero base", 0x1000, ev.u.alloc.addr);
    p.n = 0;
    launch_rec(&b, 0, 0, 0, 0);
    CHECK_FIELD("launch after TIME_BASE reads", 0, read_last(&b, &ev));
    CHECK_FIELD("launch id from a zero base", 1, ev.u.launch.id);
}

/* ------------------------------------------------------------------ unknown records */

static void test_unknown(void)
{
    bb_t b = { .n = 0 }, p = { .n = 0 };
    raw(&p, "future data", 11);
    header(&b, TRC_MAGIC, 1, 0, 32);
    rec(&b, 99, &p);
    string_rec(&b, 1, "k");
    rec(&b, 5, &p);              /* unknown control type */
    launch_rec(&b, 1, 1, 1, 0);
    rec(&b, 1000, &p);           /* two-byte type */
    rec(&b, UINT64_MAX, &p);     /* the largest type */
    bb_t empty = { .n = 0 };
    rec(&b, 200, &empty);        /* zero-length */
    launch_rec(&b, 1, 0, 0, 0);
    rec(&b, 15, &p);
    expect("unknown types skipped", &b, 0, 2, NULL);
}

/* ------------------------------------------------------------------ random flips */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(uint64_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng % n;
}

/* A trace of every event type built with the encoder. */
static void base_trace(bb_t *b)
{
    static const uint64_t ids[] = { 1, 2, 5 };
    static const trc_option_t opts[] = { { 1, 2, NULL, NULL } };
    static const trc_frame_t fr[] = { { 1, 0x1000, NULL }, { 2, 0x20, NULL } };
    trc_enc_t e = { 0 };
    b->n = (size_t)trc_encode_header(b->d, sizeof(b->d), 0, 1, 2);
    b->n += (size_t)trc_encode_string(&e, b->d + b->n, sizeof(b->d) - b->n, 1, "libcuda.so", 10);
    b->n += (size_t)trc_encode_string(&e, b->d + b->n, sizeof(b->d) - b->n, 2, "gemm", 4);
    b->n += (size_t)trc_encode_stack(&e, b->d + b->n, sizeof(b->d) - b->n, 1, fr, 2);
    for (int i = 0; i < 42; i++) {
        trc_event_t ev = { .type = (trc_type_t)(TRC_EV_PROCESS + i % 14), .time = 1000u * i };
        if (ev.type == TRC_EV_LAUNCH)
            ev.u.launch = (trc_launch_t){ .id = (uint64_t)i, .func_id = 2, .nallocs = 3,
                                          .allocs = ids, .span = { 1, 1000u * i, 1000u * i + 50 } };
        if (ev.type == TRC_EV_COPY)
            ev.u.copy = (trc_copy_t){ 1, 0x1000, 0x7f000000, 4096, 1, 0, { 1, ev.time, ev.time }, 7 };
        if (ev.type == TRC_EV_TIMING)
            ev.u.timing = (trc_timing_t){ 7, 0, ev.time - 100, ev.time + 100 };
        if (ev.type == TRC_EV_MEMORY)
            ev.u.memory = (trc_memory_t){ 0, { 1ull << 34, 0, 1 << 21, 1 } };
        if (ev.type == TRC_EV_OPTIONS)
            ev.u.options = (trc_options_t){ 1, opts };
        if (ev.type == TRC_EV_ALLOC)
            ev.u.alloc = (trc_alloc_t){ 9, 0, 0x7f000000, 1 << 20, 1, NULL };
        if (ev.type == TRC_EV_MIGRATION)
            ev.u.migration = (trc_migration_t){ 1, 2, 0, 2, 0, ev.time, ev.time + 10, 7, 0, 0 };
        long n = trc_encode_event(&e, b->d + b->n, sizeof(b->d) - b->n, &ev);
        if (n < 0) {
            printf("FAIL: encode %d: %ld\n", i, n);
            exit(1);
        }
        b->n += (size_t)n;
    }
}

static void test_flips(void)
{
    bb_t base = { .n = 0 }, b;
    int outcome[5] = { 0 }, events;
    char msg[300];
    base_trace(&base);
    expect("encoder-built trace", &base, 0, 42, NULL);
    for (int it = 0; it < 20000; it++) {
        b = base;
        for (int k = 1 + (int)rnd(4); k > 0; k--)
            b.d[rnd(b.n)] ^= (uint8_t)(1 + rnd(255));
        if (rnd(8) == 0)
            b.n = rnd(b.n + 1);
        int rc = read_all(&b, &events, msg, sizeof(msg));
        int i = rc == 0 ? 0 : rc == -ENODATA ? 1 : rc == -EBADMSG ? 2 : rc == -ENOEXEC ? 3
                : rc == -EPROTONOSUPPORT ? 4 : -1;
        if (i < 0) {
            printf("FAIL: flip %d: unexpected status %d (%s)\n", it, rc, msg);
            failures++;
            return;
        }
        outcome[i]++;
    }
    printf("flips: %d read cleanly, %d truncated, %d corrupt, %d not a trace, %d newer version\n",
           outcome[0], outcome[1], outcome[2], outcome[3], outcome[4]);
}

int main(void)
{
    test_headers();
    test_lengths();
    test_values();
    test_v10_records();
    test_v11_records();
    test_v13_records();
    test_v19_follow();
    test_v110_plan();
    test_time_base();
    test_unknown();
    test_flips();
    if (failures)
        printf("%d failure(s)\n", failures);
    else
        printf("unit_trace_corrupt: all passed\n");
    return failures ? 1 : 0;
}
