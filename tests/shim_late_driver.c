/* SPDX-License-Identifier: MIT */
/*
 * shim_late_driver.c - libelixir.so starting before the program has loaded libcuda.so.1.
 *
 * This program is not linked with the driver (shim/shim.mk builds it without -lcuda), so at
 * start-up only the preloaded shim defines the CUDA names.  It finds cuMemAlloc_v2 with
 * dlsym(RTLD_NEXT), the next definition after the program, which must be the shim's wrapper
 * (dlsym(RTLD_DEFAULT) answers NULL, as without the shim: no driver defines the name yet),
 * and calls it first: the shim starts
 * and opens the driver itself, and the call returns the driver's answer before cuInit,
 * CUDA_ERROR_NOT_INITIALIZED.  Only then does the program dlopen libcuda.so.1, the way a
 * framework does, and through that handle initialise the driver and make a context current.
 * Allocating, setting and reading back memory through the shim's wrappers must then work, and
 * the shim must have counted the calls.  The test re-executes itself with the shim preloaded.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#define BYTES 4096

static void fail(const char *what, int r)
{
    fprintf(stderr, "%s: %d\n", what, r);
    exit(1);
}

/* The sanitizer runtime this program was built with, which must come first in LD_PRELOAD,
 * or NULL. */
static const char *sanitizer_runtime(void)
{
    static const char *const inits[] = { "__asan_init", "__tsan_init" };
    Dl_info info;

    for (int i = 0; i < 2; i++) {
        void *p = dlsym(RTLD_DEFAULT, inits[i]);
        if (p && dladdr(p, &info) && info.dli_fname && strstr(info.dli_fname, ".so"))
            return info.dli_fname;
    }
    return NULL;
}

/* Unless the shim is preloaded, run this program again with it ($BUILD/libelixir.so). */
static void reexec_preloaded(char **argv)
{
    const char *build = getenv("BUILD"), *rt = sanitizer_runtime();
    char rel[PATH_MAX], path[PATH_MAX], preload[2 * PATH_MAX + 2];

    if (getenv("LD_PRELOAD") && strstr(getenv("LD_PRELOAD"), "libelixir.so"))
        return;
    snprintf(rel, sizeof(rel), "%s/libelixir.so", build && *build ? build : "build");
    if (!realpath(rel, path))
        fail("cannot find libelixir.so", 0);
    snprintf(preload, sizeof(preload), "%s%s%s", rt ? rt : "", rt ? ":" : "", path);
    setenv("LD_PRELOAD", preload, 1);
    execv("/proc/self/exe", argv);
    fail("cannot run again", 0);
}

int main(int argc, char **argv)
{
    CUresult (*alloc)(CUdeviceptr *, size_t), (*memset8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*dtoh)(void *, CUdeviceptr, size_t), (*init)(unsigned);
    CUresult (*retain)(CUcontext *, CUdevice), (*set)(CUcontext);
    long long (*calls)(const char *);
    unsigned char host[BYTES];
    CUdeviceptr p = 0;
    CUcontext ctx;
    Dl_info info;
    CUresult r;

    (void)argc;
    reexec_preloaded(argv);
    if (dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD))
        fail("libcuda.so.1 is loaded before the program asked for it", 0);
    if (dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"))
        fail("dlsym(RTLD_DEFAULT) finds cuMemAlloc_v2 with no driver loaded", 0);
    *(void **)&alloc = dlsym(RTLD_NEXT, "cuMemAlloc_v2");
    if (!alloc || !dladdr((void *)alloc, &info) || !strstr(info.dli_fname, "libelixir.so"))
        fail("cuMemAlloc_v2 is not the shim's", 0);
    if ((r = alloc(&p, BYTES)) != CUDA_ERROR_NOT_INITIALIZED)
        fail("cuMemAlloc_v2 before cuInit, expected CUDA_ERROR_NOT_INITIALIZED", r);

    void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!drv)
        fail("dlopen libcuda.so.1", 0);
    *(void **)&init = dlsym(drv, "cuInit");
    *(void **)&retain = dlsym(drv, "cuDevicePrimaryCtxRetain");
    *(void **)&set = dlsym(drv, "cuCtxSetCurrent");
    *(void **)&memset8 = dlsym(drv, "cuMemsetD8_v2");
    *(void **)&dtoh = dlsym(drv, "cuMemcpyDtoH_v2");
    *(void **)&calls = dlsym(RTLD_DEFAULT, "elixir_shim_calls");
    if (!init || !retain || !set || !memset8 || !dtoh || !calls)
        fail("a driver entry point is missing", 0);
    if ((r = init(0)) || (r = retain(&ctx, 0)) || (r = set(ctx)))
        fail("driver start-up", r);
    if ((r = alloc(&p, BYTES)) || (r = memset8(p, 0x5a, BYTES)) || (r = dtoh(host, p, BYTES)))
        fail("allocate, set and read back", r);
    for (int i = 0; i < BYTES; i++)
        if (host[i] != 0x5a)
            fail("byte read back wrong at", i);
    if (calls("cuMemAlloc_v2") != 2 || calls("cuMemsetD8_v2") != 1 ||
        calls("cuMemcpyDtoH_v2") != 1)
        fail("the shim did not count the calls", (int)calls("cuMemAlloc_v2"));
    printf("the shim started before libcuda.so.1 was loaded; the driver opened later serves "
           "through it\n");
    return 0;
}
