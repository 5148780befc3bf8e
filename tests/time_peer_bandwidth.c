/* SPDX-License-Identifier: MIT */
/*
 * time_peer_bandwidth.c - the machine model sets the virtual time of copies: on the 4-GPU
 * NVLink model (ELIXIR_SIM_MACHINE=h100-nvlink-4) a peer copy moves 450 GB/s and a pinned
 * host-to-device copy 50 GB/s; on the default model with two devices (ELIXIR_SIM_DEVICES=2)
 * peers have no NVLink and go over PCIe at 25 GB/s.  Each machine runs in a child process.
 */
#include "simchild.h"
#include "simtest.h"

#define BYTES (64u << 20)

typedef struct machine {
    double peer_gbps, pcie_gbps;
} machine_t;

static void expect_ms(float got, double want, const char *what)
{
    EXPECT(got >= want * 0.999 && got <= want * 1.001 + 0.01, "%s: expected %.4f ms, got %.4f",
           what, want, got);
}

static void measure(void *arg)
{
    const machine_t *m = arg;
    CUcontext c0, c1;
    CUdeviceptr d0, d1;
    CUstream s;
    CUevent a, b;
    void *pinned;
    float ms;

    CHECK_CU(cuInit(0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&c1, 1));
    CHECK_CU(cuCtxSetCurrent(c1));
    CHECK_CU(cuMemAlloc(&d1, BYTES));
    c0 = st_setup(0);
    CHECK_CU(cuMemAlloc(&d0, BYTES));
    CHECK_CU(cuMemAllocHost(&pinned, BYTES));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuEventCreate(&a, CU_EVENT_DEFAULT));
    CHECK_CU(cuEventCreate(&b, CU_EVENT_DEFAULT));

    CHECK_CU(cuEventRecord(a, s));
    CHECK_CU(cuMemcpyPeerAsync(d1, c1, d0, c0, BYTES, s));
    CHECK_CU(cuEventRecord(b, s));
    CHECK_CU(cuEventSynchronize(b));
    CHECK_CU(cuEventElapsedTime(&ms, a, b));
    expect_ms(ms, BYTES / (m->peer_gbps * 1e9) * 1e3, "64 MiB peer copy");

    CHECK_CU(cuEventRecord(a, s));
    CHECK_CU(cuMemcpyHtoDAsync(d0, pinned, BYTES, s));
    CHECK_CU(cuEventRecord(b, s));
    CHECK_CU(cuEventSynchronize(b));
    CHECK_CU(cuEventElapsedTime(&ms, a, b));
    expect_ms(ms, BYTES / (m->pcie_gbps * 1e9) * 1e3, "64 MiB pinned HtoD");
}

int main(void)
{
    static const char *const nvlink_env[] = { "ELIXIR_SIM_MACHINE=h100-nvlink-4", NULL };
    static const char *const pcie_env[] = { "ELIXIR_SIM_MACHINE=default", "ELIXIR_SIM_DEVICES=2",
                                            NULL };
    machine_t nvlink = { 450, 50 }, pcie = { 25, 25 };
    st_child_t c;

    st_run_child(measure, &nvlink, nvlink_env, &c);
    st_child_expect(&c, 0, NULL);
    st_child_free(&c);
    st_run_child(measure, &pcie, pcie_env, &c);
    st_child_expect(&c, 0, NULL);
    st_child_free(&c);
    return 0;
}
