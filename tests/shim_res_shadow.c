/* SPDX-License-Identifier: MIT */
/*
 * shim_res_shadow.c - the memory a migration copies into keeps a shadow mapping of its own,
 * so that later migrations into it need no mapping call but the swap under the chunk's
 * address.  With host memory mapped and without it (where evictions unmap and shadows are
 * not used).
 *
 * Under libelixir.so with the reactive engine (under the plan each verify, which reaches more
 * than the GPU holds, would run in place and nothing would migrate) and an 8 MiB GPU budget
 * (four 2 MiB chunks): A and B, 8 MiB each, are
 * filled by kernels, then used in turn for four rounds, each verifying A (which brings A in
 * and sends B out) and then B: sixteen migrations a round.  In the last round, where every
 * target is memory that received a migration before (the spares), each migration must make
 * exactly one cuMemUnmap, one cuMemMap and one cuMemSetAccess (the swap under the chunk's
 * address) and no cuMemCreate or cuMemRelease: 48 calls for the round, where mapping the
 * target at the staging address would make 96.  Every pattern is checked by a kernel each
 * round.  The statistics must count the migrations copied through a shadow mapping, and
 * none where host memory does not map.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define BUF (8 * SH_MIB)
#define ROUNDS 4

static CUfunction fill, verify;
static CUdeviceptr bad;

static void scenario(void)
{
    const char *vmm = getenv("ELIXIR_SIM_HOST_VMM");
    int mapped = !vmm || strcmp(vmm, "0") != 0;
    CUdeviceptr a, b;

    sh_res_start(&fill, &verify, &bad);
    sh_alloc_filled(fill, &a, 1, BUF, 1, NULL);
    sh_alloc_filled(fill, &b, 1, BUF, 2, NULL);
    for (int r = 0; r < ROUNDS; r++) {
        sim_vmm_calls_t before, after;
        sim_vmm_calls(&before);
        sh_expect_verified(verify, a, BUF / 4, 1, bad, "A");
        sh_expect_verified(verify, b, BUF / 4, 2, bad, "B");
        sim_vmm_calls(&after);
        uint64_t c = after.create - before.create, m = after.map - before.map;
        uint64_t s = after.set_access - before.set_access, u = after.unmap - before.unmap;
        uint64_t rel = after.release - before.release;
        printf("round %d: cuMemCreate %llu, cuMemMap %llu, cuMemSetAccess %llu, cuMemUnmap "
               "%llu, cuMemRelease %llu\n", r, (unsigned long long)c, (unsigned long long)m,
               (unsigned long long)s, (unsigned long long)u, (unsigned long long)rel);
        if (r == ROUNDS - 1 && mapped)
            EXPECT(c == 0 && m == 16 && s == 16 && u == 16 && rel == 0,
                   "the last round's sixteen migrations made %llu, %llu, %llu, %llu and %llu "
                   "VMM calls (create, map, access, unmap, release), expected 0, 16, 16, 16, 0",
                   (unsigned long long)c, (unsigned long long)m, (unsigned long long)s,
                   (unsigned long long)u, (unsigned long long)rel);
    }
    printf("A and B hold their patterns after %d rounds\n", ROUNDS);
    CHECK_CU(cuMemFree(a));
    CHECK_CU(cuMemFree(b));
    CHECK_CU(cuMemFree(bad));
}

static void run(const char *what, const char *host_vmm)
{
    const char *env[] = { "ELIXIR_GPU_MEMORY=8M", "ELIXIR_STATS=1", "ELIXIR_POLICY=reactive",
                          host_vmm, NULL };
    int mapped = strcmp(host_vmm, "ELIXIR_SIM_HOST_VMM=0") != 0;
    sh_run_t r = sh_run_ok("scenario", env);
    long long moved = sh_stat(r.err, "migrations to host ");
    long long shadow = sh_stat(r.err, "copied through a shadow mapping ");

    printf("%s:\n%s", what, r.out);
    printf("migrations to host %lld, copied through a shadow mapping %lld\n", moved, shadow);
    EXPECT(moved >= 8 * ROUNDS, "%s: %lld migrations to host, expected at least %d:\n%s", what,
           moved, 8 * ROUNDS, r.err);
    if (mapped)
        EXPECT(shadow >= 16 * ROUNDS, "%s: %lld migrations through a shadow mapping, expected "
               "at least %d:\n%s", what, shadow, 16 * ROUNDS, r.err);
    else
        EXPECT(shadow == 0, "%s: %lld migrations through a shadow mapping where host memory "
               "does not map:\n%s", what, shadow, r.err);
    sh_run_free(&r);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
