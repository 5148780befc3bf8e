/* SPDX-License-Identifier: MIT */
/*
 * options.c - the simulator's configuration, read from the ELIXIR_SIM_* variables.
 *
 * The models, the options and their parsers are simconfig.c's (shared with elixir-sim); here
 * they are read from the environment once, at cuInit.  A bad value is reported, naming the
 * variable and the accepted form, and stops the program with exit status 2 once every value
 * was judged, as elixir-sim refuses it before the program starts: a run on another machine
 * than the one asked for would give figures of that one.  ELIXIR_SIM_VERBOSE=1 prints every
 * option.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

sim_config_t sim_cfg;

/* Read every option from the environment (called once, from cuInit). */
void sim_config_load(void)
{
    char name[64];
    int n = sim_option_count(), bad = 0;

    sim_config_defaults(&sim_cfg);
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "ELIXIR_SIM_%s", sim_option_name(i));
        const char *v = getenv(name);
        if (v && sim_option_apply(&sim_cfg, i, v) < 0) {
            SIM_ERR("%s=\"%s\" is not valid (accepted: %s); the program stops (exit status "
                    "2)", name, v, sim_option_form(i));
            bad = 1;
        }
    }
    if (bad)
        exit(2);
    const char *v = getenv("ELIXIR_SIM_VERBOSE");
    if (!v || strcmp(v, "1") != 0)
        return;
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "ELIXIR_SIM_%s", sim_option_name(i));
        const char *e = getenv(name);
        fprintf(stderr, "elixir-sim: %-28s %-10s %s\n", name, e ? e : "(default)",
                sim_option_desc(i));
    }
}
