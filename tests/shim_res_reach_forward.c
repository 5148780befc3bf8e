/* SPDX-License-Identifier: MIT */
/*
 * shim_res_reach_forward.c - what a kernel's pointer into the middle of an allocation of
 * several chunks brings into GPU memory (ELIXIR_REACH).
 *
 * An allocation A of four 2 MiB chunks is filled (pattern 1) and evicted by filling B, as
 * large, under an 8 MiB GPU budget (the reactive engine).  Then a kernel is given a pointer
 * to A's last chunk only and fills it (pattern 2), and a second kernel, given a pointer to A's
 * last chunk too, reads the 1 MiB before that pointer (in A's third chunk) into C: it reaches
 * back, which kernels rarely do.  The scenario prints where each chunk of A is after the first
 * kernel ('G' GPU memory, 'H' host memory) and whether C and A hold what they should.
 *   - forward (the default): A's last chunk comes in and the three before it stay in host
 *     memory, mapped; the kernel reaching back reads them there, correctly.
 *   - allocation: the whole of A comes in.
 *   - forward where host memory cannot be mapped (ELIXIR_SIM_HOST_VMM=0): the whole of A
 *     comes in, as it must (a chunk left behind would be unmapped).
 * The race checker fails the run on any race.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define CHUNK (2 * SH_MIB)
#define BYTES (4 * CHUNK)
#define BACK (SH_MIB / 4)               /* words read behind the pointer */

/* back_copy(p, n, dst): the n words before p are copied to dst (a kernel reaching back). */
SIM_KERNEL void back_copy(const sim_launch_t *l, void **params)
{
    const uint32_t *p = *(const uint32_t **)params[0];
    uint64_t n = *(uint64_t *)params[1];
    uint32_t *dst = *(uint32_t **)params[2];

    (void)l;
    sim_kernel_access(p - n, n * 4, SIM_ACCESS_READ);
    sim_kernel_access(dst, n * 4, SIM_ACCESS_WRITE);
    for (uint64_t i = 0; i < n; i++)
        dst[i] = p[i - n];
}

static const char back_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry back_copy(.param .u64 p, .param .u64 n, .param .u64 dst)\n{\n ret;\n}\n";

static void scenario(void)
{
    CUfunction fill, verify, back;
    CUdeviceptr bad, a, b, c;
    char where[5] = { 0 };

    sh_res_start(&fill, &verify, &bad);
    back = st_function(back_ptx, "back_copy");
    CHECK_CU(cuMemAlloc(&a, BYTES));
    CHECK_CU(cuMemAlloc(&b, BYTES));
    CHECK_CU(cuMemAlloc(&c, BACK * 4));
    CHECK_CU(sh_fill_async(fill, a, BYTES / 4, 1, NULL));
    CHECK_CU(sh_fill_async(fill, b, BYTES / 4, 3, NULL));
    CUdeviceptr last = a + 3 * CHUNK;
    CHECK_CU(sh_fill_async(fill, last, CHUNK / 4, 2, NULL));
    CHECK_CU(cuCtxSynchronize());
    for (int i = 0; i < 4; i++)
        where[i] = getenv("LD_PRELOAD") ? sh_where(a + (CUdeviceptr)i * CHUNK) : '-';
    printf("where: %s\n", where);
    uint64_t n = BACK;
    void *args[] = { &last, &n, &c };
    CHECK_CU(sh_launch(back, NULL, args));
    uint32_t *host = malloc(BACK * 4);
    EXPECT(host, "out of memory");
    CHECK_CU(cuMemcpyDtoH(host, c, BACK * 4));
    for (uint64_t i = 0, from = 3 * CHUNK / 4 - BACK; i < BACK; i++)
        EXPECT(host[i] == sh_pattern(1, from + i), "word %llu behind the pointer is 0x%08x, "
               "expected 0x%08x", (unsigned long long)i, host[i], sh_pattern(1, from + i));
    free(host);
    printf("the kernel reaching back read pattern 1\n");
    sh_expect_verified(verify, a, 3 * CHUNK / 4, 1, bad, "A's first three chunks");
    sh_expect_verified(verify, last, CHUNK / 4, 2, bad, "A's last chunk");
    printf("A holds patterns 1 and 2\n");
    CHECK_CU(cuMemFree(a));
    CHECK_CU(cuMemFree(b));
    CHECK_CU(cuMemFree(c));
}

static void run(const char *what, const char *reach, const char *host_vmm, const char *want)
{
    const char *env[] = { "ELIXIR_SIM_RACECHECK=fail", "ELIXIR_GPU_MEMORY=8M",
                          "ELIXIR_POLICY=reactive", reach, host_vmm, NULL };
    sh_run_t r = sh_run_ok("scenario", env);
    char line[64];

    snprintf(line, sizeof(line), "where: %s\n", want);
    EXPECT(strstr(r.out, line), "%s: expected '%s', got:\n%s", what, want, r.out);
    EXPECT(strstr(r.out, "the kernel reaching back read pattern 1\n") &&
               strstr(r.out, "A holds patterns 1 and 2\n"),
           "%s: wrong values:\n%s\n%s", what, r.out, r.err);
    printf("%s: A's chunks %s; values right\n", what, want);
    sh_run_free(&r);
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    run("forward", "ELIXIR_REACH=forward", "ELIXIR_SIM_HOST_VMM=1", "HHHG");
    run("allocation", "ELIXIR_REACH=allocation", "ELIXIR_SIM_HOST_VMM=1", "GGGG");
    run("forward without host mapping", "ELIXIR_REACH=forward", "ELIXIR_SIM_HOST_VMM=0",
        "GGGG");
    return 0;
}
