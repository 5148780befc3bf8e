/* SPDX-License-Identifier: MIT */
/*
 * conc_shim_res_wait_unlocked.c - while a thread waits for the GPU before moving or freeing a
 * chunk, other threads still launch on the same device (DESIGN.md, invariant 7: no lock of
 * the shim is held across a call that can block on the GPU).
 *
 * One simulated device, a 6 MiB GPU budget (three chunks), evicted chunks mapped (host VMM)
 * and, in a second round of runs, unmapped (ELIXIR_SIM_HOST_VMM=0).  Buffers V, Z, W and X
 * (2 MiB each) are filled in turn, which pages V out to the host.  The main thread enqueues a
 * kernel that spins (until the second thread ends the spin, SPIN_MS milliseconds at most) and
 * then adds 1 to W (sh_slow_add), and kernels that read Z and X, so that W, still in use, is
 * the least recently used chunk in GPU memory.  Then (MODE=evict-z) it adds 1 to V by kernel:
 * under the shim, V comes back and W must make room, once the spinning kernel is done.  A
 * second thread, AFTER_MS into that launch, enqueues a kernel reading Z on a stream of its
 * own, after the spinning kernel (by event; Z is in GPU memory: the launch needs nothing but
 * the device), and then ends the spin: its launch must return while the kernel still spins
 * (were it held up by the main thread's launch, the kernel would spin its SPIN_MS first,
 * however fast or loaded the machine).  Under the shim W must be on the host after the main
 * thread's launch, and V and W must hold their patterns plus 1, as without the shim.  The
 * race checker fails the run should W's move not wait for the kernel.
 *
 * With MODE=evict-w the other thread reads W instead, while the main thread's eviction waits
 * for it: W is in use again then, so Z must be evicted instead (the race checker fails the
 * run should W move under the read), and W stay in GPU memory.  With MODE=free the main
 * thread frees W instead of adding to V, which waits for the kernel, while the other thread
 * reads Z as in the first run; with MODE=alloc it allocates a fifth buffer Y instead, for
 * which W must make room under the shim (the allocation waits for the kernel, not the other
 * thread); with MODE=create it creates 2 MiB of device memory of its own instead
 * (cuMemCreate, counted against the GPU budget), and with MODE=pool it allocates them from a
 * pool of its own (cuMemAllocFromPoolAsync), for which W must make room in the same way.
 * With MODE=copy the main thread copies a new pattern into V from host memory instead of
 * adding to it: where evicted chunks are unmapped, V comes back first and W must make room,
 * waiting for the kernel without the lock, as in the first run.
 *
 * With MODE=evict-free the other thread frees W (which waits for the kernel) while the main
 * thread's eviction of W waits for it: the eviction must give W up, and V come back all the
 * same.  With MODE=evict-own Z and X are read (and the host waits for the reads) before the
 * spinning kernel is enqueued, so that W is the most recently used chunk and Z and X are
 * idle; the main thread's kernel adds 1 to Z, X (in GPU memory, its first arguments) and V,
 * and the other thread allocates a fifth buffer Y while the eviction of W for V waits: where
 * evicted chunks are unmapped, Z and X are held for the launch meanwhile, so Y finds no room
 * in GPU memory at once (its allocation must return while the kernel still spins) and Z and
 * X stay there (were Z taken, the kernel would find it unmapped).  (Where evicted chunks stay
 * mapped nothing is held: Y may then take Z's place, waiting behind the spinning kernel,
 * since the simulator runs one operation at a time.)  Where both threads may wait for the
 * kernel, nobody can end its spin: it spins SHORT_MS.  Run under the thread sanitizer too
 * (tests named conc_*).
 */
#define SH_RES_KERNELS
#include <pthread.h>
#include <stdatomic.h>

#include "shim_test.h"

#define BYTES (2 * SH_MIB)
#define WORDS (BYTES / 4)
#define SPIN_MS 10000
#define SHORT_MS 400               /* where both threads may wait for the kernel */
#define AFTER_MS 50

static uint32_t host[WORDS];
static CUcontext ctx;
static CUdeviceptr z, w, *reads;     /* the other thread reads *reads: z, or w */
static int other_frees;             /* ... or frees w */
static int other_allocs;            /* ... or allocates y */
static CUdeviceptr y_other;
static CUstream s_other;
static CUevent slow_done;            /* recorded after the spinning kernel */
static CUresult other_result;
static int other_early;             /* the second thread's call returned before the kernel
                                     * was done */
static _Atomic int go;

static CUresult peek_on(CUstream s, CUdeviceptr p)
{
    void *args[] = { &p };

    return sh_launch(st_function(sh_res_ptx, "sh_peek"), s, args);
}

/* The second thread: once the main thread's launch (or free) has begun, reads *reads on its
 * own stream, after the spinning kernel; or frees w, or allocates y.  Then it notes whether
 * the kernel still spun when its call returned, and ends the spin. */
static void *other(void *arg)
{
    (void)arg;
    other_result = sh_second_thread_start(&go, AFTER_MS, ctx);
    if (other_result == CUDA_SUCCESS && other_frees) {
        other_result = cuMemFree(w);
    } else if (other_result == CUDA_SUCCESS && other_allocs) {
        other_result = cuMemAlloc(&y_other, BYTES);
    } else if (other_result == CUDA_SUCCESS) {
        other_result = cuStreamWaitEvent(s_other, slow_done, 0);
        if (other_result == CUDA_SUCCESS)
            other_result = peek_on(s_other, *reads);
    }
    other_early = !sh_slow_done;
    sh_slow_release = 1;
    return NULL;
}

static void expect_plus_one(CUdeviceptr p, uint32_t seed, const char *what)
{
    CHECK_CU(cuMemcpyDtoH(host, p, BYTES));
    sh_expect_pattern_plus(host, WORDS, seed, 1, what);
    printf("%s holds its pattern plus 1\n", what);
}

static void scenario(void)
{
    CUdeviceptr v, x, y = 0;
    CUstream s_slow, s_peek, s_add;
    pthread_t t;

    const char *mode = getenv("MODE") ? getenv("MODE") : "evict-z";
    int freeing = !strcmp(mode, "free"), allocating = !strcmp(mode, "alloc");
    int creating = !strcmp(mode, "create"), pooling = !strcmp(mode, "pool");
    CUmemGenericAllocationHandle made = 0;
    CUmemoryPool pool = NULL;
    CUdeviceptr pooled = 0;
    int copying = !strcmp(mode, "copy");
    reads = !strcmp(mode, "evict-w") ? &w : &z;
    other_frees = !strcmp(mode, "evict-free");
    other_allocs = !strcmp(mode, "evict-own");
    const char *vmm = getenv("ELIXIR_SIM_HOST_VMM");
    int unmapped = vmm && !strcmp(vmm, "0");
    int both_wait = other_frees || (other_allocs && !(unmapped && getenv("LD_PRELOAD")));
    ctx = st_setup(0);
    CUfunction fill = st_function(sh_res_ptx, "sh_fill"), add = st_function(sh_res_ptx, "sh_add");
    CUdeviceptr bufs[4];
    sh_alloc_filled(fill, bufs, 4, BYTES, 1, NULL);      /* v, z, w, x: seeds 1 to 4 */
    v = bufs[0], z = bufs[1], w = bufs[2], x = bufs[3];
    CHECK_CU(cuCtxSynchronize());
    sh_expect_where(v, 0, "v, paged out for x");
    CHECK_CU(cuStreamCreate(&s_slow, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&s_peek, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&s_add, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&s_other, CU_STREAM_NON_BLOCKING));
    EXPECT(pthread_create(&t, NULL, other, NULL) == 0, "pthread_create failed");

    if (other_allocs) {                         /* z and x idle, w the most recent */
        CHECK_CU(peek_on(s_peek, z));
        CHECK_CU(peek_on(s_peek, x));
        CHECK_CU(cuStreamSynchronize(s_peek));
    }
    CHECK_CU(sh_slow_add_async(st_function(sh_res_ptx, "sh_slow_add"), w, WORDS,
                               both_wait ? SHORT_MS : SPIN_MS, s_slow));
    CHECK_CU(cuEventCreate(&slow_done, CU_EVENT_DISABLE_TIMING));
    CHECK_CU(cuEventRecord(slow_done, s_slow));
    if (!other_allocs) {
        CHECK_CU(peek_on(s_peek, z));
        CHECK_CU(peek_on(s_peek, x));
    }
    go = 1;
    uint64_t n = WORDS;
    uint32_t one = 1;
    void *add_args[] = { &v, &n, &one };
    if (freeing) {
        CHECK_CU(cuMemFree(w));
        w = 0;
        printf("w freed while the kernel using it ran\n");
    } else if (allocating) {
        CHECK_CU(cuMemAlloc(&y, BYTES));
        printf("y allocated while the kernel using w ran\n");
    } else if (creating) {
        CUmemAllocationProp prop = { .type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                     .location = { CU_MEM_LOCATION_TYPE_DEVICE, 0 } };
        CHECK_CU(cuMemCreate(&made, BYTES, &prop, 0));
        printf("device memory created while the kernel using w ran\n");
    } else if (pooling) {
        CUmemPoolProps props = { .allocType = CU_MEM_ALLOCATION_TYPE_PINNED,
                                 .location = { CU_MEM_LOCATION_TYPE_DEVICE, 0 } };
        CHECK_CU(cuMemPoolCreate(&pool, &props));
        CHECK_CU(cuMemAllocFromPoolAsync(&pooled, BYTES, pool, s_add));
        printf("pool memory allocated while the kernel using w ran\n");
    } else if (other_allocs) {
        void *add3_args[] = { &z, &x, &v, &n };
        CHECK_CU(sh_launch(st_function(sh_res_ptx, "sh_add3"), s_add, add3_args));
    } else if (copying) {
        for (uint64_t i = 0; i < WORDS; i++)
            host[i] = sh_pattern(7, i);
        CHECK_CU(cuMemcpyHtoDAsync(v, host, BYTES, s_add));
        printf("pattern 7 copied into v\n");
    } else {
        CHECK_CU(sh_launch(add, s_add, add_args));
    }
    if (freeing) {
        sh_expect_where(v, 0, "v, not needed by anything");
    } else if (allocating || creating || pooling) {
        sh_expect_where(w, 0, "w, paged out for y once the kernel using it was done");
    } else if (other_frees) {
        sh_expect_where(v, 1, "v, brought back while w was freed");
    } else if (other_allocs) {
        sh_expect_where(v, 1, "v, brought back while y was allocated");
    } else if (copying) {
        if (unmapped)                       /* v came back for the copy */
            sh_expect_where(w, 0, "w, paged out for v once the kernel using it was done");
    } else if (reads == &z) {
        sh_expect_where(w, 0, "w, paged out for v once the kernel using it was done");
    } else {
        sh_expect_where(w, 1, "w, read while its eviction waited");
        sh_expect_where(z, 0, "z, paged out for v instead of w");
    }
    EXPECT(pthread_join(t, NULL) == 0, "pthread_join failed");
    CHECK_CU(other_result);
    if (other_frees) {
        w = 0;
        printf("the other thread freed w\n");
    } else if (other_allocs) {
        printf("the other thread allocated y\n");
        y = y_other;
        if (!both_wait) {                   /* unmapped under the shim: z and x were held */
            EXPECT(other_early, "the other thread's allocation returned only once the kernel "
                   "was done: it waited for the main thread's launch");
            sh_expect_where(z, 1, "z, held for the launch while an eviction for it waited");
            sh_expect_where(x, 1, "x, held for the launch while an eviction for it waited");
        }
    } else {
        EXPECT(other_early, "the other thread's launch returned only once the kernel was done: "
               "it waited for the main thread's");
        printf("the other thread's launch returned at once\n");
    }
    CHECK_CU(cuCtxSynchronize());
    if (copying) {
        CHECK_CU(cuMemcpyDtoH(host, v, BYTES));
        sh_expect_pattern(host, WORDS, 7, "v");
        printf("v holds pattern 7\n");
    } else if (!freeing && !allocating && !creating && !pooling) {
        expect_plus_one(v, 1, "v");
    }
    if (made)
        CHECK_CU(cuMemRelease(made));
    if (pooled) {
        CHECK_CU(cuMemFreeAsync(pooled, s_add));
        CHECK_CU(cuStreamSynchronize(s_add));
        CHECK_CU(cuMemPoolDestroy(pool));
    }
    if (other_allocs) {
        expect_plus_one(z, 2, "z");
        expect_plus_one(x, 4, "x");
    }
    if (w)
        expect_plus_one(w, 3, "w");
    CUstream streams[] = { s_slow, s_peek, s_add, s_other };
    for (int i = 0; i < 4; i++)
        CHECK_CU(cuStreamDestroy(streams[i]));
    CHECK_CU(cuEventDestroy(slow_done));
    CUdeviceptr left[] = { v, z, w, x, y };     /* w (freed) and y (not made) may be 0 */
    for (int i = 0; i < 5; i++)
        if (left[i])
            CHECK_CU(cuMemFree(left[i]));
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    const char *modes[] = { "MODE=evict-z", "MODE=evict-w", "MODE=free", "MODE=alloc",
                            "MODE=create", "MODE=pool", "MODE=evict-free", "MODE=evict-own",
                            "MODE=copy" };
    enum { NMODES = sizeof(modes) / sizeof(modes[0]) };
    for (int i = 0; i < 2 * NMODES; i++) {
        int mapped = i < NMODES;
        const char *env[] = { "ELIXIR_SIM_RACECHECK=fail", "ELIXIR_GPU_MEMORY=6M",
                              mapped ? "ELIXIR_SIM_HOST_VMM=1" : "ELIXIR_SIM_HOST_VMM=0",
                              modes[i % NMODES], NULL };
        sh_run_t plain = sh_run_plain_ok(env), shim = sh_run_ok("scenario", env);
        char what[64];

        snprintf(what, sizeof(what), "%s, %s", modes[i % NMODES] + 5,
                 mapped ? "mapped" : "unmapped");
        sh_same_transcript(what, &plain, &shim);
    }
    return 0;
}
