/* SPDX-License-Identifier: MIT */
/*
 * shim_alloc.c - what an allocation costs with libelixir.so and without it.
 *
 * This program runs itself as two children, one on the plain simulator (cuMemAlloc served by
 * the simulated driver) and one with LD_PRELOAD=libelixir.so (served from the shim's arena:
 * sub-allocated from shared chunks below the chunk size, backed chunk by chunk with
 * cuMemCreate + cuMemMap above it, where a freed allocation's chunks stay mapped, parked, for
 * the next one at the same address).  Each child times cuMemAlloc + cuMemFree pairs of one size
 * at a time, 256 B to 64 MiB, nothing else live, in rounds of a fixed duration, and reports
 * its best round.  The pair of children runs a few times, alternately, and each figure is the
 * best seen.  The parent prints pairs per second for both and the ratio; it asserts nothing
 * about time.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "simtest.h"

#define NSIZES 6
#define ROUND_NS 50e6               /* each round lasts at least this long */
#define ROUNDS 3
#define PAIRS 3                     /* alternating plain / shim children */

static const size_t sizes[NSIZES] = { 256, 4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20 };

/* Nanoseconds per alloc+free pair of `bytes`, over at least ROUND_NS. */
static double pair_round(size_t bytes)
{
    double t0 = bench_now_ns(), t;
    long n = 0;
    do {
        CUdeviceptr d;
        CHECK_CU(cuMemAlloc(&d, bytes));
        CHECK_CU(cuMemFree(d));
        n++;
    } while ((t = bench_now_ns() - t0) < ROUND_NS);
    return t / (double)n;
}

/* The child: one line "size BYTES NS" per size, its best round, then "frees-seen N". */
static int child(void)
{
    st_setup(0);
    for (int i = 0; i < NSIZES; i++) {
        double best = 0;
        for (int w = 0; w < 3; w++) {                           /* warm-up */
            CUdeviceptr d;
            CHECK_CU(cuMemAlloc(&d, sizes[i]));
            CHECK_CU(cuMemFree(d));
        }
        for (int r = 0; r < ROUNDS; r++) {
            double t = pair_round(sizes[i]);
            best = r == 0 || t < best ? t : best;
        }
        printf("size %zu %.3f\n", sizes[i], best);
    }
    printf("frees-seen %lld\n", bench_shim_calls("cuMemFree_v2"));
    return 0;
}

/* The row of sizes[] that is `bytes`, or -1. */
static int size_row(long long bytes)
{
    for (int i = 0; i < NSIZES; i++)
        if ((long long)sizes[i] == bytes)
            return i;
    return -1;
}

/* Run this program as a child (plain or preloaded) and keep the best ns of each size in
 * best[]; returns the shim's free count the child reported (-2: no shim), -3 on failure. */
static long long run_child(const char *self, const char *shim, double best[NSIZES])
{
    return bench_run_child(self, shim, "", "size", size_row, best);
}

static const char *human(size_t bytes, char *buf, size_t len)
{
    if (bytes >= (1u << 20))
        snprintf(buf, len, "%zu MiB", bytes >> 20);
    else if (bytes >= (1u << 10))
        snprintf(buf, len, "%zu KiB", bytes >> 10);
    else
        snprintf(buf, len, "%zu B", bytes);
    return buf;
}

static void report(const double plain[NSIZES], const double shim[NSIZES])
{
    printf("shim_alloc: cuMemAlloc + cuMemFree pairs of one size, nothing else live,\n  best of "
           "%d rounds of at least %.0f ms x %d runs each\n", ROUNDS, ROUND_NS / 1e6, PAIRS);
    printf("      size |      plain simulator       |     with libelixir.so      | shim/plain\n");
    for (int i = 0; i < NSIZES; i++) {
        char h[32];
        printf("  %8s | %9.1f ns %9.0f /s | %9.1f ns %9.0f /s | %6.2fx time\n",
               human(sizes[i], h, sizeof(h)), plain[i], 1e9 / plain[i], shim[i], 1e9 / shim[i],
               shim[i] / plain[i]);
    }
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "run") == 0)
        return child();
    const char *shim;
    char self[PATH_MAX];
    if (bench_find_shim_and_self("shim_alloc", argv[0], &shim, self) < 0)
        return 1;
    double plain[NSIZES] = { 0 }, with[NSIZES] = { 0 };
    for (int i = 0; i < PAIRS; i++) {
        long long a = run_child(self, NULL, plain), b = run_child(self, shim, with);
        if (a != -2 || b <= 0) {
            fprintf(stderr, "shim_alloc: a child failed or the shim was not where expected: "
                            "plain child saw %lld shim frees (want -2: no shim), preloaded "
                            "child %lld (want > 0)\n", a, b);
            return 1;
        }
    }
    report(plain, with);
    return 0;
}
