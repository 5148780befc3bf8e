/* SPDX-License-Identifier: MIT */
/*
 * shim_res_parked.c - a chunk that falls out of use stays mapped (parked), so that the
 * arena's next use of it costs no driver call; parked chunks are the first to go when room is
 * needed, before any chunk in use is evicted.  With host memory mapped and without it.
 *
 * Under libelixir.so with a 16 MiB GPU budget (eight 2 MiB chunks): the small word `bad`
 * (one slab chunk), L (2 MiB), A (8 MiB, four chunks) and G (2 MiB, after A, so that nothing
 * larger than A fits where A was) are allocated and filled by kernels: seven chunks.  A is
 * freed: cuMemGetInfo counts its 8 MiB free at once, though its chunks stay in GPU memory.
 * Allocating 8 MiB again must return A's address without a
 * single cuMemCreate, cuMemMap, cuMemSetAccess, cuMemUnmap or cuMemRelease (the simulator
 * counts them: sim_vmm_calls), and what a kernel writes there afterwards must read back.  A
 * is freed again and B (10 MiB, five chunks, placed above G) allocated: the one chunk left in
 * the budget and A's four parked chunks make its room, so nothing in use moves (no migration
 * to host memory; L, G and `bad` stay in GPU memory), and A's address is unmapped.
 * All data is checked by kernels at the end.  The statistics (ELIXIR_STATS) must show the
 * four chunks taken back, the four unmapped for room, and a GPU peak within the budget.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define CHUNK (2 * SH_MIB)

static CUfunction fill, verify;
static CUdeviceptr bad;

/* The VMM calls made since `from` (sim_vmm_calls), summed into *total; printed. */
static void calls_since(const sim_vmm_calls_t *from, const char *what, uint64_t *total)
{
    sim_vmm_calls_t now;

    sim_vmm_calls(&now);
    uint64_t c = now.create - from->create, m = now.map - from->map;
    uint64_t s = now.set_access - from->set_access, u = now.unmap - from->unmap;
    uint64_t r = now.release - from->release;
    *total = c + m + s + u + r;
    printf("%s: cuMemCreate %llu, cuMemMap %llu, cuMemSetAccess %llu, cuMemUnmap %llu, "
           "cuMemRelease %llu\n", what, (unsigned long long)c, (unsigned long long)m,
           (unsigned long long)s, (unsigned long long)u, (unsigned long long)r);
}

static void scenario(void)
{
    CUdeviceptr l, a, g, a2, b;
    sim_vmm_calls_t before;
    uint64_t calls;

    sh_res_start(&fill, &verify, &bad);
    sh_alloc_filled(fill, &l, 1, CHUNK, 1, NULL);
    sh_alloc_filled(fill, &a, 1, 8 * SH_MIB, 2, NULL);
    sh_alloc_filled(fill, &g, 1, CHUNK, 5, NULL);
    size_t free0 = sh_free_now();
    CHECK_CU(cuMemFree(a));
    size_t free1 = sh_free_now();
    EXPECT(free1 - free0 == 8 * SH_MIB, "cuMemGetInfo: %zu bytes more free after A's free, "
           "expected %llu", free1 - free0, 8 * SH_MIB);
    EXPECT(sh_where(a) == 'G', "A's first chunk is no longer in GPU memory (%c)", sh_where(a));
    printf("A freed: 8 MiB more free, its memory still mapped\n");

    sim_vmm_calls(&before);
    CHECK_CU(cuMemAlloc(&a2, 8 * SH_MIB));
    calls_since(&before, "8 MiB allocated again", &calls);
    EXPECT(a2 == a, "the new 8 MiB are at 0x%llx, A was at 0x%llx", (unsigned long long)a2,
           (unsigned long long)a);
    EXPECT(calls == 0, "allocating 8 MiB again made %llu VMM calls, expected none",
           (unsigned long long)calls);
    CHECK_CU(sh_fill_async(fill, a2, 8 * SH_MIB / 4, 3, NULL));
    sh_expect_verified(verify, a2, 8 * SH_MIB / 4, 3, bad, "A again");
    printf("A again, at A's address: written and read back\n");

    CHECK_CU(cuMemFree(a2));
    CHECK_CU(cuMemAlloc(&b, 10 * SH_MIB));
    CHECK_CU(sh_fill_async(fill, b, 10 * SH_MIB / 4, 4, NULL));
    EXPECT(sh_where(a) == 'U', "A's parked memory is still mapped (%c) after B took the room",
           sh_where(a));
    EXPECT(b > g, "B at 0x%llx, expected above G at 0x%llx", (unsigned long long)b,
           (unsigned long long)g);
    EXPECT(sh_where(l) == 'G' && sh_where(g) == 'G' && sh_where(bad) == 'G',
           "a chunk in use left GPU memory for B: L %c, G %c, bad %c", sh_where(l),
           sh_where(g), sh_where(bad));
    printf("B allocated: A's parked chunks made its room, L, G and bad stay in GPU memory\n");

    sh_expect_verified(verify, l, CHUNK / 4, 1, bad, "L");
    sh_expect_verified(verify, g, CHUNK / 4, 5, bad, "G");
    sh_expect_verified(verify, b, 10 * SH_MIB / 4, 4, bad, "B");
    printf("L, G and B hold their patterns\n");
    CHECK_CU(cuMemFree(b));
    CHECK_CU(cuMemFree(g));
    CHECK_CU(cuMemFree(l));
    CHECK_CU(cuMemFree(bad));
}

static void run(const char *what, const char *host_vmm)
{
    const char *env[] = { "ELIXIR_GPU_MEMORY=16M", "ELIXIR_STATS=1", host_vmm, NULL };
    sh_run_t r = sh_run_ok("scenario", env);
    long long reused = sh_stat(r.err, "taken back into use ");
    long long dropped = sh_stat(r.err, "unmapped for room ");
    long long moved = sh_stat(r.err, "migrations to host ");
    long long peak = sh_stat(r.err, "GPU peak ");

    printf("%s:\n%s", what, r.out);
    printf("parked chunks taken back %lld, unmapped for room %lld; migrations to host %lld; "
           "GPU peak %lld MiB\n", reused, dropped, moved, peak);
    EXPECT(reused == 4 && dropped == 4, "%s: parked chunks taken back %lld and unmapped %lld, "
           "expected 4 and 4:\n%s", what, reused, dropped, r.err);
    EXPECT(moved == 0, "%s: %lld chunks in use were evicted:\n%s", what, moved, r.err);
    EXPECT(peak >= 0 && peak <= 16, "%s: GPU peak %lld MiB, budget 16:\n%s", what, peak, r.err);
    sh_run_free(&r);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
