/* SPDX-License-Identifier: MIT */
/*
 * main.c - elixir-trace: reads the traces libelixir.so writes and answers questions about
 * them.
 *
 *   elixir-trace COMMAND [ARGS] [OPTIONS]      (elixir-trace --help lists the commands)
 *
 * This file holds the command table, the option parser shared by every command (options may
 * come before, between or after the positional arguments, as `--name value` or
 * `--name=value`; `--` ends them), the help texts built from the option tables, and the
 * trace loading every command does the same way.  The commands live in cmd_*.c.
 */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define PROG "elixir-trace"

static const cli_cmd_t *const commands[] = {
    &cmd_summary, &cmd_allocs, &cmd_kernels, &cmd_diff, &cmd_timeline, &cmd_plot, &cmd_report,
    &cmd_plan,
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

/* ------------------------------------------------------------------ help */

static void usage_line(FILE *f, const cli_cmd_t *c)
{
    fprintf(f, "usage: " PROG " %s %s [OPTIONS]\n", c->name, c->args);
}

/* One option's help: its name in a column, the text wrapped at 80 columns beside it. */
static void option_help(const char *lhs, const char *text)
{
    const int indent = 21, width = 80 - indent;
    printf("  %-18s ", lhs);
    while (strlen(text) > (size_t)width) {
        int cut = width;
        while (cut > 0 && text[cut] != ' ')
            cut--;
        if (cut == 0)
            break;
        printf("%.*s\n%*s", cut, text, indent, "");
        text += cut + 1;
    }
    printf("%s\n", text);
}

static void command_help(const cli_cmd_t *c)
{
    usage_line(stdout, c);
    printf("\n%s\n\noptions:\n", c->details);
    for (const cli_opt_t *o = c->opts; o->name; o++) {
        char lhs[64];
        snprintf(lhs, sizeof(lhs), "%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        option_help(lhs, o->help);
    }
    option_help("--help", "print this help");
}

static void main_help(FILE *f)
{
    fprintf(f, "usage: " PROG " COMMAND [ARGS] [OPTIONS]\n\n"
               "Reads a trace file written by libelixir.so (ELIXIR_TRACE=path).\n\ncommands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-9s %s\n", commands[i]->name, commands[i]->summary);
    fprintf(f, "\n'" PROG " COMMAND --help' describes a command and its options;\n"
               "'" PROG " --version' prints the version.\n"
               "Exit status: 0 success, 1 the output could not be written, 2 a usage error\n"
               "or a trace that cannot be read.\n");
}

/* ------------------------------------------------------------------ errors */

/* "elixir-trace CMD: <message>" on a line of stderr. */
static void message(const cli_cmd_t *c, const char *fmt, va_list ap)
{
    fprintf(stderr, PROG " %s: ", c->name);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
}

void cli_usage(const cli_cmd_t *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    message(c, fmt, ap);
    va_end(ap);
    usage_line(stderr, c);
    fprintf(stderr, "Try '" PROG " %s --help' for more.\n", c->name);
    exit(CLI_EXIT_USAGE);
}

int cli_fail(const cli_cmd_t *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    message(c, fmt, ap);
    va_end(ap);
    return CLI_EXIT_FAIL;
}

/* "--a, --b, ..." of c's options, for error messages. */
static const char *option_names(const cli_cmd_t *c)
{
    static char buf[512];
    size_t at = 0;
    buf[0] = 0;
    for (const cli_opt_t *o = c->opts; o->name && at < sizeof(buf); o++) {
        int k = snprintf(buf + at, sizeof(buf) - at, "%s, ", o->name);
        at += k > 0 ? (size_t)k : 0;
    }
    snprintf(buf + (at < sizeof(buf) ? at : sizeof(buf) - 1),
             sizeof(buf) - (at < sizeof(buf) ? at : sizeof(buf) - 1), "--help");
    return buf;
}

/* ------------------------------------------------------------------ options */

static cli_opt_t *find_opt(const cli_cmd_t *c, const char *name, size_t len)
{
    for (cli_opt_t *o = c->opts; o->name; o++)
        if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
            return o;
    return NULL;
}

const char *cli_get(const cli_cmd_t *c, const char *name)
{
    cli_opt_t *o = find_opt(c, name, strlen(name));
    return o ? o->value : NULL;
}

const char *cli_get_or(const cli_cmd_t *c, const char *name, const char *dflt)
{
    const char *v = cli_get(c, name);
    return v ? v : dflt;
}

/* One option at argv[*i] (which starts with '-'); advances *i past its value. */
static void parse_opt(const cli_cmd_t *c, int argc, char **argv, int *i)
{
    const char *a = argv[*i], *eq = strchr(a, '=');
    size_t len = eq ? (size_t)(eq - a) : strlen(a);
    if ((len == 6 && strncmp(a, "--help", 6) == 0) || strcmp(a, "-h") == 0) {
        command_help(c);
        exit(0);
    }
    cli_opt_t *o = find_opt(c, a, len);
    if (!o)
        cli_usage(c, "unknown option '%.*s' (options: %s)", (int)len, a, option_names(c));
    if (!o->arg && eq)
        cli_usage(c, "%s takes no value (got '%s')", o->name, eq + 1);
    if (!o->arg) {
        o->value = "";
        return;
    }
    if (!eq && *i + 1 >= argc)
        cli_usage(c, "%s needs a value (%s)", o->name, o->arg);
    o->value = eq ? eq + 1 : argv[++*i];
}

/* Fills c's option values and pos[] with exactly c->npos positional arguments. */
static void parse(const cli_cmd_t *c, int argc, char **argv, char **pos)
{
    int n = 0, dashdash = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!dashdash && strcmp(a, "--") == 0) {
            dashdash = 1;
        } else if (!dashdash && a[0] == '-' && a[1]) {
            parse_opt(c, argc, argv, &i);
        } else {
            if (n == c->npos)
                cli_usage(c, "unexpected argument '%s' (takes %s)", a, c->args);
            pos[n++] = argv[i];
        }
    }
    if (n < c->npos)
        cli_usage(c, "missing argument%s (takes %s)", c->npos - n > 1 ? "s" : "", c->args);
}

/* ------------------------------------------------------------------ loading */

void cli_load(const cli_cmd_t *c, const char *path, tm_trace_t *t)
{
    char err[1024];
    int partial = cli_get(c, "--partial") != NULL;
    if (tm_load(path, partial, t, err, sizeof(err)) < 0) {
        fprintf(stderr, PROG ": %s\n", err);
        exit(CLI_EXIT_USAGE);
    }
    if (t->warning[0])
        fprintf(stderr, PROG ": warning: %s\n", t->warning);
}

/* ------------------------------------------------------------------ main */

/*
 * Standard output and error pass through a filter that shows every control character as '?',
 * newline and tab aside: names in a trace are whatever bytes it holds, and one crafted to
 * carry terminal escape sequences must not drive the terminal a table is printed on.  C0
 * controls, DEL and the C1 controls of UTF-8 (U+0080 to U+009F, 0xC2 then 0x80 to 0x9F, even
 * split across two writes) are replaced; JSON, SVG and HTML escape them already.
 */
typedef struct shown {
    FILE *to;
    int pending_c2;                 /* the last byte written was 0xC2, not yet passed on */
} shown_t;

static ssize_t shown_write(void *cookie, const char *buf, size_t n)
{
    shown_t *s = cookie;
    char out[4096 + 1];
    size_t done = 0;
    while (done < n) {
        size_t k = 0;
        if (s->pending_c2) {            /* decided by the byte after it */
            unsigned char c = (unsigned char)buf[done];
            s->pending_c2 = 0;
            if (c >= 0x80 && c <= 0x9f) {
                out[k++] = '?';
                out[k++] = '?';
                done++;
            } else {
                out[k++] = (char)0xc2;
            }
        }
        for (; done < n && k < sizeof(out) - 1; done++) {
            unsigned char c = (unsigned char)buf[done];
            if (c == 0xc2 && done + 1 == n) {
                s->pending_c2 = 1;
            } else if (c == 0xc2 && (unsigned char)buf[done + 1] >= 0x80 &&
                       (unsigned char)buf[done + 1] <= 0x9f) {
                out[k++] = '?';
                out[k++] = '?';
                done++;
            } else {
                out[k++] = (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f ? '?' : (char)c;
            }
        }
        if (fwrite(out, 1, k, s->to) != k)
            return -1;
    }
    return (ssize_t)n;
}

static int shown_close(void *cookie)
{
    shown_t *s = cookie;
    if (s->pending_c2 && fputc(0xc2, s->to) == EOF)
        return -1;
    return fflush(s->to);
}

/* *stream replaced with a filtered one writing to it (left as it is when that fails). */
static void show_safely(FILE **stream, shown_t *s)
{
    cookie_io_functions_t io = { .write = shown_write, .close = shown_close };
    *s = (shown_t){ .to = *stream };
    setvbuf(*stream, NULL, _IONBF, 0);  /* its write errors reach shown_write at once */
    FILE *f = fopencookie(s, "w", io);
    if (f)
        *stream = f;
}

int main(int argc, char **argv)
{
    static shown_t out, err;
    show_safely(&stdout, &out);
    show_safely(&stderr, &err);
    setvbuf(stderr, NULL, _IONBF, 0);
    if (argc < 2) {
        main_help(stderr);
        return CLI_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        main_help(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf(PROG " %s\n", ELIXIR_VERSION);
        return 0;
    }
    for (size_t i = 0; i < NCOMMANDS; i++) {
        const cli_cmd_t *c = commands[i];
        char *pos[4] = { 0 };
        if (strcmp(argv[1], c->name) != 0)
            continue;
        parse(c, argc - 2, argv + 2, pos);
        int rc = c->run(c, pos);
        if (fflush(stdout) != 0 || ferror(stdout)) {
            fprintf(stderr, PROG " %s: standard output: %s\n", c->name, strerror(errno));
            return rc ? rc : CLI_EXIT_FAIL;
        }
        return rc;
    }
    fprintf(stderr, PROG ": unknown command '%s' (commands:", argv[1]);
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(stderr, "%s %s", i ? "," : "", commands[i]->name);
    fprintf(stderr, ")\nTry '" PROG " --help' for more.\n");
    return CLI_EXIT_USAGE;
}
