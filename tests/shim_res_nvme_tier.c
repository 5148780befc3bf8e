/* SPDX-License-Identifier: MIT */
/*
 * shim_res_nvme_tier.c - the NVMe tier behind host memory: a footprint beyond the GPU and
 * host budgets runs with the same transcript as without the shim, chunks going to NVMe and
 * coming back; an allocation an opaque kernel reached stays in mapped host memory; frees give
 * the slots back; an injected write fault loses nothing, degrades the tier with one log line,
 * and allocations beyond the remaining tiers fail with CUDA_ERROR_OUT_OF_MEMORY.
 *
 * The scenario (8 MiB GPU budget, 8 MiB host budget, 64 MiB of NVMe in a scratch directory):
 *  1. buffer H (4 MiB) is filled, then a kernel without parameter information adds 1 to it
 *     through a pointer the shim never sees: H is exposed;
 *  2. ten 4 MiB buffers are filled (40 MiB more: the host budget overflows to NVMe);
 *  3. every buffer is checked by a kernel and by cuMemcpyDtoH (those on NVMe come back);
 *  4. a kernel whose visible argument is buffer 0 also adds 1 to H through the hidden
 *     pointer: had H gone to NVMe its address would be unmapped and the simulator would fault;
 *  5. everything is freed.
 * Its transcript must equal the run without the shim; the statistics must show chunks
 * written to and read back from NVMe, and no slot used at exit; the same again where the
 * device cannot map host memory (ELIXIR_SIM_HOST_VMM=0: host chunks are pieces, unmapped).  With
 * requests of 512 KiB (four per chunk) and ELIXIR_NVME_FAULT=write:10:eio (the second piece
 * of the third chunk written, after its first went) the scenario "fill until out of memory"
 * must stop with
 * CUDA_ERROR_OUT_OF_MEMORY, every buffer filled before intact, and the log must say once
 * that the tier is degraded.  Last, with every event record failing (sim_event_record_fail),
 * where the shim waits on the host for what it would have ordered by events: the buffers are
 * filled and checked (the reactive engine's moves to NVMe), and, under the plan, a loop of
 * identical iterations adds 1 to each buffer by a kernel, the records failing from its fourth
 * iteration (after the plan was made), so that the plan's moves of written chunks from GPU
 * memory to NVMe copy them into staging with no event after the copies: every buffer must
 * hold its data, and the race checker, which sees each NVMe write's host memory, no race.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define BUF (4 * SH_MIB)
#define WORDS (BUF / 4)
#define NBUF 10
#define MOST 40

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry hidden_add()\n{\n ret;\n}\n"
    ".visible .entry peek_add(.param .u64 p)\n{\n ret;\n}\n";

static uint32_t *hidden_ptr;            /* a pointer the shim cannot see */
static uint32_t host_buf[WORDS];

static void add_hidden(void)
{
    sim_kernel_access(hidden_ptr, BUF, SIM_ACCESS_READWRITE);
    for (uint64_t i = 0; i < WORDS; i++)
        hidden_ptr[i] += 1;
}

/* hidden_add(): no parameter information: the launch is opaque to the shim. */
SIM_KERNEL void hidden_add(const sim_launch_t *l, void **params)
{
    add_hidden();
}

/* peek_add(p): reads p's first word (visible), adds 1 to the hidden buffer (not visible). */
SIM_KERNEL void peek_add(const sim_launch_t *l, void **params)
{
    const uint32_t *p = *(const uint32_t **)params[0];
    sim_kernel_access(p, 4, SIM_ACCESS_READ);
    volatile uint32_t w = p[0];
    (void)w;
    add_hidden();
}

/* Buffer p holds sh_pattern(seed, .) + plus, read by cuMemcpyDtoH. */
static void expect_copy(CUdeviceptr p, uint32_t seed, uint32_t plus, const char *what)
{
    CHECK_CU(cuMemcpyDtoH(host_buf, p, BUF));
    sh_expect_pattern_plus(host_buf, WORDS, seed, plus, what);
}

/* Each buffer holds its pattern, checked by a kernel (first to last) and by cuMemcpyDtoH (last
 * to first); `how` ends each check's name. */
static void check_buffers(CUfunction verify, const CUdeviceptr *buf, CUdeviceptr bad,
                          const char *how)
{
    for (int i = 0; i < NBUF; i++) {
        char what[80];
        snprintf(what, sizeof(what), "buffer %d by kernel%s", i, how);
        sh_expect_verified(verify, buf[i], WORDS, (uint32_t)i, bad, what);
        snprintf(what, sizeof(what), "buffer %d by copy%s", i, how);
        expect_copy(buf[NBUF - 1 - i], (uint32_t)(NBUF - 1 - i), 0, what);
    }
}

static void scenario(void)
{
    CUdeviceptr h, bad, buf[NBUF];
    void *none[1] = { NULL };

    st_setup(0);
    CUfunction fill = st_function(sh_res_ptx, "sh_fill");
    CUfunction verify = st_function(sh_res_ptx, "sh_verify");
    CUfunction hidden = st_function(ptx, "hidden_add"), peek = st_function(ptx, "peek_add");
    CHECK_CU(cuMemAlloc(&bad, 4));
    sh_alloc_filled(fill, &h, 1, BUF, 100, NULL);
    hidden_ptr = (uint32_t *)(uintptr_t)h;
    CHECK_CU(cuLaunchKernel(hidden, 1, 1, 1, 1, 1, 1, 0, NULL, none, NULL));
    sh_alloc_filled(fill, buf, NBUF, BUF, 0, NULL);
    check_buffers(verify, buf, bad, "");
    void *args[] = { &buf[0] };
    CHECK_CU(cuLaunchKernel(peek, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    CHECK_CU(cuCtxSynchronize());
    expect_copy(h, 100, 2, "the buffer reached through a hidden pointer");
    for (int i = 0; i < NBUF; i++)
        CHECK_CU(cuMemFree(buf[i]));
    CHECK_CU(cuMemFree(h));
    CHECK_CU(cuMemFree(bad));
    printf("%d buffers beyond GPU and host budgets and one reached through a hidden pointer: "
           "data right\n", NBUF);
}

/* With a write fault: fill buffers until an allocation fails; it must fail with
 * CUDA_ERROR_OUT_OF_MEMORY, and the buffers filled before are intact. */
static void until_full(void)
{
    CUdeviceptr bad, buf[MOST];
    int n = 0;
    CUresult r = CUDA_SUCCESS;

    st_setup(0);
    CUfunction fill = st_function(sh_res_ptx, "sh_fill");
    CUfunction verify = st_function(sh_res_ptx, "sh_verify");
    CHECK_CU(cuMemAlloc(&bad, 4));
    for (; n < MOST && (r = cuMemAlloc(&buf[n], BUF)) == CUDA_SUCCESS; n++)
        CHECK_CU(sh_fill_async(fill, buf[n], WORDS, (uint32_t)n, NULL));
    EXPECT(r == CUDA_ERROR_OUT_OF_MEMORY, "allocation %d returned %d, expected "
           "CUDA_ERROR_OUT_OF_MEMORY", n, (int)r);
    for (int i = 0; i < n; i++)
        sh_expect_verified(verify, buf[i], WORDS, (uint32_t)i, bad, "a buffer after the fault");
    for (int i = 0; i < n; i++)
        CHECK_CU(cuMemFree(buf[i]));
    printf("%d buffers, then out of memory; data right\n", n);
}

/* Every event record fails while NBUF buffers are filled and checked (beyond the GPU and host
 * budgets: chunks go to NVMe and back). */
static void no_records(void)
{
    CUdeviceptr bad, buf[NBUF];

    st_setup(0);
    CUfunction fill = st_function(sh_res_ptx, "sh_fill");
    CUfunction verify = st_function(sh_res_ptx, "sh_verify");
    CHECK_CU(cuMemAlloc(&bad, 4));
    sim_event_record_fail(UINT_MAX, CUDA_ERROR_OUT_OF_MEMORY);
    sh_alloc_filled(fill, buf, NBUF, BUF, 0, NULL);
    check_buffers(verify, buf, bad, ", no event recorded");
    unsigned left = sim_event_record_fail(0, CUDA_SUCCESS);
    EXPECT(left < UINT_MAX, "the shim recorded no event");
    for (int i = 0; i < NBUF; i++)
        CHECK_CU(cuMemFree(buf[i]));
    CHECK_CU(cuMemFree(bad));
    printf("%d buffers with %u event records refused: data right\n", NBUF, UINT_MAX - left);
}

/* A loop of ITERS iterations adding 1 to each of NBUF buffers, event records failing from
 * iteration FAIL_FROM on; the data checked after it. */
#define ITERS 8
#define FAIL_FROM 3

static void planned_no_records(void)
{
    CUdeviceptr bad, buf[NBUF];
    CUstream s;

    st_setup(0);
    CUfunction fill = st_function(sh_res_ptx, "sh_fill");
    CUfunction add = st_function(sh_res_ptx, "sh_add");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&bad, 4));
    sh_alloc_filled(fill, buf, NBUF, BUF, 0, s);
    CHECK_CU(cuStreamSynchronize(s));
    for (int it = 0; it < ITERS; it++) {
        if (it == FAIL_FROM)
            sim_event_record_fail(UINT_MAX, CUDA_ERROR_OUT_OF_MEMORY);
        for (int i = 0; i < NBUF; i++)
            CHECK_CU(sh_add_async(add, buf[i], WORDS, 1, s));
        CHECK_CU(cuStreamSynchronize(s));
    }
    unsigned left = sim_event_record_fail(0, CUDA_SUCCESS);
    EXPECT(left < UINT_MAX, "the shim recorded no event");
    for (int i = 0; i < NBUF; i++) {
        CHECK_CU(cuMemcpyDtoH(host_buf, buf[i], BUF));
        sh_expect_pattern_plus(host_buf, WORDS, (uint32_t)i, ITERS, "a buffer after the loop");
    }
    for (int i = 0; i < NBUF; i++)
        CHECK_CU(cuMemFree(buf[i]));
    CHECK_CU(cuMemFree(bad));
    CHECK_CU(cuStreamDestroy(s));
    printf("%d iterations under the plan, %u event records refused from the %dth: data right\n",
           ITERS, UINT_MAX - left, FAIL_FROM + 1);
}

/* The scenario without and under the shim (env): same transcript, chunks to NVMe and back,
 * no slot used at exit, the engine said. */
static void beyond(const char *const *env, const char *what)
{
    sh_run_t plain = sh_run_plain_ok(NULL);
    sh_run_t r = sh_run_ok("scenario", env);
    long long out = sh_stat(r.err, "chunks to NVMe "), in = sh_stat(r.err, "back from NVMe ");
    long long used = sh_stat(r.err, "slots used ");
    printf("%s: chunks to NVMe %lld, back %lld, slots used at exit %lld\n", what, out, in, used);
    EXPECT(out >= 8 && in >= 4, "chunks did not go to NVMe and back:\n%s", r.err);
    EXPECT(used == 0, "slots still used after every free:\n%s", r.err);
    EXPECT(strstr(r.err, "NVMe: engine "), "the statistics do not name the engine:\n%s", r.err);
    sh_same_transcript(what, &plain, &r);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "full") == 0) {
        until_full();
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "norecord") == 0) {
        no_records();
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "plannorecord") == 0) {
        planned_no_records();
        return 0;
    }
    sh_scenario_child(argc, argv, scenario);
    const char *path = sh_nvme_path_env();
    const char *env[] = { "ELIXIR_GPU_MEMORY=8M", "ELIXIR_HOST_MEMORY=8M",
                          "ELIXIR_NVME_MEMORY=64M", "ELIXIR_NVME_VERIFY=1", "ELIXIR_STATS=1",
                          path, NULL };

    beyond(env, "beyond GPU and host budgets");
    setenv("ELIXIR_SIM_HOST_VMM", "0", 1);
    beyond(env, "beyond GPU and host budgets, evicted chunks unmapped");
    unsetenv("ELIXIR_SIM_HOST_VMM");

    const char *fenv[] = { "ELIXIR_GPU_MEMORY=8M", "ELIXIR_HOST_MEMORY=8M",
                           "ELIXIR_NVME_MEMORY=64M", "ELIXIR_NVME_FAULT=write:10:eio",
                           "ELIXIR_NVME_BLOCK=512K", "ELIXIR_STATS=1", path, NULL };
    sh_run_t f = sh_run_ok("full", fenv);
    printf("%s", f.out);
    EXPECT(sh_count(f.err, "NVMe tier degraded") == 1, "expected one line saying the tier is "
           "degraded:\n%s", f.err);
    long long wrote = sh_stat(f.err, "chunks written ");
    EXPECT(wrote == 2, "%lld chunks written before the fault, expected 2:\n%s", wrote, f.err);
    EXPECT(sh_stat(f.err, "slots used ") == 0, "slots still used after every free:\n%s", f.err);
    sh_run_free(&f);

    sh_run_t n = sh_run_ok("norecord", env);
    printf("%s", n.out);
    long long out = sh_stat(n.err, "chunks to NVMe "), in = sh_stat(n.err, "back from NVMe ");
    EXPECT(out >= 8 && in >= 4, "with no event recorded, chunks did not go to NVMe and back:\n%s",
           n.err);
    sh_run_free(&n);

    const char *penv[] = { "ELIXIR_POLICY=plan", "ELIXIR_GPU_MEMORY=8M", "ELIXIR_HOST_MEMORY=8M",
                           "ELIXIR_NVME_MEMORY=64M", "ELIXIR_NVME_VERIFY=1", "ELIXIR_STATS=1",
                           path, NULL };
    sh_run_t p = sh_run_ok("plannorecord", penv);
    printf("%s", p.out);
    const char *moves = strstr(p.err, "NVMe plan: moves to NVMe ");
    long long outs = moves ? sh_stat(moves, "moves to NVMe ") : 0;
    printf("the plan's moves to NVMe: %lld\n", outs);
    EXPECT(outs > 0, "the plan moved nothing to NVMe:\n%s", p.err);
    sh_run_free(&p);
    return 0;
}
