/* SPDX-License-Identifier: MIT */
/*
 * launch_private_params.c - kernel arguments are copied at launch: the caller overwrites its
 * argument variables (kernelParams form) and its packed buffer (extra form) right after
 * cuLaunchKernel returns, and the kernel, which runs later, still sees the values at the time
 * of the call, pointer arguments included.  The test re-executes itself with
 * ELIXIR_SIM_EXEC=lazy so that the kernels certainly run after the overwrites.
 */
#include <string.h>

#include "simchild.h"
#include "simtest.h"

typedef struct cfg {
    unsigned a, b;
    double c;
} cfg_t;

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry record(.param .u64 out, .param .u32 slot, .param .align 8 .b8 cfg[16])\n"
    "{\n ret;\n}\n";

SIM_KERNEL void record(const sim_launch_t *l, void **params)
{
    cfg_t *out = *(cfg_t **)params[0];
    unsigned slot = *(unsigned *)params[1];
    memcpy(&out[slot], params[2], sizeof(cfg_t));
}

static void expect_slots(CUdeviceptr d, cfg_t want0, const char *what)
{
    cfg_t got[2];
    CHECK_CU(cuMemcpyDtoH(got, d, sizeof(got)));
    EXPECT(got[0].a == want0.a && got[0].b == want0.b && got[0].c == want0.c,
           "%s: slot 0 holds %u %u %f, expected %u %u %f", what, got[0].a, got[0].b, got[0].c,
           want0.a, want0.b, want0.c);
    EXPECT(got[1].a == 0 && got[1].b == 0 && got[1].c == 0,
           "%s: slot 1 was written (%u %u %f): the kernel saw a later argument", what, got[1].a,
           got[1].b, got[1].c);
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_SIM_EXEC=lazy", NULL };
    CUmodule mod;
    CUfunction f;
    CUdeviceptr out1, out2, arg;
    unsigned char buf[32];
    size_t bytes = sizeof(buf);

    st_reexec(argv, env);
    st_setup(0);
    CHECK_CU(cuModuleLoadData(&mod, ptx));
    CHECK_CU(cuModuleGetFunction(&f, mod, "record"));
    CHECK_CU(cuMemAlloc(&out1, 2 * sizeof(cfg_t)));
    CHECK_CU(cuMemAlloc(&out2, 2 * sizeof(cfg_t)));
    CHECK_CU(cuMemsetD8(out1, 0, 2 * sizeof(cfg_t)));
    CHECK_CU(cuMemsetD8(out2, 0, 2 * sizeof(cfg_t)));

    /* kernelParams: every argument variable changes after the call. */
    unsigned slot = 0;
    cfg_t c = { 1, 2, 3.5 };
    arg = out1;
    void *args[] = { &arg, &slot, &c };
    CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    arg = out2;
    slot = 1;
    c = (cfg_t){ 91, 92, 93.5 };

    /* extra: the packed buffer is scribbled over after the call. */
    cfg_t c2 = { 4, 5, 6.5 };
    unsigned slot0 = 0;
    memset(buf, 0, sizeof(buf));
    memcpy(buf, &out2, 8);
    memcpy(buf + 8, &slot0, 4);
    memcpy(buf + 16, &c2, sizeof(c2));
    void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &bytes,
                      CU_LAUNCH_PARAM_END };
    CHECK_CU(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, extra));
    memset(buf + 8, 0x01, sizeof(buf) - 8);

    CHECK_CU(cuCtxSynchronize());
    expect_slots(out1, (cfg_t){ 1, 2, 3.5 }, "kernelParams form");
    expect_slots(out2, c2, "extra form");

    CHECK_CU(cuMemFree(out1));
    CHECK_CU(cuMemFree(out2));
    CHECK_CU(cuModuleUnload(mod));
    return 0;
}
