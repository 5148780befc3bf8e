/* SPDX-License-Identifier: MIT */
/*
 * time_pcie_duplex.c - the host link is not fully duplex: a host-to-device and a
 * device-to-host copy on independent streams each run at their direction's bandwidth alone,
 * but while both run their rates add up to at most the machine model's duplex figure.  The
 * copy scheduled second takes what the first leaves (an A100 measured 24-25 GB/s one way
 * while the other fell to 11-13 GB/s: NVIDIA/nvbandwidth issues 11 and 53).
 *
 * Each machine model runs in a child of its own (options are read at cuInit): the default and
 * h100-nvlink-4 models with their figures, one with asymmetric figures set by option, and one
 * with ELIXIR_SIM_PCIE_DUPLEX_GBPS=0, where the directions are independent.
 */
#include <string.h>
#include <sys/wait.h>

#include "simtest.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry busy(.param .f64 flops)\n{\n ret;\n}\n";

SIM_KERNEL void busy(const sim_launch_t *l, void **params)
{
    sim_kernel_cost(*(double *)params[0], 0);
}

#define BYTES (16u << 20)

typedef struct model {
    const char *name;
    const char *env[4];         /* VAR=VALUE set in the child */
    double h2d, d2h, duplex;    /* GB/s, as the child's machine has them */
    double tflops;
} model_t;

static const model_t models[] = {
    { "default", { NULL }, 25, 25, 36, 51 },
    { "h100-nvlink-4", { "ELIXIR_SIM_MACHINE=h100-nvlink-4" }, 50, 50, 72, 67 },
    { "asymmetric", { "ELIXIR_SIM_PCIE_H2D_GBPS=20", "ELIXIR_SIM_PCIE_D2H_GBPS=30",
                      "ELIXIR_SIM_PCIE_DUPLEX_GBPS=40" }, 20, 30, 40, 51 },
    { "full duplex", { "ELIXIR_SIM_PCIE_DUPLEX_GBPS=0" }, 25, 25, 0, 51 },
};

static const model_t *m;
static CUfunction fn;
static CUdeviceptr dev[2];
static void *pinned[2];
static CUstream s[2];
static CUevent start, end[2];

static double dmin(double a, double b)
{
    return a < b ? a : b;
}

/*
 * When (ms) a copy of BYTES at `gbps` that starts at `t` ends beside one of the other
 * direction that runs at `other_gbps` over [o_start, o_end) (ms), scheduled before it.
 */
static double expected_end(double t, double gbps, double o_start, double o_end, double other_gbps)
{
    double left = BYTES / 1e6;                      /* in GB/s x ms */
    double shared = m->duplex > 0 ? dmin(gbps, m->duplex - other_gbps) : gbps;
    if (t < o_start) {
        double span = o_start - t;
        if (left <= gbps * span)
            return t + left / gbps;
        left -= gbps * span;
        t = o_start;
    }
    if (t < o_end && shared > 0) {
        double span = o_end - t;
        if (left <= shared * span)
            return t + left / shared;
        left -= shared * span;
    }
    if (t < o_end)
        t = o_end;
    return t + left / gbps;
}

static void near(float got, double want, const char *what)
{
    EXPECT(got >= want * 0.999 - 0.002 && got <= want * 1.001 + 0.01,
           "%s (%s): expected %.4f ms, got %.4f ms", what, m->name, want, got);
}

/* Stream 0 runs a kernel of `kernel_ms` (0: none) then a copy in direction dir0 (0: H2D),
 * stream 1 a copy the other way, both from one start; returns when each copy ended (ms). */
static void pair(int dir0, double kernel_ms, float out[2])
{
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuEventRecord(start, s[0]));
    CHECK_CU(cuStreamWaitEvent(s[1], start, 0));
    if (kernel_ms > 0) {
        double flops = (kernel_ms - 0.002) * m->tflops * 1e9;
        void *args[] = { &flops };
        CHECK_CU(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s[0], args, NULL));
    }
    for (int i = 0; i < 2; i++) {
        int dir = i == 0 ? dir0 : !dir0;
        if (dir == 0)
            CHECK_CU(cuMemcpyHtoDAsync(dev[i], pinned[i], BYTES, s[i]));
        else
            CHECK_CU(cuMemcpyDtoHAsync(pinned[i], dev[i], BYTES, s[i]));
        CHECK_CU(cuEventRecord(end[i], s[i]));
    }
    CHECK_CU(cuCtxSynchronize());
    for (int i = 0; i < 2; i++)
        CHECK_CU(cuEventElapsedTime(&out[i], start, end[i]));
}

static void scenarios(void)
{
    float t[2];
    double first, gbps[2] = { m->h2d, m->d2h };

    for (int dir0 = 0; dir0 < 2; dir0++) {
        /* Both start together: the first submitted keeps its rate, the second shares. */
        pair(dir0, 0, t);
        first = BYTES / (gbps[dir0] * 1e6);
        near(t[0], first, dir0 ? "D2H submitted first, alone in its rate" :
                                 "H2D submitted first, alone in its rate");
        near(t[1], expected_end(0, gbps[!dir0], 0, first, gbps[dir0]),
             dir0 ? "H2D beside D2H, with what it leaves" : "D2H beside H2D, with what it leaves");
    }
    /* The first copy waits behind a 1 ms kernel; the second runs alone until it starts. */
    pair(0, 1.0, t);
    near(t[0], 1.0 + BYTES / (m->h2d * 1e6), "H2D behind a 1 ms kernel");
    near(t[1], expected_end(0, m->d2h, 1.0, 1.0 + BYTES / (m->h2d * 1e6), m->h2d),
         "D2H alone for 1 ms, then beside H2D");
}

static int child(const model_t *model)
{
    CUmodule mod;
    m = model;
    for (int i = 0; i < 4 && m->env[i]; i++)
        putenv((char *)m->env[i]);
    st_setup(0);
    CHECK_CU(cuModuleLoadData(&mod, ptx));
    CHECK_CU(cuModuleGetFunction(&fn, mod, "busy"));
    for (int i = 0; i < 2; i++) {
        CHECK_CU(cuMemAlloc(&dev[i], BYTES));
        CHECK_CU(cuMemAllocHost(&pinned[i], BYTES));
        CHECK_CU(cuStreamCreate(&s[i], CU_STREAM_NON_BLOCKING));
        CHECK_CU(cuEventCreate(&end[i], CU_EVENT_DEFAULT));
    }
    CHECK_CU(cuEventCreate(&start, CU_EVENT_DEFAULT));
    scenarios();
    printf("ok: %s\n", m->name);
    fflush(stdout);
    return 0;
}

int main(void)
{
    int rc = 0;
    if (!st_simulated())
        return TEST_SKIP;
    for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0)
            _exit(child(&models[i]));
        int st = 0;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
            printf("FAIL: the %s machine (status 0x%x)\n", models[i].name, st);
            rc = 1;
        }
    }
    return rc;
}
