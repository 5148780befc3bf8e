/* SPDX-License-Identifier: MIT */
/*
 * shim_res_recycled_kernel.c - a kernel loaded after a context was destroyed may be given the
 * handle of a function that went with that context (the simulator hands out the shell of
 * the module unloaded last, as a driver whose handles are addresses of its own objects may),
 * and the shim must read its parameter layout again rather than use the one it cached for
 * the old function.
 *
 * In a context made with cuCtxCreate, sh_fill(p, n, seed) (a pointer first, a 4-byte seed
 * last) is launched once, which caches its layout; the context is destroyed.  In a second
 * context a module whose only kernel is rk_fill(seed, n, p) (the 4-byte seed first, the
 * pointer last) is loaded: its function gets sh_fill's handle.  Under a 4 MiB GPU budget
 * three 2 MiB buffers are filled with it twice, each launch needing its buffer back in GPU
 * memory, and read back.  With sh_fill's layout the shim would take the pointer for a
 * 4-byte value and miss it: with evicted chunks unmapped the kernel faults.  The transcripts
 * must match without and with the shim, evicted chunks mapped and unmapped.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define BYTES (2 * SH_MIB)
#define N 3

static const char rk_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry rk_fill(.param .u32 seed, .param .u64 n, .param .u64 p)\n{\n ret;\n}\n";

/* rk_fill(seed, n, p): word i of p becomes sh_pattern(seed, i), for i < n. */
SIM_KERNEL void rk_fill(const sim_launch_t *l, void **params)
{
    uint32_t seed = *(uint32_t *)params[0];
    uint64_t n = *(uint64_t *)params[1];
    uint32_t *p = *(uint32_t **)params[2];
    (void)l;

    sim_kernel_access(p, n * 4, SIM_ACCESS_WRITE);
    for (uint64_t i = 0; i < n; i++)
        p[i] = sh_pattern(seed, i);
}

/* rk_fill over the words of p.  The seed is kept in 8 bytes, so that a shim reading it with
 * a stale 8-byte layout reads nothing outside the argument. */
static CUresult rk_launch(CUfunction f, CUdeviceptr p, uint32_t seed)
{
    uint64_t seed_word = seed, n = BYTES / 4;
    void *args[] = { &seed_word, &n, &p };

    return sh_launch(f, NULL, args);
}

/* In a context that is then destroyed: sh_fill launched once; its handle is returned. */
static CUfunction first_context(void)
{
    CUcontext a;
    CUdeviceptr p;

    CHECK_CU(cuCtxCreate(&a, NULL, 0, 0));
    CUfunction fill = st_function(sh_res_ptx, "sh_fill");
    CHECK_CU(cuMemAlloc(&p, 4096));
    CHECK_CU(sh_fill_async(fill, p, 1024, 1, NULL));
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuCtxDestroy(a));
    return fill;
}

static void scenario(void)
{
    CUcontext b;
    CUmodule m;
    CUfunction f;
    CUdeviceptr buf[N];
    uint32_t *host = malloc(BYTES);

    EXPECT(host, "out of memory");
    CHECK_CU(cuInit(0));
    CUfunction old = first_context();
    CHECK_CU(cuCtxCreate(&b, NULL, 0, 0));
    CHECK_CU(cuModuleLoadData(&m, rk_ptx));
    CHECK_CU(cuModuleGetFunction(&f, m, "rk_fill"));
    EXPECT(f == old, "the new kernel did not get the destroyed one's handle: nothing to test");
    printf("rk_fill has the handle sh_fill had\n");
    for (int i = 0; i < N; i++) {
        CHECK_CU(cuMemAlloc(&buf[i], BYTES));
        CHECK_CU(rk_launch(f, buf[i], 10 + (uint32_t)i));
    }
    for (int i = 0; i < N; i++)
        CHECK_CU(rk_launch(f, buf[i], 20 + (uint32_t)i));
    for (int i = 0; i < N; i++) {
        CHECK_CU(cuMemcpyDtoH(host, buf[i], BYTES));
        sh_expect_pattern(host, BYTES / 4, 20 + (uint32_t)i, "rk_fill");
        CHECK_CU(cuMemFree(buf[i]));
    }
    printf("%d buffers filled by rk_fill held their patterns\n", N);
    CHECK_CU(cuModuleUnload(m));
    CHECK_CU(cuCtxDestroy(b));
    free(host);
}

static void run(const char *what, const char *host_vmm)
{
    const char *plain_env[] = { "ELIXIR_SIM_RACECHECK=fail", host_vmm, NULL };
    const char *env[] = { "ELIXIR_SIM_RACECHECK=fail", "ELIXIR_GPU_MEMORY=4M",
                          "ELIXIR_STATS=1", host_vmm, NULL };
    sh_run_t plain = sh_run_plain_ok(plain_env), shim = sh_run_migrations(env);

    EXPECT(sh_stat(shim.err, "to GPU ") > 0, "%s: nothing came back into GPU memory:\n%s",
           what, shim.err);
    sh_same_transcript(what, &plain, &shim);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
