/* SPDX-License-Identifier: MIT */
/*
 * sites.c - call sites as `elixir-trace` shows them, and allocations grouped by call site.
 *
 * A stack recorded in a Python program carries the interpreter's frames (FORMAT.md 1.4) as
 * well as the native ones, which all run through the interpreter and say little.  Its call
 * site is then the Python one, "file:line function" frames, innermost first, of the kind
 * nearest the program's author: the program's own files when any frame is in one, else
 * installed packages (site-packages, dist-packages: PyTorch and the like), else the
 * interpreter's standard library (.../lib/pythonX.Y/, frozen modules).  So an allocation
 * made inside a framework is shown where the program called into it.  A stack without
 * Python frames keeps its native call site (tm_stack_text).
 */
#include "agg.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* Where the text at p, just after ".../lib/python", leads: "X.Y/site-packages/" or
 * "X.Y/dist-packages/" is TM_PY_PACKAGE, "X.Y/" anything else TM_PY_STDLIB, else -1. */
static int lib_after(const char *p)
{
    if (*p < '0' || *p > '9')
        return -1;
    while ((*p >= '0' && *p <= '9') || *p == '.')
        p++;
    if (*p != '/')
        return -1;
    p++;
    return strncmp(p, "site-packages/", 14) == 0 || strncmp(p, "dist-packages/", 14) == 0
               ? TM_PY_PACKAGE
               : TM_PY_STDLIB;
}

int tm_py_kind(const char *file)
{
    static const char *const dirs[] = { "/lib/python", "/lib64/python" };
    int kind = TM_PY_PROGRAM;
    if (strncmp(file, "<frozen ", 8) == 0)
        return TM_PY_STDLIB;
    for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++)
        for (const char *p = strstr(file, dirs[d]); p; p = strstr(p + 1, dirs[d])) {
            int k = lib_after(p + strlen(dirs[d]));
            if (k > kind)
                kind = k;
        }
    if (kind == TM_PY_PROGRAM && (strstr(file, "/site-packages/") ||
                                  strstr(file, "/dist-packages/")))
        kind = TM_PY_PACKAGE;
    return kind;
}

const char *tm_py_kind_name(int kind)
{
    return kind == TM_PY_STDLIB ? "stdlib" : kind == TM_PY_PACKAGE ? "package" : "program";
}

void tm_py_site_text(const trc_stack_t *s, unsigned frames, char *buf, size_t len)
{
    size_t at = 0, shown = 0;
    if (!len)
        return;
    buf[0] = 0;
    uint32_t n = s ? s->pydepth : 0;
    int best = TM_PY_STDLIB;
    for (uint32_t i = 0; i < n; i++) {
        int k = tm_py_kind(s->pyframes[i].file);
        if (k < best)
            best = k;
    }
    for (uint32_t i = 0; i < n && at < len && (!frames || shown < frames); i++) {
        const trc_pyframe_t *f = &s->pyframes[i];
        if (tm_py_kind(f->file) != best)
            continue;                  /* frames of a kind further from the program's */
        int k = snprintf(buf + at, len - at, "%s%s:%" PRIu32 " %s", shown ? " < " : "",
                         base_name(f->file), f->line, f->func);
        at += k > 0 ? (size_t)k : 0;
        shown++;
    }
}

void tm_site_text(const trc_stack_t *s, unsigned frames, char *buf, size_t len)
{
    if (s && s->pydepth)
        tm_py_site_text(s, frames, buf, len);
    else
        tm_stack_text(s, frames, buf, len);
}

/* ------------------------------------------------------------------ grouping */

static int by_stack(const void *a, const void *b)
{
    const tm_alloc_t *x = *(const tm_alloc_t *const *)a, *y = *(const tm_alloc_t *const *)b;
    uintptr_t p = (uintptr_t)x->stack, q = (uintptr_t)y->stack;
    return p < q ? -1 : p > q;
}

static int by_text(const void *a, const void *b)
{
    return strcmp(((const tm_site_t *)a)->text, ((const tm_site_t *)b)->text);
}

static int by_bytes(const void *a, const void *b)
{
    const tm_site_t *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    return strcmp(x->text, y->text);
}

/* Sites of equal text (sorted by text) merged into one; the new count. */
static size_t merge_equal(tm_site_t *v, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k && strcmp(v[k - 1].text, v[i].text) == 0) {
            v[k - 1].allocs += v[i].allocs;
            v[k - 1].bytes += v[i].bytes;
            v[k - 1].live_bytes += v[i].live_bytes;
            free(v[i].text);
        } else {
            v[k++] = v[i];
        }
    }
    return k;
}

/* One site per distinct stack among the n allocations of a (sorted by stack). */
static int per_stack(const tm_alloc_t **a, size_t n, unsigned frames, tm_site_t *v, size_t *nv)
{
    char text[8192];
    *nv = 0;
    for (size_t i = 0; i < n; i++) {
        if (!*nv || a[i]->stack != a[i - 1]->stack) {
            if (a[i]->stack)
                tm_site_text(a[i]->stack, frames, text, sizeof(text));
            char *copy = strdup(a[i]->stack ? text : "-");
            if (!copy)
                return -ENOMEM;
            v[(*nv)++] = (tm_site_t){ .text = copy,
                                      .python = a[i]->stack && a[i]->stack->pydepth };
        }
        tm_site_t *s = &v[*nv - 1];
        s->allocs++;
        s->bytes += a[i]->size;
        if (a[i]->t_free == TM_LIVE)
            s->live_bytes += a[i]->size;
    }
    return 0;
}

int tm_sites(const tm_alloc_t **a, size_t n, unsigned frames, tm_site_t **out, size_t *nout)
{
    const tm_alloc_t **v = malloc((n ? n : 1) * sizeof(*v));
    tm_site_t *s = calloc(n ? n : 1, sizeof(*s));
    size_t ns = 0;
    *out = NULL;
    *nout = 0;
    if (!v || !s) {
        free(v);
        free(s);
        return -ENOMEM;
    }
    memcpy(v, a, n * sizeof(*v));
    qsort(v, n, sizeof(*v), by_stack);
    int rc = per_stack(v, n, frames, s, &ns);
    free(v);
    if (rc < 0) {
        tm_sites_free(s, ns);
        return rc;
    }
    qsort(s, ns, sizeof(*s), by_text);
    ns = merge_equal(s, ns);
    qsort(s, ns, sizeof(*s), by_bytes);
    *out = s;
    *nout = ns;
    return 0;
}

void tm_sites_free(tm_site_t *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i].text);
    free(v);
}
