/* SPDX-License-Identifier: MIT */
/*
 * fmt.c - elixir-trace's option values: parsing counts, sizes with K/M/G suffixes and device
 * numbers, and device numbers as text (the rest of the text is text.c's).
 */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
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

uint64_t cli_count_opt(const cli_cmd_t *c, const char *opt, uint64_t dflt)
{
    const char *s = cli_get(c, opt);
    return s ? cli_count(c, opt, s) : dflt;
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

const char *fmt_device(int32_t d, char buf[32])
{
    if (d == TRC_DEVICE_HOST)
        snprintf(buf, 32, "host");
    else
        snprintf(buf, 32, "%" PRId32, d);
    return buf;
}
