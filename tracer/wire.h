/* SPDX-License-Identifier: MIT */
/*
 * wire.h - internal to tracer/: bounded cursors over bytes with the format's primitives
 * (LEB128 varints, zigzag signed varints, little-endian fixed fields).  A put past the end
 * or a get past the end marks the cursor instead of touching memory, so callers check once.
 */
#ifndef ELIXIR_TRACE_WIRE_H
#define ELIXIR_TRACE_WIRE_H

#include <stdint.h>
#include <string.h>

/* Output cursor: full is set when a put did not fit. */
typedef struct wbuf {
    uint8_t *p, *end;
    int full;
} wbuf_t;

/* Input cursor: short_ is set when a get ran past the end, bad when a varint is overlong. */
typedef struct rbuf {
    const uint8_t *p, *end;
    int short_, bad;
} rbuf_t;

#define VARINT_MAX 10

static inline void put_u(wbuf_t *b, uint64_t v)
{
    do {
        if (b->p == b->end) {
            b->full = 1;
            return;
        }
        uint8_t byte = v & 0x7f;
        v >>= 7;
        *b->p++ = byte | (v ? 0x80 : 0);
    } while (v);
}

static inline uint64_t zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static inline void put_s(wbuf_t *b, int64_t v)
{
    put_u(b, zigzag(v));
}

static inline void put_bytes(wbuf_t *b, const void *src, size_t n)
{
    if ((size_t)(b->end - b->p) < n) {
        b->full = 1;
        return;
    }
    memcpy(b->p, src, n);
    b->p += n;
}

/* Reads a varint: at most 10 bytes, the 10th holding only the top bit of a u64. */
static inline uint64_t get_u(rbuf_t *b)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (b->p == b->end) {
            b->short_ = 1;
            return 0;
        }
        uint8_t byte = *b->p++;
        if (shift == 63 && byte > 1) {
            b->bad = 1;
            return 0;
        }
        v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80))
            return v;
    }
    b->bad = 1;
    return 0;
}

static inline int64_t get_s(rbuf_t *b)
{
    return unzigzag(get_u(b));
}

static inline uint64_t le_get(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static inline void le_put(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++, v >>= 8)
        p[i] = (uint8_t)v;
}

#endif
