/* SPDX-License-Identifier: MIT */
/*
 * log.c - the simulator's log: one line per message on stderr, prefixed "elixir-sim".
 * Levels are checked by the callers' macros before any formatting happens.
 */
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "sim.h"

static const char *const level_names[] = { "error", "warn", "info", "trace" };

void sim_log(int level, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    int n;

    if (level > sim_cfg.log_level)
        return;
    n = snprintf(line, sizeof(line), "elixir-sim[%d] %s: ", (int)getpid(),
                 level_names[level < 0 ? 0 : level > 3 ? 3 : level]);
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n", line);
}
