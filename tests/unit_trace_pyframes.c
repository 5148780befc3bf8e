/* SPDX-License-Identifier: MIT */
/*
 * unit_trace_pyframes.c - Python frames in call sites (format 1.4): stacks with native and
 * Python frames, with Python frames only, and with native ones only go through the writer
 * and read back field by field; equal content gets one id and a different line another; a
 * stack without Python frames is byte for byte the 1.3 record; the reader refuses a Python
 * frame count beyond the record or 256, an undefined file or function string, a line
 * beyond 32 bits, and a record cut inside a frame.  And in a program that is not a Python
 * interpreter (this one) the frame reader finds no interpreter and reads nothing.
 * With ELIXIR_TRACE_SEED_DIR set, the trace of stacks is also written there (a fuzzer seed).
 */
#include "../tracer/pyframes.h"
#include "../tracer/trace.h"
#include "unit_trace_util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK_STR(what, expected, got)                                                        \
    do {                                                                                      \
        const char *e_ = (expected), *g_ = (got);                                             \
        if (!g_ || strcmp(e_, g_) != 0) {                                                     \
            printf("FAIL %s: expected \"%s\", got \"%s\"\n", what, e_, g_ ? g_ : "(null)");  \
            failures++;                                                                       \
        }                                                                                     \
    } while (0)

/* ------------------------------------------------------------------ round trip */

static const char *names[] = { "", "/usr/lib/libpython3.11.so", "/home/u/train.py", "forward",
                               "Model.step", "/usr/lib/python3.11/threading.py", "run" };

/* Writes stacks through the writer; returns the ids in id[0..4]. */
static void write_trace(const char *path, long id[5])
{
    trc_writer_t *w;
    if (trc_writer_open(path, 0, &w) < 0) {
        printf("FAIL: cannot create %s\n", path);
        exit(1);
    }
    for (size_t i = 1; i < sizeof(names) / sizeof(names[0]); i++)
        CHECK("string id", (long)i, trc_writer_string(w, names[i]));
    trc_frame_t nat[2] = { { 1, 0x1234, NULL }, { 1, 0x99, NULL } };
    trc_pyframe_t py[3] = { { 2, 3, 41, NULL, NULL }, { 2, 4, 7, NULL, NULL },
                            { 5, 6, UINT32_MAX, NULL, NULL } };
    id[0] = trc_writer_stack_py(w, &(trc_stack_t){ .depth = 2, .frames = nat, .pydepth = 3,
                                                   .pyframes = py });
    id[1] = trc_writer_stack_py(w, &(trc_stack_t){ .pydepth = 1, .pyframes = py });
    id[2] = trc_writer_stack(w, nat, 2);
    id[3] = trc_writer_stack_py(w, &(trc_stack_t){ .depth = 2, .frames = nat, .pydepth = 3,
                                                   .pyframes = py });
    py[0].line = 42;
    id[4] = trc_writer_stack_py(w, &(trc_stack_t){ .depth = 2, .frames = nat, .pydepth = 3,
                                                   .pyframes = py });
    for (int i = 0; i < 5; i++) {
        trc_alloc_t a = { .id = (uint64_t)i + 1, .size = 4096, .stack_id = (uint32_t)id[i] };
        CHECK("emit alloc", 0, trc_emit_alloc(w, 100 + (uint64_t)i, &a));
    }
    CHECK("close", 0, trc_writer_close(w));
}

static void check_py(const trc_stack_t *s, uint32_t n, uint32_t first_line)
{
    static const struct { const char *file, *func; uint32_t line; } want[3] = {
        { "/home/u/train.py", "forward", 0 }, { "/home/u/train.py", "Model.step", 7 },
        { "/usr/lib/python3.11/threading.py", "run", UINT32_MAX }
    };
    CHECK("pydepth", n, s->pydepth);
    for (uint32_t i = 0; i < n && i < s->pydepth; i++) {
        CHECK_STR("python file", want[i].file, s->pyframes[i].file);
        CHECK_STR("python function", want[i].func, s->pyframes[i].func);
        CHECK("python line", i ? want[i].line : first_line, s->pyframes[i].line);
    }
}

static void round_trip(const char *path)
{
    long id[5];
    write_trace(path, id);
    CHECK("ids: native and Python", 1, id[0]);
    CHECK("ids: Python only", 2, id[1]);
    CHECK("ids: native only", 3, id[2]);
    CHECK("ids: the same content, the same id", id[0], id[3]);
    CHECK("ids: another line, another id", 4, id[4]);
    trc_reader_t *r;
    trc_event_t ev;
    int rc = trc_reader_open_file(path, &r), n = 0;
    CHECK("reader open", 0, rc);
    while (rc >= 0 && (rc = trc_reader_next(r, &ev)) == 1) {
        const trc_stack_t *s = ev.u.alloc.stack;
        if (ev.type != TRC_EV_ALLOC || !s)
            continue;
        CHECK("stack id", id[n], s->id);
        CHECK("native depth", n == 1 ? 0 : 2, s->depth);
        if (s->depth == 2) {
            CHECK_STR("module", names[1], s->frames[0].module);
            CHECK("offset", 0x99, s->frames[1].offset);
        }
        if (n == 1)
            check_py(s, 1, 41);
        else if (n == 2)
            CHECK("no Python frames", 1, s->pydepth == 0 && s->pyframes == NULL);
        else
            check_py(s, 3, n == 4 ? 42 : 41);
        n++;
    }
    CHECK("reader end", 0, rc);
    CHECK("allocations read", 5, n);
    CHECK("minor version 1.4 or later", 1, trc_reader_header(r)->minor >= 4);
    trc_reader_close(r);
}

/* A stack without Python frames is the 1.3 record exactly: nothing appended. */
static void native_unchanged(void)
{
    uint8_t a[64], b[64];
    trc_enc_t e = { 0 };
    trc_frame_t f[1] = { { 1, 0x10, NULL } };
    long na = trc_encode_stack(&e, a, sizeof(a), 1, f, 1);
    long nb = trc_encode_stack_py(&e, b, sizeof(b),
                                  &(trc_stack_t){ .id = 1, .depth = 1, .frames = f });
    /* type 2, length 4, id 1, depth 1, module 1, offset 0x10 */
    static const uint8_t want[] = { 2, 4, 1, 1, 1, 0x10 };
    CHECK("1.3 stack length", sizeof(want), na);
    CHECK("1.3 stack bytes", 0, na == sizeof(want) ? memcmp(a, want, sizeof(want)) : -1);
    CHECK("stack_py without Python frames", 0, na == nb ? memcmp(a, b, (size_t)na) : -1);
    trc_pyframe_t p = { 1, 1, 0, NULL, NULL };
    CHECK("too deep a Python stack", -EINVAL,
          trc_encode_stack_py(&e, b, sizeof(b), &(trc_stack_t){ .id = 1, .pydepth = 257,
                                                                 .pyframes = &p }));
}

/* ------------------------------------------------------------------ hostile input */

typedef struct bb {
    uint8_t d[4096];
    size_t n;
} bb_t;

static void u(bb_t *b, uint64_t v)
{
    do {
        b->d[b->n++] = (uint8_t)((v & 0x7f) | (v >> 7 ? 0x80 : 0));
        v >>= 7;
    } while (v);
}

/* A trace: header, strings 1 and 2, then one STACK record with payload p. */
static void trace_with_stack(bb_t *b, const bb_t *p)
{
    uint8_t enc[64];
    trc_enc_t e = { 0 };
    b->n = (size_t)trc_encode_header(b->d, sizeof(b->d), 0, 1, 0);
    for (uint32_t i = 1; i <= 2; i++) {
        long n = trc_encode_string(&e, enc, sizeof(enc), i, names[i], strlen(names[i]));
        memcpy(b->d + b->n, enc, (size_t)n);
        b->n += (size_t)n;
    }
    u(b, TRC_REC_STACK);
    u(b, p->n);
    memcpy(b->d + b->n, p->d, p->n);
    b->n += p->n;
}

static void expect(const char *what, const bb_t *p, int want, const char *reason)
{
    bb_t b = { .n = 0 };
    trc_reader_t *r;
    trc_event_t ev;
    trace_with_stack(&b, p);
    int rc = trc_reader_open_mem(b.d, b.n, &r);
    while (rc >= 0 && (rc = trc_reader_next(r, &ev)) == 1)
        ;
    const char *msg = trc_reader_error(r);
    if (rc != want || (reason && !strstr(msg, reason))) {
        printf("FAIL %s: expected %d \"%s\", got %d \"%s\"\n", what, want, reason ? reason : "",
               rc, msg);
        failures++;
    }
    trc_reader_close(r);
}

/* Stack 1 with one native frame, then the Python fields given. */
static bb_t stack_payload(uint64_t pydepth, uint64_t file, uint64_t func, uint64_t line)
{
    bb_t p = { .n = 0 };
    u(&p, 1), u(&p, 1), u(&p, 1), u(&p, 0x10);
    u(&p, pydepth);
    for (uint64_t i = 0; i < pydepth && i < 300; i++)
        u(&p, file), u(&p, func), u(&p, line);
    return p;
}

static void hostile(void)
{
    bb_t p = stack_payload(1, 2, 1, 5);
    expect("a good one", &p, 0, NULL);
    p = stack_payload(1, 2, 1, 5);
    p.d[4] = 3;                        /* 3 frames announced, 1 there */
    expect("Python frames beyond the record", &p, -EBADMSG, "Python frame count 3 exceeds");
    p = stack_payload(257, 2, 1, 5);
    expect("more than 256 Python frames", &p, -EBADMSG, "Python stack depth 257 exceeds 256");
    p = stack_payload(1, 9, 1, 5);
    expect("undefined file", &p, -EBADMSG, "string id 9 not defined");
    p = stack_payload(1, 2, 7, 5);
    expect("undefined function", &p, -EBADMSG, "string id 7 not defined");
    p = stack_payload(1, 2, 1, (uint64_t)UINT32_MAX + 1);
    expect("line beyond 32 bits", &p, -EBADMSG, "line 4294967296 out of range");
    p = stack_payload(2, 2, 1, 300);
    p.n -= 1;                          /* the last line's varint cut in two */
    expect("cut inside a frame", &p, -EBADMSG, "fields run past its length");
}

/* ------------------------------------------------------------------ no interpreter here */

static void not_python(void)
{
    trc_pyraw_t out[4];
    CHECK("trc_py_thread in a C program", TRC_PY_NONE, trc_py_thread());
    CHECK("trc_py_capture in a C program", 0, trc_py_capture(out, 4, 1));
    CHECK("again (after the first look)", TRC_PY_NONE, trc_py_thread());
    CHECK("libffi caller: a pc of this program", 0, trc_py_ffi_caller((void *)not_python));
}

int main(void)
{
    char path[] = "/tmp/unit_trace_pyframes.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return 1;
    close(fd);
    unlink(path);
    round_trip(path);
    unlink(path);
    const char *seeds = getenv("ELIXIR_TRACE_SEED_DIR");
    if (seeds) {                       /* a seed for tests/fuzz_trace.sh */
        char seed[512];
        long id[5];
        snprintf(seed, sizeof(seed), "%s/python-stacks.trace", seeds);
        unlink(seed);
        write_trace(seed, id);
    }
    native_unchanged();
    hostile();
    not_python();
    return tu_done("unit_trace_pyframes");
}
