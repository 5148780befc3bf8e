/* SPDX-License-Identifier: MIT */
/*
 * shim_dlsym.c - the dlsym path: dlopen("libcuda.so.1") + dlsym, with libelixir.so preloaded.
 *
 *   - a hooked name looked up on the driver's handle, RTLD_DEFAULT or RTLD_NEXT is the
 *     shim's wrapper of exactly that name, before the shim has started (as a library probing
 *     at load time sees it: checked from a constructor) and after; calls through it are
 *     counted by the shim and behave as the driver's;
 *   - names the shim does not hook (cuInit, the legacy cuMemAlloc) are the driver's own;
 *     unknown names give NULL and a dlerror message, as without the shim;
 *   - RTLD_NEXT is resolved from the caller (this program), not from libelixir.so: the
 *     next definition of elixir_shim_calls after the program is the shim's;
 *   - eight threads probing and calling at once while the shim starts do not deadlock.
 */
#include <pthread.h>
#include <string.h>

#include "shim_test.h"
#include "simtest.h"

#define THREADS 8

static void *at_load[3];    /* what a load-time probe saw (from the constructor) */

__attribute__((constructor)) static void probe_at_load(void)
{
    at_load[0] = dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
    at_load[1] = dlsym(RTLD_NEXT, "cuGetProcAddress_v2");
    at_load[2] = dlsym(RTLD_DEFAULT, "cuInit");
}

/* p must be the shim's wrapper named `name`. */
static void expect_wrapper(const char *how, const void *p, const char *name)
{
    EXPECT(sh_in_shim(p) && strcmp(sh_name(p), name) == 0, "%s(%s) is %s in %s", how, name,
           sh_name(p), sh_in_shim(p) ? "the shim" : "another object");
}

/* p must be the simulator's own `name`. */
static void expect_driver(const char *how, const void *p, const char *name)
{
    EXPECT(p && !sh_in_shim(p) && strcmp(sh_name(p), name) == 0, "%s(%s) is %s", how, name,
           sh_name(p));
}

static void check_load_time(void)
{
    expect_wrapper("dlsym at load, RTLD_DEFAULT", at_load[0], "cuMemAlloc_v2");
    expect_wrapper("dlsym at load, RTLD_NEXT", at_load[1], "cuGetProcAddress_v2");
    expect_driver("dlsym at load, RTLD_DEFAULT", at_load[2], "cuInit");
}

static void check_handle(void *h)
{
    static const char *const hooked[] = { "cuMemAlloc_v2", "cuMemcpyHtoD_v2_ptds",
                                          "cuLaunchKernel_ptsz", "cuGetProcAddress",
                                          "cuCtxDestroy", "cuMemsetD2D32Async_ptsz",
                                          "cuCtxSynchronize_v2" };
    const char *err;

    for (size_t i = 0; i < sizeof(hooked) / sizeof(hooked[0]); i++) {
        expect_wrapper("dlsym(libcuda)", dlsym(h, hooked[i]), hooked[i]);
        expect_wrapper("dlsym(RTLD_DEFAULT)", dlsym(RTLD_DEFAULT, hooked[i]), hooked[i]);
        expect_wrapper("dlsym(RTLD_NEXT)", dlsym(RTLD_NEXT, hooked[i]), hooked[i]);
    }
    expect_driver("dlsym(libcuda)", dlsym(h, "cuInit"), "cuInit");
    expect_driver("dlsym(libcuda)", dlsym(h, "cuMemAlloc"), "cuMemAlloc");
    expect_driver("dlsym(RTLD_DEFAULT)", dlsym(RTLD_DEFAULT, "cuStreamQuery"), "cuStreamQuery");
    dlerror();
    EXPECT(dlsym(h, "cuNoSuchFunction") == NULL, "cuNoSuchFunction was found");
    err = dlerror();
    EXPECT(err && strstr(err, "cuNoSuchFunction"), "dlerror after a miss: %s", err ? err : "NULL");
    EXPECT(dlsym(h, "no_such_symbol") == NULL && dlerror() != NULL, "no_such_symbol was found");
}

/* RTLD_NEXT from this program: the next object defining elixir_shim_calls is the shim. */
static void check_rtld_next(void)
{
    void *p = dlsym(RTLD_NEXT, "elixir_shim_calls");
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);

    EXPECT(p && sh_in_shim(p), "dlsym(RTLD_NEXT, elixir_shim_calls) from the program is %p", p);
    EXPECT(dlsym(RTLD_NEXT, "malloc") != NULL, "dlsym(RTLD_NEXT, malloc) is NULL");
    EXPECT(libc && dlsym(libc, "cuMemAlloc_v2") == NULL, "libc's handle finds cuMemAlloc_v2");
}

/* Calls through dlsym'd pointers reach the driver through the wrappers. */
static void check_calls(void *h)
{
    CUresult (*alloc)(CUdeviceptr *, size_t);
    CUresult (*release)(CUdeviceptr);
    long long before = sh_calls("cuMemAlloc_v2");
    CUdeviceptr d;

    *(void **)&alloc = dlsym(h, "cuMemAlloc_v2");
    *(void **)&release = dlsym(h, "cuMemFree_v2");
    CHECK_CU(alloc(&d, 4096));
    EXPECT_CU(CUDA_ERROR_OUT_OF_MEMORY, alloc(&d, (size_t)1 << 50));
    CHECK_CU(release(d));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, release(d));
    EXPECT(sh_calls("cuMemAlloc_v2") == before + 2, "cuMemAlloc_v2 entered %lld times",
           sh_calls("cuMemAlloc_v2") - before);
}

static pthread_barrier_t start;
static CUcontext primary;

/* Probe and call at once on several threads, while the shim may still be starting. */
static void *probe_thread(void *arg)
{
    void *h = arg;
    CUresult (*info)(size_t *, size_t *);
    size_t free_b, total_b;

    if (cuCtxSetCurrent(primary) != CUDA_SUCCESS)
        return (void *)1;
    pthread_barrier_wait(&start);
    for (int i = 0; i < 200; i++) {
        *(void **)&info = dlsym(i % 2 ? h : RTLD_DEFAULT, "cuMemGetInfo_v2");
        if (!sh_in_shim((void *)info) || info(&free_b, &total_b) != CUDA_SUCCESS)
            return (void *)1;
    }
    return NULL;
}

static void check_threads(void *h)
{
    pthread_t t[THREADS];
    void *ret;

    pthread_barrier_init(&start, NULL, THREADS);
    for (int i = 0; i < THREADS; i++)
        EXPECT(pthread_create(&t[i], NULL, probe_thread, h) == 0, "pthread_create");
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], &ret);
        EXPECT(ret == NULL, "thread %d: a probe or call through it failed", i);
    }
    pthread_barrier_destroy(&start);
}

int main(int argc, char **argv)
{
    void *h;

    (void)argc;
    sh_reexec_preloaded(argv);
    check_load_time();
    EXPECT(sh_calls("cuMemAlloc_v2") == 0, "calls before any CUDA call");
    h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    EXPECT(h, "dlopen: %s", dlerror());
    check_handle(h);
    check_rtld_next();
    primary = st_setup(0);      /* calls nothing the shim hooks: it starts in the threads */
    check_threads(h);
    check_calls(h);
    check_handle(h);        /* again, now through the started shim's map */
    return 0;
}
