/* SPDX-License-Identifier: MIT */
/*
 * shim_res_meminfo.c - cuMemGetInfo under libelixir.so: the virtual capacity (GPU budget plus
 * host budget) by default, the device's own figures with ELIXIR_MEMINFO=physical.
 *
 * The scenario prints cuMemGetInfo at start, after allocating 4 MiB, 8 MiB more and 256 bytes,
 * and after freeing the two large buffers.  The test runs it under the shim three times:
 *  - ELIXIR_GPU_MEMORY=8M ELIXIR_HOST_MEMORY=16M: total is 24 MiB throughout, and free is
 *    total less the chunks in use (the small allocation takes a whole 2 MiB chunk);
 *  - no budget options: total is the automatic capacity, larger than the device itself (the
 *    host budget is added), and free equals it at start;
 *  - ELIXIR_MEMINFO=physical with an 8 MiB GPU budget: total is the device's, as this process
 *    reads it from the simulator without the shim, and free falls by the GPU memory the shim
 *    holds: 4 MiB, then 8 MiB (the budget: the rest went to host memory).
 */
#include "shim_test.h"
#include "simtest.h"

#define MIB ((size_t)1 << 20)
#define STEPS 5

static void print_info(void)
{
    size_t free_b = 0, total = 0;

    CHECK_CU(cuMemGetInfo(&free_b, &total));
    printf("%zu %zu\n", free_b, total);
}

static void scenario(void)
{
    CUdeviceptr a, b, c;

    st_setup(0);
    print_info();
    CHECK_CU(cuMemAlloc(&a, 4 * MIB));
    print_info();
    CHECK_CU(cuMemAlloc(&b, 8 * MIB));
    print_info();
    CHECK_CU(cuMemAlloc(&c, 256));
    print_info();
    CHECK_CU(cuMemFree(a));
    CHECK_CU(cuMemFree(b));
    print_info();
    CHECK_CU(cuMemFree(c));
}

/* Run the scenario under the shim with env; parse its STEPS (free, total) lines. */
static void run(const char *const *env, unsigned long long free_b[STEPS],
                unsigned long long total[STEPS])
{
    sh_run_t r = sh_run_ok("scenario", env);
    const char *p = r.out;

    for (int i = 0; i < STEPS; i++) {
        EXPECT(sscanf(p, "%llu %llu", &free_b[i], &total[i]) == 2, "line %d of:\n%s", i, r.out);
        p = strchr(p, '\n') + 1;
    }
    sh_run_free(&r);
}

static void expect_steps(const char *mode, const unsigned long long got[STEPS],
                         const unsigned long long want[STEPS])
{
    for (int i = 0; i < STEPS; i++)
        EXPECT(got[i] == want[i], "%s, step %d: %llu MiB, expected %llu MiB", mode, i,
               got[i] / MIB, want[i] / MIB);
}

static void check_virtual(void)
{
    static const char *const env[] = { "ELIXIR_GPU_MEMORY=8M", "ELIXIR_HOST_MEMORY=16M", NULL };
    static const unsigned long long want_free[STEPS] = { 24 * MIB, 20 * MIB, 12 * MIB,
                                                         10 * MIB, 22 * MIB };
    static const unsigned long long want_total[STEPS] = { 24 * MIB, 24 * MIB, 24 * MIB,
                                                          24 * MIB, 24 * MIB };
    unsigned long long free_b[STEPS], total[STEPS];

    run(env, free_b, total);
    expect_steps("virtual, total", total, want_total);
    expect_steps("virtual, free", free_b, want_free);
    printf("virtual: total 24 MiB; free 24, 20, 12, 10, 22 MiB\n");
}

static void check_auto(size_t phys_total)
{
    static const char *const env[] = { "ELIXIR_GPU_MEMORY=auto", NULL };
    unsigned long long free_b[STEPS], total[STEPS];

    run(env, free_b, total);
    EXPECT(total[0] > phys_total && free_b[0] == total[0] && total[4] == total[0],
           "automatic budgets: free %llu MiB, total %llu MiB; the device has %zu MiB",
           free_b[0] / MIB, total[0] / MIB, phys_total / MIB);
    printf("automatic: total %llu MiB, above the device's %zu MiB\n", total[0] / MIB,
           phys_total / MIB);
}

static void check_physical(size_t phys_free, size_t phys_total)
{
    static const char *const env[] = { "ELIXIR_GPU_MEMORY=8M", "ELIXIR_MEMINFO=physical", NULL };
    unsigned long long free_b[STEPS], total[STEPS];
    const unsigned long long want_free[STEPS - 1] = { phys_free, phys_free - 4 * MIB,
                                                      phys_free - 8 * MIB, phys_free - 8 * MIB };

    run(env, free_b, total);
    for (int i = 0; i < STEPS; i++)
        EXPECT(total[i] == phys_total, "physical, step %d: total %llu, the device's is %zu", i,
               total[i], phys_total);
    for (int i = 0; i < STEPS - 1; i++)
        EXPECT(free_b[i] == want_free[i], "physical, step %d: free %llu MiB, expected %llu MiB",
               i, free_b[i] / MIB, want_free[i] / MIB);
    EXPECT(free_b[4] >= phys_free - 8 * MIB && free_b[4] <= phys_free,
           "physical, after the frees: %llu MiB free", free_b[4] / MIB);
    printf("physical: the device's %zu MiB; free %zu, -4, -8, -8 MiB\n", phys_total / MIB,
           phys_free / MIB);
}

int main(int argc, char **argv)
{
    size_t phys_free, phys_total;

    if (argc > 1 && strcmp(argv[1], "scenario") == 0) {
        scenario();
        return 0;
    }
    st_setup(0);
    CHECK_CU(cuMemGetInfo(&phys_free, &phys_total));
    check_virtual();
    check_auto(phys_total);
    check_physical(phys_free, phys_total);
    return 0;
}
