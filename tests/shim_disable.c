/* SPDX-License-Identifier: MIT */
/*
 * shim_disable.c - ELIXIR_DISABLE=1: libelixir.so preloaded but a pure pass-through.
 *
 * No wrapper appears in the lookup paths at all: dlsym on the driver's handle, RTLD_DEFAULT
 * and RTLD_NEXT give the simulator's own functions for hooked names, and every request of
 * the cudart list put to cuGetProcAddress_v2 (the program's linked call, which does enter the
 * shim's export) comes back as the simulator's pointer.  Linked calls still work.
 */
#include <cudaTypedefs.h>

#include "shim_test.h"
#include "simtest.h"

static void expect_driver(const char *how, const void *p, const char *name)
{
    EXPECT(p && !sh_in_shim(p) && strcmp(sh_name(p), name) == 0, "%s(%s) is %s in %s", how, name,
           sh_name(p), sh_in_shim(p) ? "the shim" : "another object");
}

static void check_dlsym(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);

    EXPECT(h, "dlopen: %s", dlerror());
    expect_driver("dlsym(libcuda)", dlsym(h, "cuGetProcAddress_v2"), "cuGetProcAddress_v2");
    expect_driver("dlsym(libcuda)", dlsym(h, "cuMemAlloc_v2"), "cuMemAlloc_v2");
    expect_driver("dlsym(RTLD_DEFAULT)", dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"), "cuMemAlloc_v2");
    expect_driver("dlsym(RTLD_DEFAULT)", dlsym(RTLD_DEFAULT, "cuGetProcAddress"),
                  "cuGetProcAddress");
    expect_driver("dlsym(RTLD_NEXT)", dlsym(RTLD_NEXT, "cuLaunchKernel"), "cuLaunchKernel");
}

/* Every request through the linked cuGetProcAddress_v2 answers with a driver pointer. */
static int replay(FILE *f)
{
    char line[512];
    int requests = 0;

    while (fgets(line, sizeof(line), f)) {
        char *sp = strchr(line, ' '), *end;
        void *p = NULL;
        int ver, flags;

        if (line[0] == '#' || !sp)
            continue;
        *sp = '\0';
        ver = (int)strtol(sp + 1, &end, 10);
        flags = (int)strtol(end, &end, 10);
        cuGetProcAddress(line, &p, ver, (cuuint64_t)flags, NULL);
        EXPECT(!p || !sh_in_shim(p), "\"%s\" %d %d: %s is the shim's", line, ver, flags,
               sh_name(p));
        requests++;
    }
    return requests;
}

int main(int argc, char **argv)
{
    const char *env[] = { sh_preload_entry(), "ELIXIR_DISABLE=1", NULL };
    CUdeviceptr d;
    FILE *f;
    int n;

    (void)argc;
    st_reexec(argv, env);
    EXPECT(sh_calls("cuMemAlloc_v2") == 0, "the shim is not preloaded");
    check_dlsym();
    st_setup(0);
    CHECK_CU(cuMemAlloc(&d, 1 << 16));
    CHECK_CU(cuMemFree(d));
    EXPECT_CU(CUDA_ERROR_INVALID_VALUE, cuMemFree(d));
    EXPECT(sh_calls("cuMemFree_v2") == 2, "cuMemFree_v2 entered %lld times",
           sh_calls("cuMemFree_v2"));
    f = fopen(st_proc_requests(), "r");
    if (!f) {
        printf("skip: no request list\n");
        return TEST_SKIP;
    }
    n = replay(f);
    fclose(f);
    EXPECT(n > 400, "%d requests", n);
    EXPECT(sh_calls("cuGetProcAddress_v2") == n, "cuGetProcAddress_v2 entered %lld times",
           sh_calls("cuGetProcAddress_v2"));
    return 0;
}
