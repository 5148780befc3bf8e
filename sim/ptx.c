/* SPDX-License-Identifier: MIT */
/*
 * ptx.c - reading kernel images for the simulator: the module-scope declarations of PTX text.
 *
 * sim_ptx_parse reads the module-scope declarations of PTX text with a small tokenizer
 * (ptx_lex.c): every kernel entry (.entry) with the packed layout of its parameters, and every
 * .global or .const variable with its size, alignment and initial bytes.  Instruction
 * bodies, .func definitions, debug sections and the other directives are skipped as balanced
 * token streams, so only the declaration grammar has to be understood.  The first error
 * stops the parse and is reported as "line N: reason".
 *
 * Finding the PTX text in a module image is image.c's.
 */
#include "ptx_int.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DIMS    8                       /* array dimensions of one declaration */
#define MAX_ALIGN   (1u << 20)
#define MAX_OBJECT  ((uint64_t)1 << 40)     /* largest variable accepted, in bytes */
#define MAX_PARAM   ((uint64_t)1 << 30)     /* largest single parameter, in bytes */

/* ------------------------------------------------------------------ types and declarations */

typedef struct ptype {
    const char *name;
    uint8_t size;
    char cls;           /* 'u', 's', 'b' integer; 'f' float; 'h' half; 'p' predicate */
} ptype_t;

static const ptype_t ptypes[] = {
    { ".u8", 1, 'u' },  { ".s8", 1, 's' },  { ".b8", 1, 'b' },
    { ".u16", 2, 'u' }, { ".s16", 2, 's' }, { ".b16", 2, 'b' },
    { ".f16", 2, 'h' }, { ".bf16", 2, 'h' },
    { ".u32", 4, 'u' }, { ".s32", 4, 's' }, { ".b32", 4, 'b' }, { ".f32", 4, 'f' },
    { ".f16x2", 4, 'h' }, { ".bf16x2", 4, 'h' },
    { ".u64", 8, 'u' }, { ".s64", 8, 's' }, { ".b64", 8, 'b' }, { ".f64", 8, 'f' },
    { ".b128", 16, 'b' }, { ".pred", 1, 'p' },
};

static const ptype_t *find_type(const parser_t *ps)
{
    for (size_t i = 0; i < sizeof ptypes / sizeof ptypes[0]; i++)
        if (ptx_tok_is(ps, ptypes[i].name))
            return &ptypes[i];
    return NULL;
}

static uint32_t vec_length(const parser_t *ps)
{
    if (ptx_tok_is(ps, ".v2"))
        return 2;
    if (ptx_tok_is(ps, ".v4"))
        return 4;
    if (ptx_tok_is(ps, ".v8"))
        return 8;
    return 0;
}

/* One declared parameter or variable.  A vector type adds its length as the last dimension. */
typedef struct decl {
    const ptype_t *type;
    uint32_t vec;               /* vector length, 1 for scalars */
    uint32_t align;             /* explicit .align, 0 when absent */
    tok_t name;
    unsigned ndims;
    uint64_t dims[MAX_DIMS + 1];/* 0 in dims[0]: size taken from the initialiser */
    unsigned char *init;        /* initial bytes parsed so far, zero-filled to init_cap */
    uint64_t init_cap;
} decl_t;

static int parse_align(parser_t *ps, uint32_t *align)
{
    uint64_t v = 0;

    ptx_advance(ps);
    if (ps->t.kind != TK_NUM || !ptx_int_literal(ps->t.s, ps->t.n, &v) || v == 0 ||
        (v & (v - 1)) != 0 || v > MAX_ALIGN)
        return ptx_fail(ps, ps->t.line, "bad alignment '%.*s' (a power of two is required)",
                    TOKARG(ps));
    *align = (uint32_t)v;
    ptx_advance(ps);
    return ps->rc;
}

/* Skip a balanced group that starts at the current token `open` and ends with `close`. */
static int skip_group(parser_t *ps, char open, char close)
{
    unsigned line = ps->t.line;
    size_t depth = 0;

    if (!ptx_punct(ps, open))
        return ptx_fail(ps, line, "expected '%c', got '%.*s'", open, TOKARG(ps));
    do {
        if (ps->t.kind == TK_EOF)
            return ps->rc ? ps->rc : ptx_fail(ps, line, "unbalanced '%c': never closed", open);
        if (ptx_punct(ps, open))
            depth++;
        else if (ptx_punct(ps, close))
            depth--;
        ptx_advance(ps);
    } while (depth > 0);
    return ps->rc;
}

static int parse_type(parser_t *ps, decl_t *dc, const char *what)
{
    const ptype_t *ty = find_type(ps);
    uint32_t vec = vec_length(ps);

    if (ty && ty->cls == 'p')
        return ptx_fail(ps, ps->t.line, "a %s of type .pred is not allowed", what);
    if (vec && dc->vec == 0)
        dc->vec = vec;
    else if (ty && !dc->type)
        dc->type = ty;
    else if (ty || vec)
        return ptx_fail(ps, ps->t.line, "second type '%.*s' in a %s declaration", TOKARG(ps), what);
    else
        return ptx_fail(ps, ps->t.line, "unknown %s type '%.*s'", what, TOKARG(ps));
    ptx_advance(ps);
    return ps->rc;
}

static bool is_state_space(const parser_t *ps)
{
    return ptx_tok_is(ps, ".global") || ptx_tok_is(ps, ".shared") || ptx_tok_is(ps, ".const") ||
           ptx_tok_is(ps, ".local");
}

static bool is_opaque(const parser_t *ps)
{
    return ptx_tok_is(ps, ".texref") || ptx_tok_is(ps, ".samplerref") || ptx_tok_is(ps, ".surfref");
}

/*
 * Read the qualifiers of a declaration up to its name: .align N, .vN and the type; for a
 * variable also .attribute(...); for a parameter also .ptr, whose state space and .align
 * describe the pointee and leave the parameter's own layout alone.  Returns 0, 1 for an
 * opaque variable type (.texref, .samplerref, .surfref), or a negative errno.
 */
static int parse_quals(parser_t *ps, decl_t *dc, bool param)
{
    const char *what = param ? "parameter" : "variable";
    uint32_t pointee_align;
    bool ptr = false;

    while (ps->rc == 0 && ps->t.kind == TK_DIR) {
        if (ptx_tok_is(ps, ".align")) {
            parse_align(ps, ptr ? &pointee_align : &dc->align);
        } else if (param && ptx_tok_is(ps, ".ptr") && !ptr) {
            ptr = true;
            ptx_advance(ps);
        } else if (ptr && is_state_space(ps)) {
            ptx_advance(ps);
        } else if (!param && ptx_tok_is(ps, ".attribute")) {
            ptx_advance(ps);
            skip_group(ps, '(', ')');
        } else if (!param && is_opaque(ps)) {
            return 1;
        } else {
            parse_type(ps, dc, what);
        }
    }
    if (ps->rc == 0 && !dc->type)
        ptx_fail(ps, ps->t.line, "missing %s type before '%.*s'", what, TOKARG(ps));
    if (dc->vec == 0)
        dc->vec = 1;
    return ps->rc;
}

/* Read `[N]` suffixes; `[]` is allowed for the first dimension when `allow_open` is true. */
static int parse_dims(parser_t *ps, decl_t *dc, bool allow_open)
{
    while (ps->rc == 0 && ptx_punct(ps, '[')) {
        uint64_t n = 0;

        ptx_advance(ps);
        if (dc->ndims == MAX_DIMS)
            return ptx_fail(ps, ps->t.line, "too many array dimensions");
        if (ps->t.kind == TK_NUM) {
            if (!ptx_int_literal(ps->t.s, ps->t.n, &n) || n == 0)
                return ptx_fail(ps, ps->t.line, "bad array size '%.*s'", TOKARG(ps));
            ptx_advance(ps);
        } else if (!allow_open || dc->ndims > 0) {
            return ptx_fail(ps, ps->t.line, "missing array size for '%.*s'", NAMEARG(dc->name));
        }
        dc->dims[dc->ndims++] = n;
        ptx_expect(ps, ']', "after array size");
    }
    if (dc->vec > 1)
        dc->dims[dc->ndims++] = dc->vec;
    return ps->rc;
}

/* Size in bytes of the declared object, counting an open dimension as 1. */
static int object_size(parser_t *ps, const decl_t *dc, uint64_t limit, uint64_t *size)
{
    uint64_t s = dc->type->size;

    for (unsigned i = 0; i < dc->ndims; i++) {
        uint64_t n = dc->dims[i] ? dc->dims[i] : 1;
        if (n > limit / s)
            return ptx_fail(ps, dc->name.line, "'%.*s' is too large", NAMEARG(dc->name));
        s *= n;
    }
    *size = s;
    return 0;
}

/* ------------------------------------------------------------------ initialisers */

static void put_le(unsigned char *dst, uint64_t v, unsigned n)
{
    for (unsigned k = 0; k < n; k++)
        dst[k] = (unsigned char)(v >> (8 * k));
}

/* Write `lit` into dst as one scalar of type ty. */
static int encode(parser_t *ps, const ptype_t *ty, const literal_t *lit, unsigned char *dst,
                  unsigned line)
{
    uint32_t b32;
    uint64_t b64;

    if (ty->cls == 'f' || (lit->is_float && ty->cls == 'b' && (ty->size == 4 || ty->size == 8))) {
        memcpy(&b32, &lit->f, sizeof b32);
        memcpy(&b64, &lit->d, sizeof b64);
        put_le(dst, ty->size == 4 ? b32 : b64, ty->size);
        return 0;
    }
    if (lit->is_float)
        return ptx_fail(ps, line, "floating-point initialiser for a %s variable is not supported",
                    ty->name);
    put_le(dst, lit->i, ty->size < 8 ? ty->size : 8);
    if (ty->size == 16)
        memset(dst + 8, lit->neg ? 0xff : 0, 8);
    return 0;
}

/* Store one literal as scalar number `index` of the variable, growing the buffer. */
static int store_value(parser_t *ps, decl_t *dc, uint64_t index)
{
    uint64_t sz = dc->type->size, end;
    unsigned line = ps->t.line;
    literal_t lit;

    if (ptx_parse_literal(ps, &lit))
        return ps->rc;
    if (index >= MAX_OBJECT / sz)
        return ptx_fail(ps, line, "initialiser of '%.*s' is too large", NAMEARG(dc->name));
    end = (index + 1) * sz;
    if (end > dc->init_cap) {
        uint64_t cap = end > 2 * dc->init_cap ? end : 2 * dc->init_cap;
        unsigned char *p = realloc(dc->init, (size_t)cap);
        if (!p)
            return ptx_nomem(ps);
        memset(p + dc->init_cap, 0, (size_t)(cap - dc->init_cap));
        dc->init = p;
        dc->init_cap = cap;
    }
    return encode(ps, dc->type, &lit, dc->init + index * sz, line);
}

/* Parse `{ ... }` for dimension d, whose first scalar is number `base`. */
static int parse_init_list(parser_t *ps, decl_t *dc, unsigned d, uint64_t base)
{
    uint64_t stride = 1, count = 0, limit;

    for (unsigned i = d + 1; i < dc->ndims; i++)
        stride *= dc->dims[i];
    limit = dc->dims[d] ? dc->dims[d] : MAX_OBJECT / dc->type->size / stride;
    ptx_advance(ps);
    while (ps->rc == 0 && !ptx_punct(ps, '}')) {
        if (count == limit)
            return ptx_fail(ps, ps->t.line, "too many initialisers for '%.*s'", NAMEARG(dc->name));
        if (ptx_punct(ps, '{') && d + 1 < dc->ndims)
            parse_init_list(ps, dc, d + 1, base + count * stride);
        else if (ptx_punct(ps, '{') || d + 1 < dc->ndims)
            return ptx_fail(ps, ps->t.line, "initialiser braces of '%.*s' do not match its "
                        "dimensions", NAMEARG(dc->name));
        else
            store_value(ps, dc, base + count);
        count++;
        if (ps->rc == 0 && !ptx_punct(ps, '}'))
            ptx_expect(ps, ',', "or '}' in initialiser");
    }
    if (dc->dims[d] == 0)
        dc->dims[d] = count;
    if (ps->rc == 0 && count == 0 && d == 0)
        return ptx_fail(ps, ps->t.line, "empty initialiser for '%.*s'", NAMEARG(dc->name));
    return ptx_expect(ps, '}', "closing the initialiser");
}

static int parse_init(parser_t *ps, decl_t *dc)
{
    uint64_t size;

    if (object_size(ps, dc, MAX_OBJECT, &size))
        return ps->rc;
    if (ptx_punct(ps, '{'))
        return dc->ndims ? parse_init_list(ps, dc, 0, 0)
                         : ptx_fail(ps, ps->t.line, "braces around the scalar initialiser of "
                                "'%.*s'", NAMEARG(dc->name));
    if (dc->ndims)
        return ptx_fail(ps, ps->t.line, "array '%.*s' needs a braced initialiser",
                    NAMEARG(dc->name));
    return store_value(ps, dc, 0);
}

/* ------------------------------------------------------------------ module contents */

/* Room for element n in an array of `cap` elements; NULL (array untouched) when out of memory. */
static void *grow(void *arr, uint32_t *cap, uint32_t n, size_t elsize)
{
    uint32_t ncap;
    void *p;

    if (n < *cap)
        return arr;
    if (n == UINT32_MAX)
        return NULL;
    ncap = *cap >= UINT32_MAX / 2 ? UINT32_MAX : (*cap ? *cap * 2 : 8);
    p = realloc(arr, (size_t)ncap * elsize);
    if (p)
        *cap = ncap;
    return p;
}

static char *dup_name(const tok_t *t)
{
    char *s = malloc(t->n + 1);

    if (s) {
        memcpy(s, t->s, t->n);
        s[t->n] = '\0';
    }
    return s;
}

/* Zero-fill the initial bytes up to the variable's full size. */
static int pad_init(parser_t *ps, decl_t *dc, uint64_t size)
{
    unsigned char *p;

    if (!dc->init || dc->init_cap >= size)
        return 0;
    p = realloc(dc->init, (size_t)size);
    if (!p)
        return ptx_nomem(ps);
    memset(p + dc->init_cap, 0, (size_t)(size - dc->init_cap));
    dc->init = p;
    dc->init_cap = size;
    return 0;
}

/* Append the variable dc to the module, taking its initialiser. */
static int add_global(parser_t *ps, decl_t *dc)
{
    sim_ptx_module_t *m = ps->m;
    sim_ptx_global_t *g;
    uint64_t size;

    if (dc->ndims && dc->dims[0] == 0)
        return ptx_fail(ps, dc->name.line, "size of '%.*s' is missing", NAMEARG(dc->name));
    if (object_size(ps, dc, MAX_OBJECT, &size) || pad_init(ps, dc, size))
        return ps->rc;
    g = grow(m->globals, &ps->globals_cap, m->nglobals, sizeof *g);
    if (!g)
        return ptx_nomem(ps);
    m->globals = g;
    g += m->nglobals;
    g->name = dup_name(&dc->name);
    if (!g->name)
        return ptx_nomem(ps);
    g->size = size;
    g->align = dc->align ? dc->align : dc->type->size * dc->vec;
    g->init = dc->init;
    dc->init = NULL;
    m->nglobals++;
    return 0;
}

/* One declarator: NAME [dims] [= initialiser], added to the module. */
static int parse_declarator(parser_t *ps, const decl_t *quals)
{
    decl_t dc = *quals;

    if (ps->t.kind != TK_ID)
        return ptx_fail(ps, ps->t.line, "missing variable name before '%.*s'", TOKARG(ps));
    dc.name = ps->t;
    ptx_advance(ps);
    if (parse_dims(ps, &dc, true) == 0 && ptx_punct(ps, '=')) {
        ptx_advance(ps);
        parse_init(ps, &dc);
    }
    if (ps->rc == 0)
        add_global(ps, &dc);
    free(dc.init);
    return ps->rc;
}

static int skip_statement(parser_t *ps);

/* A .global or .const statement: qualifiers, then declarators separated by commas. */
static int parse_variables(parser_t *ps, bool ext)
{
    decl_t quals;
    int r;

    memset(&quals, 0, sizeof quals);
    ptx_advance(ps);
    r = parse_quals(ps, &quals, false);
    if (r < 0)
        return r;
    if (r == 1 || ext)
        return skip_statement(ps);
    while (parse_declarator(ps, &quals) == 0 && ptx_punct(ps, ','))
        ptx_advance(ps);
    return ps->rc ? ps->rc : ptx_expect(ps, ';', "after the variable declaration");
}

/* One `.param` declaration of an entry; fills size and align. */
static int parse_param(parser_t *ps, sim_ptx_param_t *out)
{
    decl_t dc;
    uint64_t size;

    memset(&dc, 0, sizeof dc);
    if (!ptx_tok_is(ps, ".param"))
        return ptx_fail(ps, ps->t.line, "expected .param, got '%.*s'", TOKARG(ps));
    ptx_advance(ps);
    if (parse_quals(ps, &dc, true))
        return ps->rc;
    if (ps->t.kind != TK_ID)
        return ptx_fail(ps, ps->t.line, "missing parameter name before '%.*s'", TOKARG(ps));
    dc.name = ps->t;
    ptx_advance(ps);
    if (parse_dims(ps, &dc, false) || object_size(ps, &dc, MAX_PARAM, &size))
        return ps->rc;
    out->offset = 0;
    out->size = (uint32_t)size;
    out->align = dc.align ? dc.align : dc.type->size * dc.vec;
    return 0;
}

/* Place the parameters: each at its alignment, the total rounded to the largest one. */
static int layout(parser_t *ps, sim_ptx_entry_t *e, unsigned line)
{
    uint64_t off = 0;
    uint32_t maxa = 1;

    for (uint32_t i = 0; i < e->nparams; i++) {
        sim_ptx_param_t *p = &e->params[i];
        off = (off + p->align - 1) & ~(uint64_t)(p->align - 1);
        p->offset = (uint32_t)off;
        off += p->size;
        if (off > UINT32_MAX / 2)
            return ptx_fail(ps, line, "parameters of '%s' are too large", e->name);
        if (p->align > maxa)
            maxa = p->align;
    }
    e->args_size = e->nparams ? (uint32_t)((off + maxa - 1) & ~(uint64_t)(maxa - 1)) : 0;
    e->params_end = (uint32_t)off;
    return 0;
}

/* Parse one parameter onto the end of e->params (cap: its allocated length). */
static int add_param(parser_t *ps, sim_ptx_entry_t *e, uint32_t *cap)
{
    sim_ptx_param_t *p = grow(e->params, cap, e->nparams, sizeof *p);

    if (!p)
        return ptx_nomem(ps);
    e->params = p;
    if (parse_param(ps, &e->params[e->nparams]) == 0)
        e->nparams++;
    return ps->rc;
}

static bool list_cut(const parser_t *ps)
{
    return ps->t.kind == TK_EOF || ptx_punct(ps, '{');
}

/* The parenthesised parameter list of an entry; the current token is '('. */
static int parse_params(parser_t *ps, sim_ptx_entry_t *e)
{
    unsigned open_line = ps->t.line;
    uint32_t cap = 0;
    bool more;

    ptx_advance(ps);
    more = !ptx_punct(ps, ')');
    while (more && !list_cut(ps) && add_param(ps, e, &cap) == 0) {
        more = ptx_punct(ps, ',');
        if (more)
            ptx_advance(ps);
    }
    if (ps->rc == 0 && list_cut(ps))
        return ptx_fail(ps, open_line, "unbalanced '(': the parameter list is never closed");
    if (ps->rc == 0 && !ptx_punct(ps, ')'))
        return ptx_fail(ps, ps->t.line, "expected ',' or ')' after a parameter, got '%.*s'",
                    TOKARG(ps));
    ptx_advance(ps);
    return ps->rc ? ps->rc : layout(ps, e, open_line);
}

/* After the parameters: performance directives (.maxntid 256, 1, 1 ...) up to '{' or ';'. */
static void skip_entry_attributes(parser_t *ps)
{
    while (ps->t.kind == TK_DIR || ps->t.kind == TK_NUM || ptx_punct(ps, ','))
        ptx_advance(ps);
}

static void free_entry(sim_ptx_entry_t *e)
{
    free(e->name);
    free(e->params);
    memset(e, 0, sizeof *e);
}

static int add_entry(parser_t *ps, sim_ptx_entry_t *e)
{
    sim_ptx_module_t *m = ps->m;
    sim_ptx_entry_t *arr = grow(m->entries, &ps->entries_cap, m->nentries, sizeof *arr);

    if (!arr)
        return ptx_nomem(ps);
    m->entries = arr;
    arr[m->nentries++] = *e;
    memset(e, 0, sizeof *e);
    return 0;
}

/* `.entry NAME [(params)] [attributes] { body }`; declarations ending in ';' are skipped. */
static int parse_entry(parser_t *ps, bool ext)
{
    sim_ptx_entry_t e;

    memset(&e, 0, sizeof e);
    ptx_advance(ps);
    if (ps->t.kind != TK_ID)
        return ptx_fail(ps, ps->t.line, "missing kernel name after .entry, got '%.*s'", TOKARG(ps));
    e.name = dup_name(&ps->t);
    if (!e.name)
        return ptx_nomem(ps);
    ptx_advance(ps);
    if (ptx_punct(ps, '('))
        parse_params(ps, &e);
    skip_entry_attributes(ps);
    if (ps->rc == 0 && ptx_punct(ps, ';')) {
        ptx_advance(ps);        /* a declaration: the kernel is defined elsewhere */
    } else if (ps->rc == 0 && ptx_punct(ps, '{')) {
        if (skip_group(ps, '{', '}') == 0 && !ext)
            add_entry(ps, &e);
    } else if (ps->rc == 0) {
        ptx_fail(ps, ps->t.line, "expected '{' to open the body of '%s', got '%.*s'", e.name,
             TOKARG(ps));
    }
    free_entry(&e);
    return ps->rc;
}

/* ------------------------------------------------------------------ statements we skip */

/* Skip a statement: up to a ';' or through a '{...}' block, outside parentheses. */
static int skip_statement(parser_t *ps)
{
    unsigned line = ps->t.line;
    int depth = 0;

    for (;;) {
        if (ps->t.kind == TK_EOF)
            return ps->rc ? ps->rc : ptx_fail(ps, line, "statement never ends (missing ';' or "
                                          "'{', or unbalanced '(')");
        if (ptx_punct(ps, '}') || (ptx_punct(ps, ')') && depth == 0))
            return ptx_fail(ps, ps->t.line, "unbalanced '%c'", ps->t.s[0]);
        if (depth == 0 && ptx_punct(ps, '{'))
            return skip_group(ps, '{', '}');
        if (depth == 0 && ptx_punct(ps, ';'))
            break;
        depth += ptx_punct(ps, '(') - ptx_punct(ps, ')');
        ptx_advance(ps);
    }
    ptx_advance(ps);
    return ps->rc;
}

/* Directives that take the rest of their line: .version, .target, .file, ... */
static int skip_line(parser_t *ps)
{
    unsigned line = ps->t.line;

    do
        ptx_advance(ps);
    while (ps->t.kind != TK_EOF && ps->t.line == line);
    return ps->rc;
}

/* `.section NAME { ... }`: DWARF data emitted for debug builds. */
static int skip_section(parser_t *ps)
{
    ptx_advance(ps);
    while (ps->t.kind == TK_DIR || ps->t.kind == TK_ID)
        ptx_advance(ps);
    if (!ptx_punct(ps, '{'))
        return ptx_fail(ps, ps->t.line, "expected '{' after .section, got '%.*s'", TOKARG(ps));
    return skip_group(ps, '{', '}');
}

static bool is_linkage(const parser_t *ps)
{
    return ptx_tok_is(ps, ".visible") || ptx_tok_is(ps, ".weak") || ptx_tok_is(ps, ".extern") ||
           ptx_tok_is(ps, ".common");
}

static bool is_line_directive(const parser_t *ps)
{
    return ptx_tok_is(ps, ".version") || ptx_tok_is(ps, ".target") ||
           ptx_tok_is(ps, ".address_size") || ptx_tok_is(ps, ".file") || ptx_tok_is(ps, ".loc");
}

/* One module-scope statement; always consumes at least one token or fails. */
static int parse_statement(parser_t *ps)
{
    bool ext = false, linkage = false;

    while (is_linkage(ps)) {
        ext |= ptx_tok_is(ps, ".extern");
        linkage = true;
        ptx_advance(ps);
    }
    if (ptx_tok_is(ps, ".entry"))
        return parse_entry(ps, ext);
    if (ptx_tok_is(ps, ".global") || ptx_tok_is(ps, ".const"))
        return parse_variables(ps, ext);
    if (ptx_tok_is(ps, ".section"))
        return skip_section(ps);
    if (is_line_directive(ps))
        return skip_line(ps);
    if (ps->t.kind == TK_DIR)
        return skip_statement(ps);
    if (ps->t.kind == TK_EOF)
        return linkage && !ps->rc ? ptx_fail(ps, ps->t.line, "declaration missing after linkage")
                                  : ps->rc;
    if (ptx_punct(ps, '}') || ptx_punct(ps, ')') || ptx_punct(ps, ']'))
        return ptx_fail(ps, ps->t.line, "unbalanced '%c'", ps->t.s[0]);
    return ptx_fail(ps, ps->t.line, "unexpected '%.*s' at module scope", TOKARG(ps));
}

int sim_ptx_parse(const char *text, size_t len, sim_ptx_module_t *out, char *err, size_t errlen)
{
    parser_t ps;

    if (err && errlen)
        err[0] = '\0';
    if (!out)
        return -EINVAL;
    memset(out, 0, sizeof *out);
    memset(&ps, 0, sizeof ps);
    ps.err = err;
    ps.errlen = errlen;
    ps.m = out;
    ps.line = 1;
    if (!text)
        return ptx_fail(&ps, 0, "no PTX text");
    /* a NUL ends the text: callers may pass a length that counts it, or a padded payload */
    ps.p = text;
    ps.end = text + strnlen(text, len);
    ptx_advance(&ps);
    while (ps.rc == 0 && ps.t.kind != TK_EOF)
        parse_statement(&ps);
    if (ps.rc)
        sim_ptx_free(out);
    return ps.rc;
}

void sim_ptx_free(sim_ptx_module_t *m)
{
    if (!m)
        return;
    for (uint32_t i = 0; i < m->nentries; i++)
        free_entry(&m->entries[i]);
    for (uint32_t i = 0; i < m->nglobals; i++) {
        free(m->globals[i].name);
        free(m->globals[i].init);
    }
    free(m->entries);
    free(m->globals);
    memset(m, 0, sizeof *m);
}
