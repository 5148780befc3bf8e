/* SPDX-License-Identifier: MIT */
/*
 * shim_res_event_contexts.c - the events that record chunks' uses belong to the context of
 * the stream they are recorded on, whichever context is current when they are made, so that
 * an eviction always waits for the kernel using its chunk.
 *
 * An event can only be recorded on a stream of its own context.  Before, the shim made its
 * use events in whatever context was current and kept them all for reuse, so an event made in
 * one context was later recorded on another context's stream: the driver refused it, and a
 * launch whose use needed an event at once had no use recorded at all; the next eviction of
 * its chunk then raced the kernel.  Two ways there, each a MODE, under a 4 MiB GPU budget
 * (two chunks) and the race checker (fail):
 *
 * - devices (two simulated devices): on device 0, B is filled on stream s0, and freed while
 *   device 1's context is current, as a program freeing another device's buffer does (the
 *   free covers B's use with an event of s0).  Back on device 0, C and D are allocated and
 *   filled, a 300 ms kernel adds 1 to C on the per-thread default stream (its use recorded
 *   with an event at once), D is filled again (C is the least recently used), and E is
 *   allocated, which evicts C.
 * - peer-stream (two devices): A of device 1 is filled on stream s1a, then set by a memset
 *   on another stream of device 1, s1b (ordered after the fill by an event), issued while
 *   device 0's context is current (the memset joins A's use on s1a with an event).  Back in
 *   device 1's context, A is freed and the eviction above runs on device 1.
 * - contexts (one device, the primary context and one made with cuCtxCreate): in the primary
 *   context A is filled on the per-thread default stream (an event at once) and freed; in the
 *   second context C and D are allocated and filled, the slow kernel adds 1 to C on that
 *   context's legacy stream (an event at once: it is not the arena's context), D is filled
 *   again, and E is allocated, which evicts C.
 *
 * C must hold its pattern plus 1, with the same transcript as without the shim, and the race
 * checker must not fault the eviction's copy against the kernel.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define BYTES (2 * SH_MIB)
#define WORDS (BYTES / 4)
#define SLOW_MS 300

static uint32_t host[WORDS];

/* In the current context: C and D filled on stream s, the slow kernel adding 1 to C on
 * stream `slow_on`, D filled again, then E allocated (evicting C); C checked and all freed. */
static void evict_busy(CUstream s, CUstream slow_on)
{
    CUfunction fill = st_function(sh_res_ptx, "sh_fill");
    CUfunction slow = st_function(sh_res_ptx, "sh_slow_add");
    CUdeviceptr c, dd, e;

    CHECK_CU(cuMemAlloc(&c, BYTES));
    CHECK_CU(cuMemAlloc(&dd, BYTES));
    CHECK_CU(sh_fill_async(fill, c, WORDS, 2, s));
    CHECK_CU(sh_fill_async(fill, dd, WORDS, 3, s));
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(sh_slow_add_async(slow, c, WORDS, SLOW_MS, slow_on));
    CHECK_CU(sh_fill_async(fill, dd, WORDS, 3, s));     /* D more recent than C */
    CHECK_CU(cuMemAlloc(&e, BYTES));                    /* evicts C */
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuMemcpyDtoH(host, c, BYTES));
    sh_expect_pattern_plus(host, WORDS, 2, 1, "c");
    printf("c holds its pattern plus 1\n");
    CHECK_CU(cuMemFree(c));
    CHECK_CU(cuMemFree(dd));
    CHECK_CU(cuMemFree(e));
}

/* B of device 0 freed with device 1's context current, then evict_busy on device 0. */
static void devices(void)
{
    CUcontext c0 = st_setup(0), c1;
    CUdeviceptr b;
    CUstream s0;

    CHECK_CU(cuDevicePrimaryCtxRetain(&c1, 1));
    CHECK_CU(cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&b, BYTES));
    CHECK_CU(sh_fill_async(st_function(sh_res_ptx, "sh_fill"), b, WORDS, 1, s0));
    CHECK_CU(cuCtxSetCurrent(c1));
    CHECK_CU(cuMemFree(b));
    printf("b of device 0 freed with device 1 current\n");
    CHECK_CU(cuCtxSetCurrent(c0));
    evict_busy(s0, CU_STREAM_PER_THREAD);
    CHECK_CU(cuStreamDestroy(s0));
    CHECK_CU(cuDevicePrimaryCtxRelease(1));
}

/* A of device 1 memset on one of its streams while device 0's context is current, then
 * evict_busy on device 1. */
static void peer_stream(void)
{
    CUcontext c0 = st_setup(0), c1 = st_setup(1);
    CUdeviceptr a;
    CUstream s1a, s1b;
    CUevent filled;

    CHECK_CU(cuMemAlloc(&a, BYTES));
    CHECK_CU(cuStreamCreate(&s1a, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&s1b, CU_STREAM_NON_BLOCKING));
    CHECK_CU(sh_fill_async(st_function(sh_res_ptx, "sh_fill"), a, WORDS, 1, s1a));
    CHECK_CU(cuEventCreate(&filled, CU_EVENT_DISABLE_TIMING));
    CHECK_CU(cuEventRecord(filled, s1a));
    CHECK_CU(cuStreamWaitEvent(s1b, filled, 0));
    CHECK_CU(cuCtxSetCurrent(c0));
    CHECK_CU(cuMemsetD32Async(a, 0, WORDS, s1b));
    CHECK_CU(cuCtxSetCurrent(c1));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuMemFree(a));
    printf("a of device 1 set on its stream with device 0 current\n");
    evict_busy(s1a, CU_STREAM_PER_THREAD);
    CHECK_CU(cuEventDestroy(filled));
    CHECK_CU(cuStreamDestroy(s1a));
    CHECK_CU(cuStreamDestroy(s1b));
}

/* A used on the per-thread default stream in the primary context, then evict_busy in a
 * context made with cuCtxCreate, the slow kernel on its legacy stream. */
static void contexts(void)
{
    CUcontext c2;
    CUdeviceptr a;
    CUstream s2;

    st_setup(0);
    CHECK_CU(cuMemAlloc(&a, BYTES));
    CHECK_CU(sh_fill_async(st_function(sh_res_ptx, "sh_fill"), a, WORDS, 1,
                           CU_STREAM_PER_THREAD));
    CHECK_CU(cuStreamSynchronize(CU_STREAM_PER_THREAD));
    CHECK_CU(cuMemFree(a));
    CHECK_CU(cuCtxCreate(&c2, NULL, 0, 0));
    printf("a used in the primary context, a second context made\n");
    CHECK_CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    evict_busy(s2, NULL);
    CHECK_CU(cuStreamDestroy(s2));
    CHECK_CU(cuCtxDestroy(c2));
}

static void scenario(void)
{
    const char *mode = getenv("MODE");

    if (mode && !strcmp(mode, "contexts"))
        contexts();
    else if (mode && !strcmp(mode, "peer-stream"))
        peer_stream();
    else
        devices();
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    const char *modes[] = { "MODE=devices", "MODE=peer-stream", "MODE=contexts" };
    for (int i = 0; i < 3; i++) {
        const char *env[] = { "ELIXIR_SIM_DEVICES=2", "ELIXIR_SIM_RACECHECK=fail",
                              "ELIXIR_GPU_MEMORY=4M", "ELIXIR_SIM_HOST_VMM=1", modes[i], NULL };
        sh_run_t plain = sh_run_plain_ok(env), shim = sh_run_ok("scenario", env);
        sh_same_transcript(modes[i] + 5, &plain, &shim);
    }
    return 0;
}
