/* SPDX-License-Identifier: MIT */
/*
 * shim_res_meminfo.c - cuMemGetInfo under libelixir.so: the virtual capacity (GPU budget plus
 * host budget) by default, the device's own figures with ELIXIR_MEMINFO=physical.
 *
 * The scenario prints cuMemGetInfo at start, after allocating 4 MiB, 8 MiB more and 256 bytes,
 * and after freeing the two large buffers, checking each time that a NULL free or total pointer
 * is allowed and the other still answered.  The test runs it under the shim seven times:
 *  - ELIXIR_GPU_MEMORY=8M ELIXIR_HOST_MEMORY=16M: total is 24 MiB throughout, and free is
 *    total less the chunks in use (the small allocation takes a whole 2 MiB chunk);
 *  - ELIXIR_GPU_MEMORY=auto: total is the automatic capacity (the device's free memory less
 *    a reserve of 10% of it, at least 64 MiB, plus half the memory the process may use:
 *    shim/sysmem.c's figure, shared by the processes a launcher says run here), and free
 *    equals it at start;
 *  - LOCAL_WORLD_SIZE=4: the automatic host budget is a quarter of that (and LOCAL_WORLD_SIZE
 *    =four is reported once and ignored);
 *  - ELIXIR_HOST_MEMORY=1000T: more than the process may use, reported once, and the
 *    program stops;
 *  - ELIXIR_GPU_MEMORY=50% with a 16 MiB host budget: total is half the device plus 16 MiB;
 *  - ELIXIR_MEMINFO=physical with an 8 MiB GPU budget: total is the device's, as this process
 *    reads it from the simulator without the shim, and free falls by the GPU memory the shim
 *    holds: 4 MiB, then 8 MiB (the budget: the rest went to host memory).
 */
#include "shim_test.h"
#include "simtest.h"
#include "../shim/sysmem.h"

#define MIB ((size_t)1 << 20)
#define STEPS 5

/* Print free and total; each asked for alone (the other pointer NULL, which the driver allows)
 * must be the same. */
static void print_info(void)
{
    size_t free_b = 0, total = 0, free_alone = 0, total_alone = 0;

    CHECK_CU(cuMemGetInfo(&free_b, &total));
    CHECK_CU(cuMemGetInfo(&free_alone, NULL));
    CHECK_CU(cuMemGetInfo(NULL, &total_alone));
    CHECK_CU(cuMemGetInfo(NULL, NULL));
    EXPECT(free_alone == free_b && total_alone == total, "alone: free %zu, total %zu; "
           "together: %zu, %zu", free_alone, total_alone, free_b, total);
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

#define CHUNK (2 * MIB)        /* the simulator's allocation granularity */

static unsigned long long chunks_of(unsigned long long bytes)
{
    return bytes / CHUNK * CHUNK;
}

/* The automatic budgets, as docs/options.md states them: the device's free memory less a
 * reserve of 10% of the device (at least 64 MiB), and half the memory the process may use,
 * shared by the processes its launcher says run here; each whole chunks. */
static void check_auto(size_t phys_free, size_t phys_total)
{
    static const char *const env[] = { "ELIXIR_GPU_MEMORY=auto", NULL };
    unsigned long long free_b[STEPS], total[STEPS];
    unsigned long long reserve = phys_total / 10 > 64 * MIB ? phys_total / 10 : 64 * MIB;
    const char *from;
    unsigned long long ram = shim_host_memory() / shim_local_processes(&from);
    unsigned long long want = chunks_of(phys_free - reserve) + chunks_of(ram / 2);

    run(env, free_b, total);
    EXPECT(total[0] == want && free_b[0] == total[0] && total[4] == total[0],
           "automatic budgets: free %llu, total %llu; expected %llu (device %zu free of %zu)",
           free_b[0], total[0], want, phys_free, phys_total);
    printf("automatic: total %llu MiB, the device's free memory less the reserve plus half "
           "the memory the process may use\n", total[0] / MIB);
}

/* The automatic host budget of one of four processes on the machine (LOCAL_WORLD_SIZE=4, as
 * torchrun says it), and with a value that is no count (reported once, and ignored). */
static void check_local(void)
{
    static const char *const four[] = { "ELIXIR_GPU_MEMORY=8M", "LOCAL_WORLD_SIZE=4", NULL };
    static const char *const bad[] = { "ELIXIR_GPU_MEMORY=8M", "LOCAL_WORLD_SIZE=four", NULL };
    unsigned long long free_b[STEPS], total[STEPS];
    unsigned long long mem = shim_host_memory();

    run(four, free_b, total);
    EXPECT(total[0] == 8 * MIB + chunks_of(mem / 4 / 2), "LOCAL_WORLD_SIZE=4: total %llu, "
           "expected 8 MiB and half of a quarter of %llu", total[0], mem);
    sh_run_t r = sh_run_ok("scenario", bad);
    EXPECT(sscanf(r.out, "%llu %llu", &free_b[0], &total[0]) == 2, "output:\n%s", r.out);
    EXPECT(total[0] == 8 * MIB + chunks_of(mem / 2), "LOCAL_WORLD_SIZE=four: total %llu, "
           "expected 8 MiB and half of %llu", total[0], mem);
    EXPECT(sh_count(r.err, "LOCAL_WORLD_SIZE=\"four\" is not a number of processes") == 1,
           "LOCAL_WORLD_SIZE=four was not reported once:\n%s", r.err);
    sh_run_free(&r);
    printf("four processes here: the host budget is half of a quarter of the memory\n");
}

/* A host budget beyond the memory the process may use stops the program, naming the option
 * and what the process may use. */
static void check_host_too_big(void)
{
    static const char *const env[] = { "ELIXIR_GPU_MEMORY=8M", "ELIXIR_HOST_MEMORY=1000T",
                                       "LOCAL_WORLD_SIZE=1", NULL };
    sh_run_t r = sh_run("scenario", 1, env);

    EXPECT(r.status == 1 && !r.out[0], "ELIXIR_HOST_MEMORY=1000T: exit %d, output \"%s\"",
           r.status, r.out);
    EXPECT(sh_count(r.err, "elixir: error: ELIXIR_HOST_MEMORY=\"1000T\" asks for 1000.0 TiB "
                           "(1099511627776000 bytes) of pinned host memory, more than the ") ==
                   1 &&
               strstr(r.err, "the program stops (exit status 1)"),
           "the host budget beyond memory was not reported once:\n%s", r.err);
    sh_run_free(&r);
    printf("1000T of host budget: the program stops\n");
}

/* A GPU budget as a percentage of the device. */
static void check_percent(size_t phys_total)
{
    static const char *const env[] = { "ELIXIR_GPU_MEMORY=50%", "ELIXIR_HOST_MEMORY=16M",
                                       NULL };
    unsigned long long free_b[STEPS], total[STEPS];
    unsigned long long want = chunks_of(phys_total / 2) + 16 * MIB;

    run(env, free_b, total);
    EXPECT(total[0] == want, "ELIXIR_GPU_MEMORY=50%%: total %llu, expected %llu", total[0],
           want);
    printf("50%%: total %llu MiB, half the device plus 16 MiB\n", total[0] / MIB);
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

    sh_scenario_child(argc, argv, scenario);
    st_setup(0);
    CHECK_CU(cuMemGetInfo(&phys_free, &phys_total));
    check_virtual();
    check_auto(phys_free, phys_total);
    check_local();
    check_host_too_big();
    check_percent(phys_total);
    check_physical(phys_free, phys_total);
    return 0;
}
