/* SPDX-License-Identifier: MIT */
/*
 * race_declared_access.c - what counts as a conflict.  Kernels that declare their accesses
 * (sim_kernel_access) on two unordered streams race only where the declared bytes overlap and
 * one of them writes: disjoint halves of one allocation are fine, two readers of the same bytes
 * are fine, a reader and a writer of the same bytes are reported.  A kernel that declares
 * nothing is taken to read and write every allocation its pointer arguments point into.  Each
 * program runs in a child process under ELIXIR_SIM_RACECHECK=fail.
 */
#include <string.h>

#include "simchild.h"
#include "simtest.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry touch(.param .u64 p, .param .u32 off, .param .u32 len, .param .u32 mode)\n"
    "{\n ret;\n}\n"
    ".visible .entry undeclared_toucher(.param .u64 p)\n{\n ret;\n}\n";

SIM_KERNEL void touch(const sim_launch_t *l, void **params)
{
    unsigned char *p = *(unsigned char **)params[0];
    unsigned off = *(unsigned *)params[1], len = *(unsigned *)params[2];
    int mode = (int)*(unsigned *)params[3];
    if (mode & SIM_ACCESS_WRITE)
        memset(p + off, 1, len);
    sim_kernel_access(p + off, len, mode);
}

SIM_KERNEL void undeclared_toucher(const sim_launch_t *l, void **params)
{
    unsigned char *p = *(unsigned char **)params[0];
    p[4000] = 2;
}

typedef struct access {
    unsigned off, len, mode;    /* mode 0: the undeclared kernel */
} access_t;

typedef struct scenario {
    access_t a, b;
    int racy;
    const char *what;
} scenario_t;

static void launch(CUmodule mod, CUstream s, CUdeviceptr *d, access_t *a)
{
    CUfunction f;
    CHECK_CU(cuModuleGetFunction(&f, mod, a->mode ? "touch" : "undeclared_toucher"));
    void *args[] = { d, &a->off, &a->len, &a->mode };
    CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
}

static void program(void *arg)
{
    scenario_t *sc = arg;
    CUmodule mod;
    CUstream s1, s2;
    CUdeviceptr d;

    st_setup(0);
    CHECK_CU(cuModuleLoadData(&mod, ptx));
    CHECK_CU(cuMemAlloc(&d, 8192));
    CHECK_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
    launch(mod, s1, &d, &sc->a);
    launch(mod, s2, &d, &sc->b);
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuStreamDestroy(s1));
    CHECK_CU(cuStreamDestroy(s2));
    CHECK_CU(cuMemFree(d));
    CHECK_CU(cuModuleUnload(mod));
}

int main(void)
{
    enum { R = SIM_ACCESS_READ, W = SIM_ACCESS_WRITE, RW = SIM_ACCESS_READWRITE };
    static scenario_t scenarios[] = {
        { { 0, 4096, W }, { 4096, 4096, W }, 0, "disjoint writes" },
        { { 0, 8192, R }, { 100, 200, R }, 0, "two readers" },
        { { 0, 4096, R }, { 4095, 2, W }, 1, "reader and overlapping writer" },
        { { 16, 16, RW }, { 0, 17, R }, 1, "read-write and overlapping reader" },
        { { 0, 100, R }, { 0, 0, 0 }, 1, "undeclared kernel and a reader elsewhere" },
    };
    static const char *const env[] = { "ELIXIR_SIM_RACECHECK=fail", NULL };
    static const char *const racy[] = { "race:", "touch", NULL };
    st_child_t c;

    for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
        st_run_child(program, &scenarios[i], env, &c);
        if (scenarios[i].racy) {
            st_child_expect(&c, 66, racy);
        } else {
            st_child_expect(&c, 0, NULL);
            EXPECT(!strstr(c.err, "race"), "%s: expected no race report, got:\n%s",
                   scenarios[i].what, c.err);
        }
        st_child_free(&c);
    }
    return 0;
}
