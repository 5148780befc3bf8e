/* SPDX-License-Identifier: MIT */
/*
 * shim_res_host_shared.c - the host budget is the process's, shared by every device.
 *
 * Two simulated devices under libelixir.so, each with a 4 MiB GPU budget, and an 8 MiB host
 * budget for the process.  Device 0 allocates 2 MiB buffers, each filled by a kernel, until
 * an allocation fails: six fit (4 MiB in GPU memory, 8 on the host).  Device 1 then does the
 * same: only its GPU budget is left, two buffers, where a budget per device would give it six
 * again.  cuMemGetInfo's capacity is each device's GPU budget plus the shared host budget.
 * Once device 0 frees its buffers, the host memory they held goes back (not kept as device
 * 0's spares while device 1 wants room), and device 1 pages into it: three more buffers (the
 * chunk of device 0's small allocation, evicted too, keeps the rest).  Every buffer keeps its
 * data, each device's statistics show the 8 MiB budget, and every failed allocation is
 * CUDA_ERROR_OUT_OF_MEMORY.  With host memory mapped and without.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define MAXBUF 16
#define BYTES (2 * SH_MIB)

typedef struct side {
    CUcontext ctx;
    CUfunction fill, verify;
    CUdeviceptr bad, buf[MAXBUF];
    int n;
} side_t;

static void side_start(side_t *s, int device)
{
    s->ctx = st_setup(device);
    s->fill = st_function(sh_res_ptx, "sh_fill");
    s->verify = st_function(sh_res_ptx, "sh_verify");
    CHECK_CU(cuMemAlloc(&s->bad, 4));
    s->n = 0;
}

/* Allocates and fills buffers on s's device until an allocation fails; returns how many. */
static int fill_up(side_t *s, uint32_t seed, const char *what)
{
    CUresult r = CUDA_SUCCESS;
    int first = s->n;

    CHECK_CU(cuCtxSetCurrent(s->ctx));
    while (s->n < MAXBUF && (r = cuMemAlloc(&s->buf[s->n], BYTES)) == CUDA_SUCCESS) {
        CHECK_CU(sh_fill_async(s->fill, s->buf[s->n], BYTES / 4, seed + (uint32_t)s->n, NULL));
        s->n++;
    }
    EXPECT(r == CUDA_ERROR_OUT_OF_MEMORY, "%s: allocation %d returned %d", what, s->n, (int)r);
    CHECK_CU(cuCtxSynchronize());
    printf("%s: %d buffers\n", what, s->n - first);
    return s->n - first;
}

static void check_all(side_t *s, uint32_t seed, const char *what)
{
    CHECK_CU(cuCtxSetCurrent(s->ctx));
    for (int i = 0; i < s->n; i++)
        sh_expect_verified(s->verify, s->buf[i], BYTES / 4, seed + (uint32_t)i, s->bad, what);
}

static void scenario(void)
{
    side_t a, b;
    size_t free_b, total;

    side_start(&a, 0);
    side_start(&b, 1);
    int na = fill_up(&a, 100, "device 0");
    int nb = fill_up(&b, 200, "device 1");
    EXPECT(na >= 5 && nb <= 2, "device 0 took %d buffers, device 1 %d; the shared host budget "
           "should leave device 1 its GPU budget only", na, nb);
    CHECK_CU(cuMemGetInfo(&free_b, &total));
    EXPECT(total == 12 * SH_MIB, "device 1's capacity: %zu bytes, expected 4 + 8 MiB", total);
    check_all(&a, 100, "device 0");
    check_all(&b, 200, "device 1");
    CHECK_CU(cuCtxSetCurrent(a.ctx));
    for (int i = 0; i < a.n; i++)
        CHECK_CU(cuMemFree(a.buf[i]));
    a.n = 0;
    printf("device 0 freed its buffers\n");
    int more = fill_up(&b, 200, "device 1 again");
    EXPECT(more >= 3, "device 1 took %d more buffers once device 0 freed its host memory", more);
    check_all(&b, 200, "device 1");
    printf("every buffer holds its pattern\n");
}

static void run(const char *what, const char *host_vmm)
{
    const char *const env[] = { "ELIXIR_SIM_DEVICES=2", "ELIXIR_GPU_MEMORY=4M",
                                "ELIXIR_HOST_MEMORY=8M", "ELIXIR_STATS=1",
                                "ELIXIR_SIM_RACECHECK=fail", host_vmm, NULL };
    sh_run_t shim = sh_run_ok("scenario", env);

    printf("%s:\n%s", what, shim.out);
    int shown = 0;
    for (const char *p = shim.err; (p = strstr(p, "host peak ")); p++) {
        long long peak = -1, budget = -1;
        sscanf(p, "host peak %lld MiB of %lld", &peak, &budget);
        shown += peak > 0 && peak <= 8 && budget == 8;
    }
    EXPECT(shown == 2, "%s: both devices should show host peaks within the shared 8 MiB:\n%s",
           what, shim.err);
    sh_run_free(&shim);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
