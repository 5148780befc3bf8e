/* SPDX-License-Identifier: MIT */
/*
 * conc_shim_res_peer_threads.c - threads on two devices copy from each other's arena at once,
 * while each device pages its own memory.
 *
 * Two simulated devices, a 4 MiB GPU budget each.  Four threads, two per device, each own
 * three 2 MiB buffers on their device (more than its budget together) and, in rounds: fill
 * their buffers by kernel, then copy a buffer of a thread on the other device into one of
 * theirs (cuMemcpyPeerAsync on their own stream, half of them; a unified cuMemcpyDtoD, the
 * others), and check it against that thread's pattern for the round; then the threads of
 * device 0, which has peer access to device 1 (not the other way, so that device 1's copies
 * take back the access they were given), check that thread's buffer in place by kernel.  A
 * copy or a kernel that reaches the other device's arena takes that device's lock while the other
 * device's threads take it too, for their own paging and their own copies and kernels the
 * other way: the shim must never hold two devices' locks at once (a deadlock would hang the
 * test), and the data must be exact.  The threads meet at a barrier between rounds, so that
 * a buffer is read only after its owner filled it.  Run under the thread sanitizer too (tests
 * named conc_*).
 */
#define SH_RES_KERNELS
#include <pthread.h>

#include "shim_test.h"

#define THREADS 4
#define NBUF 3
#define ROUNDS 4
#define BYTES (2 * SH_MIB)
#define WORDS (BYTES / 4)

static CUcontext ctx[2];
static CUfunction fill[2], verify[2];
static pthread_barrier_t round_barrier;

typedef struct worker {
    int id, dev;
    CUstream s;
    CUdeviceptr buf[NBUF], bad;
    uint32_t *host;
    char why[160];
} worker_t;

static worker_t workers[THREADS];

/* The pattern seed of buffer b of worker w in round r. */
static uint32_t seed_of(int w, int b, int r)
{
    return (uint32_t)(1000 * r + 10 * w + b + 1);
}

/* The worker whose buffers worker w copies from: one on the other device. */
static worker_t *partner(const worker_t *w)
{
    return &workers[(w->id + 1) % THREADS];
}

static int fail(worker_t *w, const char *what, int r, CUresult res)
{
    snprintf(w->why, sizeof(w->why), "round %d: %s: %s", r, what, st_err(res));
    return -1;
}

/* A kernel on w's device counts the words of buffer q (on the other device) that differ
 * from sh_pattern(seed, .) into *wrong. */
static CUresult verify_peer(worker_t *w, CUdeviceptr q, uint32_t seed, uint32_t *wrong)
{
    CUresult res = sh_verify_async(verify[w->dev], q, WORDS, seed, w->bad, w->s);
    if (res == CUDA_SUCCESS)
        res = cuMemcpyDtoHAsync(wrong, w->bad, 4, w->s);
    return res == CUDA_SUCCESS ? cuStreamSynchronize(w->s) : res;
}

/* One round: fill own buffers, wait for everyone, copy one of the partner's, check it. */
static int one_round(worker_t *w, int r)
{
    worker_t *p = partner(w);
    int b = r % NBUF, dst = (r + 1) % NBUF;
    CUresult res;

    for (int i = 0; i < NBUF; i++)
        if ((res = sh_fill_async(fill[w->dev], w->buf[i], WORDS, seed_of(w->id, i, r), w->s)))
            return fail(w, "fill", r, res);
    if ((res = cuStreamSynchronize(w->s)))
        return fail(w, "fill sync", r, res);
    pthread_barrier_wait(&round_barrier);
    if (w->id % 2 == 0)
        res = cuMemcpyPeerAsync(w->buf[dst], ctx[w->dev], p->buf[b], ctx[p->dev], BYTES, w->s);
    else
        res = cuMemcpyDtoDAsync(w->buf[dst], p->buf[b], BYTES, w->s);
    if (res || (res = cuStreamSynchronize(w->s)))
        return fail(w, "copy from the other device", r, res);
    if ((res = cuMemcpyDtoHAsync(w->host, w->buf[dst], BYTES, w->s)) ||
        (res = cuStreamSynchronize(w->s)))
        return fail(w, "read back", r, res);
    for (uint64_t i = 0; i < WORDS; i++)
        if (w->host[i] != sh_pattern(seed_of(p->id, b, r), i)) {
            snprintf(w->why, sizeof(w->why), "round %d: word %llu is 0x%08x, expected 0x%08x",
                     r, (unsigned long long)i, w->host[i], sh_pattern(seed_of(p->id, b, r), i));
            return -1;
        }
    uint32_t wrong = 0;
    if (w->dev == 0 && (res = verify_peer(w, p->buf[b], seed_of(p->id, b, r), &wrong)))
        return fail(w, "kernel on the other device's buffer", r, res);
    if (wrong) {
        snprintf(w->why, sizeof(w->why), "round %d: the kernel found %u words wrong", r, wrong);
        return -1;
    }
    pthread_barrier_wait(&round_barrier);     /* nobody refills what another still reads */
    return 0;
}

static void *run_worker(void *arg)
{
    worker_t *w = arg;
    int r = 0;

    if (cuCtxSetCurrent(ctx[w->dev]) || cuStreamCreate(&w->s, CU_STREAM_NON_BLOCKING)) {
        snprintf(w->why, sizeof(w->why), "set-up failed");
        return NULL;
    }
    for (; r < ROUNDS && one_round(w, r) == 0; r++)
        ;
    /* A failed worker still meets the others at every barrier, so that none waits forever. */
    for (; r < ROUNDS; r++) {
        pthread_barrier_wait(&round_barrier);
        pthread_barrier_wait(&round_barrier);
    }
    return NULL;
}

static void scenario(void)
{
    pthread_t th[THREADS];

    for (int d = 0; d < 2; d++) {
        ctx[d] = st_setup(d);
        fill[d] = st_function(sh_res_ptx, "sh_fill");
        verify[d] = st_function(sh_res_ptx, "sh_verify");
    }
    CHECK_CU(cuCtxSetCurrent(ctx[0]));
    CHECK_CU(cuCtxEnablePeerAccess(ctx[1], 0));
    pthread_barrier_init(&round_barrier, NULL, THREADS);
    for (int i = 0; i < THREADS; i++) {
        worker_t *w = &workers[i];
        *w = (worker_t){ .id = i, .dev = i % 2 };
        CHECK_CU(cuCtxSetCurrent(ctx[w->dev]));
        for (int b = 0; b < NBUF; b++)
            CHECK_CU(cuMemAlloc(&w->buf[b], BYTES));
        CHECK_CU(cuMemAlloc(&w->bad, 4));
        w->host = malloc(BYTES);
        EXPECT(w->host != NULL, "out of memory");
    }
    for (int i = 0; i < THREADS; i++)
        EXPECT(pthread_create(&th[i], NULL, run_worker, &workers[i]) == 0, "pthread_create");
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < THREADS; i++) {
        EXPECT(!workers[i].why[0], "thread %d: %s", i, workers[i].why);
        free(workers[i].host);
    }
    pthread_barrier_destroy(&round_barrier);
    printf("%d threads on 2 devices, %d rounds of copies and kernels reaching the other "
           "device: exact\n", THREADS, ROUNDS);
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_SIM_DEVICES=2", "ELIXIR_GPU_MEMORY=4M",
                                       "ELIXIR_STATS=1", "ELIXIR_SIM_RACECHECK=fail", NULL };

    sh_scenario_child(argc, argv, scenario);
    sh_run_t r = sh_run_ok("scenario", env);
    EXPECT(sh_stat(r.err, "migrations to host ") > 0, "nothing was paged out:\n%s", r.err);
    printf("%s", r.out);
    sh_run_free(&r);
    return 0;
}
