/* SPDX-License-Identifier: MIT */
/*
 * fmt.c - elixir-trace's value parsing (counts, sizes with K/M/G suffixes, device numbers)
 * and formatting (byte counts, durations, JSON strings and numbers).
 */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ------------------------------------------------------------------ parsing */

/* Digits only, into *v; 0 or -1 (empty, not a number, overflow). */
static int digits(const char *s, size_t n, uint64_t *v)
{
    *v = 0;
    if (n == 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]) || *v > (UINT64_MAX - 9) / 10)
            return -1;
        *v = *v * 10 + (uint64_t)(s[i] - '0');
    }
    return 0;
}

uint64_t cli_count(const cli_cmd_t *c, const char *opt, const char *s)
{
    uint64_t v;
    if (digits(s, strlen(s), &v) < 0 || v > UINT32_MAX)
        cli_usage(c, "%s: '%s' is not a count (accepted: 0 to %u)", opt, s, UINT32_MAX);
    return v;
}

/* Digits with an optional K, M, G or T suffix (powers of 1024), optionally followed by
 * "B" or "iB" (either case). */
uint64_t cli_size(const cli_cmd_t *c, const char *opt, const char *s)
{
    static const char units[] = "KMGT";
    size_t n = strspn(s, "0123456789");
    uint64_t v;
    int shift = 0;
    const char *u = s + n, *p = *u ? strchr(units, toupper((unsigned char)*u)) : NULL;
    if (p) {
        shift = 10 * (int)(p - units + 1);
        u++;
    }
    if (strcasecmp(u, "") != 0 && strcasecmp(u, "B") != 0 && (!p || strcasecmp(u, "iB") != 0))
        u = NULL;
    if (!u || digits(s, n, &v) < 0 || (shift && v > (UINT64_MAX >> shift)))
        cli_usage(c, "%s: '%s' is not a size (accepted: bytes, or a number with a K, M, G or "
                  "T suffix, e.g. 64M)", opt, s);
    return v << shift;
}

/* A device ordinal, or "host" (pinned host memory). */
int32_t cli_device(const cli_cmd_t *c, const char *opt, const char *s)
{
    uint64_t v;
    if (strcmp(s, "host") == 0 || strcmp(s, "-1") == 0)
        return TRC_DEVICE_HOST;
    if (digits(s, strlen(s), &v) < 0 || v > INT32_MAX)
        cli_usage(c, "%s: '%s' is not a device (accepted: a device number 0, 1, ... or "
                  "'host')", opt, s);
    return (int32_t)v;
}

/* ------------------------------------------------------------------ text */

const char *fmt_bytes(uint64_t v, char buf[32])
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

const char *fmt_ns(uint64_t v, char buf[32])
{
    if (v < 1000)
        snprintf(buf, 32, "%" PRIu64 " ns", v);
    else if (v < 1000000)
        snprintf(buf, 32, "%.2f us", (double)v / 1e3);
    else if (v < 1000000000)
        snprintf(buf, 32, "%.2f ms", (double)v / 1e6);
    else
        snprintf(buf, 32, "%.3f s", (double)v / 1e9);
    return buf;
}

const char *fmt_device(int32_t d, char buf[32])
{
    if (d == TRC_DEVICE_HOST)
        snprintf(buf, 32, "host");
    else
        snprintf(buf, 32, "%" PRId32, d);
    return buf;
}

/* ------------------------------------------------------------------ JSON */

/* Length of the well-formed UTF-8 sequence at s (1 to 4), or 0 when it is not one. */
static int utf8_len(const unsigned char *s)
{
    if (s[0] < 0x80)
        return 1;
    int n = s[0] > 0xf4 ? 0 : s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if ((n == 3 && s[0] == 0xe0 && s[1] < 0xa0) || (n == 3 && s[0] == 0xed && s[1] >= 0xa0) ||
        (n == 4 && s[0] == 0xf0 && s[1] < 0x90) || (n == 4 && s[0] == 0xf4 && s[1] >= 0x90))
        return 0;                      /* overlong, surrogate, beyond U+10FFFF */
    return n;
}

void json_str(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    fputc('"', f);
    while (*p) {
        int n = utf8_len(p);
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else if (n == 0)
            fputs("\\ufffd", f);
        else
            fwrite(p, 1, (size_t)n, f);
        p += n ? n : 1;
    }
    fputc('"', f);
}

void json_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fputs("null", f);
}
