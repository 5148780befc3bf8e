/* SPDX-License-Identifier: MIT */
/*
 * trace_name.c - the name of the trace file, from ELIXIR_TRACE.
 *
 * %p in the pattern becomes the process id, %h the host name and %% a '%'.  A file that
 * exists is never overwritten: the n-th other name tried puts ".n" before the extension of
 * the file's name (trace.elx -> trace.1.elx, trace.2.elx; trace -> trace.1), so running a
 * program twice with the same ELIXIR_TRACE keeps both traces.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "trace_int.h"

int shim_trace_name(const char *pattern, unsigned n, char *out, size_t cap)
{
    char base[4096];
    int rc = shim_expand_name(pattern, base, sizeof(base));

    if (rc < 0)
        return rc;
    if (n == 0)
        return snprintf(out, cap, "%s", base) < (int)cap ? 0 : -ENAMETOOLONG;
    const char *slash = strrchr(base, '/'), *file = slash ? slash + 1 : base;
    const char *dot = strrchr(file, '.');
    if (!dot || dot == file)            /* no extension (or a hidden file's leading dot) */
        dot = file + strlen(file);
    int len = snprintf(out, cap, "%.*s.%u%s", (int)(dot - base), base, n, dot);
    return len >= 0 && (size_t)len < cap ? 0 : -ENAMETOOLONG;
}
