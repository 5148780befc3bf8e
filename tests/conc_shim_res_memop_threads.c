/* SPDX-License-Identifier: MIT */
/*
 * conc_shim_res_memop_threads.c - eight threads wait on and write words of paged memory
 * while another thread allocates far past the GPU budget.
 *
 * Under libelixir.so with a 4 MiB GPU budget (two chunks), each worker owns a buffer X of one
 * chunk and a buffer Y, and two non-blocking streams.  Each round it makes its wait stream
 * wait for X's first word to reach the round's number (cuStreamWaitValue32, GEQ) and add 1 to
 * the rest of X behind the wait; then, on its other stream, it adds 1 to Y and writes the
 * round's number into X's first word, releasing the wait with work submitted after it.
 * Meanwhile a pressure thread keeps allocating, filling and freeing buffers, so every chunk
 * not held is paged out and in again between the workers' calls.  Every buffer's contents at
 * the end are printed; the transcript must equal the one without the shim, evicted chunks
 * mapped (see main), the race checker failing the run on any race.  Run under the thread
 * sanitizer too (tests named conc_*).
 */
#define SH_RES_KERNELS
#include <pthread.h>
#include <stdatomic.h>

#include "shim_test.h"

#define WORKERS 8
#define ROUNDS 12
#define BYTES (2 * SH_MIB)
#define WORDS (BYTES / 4)
#define SKIP 1024                       /* words of X before the part added to */

static CUcontext ctx;
static CUfunction fill, add;
static _Atomic int workers_done;

typedef struct worker {
    uint32_t id;
    CUdeviceptr x, y;
    CUstream sw, sr;
    CUresult err;
    int line;
} worker_t;

#define W_CHECK(w, call)                                                                    \
    do {                                                                                    \
        CUresult r_ = (call);                                                               \
        if (r_ != CUDA_SUCCESS && !(w)->err) {                                              \
            (w)->err = r_;                                                                  \
            (w)->line = __LINE__;                                                           \
        }                                                                                   \
    } while (0)

static void *work(void *arg)
{
    worker_t *w = arg;
    W_CHECK(w, cuCtxSetCurrent(ctx));
    for (uint32_t r = 1; r <= ROUNDS && !w->err; r++) {
        W_CHECK(w, cuStreamWaitValue32(w->sw, w->x, r, CU_STREAM_WAIT_VALUE_GEQ));
        W_CHECK(w, sh_add_async(add, w->x + SKIP * 4, WORDS - SKIP, 1, w->sw));
        W_CHECK(w, sh_add_async(add, w->y, WORDS, 1, w->sr));
        W_CHECK(w, cuStreamWriteValue32(w->sr, w->x, r, 0));
        if (r % 4 == 0)
            W_CHECK(w, cuStreamSynchronize(w->sw));
    }
    W_CHECK(w, cuStreamSynchronize(w->sw));
    W_CHECK(w, cuStreamSynchronize(w->sr));
    atomic_fetch_add(&workers_done, 1);
    return NULL;
}

/* Allocate, fill and free buffers of one chunk until the workers are done. */
static void *pressure(void *arg)
{
    worker_t *p = arg;
    CUdeviceptr d[3] = { 0, 0, 0 };
    W_CHECK(p, cuCtxSetCurrent(ctx));
    for (uint32_t i = 0; atomic_load(&workers_done) < WORKERS && !p->err; i++) {
        if (d[i % 3])
            W_CHECK(p, cuMemFree(d[i % 3]));
        W_CHECK(p, cuMemAlloc(&d[i % 3], BYTES));
        W_CHECK(p, sh_fill_async(fill, d[i % 3], WORDS, 900 + i, NULL));
        W_CHECK(p, cuCtxSynchronize());
    }
    for (int i = 0; i < 3; i++)
        if (d[i])
            W_CHECK(p, cuMemFree(d[i]));
    return NULL;
}

static void scenario(void)
{
    static uint32_t host[WORDS];
    worker_t w[WORKERS + 1];
    pthread_t t[WORKERS + 1];
    CUdeviceptr bad;
    CUfunction verify;

    sh_res_start(&fill, &verify, &bad);
    add = st_function(sh_res_ptx, "sh_add");
    CHECK_CU(cuCtxGetCurrent(&ctx));
    memset(w, 0, sizeof(w));
    for (uint32_t i = 0; i < WORKERS; i++) {
        w[i].id = i;
        CHECK_CU(cuMemAlloc(&w[i].x, BYTES));
        CHECK_CU(cuMemAlloc(&w[i].y, BYTES));
        CHECK_CU(sh_fill_async(fill, w[i].x, WORDS, 10 * i + 1, NULL));
        CHECK_CU(sh_fill_async(fill, w[i].y, WORDS, 10 * i + 2, NULL));
        CHECK_CU(cuMemsetD32(w[i].x, 0, 1));
        CHECK_CU(cuStreamCreate(&w[i].sw, CU_STREAM_NON_BLOCKING));
        CHECK_CU(cuStreamCreate(&w[i].sr, CU_STREAM_NON_BLOCKING));
    }
    CHECK_CU(cuCtxSynchronize());
    for (uint32_t i = 0; i < WORKERS; i++)
        pthread_create(&t[i], NULL, work, &w[i]);
    pthread_create(&t[WORKERS], NULL, pressure, &w[WORKERS]);
    for (uint32_t i = 0; i <= WORKERS; i++) {
        pthread_join(t[i], NULL);
        EXPECT(!w[i].err, "thread %u: line %d failed with %s", i, w[i].line,
               st_err(w[i].err));
    }
    CHECK_CU(cuCtxSetCurrent(ctx));
    for (uint32_t i = 0; i < WORKERS; i++) {
        CHECK_CU(cuMemcpyDtoH(host, w[i].x, BYTES));
        printf("worker %u: x[0] %u\n", i, host[0]);
        for (uint64_t k = SKIP; k < WORDS; k++)
            EXPECT(host[k] == sh_pattern(10 * i + 1, k) + ROUNDS, "worker %u: x[%llu] is "
                   "0x%08x", i, (unsigned long long)k, host[k]);
        CHECK_CU(cuMemcpyDtoH(host, w[i].y, BYTES));
        sh_expect_pattern_plus(host, WORDS, 10 * i + 2, ROUNDS, "y");
        printf("worker %u: x and y hold their patterns + %d\n", i, ROUNDS);
        CHECK_CU(cuMemFree(w[i].x));
        CHECK_CU(cuMemFree(w[i].y));
        CHECK_CU(cuStreamDestroy(w[i].sw));
        CHECK_CU(cuStreamDestroy(w[i].sr));
    }
}

static void run(const char *what, const char *host_vmm)
{
    sh_run_t plain, shim;

    sh_run_devices("ELIXIR_SIM_DEVICES=1", host_vmm, "ELIXIR_GPU_MEMORY=4M", &plain, &shim);
    EXPECT(sh_migrations_out(shim.err, 0) >= 2, "%s: nothing was paged out:\n%s", what,
           shim.err);
    sh_same_transcript(what, &plain, &shim);
}

/* Mapped only: where evicted chunks are unmapped, an eviction frees a host piece with
 * cuMemFreeHost under the device's lock, which waits for every stream, the waits included,
 * while the threads that would release them wait for the lock (not fixed yet). */
int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    run("mapped", "ELIXIR_SIM_HOST_VMM=1");
    return 0;
}
