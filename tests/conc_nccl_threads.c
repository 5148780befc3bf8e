/* SPDX-License-Identifier: MIT */
/*
 * conc_nccl_threads.c - one thread per rank, as multi-GPU training runs NCCL in one process.
 *
 * Four threads share a unique id; each makes its device's primary context current, joins
 * with ncclCommInitRank and runs ITERS rounds of an all-reduce (int32 sum) and an all-gather
 * on its own stream, outside any group, with no synchronisation between the threads but
 * NCCL's.  The ranks meet inside the stand-in, which enqueues each rank's part from its own
 * thread; every result is checked.  The scenario runs on the simulator alone, then under
 * libelixir.so with a 4 MiB GPU budget per device, less than each rank's two 4 MiB buffers,
 * so that every operation finds its buffers evicted by the one before.  Also run under the
 * thread sanitizer.
 */
#include <pthread.h>

#include "nccl_test.h"
#include "shim_test.h"

#define N 4
#define COUNT (256 * 1024)
#define ITERS 12

static ncclUniqueId id;
static nt_rank_t rk[N];

static void *rank_main(void *arg)
{
    int r = (int)(intptr_t)arg;
    int32_t *host = malloc(N * COUNT * sizeof(int32_t)), *got = malloc(N * COUNT * 4);
    nt_rank_t *me = &rk[r];

    EXPECT(host && got, "out of memory");
    nt_rank_setup(me, r, N * COUNT * sizeof(int32_t));
    CHECK_NCCL(ncclCommInitRank(&me->comm, N, id, r));
    for (int it = 0; it < ITERS; it++) {
        for (int k = 0; k < COUNT; k++)
            host[k] = r * 1000 + k + it;
        CHECK_CU(cuMemcpyHtoDAsync(me->a, host, COUNT * 4, me->stream));
        CHECK_NCCL(ncclAllReduce((void *)me->a, (void *)me->b, COUNT, ncclInt32, ncclSum,
                                 me->comm, me->stream));
        CHECK_NCCL(ncclAllGather((void *)me->b, (void *)me->a, COUNT, ncclInt32, me->comm,
                                 me->stream));
        CHECK_CU(cuMemcpyDtoHAsync(got, me->a, N * COUNT * 4, me->stream));
        CHECK_CU(cuStreamSynchronize(me->stream));
        for (int j = 0; j < N; j++)
            for (int k = 0; k < COUNT; k++) {
                int32_t want = (0 + 1000 + 2000 + 3000) + N * (k + it);
                EXPECT(got[j * COUNT + k] == want, "rank %d round %d slot %d element %d: %d, "
                       "want %d", r, it, j, k, got[j * COUNT + k], want);
            }
    }
    free(host);
    free(got);
    return NULL;
}

static void scenario(void)
{
    pthread_t t[N];

    CHECK_CU(cuInit(0));
    CHECK_NCCL(ncclGetUniqueId(&id));
    for (int r = 0; r < N; r++)
        EXPECT(pthread_create(&t[r], NULL, rank_main, (void *)(intptr_t)r) == 0, "thread %d", r);
    for (int r = 0; r < N; r++)
        pthread_join(t[r], NULL);
    nt_ranks_free(rk, N);
    printf("%d threads, %d rounds of all-reduce and all-gather each: all correct\n", N, ITERS);
}

int main(int argc, char **argv)
{
    static const char *const plain[] = { "ELIXIR_SIM_DEVICES=4", NULL };
    static const char *const budget[] = { "ELIXIR_SIM_DEVICES=4", "ELIXIR_GPU_MEMORY=4M",
                                          "ELIXIR_STATS=1", NULL };

    sh_scenario_child(argc, argv, scenario);
    sh_run_t r = sh_run("scenario", 0, plain);
    EXPECT(r.status == 0, "on the simulator: exit %d\n%s%s", r.status, r.out, r.err);
    printf("simulator: %s", r.out);
    sh_run_free(&r);
    r = sh_run_ok("scenario", budget);
    long long in = sh_stat(r.err, "to GPU ");
    EXPECT(in > 0, "under the shim nothing came back to the GPU:\n%s", r.err);
    printf("libelixir.so, 4 MiB per device: %s", r.out);
    sh_run_free(&r);
    return 0;
}
