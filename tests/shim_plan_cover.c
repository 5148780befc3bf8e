/* SPDX-License-Identifier: MIT */
/*
 * shim_plan_cover.c - the events the plan records right after the last use of a chunk it
 * later takes away (policy/cover.c, res_use_cover_due): its eviction waits for that use, not
 * for everything the host issued since.
 *
 * A loop of identical iterations on one stream: 2 x NBUF kernels of KERNEL_US each, kernel k
 * reading and writing buffer k, then the buffers again in reverse order (a forward pass and a
 * backward one; each buffer one 2 MiB chunk), then a host synchronisation.  The GPU budget
 * holds about half the buffers, so that the plan evicts, during the forward pass, the chunks
 * the backward pass uses last, well after their last use, and the host, whose launches cost it
 * about a microsecond each, runs ahead of the GPU.  Recorded lazily, the event such an
 * eviction waits for would come after every kernel issued by then, and its copy (with evicted
 * memory mapped, the host's wait for the room it frees; unmapped, the prefetch's copy that
 * takes that room) behind them.  With the events recorded early, the iteration is the plan's
 * cost model's (which has each move wait for its chunk's last use alone; here the kernels'
 * time, all transfers hidden): the mean of the last iterations (virtual time, by events on the
 * stream) within 2% of the prediction, both with the plan's evictions unmapping and with
 * evicted memory mapped; without them, 1.03x and 1.07x it.  The race checker fails either run
 * on any race.
 */
#define ST_KERNEL_BUSY_RW
#include "shim_test.h"
#include "simtest.h"

#define NBUF 12
#define MIB (1ull << 20)
#define BUF (2 * MIB)
#define ITERS 9
#define MEASURED 3              /* the last iterations, averaged */
#define KERNEL_US 400.0

static const char ptx[] = ST_PTX_HEADER ST_PTX_BUSY_RW;

static void scenario(void)
{
    CUdeviceptr buf[NBUF];
    CUstream s;
    CUevent a, b;
    double ms[ITERS];
    st_setup(0);
    CUfunction fn = st_function(ptx, "busy_rw");
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuEventCreate(&a, CU_EVENT_DEFAULT));
    CHECK_CU(cuEventCreate(&b, CU_EVENT_DEFAULT));
    for (int i = 0; i < NBUF; i++) {
        CHECK_CU(cuMemAlloc(&buf[i], BUF));
        CHECK_CU(cuMemsetD32(buf[i], (unsigned)i, BUF / 4));
    }
    for (int it = 0; it < ITERS; it++) {
        CHECK_CU(cuEventRecord(a, s));
        for (int k = 0; k < 2 * NBUF; k++) {
            int i = k < NBUF ? k : 2 * NBUF - 1 - k;     /* forward, then backward */
            double flops = 51e12 * KERNEL_US * 1e-6;    /* (the default machine's rate) */
            uint64_t n = BUF;
            void *args[] = { &flops, &buf[i], &n };
            CHECK_CU(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
        }
        CHECK_CU(cuEventRecord(b, s));
        CHECK_CU(cuStreamSynchronize(s));
        float f;
        CHECK_CU(cuEventElapsedTime(&f, a, b));
        ms[it] = f;
    }
    double sum = 0;
    for (int it = ITERS - MEASURED; it < ITERS; it++)
        sum += ms[it];
    printf("iteration %.3f ms\n", sum / MEASURED);
}

static void run(int unmap)
{
    const char *env[] = { "ELIXIR_POLICY=plan", unmap ? "ELIXIR_PLAN_UNMAP=1"
                                                      : "ELIXIR_PLAN_UNMAP=0",
                          "ELIXIR_GPU_MEMORY=12M", "ELIXIR_STATS=1", "ELIXIR_LOG=info",
                          "ELIXIR_LOG_SUBSYS=RES",
                          NULL };
    sh_run_t r = sh_run_ok("scenario", env);
    double measured = sh_after(r.out, "iteration ");
    const char *stats = strstr(r.err, "plan: ");
    double predicted = stats ? sh_after(stats, "predicted iteration ") : -1;
    printf("%s: iteration %.3f ms, predicted %.3f ms (%.2fx)\n",
           unmap ? "evictions unmapped" : "evicted memory mapped", measured, predicted,
           predicted > 0 ? measured / predicted : 0);
    EXPECT(predicted > 0 && strstr(r.err, "device 0: planned"), "a plan in the log:\n%s", r.err);
    sh_near(measured, predicted, 0.02, "the iteration against the plan's prediction, ms",
            r.err);
    sh_run_free(&r);
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    run(1);
    run(0);
    printf("each eviction waits for its chunk's last use alone, as the plan's cost model has "
           "it\n");
    return 0;
}
