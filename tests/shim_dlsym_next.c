/* SPDX-License-Identifier: MIT */
/*
 * shim_dlsym_next.c - dlsym(RTLD_NEXT) of a hooked name is resolved from the caller, also
 * when the caller is loaded after libelixir.so.
 *
 * The program runs with libelixir.so preloaded and, after it, another interposer
 * (tests/preload/next_interposer.c) that wraps cuMemAlloc_v2 and ncclAllReduce and finds what
 * it wraps with dlsym(RTLD_NEXT).  The C library resolves RTLD_NEXT from the caller's
 * address, but the shim used to look hooked names up from itself, so:
 *   - the program's lookup (the next definition after the program is the shim's) got the
 *     other interposer's wrapper instead;
 *   - the interposer's lookup (the next after it is the driver's) got its own wrapper back,
 *     which then called itself; for ncclAllReduce it got the shim's wrapper, which would
 *     have called the interposer again.
 * Now the program gets the shim's wrappers, the interposer the simulator's cuMemAlloc_v2 and
 * no ncclAllReduce (no NCCL is loaded), and an allocation through the interposer works.
 */
#include <string.h>

#include "shim_test.h"
#include "simtest.h"

/* The interposer beside this test program's build: $BUILD/tests/preload/next_interposer.so. */
static const char *interposer(void)
{
    static char path[PATH_MAX];
    const char *build = getenv("BUILD");
    char rel[PATH_MAX];

    snprintf(rel, sizeof(rel), "%s/tests/preload/next_interposer.so",
             build && *build ? build : "build");
    EXPECT(realpath(rel, path), "cannot find %s: %s", rel, strerror(errno));
    return path;
}

/* Is p inside the interposer? */
static int in_interposer(const void *p)
{
    Dl_info info;

    return p && dladdr(p, &info) && info.dli_fname && strstr(info.dli_fname, "next_interposer");
}

int main(int argc, char **argv)
{
    static char preload[3 * PATH_MAX];
    const char *env[] = { preload, NULL };
    void *(*lookup)(const char *);
    CUresult (*alloc)(CUdeviceptr *, size_t);
    CUdeviceptr d = 0;

    (void)argc;
    snprintf(preload, sizeof(preload), "%s:%s", sh_preload_entry(), interposer());
    st_reexec(argv, env);
    *(void **)&lookup = dlsym(RTLD_DEFAULT, "next_lookup");
    EXPECT(lookup, "the interposer is not loaded");

    void *mine = dlsym(RTLD_NEXT, "cuMemAlloc_v2");
    EXPECT(sh_in_shim(mine) && !strcmp(sh_name(mine), "cuMemAlloc_v2"),
           "dlsym(RTLD_NEXT, cuMemAlloc_v2) from the program is %s%s", sh_name(mine),
           in_interposer(mine) ? " of the other interposer" : "");
    void *theirs = lookup("cuMemAlloc_v2");
    EXPECT(theirs && !in_interposer(theirs) && !sh_in_shim(theirs),
           "dlsym(RTLD_NEXT, cuMemAlloc_v2) from the interposer is %s in %s", sh_name(theirs),
           in_interposer(theirs) ? "the interposer itself" : sh_in_shim(theirs) ? "the shim"
                                                                              : "?");
    void *nccl = lookup("ncclAllReduce");
    EXPECT(!nccl, "dlsym(RTLD_NEXT, ncclAllReduce) from the interposer is %s in %s",
           sh_name(nccl), in_interposer(nccl) ? "the interposer itself"
                          : sh_in_shim(nccl) ? "the shim" : "another object");
    printf("RTLD_NEXT: the program gets the shim's wrapper, the interposer the driver's %s\n",
           sh_name(theirs));

    st_setup(0);
    *(void **)&alloc = dlsym(dlopen(interposer(), RTLD_NOW | RTLD_NOLOAD), "cuMemAlloc_v2");
    EXPECT(in_interposer((void *)alloc), "the interposer's cuMemAlloc_v2 is not found");
    CHECK_CU(alloc(&d, 4096));
    CHECK_CU(cuMemFree(d));
    printf("an allocation through the interposer: CUDA_SUCCESS\n");
    return 0;
}
