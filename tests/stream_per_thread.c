/* SPDX-License-Identifier: MIT */
/*
 * stream_per_thread.c - the per-thread default stream.
 *
 * The _ptsz/_ptds entry points that cuGetProcAddress returns for
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM read a NULL stream as the calling thread's
 * per-thread default stream, which CU_STREAM_PER_THREAD names explicitly for every entry
 * point.  Each host thread has its own; it is a blocking stream, so it synchronises with the
 * legacy default stream (in virtual time and for the race checker), but the per-thread streams
 * of two threads are not ordered with each other.
 */
#include <pthread.h>

#include "simtest.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry busy(.param .u64 p, .param .f64 flops)\n{\n ret;\n}\n";

SIM_KERNEL void busy(const sim_launch_t *l, void **params)
{
    unsigned *p = *(unsigned **)params[0];
    p[0]++;
    sim_kernel_access(p, sizeof(*p), SIM_ACCESS_READWRITE);
    sim_kernel_cost(*(double *)params[1], 0);
}

typedef CUresult (*get_id_fn)(CUstream, unsigned long long *);
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*record_fn)(CUevent, CUstream);

static CUcontext ctx;
static CUfunction fn;
static CUdeviceptr buf;
static get_id_fn get_id_ptsz;
static launch_fn launch_ptsz;
static record_fn record_ptsz;

static void *proc(const char *name, cuuint64_t flags)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult st;
    CHECK_CU(cuGetProcAddress(name, &p, 13000, flags, &st));
    EXPECT(p && st == CU_GET_PROC_ADDRESS_SUCCESS, "%s: pointer %p, status %d", name, p, (int)st);
    return p;
}

static unsigned long long per_thread_id(void)
{
    unsigned long long a, b;
    CHECK_CU(get_id_ptsz(NULL, &a));
    CHECK_CU(cuStreamGetId(CU_STREAM_PER_THREAD, &b));
    EXPECT(a == b, "per-thread stream: NULL through _ptsz is id %llu, CU_STREAM_PER_THREAD %llu",
           a, b);
    return a;
}

static void *thread_id(void *out)
{
    CHECK_CU(cuCtxSetCurrent(ctx));
    *(unsigned long long *)out = per_thread_id();
    return NULL;
}

/* 1 ms of modelled work on this thread's per-thread stream (NULL through _ptsz), between
 * events recorded there. */
static void *thread_busy(void *ev)
{
    CUevent *e = ev;
    double flops = 51e9;
    void *args[] = { &buf, &flops };
    CHECK_CU(cuCtxSetCurrent(ctx));
    CHECK_CU(record_ptsz(e[0], NULL));
    CHECK_CU(launch_ptsz(fn, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    return NULL;
}

/* Record an event on this thread's per-thread stream. */
static void *thread_record(void *ev)
{
    CHECK_CU(cuCtxSetCurrent(ctx));
    CHECK_CU(record_ptsz(*(CUevent *)ev, NULL));
    return NULL;
}

static void in_thread(void *(*f)(void *), void *arg)
{
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, f, arg) == 0, "pthread_create");
    pthread_join(t, NULL);
}

static float elapsed(CUevent a, CUevent b)
{
    float ms;
    CHECK_CU(cuCtxSynchronize());
    CHECK_CU(cuEventElapsedTime(&ms, a, b));
    return ms;
}

int main(void)
{
    CUmodule mod;
    CUevent ev[2];
    unsigned long long legacy_id, mine, other, via_default;
    get_id_fn get_id_default;

    ctx = st_setup(0);
    get_id_ptsz = (get_id_fn)proc("cuStreamGetId", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    get_id_default = (get_id_fn)proc("cuStreamGetId", CU_GET_PROC_ADDRESS_DEFAULT);
    launch_ptsz = (launch_fn)proc("cuLaunchKernel", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    record_ptsz = (record_fn)proc("cuEventRecord", CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    EXPECT((void *)get_id_ptsz != (void *)get_id_default,
           "the per-thread and default variants of cuStreamGetId are the same function");

    /* Identity: NULL through the default entry point is the legacy stream. */
    CHECK_CU(get_id_default(NULL, &via_default));
    CHECK_CU(cuStreamGetId(CU_STREAM_LEGACY, &legacy_id));
    EXPECT(via_default == legacy_id, "NULL via default entry point: id %llu, legacy %llu",
           via_default, legacy_id);
    mine = per_thread_id();
    EXPECT(mine != legacy_id, "per-thread stream has the legacy stream's id %llu", mine);
    EXPECT(per_thread_id() == mine, "the per-thread stream changed within one thread");
    in_thread(thread_id, &other);
    EXPECT(other != mine && other != legacy_id,
           "another thread's per-thread stream: id %llu (this thread %llu, legacy %llu)", other,
           mine, legacy_id);

    CHECK_CU(cuModuleLoadData(&mod, ptx));
    CHECK_CU(cuModuleGetFunction(&fn, mod, "busy"));
    CHECK_CU(cuMemAlloc(&buf, sizeof(unsigned)));
    CHECK_CU(cuMemsetD32(buf, 0, 1));
    CHECK_CU(cuEventCreate(&ev[0], CU_EVENT_DEFAULT));
    CHECK_CU(cuEventCreate(&ev[1], CU_EVENT_DEFAULT));

    /* Another thread's per-thread stream does not wait for this thread's. */
    in_thread(thread_busy, ev);
    in_thread(thread_record, &ev[1]);
    float ms = elapsed(ev[0], ev[1]);
    EXPECT(ms < 0.5f, "per-thread streams of two threads: expected no wait (< 0.5 ms), got %f",
           ms);

    /* The legacy stream waits for a per-thread stream... */
    in_thread(thread_busy, ev);
    CHECK_CU(cuEventRecord(ev[1], NULL));
    ms = elapsed(ev[0], ev[1]);
    EXPECT(ms >= 1.0f, "legacy after per-thread work: expected >= 1 ms, got %f", ms);

    /* ... and a per-thread stream waits for the legacy stream. */
    double flops = 51e9;
    void *args[] = { &buf, &flops };
    CHECK_CU(cuEventRecord(ev[0], NULL));
    CHECK_CU(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    CHECK_CU(record_ptsz(ev[1], NULL));
    ms = elapsed(ev[0], ev[1]);
    EXPECT(ms >= 1.0f, "per-thread after legacy work: expected >= 1 ms, got %f", ms);

    /* Unsynchronised writes on the per-thread and legacy streams are ordered: no race. */
    CHECK_CU(launch_ptsz(fn, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    CHECK_CU(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    CHECK_CU(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, CU_STREAM_PER_THREAD, args, NULL));
    unsigned count;
    CHECK_CU(cuMemcpyDtoH(&count, buf, sizeof(count)));
    EXPECT(count == 6, "kernel runs: expected 6, got %u", count);

    CHECK_CU(cuEventDestroy(ev[0]));
    CHECK_CU(cuEventDestroy(ev[1]));
    CHECK_CU(cuMemFree(buf));
    CHECK_CU(cuModuleUnload(mod));
    return 0;
}
