/* SPDX-License-Identifier: MIT */
/*
 * unit_trace_tool_help.c - `elixir-trace --help` lists every command; `elixir-trace CMD
 * --help` (or -h, before or after other arguments) prints the command's usage line and
 * every one of its options, exits 0 and writes nothing to stderr.  `elixir-trace --version`
 * prints "elixir-trace VERSION", the project's version (the file VERSION, built in).
 */
#include "unit_trace_tool.h"

typedef struct cmd {
    const char *name, *usage;
    const char *opts[10];
} cmd_t;

static const cmd_t cmds[] = {
    { "summary", "usage: elixir-trace summary FILE", { "--top N", "--stack-depth N",
                                                       "--iterations", "--partial", "--help" } },
    { "allocs", "usage: elixir-trace allocs FILE", { "--top N", "--sort KEY", "--device N",
                                                     "--min-size SIZE", "--live",
                                                     "--stack-depth N", "--json", "--partial",
                                                     "--help" } },
    { "kernels", "usage: elixir-trace kernels FILE", { "--top N", "--sort KEY", "--device N",
                                                       "--name SUBSTR", "--json", "--partial",
                                                       "--help" } },
    { "diff", "usage: elixir-trace diff A B", { "--json", "--partial", "--help" } },
    { "timeline", "usage: elixir-trace timeline FILE --chrome OUT.json",
      { "--chrome OUT.json", "--force", "--partial", "--help" } },
    { "plot", "usage: elixir-trace plot FILE OUT.svg", { "--device N", "--size WxH", "--force",
                                                         "--partial", "--help" } },
    { "report", "usage: elixir-trace report FILE OUT.html", { "--force", "--partial",
                                                              "--help" } },
};
#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static void check_command(const cmd_t *c, tt_result_t *r)
{
    TT_CHECK("exit status", 0, r->status);
    TT_CHECK("stderr bytes", 0, strlen(r->err));
    TT_LINE(r->out, c->usage);
    TT_LINE(r->out, "options:");
    for (int i = 0; c->opts[i]; i++) {
        char line[64];
        snprintf(line, sizeof(line), "  %s ", c->opts[i]);
        TT_LINE(r->out, line);
    }
}

int main(void)
{
    tt_init();
    tt_result_t r = tt_run("--help", NULL);
    TT_CHECK("--help exit status", 0, r.status);
    TT_LINE(r.out, "usage: elixir-trace COMMAND");
    for (size_t i = 0; i < NCMDS; i++) {
        char line[32];
        snprintf(line, sizeof(line), "  %s ", cmds[i].name);
        TT_LINE(r.out, line);
    }
    TT_LINE(r.out, "Exit status");
    tt_free(&r);
    r = tt_run("--version", NULL);
    TT_CHECK("--version exit status", 0, r.status);
    if (strcmp(r.out, "elixir-trace " ELIXIR_VERSION "\n") != 0 || r.err[0])
        TT_FAIL("--version printed \"%s\" (stderr \"%s\"), expected \"elixir-trace %s\"", r.out,
                r.err, ELIXIR_VERSION);
    tt_free(&r);
    for (size_t i = 0; i < NCMDS; i++) {
        r = tt_run(cmds[i].name, "--help", NULL);
        check_command(&cmds[i], &r);
        tt_free(&r);
        r = tt_run(cmds[i].name, "some.trace", "-h", NULL);
        check_command(&cmds[i], &r);
        tt_free(&r);
    }
    return tt_done();
}
