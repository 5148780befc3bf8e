/* SPDX-License-Identifier: MIT */
/*
 * shim_stats_host_time.c - ELIXIR_STATS says where the host's time went: the application's
 * launches, copies and memsets, whole and in the driver, its synchronisations, and the driver
 * calls that residency made for migrations.
 *
 * A loop of ITERS iterations over NBUF one-chunk buffers on a GPU budget of a third of them:
 * one launch per buffer, one copy back of a word, one stream synchronisation (after a memset
 * of each buffer and a context synchronisation); every iteration pages memory in and out.
 * Run with ELIXIR_POLICY=reactive and =plan, without and with a trace recorded (the wrappers'
 * other path): the counts of launches, of copies and memsets, and of synchronisations must be
 * exactly what the program made, the driver's share of the launches more than nothing and no
 * more than the whole (less, reactive, whose migrations run inside the launches), and
 * residency's line must count copies of migrations, mapping calls and event records.
 * Without ELIXIR_STATS nothing is printed.
 */
#include "shim_test.h"
#include "simtest.h"

#define NBUF 12
#define BUF (2ull << 20)
#define ITERS 6

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry bump(.param .u64 p, .param .u64 n)\n{\n ret;\n}\n";

/* Adds 1 to the n words at p, with 50 us of modelled arithmetic. */
SIM_KERNEL void bump(const sim_launch_t *l, void **params)
{
    (void)l;
    uint32_t *p = *(uint32_t **)params[0];
    uint64_t n = *(uint64_t *)params[1];
    sim_kernel_access(p, n * 4, SIM_ACCESS_READ | SIM_ACCESS_WRITE);
    for (uint64_t i = 0; i < n; i++)
        p[i]++;
    sim_kernel_cost(51e12 * 50e-6, 0);
}

static void scenario(void)
{
    CUdeviceptr buf[NBUF];
    CUstream s;
    uint32_t word;
    st_setup(0);
    CUfunction f = st_function(ptx, "bump");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < NBUF; i++) {
        CHECK_CU(cuMemAlloc(&buf[i], BUF));
        CHECK_CU(cuMemsetD32(buf[i], 0, BUF / 4));
    }
    CHECK_CU(cuCtxSynchronize());
    for (int it = 0; it < ITERS; it++) {
        for (int i = 0; i < NBUF; i++) {
            uint64_t n = BUF / 4;
            void *args[] = { &buf[i], &n };
            CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
        }
        CHECK_CU(cuMemcpyDtoHAsync(&word, buf[it % NBUF], sizeof(word), s));
        CHECK_CU(cuStreamSynchronize(s));
        if (word != (uint32_t)(it + 1)) {
            fprintf(stderr, "iteration %d: word %u\n", it, word);
            exit(1);
        }
    }
    printf("done\n");
}

/* "NAME N in X ms" in err after `key`: N (-1 when missing) and X in *ms. */
static long long part(const char *err, const char *key, double *ms)
{
    const char *p = strstr(err, key);
    long long n = -1;
    *ms = -1;
    if (p && sscanf(p + strlen(key), "%lld in %lf ms", &n, ms) != 2)
        n = -1;
    return n;
}

/* Every "N in X ms" of err's host-time lines takes 0 <= X < 60 s (a run of seconds: a time
 * that went backwards would wrap to years). */
static void sane_times(const char *err, const char *policy)
{
    for (const char *p = strstr(err, "host time"); p; p = strstr(p + 1, "host time")) {
        const char *end = strchr(p, '\n');
        for (const char *q = strstr(p, " in "); q && (!end || q < end); q = strstr(q + 1, " in ")) {
            double ms = -1;
            if (sscanf(q, " in %lf ms", &ms) == 1)
                EXPECT(ms >= 0 && ms < 60e3, "%s: a host time of %.1f ms:\n%.*s", policy, ms,
                       end ? (int)(end - p) : 200, p);
        }
    }
}

static void check(const char *policy, int traced)
{
    /* trace: ELIXIR_TRACE=... when traced, else the default log level, which changes nothing
     * (the environment below keeps one shape) */
    char pol[64], trace[96] = "ELIXIR_LOG=warn", dir[] = "/tmp/shim-host-time-XXXXXX";
    double whole, drv, ms;
    snprintf(pol, sizeof(pol), "ELIXIR_POLICY=%s", policy);
    if (traced) {
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            exit(1);
        }
        snprintf(trace, sizeof(trace), "ELIXIR_TRACE=%s/t.etr", dir);
    }
    const char *env[] = { pol, "ELIXIR_STATS=1", "ELIXIR_GPU_MEMORY=8M", trace, NULL };
    sh_run_t r = sh_run_ok("scenario", env);
    const char *host = strstr(r.err, "host time: ");
    const char *res = strstr(r.err, "host time in residency's driver calls: ");
    EXPECT(host && res, "%s%s: no host-time lines:\n%s", policy, traced ? ", traced" : "",
           r.err);
    sane_times(r.err, policy);
    if (host && res) {
        long long n = part(host, "launches ", &whole);
        long long nd = part(host, "the driver's launch calls ", &drv);
        /* (on the simulator's clock: its launches take host time, and the reactive engine's
         * migrations inside them theirs) */
        int reactive = strcmp(policy, "reactive") == 0;
        EXPECT(n == NBUF * ITERS && nd == n && drv > 0 && (reactive ? drv < whole : drv <= whole),
               "%s%s: launches %lld in %.3f ms, in the driver %lld in %.3f ms (expected %d)",
               policy, traced ? ", traced" : "", n, whole, nd, drv, NBUF * ITERS);
        n = part(host, "copies and memsets ", &whole);
        EXPECT(n == ITERS + NBUF, "%s: copies and memsets %lld (expected %d)", policy, n,
               ITERS + NBUF);
        n = part(host, "synchronisations ", &ms);
        EXPECT(n == ITERS + 1, "%s: synchronisations %lld (expected %d)", policy, n, ITERS + 1);
        EXPECT(part(res, "copies of migrations ", &ms) > 0 && part(res, "mapping calls ", &ms) > 0
               && part(res, "event records ", &ms) > 0,
               "%s: residency's line lacks copies, mapping calls or records:\n%s", policy, res);
    }
    sh_run_free(&r);
    if (traced) {
        char path[128];
        snprintf(path, sizeof(path), "%s/t.etr", dir);
        unlink(path);
        rmdir(dir);
    }
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    for (int traced = 0; traced < 2; traced++) {
        check("reactive", traced);
        check("plan", traced);
    }
    const char *quiet[] = { "ELIXIR_GPU_MEMORY=8M", NULL };
    sh_run_t r = sh_run_ok("scenario", quiet);
    EXPECT(!strstr(r.err, "host time"), "host time printed without ELIXIR_STATS:\n%s", r.err);
    sh_run_free(&r);
    printf("host time accounted: launches, copies, synchronisations and residency's calls\n");
    return 0;
}
