/* SPDX-License-Identifier: MIT */
/*
 * stream_memop_host.c - stream memory waits released by the host, in every condition form.
 *
 * A flag in page-locked host memory mapped for the device: a wait on it holds back its stream
 * (cuStreamQuery says CUDA_ERROR_NOT_READY, the copy behind it has not run) until the host
 * stores a value that satisfies it, and cuStreamSynchronize on the blocked stream returns once
 * another thread has stored it.  Each condition of CUstreamWaitValue_flags, 32 and 64 bits,
 * is held by a value that does not satisfy it and released by one that does: the cyclic
 * greater-or-equal across wraparound, equality, AND and NOR, and a 64-bit comparison that a
 * 32-bit one would get wrong.  A wait already satisfied does not block, and one satisfied by
 * a write earlier in its own stream neither.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "simtest.h"

typedef struct form {
    unsigned flags;
    int bits;
    uint64_t wait, held, released;
} form_t;

static const form_t forms[] = {
    { CU_STREAM_WAIT_VALUE_GEQ, 32, 0xfffffff0u, 0xffffffe0u, 0x5 },    /* across wraparound */
    { CU_STREAM_WAIT_VALUE_EQ, 32, 5, 4, 5 },
    { CU_STREAM_WAIT_VALUE_AND, 32, 0x6, 0x9, 0x4 },
    { CU_STREAM_WAIT_VALUE_NOR, 32, 0xf0, 0xffffffffu, 0xff },
    { CU_STREAM_WAIT_VALUE_GEQ, 64, 0x100000000ull, 0xffffffffull, 0x100000000ull },
    { CU_STREAM_WAIT_VALUE_EQ, 64, 0x100000005ull, 0x5, 0x100000005ull },
    { CU_STREAM_WAIT_VALUE_AND, 64, 0x100000000ull, 0xffffffffull, 0x300000000ull },
    { CU_STREAM_WAIT_VALUE_NOR, 64, 0xffffffff00000000ull, 0xffffffffffffffffull,
      0xfffffffffffffff0ull },
};

static _Atomic uint64_t *flag;      /* host view of the mapped flag */
static CUdeviceptr dflag;           /* its device address */

static void sleep_ms(int ms)
{
    struct timespec ts = { 0, ms * 1000000L };
    nanosleep(&ts, NULL);
}

static CUresult wait_on(CUstream s, const form_t *f)
{
    return f->bits == 64 ? cuStreamWaitValue64(s, dflag, f->wait, f->flags)
                         : cuStreamWaitValue32(s, dflag, (cuuint32_t)f->wait, f->flags);
}

/* The stream stays blocked on f while the flag holds f->held, and runs once released. */
static void check_form(CUstream s, CUdeviceptr buf, const form_t *f)
{
    unsigned got = 0;
    atomic_store(flag, f->held);
    CHECK_CU(cuMemsetD32Async(buf, 0, 1, s));
    CHECK_CU(wait_on(s, f));
    CHECK_CU(cuMemsetD32Async(buf, 9, 1, s));
    for (int i = 0; i < 3; i++) {
        sleep_ms(2);
        EXPECT_CU(CUDA_ERROR_NOT_READY, cuStreamQuery(s));
    }
    atomic_store(flag, f->released);
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuMemcpyDtoH(&got, buf, 4));
    EXPECT(got == 9, "form flags %u, %d bits: expected 9 after release, got %u", f->flags,
           f->bits, got);

    /* Already satisfied: no block. */
    CHECK_CU(wait_on(s, f));
    CHECK_CU(cuStreamSynchronize(s));
}

static void *release_later(void *unused)
{
    sleep_ms(30);
    atomic_store(flag, 1);
    return NULL;
}

int main(void)
{
    CUstream s;
    CUdeviceptr buf;
    void *host;
    int v = -1;

    st_setup(0);
    CHECK_CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, 0));
    EXPECT(v == 1, "64-bit stream memory operations: expected 1, got %d", v);
    CHECK_CU(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR, 0));
    EXPECT(v == 1, "CU_STREAM_WAIT_VALUE_NOR: expected 1, got %d", v);
    CHECK_CU(cuMemHostAlloc(&host, 4096, CU_MEMHOSTALLOC_DEVICEMAP));
    CHECK_CU(cuMemHostGetDevicePointer(&dflag, host, 0));
    flag = host;
    CHECK_CU(cuMemAlloc(&buf, 64));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
        check_form(s, buf, &forms[i]);

    /* A write earlier in the same stream satisfies the wait behind it. */
    CHECK_CU(cuStreamWriteValue64(s, dflag, 0x123456789ull, 0));
    CHECK_CU(cuStreamWaitValue64(s, dflag, 0x123456789ull, CU_STREAM_WAIT_VALUE_EQ));
    CHECK_CU(cuStreamSynchronize(s));
    EXPECT(atomic_load(flag) == 0x123456789ull, "64-bit write: got 0x%llx",
           (unsigned long long)atomic_load(flag));
    CHECK_CU(cuStreamWriteValue32(s, dflag, 0, 0));
    CHECK_CU(cuStreamSynchronize(s));
    EXPECT(atomic_load(flag) == 0x100000000ull, "32-bit write touches the low word only: 0x%llx",
           (unsigned long long)atomic_load(flag));

    /* Synchronising on the blocked stream waits for another thread's store. */
    pthread_t t;
    atomic_store(flag, 0);
    CHECK_CU(cuStreamWaitValue32(s, dflag, 1, CU_STREAM_WAIT_VALUE_EQ));
    CHECK_CU(cuMemsetD32Async(buf, 11, 1, s));
    EXPECT(pthread_create(&t, NULL, release_later, NULL) == 0, "pthread_create");
    CHECK_CU(cuStreamSynchronize(s));
    unsigned got = 0;
    CHECK_CU(cuMemcpyDtoH(&got, buf, 4));
    EXPECT(got == 11, "after the other thread's store: expected 11, got %u", got);
    pthread_join(t, NULL);

    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuMemFree(buf));
    CHECK_CU(cuMemFreeHost(host));
    return 0;
}
