/* SPDX-License-Identifier: MIT */
/*
 * options.c - the ELIXIR_* options of libelixir.so.
 *
 * One table (SHIM_OPTIONS in shim.h) gives every option its name, type, default and
 * description; the environment variable is "ELIXIR_" + name.  Values are read from
 * `environ` directly (no getenv, no allocation), once per process, when the shim starts
 * (the first CUDA call, never at load time: a preloaded program that does not use CUDA is
 * never stopped).  Bad configuration stops the program there: a value that does not parse,
 * or an ELIXIR_* name within two edits of an option's (ELIXIR_GPU_MEMROY), is reported on
 * stderr, one line each naming the variable, the value and the accepted forms, and
 * shim_options_report's caller exits with SHIM_EXIT_CONFIG.  With ELIXIR_DISABLE=1 (pass-
 * through) they are warnings and the program runs.  ELIXIR_VERBOSE=1 prints the version and
 * every option with its value and where it came from.
 * Each type has one parser and one sentence saying what it accepts; defaults are written as
 * text in the table and parsed by the same parser.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "shim.h"

extern char **environ;

typedef enum opt_type {
    OPT_TYPE_BOOL,
    OPT_TYPE_LEVEL,
    OPT_TYPE_SUBSYS,
    OPT_TYPE_PATH,
    OPT_TYPE_MEMORY,
    OPT_TYPE_MEMINFO,
    OPT_TYPE_POLICY,
    OPT_TYPE_TRACE_LEVEL,
    OPT_TYPE_DEPTH,
    OPT_TYPE_COUNT,
    OPT_TYPE_CUPTI,
    OPT_TYPE_SIZE,
    OPT_TYPE_NVME_DEPTH,
    OPT_TYPE_NVME_BLOCK,
    OPT_TYPE_NVME_ENGINE,
    OPT_TYPE_NVME_SHARE,
    OPT_TYPE_AUTO_BOOL,
    OPT_TYPE_PLAN_SLACK,
    OPT_TYPE_RATIO,
    OPT_TYPE_REACH,
} opt_type_t;

typedef struct opt_desc {
    const char *name;           /* after "ELIXIR_" */
    opt_type_t type;
    const char *def;            /* the default, as text */
    const char *desc;
} opt_desc_t;

typedef struct opt_value {
    long num;                   /* BOOL, LEVEL, SUBSYS, MEMINFO, TRACE_LEVEL, DEPTH, COUNT,
                                 * CUPTI, SIZE, NVME_BLOCK */
    shim_mem_t mem;             /* MEMORY */
    char text[PATH_MAX];        /* the value as given (PATH: the value itself) */
    int from_env;               /* set by the environment (else the default) */
    int bad;                    /* the environment held a value that did not parse */
} opt_value_t;

typedef int (*opt_parse_t)(const char *s, opt_value_t *v);

static const opt_desc_t options[SHIM_NOPTS] = {
#define X(name, type, def, desc) [SHIM_OPT_##name] = { #name, OPT_TYPE_##type, def, desc },
    SHIM_OPTIONS(X)
#undef X
};

static opt_value_t values[SHIM_NOPTS];
static char bad_text[SHIM_NOPTS][64];   /* what a bad value was, for the report */

static const char *const level_names[] = { "error", "warn", "info", "trace" };
static const char *const meminfo_names[] = { "virtual", "physical" };
static const char *const policy_names[] = { "reactive", "plan" };
static const char *const reach_names[] = { "allocation", "forward" };
static const char *const trace_level_names[] = { "summary", "allocs", "all" };

/* Index of s in names (case-insensitive), or -EINVAL. */
static int parse_name(const char *s, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcasecmp(s, names[i]) == 0)
            return i;
    return -EINVAL;
}

/* 1, 0, or -EINVAL. */
static int bool_value(const char *s)
{
    static const char *const yes[] = { "1", "yes", "true", "on" };
    static const char *const no[] = { "0", "no", "false", "off" };

    if (parse_name(s, yes, 4) >= 0)
        return 1;
    return parse_name(s, no, 4) >= 0 ? 0 : -EINVAL;
}

static int parse_bool(const char *s, opt_value_t *v)
{
    int b = bool_value(s);

    if (b < 0)
        return b;
    v->num = b;
    return 0;
}

/* auto (SHIM_AUTO), or a boolean. */
static int parse_auto_bool(const char *s, opt_value_t *v)
{
    static const char *const autos[] = { "auto" };
    int b = parse_name(s, autos, 1) >= 0 ? SHIM_AUTO : bool_value(s);

    if (b < 0)
        return b;
    v->num = b;
    return 0;
}

/* An option whose value is one of `names` (any case): its index. */
static int parse_named(const char *s, opt_value_t *v, const char *const *names, int n)
{
    int i = parse_name(s, names, n);

    if (i < 0)
        return i;
    v->num = i;
    return 0;
}

#define NAMED_PARSER(fn, names)                                                                \
    static int fn(const char *s, opt_value_t *v)                                               \
    {                                                                                          \
        return parse_named(s, v, names, (int)SHIM_ARRAY_LEN(names));                          \
    }

NAMED_PARSER(parse_level, level_names)
NAMED_PARSER(parse_meminfo, meminfo_names)
NAMED_PARSER(parse_policy, policy_names)
NAMED_PARSER(parse_reach, reach_names)
NAMED_PARSER(parse_trace_level, trace_level_names)

/* A decimal integer from 0 to max, digits only; 0 or -EINVAL. */
static int parse_bounded(const char *s, long max, opt_value_t *v)
{
    long n = 0;
    const char *p = s;

    for (; *p >= '0' && *p <= '9'; p++)
        if ((n = n * 10 + (*p - '0')) > max)
            return -EINVAL;
    if (p == s || *p)
        return -EINVAL;
    v->num = n;
    return 0;
}

#define DEPTH_MAX 256           /* TRC_MAX_DEPTH */
#define COUNT_MAX 1000000000L

static int parse_depth(const char *s, opt_value_t *v)
{
    return parse_bounded(s, DEPTH_MAX, v);
}

static int parse_count(const char *s, opt_value_t *v)
{
    return parse_bounded(s, COUNT_MAX, v);
}

/* "auto", "off", or the path of a library (anything else that is not empty). */
static int parse_cupti(const char *s, opt_value_t *v)
{
    if (strcasecmp(s, "auto") == 0)
        v->num = SHIM_CUPTI_AUTO;
    else if (strcasecmp(s, "off") == 0)
        v->num = SHIM_CUPTI_OFF;
    else if (*s && strlen(s) < sizeof(v->text))
        v->num = SHIM_CUPTI_PATH;
    else
        return -EINVAL;
    return 0;
}

/* The subsystem bit of the `len` characters at s ("ALL" is every bit), or 0. */
static unsigned subsys_bit(const char *s, size_t len)
{
    if (len == 3 && strncasecmp(s, "ALL", 3) == 0)
        return SHIM_SUB_ALL;
    for (int i = 0; i < SHIM_NSUBSYS; i++)
        if (strlen(shim_subsys_names[i]) == len && strncasecmp(s, shim_subsys_names[i], len) == 0)
            return 1u << i;
    return 0;
}

/* "INIT,ALLOC" selects those subsystems; "^INIT" selects all but those. */
static int parse_subsys(const char *s, opt_value_t *v)
{
    int invert = *s == '^';
    unsigned mask = 0;

    s += invert;
    while (*s) {
        size_t len = strcspn(s, ",");
        unsigned bit = subsys_bit(s, len);

        if (!bit || (s[len] == ',' && !s[len + 1]))     /* (nor a trailing comma) */
            return -EINVAL;
        mask |= bit;
        s += len + (s[len] == ',');
    }
    if (!mask || (invert && mask == SHIM_SUB_ALL))      /* ("^ALL" would select none) */
        return -EINVAL;
    v->num = invert ? (long)(SHIM_SUB_ALL & ~mask) : (long)mask;
    return 0;
}

static const char *const nvme_engine_names[] = { "auto", "io_uring", "psync" };

/* 0: auto, 1: io_uring, 2: psync (res_nvme.c maps them onto the module's kinds). */
static int parse_nvme_engine(const char *s, opt_value_t *v)
{
    int i = parse_name(s, nvme_engine_names, 3);
    if (i < 0)
        return -EINVAL;
    v->num = i;
    return 0;
}

static int parse_nvme_depth(const char *s, opt_value_t *v)
{
    return parse_bounded(s, 4096, v) < 0 || v->num < 1 ? -EINVAL : 0;
}

/* 0: auto (res_nvme.c asks the launcher), else 1 to 4096 processes. */
static int parse_nvme_share(const char *s, opt_value_t *v)
{
    if (strcasecmp(s, "auto") == 0) {
        v->num = 0;
        return 0;
    }
    return parse_bounded(s, 4096, v) < 0 || v->num < 1 ? -EINVAL : 0;
}

/* SHIM_SLACK_AUTO, else 0 to 4096 chunks. */
static int parse_plan_slack(const char *s, opt_value_t *v)
{
    if (strcasecmp(s, "auto") == 0) {
        v->num = SHIM_SLACK_AUTO;
        return 0;
    }
    return parse_bounded(s, 4096, v);
}

static const char *parse_decimal(const char *s, double *out);

/* In thousandths: 0 (never), else a ratio from 0.01 to 100. */
static int parse_ratio(const char *s, opt_value_t *v)
{
    double r;
    const char *e = parse_decimal(s, &r);
    if (!e || *e || (r != 0 && (r < 0.01 || r > 100)))
        return -EINVAL;
    v->num = (long)(r * 1000 + 0.5);
    return 0;
}

static int parse_path(const char *s, opt_value_t *v)
{
    return strlen(s) < sizeof(v->text) ? 0 : -EINVAL;
}

static int parse_memory(const char *s, opt_value_t *v)
{
    return shim_parse_mem(s, &v->mem);
}

#define SIZE_MAX_OPT (1L << 30)

static int parse_size(const char *s, uint64_t *out);

/* A size in bytes (K/M/G suffixes) from 1 to SIZE_MAX_OPT. */
static int parse_size_opt(const char *s, opt_value_t *v)
{
    uint64_t n;
    if (parse_size(s, &n) < 0 || n > (uint64_t)SIZE_MAX_OPT)
        return -EINVAL;
    v->num = (long)n;
    return 0;
}

/* A size that is a power of two from 4 KiB (O_DIRECT's alignment) to SIZE_MAX_OPT: so it
 * divides every chunk it does not exceed (the tier caps it at the chunk). */
static int parse_nvme_block(const char *s, opt_value_t *v)
{
    if (parse_size_opt(s, v) < 0 || v->num < 4096 || (v->num & (v->num - 1)))
        return -EINVAL;
    return 0;
}

static const struct {
    opt_parse_t parse;
    const char *accepted;
} types[] = {
    [OPT_TYPE_BOOL] = { parse_bool, "1 or 0 (yes/no, true/false and on/off also work)" },
    [OPT_TYPE_LEVEL] = { parse_level, "error, warn, info or trace" },
    [OPT_TYPE_SUBSYS] = { parse_subsys, "a comma-separated list of INIT, ALLOC, LAUNCH, COPY, "
                                        "RES and ALL, with a leading ^ to exclude them" },
    [OPT_TYPE_PATH] = { parse_path, "a file name shorter than PATH_MAX" },
    [OPT_TYPE_MEMORY] = { parse_memory, "auto, a size in bytes with an optional K, M, G or T "
                                        "suffix (24G), or a percentage above 0 and at most "
                                        "100 (80%)" },
    [OPT_TYPE_MEMINFO] = { parse_meminfo, "virtual or physical" },
    [OPT_TYPE_POLICY] = { parse_policy, "reactive or plan" },
    [OPT_TYPE_TRACE_LEVEL] = { parse_trace_level, "summary, allocs or all" },
    [OPT_TYPE_DEPTH] = { parse_depth, "a whole number from 0 to 256" },
    [OPT_TYPE_COUNT] = { parse_count, "a whole number from 0 to 1000000000" },
    [OPT_TYPE_CUPTI] = { parse_cupti, "auto, off, or the path of a libcupti shared library" },
    [OPT_TYPE_SIZE] = { parse_size_opt, "a size in bytes with an optional K, M or G suffix, "
                                        "from 1 to 1G" },
    [OPT_TYPE_NVME_DEPTH] = { parse_nvme_depth, "a whole number from 1 to 4096" },
    [OPT_TYPE_NVME_BLOCK] = { parse_nvme_block, "a power of two from 4K to 1G (a size with "
                                                "an optional K, M or G suffix)" },
    [OPT_TYPE_NVME_ENGINE] = { parse_nvme_engine, "auto, io_uring or psync" },
    [OPT_TYPE_NVME_SHARE] = { parse_nvme_share, "auto or a whole number from 1 to 4096" },
    [OPT_TYPE_AUTO_BOOL] = { parse_auto_bool, "auto, 1 or 0 (yes/no, true/false and on/off "
                                              "also work)" },
    [OPT_TYPE_PLAN_SLACK] = { parse_plan_slack, "auto or a whole number from 0 to 4096" },
    [OPT_TYPE_RATIO] = { parse_ratio, "0, or a ratio from 0.01 to 100" },
    [OPT_TYPE_REACH] = { parse_reach, "forward or allocation" },
};

/* Parse decimal digits with an optional fraction ("12", "12.5"); returns the end or NULL. */
static const char *parse_decimal(const char *s, double *out)
{
    double v = 0, scale = 1;
    const char *p = s;

    for (; *p >= '0' && *p <= '9'; p++)
        v = v * 10 + (*p - '0');
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++)
            v += (*p - '0') * (scale /= 10);
    if (p == s || (p == s + 1 && *s == '.'))
        return NULL;
    *out = v;
    return p;
}

/* Bytes of a size with an optional K/M/G/T (+ "B" or "iB") suffix; 0 or -EINVAL. */
static int parse_size(const char *s, uint64_t *out)
{
    static const char suffixes[] = "KMGT";
    uint64_t v = 0;
    unsigned shift = 0;
    const char *p = s, *unit;

    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (UINT64_MAX - 9) / 10)
            return -EINVAL;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (p == s)
        return -EINVAL;
    if (*p && (unit = strchr(suffixes, *p >= 'a' ? *p - 'a' + 'A' : *p)) != NULL) {
        shift = 10 * (unsigned)(unit - suffixes + 1);
        p++;
        if (*p == 'i' && p[1] == 'B')
            p++;
        p += *p == 'B';
    }
    if (*p || v == 0 || v > (UINT64_MAX >> shift))
        return -EINVAL;
    *out = v << shift;
    return 0;
}

int shim_parse_mem(const char *s, shim_mem_t *out)
{
    size_t len = strlen(s);
    double pct;

    if (strcasecmp(s, "auto") == 0) {
        *out = (shim_mem_t){ .kind = SHIM_MEM_AUTO };
        return 0;
    }
    if (len > 1 && s[len - 1] == '%') {
        const char *end = parse_decimal(s, &pct);

        if (!end || end != s + len - 1 || !(pct > 0 && pct <= 100))
            return -EINVAL;
        *out = (shim_mem_t){ .kind = SHIM_MEM_PERCENT, .percent = pct };
        return 0;
    }
    out->kind = SHIM_MEM_BYTES;
    out->percent = 0;
    return parse_size(s, &out->bytes);
}

/* The value of ELIXIR_<name> in the environment, or NULL. */
static const char *env_value(const char *name)
{
    size_t n = strlen(name);

    for (char **e = environ; e && *e; e++)
        if (strncmp(*e, "ELIXIR_", 7) == 0 && strncmp(*e + 7, name, n) == 0 && (*e)[7 + n] == '=')
            return *e + 8 + n;
    return NULL;
}

/* Parse s as option o into v (text included); 0 or -EINVAL. */
static int parse_option(shim_opt_t o, const char *s, opt_value_t *v)
{
    if (strlen(s) >= sizeof(v->text) || types[options[o].type].parse(s, v) < 0)
        return -EINVAL;
    snprintf(v->text, sizeof(v->text), "%s", s);
    return 0;
}

/* ELIXIR_* variables that are not options of libelixir.so: the simulator's, the test
 * runner's and the tools' (prefixes end with '_'). */
static const char *const not_options[] = {
    "SIM_", "TEST_", "DEBUG_DIRS", "PROC_REQUESTS", "TRACE_SEED_DIR", "DWARF_SEED_DIR",
    "FUZZ_SECONDS",
};

#define NAME_MAX_TYPO 48        /* longer names are never taken for typos */
#define MAX_TYPOS 8

static struct {
    char name[NAME_MAX_TYPO + 1];       /* after "ELIXIR_" */
    int option;                         /* the option it is close to */
} typos[MAX_TYPOS];
static int ntypos;

/* Edits (insertions, deletions, substitutions, swaps of neighbours; case ignored) from a to
 * b, both at most NAME_MAX_TYPO long. */
static int edit_distance(const char *a, size_t la, const char *b, size_t lb)
{
    int d[NAME_MAX_TYPO + 1][NAME_MAX_TYPO + 1];

    for (size_t i = 0; i <= la; i++)
        for (size_t j = 0; j <= lb; j++) {
            if (i == 0 || j == 0) {
                d[i][j] = (int)(i + j);
                continue;
            }
            int cost = toupper((unsigned char)a[i - 1]) != toupper((unsigned char)b[j - 1]);
            int best = d[i - 1][j - 1] + cost;
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[la][lb];
}

/* The option that the name (after "ELIXIR_", len bytes) is a typo of, or -1: one that is not
 * an option nor a known other variable, within 2 edits of an option's name (1 for names
 * shorter than 6). */
static int typo_of(const char *name, size_t len)
{
    for (size_t i = 0; i < SHIM_ARRAY_LEN(not_options); i++) {
        size_t n = strlen(not_options[i]);
        if (not_options[i][n - 1] == '_' ? strncmp(name, not_options[i], n) == 0
                                          : n == len && strncmp(name, not_options[i], n) == 0)
            return -1;
    }
    if (len == 0 || len > NAME_MAX_TYPO)
        return -1;
    for (int o = 0; o < SHIM_NOPTS; o++) {
        size_t n = strlen(options[o].name);
        if (n == len && strncmp(name, options[o].name, n) == 0)
            return -1;
    }
    for (int o = 0; o < SHIM_NOPTS; o++) {
        size_t n = strlen(options[o].name);
        if (edit_distance(name, len, options[o].name, n) <= (n < 6 ? 1 : 2))
            return o;
    }
    return -1;
}

/* Note every ELIXIR_* variable of the environment whose name is a typo of an option's. */
static void find_typos(void)
{
    ntypos = 0;
    for (char **e = environ; e && *e && ntypos < MAX_TYPOS; e++) {
        if (strncmp(*e, "ELIXIR_", 7) != 0)
            continue;
        const char *name = *e + 7, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        int o = typo_of(name, len);
        if (o < 0)
            continue;
        snprintf(typos[ntypos].name, sizeof(typos[ntypos].name), "%.*s", (int)len, name);
        typos[ntypos++].option = o;
    }
}

void shim_options_load(void)
{
    for (int o = 0; o < SHIM_NOPTS; o++) {
        const char *env = env_value(options[o].name);
        opt_value_t *v = &values[o];

        *v = (opt_value_t){ 0 };
        parse_option(o, options[o].def, v);     /* a default always parses */
        if (!env)
            continue;
        opt_value_t parsed = *v;
        if (parse_option(o, env, &parsed) == 0) {
            *v = parsed;
            v->from_env = 1;
        } else {
            v->bad = 1;                 /* (a long value is cut, with "...") */
            snprintf(bad_text[o], sizeof(bad_text[o]), "%.*s%s", (int)sizeof(bad_text[o]) - 4,
                     env, strlen(env) < sizeof(bad_text[o]) ? "" : "...");
        }
    }
    find_typos();
}

/* Report one problem: an error that stops the program, or with ELIXIR_DISABLE=1 a warning. */
#define REPORT(disabled, fmt, ...)                                                             \
    do {                                                                                       \
        if (disabled)                                                                          \
            SHIM_WARN(INIT, fmt "; ignored, since ELIXIR_DISABLE=1 passes every call through", \
                      __VA_ARGS__);                                                            \
        else                                                                                   \
            shim_log_fatal(fmt "; the program stops (exit status %d)", __VA_ARGS__,           \
                           SHIM_EXIT_CONFIG);                                                  \
    } while (0)

/* Options valid alone that contradict each other: reported as REPORT does; how many. */
static int conflicts(int disabled)
{
    const opt_value_t *slack = &values[SHIM_OPT_PLAN_SLACK], *unmap = &values[SHIM_OPT_PLAN_UNMAP];
    int nvme = values[SHIM_OPT_NVME_PATH].text[0] != 0;

    if (slack->bad || unmap->bad || slack->num <= 0 ||
        !(unmap->num == 1 || (unmap->num == SHIM_AUTO && nvme)))
        return 0;
    REPORT(disabled, "ELIXIR_PLAN_SLACK=%s leaves GPU room for moves in while evictions' copies "
           "run, but ELIXIR_PLAN_UNMAP=%s%s unmaps evictions, whose room a move in already "
           "takes while the copy runs: expected ELIXIR_PLAN_SLACK=auto or 0, or "
           "ELIXIR_PLAN_UNMAP=0", slack->text, unmap->text,
           unmap->num == SHIM_AUTO ? " (with ELIXIR_NVME_PATH set)" : "");
    return 1;
}

int shim_options_report(void)
{
    int disabled = shim_disabled(), errors = 0;

    for (int o = 0; o < SHIM_NOPTS; o++)
        if (values[o].bad) {
            REPORT(disabled, "ELIXIR_%s=\"%s\" is not valid: expected %s", options[o].name,
                   bad_text[o], types[options[o].type].accepted);
            errors++;
        }
    for (int i = 0; i < ntypos; i++) {
        REPORT(disabled, "ELIXIR_%s is not an option of libelixir.so: did you mean ELIXIR_%s?",
               typos[i].name, options[typos[i].option].name);
        errors++;
    }
    errors += conflicts(disabled);
    if (disabled)
        errors = 0;
    if (errors || !values[SHIM_OPT_VERBOSE].num)
        return errors;
    shim_log_plain("libelixir.so %s, process %d", ELIXIR_VERSION, (int)getpid());
    for (int o = 0; o < SHIM_NOPTS; o++)
        shim_log_plain("option ELIXIR_%s=%s (%s): %s", options[o].name, values[o].text,
                       values[o].from_env ? "set" : "default", options[o].desc);
    return 0;
}

long shim_opt_int(shim_opt_t o)
{
    return values[o].num;
}

const char *shim_opt_str(shim_opt_t o)
{
    return values[o].text;
}

const char *shim_opt_name(shim_opt_t o)
{
    return options[o].name;
}

shim_mem_t shim_opt_mem(shim_opt_t o)
{
    return values[o].mem;
}

int shim_opt_peek_bool(shim_opt_t o)
{
    const char *env = env_value(options[o].name);
    int b = env ? bool_value(env) : -EINVAL;

    return b >= 0 ? b : bool_value(options[o].def) > 0;
}
