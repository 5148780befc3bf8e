/* SPDX-License-Identifier: MIT */
/*
 * text.c - XML and JSON strings, byte counts, durations and error messages for elixir-trace's
 * commands and exporters (text.h).
 */
#include "text.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>

/* ------------------------------------------------------------------ characters */

/* Length of the well-formed UTF-8 sequence at s (1 to 4), or 0 when it is not one: a stray
 * continuation byte, a truncated sequence, an overlong form, a surrogate, beyond U+10FFFF. */
static int utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    int n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
    if (!n || c > 0xf4)
        return 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0) ||
        (c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] >= 0x90))
        return 0;
    return n;
}

/* Length of the UTF-8 sequence at s (1 to 4) when it encodes a character XML 1.0 allows,
 * else 0: control characters other than tab, newline and CR, U+FFFE and U+FFFF are not. */
static int xml_char_len(const unsigned char *s)
{
    if (s[0] < 0x80)
        return s[0] >= 0x20 || s[0] == '\t' || s[0] == '\n' || s[0] == '\r';
    if (s[0] == 0xef && s[1] == 0xbf && s[2] >= 0xbe)
        return 0;
    return utf8_len(s);
}

/* ------------------------------------------------------------------ XML and JSON */

/* The escape of the character of n bytes at s (well formed), in buf or a constant; NULL: as
 * it is. */
typedef const char *escape_t(const unsigned char *s, int n, char buf[12]);

/* The code of a control character DEL or U+0080 to U+009F (C1) at s of n bytes, else 0. */
static unsigned del_or_c1(const unsigned char *s, int n)
{
    if (n == 1 && s[0] == 0x7f)
        return 0x7f;
    return n == 2 && s[0] == 0xc2 && s[1] <= 0x9f ? s[1] : 0;
}

static const char *xml_escape(const unsigned char *s, int n, char buf[12])
{
    unsigned c = del_or_c1(s, n);
    if (c) {                            /* allowed, but shown only as a reference */
        snprintf(buf, 12, "&#%u;", c);
        return buf;
    }
    switch (n == 1 ? s[0] : 0) {
    case '&': return "&amp;";
    case '<': return "&lt;";
    case '>': return "&gt;";
    case '"': return "&quot;";
    case '\'': return "&#39;";
    case '\t': case '\n': case '\r': snprintf(buf, 12, "&#%u;", s[0]); return buf;
    default: return NULL;
    }
}

static const char *json_escape(const unsigned char *s, int n, char buf[12])
{
    unsigned c = del_or_c1(s, n);
    if (c) {
        snprintf(buf, 12, "\\u%04x", c);
        return buf;
    }
    switch (n == 1 ? s[0] : 0x80) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default:
        if (n > 1 || s[0] >= 0x20)
            return NULL;
        snprintf(buf, 12, "\\u%04x", s[0]);
        return buf;
    }
}

/* Writes s character by character: len(s) says how long the character at s is (0: a byte
 * that starts no character allowed, written as `bad`), esc how to escape it. */
static void escape(FILE *f, const char *str, int (*len)(const unsigned char *), escape_t *esc,
                   const char *bad)
{
    const unsigned char *s = (const unsigned char *)(str ? str : "");
    char buf[12];
    while (*s) {
        int n = len(s);
        const char *e = n ? esc(s, n, buf) : bad;
        if (e)
            fputs(e, f);
        else
            fwrite(s, 1, (size_t)n, f);
        s += n ? n : 1;
    }
}

void text_xml(FILE *f, const char *s)
{
    escape(f, s, xml_char_len, xml_escape, "\xef\xbf\xbd");
}

void text_json(FILE *f, const char *s)
{
    fputc('"', f);
    escape(f, s, utf8_len, json_escape, "\\ufffd");
    fputc('"', f);
}

void text_json_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fputs("null", f);
}

void text_json_ns(FILE *f, double ns)
{
    if (isfinite(ns) && ns >= 0 && ns < 0x1p63)
        fprintf(f, "%" PRIu64, (uint64_t)llround(ns));
    else
        fputs("null", f);
}

/* ------------------------------------------------------------------ figures */

const char *text_bytes(uint64_t v, char buf[32])
{
    static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    if (v < 1024) {
        snprintf(buf, 32, "%" PRIu64 " B", v);
        return buf;
    }
    double x = (double)v / 1024;
    int u = 0;
    while (x >= 1024 && u < 5) {
        x /= 1024;
        u++;
    }
    snprintf(buf, 32, "%.2f %s", x, units[u]);
    return buf;
}

/* A duration with `us` as the name of microseconds. */
static const char *duration(uint64_t v, const char *us, char buf[32])
{
    if (v < 1000)
        snprintf(buf, 32, "%" PRIu64 " ns", v);
    else if (v < 1000000)
        snprintf(buf, 32, "%.2f %s", (double)v / 1e3, us);
    else if (v < 1000000000)
        snprintf(buf, 32, "%.2f ms", (double)v / 1e6);
    else
        snprintf(buf, 32, "%.3f s", (double)v / 1e9);
    return buf;
}

const char *text_ns(uint64_t v, char buf[32])
{
    return duration(v, "us", buf);
}

const char *text_ns_utf8(uint64_t v, char buf[32])
{
    return duration(v, "\xc2\xb5s", buf);
}

/* ------------------------------------------------------------------ errors */

int text_fail(char *err, size_t len, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && len)
        vsnprintf(err, len, fmt, ap);
    va_end(ap);
    return rc;
}

int text_finish(FILE *out, int rc, const char *what, char *err, size_t len)
{
    if (rc < 0)
        return text_fail(err, len, rc, "%s: out of memory", what);
    if (fflush(out) != 0 || ferror(out))
        return text_fail(err, len, -EIO, "%s: write error", what);
    return 0;
}
