/* SPDX-License-Identifier: MIT */
/*
 * cupti_memcpy_memset.c - the CUPTI stand-in reports copies as CUpti_ActivityMemcpy6 and
 * memsets as CUpti_ActivityMemset4 records.
 *
 * Each operation below runs with its own external id pushed, which identifies its record.
 * Every record must carry the copy kind (HTOD, DTOH, DTOD, HTOH, and PTOP for a copy from a
 * second device: a MEMCPY record, not MEMCPY2), the memory kind of each side (pageable,
 * pinned, device), the ASYNC flag exactly for the asynchronous entry points, the byte count,
 * the value of a memset, the stream (0 for the legacy stream) and a duration equal to the
 * machine model's (default machine: PCIe 25 GB/s pinned, 10 GB/s pageable and between devices
 * without NVLink, HBM 2000 GB/s, half of it for a copy within the device).  A synchronous copy
 * into host memory
 * returns at its end, so cuptiGetTimestamp is then past it.  A kernel launched with an id
 * pushed, while kernels are not collected, yields the external record and no kernel record.
 */
#include <math.h>

#include "cupti_test.h"

#define MB (1u << 20)

typedef struct want {
    CUpti_ActivityKind kind;
    int copy_kind, src, dst;    /* memcpy: CUpti_ActivityMemcpyKind, CUpti_ActivityMemoryKind */
    int async;
    uint64_t bytes;
    unsigned value;             /* memset */
    int memory;                 /* memset: CUpti_ActivityMemoryKind */
    int legacy;                 /* on the legacy stream */
    double ns;                  /* modelled duration */
} want_t;

enum { PAGEABLE = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, PINNED = CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
       DEVICE = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE };

static const want_t wants[] = {
    { CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, PAGEABLE, DEVICE, 0, MB, 0, 0, 1,
      MB / 10.0 },
    { CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, PINNED, DEVICE, 1, MB, 0, 0, 0,
      MB / 25.0 },
    { CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, DEVICE, PINNED, 1, MB, 0, 0, 0,
      MB / 25.0 },
    { CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, DEVICE, DEVICE, 1, MB, 0, 0, 0,
      MB / 1000.0 },
    { CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, DEVICE, PAGEABLE, 0, MB, 0, 0, 1,
      MB / 10.0 },
    { CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, PINNED, PAGEABLE, 0, 4096, 0, 0,
      1, 0 },
    { CUPTI_ACTIVITY_KIND_MEMSET, 0, 0, 0, 1, 4096, 0x5a, DEVICE, 0, 4096 / 2000.0 },
    { CUPTI_ACTIVITY_KIND_MEMSET, 0, 0, 0, 0, 4096, 0xdeadbeef, DEVICE, 1, 4096 / 2000.0 },
    { CUPTI_ACTIVITY_KIND_MEMSET, 0, 0, 0, 1, 600, 0x1234, DEVICE, 0, 600 / 2000.0 },
    { CUPTI_ACTIVITY_KIND_MEMSET, 0, 0, 0, 0, 256, 0x7, PINNED, 1, 256 / 2000.0 },
    { CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, DEVICE, DEVICE, 1, MB, 0, 0, 0,
      MB / 25.0 },
};
#define NOPS (sizeof(wants) / sizeof(wants[0]))

static CUstream s;
static CUcontext ctx0, ctx1;
static CUdeviceptr d1, d2, d3, peer;
static unsigned char *pinned, *pageable;

/* Operation i, with external id i pushed around it. */
static void run_op(size_t i)
{
    CHECK_CUPTI(ct.push(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, i));
    switch (i) {
    case 0: CHECK_CU(cuMemcpyHtoD(d1, pageable, MB)); break;
    case 1: CHECK_CU(cuMemcpyHtoDAsync(d1, pinned, MB, s)); break;
    case 2: CHECK_CU(cuMemcpyDtoHAsync(pinned, d1, MB, s)); break;
    case 3: CHECK_CU(cuMemcpyDtoDAsync(d2, d1, MB, s)); break;
    case 4: CHECK_CU(cuMemcpyDtoH(pageable, d2, MB)); break;
    case 5: CHECK_CU(cuMemcpy((CUdeviceptr)(uintptr_t)pageable, (CUdeviceptr)(uintptr_t)pinned,
                              4096)); break;
    case 6: CHECK_CU(cuMemsetD8Async(d3, 0x5a, 4096, s)); break;
    case 7: CHECK_CU(cuMemsetD32(d3, 0xdeadbeef, 1024)); break;
    case 8: CHECK_CU(cuMemsetD2D16Async(d3, 1024, 0x1234, 100, 3, s)); break;
    case 9: CHECK_CU(cuMemsetD8((CUdeviceptr)(uintptr_t)pinned, 0x7, 256)); break;
    case 10: CHECK_CU(cuMemcpyPeerAsync(d1, ctx0, peer, ctx1, MB, s)); break;
    }
    CHECK_CUPTI(ct.pop(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, NULL));
}

/* The record whose correlation id the external record of id i names. */
static const ct_record_t *record_of(uint64_t i)
{
    uint32_t corr = 0;
    for (size_t j = 0; j < ct_nrecords; j++)
        if (ct_records[j].any.kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION &&
            ct_records[j].ext.externalId == i)
            corr = ct_records[j].ext.correlationId;
    EXPECT(corr != 0, "an external correlation record for operation %llu",
           (unsigned long long)i);
    for (size_t j = 0; j < ct_nrecords; j++) {
        const ct_record_t *r = &ct_records[j];
        if ((r->any.kind == CUPTI_ACTIVITY_KIND_MEMCPY && r->memcpy.correlationId == corr) ||
            (r->any.kind == CUPTI_ACTIVITY_KIND_MEMSET && r->memset.correlationId == corr))
            return r;
    }
    return NULL;
}

static void check_memcpy(size_t i, const CUpti_ActivityMemcpy6 *c, const want_t *w, uint32_t sid)
{
    EXPECT(c->copyKind == w->copy_kind && c->srcKind == w->src && c->dstKind == w->dst,
           "op %zu: copy kind %d, %d -> %d; got %d, %d -> %d", i, w->copy_kind, w->src, w->dst,
           c->copyKind, c->srcKind, c->dstKind);
    EXPECT(!!(c->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) == w->async,
           "op %zu: async flag %d, flags 0x%x", i, w->async, c->flags);
    EXPECT(c->bytes == w->bytes && c->copyCount == 1, "op %zu: %llu bytes, got %llu", i,
           (unsigned long long)w->bytes, (unsigned long long)c->bytes);
    EXPECT(c->streamId == sid && c->deviceId == 0, "op %zu: stream %u, got %u", i, sid,
           c->streamId);
    EXPECT(fabs((double)(c->end - c->start) - w->ns) <= 2, "op %zu: %.1f ns, got %llu", i, w->ns,
           (unsigned long long)(c->end - c->start));
}

static void check_memset(size_t i, const CUpti_ActivityMemset4 *m, const want_t *w, uint32_t sid)
{
    EXPECT(m->value == w->value && m->bytes == w->bytes && m->memoryKind == w->memory,
           "op %zu: value 0x%x, %llu bytes, memory %d; got 0x%x, %llu, %d", i, w->value,
           (unsigned long long)w->bytes, w->memory, m->value, (unsigned long long)m->bytes,
           m->memoryKind);
    EXPECT(!!(m->flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) == w->async,
           "op %zu: async flag %d, flags 0x%x", i, w->async, m->flags);
    EXPECT(m->streamId == sid && m->deviceId == 0, "op %zu: stream %u, got %u", i, sid,
           m->streamId);
    EXPECT(fabs((double)(m->end - m->start) - w->ns) <= 2, "op %zu: %.1f ns, got %llu", i, w->ns,
           (unsigned long long)(m->end - m->start));
}

int main(void)
{
    CUmodule mod;
    CUfunction f;
    unsigned long long sid;
    uint64_t t;

    setenv("ELIXIR_SIM_DEVICES", "2", 1);
    ctx1 = st_setup(1);
    CHECK_CU(cuMemAlloc(&peer, MB));
    ctx0 = st_setup(0);
    ct_open();
    ct_register();
    CHECK_CUPTI(ct.enable(CUPTI_ACTIVITY_KIND_MEMCPY));
    CHECK_CUPTI(ct.enable(CUPTI_ACTIVITY_KIND_MEMSET));
    CHECK_CUPTI(ct.enable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION));
    CHECK_CUPTI(ct.enable(CUPTI_ACTIVITY_KIND_DRIVER)); /* external records come with API ones */
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuStreamGetId(s, &sid));
    CHECK_CU(cuMemAlloc(&d1, MB));
    CHECK_CU(cuMemAlloc(&d2, MB));
    CHECK_CU(cuMemAlloc(&d3, 4096));
    CHECK_CU(cuMemHostAlloc((void **)&pinned, MB, 0));
    pageable = calloc(1, MB);
    EXPECT(pageable != NULL, "memory");

    for (size_t i = 0; i < NOPS; i++) {
        run_op(i);
        if (i == 4)             /* synchronous copy into pageable memory: returns at its end */
            CHECK_CUPTI(ct.timestamp(&t));
        CHECK_CU(cuCtxSynchronize());
    }
    CHECK_CU(cuModuleLoadData(&mod, ct_costly_ptx));
    CHECK_CU(cuModuleGetFunction(&f, mod, "costly"));
    CHECK_CUPTI(ct.push(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, 99));
    ct_launch(f, s, 0, 0);
    CHECK_CUPTI(ct.pop(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, NULL));
    CHECK_CU(cuCtxSynchronize());
    ct_flush();

    EXPECT(ct_count(CUPTI_ACTIVITY_KIND_MEMCPY) == 7 && ct_count(CUPTI_ACTIVITY_KIND_MEMSET) == 4,
           "7 memcpy and 4 memset records, got %zu and %zu", ct_count(CUPTI_ACTIVITY_KIND_MEMCPY),
           ct_count(CUPTI_ACTIVITY_KIND_MEMSET));
    EXPECT(ct_count(CUPTI_ACTIVITY_KIND_KERNEL) + ct_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
           == 0, "no kernel records while kernels are not collected");
    EXPECT(ct_count(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) == NOPS + 1,
           "an external record for each call with an id pushed (%zu), got %zu", NOPS + 1,
           ct_count(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION));
    for (size_t i = 0; i < NOPS; i++) {
        const ct_record_t *r = record_of(i);
        EXPECT(r && r->any.kind == wants[i].kind, "op %zu: a record of kind %d", i,
               (int)wants[i].kind);
        uint32_t want_sid = wants[i].legacy ? 0 : (uint32_t)sid;
        if (r->any.kind == CUPTI_ACTIVITY_KIND_MEMCPY)
            check_memcpy(i, &r->memcpy, &wants[i], want_sid);
        else
            check_memset(i, &r->memset, &wants[i], want_sid);
    }
    const CUpti_ActivityMemcpy6 *dtoh = &record_of(4)->memcpy;
    EXPECT(t >= dtoh->end, "cuptiGetTimestamp (%llu) after a synchronous copy ending at %llu",
           (unsigned long long)t, (unsigned long long)dtoh->end);

    CHECK_CU(cuModuleUnload(mod));
    CHECK_CU(cuMemFree(d1));
    CHECK_CU(cuMemFree(d2));
    CHECK_CU(cuMemFree(d3));
    CHECK_CU(cuMemFree(peer));
    CHECK_CU(cuMemFreeHost(pinned));
    CHECK_CU(cuStreamDestroy(s));
    free(pageable);
    return 0;
}
