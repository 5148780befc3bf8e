/* SPDX-License-Identifier: MIT */
/*
 * shim_trace_stream_device.c - an operation on a stream is recorded on the stream's device,
 * whichever context is current.
 *
 * cuda.h: work on a stream runs in the stream's context (the current context counts for the
 * default streams only), and residency takes the stream's device for it.  The scenario (two
 * devices) allocates X on device 1 and makes a stream s1 there; then, with device 0's context
 * current, sets X, uploads to it, copies within it and launches tt_k1 (a CUkernel) on it,
 * all on s1, and sets Y, an allocation of device 0, on the legacy stream.  The trace must
 * record the four operations on s1 on device 1 and the last on device 0.
 */
#define TT_KERNELS
#include "shim_trace_test.h"

#define WORDS 1024

static void scenario(void)
{
    static uint32_t host[WORDS];
    CUdeviceptr x, y;
    CUstream s1;
    CUlibrary lib;
    CUkernel k;

    st_setup(1);
    CHECK_CU(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&x, 8 * WORDS));
    st_setup(0);
    CHECK_CU(cuMemAlloc(&y, 4 * WORDS));
    CHECK_CU(cuLibraryLoadData(&lib, tt_ptx, NULL, NULL, 0, NULL, NULL, 0));
    CHECK_CU(cuLibraryGetKernel(&k, lib, "tt_k1"));
    CHECK_CU(cuMemsetD32Async(x, 1, 2 * WORDS, s1));
    CHECK_CU(cuMemcpyHtoDAsync(x, host, sizeof(host), s1));
    CHECK_CU(cuMemcpyDtoDAsync(x + 4 * WORDS, x, 4 * WORDS, s1));
    CHECK_CU(tt_launch1((CUfunction)k, s1, x, WORDS));
    CHECK_CU(cuStreamSynchronize(s1));
    CHECK_CU(cuMemsetD32(y, 2, WORDS));
    CHECK_CU(cuCtxSynchronize());
    printf("four operations on device 1's stream, one on device 0's\n");
}

/* The device of operation event e. */
static int32_t device_of(const trc_event_t *e)
{
    switch (e->type) {
    case TRC_EV_LAUNCH: return e->u.launch.device;
    case TRC_EV_COPY: return e->u.copy.device;
    case TRC_EV_MEMSET: return e->u.memset.device;
    default: return -2;
    }
}

int main(int argc, char **argv)
{
    static const trc_type_t types[] = { TRC_EV_MEMSET, TRC_EV_COPY, TRC_EV_COPY, TRC_EV_LAUNCH,
                                        TRC_EV_MEMSET };
    static const int32_t devices[] = { 1, 1, 1, 1, 0 };

    sh_scenario_child(argc, argv, scenario);
    const char *path = tt_path("shim-trace-stream-device", 0);
    const char *env[] = { tt_env_trace(path, 0), "ELIXIR_SIM_DEVICES=2", NULL };
    sh_run_t r = sh_run_ok("scenario", env);
    tt_trace_t t;
    size_t n = 0;

    tt_load(path, &t);
    tt_expect_clean(&t, path);
    for (size_t i = 0; i < t.n; i++) {
        if (!tt_op(&t.ev[i]))
            continue;
        EXPECT(n < 5, "more than five operations recorded");
        EXPECT(t.ev[i].type == types[n] && device_of(&t.ev[i]) == devices[n],
               "operation %zu: a %s on device %d, expected a %s on device %d", n,
               trc_type_name(t.ev[i].type), device_of(&t.ev[i]), trc_type_name(types[n]),
               devices[n]);
        n++;
    }
    EXPECT(n == 5, "%zu operations recorded, expected 5", n);
    printf("each operation on its stream's device\n");
    tt_free(&t);
    sh_run_free(&r);
    return 0;
}
