/* SPDX-License-Identifier: MIT */
/*
 * cmd_tables.c - `elixir-trace allocs` and `elixir-trace kernels`: the allocations and the
 * kernels of a trace as sortable, filterable tables, or as one JSON document.
 */
#include "cli.h"
#include "symbols.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_TOP   20
#define DEFAULT_DEPTH 3

/* ------------------------------------------------------------------ both tables */

typedef int (*cmp_fn)(const void *, const void *);

typedef struct sort_key {
    const char *name;
    cmp_fn fn;
} sort_key_t;

/* The comparator of --sort KEY among the n keys; a usage error naming them when unknown. */
static cmp_fn sort_order(const cli_cmd_t *c, const char *key, const sort_key_t *keys, size_t n)
{
    char names[256] = "";
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(key, keys[i].name) == 0)
            return keys[i].fn;
        if (at < sizeof(names))
            at += (size_t)snprintf(names + at, sizeof(names) - at, "%s%s", i ? ", " : "",
                                   keys[i].name);
    }
    cli_usage(c, "--sort: unknown key '%s' (accepted: %s)", key, names);
}

/* --device N as a filter: 1 with *dev set when given, else 0. */
static int device_filter(const cli_cmd_t *c, int32_t *dev)
{
    const char *s = cli_get(c, "--device");
    *dev = s ? cli_device(c, "--device", s) : 0;
    return s != NULL;
}

/* Opens the JSON document of allocs and kernels: the trace, the sort key, how many rows
 * matched, and the array `list` (closed by "\n]}\n"). */
static void json_open(const tm_trace_t *t, const char *key, size_t matched, const char *list)
{
    printf("{\"trace\": ");
    text_json(stdout, t->path);
    printf(", \"sort\": ");
    text_json(stdout, key);
    printf(", \"matched\": %zu, \"%s\": [", matched, list);
}

/* ------------------------------------------------------------------ allocations */

static uint64_t trace_end;             /* for the comparators: end of a live allocation */

static uint64_t lifetime(const tm_alloc_t *a)
{
    uint64_t end = a->t_free == TM_LIVE ? trace_end : a->t_free;
    return end > a->t_alloc ? end - a->t_alloc : 0;
}

static int cmp_u64(uint64_t x, uint64_t y)
{
    return x < y ? -1 : x > y;
}

#define ALLOCS(a, b)                                                                          \
    const tm_alloc_t *x = *(const tm_alloc_t *const *)(a), *y = *(const tm_alloc_t *const *)(b)

static int by_time(const void *a, const void *b)
{
    ALLOCS(a, b);
    int c = cmp_u64(x->t_alloc, y->t_alloc);
    return c ? c : cmp_u64(x->id, y->id);
}

static int by_lifetime(const void *a, const void *b)
{
    ALLOCS(a, b);
    int c = cmp_u64(lifetime(y), lifetime(x));
    return c ? c : cmp_u64(x->id, y->id);
}

static int by_device(const void *a, const void *b)
{
    ALLOCS(a, b);
    if (x->device != y->device)
        return x->device < y->device ? -1 : 1;
    return tm_alloc_cmp_size(a, b);
}

void print_alloc_table(const tm_trace_t *t, const tm_alloc_t **v, size_t n, size_t top,
                       unsigned depth)
{
    char dev[32], size[32], at[32], life[32], site[4096];
    trace_end = t->t_last;
    printf("  %8s  %6s  %10s  %11s  %15s  %s\n", "id", "device", "size", "allocated",
           "lifetime", "call site");
    for (size_t i = 0; i < n && (!top || i < top); i++) {
        const tm_alloc_t *a = v[i];
        tm_site_text(a->stack, depth, site, sizeof(site));
        text_ns(lifetime(a), life);
        printf("  %8" PRIu64 "  %6s  %10s  %11s  %5s%10s  %s\n", a->id,
               fmt_device(a->device, dev), text_bytes(a->size, size),
               text_ns(a->t_alloc - t->t_first, at), a->t_free == TM_LIVE ? "live" : "", life,
               a->stack ? site : "-");
    }
}

/* Allocations grouped by call site (tm_sites), largest total first: the first `top` rows
 * (0: all). */
void print_site_table(const tm_alloc_t **v, size_t n, size_t top, unsigned depth)
{
    tm_site_t *s;
    size_t ns;
    char b[2][32];
    if (tm_sites(v, n, depth, &s, &ns) < 0)
        return;
    printf("  %8s  %10s  %10s  %s\n", "allocs", "bytes", "live", "call site");
    for (size_t i = 0; i < ns && (!top || i < top); i++)
        printf("  %8" PRIu64 "  %10s  %10s  %s\n", s[i].allocs, text_bytes(s[i].bytes, b[0]),
               text_bytes(s[i].live_bytes, b[1]), s[i].text);
    tm_sites_free(s, ns);
}

/* The Python frames of a stack, all of them, with full file names. */
static void json_pyframes(const trc_stack_t *s)
{
    printf("[");
    for (uint32_t i = 0; s && i < s->pydepth; i++) {
        const trc_pyframe_t *f = &s->pyframes[i];
        printf("%s{\"file\": ", i ? ", " : "");
        text_json(stdout, f->file);
        printf(", \"function\": ");
        text_json(stdout, f->func);
        printf(", \"line\": %" PRIu32 ", \"kind\": \"%s\"}", f->line,
               tm_py_kind_name(tm_py_kind(f->file)));
    }
    printf("]");
}

static void json_stack(const trc_stack_t *s, unsigned depth)
{
    uint32_t n = s ? s->depth : 0;
    if (depth && depth < n)
        n = depth;
    printf("[");
    for (uint32_t i = 0; i < n; i++) {
        const trc_frame_t *f = &s->frames[i];
        char name[1024];
        uint64_t off;
        printf("%s{\"module\": ", i ? ", " : "");
        text_json(stdout, f->module);
        printf(", \"offset\": %" PRIu64, f->offset);
        if (tsym_lookup(f->module, f->offset, name, sizeof(name), &off) == 0) {
            printf(", \"symbol\": ");
            text_json(stdout, name);
            printf(", \"symbol_offset\": %" PRIu64, off);
            char plain[1024];
            const char *d = tsym_demangle(name, plain, sizeof(plain));
            if (d != name) {
                printf(", \"demangled\": ");
                text_json(stdout, d);
            }
        }
        char file[4096];
        uint32_t line;
        if (tsym_line(f->module, f->offset, file, sizeof(file), &line) == 0) {
            printf(", \"file\": ");
            text_json(stdout, file);
            printf(", \"line\": %" PRIu32, line);
        }
        printf("}");
    }
    printf("]");
}

static void json_alloc(const tm_trace_t *t, const tm_alloc_t *a, unsigned depth)
{
    char site[4096];
    printf("{\"id\": %" PRIu64 ", \"device\": %" PRId32 ", \"addr\": %" PRIu64
           ", \"size\": %" PRIu64 ", \"t_alloc\": %" PRIu64 ", \"t_free\": ", a->id, a->device,
           a->addr, a->size, a->t_alloc);
    if (a->t_free == TM_LIVE)
        printf("null");
    else
        printf("%" PRIu64, a->t_free);
    printf(", \"live\": %s, \"lifetime_ns\": %" PRIu64 ", \"call_site\": ",
           a->t_free == TM_LIVE ? "true" : "false", lifetime(a));
    tm_site_text(a->stack, depth, site, sizeof(site));
    text_json(stdout, site);
    printf(", \"stack\": ");
    json_stack(a->stack, depth);
    printf(", \"python\": ");
    json_pyframes(a->stack);
    printf("}");
}

static void json_allocs(const tm_trace_t *t, const char *key, const tm_alloc_t **v, size_t n,
                        size_t shown, unsigned depth)
{
    json_open(t, key, n, "allocations");
    for (size_t i = 0; i < shown; i++) {
        printf("%s\n  ", i ? "," : "");
        json_alloc(t, v[i], depth);
    }
    printf("\n]}\n");
}

static cli_opt_t alloc_opts[] = {
    { "--top", "N", "show the first N rows (default 20; 0: all)", NULL },
    { "--sort", "KEY", "size (largest first, the default), time (oldest first), lifetime "
                       "(longest first; a live one counts to the trace's end), device", NULL },
    { "--device", "N", "only allocations of device N ('host': pinned host memory)", NULL },
    { "--min-size", "SIZE", "only allocations of at least SIZE bytes (K, M, G, T suffixes)",
      NULL },
    { "--live", NULL, "only allocations never freed", NULL },
    { "--stack-depth", "N", "call-site frames to show (default 3; 0: all)", NULL },
    { "--by-site", NULL, "one row per call site: allocations, bytes, bytes never freed "
                         "(largest first)", NULL },
    { "--json", NULL, "print one JSON document instead of a table", NULL },
    CLI_OPT_PARTIAL,
    CLI_OPT_END,
};

static const sort_key_t alloc_keys[] = {
    { "size", tm_alloc_cmp_size }, { "time", by_time }, { "lifetime", by_lifetime },
    { "device", by_device },
};

typedef struct alloc_filter {
    int by_device, live;
    int32_t device;
    uint64_t min_size;
} alloc_filter_t;

static alloc_filter_t alloc_filter(const cli_cmd_t *c)
{
    const char *min = cli_get(c, "--min-size");
    alloc_filter_t f = { .min_size = min ? cli_size(c, "--min-size", min) : 0,
                         .live = cli_get(c, "--live") != NULL };
    f.by_device = device_filter(c, &f.device);
    return f;
}

/* The allocations that pass the filters, in *n; NULL when out of memory. */
static const tm_alloc_t **filter_allocs(const alloc_filter_t *f, const tm_trace_t *t,
                                        size_t *n)
{
    const tm_alloc_t **v = malloc((t->nallocs ? t->nallocs : 1) * sizeof(*v));
    *n = 0;
    for (size_t i = 0; v && i < t->nallocs; i++) {
        const tm_alloc_t *a = &t->allocs[i];
        if ((!f->by_device || a->device == f->device) && a->size >= f->min_size &&
            (!f->live || a->t_free == TM_LIVE))
            v[(*n)++] = a;
    }
    return v;
}

static int run_allocs(const cli_cmd_t *c, char **pos)
{
    const char *key = cli_get_or(c, "--sort", "size");
    size_t top = cli_count_opt(c, "--top", DEFAULT_TOP), n;
    unsigned depth = (unsigned)cli_count_opt(c, "--stack-depth", DEFAULT_DEPTH);
    cmp_fn order = sort_order(c, key, alloc_keys, sizeof(alloc_keys) / sizeof(alloc_keys[0]));
    alloc_filter_t f = alloc_filter(c);
    tm_trace_t t;
    if (cli_get(c, "--by-site") && cli_get(c, "--json"))
        cli_usage(c, "--by-site has no JSON form: use --json alone (each allocation with its "
                     "call site and Python frames) or --by-site alone");
    cli_load(c, pos[0], &t);
    const tm_alloc_t **v = filter_allocs(&f, &t, &n);
    if (!v) {
        tm_free(&t);
        return cli_fail(c, "out of memory");
    }
    trace_end = t.t_last;
    qsort(v, n, sizeof(*v), order);
    size_t shown = top && top < n ? top : n;
    if (cli_get(c, "--by-site")) {
        printf("%zu of %zu allocations match, by call site\n", n, t.nallocs);
        print_site_table(v, n, top, depth);
    } else if (cli_get(c, "--json")) {
        json_allocs(&t, key, v, n, shown, depth);
    } else {
        printf("%zu of %zu allocations match; %zu shown, by %s\n", n, t.nallocs, shown, key);
        print_alloc_table(&t, v, n, top, depth);
    }
    free(v);
    tm_free(&t);
    return 0;
}

const cli_cmd_t cmd_allocs = {
    .name = "allocs",
    .args = "FILE",
    .npos = 1,
    .summary = "allocations: size, device, lifetime, call site (sortable, filterable)",
    .details = "Lists the allocations of the trace with their size, device, time of\n"
               "allocation (from the trace's first event), lifetime and call site.\n"
               "Call sites are symbolised from the modules' ELF symbol tables when the\n"
               "files are readable on this machine, else shown as module+0xoffset.\n"
               "In a Python program the call site is the Python one instead, as\n"
               "file:line function frames, innermost first: those in the program's own\n"
               "files, else in installed packages (site-packages), else in the standard\n"
               "library (--json lists every Python frame with its kind, and the native\n"
               "frames in \"stack\").\n"
               "--by-site groups the allocations by call site (at --stack-depth frames).\n"
               "In JSON, device -1 is pinned host memory and times are in ns.",
    .opts = alloc_opts,
    .run = run_allocs,
};

/* ------------------------------------------------------------------ kernels */

static int k_cmp_name(const void *a, const void *b)
{
    const tm_kernel_stat_t *x = a, *y = b;
    return strcmp(x->name, y->name);
}

static uint64_t mean_ns(const tm_kernel_stat_t *k)
{
    return k->timed ? k->total_ns / k->timed : 0;
}

#define KERNEL_ORDER(fname, expr)                                                             \
    static int fname(const void *a, const void *b)                                            \
    {                                                                                         \
        const tm_kernel_stat_t *x = a, *y = b;                                                \
        uint64_t vx = expr(x), vy = expr(y);                                                  \
        return vx != vy ? (vx > vy ? -1 : 1) : k_cmp_name(a, b);                              \
    }
#define K_TOTAL(k) ((k)->total_ns)
#define K_COUNT(k) ((k)->launches)
#define K_MAX(k)   ((k)->max_ns)
KERNEL_ORDER(k_by_total, K_TOTAL)
KERNEL_ORDER(k_by_count, K_COUNT)
KERNEL_ORDER(k_by_mean, mean_ns)
KERNEL_ORDER(k_by_max, K_MAX)

void print_kernel_table(const tm_kernel_stat_t *k, size_t n, size_t top)
{
    char b[4][32];
    printf("  %10s  %8s  %8s  %10s  %10s  %10s  %s\n", "total", "launches", "timed", "mean",
           "min", "max", "name");
    for (size_t i = 0; i < n && (!top || i < top); i++) {
        /* "timed" says how many launches the times are over: only the profiled iterations
         * get device times, so it is often far below "launches". */
        if (!k[i].timed)
            printf("  %10s  %8" PRIu64 "  %8d  %10s  %10s  %10s  %s\n", "-", k[i].launches, 0,
                   "-", "-", "-", k[i].name);
        else
            printf("  %10s  %8" PRIu64 "  %8" PRIu64 "  %10s  %10s  %10s  %s\n",
                   text_ns(k[i].total_ns, b[0]), k[i].launches, k[i].timed,
                   text_ns(mean_ns(&k[i]), b[1]), text_ns(k[i].min_ns, b[2]),
                   text_ns(k[i].max_ns, b[3]), k[i].name);
    }
}

static cli_opt_t kernel_opts[] = {
    { "--top", "N", "show the first N rows (default 20; 0: all)", NULL },
    { "--sort", "KEY", "total (device time, the default), count, mean, max (largest first), "
                       "name (alphabetical)", NULL },
    { "--device", "N", "only launches on device N", NULL },
    { "--name", "SUBSTR", "only kernels whose name contains SUBSTR", NULL },
    { "--json", NULL, "print one JSON document instead of a table", NULL },
    CLI_OPT_PARTIAL,
    CLI_OPT_END,
};

static const sort_key_t kernel_keys[] = {
    { "total", k_by_total }, { "count", k_by_count }, { "mean", k_by_mean },
    { "max", k_by_max }, { "name", k_cmp_name },
};

/* Kernel statistics over the launches that pass the filters (a view of the trace whose
 * operations are those launches): launches on `device` when by_device, whose name holds
 * `name` when not NULL. */
static int filtered_stats(const tm_trace_t *t, int by_device, int32_t device, const char *name,
                          tm_kernel_stat_t **k, size_t *n)
{
    tm_trace_t view = *t;
    tm_op_t *ops = malloc((t->nops ? t->nops : 1) * sizeof(*ops));
    if (!ops)
        return -1;
    view.ops = ops;
    view.nops = 0;
    for (size_t i = 0; i < t->nops; i++) {
        const tm_op_t *o = &t->ops[i];
        if (o->type == TRC_EV_LAUNCH && (!by_device || o->device == device) &&
            (!name || strstr(o->name, name)))
            ops[view.nops++] = *o;
    }
    int rc = tm_kernel_stats(&view, k, n);
    free(ops);
    return rc;
}

static void json_kernels(const tm_trace_t *t, const char *key, const tm_kernel_stat_t *k,
                         size_t n, size_t shown)
{
    json_open(t, key, n, "kernels");
    for (size_t i = 0; i < shown; i++) {
        printf("%s\n  {\"name\": ", i ? "," : "");
        text_json(stdout, k[i].name);
        printf(", \"launches\": %" PRIu64 ", \"timed\": %" PRIu64 ", \"total_ns\": %" PRIu64,
               k[i].launches, k[i].timed, k[i].total_ns);
        if (k[i].timed)
            printf(", \"mean_ns\": %" PRIu64 ", \"min_ns\": %" PRIu64 ", \"max_ns\": %" PRIu64
                   "}", mean_ns(&k[i]), k[i].min_ns, k[i].max_ns);
        else
            printf(", \"mean_ns\": null, \"min_ns\": null, \"max_ns\": null}");
    }
    printf("\n], \"dropped_records\": %" PRIu64 "}\n", t->dropped_cupti + t->dropped_other);
}

static int run_kernels(const cli_cmd_t *c, char **pos)
{
    const char *key = cli_get_or(c, "--sort", "total");
    size_t top = cli_count_opt(c, "--top", DEFAULT_TOP), n;
    cmp_fn order = sort_order(c, key, kernel_keys, sizeof(kernel_keys) / sizeof(kernel_keys[0]));
    int32_t device;
    int by_device = device_filter(c, &device);
    if (by_device && device == TRC_DEVICE_HOST)
        cli_usage(c, "--device: kernels run on GPUs, not on 'host' (accepted: a device number "
                  "0, 1, ...)");
    tm_kernel_stat_t *k;
    tm_trace_t t;
    cli_load(c, pos[0], &t);
    if (filtered_stats(&t, by_device, device, cli_get(c, "--name"), &k, &n) < 0) {
        tm_free(&t);
        return cli_fail(c, "out of memory");
    }
    qsort(k, n, sizeof(*k), order);
    size_t shown = top && top < n ? top : n;
    if (cli_get(c, "--json")) {
        json_kernels(&t, key, k, n, shown);
    } else {
        printf("%zu kernels match; %zu shown, by %s\n", n, shown, key);
        print_dropped(&t);
        print_kernel_table(k, n, top);
    }
    free(k);
    tm_free(&t);
    return 0;
}

const cli_cmd_t cmd_kernels = {
    .name = "kernels",
    .args = "FILE",
    .npos = 1,
    .summary = "kernels: launches and device time per kernel (sortable, filterable)",
    .details = "Lists the kernels of the trace, one row per name: launches, how many of\n"
               "them have known device times (timed, from CUPTI or CUDA events: only the\n"
               "profiled iterations do), and over those the total, mean, min and max\n"
               "time.  Kernels without any timed launch show '-' and\n"
               "sort as 0.  When the trace says that device-time records were dropped\n"
               "(CUPTI's buffers full), a line says how many before the table, and JSON\n"
               "gives their count as dropped_records.  In JSON, times are in ns.",
    .opts = kernel_opts,
    .run = run_kernels,
};
