/* SPDX-License-Identifier: MIT */
/*
 * ptx_int.h - inside the PTX reader: the tokenizer and literals (ptx_lex.c) that the
 * declaration parser (ptx.c) reads with.
 */
#ifndef SIM_PTX_INT_H
#define SIM_PTX_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ptx.h"

enum tok_kind { TK_EOF, TK_DIR, TK_ID, TK_NUM, TK_STR, TK_PUNCT };

typedef struct tok {
    enum tok_kind kind;
    const char *s;          /* the token's text in the input, not NUL-terminated */
    size_t n;
    unsigned line;
} tok_t;

typedef struct parser {
    const char *p, *end;    /* unread input */
    unsigned line;          /* line of *p */
    tok_t t;                /* the current token */
    int rc;                 /* the first error; once set, the current token stays TK_EOF */
    char *err;
    size_t errlen;
    sim_ptx_module_t *m;
    uint32_t entries_cap, globals_cap;
} parser_t;

/* printf arguments for "%.*s" of the current token, shortened for messages */
#define TOKARG(ps) ((ps)->t.n > 48 ? 48 : (int)(ps)->t.n), (ps)->t.s
#define NAMEARG(tk) ((tk).n > 48 ? 48 : (int)(tk).n), (tk).s

typedef struct literal {
    bool is_float;
    bool neg;           /* a nonzero integer written with a leading '-' */
    uint64_t i;         /* integer value, two's complement */
    float f;            /* the value rounded to float and to double */
    double d;
} literal_t;

/* Record the first error as -EINVAL with "line N: reason" and end the token stream; returns
 * the parser's error.  ptx_nomem: the same for -ENOMEM ("out of memory"). */
int ptx_fail(parser_t *ps, unsigned line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int ptx_nomem(parser_t *ps);
/* Load the next token into ps->t. */
void ptx_advance(parser_t *ps);
/* Is the current token `word`, or the punctuation c? */
bool ptx_tok_is(const parser_t *ps, const char *word);
bool ptx_punct(const parser_t *ps, char c);
/* Consume punctuation c, or fail naming `where`. */
int ptx_expect(parser_t *ps, char c, const char *where);
/* An integer literal: decimal, 0x hex, 0b binary or 0 octal, with an optional U suffix. */
bool ptx_int_literal(const char *s, size_t n, uint64_t *out);
/* Read an optionally negated numeric constant. */
int ptx_parse_literal(parser_t *ps, literal_t *lit);

#endif
