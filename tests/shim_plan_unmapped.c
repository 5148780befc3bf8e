/* SPDX-License-Identifier: MIT */
/*
 * shim_plan_unmapped.c - the plan's evictions leave memory whose every use the shim saw
 * unmapped (ELIXIR_PLAN_UNMAP=1), and whatever reaches such memory maps it first.
 *
 * A loop of identical iterations (sh_add over eight 4 MiB buffers in turn, a host
 * synchronisation) runs under ELIXIR_POLICY=plan with a GPU budget of half the buffers, so the
 * plan evicts and prefetches every iteration.  Then, with the plan at work and some buffers
 * evicted (unmapped):
 *  - a device-to-host copy reads every buffer (a copy reaches unmapped chunks: mapped back);
 *  - right after an iteration's launches, its evictions' copies issued, a graph launch adds
 *    to every buffer through pointers it loads from a table in device memory (add_via: the
 *    shim sees only the table): the moves in flight are settled and every unmapped chunk is
 *    mapped back before it runs, or its kernels would fault or race with the copies;
 *  - a graph launch adds to every buffer (an operation the shim cannot see into: every chunk is
 *    exposed and every unmapped one mapped back before it runs);
 *  - more iterations run (nothing is unmapped any more: every chunk is exposed);
 * and every buffer holds exactly what the sums say.  On the simulator an access to an unmapped
 * address faults, so a chunk left unmapped under any of these fails the run; the race checker
 * fails it on any race.  The log must say that evictions left chunks unmapped and that the
 * graph launch mapped some back, and that evictions completed ahead of their copies (the
 * prefetch taking the GPU memory waits for the copy on the device); with ELIXIR_PLAN_UNMAP=0,
 * and by default without an NVMe tier, none is left unmapped.  Last, on a device without host VMM (ELIXIR_SIM_HOST_VMM=0),
 * where every evicted chunk is unmapped in a pinned host piece, the plan must prefetch and
 * evict, and the sums must hold again.
 *
 * Map-back refused (`mapfail`): with some buffers unmapped, the simulator is told
 * (sim_vmm_fail) to refuse cuMemMap at one buffer's address after another while a copy reads
 * that buffer.  A copy whose unmapped chunk cannot be mapped back must return
 * CUDA_ERROR_OUT_OF_MEMORY without being enqueued (it would fault on the unmapped address);
 * then a graph launch (an operation the shim cannot see into, which maps every unmapped chunk
 * back) with the same chunk refused again must be refused too.  Once the driver maps again,
 * the same copy and graph launch succeed and every buffer holds what its sums say.
 *
 * Batched copies (`batch`): in the iterations after the plan is made, cuMemcpyBatchAsync
 * copies a buffer to pinned memory between two of the iteration's launches, before the
 * launch that reaches it, with CU_MEMCPY_SRC_ACCESS_ORDER_ANY: the simulator reads such a
 * source at the call, so a read of memory that a move of the plan still writes is reported by
 * the race checker; the copy must read what the sums say, evictions left mapped and unmapped.
 * (Here the plan's moves of that buffer have completed by the call, so the host's wait for
 * moves in flight before a batched copy, res_flights_wait_for, is not reached.)
 */
#define SH_RES_KERNELS
#define ST_KERNEL_ADD_VIA
#include "shim_test.h"

#define NBUF 8
#define WORDS (4 * SH_MIB / 4)
#define ITERS 8
#define AFTER 4

static CUfunction add;
static CUstream s;

/* An iteration's launches, then (`sync`) a host synchronisation. */
static void launches(CUdeviceptr *buf, int sync)
{
    for (int i = 0; i < NBUF; i++) {
        uint64_t n = WORDS;
        uint32_t v = (uint32_t)i + 1;
        void *args[] = { &buf[i], &n, &v };
        CHECK_CU(sh_launch(add, s, args));
    }
    if (sync)
        CHECK_CU(cuStreamSynchronize(s));
}

static void iteration(CUdeviceptr *buf)
{
    launches(buf, 1);
}

/* The scenarios' start: sh_add, the stream, and the buffers zeroed (want[i] = 0). */
static void start(CUdeviceptr *buf, uint32_t *want)
{
    st_setup(0);
    add = st_function(sh_res_ptx, "sh_add");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    for (int i = 0; i < NBUF; i++) {
        CHECK_CU(cuMemAlloc(&buf[i], WORDS * 4));
        CHECK_CU(cuMemsetD32(buf[i], 0, WORDS));
        want[i] = 0;
    }
}

/* A graph of sh_add(buf[i], WORDS, v) for every buffer, captured on s: *g and its instance. */
static CUgraphExec graph_add(CUdeviceptr *buf, uint32_t v, CUgraph *g)
{
    CUgraphExec ge;
    uint64_t n = WORDS;
    CHECK_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int i = 0; i < NBUF; i++) {
        void *args[] = { &buf[i], &n, &v };
        CHECK_CU(sh_launch(add, s, args));
    }
    CHECK_CU(cuStreamEndCapture(s, g));
    CHECK_CU(cuGraphInstantiate(&ge, *g, 0));
    return ge;
}

/* A graph of add_via(table + 8 i, WORDS, v) for every buffer i, captured on its own stream. */
static CUgraphExec graph_via(CUdeviceptr table, uint32_t v)
{
    CUstream cs;
    CUgraph g;
    CUgraphExec ge;
    CUfunction via = st_function(ST_PTX_HEADER ST_PTX_ADD_VIA, "add_via");
    CHECK_CU(cuStreamCreate(&cs, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamBeginCapture(cs, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    for (int i = 0; i < NBUF; i++) {
        CUdeviceptr pp = table + 8 * (CUdeviceptr)i;
        uint64_t n = WORDS;
        void *args[] = { &pp, &n, &v };
        CHECK_CU(sh_launch(via, cs, args));
    }
    CHECK_CU(cuStreamEndCapture(cs, &g));
    CHECK_CU(cuGraphInstantiate(&ge, g, 0));
    CHECK_CU(cuGraphDestroy(g));
    CHECK_CU(cuStreamDestroy(cs));
    return ge;
}

/* Every word of buf[i] must be `want`. */
static void check(CUdeviceptr *buf, const uint32_t *want, uint32_t *host)
{
    for (int i = 0; i < NBUF; i++) {
        CHECK_CU(cuMemcpyDtoH(host, buf[i], WORDS * 4));
        for (uint64_t w = 0; w < WORDS; w++)
            if (host[w] != want[i]) {
                fprintf(stderr, "buffer %d word %llu: %u, expected %u\n", i,
                        (unsigned long long)w, host[w], want[i]);
                exit(1);
            }
    }
}

static void scenario(void)
{
    CUdeviceptr buf[NBUF];
    uint32_t want[NBUF], *host = malloc(WORDS * 4);
    start(buf, want);
    CUdeviceptr table;
    CHECK_CU(cuMemAlloc(&table, sizeof(buf)));
    CHECK_CU(cuMemcpyHtoD(table, buf, sizeof(buf)));
    CUgraphExec via = graph_via(table, 1000);
    for (int it = 0; it < ITERS; it++)
        iteration(buf);
    for (int i = 0; i < NBUF; i++)
        want[i] += ITERS * ((uint32_t)i + 1);
    check(buf, want, host);

    /* Through pointers in device memory, while the iteration's evictions still copy. */
    iteration(buf);                     /* (the plan evicts again: some chunks unmapped) */
    launches(buf, 0);
    CHECK_CU(cuGraphLaunch(via, s));
    CHECK_CU(cuStreamSynchronize(s));
    for (int i = 0; i < NBUF; i++)
        want[i] += 2 * ((uint32_t)i + 1) + 1000;
    check(buf, want, host);
    CHECK_CU(cuGraphExecDestroy(via));

    /* A graph that adds 100 to every buffer: its launch reaches what the shim cannot see. */
    CUgraph g;
    iteration(buf);                     /* (the plan evicts again: some chunks unmapped) */
    CUgraphExec ge = graph_add(buf, 100, &g);
    CHECK_CU(cuGraphLaunch(ge, s));
    CHECK_CU(cuStreamSynchronize(s));
    for (int it = 0; it < AFTER; it++)
        iteration(buf);
    for (int i = 0; i < NBUF; i++)
        want[i] += (AFTER + 1) * ((uint32_t)i + 1) + 100;
    check(buf, want, host);
    CHECK_CU(cuGraphExecDestroy(ge));
    CHECK_CU(cuGraphDestroy(g));
    free(host);
}

/* cuMemcpyDtoH of buffer i with cuMemMap refused at its address: the result, and in *taken
 * whether the refusal was used (a mapping call at that address came). */
static CUresult copy_refused(CUdeviceptr *buf, int i, uint32_t *host, int *taken)
{
    EXPECT(sim_vmm_fail("cuMemMap", buf[i], CUDA_ERROR_OUT_OF_MEMORY) == 0, "sim_vmm_fail");
    CUresult r = cuMemcpyDtoH(host, buf[i], WORDS * 4);
    *taken = !sim_vmm_fail("cuMemMap", 0, CUDA_SUCCESS);
    return r;
}

static void mapfail(void)
{
    CUdeviceptr buf[NBUF];
    uint32_t want[NBUF], *host = malloc(WORDS * 4);
    start(buf, want);
    for (int i = 0; i < NBUF; i++)
        want[i] = ITERS * ((uint32_t)i + 1);
    for (int it = 0; it < ITERS; it++)
        iteration(buf);

    /* A graph that adds 100 to every buffer, captured before any refusal. */
    CUgraph g;
    CUgraphExec ge = graph_add(buf, 100, &g);

    iteration(buf);                     /* (the plan evicts again: some chunks unmapped) */
    for (int i = 0; i < NBUF; i++)
        want[i] += (uint32_t)i + 1;
    int refused = -1, taken;
    for (int i = 0; i < NBUF && refused < 0; i++) {
        CUresult r = copy_refused(buf, i, host, &taken);
        if (r == CUDA_ERROR_OUT_OF_MEMORY && taken) {
            refused = i;
            break;
        }
        EXPECT(r == CUDA_SUCCESS, "copy of buffer %d: CUresult %d", i, (int)r);
        for (uint64_t w = 0; w < WORDS; w++)
            EXPECT(host[w] == want[i], "buffer %d word %llu: %u, expected %u", i,
                   (unsigned long long)w, host[w], want[i]);
    }
    EXPECT(refused >= 0, "a copy of an unmapped buffer whose map-back fails is refused");
    printf("copy of buffer %d refused\n", refused);

    EXPECT(sim_vmm_fail("cuMemMap", buf[refused], CUDA_ERROR_OUT_OF_MEMORY) == 0,
           "sim_vmm_fail");
    CUresult r = cuGraphLaunch(ge, s);
    taken = !sim_vmm_fail("cuMemMap", 0, CUDA_SUCCESS);
    EXPECT(r == CUDA_ERROR_OUT_OF_MEMORY && taken,
           "a graph launch while a chunk cannot be mapped back is refused: CUresult %d", (int)r);
    printf("graph launch refused\n");

    CHECK_CU(cuCtxSynchronize());       /* (the context goes on working) */
    CHECK_CU(cuMemcpyDtoH(host, buf[refused], WORDS * 4));
    CHECK_CU(cuGraphLaunch(ge, s));
    CHECK_CU(cuStreamSynchronize(s));
    iteration(buf);
    for (int i = 0; i < NBUF; i++)
        want[i] += 100 + (uint32_t)i + 1;
    check(buf, want, host);
    CHECK_CU(cuGraphExecDestroy(ge));
    CHECK_CU(cuGraphDestroy(g));
    free(host);
}

static void batch(void)
{
    CUdeviceptr buf[NBUF];
    uint32_t want[NBUF], *pinned;
    start(buf, want);
    CHECK_CU(cuMemHostAlloc((void **)&pinned, WORDS * 4, 0));
    CUmemcpyAttributes attr;
    memset(&attr, 0, sizeof(attr));
    attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_ANY;
    for (int it = 0; it < ITERS + AFTER; it++) {
        if (it < ITERS) {
            iteration(buf);
            for (int i = 0; i < NBUF; i++)
                want[i] += (uint32_t)i + 1;
            continue;
        }
        /* Half the iteration's launches, then a copy of the buffer the next launch reaches
         * (no work of the stream since the last synchronisation touches it: ANY's promise). */
        for (int i = 0; i < NBUF; i++) {
            uint64_t n = WORDS;
            uint32_t v = (uint32_t)i + 1;
            void *args[] = { &buf[i], &n, &v };
            if (i == NBUF / 2) {
                CUdeviceptr dst = (CUdeviceptr)(uintptr_t)pinned, src = buf[NBUF / 2];
                size_t size = WORDS * 4, idx = 0;
                CHECK_CU(cuMemcpyBatchAsync(&dst, &src, &size, 1, &attr, &idx, 1, s));
                CHECK_CU(cuStreamSynchronize(s));
                for (uint64_t w = 0; w < WORDS; w++)
                    EXPECT(pinned[w] == want[NBUF / 2], "iteration %d, word %llu: %u, "
                           "expected %u", it, (unsigned long long)w, pinned[w], want[NBUF / 2]);
            }
            CHECK_CU(sh_launch(add, s, args));
            want[i] += v;
        }
        CHECK_CU(cuStreamSynchronize(s));
    }
    CHECK_CU(cuMemFreeHost(pinned));
}

/* The count before `key` in the plan's statistics line, or -1. */
static long count_before(const char *err, const char *key)
{
    const char *line = strstr(err, "plan: "), *p = line ? strstr(line, key) : NULL;
    while (p && p > line && p[-1] == ' ')
        p--;
    while (p && p > line && p[-1] >= '0' && p[-1] <= '9')
        p--;
    return p ? strtol(p, NULL, 10) : -1;
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    if (argc > 1 && strcmp(argv[1], "mapfail") == 0) {
        mapfail();
        exit(0);
    }
    if (argc > 1 && strcmp(argv[1], "batch") == 0) {
        batch();
        exit(0);
    }
    const char *on[] = { "ELIXIR_POLICY=plan", "ELIXIR_STATS=1", "ELIXIR_GPU_MEMORY=16M",
                         "ELIXIR_PLAN_UNMAP=1", "ELIXIR_SIM_HOST_VMM=1", NULL };
    sh_run_t r = sh_run_ok("scenario", on);
    long out = count_before(r.err, " left unmapped"), back = count_before(r.err, " mapped back");
    const char *ahead = strstr(r.err, "done ahead of their copies ");
    long early = ahead ? strtol(ahead + strlen("done ahead of their copies "), NULL, 10) : -1;
    printf("unmapping on: %ld evictions left chunks unmapped (%ld ahead of their copies), %ld "
           "mapped back\n", out, early, back);
    EXPECT(out > 0, "the plan's evictions leave chunks unmapped:\n%s", r.err);
    EXPECT(early > 0, "evictions complete ahead of their copies:\n%s", r.err);
    EXPECT(back > 0, "the copies and the graph launch map chunks back:\n%s", r.err);
    sh_run_free(&r);

    /* Off, and by default (auto) without an NVMe tier. */
    const char *off[] = { "ELIXIR_POLICY=plan", "ELIXIR_STATS=1", "ELIXIR_GPU_MEMORY=16M",
                          "ELIXIR_PLAN_UNMAP=0", "ELIXIR_SIM_HOST_VMM=1", NULL };
    const char *dflt[] = { "ELIXIR_POLICY=plan", "ELIXIR_STATS=1", "ELIXIR_GPU_MEMORY=16M",
                           "ELIXIR_PLAN_UNMAP=auto", "ELIXIR_SIM_HOST_VMM=1", NULL };
    const char *const *envs[] = { off, dflt };
    for (int i = 0; i < 2; i++) {
        r = sh_run_ok("scenario", envs[i]);
        out = count_before(r.err, " left unmapped");
        printf("unmapping %s: %ld evictions left chunks unmapped\n", i ? "auto" : "off", out);
        EXPECT(out == 0, "%s leaves nothing unmapped:\n%s",
               i ? "the default without an NVMe tier" : "ELIXIR_PLAN_UNMAP=0", r.err);
        sh_run_free(&r);
    }

    /* A device whose host memory does not map: every evicted chunk is unmapped, and the plan
     * moves chunks between its address and pinned host pieces. */
    const char *novmm[] = { "ELIXIR_POLICY=plan", "ELIXIR_STATS=1", "ELIXIR_GPU_MEMORY=16M",
                            "ELIXIR_SIM_HOST_VMM=0", NULL };
    r = sh_run_ok("scenario", novmm);
    const char *line = strstr(r.err, "plan: "), *pre = line ? strstr(line, "prefetches ") : NULL;
    const char *evs = pre ? strstr(pre, "evictions ") : NULL;
    long in = pre ? strtol(pre + strlen("prefetches "), NULL, 10) : -1;
    long ev = evs ? strtol(evs + strlen("evictions "), NULL, 10) : -1;
    printf("no host VMM: %ld prefetches, %ld evictions by the plan\n", in, ev);
    EXPECT(in > 0 && ev > 0, "the plan moves chunks without host VMM:\n%s", r.err);
    sh_run_free(&r);

    /* The driver refusing to map a chunk back. */
    r = sh_run_ok("mapfail", on);
    fputs(r.out, stdout);
    EXPECT(strstr(r.err, "could not be mapped back"), "the refusals are logged:\n%s", r.err);
    sh_run_free(&r);

    /* Batched copies reading out of stream order, evictions unmapped and mapped. */
    const char *const *bat[] = { on, off };
    for (int i = 0; i < 2; i++) {
        r = sh_run_ok("batch", bat[i]);
        sh_run_free(&r);
    }
    printf("every buffer holds what its sums say, with and without unmapping, with and without "
           "host VMM, after map-backs refused and in batched copies\n");
    return 0;
}
