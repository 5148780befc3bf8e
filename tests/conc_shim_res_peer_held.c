/* SPDX-License-Identifier: MIT */
/*
 * conc_shim_res_peer_held.c - a chunk that another device's operation holds is not moved
 * under it by an operation of its own device.
 *
 * Two simulated devices, a 4 MiB GPU budget each, evicted chunks mapped.  On device 1, two
 * small buffers X and Y (one chunk holds both) are filled, then two 2 MiB buffers, which page
 * that chunk out to the host.  A second thread, on device 0, launches a kernel that spins
 * (until the main thread ends the spin, SPIN_MS milliseconds at most) and then writes X
 * through its peer pointer: the shim holds X's chunk on device 1 for that launch (and waits
 * for it).  Once that kernel spins, the main thread, on device 1, adds 1 to Y by kernel, which
 * would bring Y's chunk into GPU memory: the chunk must stay where it is
 * until the other device's kernel is done (in mapped host memory Y is reached all the same),
 * since a migration now would copy it while that kernel writes it.  (The simulator runs one
 * operation at a time, so such a copy would not lose the write here; on a GPU it could.)
 * Under the shim Y's chunk must still be on the host after the add; then the spin ends, and X
 * and Y must hold what the kernels wrote, as without the shim.  Run under the
 * thread sanitizer too (tests named conc_*).
 */
#define SH_RES_KERNELS
#include <pthread.h>
#include <stdatomic.h>

#include "shim_test.h"

#define SMALL 4096
#define BIG (2 * SH_MIB)
#define SPIN_MS 10000

static const char slow_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry slow_write(.param .u64 p, .param .u64 v)\n{\n ret;\n}\n";

static _Atomic int spinning;        /* slow_write has begun */
static _Atomic int release;         /* ends slow_write's spin */

/* slow_write(p, v): sets spinning, spins until release is set (SPIN_MS milliseconds at most),
 * then writes the 32-bit word v at p. */
SIM_KERNEL void slow_write(const sim_launch_t *l, void **params)
{
    uint32_t *p = *(uint32_t **)params[0];
    uint32_t v = (uint32_t)*(uint64_t *)params[1];
    (void)l;

    sim_kernel_access(p, 4, SIM_ACCESS_WRITE);
    spinning = 1;
    for (int i = 0; i < SPIN_MS && !release; i++)
        sh_spin_ms(1);
    *p = v;
}

static CUcontext c0, c1;
static CUdeviceptr x;
static CUresult writer_result;
static _Atomic int writer_over;     /* the writer is done (its kernel ran, or will not) */

/* Device 0: slow_write(x, 77) on a stream of its own, which the shim makes wait. */
static void *writer(void *arg)
{
    (void)arg;
    CUstream s;
    uint64_t v = 77;
    void *args[] = { &x, &v };

    writer_result = cuCtxSetCurrent(c0);
    if (writer_result == CUDA_SUCCESS)
        writer_result = cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    if (writer_result != CUDA_SUCCESS) {
        writer_over = 1;
        return NULL;
    }
    CUfunction f = st_function(slow_ptx, "slow_write");
    writer_result = sh_launch(f, s, args);
    if (writer_result == CUDA_SUCCESS)
        writer_result = cuStreamSynchronize(s);
    if (writer_result == CUDA_SUCCESS)
        writer_result = cuStreamDestroy(s);
    writer_over = 1;
    return NULL;
}

static void scenario(void)
{
    CUdeviceptr y, big[2];
    uint32_t host[SMALL / 4];
    pthread_t t;

    c0 = st_setup(0);
    c1 = st_setup(1);
    CHECK_CU(cuCtxSetCurrent(c0));
    CHECK_CU(cuCtxEnablePeerAccess(c1, 0));
    CHECK_CU(cuCtxSetCurrent(c1));
    CUfunction fill = st_function(sh_res_ptx, "sh_fill"), add = st_function(sh_res_ptx, "sh_add");
    CHECK_CU(cuMemAlloc(&x, SMALL));
    CHECK_CU(cuMemAlloc(&y, SMALL));
    CHECK_CU(sh_fill_async(fill, x, SMALL / 4, 1, NULL));
    CHECK_CU(sh_fill_async(fill, y, SMALL / 4, 2, NULL));
    for (int i = 0; i < 2; i++) {
        CHECK_CU(cuMemAlloc(&big[i], BIG));
        CHECK_CU(sh_fill_async(fill, big[i], BIG / 4, 3 + (uint32_t)i, NULL));
    }
    CHECK_CU(cuCtxSynchronize());

    EXPECT(pthread_create(&t, NULL, writer, NULL) == 0, "pthread_create failed");
    while (!spinning && !writer_over)
        ;                           /* (the writer's kernel runs once its thread waits; a
                                     * kernel that faults before it spins ends the writer) */
    uint64_t n = SMALL / 4;
    uint32_t one = 1;
    void *args[] = { &y, &n, &one };
    CHECK_CU(sh_launch(add, NULL, args));
    sh_expect_where(y, 0, "y, added to while device 0's kernel held its chunk");
    release = 1;
    CHECK_CU(cuCtxSynchronize());
    EXPECT(pthread_join(t, NULL) == 0, "pthread_join failed");
    CHECK_CU(writer_result);

    CHECK_CU(cuMemcpyDtoH(host, x, SMALL));
    EXPECT(host[0] == 77, "x[0] is %u, expected 77 (written by device 0)", host[0]);
    host[0] = sh_pattern(1, 0);
    sh_expect_pattern(host, SMALL / 4, 1, "x past the word device 0 wrote");
    CHECK_CU(cuMemcpyDtoH(host, y, SMALL));
    for (uint32_t i = 0; i < SMALL / 4; i++)
        EXPECT(host[i] == sh_pattern(2, i) + 1, "y[%u] is 0x%08x, expected 0x%08x", i, host[i],
               sh_pattern(2, i) + 1);
    printf("x written by device 0 and y added to by device 1 at once\n");
    for (int i = 0; i < 2; i++)
        CHECK_CU(cuMemFree(big[i]));
    CHECK_CU(cuMemFree(x));
    CHECK_CU(cuMemFree(y));
}

int main(int argc, char **argv)
{
    sh_scenario_child(argc, argv, scenario);
    const char *env[] = { "ELIXIR_SIM_DEVICES=2", "ELIXIR_SIM_RACECHECK=fail",
                          "ELIXIR_GPU_MEMORY=4M", "ELIXIR_SIM_HOST_VMM=1", NULL };
    sh_run_t plain = sh_run_plain_ok(env), shim = sh_run_ok("scenario", env);

    sh_same_transcript("mapped", &plain, &shim);
    return 0;
}
