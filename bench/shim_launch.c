/* SPDX-License-Identifier: MIT */
/*
 * shim_launch.c - what libelixir.so adds to a kernel launch when everything is resident.
 *
 * This program runs itself as four children, one on the plain simulator, one with
 * LD_PRELOAD=libelixir.so (ELIXIR_POLICY=reactive), one with the shim recording a trace
 * (ELIXIR_TRACE, into a temporary file removed afterwards) and one with the computed policy
 * (ELIXIR_POLICY=plan), all with the race checker off (ELIXIR_SIM_RACECHECK=off).  Each child launches empty kernels taking 1, 8 and 32 pointer
 * arguments, N times and then synchronises, in rounds that take the widths in turn, and
 * reports its best round per width.  The pointers lead into allocations far below the GPU
 * budget, so the shim never migrates anything: what is left is the cost of looking at the
 * arguments and recording their use, and with the trace, of recording each launch with the
 * allocations it reaches (at the default level, every launch is recorded in full; each
 * round's synchronisation marks an iteration, and the best round is one after the profiled
 * iteration, so the figure is recording's steady state, without CUPTI).  With the plan, the
 * same rounds are an iteration the shim profiles, plans (nothing to move) and then follows:
 * every launch is matched against the plan, which is what it costs.  The four children run
 * RUNS times, in turn, all on one CPU (see bench_pin_to_one_cpu), and each run gives its own
 * ratios; the parent prints, side by side, the median time per launch of each and the median
 * (and range) of the runs' ratios: the shim's to the plain simulator, the trace's to the shim
 * and the planned shim's to the plain simulator.  A ratio taken within one run compares children that ran moments apart, so a slow
 * spell of the machine that spans a run does not tilt it, and the median discards the runs
 * that one landed in.  It then says whether the targets (the shim, with either policy, at
 * most 10%, about 50 ns, over the simulator; recording at most 10% over the shim) are met by
 * those medians; it asserts nothing about time.
 *
 * The simulator checks every pointer argument of a launch against its address registry (a GPU
 * does not): a pointer into a VMM reservation, as all the shim's are, costs it one more index
 * look-up, and a program with many separate cuMemAlloc ranges costs its registry search more.
 *
 * The shim's own cost is also measured inside the preloaded child, where nothing else differs:
 * its rounds alternate between cuLaunchKernel (the shim's wrapper) and the driver's own
 * function (found with the C library's dlsym, which the shim's does not answer for hooked
 * names), on the same memory; the launches the driver takes directly are not seen by the shim,
 * which is harmless here since nothing moves.  Two processes' speeds often differ by more than
 * the shim costs, which is why this second table exists; the targets are judged on the
 * first.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "simtest.h"

#define NWIDTHS 3
#define MAX_PTRS 32
#define ALLOC_BYTES (1u << 20)      /* one allocation per pointer argument: 32 MiB in all */
#define LAUNCHES 40000              /* per round */
#define ROUNDS 4
#define WARM_ROUNDS 4               /* rounds of every width before them (see child) */
#define RUNS 7                      /* runs of the four children in turn */
#define TARGET_RATIO 1.10
#define TRACE_TARGET_RATIO 1.10     /* shim + trace against the shim alone */
#define OWN_PAIRS 16                /* pairs of rounds measuring the shim's own cost */
#define OWN_LAUNCHES 10000          /* per round of those */
#define OWN_WARM 6                  /* wrapper rounds before them, per width (see own_ratio) */
#define MAX_SAMPLES 32              /* values a median is taken of, at most */
_Static_assert(RUNS <= MAX_SAMPLES && OWN_PAIRS <= MAX_SAMPLES, "median's buffer");

static const int widths[NWIDTHS] = { 1, 8, 32 };

/* One run's figures: each child's best round per width, in ns per launch; a preloaded child's
 * own_ratio per width follows its own rows (shim[NWIDTHS + i], printed as width -widths[i]);
 * planned: the child with ELIXIR_POLICY=plan, laid out as shim. */
typedef struct run {
    double plain[NWIDTHS], shim[2 * NWIDTHS], traced[NWIDTHS], planned[2 * NWIDTHS];
} run_t;

typedef CUresult (*launch_fn_t)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                                unsigned, unsigned, CUstream, void **, void **);

/* The host kernels: they do nothing, so a launch costs only the submission path. */
SIM_KERNEL void bench_ptr1(const sim_launch_t *l, void **params) { (void)l, (void)params; }
SIM_KERNEL void bench_ptr8(const sim_launch_t *l, void **params) { (void)l, (void)params; }
SIM_KERNEL void bench_ptr32(const sim_launch_t *l, void **params) { (void)l, (void)params; }

/* PTX declaring bench_ptr<w>(.param .u64 p0, ...) for every width, into buf. */
static void make_ptx(char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, ".version 8.0\n.target sm_90\n.address_size 64\n");
    for (int i = 0; i < NWIDTHS; i++) {
        n += (size_t)snprintf(buf + n, len - n, ".visible .entry bench_ptr%d(", widths[i]);
        for (int p = 0; p < widths[i]; p++)
            n += (size_t)snprintf(buf + n, len - n, "%s.param .u64 p%d", p ? ", " : "", p);
        n += (size_t)snprintf(buf + n, len - n, ")\n{\n ret;\n}\n");
    }
}

/* Nanoseconds per launch of f through `launch`: n launches, then wait for all of them. */
static double launch_round(launch_fn_t launch, CUfunction f, CUstream s, void **args, int n)
{
    double t0 = bench_now_ns();
    for (int i = 0; i < n; i++)
        CHECK_CU(launch(f, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
    CHECK_CU(cuStreamSynchronize(s));
    return (bench_now_ns() - t0) / n;
}

/* Set up the kernels of every width, and MAX_PTRS allocations whose addresses args[] hold
 * (ptrs[] keeps the values); returns the stream to launch on. */
static CUstream prepare(CUfunction f[NWIDTHS], CUdeviceptr ptrs[MAX_PTRS], void *args[MAX_PTRS])
{
    static char ptx[8192];
    CUmodule m;
    CUstream s;

    st_setup(0);
    make_ptx(ptx, sizeof(ptx));
    CHECK_CU(cuModuleLoadData(&m, ptx));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int p = 0; p < MAX_PTRS; p++) {
        CHECK_CU(cuMemAlloc(&ptrs[p], ALLOC_BYTES));
        args[p] = &ptrs[p];
    }
    for (int i = 0; i < NWIDTHS; i++) {
        char name[32];
        snprintf(name, sizeof(name), "bench_ptr%d", widths[i]);
        CHECK_CU(cuModuleGetFunction(&f[i], m, name));
    }
    return s;
}

/* The driver's own cuLaunchKernel when the shim is preloaded and not recording (the C
 * library's dlsym, found as the shim finds it), else NULL. */
static launch_fn_t driver_launch(void)
{
    static const char *const versions[] = { "GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17" };
    void *(*libc_dlsym)(void *, const char *) = NULL;
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);

    if (bench_shim_calls("cuLaunchKernel") < 0 || getenv("ELIXIR_TRACE") || !cuda)
        return NULL;
    for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]) && !libc_dlsym; i++)
        *(void **)&libc_dlsym = dlvsym(RTLD_NEXT, "dlsym", versions[i]);
    launch_fn_t fn = NULL;
    if (libc_dlsym)
        *(void **)&fn = libc_dlsym(cuda, "cuLaunchKernel");
    dlclose(cuda);
    return fn == cuLaunchKernel ? NULL : fn;
}

/* The median of n values (n <= MAX_SAMPLES), and their range in *lo, *hi. */
static double median(const double *v, int n, double *lo, double *hi);

/* The median, over OWN_PAIRS pairs of rounds of OWN_LAUNCHES launches of f (one through the
 * wrapper, one through the driver's own function, in alternating order), of the wrapper's
 * time over the driver's. */
static double own_ratio(launch_fn_t driver, CUfunction f, CUstream s, void **args)
{
    double ratio[OWN_PAIRS], lo, hi;
    /* Rounds of OWN_LAUNCHES are an iteration other than the ones before: with the plan, the
     * shim profiles and plans them again (two that do not follow the plan, one profiled, one
     * awaiting its times), and the pairs are to measure it following, not profiling. */
    for (int w = 0; w < OWN_WARM; w++)
        launch_round(cuLaunchKernel, f, s, args, OWN_LAUNCHES);
    for (int p = 0; p < OWN_PAIRS; p++) {
        double w, d;
        if (p & 1) {
            d = launch_round(driver, f, s, args, OWN_LAUNCHES);
            w = launch_round(cuLaunchKernel, f, s, args, OWN_LAUNCHES);
        } else {
            w = launch_round(cuLaunchKernel, f, s, args, OWN_LAUNCHES);
            d = launch_round(driver, f, s, args, OWN_LAUNCHES);
        }
        ratio[p] = w / d;
    }
    return median(ratio, OWN_PAIRS, &lo, &hi);
}

/* The child: one line "width W NS" per kernel, its best round, then "launches-seen N"; with
 * the shim preloaded and not recording, also "width -W R": own_ratio for that kernel. */
static int child(void)
{
    CUdeviceptr ptrs[MAX_PTRS];
    void *args[MAX_PTRS];
    CUfunction f[NWIDTHS];
    double best[NWIDTHS];
    CUstream s = prepare(f, ptrs, args);
    launch_fn_t driver = driver_launch();

    /* Warm-up: rounds as the measured ones.  With the plan, these are the iterations the
     * shim waits out, profiles and awaits the times of before it plans (ELIXIR_LOG=info shows
     * the plan made before the first measured round), so that every measured round follows
     * it: each child's best is taken of as many rounds in the same state. */
    for (int w = 0; w < WARM_ROUNDS; w++)
        for (int i = 0; i < NWIDTHS; i++)
            launch_round(cuLaunchKernel, f[i], s, args, LAUNCHES);
    /* Rounds go through the widths in turn, so a slow moment of the machine is shared. */
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < NWIDTHS; i++) {
            double t = launch_round(cuLaunchKernel, f[i], s, args, LAUNCHES);
            best[i] = r == 0 || t < best[i] ? t : best[i];
        }
    for (int i = 0; i < NWIDTHS; i++) {
        printf("width %d %.3f\n", widths[i], best[i]);
        if (driver)
            printf("width %d %.4f\n", -widths[i], own_ratio(driver, f[i], s, args));
    }
    printf("launches-seen %lld\n", bench_shim_calls("cuLaunchKernel"));
    return 0;
}

/* The row of widths[] that is `w`, or -1; -widths[i] (an own_ratio) is row NWIDTHS + i. */
static int width_row(long long w)
{
    for (int i = 0; i < NWIDTHS; i++)
        if (widths[i] == w || widths[i] == -w)
            return i + (w < 0 ? NWIDTHS : 0);
    return -1;
}

/* Run this program as a child (plain, preloaded with `policy`, or preloaded and recording
 * into `trace`) and keep the best ns of each width in best[]; returns the shim's launch count
 * the child reported, or -3 when it failed. */
static long long run_child(const char *self, const char *shim, const char *policy,
                           const char *trace, double *best)
{
    char env[2 * PATH_MAX];

    snprintf(env, sizeof(env), "ELIXIR_SIM_RACECHECK=off ELIXIR_POLICY=%s%s%s%s", policy,
             trace ? " ELIXIR_TRACE='" : "", trace ? trace : "", trace ? "'" : "");
    return bench_run_child(self, shim, env, "width", width_row, best);
}

static double median(const double *v, int n, double *lo, double *hi)
{
    double s[MAX_SAMPLES];
    memcpy(s, v, (size_t)n * sizeof(*s));
    for (int i = 1; i < n; i++)                     /* insertion sort: n is tiny */
        for (int j = i; j > 0 && s[j] < s[j - 1]; j--) {
            double t = s[j];
            s[j] = s[j - 1];
            s[j - 1] = t;
        }
    *lo = s[0];
    *hi = s[n - 1];
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* One width's row: median ns per side, and the medians (ranges) of the runs' ratios; the
 * worst-case bookkeeping gets the median ratios and the medians of the runs' differences. */
static void report_row(int i, const run_t *runs, double *ratio, double *extra, double *tratio,
                       double *textra, double *pratio, double *pextra)
{
    double p[RUNS], w[RUNS], t[RUNS], q[RUNS], rs[RUNS], rt[RUNS], rq[RUNS], es[RUNS];
    double et[RUNS], eq[RUNS], lo, hi, rlo, rhi, tlo, thi, qlo, qhi;
    for (int r = 0; r < RUNS; r++) {
        p[r] = runs[r].plain[i];
        w[r] = runs[r].shim[i];
        t[r] = runs[r].traced[i];
        q[r] = runs[r].planned[i];
        rs[r] = w[r] / p[r];
        rt[r] = t[r] / w[r];
        rq[r] = q[r] / p[r];
        es[r] = w[r] - p[r];
        et[r] = t[r] - w[r];
        eq[r] = q[r] - p[r];
    }
    double mp = median(p, RUNS, &lo, &hi), mw = median(w, RUNS, &lo, &hi);
    double mt = median(t, RUNS, &lo, &hi), mq = median(q, RUNS, &lo, &hi);
    *ratio = median(rs, RUNS, &rlo, &rhi);
    *tratio = median(rt, RUNS, &tlo, &thi);
    *pratio = median(rq, RUNS, &qlo, &qhi);
    *extra = median(es, RUNS, &lo, &hi);           /* the runs' own differences, too */
    *textra = median(et, RUNS, &lo, &hi);
    *pextra = median(eq, RUNS, &lo, &hi);
    printf("  %8d | %8.1f ns | %8.1f ns  %.2fx (%.2f-%.2f) | %8.1f ns  %.2fx (%.2f-%.2f) | "
           "%8.1f ns  %.2fx (%.2f-%.2f)\n", widths[i], mp, mw, *ratio, rlo, rhi, mt, *tratio,
           tlo, thi, mq, *pratio, qlo, qhi);
}

/* The shim's own cost per width: the median over the runs of a preloaded child's own_ratio
 * (range in brackets), and what it comes to per launch at that child's median speed; `plan`:
 * the child with the plan. */
static void report_own(const run_t *runs, int plan)
{
    printf("  The shim's own cost%s, inside the preloaded child (its wrapper against the "
           "driver's own\n  function on the same memory, %d pairs of rounds of %d launches in "
           "turn, the median\n  pair's ratio):\n", plan ? " with the plan" : "", OWN_PAIRS,
           OWN_LAUNCHES);
    for (int i = 0; i < NWIDTHS; i++) {
        double w[RUNS], ratio[RUNS], lo, hi, rlo, rhi;
        for (int r = 0; r < RUNS; r++) {
            w[r] = plan ? runs[r].planned[i] : runs[r].shim[i];
            ratio[r] = plan ? runs[r].planned[NWIDTHS + i] : runs[r].shim[NWIDTHS + i];
        }
        double mw = median(w, RUNS, &lo, &hi), mr = median(ratio, RUNS, &rlo, &rhi);
        printf("  %8d pointers: %.2fx (%.2f-%.2f), about %+.0f ns per launch\n", widths[i], mr,
               rlo, rhi, mw - mw / mr);
    }
}

static void report(const run_t *runs)
{
    double worst = 0, worst_ns = 0, tworst = 0, tworst_ns = 0, pworst = 0, pworst_ns = 0;

    printf("shim_launch: cuLaunchKernel of an empty kernel, %d launches then one "
           "cuStreamSynchronize,\n  best of %d rounds per child, %d runs of the four children "
           "in turn, race checker off,\n  pinned to one CPU; every pointer leads into its own "
           "%u KiB allocation, all resident.\n  Medians over the runs; a ratio is the median "
           "of the runs' own ratios (range in brackets).\n",
           LAUNCHES, ROUNDS, RUNS, ALLOC_BYTES >> 10);
    printf("  pointers |  plain sim  |  with libelixir.so          | shim+trace, ratio to "
           "the shim   | with the plan (ELIXIR_POLICY=plan)\n");
    for (int i = 0; i < NWIDTHS; i++) {
        double ratio, extra, tratio, textra, pratio, pextra;
        report_row(i, runs, &ratio, &extra, &tratio, &textra, &pratio, &pextra);
        if (pratio > pworst) {
            pworst = pratio;
            pworst_ns = pextra;
        }
        if (ratio > worst) {
            worst = ratio;
            worst_ns = extra;
        }
        if (tratio > tworst) {
            tworst = tratio;
            tworst_ns = textra;
        }
    }
    printf("  shim target (at most +%.0f%%, about 50 ns, per launch): %s (worst %.2fx, %+.1f ns)\n",
           (TARGET_RATIO - 1) * 100, worst <= TARGET_RATIO ? "met" : "NOT met", worst, worst_ns);
    printf("  trace target (recording at most +%.0f%% over the shim): %s (worst %.2fx, %+.1f ns)\n",
           (TRACE_TARGET_RATIO - 1) * 100, tworst <= TRACE_TARGET_RATIO ? "met" : "NOT met",
           tworst, tworst_ns);
    printf("  plan target (the shim following a plan, at most +%.0f%% per launch): %s (worst "
           "%.2fx, %+.1f ns)\n", (TARGET_RATIO - 1) * 100, pworst <= TARGET_RATIO ? "met" :
           "NOT met", pworst, pworst_ns);
    report_own(runs, 0);
    report_own(runs, 1);
}

/* A fresh trace file name for a recording child (removed after each run). */
static const char *trace_path(char *buf, size_t len)
{
    snprintf(buf, len, "/tmp/elixir-bench-shim-launch-%d.trace", (int)getpid());
    unlink(buf);
    return buf;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "run") == 0)
        return child();
    const char *shim;
    char self[PATH_MAX];
    if (bench_find_shim_and_self("shim_launch", argv[0], &shim, self) < 0)
        return 1;
    if (bench_pin_to_one_cpu() < 0)
        fprintf(stderr, "shim_launch: cannot pin to one CPU; figures may be noisier\n");
    static run_t runs[RUNS];
    long long want = (long long)NWIDTHS * (WARM_ROUNDS + ROUNDS) * LAUNCHES;
    long long want_own = want + (long long)NWIDTHS * (OWN_PAIRS + OWN_WARM) * OWN_LAUNCHES;
    char trace[PATH_MAX];
    for (int i = 0; i < RUNS; i++) {
        run_t *r = &runs[i];
        long long a = run_child(self, NULL, "reactive", NULL, r->plain);
        long long b = run_child(self, shim, "reactive", NULL, r->shim);
        long long c = run_child(self, shim, "reactive", trace_path(trace, sizeof(trace)),
                                r->traced);
        int recorded = access(trace, F_OK) == 0, own = 1;
        unlink(trace);
        long long d = run_child(self, shim, "plan", NULL, r->planned);
        for (int w = 0; w < NWIDTHS; w++)
            own &= r->shim[NWIDTHS + w] > 0 && r->planned[NWIDTHS + w] > 0;
        if (!own) {
            fprintf(stderr, "shim_launch: the preloaded child found no driver function of its "
                            "own to compare the wrapper with\n");
            return 1;
        }
        if (a != -2 || b != want_own || c != want || d != want_own || !recorded) {
            fprintf(stderr, "shim_launch: a child failed or the shim was not where expected: "
                            "plain child saw %lld shim launches (want -2: no shim), preloaded "
                            "child %lld (want %lld), recording child %lld (want %lld), planned "
                            "child %lld (want %lld), trace %s\n", a, b, want_own, c, want, d,
                            want_own, recorded ? "written" : "missing");
            return 1;
        }
    }
    report(runs);
    return 0;
}
