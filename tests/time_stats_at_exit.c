/* SPDX-License-Identifier: MIT */
/*
 * time_stats_at_exit.c - with ELIXIR_SIM_STATS=1 the simulator prints its statistics to stderr
 * when the process exits: the virtual time, the operations by kind, the kernels' device time
 * (apart, that of launches whose host memory held them to the link's rate), the bytes each
 * engine moved, faults and races.  A child process does a known amount of work and the parent
 * reads the report.
 */
#include <stdlib.h>
#include <string.h>

#include "simchild.h"
#include "simtest.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry busy(.param .f64 flops)\n{\n ret;\n}\n"
    ".visible .entry touch(.param .u64 p)\n{\n ret;\n}\n";

SIM_KERNEL void busy(const sim_launch_t *l, void **params)
{
    sim_kernel_cost(*(double *)params[0], 0);
}

/* Reads 1 MiB at p (pinned host memory here): over the link, 2 + 41.943 us. */
SIM_KERNEL void touch(const sim_launch_t *l, void **params)
{
    sim_kernel_access(*(void **)params[0], 1 << 20, SIM_ACCESS_READ);
}

static void work(void *unused)
{
    CUmodule mod;
    CUfunction f, t;
    CUdeviceptr d;
    void *pinned;
    double flops = 51e9;
    void *args[] = { &flops };

    st_setup(0);
    CHECK_CU(cuModuleLoadData(&mod, ptx));
    CHECK_CU(cuModuleGetFunction(&f, mod, "busy"));
    CHECK_CU(cuModuleGetFunction(&t, mod, "touch"));
    CHECK_CU(cuMemAlloc(&d, 1 << 20));
    CHECK_CU(cuMemAllocHost(&pinned, 1 << 20));
    CHECK_CU(cuMemsetD8(d, 0, 1 << 20));
    CHECK_CU(cuMemcpyHtoD(d, pinned, 12345));
    CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    void *targs[] = { &pinned };
    CHECK_CU(cuLaunchKernel(t, 1, 1, 1, 1, 1, 1, 0, NULL, targs, NULL));
    CHECK_CU(cuMemcpyDtoH(pinned, d, 4096));
    CHECK_CU(cuMemFreeHost(pinned));
    CHECK_CU(cuMemFree(d));
    CHECK_CU(cuModuleUnload(mod));
}

/* The number after `key` on the stats line that holds it; exits when there is none. */
static unsigned long long stat_value(const char *err, const char *key)
{
    for (const char *line = err; line && *line; line = strchr(line, '\n'), line += !!line) {
        const char *end = strchr(line, '\n');
        const char *k = strstr(line, key);
        if (!strstr(line, "stats") || !k || (end && k > end))
            continue;
        k += strlen(key);
        while (*k == ' ')
            k++;
        return strtoull(k, NULL, 10);
    }
    fprintf(stderr, "no statistics line with \"%s\" in:\n%s\n", key, err);
    exit(1);
}

/* The number after the first `key` in err, as a double; exits when there is none. */
static double stat_double(const char *err, const char *key)
{
    const char *k = strstr(err, key);
    if (!k) {
        fprintf(stderr, "no \"%s\" in:\n%s\n", key, err);
        exit(1);
    }
    return strtod(k + strlen(key), NULL);
}

int main(void)
{
    static const char *const env[] = { "ELIXIR_SIM_STATS=1", NULL };
    static const char *const lines[] = { "virtual time", "kernels", "kernel time", "copies",
                                         "memsets", "h2d", "d2h", "races", NULL };
    st_child_t c;

    st_run_child(work, NULL, env, &c);
    st_child_expect(&c, 0, lines);
    EXPECT(stat_value(c.err, "kernels") == 3, "kernels: %llu", stat_value(c.err, "kernels"));
    /* two 1 ms kernels and one held to the link: 2 us of launch each, 1 MiB at 25 GB/s */
    double kt = stat_double(c.err, "kernel time"), lt = stat_double(c.err, "by host memory:");
    EXPECT(kt > 2.0479 && kt < 2.0481, "kernel time %.4f ms, expected 2.048", kt);
    EXPECT(lt > 0.0439 && lt < 0.0441, "link-held kernel time %.4f ms, expected 0.044", lt);
    double held = stat_double(strstr(c.err, "kernel time"), "(");
    EXPECT(held == 1, "launches held to the link: %f", held);
    EXPECT(stat_value(c.err, "copies") == 2, "copies: %llu", stat_value(c.err, "copies"));
    EXPECT(stat_value(c.err, "memsets") == 1, "memsets: %llu", stat_value(c.err, "memsets"));
    EXPECT(stat_value(c.err, "bytes h2d") == 12345, "h2d bytes: %llu",
           stat_value(c.err, "bytes h2d"));
    EXPECT(stat_value(c.err, "bytes d2h") == 4096, "d2h bytes: %llu",
           stat_value(c.err, "bytes d2h"));
    EXPECT(stat_value(c.err, "races") == 0, "races: %llu", stat_value(c.err, "races"));
    const char *vt = strstr(c.err, "virtual time");
    double ms = vt ? strtod(vt + strlen("virtual time"), NULL) : -1;
    EXPECT(ms >= 2.0 && ms < 3.0,
           "virtual time %f ms, expected two 1 ms kernels, one held to the link and copies", ms);
    st_child_free(&c);
    return 0;
}
