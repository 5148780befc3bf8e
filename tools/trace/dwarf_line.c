/* SPDX-License-Identifier: MIT */
/*
 * dwarf_line.c - DWARF line number programs (.debug_line) run into one sorted table.
 *
 * Each unit's header gives the program's parameters and its directory and file tables
 * (version 5: self-describing entry formats; before: NUL-terminated lists); the program is
 * the state machine of the DWARF standard (section 6.2), whose rows are kept as they are
 * emitted.  Rows at one address within a sequence keep the last.  A sequence that starts
 * at address 0 or at a tombstone (the linker's mark for code it discarded) is dropped, so
 * that it cannot shadow real code.  Everything read is bounded by its section, a unit whose
 * header or program breaks a rule ends where it broke, and MAX_ROWS and MAX_NAMES bound
 * the memory a file can make us use.
 */
#include "dwarf_line.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ROWS   (16u << 20)          /* rows kept, all units (256 MiB) */
#define MAX_NAMES  (64u << 20)          /* bytes of file paths kept */
#define MAX_PATH   4096u                /* one path, directory included */
#define MAX_FORMATS 16u                 /* entry formats of a version 5 table */
#define END_MARK   UINT32_MAX           /* the file of a sequence's end row */

enum {                                  /* the forms a version 5 entry may use */
    FORM_BLOCK2 = 0x03, FORM_BLOCK4 = 0x04, FORM_DATA2 = 0x05, FORM_DATA4 = 0x06,
    FORM_DATA8 = 0x07, FORM_STRING = 0x08, FORM_BLOCK = 0x09, FORM_BLOCK1 = 0x0a,
    FORM_DATA1 = 0x0b, FORM_STRP = 0x0e, FORM_UDATA = 0x0f, FORM_DATA16 = 0x1e,
    FORM_LINE_STRP = 0x1f,
};
enum { LNCT_PATH = 1, LNCT_DIRECTORY_INDEX = 2 };

/* ------------------------------------------------------------------ reading bytes */

typedef struct cur {
    const uint8_t *p, *end;
    int bad;                            /* a read ran past the end, or broke a rule */
} cur_t;

static uint64_t get_fixed(cur_t *c, unsigned n)
{
    uint64_t v = 0;
    if (c->bad || (size_t)(c->end - c->p) < n) {
        c->bad = 1;
        return 0;
    }
    for (unsigned i = 0; i < n && i < 8; i++)
        v |= (uint64_t)c->p[i] << (8 * i);
    c->p += n;
    return v;
}

/* A LEB128 number's bits, their count in *bits and its last byte in *last (at most ten
 * bytes: anything longer breaks the rules). */
static uint64_t get_leb(cur_t *c, unsigned *bits, uint8_t *last)
{
    uint64_t v = 0;
    for (unsigned shift = 0; !c->bad; shift += 7) {
        if (c->p == c->end || shift > 63) {
            c->bad = 1;
            break;
        }
        uint8_t b = *c->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *bits = shift + 7;
            *last = b;
            return v;
        }
    }
    return 0;
}

static uint64_t get_uleb(cur_t *c)
{
    unsigned bits;
    uint8_t last;
    return get_leb(c, &bits, &last);
}

static int64_t get_sleb(cur_t *c)
{
    unsigned bits = 0;
    uint8_t last = 0;
    uint64_t v = get_leb(c, &bits, &last);
    if (bits < 64 && (last & 0x40))
        v |= ~(uint64_t)0 << bits;      /* the sign bit of the last byte, extended */
    return (int64_t)v;
}

static void skip(cur_t *c, uint64_t n)
{
    if (c->bad || (uint64_t)(c->end - c->p) < n)
        c->bad = 1;
    else
        c->p += n;
}

/* A NUL-terminated string inside the cursor's bytes, or NULL (and c->bad). */
static const char *get_str(cur_t *c)
{
    const uint8_t *nul = c->bad ? NULL : memchr(c->p, 0, (size_t)(c->end - c->p));
    if (!nul) {
        c->bad = 1;
        return NULL;
    }
    const char *s = (const char *)c->p;
    c->p = nul + 1;
    return s;
}

/* The string at offset off of a string section, or NULL when it is not all inside. */
static const char *str_at(const uint8_t *sec, size_t len, uint64_t off)
{
    if (!sec || off >= len || !memchr(sec + off, 0, len - (size_t)off))
        return NULL;
    return (const char *)sec + off;
}

/* ------------------------------------------------------------------ the table */

static int grow(void **a, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *p = realloc(*a, n * elem);
    if (!p)
        return -ENOMEM;
    *a = p;
    *cap = n;
    return 0;
}

/* Appends part (at most MAX_PATH bytes of it) to the path being built in buf. */
static void path_add(char *buf, size_t *k, const char *part)
{
    if (*k && *k < MAX_PATH && buf[*k - 1] != '/')
        buf[(*k)++] = '/';
    for (size_t i = 0; part[i] && *k < MAX_PATH; i++)
        buf[(*k)++] = part[i];
}

/* Adds the path of `name` as a file: name alone when it is absolute, else under dir, itself
 * under comp (the compilation directory) when it is relative; NULL parts are left out.  Its
 * index, or -ENOMEM, or -E2BIG past MAX_NAMES. */
static long add_file(dl_table_t *t, const char *comp, const char *dir, const char *name)
{
    char buf[MAX_PATH + 1];
    size_t k = 0;
    if (name[0] != '/') {
        if (comp && dir != comp && (!dir || dir[0] != '/'))
            path_add(buf, &k, comp);
        if (dir)
            path_add(buf, &k, dir);
    }
    path_add(buf, &k, name);
    buf[k] = 0;
    if (t->names_len + k + 1 > MAX_NAMES)
        return -E2BIG;
    if (grow((void **)&t->names, &t->names_cap, t->names_len + k + 1, 1) < 0 ||
        grow((void **)&t->files, &t->files_cap, t->nfiles + 1, sizeof(size_t)) < 0)
        return -ENOMEM;
    memcpy(t->names + t->names_len, buf, k + 1);
    t->files[t->nfiles] = t->names_len;
    t->names_len += k + 1;
    return (long)t->nfiles++;
}

/* ------------------------------------------------------------------ one unit */

typedef struct unit {
    unsigned version, offset_size, address_size;
    unsigned min_inst, line_range, opcode_base;
    int line_base;
    const uint8_t *std_len;             /* standard_opcode_lengths[opcode_base - 1] */
    const char **dirs;
    size_t ndirs, dirs_cap;
    uint32_t *files;                    /* the unit's file index -> the table's */
    size_t nfiles, files_cap;
} unit_t;

static int unit_dir(unit_t *u, const char *d)
{
    if (grow((void **)&u->dirs, &u->dirs_cap, u->ndirs + 1, sizeof(*u->dirs)) < 0)
        return -ENOMEM;
    u->dirs[u->ndirs++] = d;
    return 0;
}

/* The unit's next file: name in directory dir_index (NULL: none known). */
static int unit_file(dl_table_t *t, unit_t *u, const char *name, uint64_t dir_index)
{
    const char *dir = NULL, *comp = NULL;
    if (u->version >= 5) {
        comp = u->ndirs ? u->dirs[0] : NULL;    /* directory 0 is the compilation's */
        dir = dir_index < u->ndirs ? u->dirs[dir_index] : NULL;
    } else if (dir_index >= 1 && dir_index <= u->ndirs) {
        dir = u->dirs[dir_index - 1];   /* (index 0: the compilation directory, not here) */
    }
    long id = add_file(t, comp, dir, name);
    if (id < 0)
        return (int)id;
    if (grow((void **)&u->files, &u->files_cap, u->nfiles + 1, sizeof(*u->files)) < 0)
        return -ENOMEM;
    u->files[u->nfiles++] = (uint32_t)id;
    return 0;
}

/* Reads one value of form `form`: a string into *s, a number into *v. */
static void form_value(cur_t *c, const unit_t *u, const dl_sections_t *s, uint64_t form,
                       const char **str, uint64_t *v)
{
    *str = NULL;
    *v = 0;
    switch (form) {
    case FORM_STRING: *str = get_str(c); break;
    case FORM_LINE_STRP:
    case FORM_STRP: {
        uint64_t off = get_fixed(c, u->offset_size);
        *str = form == FORM_STRP ? str_at(s->str, s->str_len, off)
                                 : str_at(s->line_str, s->line_str_len, off);
        break;
    }
    case FORM_UDATA: *v = get_uleb(c); break;
    case FORM_DATA1: *v = get_fixed(c, 1); break;
    case FORM_DATA2: *v = get_fixed(c, 2); break;
    case FORM_DATA4: *v = get_fixed(c, 4); break;
    case FORM_DATA8: *v = get_fixed(c, 8); break;
    case FORM_DATA16: skip(c, 16); break;
    case FORM_BLOCK: skip(c, get_uleb(c)); break;
    case FORM_BLOCK1: skip(c, get_fixed(c, 1)); break;
    case FORM_BLOCK2: skip(c, get_fixed(c, 2)); break;
    case FORM_BLOCK4: skip(c, get_fixed(c, 4)); break;
    default: c->bad = 1; break;     /* (string offsets tables are not read) */
    }
}

/* A version 5 directory (files 0) or file (files 1) table. */
static int v5_entries(dl_table_t *t, unit_t *u, cur_t *c, const dl_sections_t *s, int files)
{
    uint64_t type[MAX_FORMATS], form[MAX_FORMATS];
    unsigned nfmt = (unsigned)get_fixed(c, 1);
    if (nfmt > MAX_FORMATS)
        c->bad = 1;
    for (unsigned i = 0; i < nfmt && !c->bad; i++) {
        type[i] = get_uleb(c);
        form[i] = get_uleb(c);
    }
    uint64_t count = get_uleb(c);
    if (count && !nfmt)
        c->bad = 1;                     /* entries of no bytes: nothing bounds the count */
    for (uint64_t k = 0; k < count && !c->bad; k++) {
        const char *path = NULL;
        uint64_t dir = 0;
        for (unsigned i = 0; i < nfmt && !c->bad; i++) {
            const char *str;
            uint64_t v;
            form_value(c, u, s, form[i], &str, &v);
            if (type[i] == LNCT_PATH)
                path = str;
            else if (type[i] == LNCT_DIRECTORY_INDEX)
                dir = v;
        }
        if (c->bad)
            break;
        int rc = files ? unit_file(t, u, path ? path : "", dir) : unit_dir(u, path);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* The directory and file lists of a version 2 to 4 header. */
static int v4_entries(dl_table_t *t, unit_t *u, cur_t *c)
{
    for (const char *d; !c->bad && (d = get_str(c)) && d[0];)
        if (unit_dir(u, d) < 0)
            return -ENOMEM;
    for (const char *f; !c->bad && (f = get_str(c)) && f[0];) {
        uint64_t dir = get_uleb(c);
        get_uleb(c);                    /* modification time */
        get_uleb(c);                    /* length */
        int rc = c->bad ? 0 : unit_file(t, u, f, dir);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* The unit header after unit_length: parameters and tables into u; the program's bytes
 * are left in *prog.  0, a negative errno to stop everything, or 1 to skip the unit. */
static int unit_header(dl_table_t *t, unit_t *u, cur_t *c, const dl_sections_t *s, cur_t *prog)
{
    u->version = (unsigned)get_fixed(c, 2);
    if (c->bad || u->version < 2 || u->version > 5)
        return 1;
    if (u->version >= 5) {
        u->address_size = (unsigned)get_fixed(c, 1);
        if (get_fixed(c, 1) != 0 || (u->address_size != 4 && u->address_size != 8))
            return 1;                   /* segment selectors are not read */
    }
    uint64_t hlen = get_fixed(c, u->offset_size);
    if (c->bad || hlen > (uint64_t)(c->end - c->p))
        return 1;
    *prog = (cur_t){ c->p + hlen, c->end, 0 };
    c->end = c->p + hlen;
    u->min_inst = (unsigned)get_fixed(c, 1);
    if (u->version >= 4 && get_fixed(c, 1) != 1)
        return 1;                       /* VLIW operation indexes are not read */
    get_fixed(c, 1);                    /* default_is_stmt */
    u->line_base = (int8_t)get_fixed(c, 1);
    u->line_range = (unsigned)get_fixed(c, 1);
    u->opcode_base = (unsigned)get_fixed(c, 1);
    if (c->bad || !u->line_range || !u->opcode_base)
        return 1;
    u->std_len = c->p;
    skip(c, u->opcode_base - 1);
    int rc = u->version >= 5 ? v5_entries(t, u, c, s, 0) : v4_entries(t, u, c);
    if (rc == 0 && u->version >= 5)
        rc = v5_entries(t, u, c, s, 1);
    return rc < 0 ? rc : c->bad;
}

/* The line program's registers. */
typedef struct regs {
    uint64_t addr, file, seq_addr;
    uint64_t line;                      /* (modular: a file may overflow it at will) */
    size_t seq_first;                   /* the sequence's first row in the table */
    int seq_rows;                       /* rows emitted in this sequence */
} regs_t;

static void regs_reset(regs_t *r, const dl_table_t *t)
{
    *r = (regs_t){ .file = 1, .line = 1, .seq_first = t->nrows };
}

/* Appends the row the registers describe (end: the sequence's end row). */
static int emit(dl_table_t *t, const unit_t *u, regs_t *r, int end)
{
    uint64_t fi = u->version >= 5 ? r->file : r->file - 1;
    dl_row_t row = { r->addr, end ? END_MARK : fi < u->nfiles ? u->files[fi] : END_MARK,
                     end || r->line > UINT32_MAX ? 0 : (uint32_t)r->line };
    if (!r->seq_rows++)
        r->seq_addr = r->addr;
    if (t->nrows > r->seq_first && t->rows[t->nrows - 1].addr == row.addr) {
        t->rows[t->nrows - 1] = row;    /* the last row at an address is the one that holds */
        return 0;
    }
    if (t->nrows >= MAX_ROWS)
        return -E2BIG;
    if (grow((void **)&t->rows, &t->cap, t->nrows + 1, sizeof(*t->rows)) < 0)
        return -ENOMEM;
    t->rows[t->nrows++] = row;
    return 0;
}

/* The sequence ended: its rows stay, unless it starts where discarded code is put. */
static int end_sequence(dl_table_t *t, const unit_t *u, regs_t *r)
{
    int rc = emit(t, u, r, 1);
    if (r->seq_addr == 0 || r->seq_addr >= UINT64_MAX - 1)
        t->nrows = r->seq_first;
    regs_reset(r, t);
    return rc;
}

/* One extended opcode (after its 0). */
static int extended(dl_table_t *t, unit_t *u, cur_t *c, regs_t *r)
{
    uint64_t len = get_uleb(c);
    if (c->bad || len == 0 || len > (uint64_t)(c->end - c->p)) {
        c->bad = 1;
        return 0;
    }
    cur_t op = { c->p, c->p + len, 0 };
    c->p += len;
    switch (get_fixed(&op, 1)) {
    case 1: return end_sequence(t, u, r);
    case 2: r->addr = get_fixed(&op, (unsigned)(len - 1 <= 8 ? len - 1 : 8)); break;
    case 3: {
        const char *name = get_str(&op);
        uint64_t dir = get_uleb(&op);
        if (!op.bad && u->version < 5)
            return unit_file(t, u, name, dir);
        break;
    }
    default: break;                     /* (discriminators and vendors' opcodes) */
    }
    return 0;
}

/* One standard opcode. */
static int standard(dl_table_t *t, unit_t *u, cur_t *c, regs_t *r, unsigned op)
{
    switch (op) {
    case 1: return emit(t, u, r, 0);
    case 2: r->addr += get_uleb(c) * u->min_inst; break;
    case 3: r->line += (uint64_t)get_sleb(c); break;
    case 4: r->file = get_uleb(c); break;
    case 8: r->addr += (uint64_t)((255 - u->opcode_base) / u->line_range) * u->min_inst; break;
    case 9: r->addr += get_fixed(c, 2); break;
    case 6: case 7: case 10: case 11: break;
    default:                            /* set_column, set_isa and unknown ones: operands */
        for (unsigned i = 0; i < u->std_len[op - 1] && !c->bad; i++)
            get_uleb(c);
        break;
    }
    return 0;
}

/* Runs the unit's line program. */
static int program(dl_table_t *t, unit_t *u, cur_t *c)
{
    regs_t r;
    regs_reset(&r, t);
    int rc = 0;
    while (rc == 0 && !c->bad && c->p < c->end) {
        unsigned op = *c->p++;
        if (op >= u->opcode_base) {
            unsigned adj = op - u->opcode_base;
            r.addr += (uint64_t)(adj / u->line_range) * u->min_inst;
            r.line += (uint64_t)(int64_t)(u->line_base + (int)(adj % u->line_range));
            rc = emit(t, u, &r, 0);
        } else if (op == 0) {
            rc = extended(t, u, c, &r);
        } else {
            rc = standard(t, u, c, &r, op);
        }
    }
    if (r.seq_rows)                     /* a sequence the unit never ended is dropped */
        t->nrows = r.seq_first;
    return rc;
}

/* ------------------------------------------------------------------ the whole section */

static int by_address(const void *a, const void *b)
{
    const dl_row_t *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    if ((x->file == END_MARK) != (y->file == END_MARK))
        return x->file == END_MARK ? -1 : 1;    /* a sequence ends before the next begins */
    if (x->file != y->file)
        return x->file < y->file ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line;
}

int dl_parse(dl_table_t *t, const dl_sections_t *s)
{
    cur_t sec = { s->line, s->line + (s->line ? s->line_len : 0), 0 };
    int rc = 0;
    while (rc == 0 && !sec.bad && sec.p < sec.end) {
        unit_t u = { .offset_size = 4, .address_size = 8 };
        uint64_t len = get_fixed(&sec, 4);
        if (len == 0xffffffffu) {
            u.offset_size = 8;
            len = get_fixed(&sec, 8);
        } else if (len >= 0xfffffff0u) {
            break;                      /* reserved lengths: nothing after can be found */
        }
        if (sec.bad || len > (uint64_t)(sec.end - sec.p))
            break;
        cur_t c = { sec.p, sec.p + len, 0 }, prog = { NULL, NULL, 1 };
        sec.p += len;
        rc = unit_header(t, &u, &c, s, &prog);
        if (rc == 0)
            rc = program(t, &u, &prog);
        else if (rc == 1)
            rc = 0;
        free(u.dirs);
        free(u.files);
    }
    if (t->nrows)
        qsort(t->rows, t->nrows, sizeof(*t->rows), by_address);
    return rc == -ENOMEM ? rc : 0;
}

int dl_find(const dl_table_t *t, uint64_t addr, const char **file, uint32_t *line)
{
    size_t lo = 0, hi = t->nrows;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->rows[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo)
        return -ENOENT;
    const dl_row_t *r = &t->rows[lo - 1];
    if (r->file == END_MARK || r->file >= t->nfiles || r->line == 0)
        return -ENOENT;
    *file = t->names + t->files[r->file];
    *line = r->line;
    return 0;
}

size_t dl_bytes(const dl_table_t *t)
{
    return t->cap * sizeof(*t->rows) + t->files_cap * sizeof(*t->files) + t->names_cap;
}

void dl_free(dl_table_t *t)
{
    free(t->rows);
    free(t->files);
    free(t->names);
    memset(t, 0, sizeof(*t));
}
