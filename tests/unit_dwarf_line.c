/* SPDX-License-Identifier: MIT */
/*
 * unit_dwarf_line.c - the DWARF line-table reader (tools/trace/dwarf_line.c) on its own, on
 * line programs written here byte by byte.
 *
 * A version 4 unit (32-bit) with an include directory, a file added by DW_LNE_define_file,
 * every standard opcode and special opcodes, two rows at one address (the last holds), and a
 * sequence of discarded code at address 0 that must not shadow anything; a version 3 unit
 * (no maximum-operations field); a version 5 unit in the 64-bit format whose directories
 * come from .debug_line_str and whose files carry MD5 sums, with relative, absolute and
 * compilation-directory paths; a unit whose last sequence never ends (dropped).  Every
 * address checked gives the expected file and line, or none.  Then the section cut at every
 * byte and 3000 copies with random bytes changed are read without a fault (the sanitizer
 * build checks every read), and a unit with a malformed header is skipped while the units
 * around it are kept.  With ELIXIR_DWARF_SEED_DIR set, the sections are also written there
 * as the fuzz target's seed (tests/fuzz/dwarf_line.c: a byte giving the length of
 * .debug_line_str, that section, then .debug_line).
 */
#include "../tools/trace/dwarf_line.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

/* ------------------------------------------------------------------ writing line programs */

typedef struct out {
    uint8_t b[4096];
    size_t n;
} out_t;

static void u8(out_t *o, unsigned v) { o->b[o->n++] = (uint8_t)v; }

static void fixed(out_t *o, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        u8(o, (unsigned)(v >> (8 * i)) & 0xff);
}

static void uleb(out_t *o, uint64_t v)
{
    do {
        u8(o, (unsigned)(v & 0x7f) | (v >> 7 ? 0x80 : 0));
        v >>= 7;
    } while (v);
}

static void sleb(out_t *o, int64_t v)
{
    for (;;) {
        unsigned byte = (unsigned)(v & 0x7f);
        v >>= 7;
        int done = (v == 0 && !(byte & 0x40)) || (v == -1 && (byte & 0x40));
        u8(o, byte | (done ? 0 : 0x80));
        if (done)
            return;
    }
}

static void str(out_t *o, const char *s)
{
    size_t n = strlen(s) + 1;
    memcpy(o->b + o->n, s, n);
    o->n += n;
}

/* Header parameters shared by the units below: opcode_base 13 (standard opcodes 1-12). */
#define LINE_BASE  (-5)
#define LINE_RANGE 14
#define OPCODE_BASE 13
static const uint8_t std_lengths[12] = { 0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1 };

static void params(out_t *o, int version)
{
    u8(o, 1);                           /* minimum_instruction_length */
    if (version >= 4)
        u8(o, 1);                       /* maximum_operations_per_instruction */
    u8(o, 1);                           /* default_is_stmt */
    u8(o, (unsigned)(LINE_BASE & 0xff));
    u8(o, LINE_RANGE);
    u8(o, OPCODE_BASE);
    for (int i = 0; i < OPCODE_BASE - 1; i++)
        u8(o, std_lengths[i]);
}

/* The special opcode advancing the address by da and the line by dl. */
static void special(out_t *o, unsigned da, int dl)
{
    u8(o, (unsigned)((dl - LINE_BASE) + LINE_RANGE * (int)da + OPCODE_BASE));
}

static void set_address(out_t *o, uint64_t a)
{
    u8(o, 0), uleb(o, 9), u8(o, 2), fixed(o, a, 8);
}

static void end_sequence(out_t *o) { u8(o, 0), uleb(o, 1), u8(o, 1); }

/* A unit: its length (32- or 64-bit format) around the header and program in body. */
static void unit(out_t *sec, const out_t *body, int dwarf64)
{
    if (dwarf64) {
        fixed(sec, 0xffffffffu, 4);
        fixed(sec, body->n, 8);
    } else {
        fixed(sec, body->n, 4);
    }
    memcpy(sec->b + sec->n, body->b, body->n);
    sec->n += body->n;
}

/* version 2-4: version, header_length (offset size), then the header h and the program p. */
static void v4_body(out_t *body, int version, const out_t *h, const out_t *p)
{
    fixed(body, (uint64_t)version, 2);
    fixed(body, h->n, 4);
    memcpy(body->b + body->n, h->b, h->n);
    body->n += h->n;
    memcpy(body->b + body->n, p->b, p->n);
    body->n += p->n;
}

/* Unit A (version 4): a.c and inc/b.h, then c.h added by the program; two sequences. */
static void unit_a(out_t *sec)
{
    out_t h = { .n = 0 }, p = { .n = 0 }, body = { .n = 0 };
    params(&h, 4);
    str(&h, "inc"), str(&h, "");
    str(&h, "a.c"), uleb(&h, 0), uleb(&h, 0), uleb(&h, 0);
    str(&h, "b.h"), uleb(&h, 1), uleb(&h, 7), uleb(&h, 100);
    str(&h, "");

    set_address(&p, 0x1000);
    u8(&p, 1);                          /* copy: 0x1000 a.c:1 */
    special(&p, 4, 2);                  /* 0x1004 a.c:3 */
    u8(&p, 4), uleb(&p, 2);             /* set_file b.h */
    u8(&p, 3), sleb(&p, -1);            /* line 2 */
    u8(&p, 2), uleb(&p, 8);             /* advance_pc: 0x100c */
    u8(&p, 5), uleb(&p, 9);             /* set_column (ignored) */
    u8(&p, 1);                          /* 0x100c b.h:2 */
    u8(&p, 8);                          /* const_add_pc: (255 - 13) / 14 = 17: 0x101d */
    u8(&p, 3), sleb(&p, 40);            /* line 42 */
    u8(&p, 1);                          /* 0x101d b.h:42 */
    u8(&p, 9), fixed(&p, 0x13, 2);      /* fixed_advance_pc: 0x1030 */
    u8(&p, 3), sleb(&p, 1);
    u8(&p, 1);                          /* 0x1030 b.h:43 ... */
    u8(&p, 3), sleb(&p, 1);
    u8(&p, 1);                          /* ... replaced: 0x1030 b.h:44 */
    u8(&p, 0), uleb(&p, 8), u8(&p, 3), str(&p, "c.h"), uleb(&p, 1), uleb(&p, 0), uleb(&p, 0);
    u8(&p, 4), uleb(&p, 3);             /* set_file c.h (the one just defined) */
    u8(&p, 6), u8(&p, 7), u8(&p, 10), u8(&p, 11), u8(&p, 12), uleb(&p, 0);
    special(&p, 0x10, 0);               /* 0x1040 inc/c.h:44 */
    u8(&p, 0), uleb(&p, 2), u8(&p, 4), uleb(&p, 3);   /* set_discriminator (ignored) */
    u8(&p, 2), uleb(&p, 0x10);
    end_sequence(&p);                   /* ends at 0x1050 */

    set_address(&p, 0);                 /* discarded code: must shadow nothing */
    u8(&p, 3), sleb(&p, 500);
    u8(&p, 1);
    u8(&p, 2), uleb(&p, 0x3000);
    end_sequence(&p);

    v4_body(&body, 4, &h, &p);
    unit(sec, &body, 0);
}

/* Unit B (version 3): d.c at 0x2000 and 0x2008, and a second sequence from the first's end. */
static void unit_b(out_t *sec)
{
    out_t h = { .n = 0 }, p = { .n = 0 }, body = { .n = 0 };
    params(&h, 3);
    str(&h, "");
    str(&h, "/abs/d.c"), uleb(&h, 0), uleb(&h, 0), uleb(&h, 0);
    str(&h, "");
    set_address(&p, 0x2000);
    u8(&p, 3), sleb(&p, 9);
    u8(&p, 1);                          /* 0x2000 d.c:10 */
    special(&p, 8, 5);                  /* 0x2008 d.c:15 */
    u8(&p, 2), uleb(&p, 8);
    end_sequence(&p);                   /* ends at 0x2010, where the next one starts */
    set_address(&p, 0x2010);
    u8(&p, 3), sleb(&p, 19);
    u8(&p, 1);                          /* 0x2010 d.c:20 */
    u8(&p, 2), uleb(&p, 4);
    end_sequence(&p);                   /* ends at 0x2014 */
    v4_body(&body, 3, &h, &p);
    unit(sec, &body, 0);
}

/* Unit C (version 5, 64-bit format): directories /comp (0), sub (1) and /usr/include (2)
 * from .debug_line_str; files e.c in sub, f.h in /usr/include, g.c in /comp, /x/h.c. */
static void unit_c(out_t *sec, out_t *line_str)
{
    out_t h = { .n = 0 }, p = { .n = 0 }, body = { .n = 0 };
    size_t comp = line_str->n;
    str(line_str, "/comp");
    size_t sub = line_str->n;
    str(line_str, "sub");
    size_t inc = line_str->n;
    str(line_str, "/usr/include");

    params(&h, 5);
    u8(&h, 1), uleb(&h, 1), uleb(&h, 0x1f);     /* directories: path as line_strp */
    uleb(&h, 3);
    fixed(&h, comp, 8), fixed(&h, sub, 8), fixed(&h, inc, 8);
    u8(&h, 3);                                  /* files: path string, directory, MD5 */
    uleb(&h, 1), uleb(&h, 0x08), uleb(&h, 2), uleb(&h, 0x0f), uleb(&h, 5), uleb(&h, 0x1e);
    uleb(&h, 4);
    const char *names[4] = { "e.c", "f.h", "g.c", "/x/h.c" };
    const unsigned dirs[4] = { 1, 2, 0, 1 };
    for (int i = 0; i < 4; i++) {
        str(&h, names[i]), uleb(&h, dirs[i]);
        for (int k = 0; k < 16; k++)
            u8(&h, 0xa0u + (unsigned)k);
    }
    /* Version 5 files count from 0; the file register starts at 1 (f.h). */
    set_address(&p, 0x3000);
    u8(&p, 1);                          /* 0x3000 f.h:1 */
    u8(&p, 4), uleb(&p, 0);
    special(&p, 4, 1);                  /* 0x3004 sub/e.c:2 */
    u8(&p, 4), uleb(&p, 2);
    special(&p, 4, 1);                  /* 0x3008 g.c:3 */
    u8(&p, 4), uleb(&p, 3);
    special(&p, 4, 1);                  /* 0x300c /x/h.c:4 */
    u8(&p, 4), uleb(&p, 9);
    special(&p, 4, 1);                  /* 0x3010: a file that does not exist: no line */
    u8(&p, 2), uleb(&p, 4);
    end_sequence(&p);                   /* ends at 0x3014 */

    fixed(&body, 5, 2);
    u8(&body, 8), u8(&body, 0);         /* address_size, segment_selector_size */
    fixed(&body, h.n, 8);
    memcpy(body.b + body.n, h.b, h.n);
    body.n += h.n;
    memcpy(body.b + body.n, p.b, p.n);
    body.n += p.n;
    unit(sec, &body, 1);
}

/* Unit D (version 4): a sequence that never ends (its rows are dropped). */
static void unit_d(out_t *sec)
{
    out_t h = { .n = 0 }, p = { .n = 0 }, body = { .n = 0 };
    params(&h, 4);
    str(&h, "");
    str(&h, "lost.c"), uleb(&h, 0), uleb(&h, 0), uleb(&h, 0);
    str(&h, "");
    set_address(&p, 0x4000);
    u8(&p, 1);
    special(&p, 4, 1);
    v4_body(&body, 4, &h, &p);
    unit(sec, &body, 0);
}

/* ------------------------------------------------------------------ checks */

static void expect(const dl_table_t *t, uint64_t addr, const char *file, uint32_t line)
{
    const char *f = NULL;
    uint32_t l = 0;
    int rc = dl_find(t, addr, &f, &l);
    if (!file) {
        if (rc != -ENOENT) {
            printf("FAIL 0x%" PRIx64 ": expected no line, got %s:%u (%d)\n", addr,
                   rc == 0 ? f : "?", l, rc);
            failures++;
        }
        return;
    }
    if (rc != 0 || strcmp(f, file) != 0 || l != line) {
        printf("FAIL 0x%" PRIx64 ": expected %s:%u, got %s:%u (%d)\n", addr, file, line,
               rc == 0 ? f : "-", l, rc);
        failures++;
    }
}

/* Every address checked against the units above: its file and line, or none (NULL). */
static const struct {
    uint64_t addr;
    const char *file;
    uint32_t line;
} rows[] = {
    { 0x0, NULL, 0 },
    { 0x10, NULL, 0 }, /* the discarded sequence */
    { 0xfff, NULL, 0 },
    { 0x1000, "a.c", 1 },
    { 0x1003, "a.c", 1 },
    { 0x1004, "a.c", 3 },
    { 0x100b, "a.c", 3 },
    { 0x100c, "inc/b.h", 2 },
    { 0x101d, "inc/b.h", 42 },
    { 0x1030, "inc/b.h", 44 },
    { 0x103f, "inc/b.h", 44 },
    { 0x1040, "inc/c.h", 44 },
    { 0x104f, "inc/c.h", 44 },
    { 0x1050, NULL, 0 },
    { 0x2000, "/abs/d.c", 10 },
    { 0x2008, "/abs/d.c", 15 },
    { 0x200f, "/abs/d.c", 15 },
    { 0x2010, "/abs/d.c", 20 },
    { 0x2013, "/abs/d.c", 20 },
    { 0x2014, NULL, 0 },
    { 0x3000, "/usr/include/f.h", 1 },
    { 0x3004, "/comp/sub/e.c", 2 },
    { 0x3008, "/comp/g.c", 3 },
    { 0x300c, "/x/h.c", 4 },
    { 0x3010, NULL, 0 },
    { 0x3014, NULL, 0 },
    { 0x4000, NULL, 0 }, /* the unit whose sequence never ends */
    { 0x4004, NULL, 0 },
};

static void check_all(const dl_table_t *t)
{
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        expect(t, rows[i].addr, rows[i].file, rows[i].line);
}

static void parse(dl_table_t *t, const out_t *sec, const out_t *line_str)
{
    dl_sections_t s = { sec->b, line_str->b, NULL, sec->n, line_str->n, 0 };
    memset(t, 0, sizeof(*t));
    if (dl_parse(t, &s) != 0) {
        printf("FAIL: dl_parse\n");
        failures++;
    }
}

/* Reading damaged copies: every prefix, and random bytes changed. */
static void damaged(const out_t *sec, const out_t *line_str)
{
    out_t cut, ls = *line_str;
    for (size_t n = 0; n <= sec->n; n++) {
        dl_table_t t;
        uint8_t *exact = malloc(n ? n : 1);    /* (n bytes: the sanitizer sees over-reads) */
        memcpy(exact, sec->b, n);
        dl_sections_t s = { exact, ls.b, NULL, n, ls.n, 0 };
        memset(&t, 0, sizeof(t));
        dl_parse(&t, &s);
        const char *f;
        uint32_t l;
        if (n < sec->n && dl_find(&t, 0x4000, &f, &l) == 0) {
            printf("FAIL cut at %zu: a line for the unit that never ends\n", n);
            failures++;
        }
        dl_free(&t);
        free(exact);
    }
    srand(4242);
    for (int k = 0; k < 3000; k++) {
        cut = *sec;
        ls = *line_str;
        for (int i = 0; i < 1 + k % 8; i++)
            cut.b[(size_t)rand() % cut.n] = (uint8_t)rand();
        if (k % 5 == 0)
            ls.b[(size_t)rand() % ls.n] = (uint8_t)rand();
        uint8_t *exact = malloc(cut.n), *lexact = malloc(ls.n);
        memcpy(exact, cut.b, cut.n);
        memcpy(lexact, ls.b, ls.n);
        dl_sections_t s = { exact, lexact, NULL, cut.n, ls.n, 0 };
        dl_table_t t;
        memset(&t, 0, sizeof(t));
        dl_parse(&t, &s);
        for (uint64_t a = 0; a < 0x5000; a += 0x100) {
            const char *f;
            uint32_t l;
            if (dl_find(&t, a, &f, &l) == 0 && strlen(f) > 4096) {
                printf("FAIL: a path longer than the bound\n");
                failures++;
            }
        }
        dl_free(&t);
        free(exact);
        free(lexact);
    }
}

/* A unit with a malformed header (version 9) between two good ones: skipped alone. */
static void bad_unit_between(void)
{
    out_t sec = { .n = 0 }, ls = { .n = 0 }, bad = { .n = 0 };
    dl_table_t t;
    unit_a(&sec);
    fixed(&bad, 9, 2);
    fixed(&bad, 0, 4);
    unit(&sec, &bad, 0);
    unit_b(&sec);
    parse(&t, &sec, &ls);
    expect(&t, 0x1004, "a.c", 3);
    expect(&t, 0x2008, "/abs/d.c", 15);
    dl_free(&t);
}

/* The fuzz target's seed: [length of line_str] line_str line. */
static void write_seed(const out_t *sec, const out_t *line_str)
{
    const char *dir = getenv("ELIXIR_DWARF_SEED_DIR");
    char path[4096];
    if (!dir || !*dir)
        return;
    snprintf(path, sizeof(path), "%s/units.dwarf", dir);
    FILE *f = fopen(path, "wb");
    unsigned char k = (unsigned char)line_str->n;
    if (!f || line_str->n > 255 || fwrite(&k, 1, 1, f) != 1 ||
        fwrite(line_str->b, 1, line_str->n, f) != line_str->n ||
        fwrite(sec->b, 1, sec->n, f) != sec->n) {
        printf("FAIL: cannot write the seed %s\n", path);
        failures++;
    }
    if (f)
        fclose(f);
}

int main(void)
{
    out_t sec = { .n = 0 }, line_str = { .n = 0 };
    dl_table_t t;
    unit_a(&sec);
    unit_b(&sec);
    unit_c(&sec, &line_str);
    unit_d(&sec);
    parse(&t, &sec, &line_str);
    check_all(&t);
    write_seed(&sec, &line_str);
    if (dl_bytes(&t) == 0) {
        printf("FAIL: the table holds no bytes\n");
        failures++;
    }
    dl_free(&t);
    bad_unit_between();
    damaged(&sec, &line_str);
    printf("%s (%zu bytes of line programs)\n", failures ? "FAILED" : "ok", sec.n);
    return failures ? 1 : 0;
}
