/* SPDX-License-Identifier: MIT */
/*
 * vmm_handles_bench.c - bench/vmm_handles runs on the simulator, its table is well formed and
 * its figures are the model's charges.
 *
 * On the simulator the bench reads the virtual host clock, to which each VMM call charges
 * CALL + HANDLE x handles it reaches + GRANULE x granules (SIM_COST_* in simcuda.h) and
 * nothing else moves it, so every figure is known in advance: for N = 8, each step of
 * (a) eight 2 MiB handles and (b) one 16 MiB handle, and the ratio (b)/(a), must match the
 * model within what printing rounds away.  This checks the bench's arithmetic and that the
 * simulator charges a range-wide cuMemSetAccess per handle; it times nothing.  Also: every
 * N has every step for the device and for host memory, a device without host VMM gets a
 * skip line instead of host rows, and a bad run count is refused naming the accepted values.
 * Against a real driver (`make gpu-check`, check sim) it skips: the figures are a GPU's.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "simtest.h"

#define NCOUNTS 5
#define NSTEPS 8
#define CHECK_N 8
/* Figures are printed to 0.1 us, and the virtual clock is read in whole nanoseconds at both
 * ends of a step: at most 0.05 us + 2 ns away from the model's charge. */
#define TOL_US 0.052

static const int counts[NCOUNTS] = { 1, 2, 4, 8, 16 };
static const char *const steps[NSTEPS] = { "create", "map", "access", "access-each",
                                           "unmap", "release", "total", "total-each" };

/* What the model charges one call reaching `handles` handles over `granules` granules, of
 * device memory (host 0) or of host memory (host 1). */
#define COST(CALL, handles, granules)                                                        \
    (host ? SIM_COST_##CALL##_CALL_US + SIM_COST_HOST_##CALL##_HANDLE_US * (handles) +      \
                SIM_COST_HOST_##CALL##_GRANULE_US * (granules)                             \
          : SIM_COST_##CALL##_CALL_US + SIM_COST_##CALL##_HANDLE_US * (handles) +           \
                SIM_COST_##CALL##_GRANULE_US * (granules))

/* The model's figure for step s of (a) (b = 0: N calls on 2 MiB handles, one access call
 * over the range) or of (b) (one call on one handle of N granules), in device memory (host 0)
 * or host memory (host 1). */
static double model(int s, int n, int b, int host)
{
    double create = b ? COST(CREATE, 1, n) : n * COST(CREATE, 1, 1);
    double map = b ? COST(MAP, 1, n) : n * COST(MAP, 1, 1);
    double access = b ? COST(ACCESS, 1, n) : COST(ACCESS, n, n);
    double each = b ? COST(ACCESS, 1, n) : n * COST(ACCESS, 1, 1);
    double unmap = b ? COST(UNMAP, 1, n) : n * COST(UNMAP, 1, 1);
    double release = b ? COST(RELEASE, 1, n) : n * COST(RELEASE, 1, 1);
    const double v[NSTEPS] = { create, map, access, each, unmap, release,
                               create + map + access + unmap + release,
                               create + map + each + unmap + release };
    return v[s];
}

static int index_of(const char *const *names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

/* Runs the bench with `env` and arguments `args`; checks its rows (seen[location][N][step]
 * counts them) and returns its exit status; *skip is set when it printed the host skip. */
static int run(const char *env, const char *args, int seen[2][NCOUNTS][NSTEPS], int *skip,
               int *simulator)
{
    const char *build = getenv("BUILD");
    char cmd[1024], line[512], loc[32], step[32];
    double a, b, ratio;
    int n;

    snprintf(cmd, sizeof(cmd), "env %s '%s/bench/vmm_handles' %s 2>&1", env,
             build && *build ? build : "build", args);
    FILE *p = popen(cmd, "r");
    EXPECT(p, "popen of %s", cmd);
    while (fgets(line, sizeof(line), p)) {
        fputs(line, stdout);
        if (strstr(line, "the simulator: times are its virtual host clock"))
            *simulator = 1;
        if (strstr(line, "host memory: skipped: device 0 reports neither"))
            *skip = 1;
        if (sscanf(line, "%31s %d %31s %lf %lf %lf", loc, &n, step, &a, &b, &ratio) != 6)
            continue;
        int l = strcmp(loc, "device") == 0 ? 0 : strncmp(loc, "host", 4) == 0 ? 1 : -1;
        int c;
        for (c = 0; c < NCOUNTS && counts[c] != n; c++)
            ;
        int s = index_of(steps, NSTEPS, step);
        EXPECT(l >= 0 && c < NCOUNTS && s >= 0, "a row of a known location, N and step: %s",
               line);
        EXPECT(a > 0 && b > 0 && fabs(ratio - b / a) <= 0.00005 + 0.05 * (1 / a + b / (a * a)),
               "(b)/(a) to match the row's figures: %s", line);
        seen[l][c][s]++;
        if (n == CHECK_N) {
            double ea = model(s, n, 0, l), eb = model(s, n, 1, l), er = eb / ea;
            EXPECT(fabs(a - ea) <= TOL_US && fabs(b - eb) <= TOL_US,
                   "(a) %.2f and (b) %.2f us, the model's charges: %s", ea, eb, line);
            EXPECT(fabs(ratio - er) <= 0.00005 + er * (TOL_US / ea + TOL_US / eb),
                   "(b)/(a) %.4f, the model's: %s", er, line);
        }
    }
    return pclose(p);
}

int main(void)
{
    int seen[2][NCOUNTS][NSTEPS] = { { { 0 } } }, skip = 0, sim = 0;

    CHECK_CU(cuInit(0));            /* (and links libcuda.so.1, whose symbols tell which) */
    if (!st_simulated()) {
        puts("skip: the figures are checked against the simulator's model");
        return TEST_SKIP;
    }

    EXPECT(run("ELIXIR_SIM_ALLOC_COSTS=1", "-n 3", seen, &skip, &sim) == 0, "exit status 0");
    EXPECT(sim, "the bench to say that it reads the simulator's virtual clock");
    EXPECT(!skip, "host rows: the simulator supports host VMM by default");
    for (int l = 0; l < 2; l++)
        for (int c = 0; c < NCOUNTS; c++)
            for (int s = 0; s < NSTEPS; s++)
                EXPECT(seen[l][c][s] == 1, "one %s row for N = %d, step %s; got %d",
                       l ? "host" : "device", counts[c], steps[s], seen[l][c][s]);

    memset(seen, 0, sizeof(seen));
    sim = 0;
    EXPECT(run("ELIXIR_SIM_HOST_VMM=0", "-n 1", seen, &skip, &sim) == 0, "exit status 0");
    EXPECT(skip && seen[0][NCOUNTS - 1][NSTEPS - 1] == 1 && seen[1][0][0] == 0,
           "device rows and, for host memory, the skip line alone");

    const char *env = getenv("BUILD");
    char cmd[1024], out[512] = "";
    snprintf(cmd, sizeof(cmd), "'%s/bench/vmm_handles' -n 0 2>&1",
             env && *env ? env : "build");
    FILE *p = popen(cmd, "r");
    EXPECT(p && fgets(out, sizeof(out), p), "a line from %s", cmd);
    int st = pclose(p);
    EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 2 && strstr(out, "1 to 100000") &&
               strstr(out, "'0'"),
           "-n 0 refused with exit 2, naming the accepted values and the value; got %d: %s",
           st, out);
    printf("bench/vmm_handles: well formed, N = %d matches the model's charges\n", CHECK_N);
    return 0;
}
