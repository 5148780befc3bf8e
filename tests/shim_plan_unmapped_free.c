/* SPDX-License-Identifier: MIT */
/*
 * shim_plan_unmapped_free.c - memory freed while the plan's evictions still copy it out.
 *
 * With ELIXIR_PLAN_UNMAP=1 an eviction whose GPU memory a prefetch wants completes ahead of
 * its copy (its chunk goes to host memory, unmapped; the copy still writes that host memory
 * through its shadow mapping).  The program then frees the buffers with cuMemFreeAsync on its
 * stream, right after an iteration's launches (the plan's moves for the next iteration issued,
 * their copies running), and allocates and fills as much again, more than the GPU holds, so
 * that host memory is taken again at once (the freed chunks' host memory first) and the
 * reactive engine evicts into it.  Host memory that a copy still writes must not be handed
 * out until the copy completed: the free of such a chunk waits for the copy (the statistics
 * count it: some must, or the test does not reach the case).  Without the wait the memory
 * goes to a new buffer beyond the GPU, whose memset the race checker finds unordered with the
 * late copy into the same physical memory; and the new buffers must hold what was written.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define NBUF 8
#define WORDS (4 * SH_MIB / 4)
#define ITERS 6
#define NAGAIN 12               /* (48 MiB: beyond the GPU, host memory taken at once) */

static CUfunction add;
static CUstream s;

static void launches(const CUdeviceptr *buf, uint32_t base)
{
    for (int i = 0; i < NBUF; i++) {
        uint64_t n = WORDS;
        uint32_t v = base + (uint32_t)i;
        void *args[] = { (void *)&buf[i], &n, &v };
        CHECK_CU(sh_launch(add, s, args));
    }
}

static void scenario(void)
{
    CUdeviceptr buf[NBUF], again[NAGAIN];
    uint32_t *host = malloc(WORDS * 4);
    st_setup(0);
    add = st_function(sh_res_ptx, "sh_add");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < NBUF; i++) {
        CHECK_CU(cuMemAlloc(&buf[i], WORDS * 4));
        CHECK_CU(cuMemsetD32Async(buf[i], 0, WORDS, s));
    }
    for (int it = 0; it < ITERS; it++) {
        launches(buf, 1);
        CHECK_CU(cuStreamSynchronize(s));
    }
    for (int i = 0; i < NBUF; i++) {   /* (each buffer freed after its last use) */
        uint64_t n = WORDS;
        uint32_t v = 1 + (uint32_t)i;
        void *args[] = { &buf[i], &n, &v };
        CHECK_CU(sh_launch(add, s, args));
        CHECK_CU(cuMemFreeAsync(buf[i], s));
    }
    for (int i = 0; i < NAGAIN; i++) {
        CHECK_CU(cuMemAlloc(&again[i], WORDS * 4));
        CHECK_CU(cuMemsetD32Async(again[i], 7, WORDS, s));
    }
    launches(again, 100);
    CHECK_CU(cuStreamSynchronize(s));
    for (int i = 0; i < NAGAIN; i++) {
        uint32_t want = 7u + (i < NBUF ? 100u + (uint32_t)i : 0);
        CHECK_CU(cuMemcpyDtoH(host, again[i], WORDS * 4));
        for (uint64_t w = 0; w < WORDS; w++)
            if (host[w] != want) {
                fprintf(stderr, "buffer %d word %llu: %u, expected %u\n", i,
                        (unsigned long long)w, host[w], want);
                exit(1);
            }
        CHECK_CU(cuMemFree(again[i]));
    }
    CHECK_CU(cuStreamDestroy(s));
    free(host);
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    /* (a slow device-to-host link: the evictions' copies outlast the program's frees) */
    const char *env[] = { "ELIXIR_POLICY=plan", "ELIXIR_STATS=1", "ELIXIR_GPU_MEMORY=16M",
                          "ELIXIR_PLAN_UNMAP=1", "ELIXIR_SIM_HOST_VMM=1",
                          "ELIXIR_SIM_PCIE_D2H_GBPS=1", NULL };
    sh_run_t r = sh_run_ok("scenario", env);
    const char *ahead = strstr(r.err, "done ahead of their copies ");
    char *end = NULL;
    long early = ahead ? strtol(ahead + strlen("done ahead of their copies "), &end, 10) : -1;
    long freed = end && strncmp(end, ", ", 2) == 0 ? strtol(end + 2, &end, 10) : -1;
    printf("%ld evictions done ahead of their copies, %ld freed as their copy ran\n", early,
           freed);
    EXPECT(early > 0, "evictions complete ahead of their copies:\n%s", r.err);
    EXPECT(freed > 0 && end && strncmp(end, " freed as their copy ran", 24) == 0,
           "chunks freed while their eviction's copy ran, the free waiting for it:\n%s", r.err);
    sh_run_free(&r);
    printf("the new buffers hold what was written\n");
    return 0;
}
