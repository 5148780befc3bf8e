/* SPDX-License-Identifier: MIT */
/*
 * shim_nccl_residency.c - NCCL's buffers are made resident before NCCL enqueues its work, on
 * every path by which a program reaches NCCL, whether evicted memory stays mapped or not.
 *
 * Two ranks (ncclCommInitAll, two simulated devices) with an 8 MiB GPU budget each: each rank
 * fills six 4 MiB buffers (three times its budget, so most are evicted as the later ones are
 * filled), then all-reduces each buffer in place across the ranks, in groups, and sends one
 * buffer to the other rank.  The stand-in's kernels take only a pointer to a work descriptor
 * in host memory, as NCCL's do, so the shim cannot find the buffers in their arguments: only
 * its NCCL wrappers can bring them back.  A last group all-reduces two buffers per rank, the
 * whole budget, the first of them the least recently used: NCCL enqueues both only at
 * ncclGroupEnd, so the first call's buffer must stay held while the second call makes room.
 * Every buffer is read back and checked.  Before the groups, a group of all-reduces of
 * buffer 0 is ended by ncclGroupSimulateEnd, which runs nothing: the shim's group must end
 * there too, or every later operation would count as grouped, its buffers held for good.
 * Then a fresh buffer is all-reduced in a group, and once that is done it must be evicted to
 * make room for two more; the same after a group that fails (a send never received).
 *
 * On a default stream (the legacy one, and the per-thread one): one thread drives both
 * ranks' all-reduces on it in groups, one buffer after another, with the last rank's context
 * current throughout, as programs that drive several devices from one thread do; NCCL
 * enqueues each on its communicator's device.  Each call's use must be recorded on that device's stream, so that
 * the evictions that make room for two fresh buffers per rank right after the last group
 * wait for it: else the race checker reports an eviction's copy (and unmap) against the
 * all-reduce still writing the buffer on the first device.
 *
 * The scenario runs with evicted memory kept mapped (the default) and with it unmapped
 * (ELIXIR_SIM_HOST_VMM=0), where a buffer left evicted would fault.  The wrappers are reached
 * through the exported names (this program is linked with -lnccl) and through dlsym on the
 * library's handle; both must be the shim's, and the shim must count every call.  The race
 * checker must find nothing, and both devices' statistics must show chunks brought back to
 * the GPU.  With ELIXIR_DISABLE=1 the
 * scenario still passes, and dlsym hands out NCCL's own function.
 */
#define SH_RES_KERNELS
#include <dlfcn.h>

#include "nccl_test.h"
#include "shim_test.h"

#define N 2
#define BUFS 6
#define MIB (1ull << 20)
#define BUF_BYTES (4 * MIB)
#define WORDS (BUF_BYTES / 4)

typedef ncclResult_t (*allreduce_fn)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                                     ncclComm_t, cudaStream_t);

static nt_rank_t rk[N];
static CUdeviceptr buf[N][BUFS];

/* Buffer j of every rank: the sum of what the ranks filled it with. */
static int32_t summed(int j)
{
    return 100 + j + 200 + j;
}

static void expect_words(int r, int j, int32_t want)
{
    static int32_t host[WORDS];
    nt_get(&rk[r], host, buf[r][j], BUF_BYTES);
    for (size_t k = 0; k < WORDS; k++)
        EXPECT(host[k] == want, "rank %d buffer %d word %zu: %d, want %d", r, j, k, host[k],
               want);
}

/* Per rank, a fresh buffer x all-reduced in a group; once the group has ended, two more
 * buffers (the whole budget) are set: x, the least recently used and held by nothing any more,
 * must make room.  With `fail`, rank 0 also sends to rank 1, which never receives: the group
 * ends in an error (the communicators being blocking ones), and x must not stay held until
 * its communicator's state is polled. */
static void evict_after_group(int fail)
{
    CUdeviceptr x[N], y[N][2];

    for (int r = 0; r < N; r++) {
        nt_use(&rk[r]);
        CHECK_CU(cuMemAlloc(&x[r], BUF_BYTES));
        CHECK_CU(cuMemsetD32Async(x[r], 7, WORDS, rk[r].stream));
    }
    CHECK_NCCL(ncclGroupStart());
    for (int r = 0; r < N; r++)
        CHECK_NCCL(ncclAllReduce((void *)x[r], (void *)x[r], WORDS, ncclInt32, ncclSum,
                                 rk[r].comm, rk[r].stream));
    if (fail)
        CHECK_NCCL(ncclSend((void *)x[0], WORDS, ncclInt32, 1, rk[0].comm, rk[0].stream));
    ncclResult_t end = ncclGroupEnd();
    EXPECT(fail ? end != ncclSuccess && end != ncclInProgress : end == ncclSuccess,
           "the group%s ended with %d", fail ? " with a send never received" : "", (int)end);
    for (int r = 0; r < N; r++) {
        nt_use(&rk[r]);
        CHECK_CU(cuCtxSynchronize());
        for (int i = 0; i < 2; i++) {
            CHECK_CU(cuMemAlloc(&y[r][i], BUF_BYTES));
            CHECK_CU(cuMemsetD32Async(y[r][i], 9, WORDS, rk[r].stream));
        }
        CHECK_CU(cuStreamSynchronize(rk[r].stream));
        sh_expect_where(x[r], 0, fail ? "x, all-reduced in a group that failed"
                                      : "x, all-reduced in a group that has ended");
        CHECK_CU(cuMemFree(x[r]));
        CHECK_CU(cuMemFree(y[r][0]));
        CHECK_CU(cuMemFree(y[r][1]));
    }
}

static void scenario(void)
{
    void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    allreduce_fn via_dlsym = lib ? (allreduce_fn)dlsym(lib, "ncclAllReduce") : NULL;

    int disabled = getenv("ELIXIR_DISABLE") != NULL;

    EXPECT(sh_in_shim((const void *)ncclAllReduce), "ncclAllReduce is %s's, not the shim's",
           sh_name((const void *)ncclAllReduce));
    EXPECT(via_dlsym && sh_in_shim((const void *)via_dlsym) == !disabled,
           "dlsym(libnccl, \"ncclAllReduce\") is %s's%s", sh_name((const void *)via_dlsym),
           disabled ? " with ELIXIR_DISABLE=1" : "");
    nt_ranks_all(rk, N, 4096);
    for (int r = 0; r < N; r++)
        for (int j = 0; j < BUFS; j++) {
            nt_use(&rk[r]);
            CHECK_CU(cuMemAlloc(&buf[r][j], BUF_BYTES));
            CHECK_CU(cuMemsetD32Async(buf[r][j], (unsigned)((r + 1) * 100 + j), WORDS,
                                      rk[r].stream));
        }
    ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
    CHECK_NCCL(ncclGroupStart());
    for (int r = 0; r < N; r++)
        CHECK_NCCL(ncclAllReduce((void *)buf[r][0], (void *)buf[r][0], WORDS, ncclInt32,
                                 ncclSum, rk[r].comm, rk[r].stream));
    CHECK_NCCL(ncclGroupSimulateEnd(&sim));
    evict_after_group(0);
    evict_after_group(1);
    for (int j = 0; j < BUFS; j++) {
        CHECK_NCCL(ncclGroupStart());
        for (int r = 0; r < N; r++)
            CHECK_NCCL((j % 2 ? via_dlsym : ncclAllReduce)((void *)buf[r][j], (void *)buf[r][j],
                                                            WORDS, ncclInt32, ncclSum,
                                                            rk[r].comm, rk[r].stream));
        CHECK_NCCL(ncclGroupEnd());
    }
    CHECK_NCCL(ncclGroupStart());           /* rank 0's buffer 1 to rank 1's buffer 5 */
    CHECK_NCCL(ncclSend((void *)buf[0][1], WORDS, ncclInt32, 1, rk[0].comm, rk[0].stream));
    CHECK_NCCL(ncclRecv((void *)buf[1][5], WORDS, ncclInt32, 0, rk[1].comm, rk[1].stream));
    CHECK_NCCL(ncclGroupEnd());
    for (int r = 0; r < N; r++) {           /* buffer 0, then 2: 0 is the least recently used */
        int32_t word;
        nt_get(&rk[r], &word, buf[r][0], sizeof(word));
        nt_get(&rk[r], &word, buf[r][2], sizeof(word));
    }
    CHECK_NCCL(ncclGroupStart());           /* two 4 MiB buffers per rank: the whole budget */
    for (int r = 0; r < N; r++)
        for (int j = 0; j < 2; j++)
            CHECK_NCCL(ncclAllReduce((void *)buf[r][j], (void *)buf[r][j], WORDS, ncclInt32,
                                     ncclSum, rk[r].comm, rk[r].stream));
    CHECK_NCCL(ncclGroupEnd());
    for (int r = 0; r < N; r++)
        for (int j = 0; j < BUFS; j++)
            expect_words(r, j, j < 2 ? 2 * summed(j) : r == 1 && j == 5 ? summed(1) : summed(j));
    for (int r = 0; r < N; r++)
        for (int j = 0; j < BUFS; j++) {
            nt_use(&rk[r]);
            CHECK_CU(cuMemFree(buf[r][j]));
        }
    nt_ranks_free(rk, N);
    EXPECT(disabled || (sh_calls("ncclAllReduce") == N * (BUFS + 5) &&
                        sh_calls("ncclGroupEnd") == BUFS + 4 &&
                        sh_calls("ncclGroupSimulateEnd") == 1),
           "wrappers entered: ncclAllReduce %lld, ncclGroupEnd %lld, ncclGroupSimulateEnd %lld; "
           "expected %d, %d and 1", sh_calls("ncclAllReduce"), sh_calls("ncclGroupEnd"),
           sh_calls("ncclGroupSimulateEnd"), N * (BUFS + 5), BUFS + 4);
    printf("%d ranks x %d buffers of %llu MiB all-reduced and checked\n", N, BUFS,
           BUF_BYTES / MIB);
}

static void default_stream(cudaStream_t default_s)
{
    nt_ranks_all(rk, N, 4096);
    for (int r = 0; r < N; r++) {
        nt_use(&rk[r]);
        for (int j = 0; j < BUFS; j++) {
            CHECK_CU(cuMemAlloc(&buf[r][j], BUF_BYTES));
            CHECK_CU(cuMemsetD32Async(buf[r][j], (unsigned)((r + 1) * 100 + j), WORDS,
                                      rk[r].stream));
        }
        CHECK_CU(cuStreamSynchronize(rk[r].stream));
    }
    nt_use(&rk[N - 1]);
    for (int j = 0; j < BUFS; j++) {
        CHECK_NCCL(ncclGroupStart());
        for (int r = 0; r < N; r++)
            CHECK_NCCL(ncclAllReduce((void *)buf[r][j], (void *)buf[r][j], WORDS, ncclInt32,
                                     ncclSum, rk[r].comm, default_s));
        CHECK_NCCL(ncclGroupEnd());
    }
    /* Right away, two fresh buffers per rank (its whole budget): the evictions of the last
     * buffers all-reduced must wait for the all-reduces. */
    CUdeviceptr x[N][2];
    for (int r = 0; r < N; r++) {
        nt_use(&rk[r]);
        for (int i = 0; i < 2; i++) {
            CHECK_CU(cuMemAlloc(&x[r][i], BUF_BYTES));
            CHECK_CU(cuMemsetD32Async(x[r][i], 9, WORDS, rk[r].stream));
        }
    }
    for (int r = 0; r < N; r++) {
        nt_use(&rk[r]);
        CHECK_CU(cuCtxSynchronize());
        for (int j = 0; j < BUFS; j++)
            expect_words(r, j, summed(j));
        for (int j = 0; j < BUFS; j++)
            CHECK_CU(cuMemFree(buf[r][j]));
        CHECK_CU(cuMemFree(x[r][0]));
        CHECK_CU(cuMemFree(x[r][1]));
    }
    nt_ranks_free(rk, N);
    printf("%d ranks x %d buffers all-reduced from one thread and checked\n", N, BUFS);
}

/* The scenario under the shim with env; device d's line of statistics must show chunks
 * brought back for both devices. */
static void run(const char *mode, const char *const *env)
{
    sh_run_t r = sh_run_ok("scenario", env);
    for (int d = 0; d < N; d++) {
        char key[64];
        snprintf(key, sizeof(key), "device %d: migrations to host ", d);
        const char *line = strstr(r.err, key);
        long long in = line ? sh_stat(line, "to GPU ") : -1;
        EXPECT(in > 0, "%s: device %d brought nothing back to the GPU:\n%s", mode, d, r.err);
        printf("%s: device %d: %lld chunks back to the GPU\n", mode, d, in);
    }
    sh_run_free(&r);
}

int main(int argc, char **argv)
{
    static const char *const mapped[] = { "ELIXIR_SIM_DEVICES=2", "ELIXIR_GPU_MEMORY=8M",
                                          "ELIXIR_STATS=1", NULL };
    static const char *const unmapped[] = { "ELIXIR_SIM_DEVICES=2", "ELIXIR_GPU_MEMORY=8M",
                                            "ELIXIR_STATS=1", "ELIXIR_SIM_HOST_VMM=0", NULL };
    static const char *const disabled[] = { "ELIXIR_SIM_DEVICES=2", "ELIXIR_DISABLE=1", NULL };

    sh_scenario_child(argc, argv, scenario);
    if (argc > 1 && strcmp(argv[1], "legacy") == 0) {
        default_stream(0);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "per-thread") == 0) {
        default_stream((cudaStream_t)CU_STREAM_PER_THREAD);
        return 0;
    }
    const char *const *envs[] = { mapped, unmapped };
    for (int i = 0; i < 4; i++) {
        const char *mode = i % 2 ? "per-thread" : "legacy";
        sh_run_t d = sh_run_ok(mode, envs[i / 2]);
        printf("%s default stream, %s: %s", mode, i / 2 ? "unmapped" : "mapped", d.out);
        sh_run_free(&d);
    }
    run("evicted memory mapped", mapped);
    run("evicted memory unmapped", unmapped);
    sh_run_t r = sh_run_ok("scenario", disabled);
    printf("ELIXIR_DISABLE=1: %s", r.out);
    sh_run_free(&r);
    return 0;
}
