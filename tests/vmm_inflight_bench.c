/* SPDX-License-Identifier: MIT */
/*
 * vmm_inflight_bench.c - bench/vmm_inflight runs on the simulator, its table is well formed
 * and its mapping rows are the model's charges.
 *
 * On the simulator the bench reads the virtual host clock, to which each VMM call charges what
 * SIM_COST_* in simcuda.h says, so map + set access and unmap of a 2 MiB handle, device- and
 * host-located, must show exactly that, idle and behind the long copy alike (a VMM call does not
 * wait for the device, as the H200 showed; the "copied" rows, whose long copy reads the memory they
 * map and unmap, are not compared with the model: they span 128 granules).  With the executor
 * running work as it comes (ELIXIR_SIM_EXEC=async), the long copy must still be running when each
 * call returns; under ELIXIR_SIM_EXEC=lazy the bench's poll runs it, so that column is not checked.
 * Also: the queue line is printed, and a bad run count is refused naming the accepted values.
 * Against a real driver (`make gpu-check`, check sim) it skips: the figures are a GPU's.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "simtest.h"

#define RUNS 3
#define NROWS 12
/* Printed to 0.1 us from whole nanoseconds at both ends: at most 0.05 us + 2 ns off. */
#define TOL_US 0.052

static const char *const rows[NROWS] = {
    "device map+access", "device unmap", "host map+access", "host unmap",
    "copy DtoH 2 MiB", "copy HtoD 2 MiB", "cuEventRecord", "cuStreamWaitEvent",
    "copied map+access", "copied unmap", "copy to host VMM", "copy from host VMM",
};

/* The model's charge for the mapping rows (0 to 3); -1 for the others. */
static double model(int row)
{
    const double map = SIM_COST_MAP_CALL_US + SIM_COST_MAP_HANDLE_US + SIM_COST_MAP_GRANULE_US;
    const double hmap = SIM_COST_MAP_CALL_US + SIM_COST_HOST_MAP_HANDLE_US +
                        SIM_COST_HOST_MAP_GRANULE_US;
    switch (row) {
    case 0:
        return map + SIM_COST_ACCESS_CALL_US + SIM_COST_ACCESS_HANDLE_US +
               SIM_COST_ACCESS_GRANULE_US;
    case 1:
        return SIM_COST_UNMAP_CALL_US + SIM_COST_UNMAP_HANDLE_US + SIM_COST_UNMAP_GRANULE_US;
    case 2:
        return hmap + SIM_COST_ACCESS_CALL_US + SIM_COST_HOST_ACCESS_HANDLE_US +
               SIM_COST_HOST_ACCESS_GRANULE_US;
    case 3:
        return SIM_COST_UNMAP_CALL_US + SIM_COST_HOST_UNMAP_HANDLE_US +
               SIM_COST_HOST_UNMAP_GRANULE_US;
    default:
        return -1;
    }
}

int main(void)
{
    const char *build = getenv("BUILD"), *exec = getenv("ELIXIR_SIM_EXEC");
    int lazy = exec && strcmp(exec, "lazy") == 0, seen[NROWS] = { 0 }, queue = 0, sim = 0;
    char cmd[1024], line[512];

    CHECK_CU(cuInit(0));            /* (and links libcuda.so.1, whose symbols tell which) */
    if (!st_simulated()) {
        puts("skip: the figures are checked against the simulator's model");
        return TEST_SKIP;
    }
    snprintf(cmd, sizeof(cmd), "'%s/bench/vmm_inflight' -n %d 2>&1",
             build && *build ? build : "build", RUNS);
    FILE *p = popen(cmd, "r");
    EXPECT(p, "popen of %s", cmd);
    while (fgets(line, sizeof(line), p)) {
        fputs(line, stdout);
        if (strstr(line, "the simulator's virtual host clock"))
            sim = 1;
        if (strstr(line, "copies of 2 MiB issued back to back on one stream: median"))
            queue = 1;
        for (int r = 0; r < NROWS; r++) {
            size_t len = strlen(rows[r]);
            double idle, busy;
            int running, of;
            if (strncmp(line, rows[r], len) != 0 || line[len] != ' ')
                continue;
            EXPECT(sscanf(line + len, "%lf %lf %d of %d", &idle, &busy, &running, &of) == 4,
                   "a row of four figures: %s", line);
            EXPECT(of == RUNS && running >= 0 && running <= RUNS, "of %d runs: %s", RUNS, line);
            EXPECT(lazy || running == RUNS,
                   "the long copy still running after every call (no call waits): %s", line);
            if (model(r) >= 0)
                EXPECT(fabs(idle - model(r)) <= TOL_US && fabs(busy - model(r)) <= TOL_US,
                       "idle and behind the copy both the model's %.2f us: %s", model(r), line);
            seen[r]++;
        }
    }
    EXPECT(pclose(p) == 0, "exit status 0");
    EXPECT(sim, "the bench to say that it reads the simulator's virtual clock");
    EXPECT(queue, "the line of the copies issued back to back");
    for (int r = 0; r < NROWS; r++)
        EXPECT(seen[r] == 1, "one row '%s'; got %d", rows[r], seen[r]);

    char out[512] = "";
    snprintf(cmd, sizeof(cmd), "'%s/bench/vmm_inflight' -n 0 2>&1",
             build && *build ? build : "build");
    p = popen(cmd, "r");
    EXPECT(p && fgets(out, sizeof(out), p), "a line from %s", cmd);
    int st = pclose(p);
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 2 && strstr(out, "1 to 10000") &&
               strstr(out, "'0'"),
           "-n 0 refused with exit 2, naming the accepted values and the value; got %d: %s",
           st, out);
    puts("bench/vmm_inflight: well formed, mapping rows the model's charges");
    return 0;
}
