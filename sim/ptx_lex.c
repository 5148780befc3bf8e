/* SPDX-License-Identifier: MIT */
/*
 * ptx_lex.c - the PTX reader's tokenizer and literals: directives, identifiers, numbers,
 * strings and punctuation, comments skipped, line numbers kept for messages; integer and
 * floating-point constants as PTX writes them.
 */
#include "ptx_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ tokenizer */

static void set_eof(parser_t *ps)
{
    ps->p = ps->end;
    ps->t.kind = TK_EOF;
    ps->t.s = "end of input";
    ps->t.n = strlen(ps->t.s);
    ps->t.line = ps->line;
}

/* Record the first error as -EINVAL with "line N: reason" and end the token stream. */
int ptx_fail(parser_t *ps, unsigned line, const char *fmt, ...)
{
    if (ps->rc == 0) {
        ps->rc = -EINVAL;
        if (ps->err && ps->errlen) {
            int k = snprintf(ps->err, ps->errlen, "line %u: ", line);
            va_list ap;

            va_start(ap, fmt);
            if (k >= 0 && (size_t)k < ps->errlen)
                vsnprintf(ps->err + k, ps->errlen - (size_t)k, fmt, ap);
            va_end(ap);
        }
    }
    set_eof(ps);
    return ps->rc;
}

int ptx_nomem(parser_t *ps)
{
    if (ps->rc == 0) {
        ps->rc = -ENOMEM;
        if (ps->err && ps->errlen)
            snprintf(ps->err, ps->errlen, "out of memory");
    }
    set_eof(ps);
    return ps->rc;
}

static bool is_digit(int c) { return c >= '0' && c <= '9'; }
static bool is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_word(int c) { return is_alpha(c) || is_digit(c) || c == '_' || c == '$'; }

static const char *scan_word(const char *p, const char *end)
{
    while (p < end && is_word((unsigned char)*p))
        p++;
    return p;
}

/* True when s starts a radix-prefixed literal (0x, 0b, 0f, 0d), whose digits may include e. */
static bool radix_prefix(const char *s, size_t n)
{
    return n >= 2 && s[0] == '0' && s[1] != '\0' && strchr("xXbBfFdD", s[1]);
}

/* Scan a numeric token: letters, digits and '.', and a sign after a decimal exponent. */
static const char *scan_number(const char *s, const char *end)
{
    bool decimal = !radix_prefix(s, (size_t)(end - s));
    const char *p = s + 1;

    while (p < end) {
        if (is_word((unsigned char)*p) || *p == '.')
            p++;
        else if ((*p == '+' || *p == '-') && decimal && (p[-1] == 'e' || p[-1] == 'E'))
            p++;
        else
            break;
    }
    return p;
}

/* Skip a block comment starting at ps->p.  Returns false on an unterminated comment. */
static bool skip_comment(parser_t *ps)
{
    unsigned start = ps->line;

    for (ps->p += 2; ps->p + 1 < ps->end; ps->p++) {
        if (ps->p[0] == '*' && ps->p[1] == '/') {
            ps->p += 2;
            return true;
        }
        if (ps->p[0] == '\n')
            ps->line++;
    }
    ptx_fail(ps, start, "unterminated /* comment");
    return false;
}

/* Skip white space and comments.  Returns false after an error. */
static bool skip_blank(parser_t *ps)
{
    while (ps->p < ps->end) {
        char c = *ps->p;
        bool two = ps->p + 1 < ps->end;

        if (c == '\n') {
            ps->line++;
            ps->p++;
        } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
            ps->p++;
        } else if (c == '/' && two && ps->p[1] == '/') {
            const char *nl = memchr(ps->p, '\n', (size_t)(ps->end - ps->p));
            ps->p = nl ? nl : ps->end;
        } else if (c == '/' && two && ps->p[1] == '*') {
            if (!skip_comment(ps))
                return false;
        } else {
            return true;
        }
    }
    return true;
}

/* Scan a "string" token starting at ps->p; strings do not span lines. */
static bool scan_string(parser_t *ps)
{
    const char *p = ps->p + 1;

    while (p < ps->end && *p != '"' && *p != '\n')
        p += (*p == '\\' && p + 1 < ps->end && p[1] != '\n') ? 2 : 1;
    if (p >= ps->end || *p != '"') {
        ptx_fail(ps, ps->line, "unterminated string");
        return false;
    }
    ps->p = p + 1;
    return true;
}

/* Scan the token that starts at s; false after an error. */
static bool scan_token(parser_t *ps, const char *s)
{
    unsigned char c = (unsigned char)*s;

    if (c == '.' && s + 1 < ps->end && (is_alpha((unsigned char)s[1]) || s[1] == '_')) {
        ps->t.kind = TK_DIR;
        ps->p = scan_word(s + 1, ps->end);
    } else if (is_alpha(c) || c == '_' || c == '$' || c == '%') {
        ps->t.kind = TK_ID;
        ps->p = scan_word(s + 1, ps->end);
    } else if (is_digit(c)) {
        ps->t.kind = TK_NUM;
        ps->p = scan_number(s, ps->end);
    } else if (c == '"') {
        ps->t.kind = TK_STR;
        return scan_string(ps);
    } else if (c > ' ' && c < 0x7f) {
        ps->t.kind = TK_PUNCT;
        ps->p = s + 1;
    } else {
        ptx_fail(ps, ps->line, "unexpected byte 0x%02x", c);
        return false;
    }
    return true;
}

/* Load the next token into ps->t. */
void ptx_advance(parser_t *ps)
{
    const char *s;

    if (ps->rc || !skip_blank(ps) || ps->p >= ps->end) {
        set_eof(ps);
        return;
    }
    s = ps->p;
    ps->t.s = s;
    ps->t.line = ps->line;
    if (scan_token(ps, s))
        ps->t.n = (size_t)(ps->p - s);
}

bool ptx_tok_is(const parser_t *ps, const char *word)
{
    size_t n = strlen(word);
    return ps->t.kind != TK_EOF && ps->t.n == n && memcmp(ps->t.s, word, n) == 0;
}

bool ptx_punct(const parser_t *ps, char c)
{
    return ps->t.kind == TK_PUNCT && ps->t.s[0] == c;
}

int ptx_expect(parser_t *ps, char c, const char *where)
{
    if (!ptx_punct(ps, c))
        return ptx_fail(ps, ps->t.line, "expected '%c' %s, got '%.*s'", c, where, TOKARG(ps));
    ptx_advance(ps);
    return ps->rc;
}

/* ------------------------------------------------------------------ literals */

static int digit_value(int c)
{
    if (is_digit(c))
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Digits of s[0..n) in `base`; false on a bad digit or 64-bit overflow. */
static bool digits(const char *s, size_t n, unsigned base, uint64_t *out)
{
    uint64_t v = 0;

    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        int d = digit_value((unsigned char)s[i]);
        if (d < 0 || (unsigned)d >= base || v > (UINT64_MAX - (unsigned)d) / base)
            return false;
        v = v * base + (unsigned)d;
    }
    *out = v;
    return true;
}

/* An integer literal: decimal, 0x hex, 0b binary or 0 octal, with an optional U suffix. */
bool ptx_int_literal(const char *s, size_t n, uint64_t *out)
{
    if (n > 1 && (s[n - 1] == 'U' || s[n - 1] == 'u'))
        n--;
    if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        return digits(s + 2, n - 2, 16, out);
    if (n > 2 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B'))
        return digits(s + 2, n - 2, 2, out);
    if (n > 1 && s[0] == '0')
        return digits(s + 1, n - 1, 8, out);
    return digits(s, n, 10, out);
}

/* A floating-point literal: 0fXXXXXXXX (float bits), 0dXXXXXXXXXXXXXXXX (double bits), or a
 * decimal number with a '.' or an exponent. */
static bool float_literal(const char *s, size_t n, literal_t *lit)
{
    uint64_t bits;
    char buf[80], *end;

    if (n == 10 && s[0] == '0' && (s[1] == 'f' || s[1] == 'F') && digits(s + 2, 8, 16, &bits)) {
        uint32_t b = (uint32_t)bits;
        memcpy(&lit->f, &b, sizeof b);
        lit->d = lit->f;
        return true;
    }
    if (n == 18 && s[0] == '0' && (s[1] == 'd' || s[1] == 'D') && digits(s + 2, 16, 16, &bits)) {
        memcpy(&lit->d, &bits, sizeof bits);
        lit->f = (float)lit->d;
        return true;
    }
    if (radix_prefix(s, n) || n >= sizeof buf ||
        (!memchr(s, '.', n) && !memchr(s, 'e', n) && !memchr(s, 'E', n)))
        return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    lit->d = strtod(buf, &end);
    lit->f = strtof(buf, NULL);
    return end == buf + n;
}

/* Read an optionally negated numeric constant. */
int ptx_parse_literal(parser_t *ps, literal_t *lit)
{
    bool neg = false;

    memset(lit, 0, sizeof *lit);
    if (ptx_punct(ps, '-') || ptx_punct(ps, '+')) {
        neg = ptx_punct(ps, '-');
        ptx_advance(ps);
    }
    if (ps->t.kind != TK_NUM)
        return ptx_fail(ps, ps->t.line, "unsupported initialiser '%.*s': only numeric constants "
                    "are supported, not addresses or expressions", TOKARG(ps));
    if (float_literal(ps->t.s, ps->t.n, lit))
        lit->is_float = true;
    else if (!ptx_int_literal(ps->t.s, ps->t.n, &lit->i))
        return ptx_fail(ps, ps->t.line, "bad number '%.*s'", TOKARG(ps));
    if (!lit->is_float) {
        lit->d = (double)lit->i;
        lit->f = (float)lit->i;
    }
    if (neg) {
        lit->i = lit->i ? ~lit->i + 1 : 0;     /* two's complement, without wrapping */
        lit->f = -lit->f;
        lit->d = -lit->d;
        lit->neg = !lit->is_float && lit->i != 0;
    }
    ptx_advance(ps);
    return ps->rc;
}
