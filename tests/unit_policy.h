/* SPDX-License-Identifier: MIT */
/*
 * unit_policy.h - building policy inputs by hand for the tests/unit_policy_* programs.
 *
 * A builder holds growing arrays of buffers, operations and references; pb_buf adds a
 * buffer, pb_op starts an operation, pb_ref adds a reference to the operation last started,
 * pb_input gives the pol_input_t (pointers into the builder, valid until the next call).
 * The machine defaults to 1 MiB chunks, 16 chunks of GPU, 1024 of host, a link of 10 GB/s
 * each way and 16 duplex, no latency, no mapping cost.  Checks print what was expected and
 * what was found, and count failures in pb_failures.
 */
#ifndef UNIT_POLICY_H
#define UNIT_POLICY_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

#define MIB (1ull << 20)

typedef struct pb {
    pol_buf_t *bufs;
    pol_op_t *ops;
    pol_ref_t *refs;
    size_t nbufs, nops, nrefs, cap;
    uint32_t nstreams;
    pol_machine_t m;
    uint32_t slack;             /* pol_input_t.slack (POL_SLACK_SEARCH unless set) */
    const pol_wait_t *waits;    /* pol_input_t.waits (none unless set) */
    size_t nwaits;
    const pol_sync_t *syncs;    /* pol_input_t.syncs (none unless set) */
    size_t nsyncs;
    pol_input_t in;
} pb_t;

static int pb_failures;

#define PB_CHECK(cond, ...)                                                     \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                     \
            fprintf(stderr, __VA_ARGS__);                                       \
            fputc('\n', stderr);                                                \
            pb_failures++;                                                      \
        }                                                                       \
    } while (0)

static inline void *pb_grow(void *a, size_t n, size_t size)
{
    void *p = realloc(a, n * size);
    if (!p) {
        perror("realloc");
        exit(1);
    }
    return p;
}

static inline void pb_init(pb_t *b)
{
    memset(b, 0, sizeof(*b));
    b->cap = 1 << 16;
    b->bufs = pb_grow(NULL, b->cap, sizeof(pol_buf_t));
    b->ops = pb_grow(NULL, b->cap, sizeof(pol_op_t));
    b->refs = pb_grow(NULL, b->cap, sizeof(pol_ref_t));
    b->nstreams = 1;
    b->m.chunk = MIB;
    b->m.cap[POL_GPU] = 16 * MIB;
    b->m.cap[POL_HOST] = 1024 * MIB;
    b->m.link[POL_HOST] = (pol_link_t){ 10, 10, 16, 0 };
    b->m.link[POL_PEER] = (pol_link_t){ 40, 40, 80, 0 };
    b->m.link[POL_NVME] = (pol_link_t){ 5, 3, 6, 0 };
    b->m.copy_engines = 1;
}

static inline void pb_fini(pb_t *b)
{
    free(b->bufs);
    free(b->ops);
    free(b->refs);
}

static inline void pb_room(pb_t *b, size_t n)
{
    if (n < b->cap)
        return;
    while (b->cap <= n)
        b->cap *= 2;
    b->bufs = pb_grow(b->bufs, b->cap, sizeof(pol_buf_t));
    b->ops = pb_grow(b->ops, b->cap, sizeof(pol_op_t));
    b->refs = pb_grow(b->refs, b->cap, sizeof(pol_ref_t));
}

/* A buffer of `chunks` chunks (1 MiB each by default), alive born .. dies. */
static inline uint32_t pb_buf(pb_t *b, uint64_t chunks, int born, int dies)
{
    pb_room(b, b->nbufs);
    b->bufs[b->nbufs] = (pol_buf_t){ .key = b->nbufs, .bytes = chunks * b->m.chunk,
                                     .born = born, .dies = dies };
    return (uint32_t)b->nbufs++;
}

static inline void pb_op(pb_t *b, uint32_t stream, uint64_t dur_ns)
{
    pb_room(b, b->nops);
    b->ops[b->nops++] = (pol_op_t){ .stream = stream, .ref = (uint32_t)b->nrefs, .dur_ns = dur_ns };
    if (stream >= b->nstreams)
        b->nstreams = stream + 1;
}

/* A reference of the operation last started: chunks [chunk, chunk + n) of buf. */
static inline void pb_ref(pb_t *b, uint32_t buf, uint32_t chunk, uint32_t n, uint8_t access)
{
    pb_room(b, b->nrefs);
    b->refs[b->nrefs++] = (pol_ref_t){ buf, chunk, n, access };
    b->ops[b->nops - 1].nref++;
}

/* A whole-buffer reference. */
static inline void pb_all(pb_t *b, uint32_t buf, uint8_t access)
{
    pb_ref(b, buf, 0, (uint32_t)((b->bufs[buf].bytes + b->m.chunk - 1) / b->m.chunk), access);
}

static inline const pol_input_t *pb_input(pb_t *b)
{
    b->in = (pol_input_t){ b->ops, b->nops, b->refs, b->nrefs, b->bufs, b->nbufs,
                           b->nstreams, b->m, b->slack, b->waits, b->nwaits, b->syncs,
                           b->nsyncs };
    return &b->in;
}

/* Bytes moved to / from the GPU over every link. */
static inline uint64_t pb_bytes(const pol_result_t *r, int dir)
{
    uint64_t s = 0;
    for (int t = 0; t < POL_NTIERS; t++)
        s += r->bytes[t][dir];
    return s;
}

/* Plan with knobs (NULL: search) and verify; the plan or NULL (a failure counted). */
static inline pol_plan_t *pb_plan(pb_t *b, const pol_knobs_t *k)
{
    pol_plan_t *p = NULL;
    char err[256] = "";
    int rc = pol_plan(pb_input(b), k, &p);
    PB_CHECK(rc == 0, "pol_plan: expected 0, got %d", rc);
    if (rc)
        return NULL;
    rc = pol_plan_verify(pb_input(b), p, err, sizeof(err));
    PB_CHECK(rc == 0, "pol_plan_verify: expected 0, got %d (%s)", rc, err);
    return p;
}

/* One buffer reached by one operation on the machine b->m (pb_init'ed, one of its figures
 * set to `value`, which it must refuse): -EINVAL naming `field` expected; b is finished. */
static inline void pb_refused(pb_t *b, const char *field, double value)
{
    pb_buf(b, 1, -1, -1);
    pb_op(b, 0, 1000), pb_all(b, 0, POL_RW);
    char err[256] = "";
    int rc = pol_input_check(pb_input(b), err, sizeof(err));
    PB_CHECK(rc == -EINVAL && strstr(err, field), "%s %g: expected -EINVAL naming it, got %d "
             "(%s)", field, value, rc, err);
    pb_fini(b);
}

/* What pb_plan's plan predicts (iter_ns and map_ns -1 where there is none); b is finished. */
static inline pol_result_t pb_predicted(pb_t *b, const pol_knobs_t *k)
{
    pol_plan_t *p = pb_plan(b, k);
    pol_result_t r = p ? p->predicted : (pol_result_t){ .iter_ns = -1, .map_ns = -1 };
    pol_plan_free(p);
    pb_fini(b);
    return r;
}

#endif
