/* SPDX-License-Identifier: MIT */
/*
 * time_copy_bandwidth.c - copies and memsets take bytes / bandwidth of virtual time on the
 * default machine model: 25 GB/s between pinned host memory and the device (a 256 MiB copy
 * takes 256 Mi / 25e9 s), 10 GB/s for pageable host memory, half the 2000 GB/s of device
 * memory for a device-to-device copy (it reads and writes), the full 2000 GB/s for a memset.
 * cuEventElapsedTime around each operation shows it, for the synchronous and asynchronous
 * forms alike.
 */
#include <stdlib.h>

#include "simtest.h"


static CUevent a, b;

static void start(CUstream s)
{
    CHECK_CU(cuEventRecord(a, s));
}

/* Milliseconds since start(), which must be `want` up to a few microseconds of host time. */
static void stop(CUstream s, double want, const char *what)
{
    float ms;
    CHECK_CU(cuEventRecord(b, s));
    CHECK_CU(cuEventSynchronize(b));
    CHECK_CU(cuEventElapsedTime(&ms, a, b));
    EXPECT(ms >= want * 0.999 && ms <= want * 1.001 + 0.01, "%s: expected %.4f ms, got %.4f ms",
           what, want, ms);
}

int main(void)
{
    const size_t big = 256u << 20, small = 64u << 20;
    CUdeviceptr d, d2;
    void *pinned, *pageable = malloc(small);
    CUstream s;

    st_setup(0);
    EXPECT(pageable, "malloc");
    CHECK_CU(cuMemAlloc(&d, big));
    CHECK_CU(cuMemAlloc(&d2, small));
    CHECK_CU(cuMemAllocHost(&pinned, big));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuEventCreate(&a, CU_EVENT_DEFAULT));
    CHECK_CU(cuEventCreate(&b, CU_EVENT_DEFAULT));

    const double pinned_big_ms = big / 25e9 * 1e3;      /* 10.737 ms */
    const double pageable_ms = small / 10e9 * 1e3;      /* 6.711 ms */

    start(s);
    CHECK_CU(cuMemcpyHtoDAsync(d, pinned, big, s));
    stop(s, pinned_big_ms, "256 MiB pinned HtoD async");
    start(s);
    CHECK_CU(cuMemcpyDtoHAsync(pinned, d, big, s));
    stop(s, pinned_big_ms, "256 MiB pinned DtoH async");
    start(NULL);
    CHECK_CU(cuMemcpyHtoD(d, pinned, big));
    stop(NULL, pinned_big_ms, "256 MiB pinned HtoD");

    start(s);
    CHECK_CU(cuMemcpyHtoDAsync(d, pageable, small, s));
    stop(s, pageable_ms, "64 MiB pageable HtoD async");
    start(NULL);
    CHECK_CU(cuMemcpyDtoH(pageable, d, small));
    stop(NULL, pageable_ms, "64 MiB pageable DtoH");

    start(s);
    CHECK_CU(cuMemcpyDtoDAsync(d2, d, small, s));
    stop(s, small / 1000e9 * 1e3, "64 MiB DtoD");
    start(s);
    CHECK_CU(cuMemsetD32Async(d2, 1, small / 4, s));
    stop(s, small / 2000e9 * 1e3, "64 MiB memset");

    CHECK_CU(cuEventDestroy(a));
    CHECK_CU(cuEventDestroy(b));
    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuMemFreeHost(pinned));
    CHECK_CU(cuMemFree(d));
    CHECK_CU(cuMemFree(d2));
    free(pageable);
    return 0;
}
