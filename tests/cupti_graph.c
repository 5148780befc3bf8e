/* SPDX-License-Identifier: MIT */
/*
 * cupti_graph.c - work inside CUDA graphs is recorded when the graph runs, not when it is
 * captured, and every node of one cuGraphLaunch shares the launch's correlation id.
 *
 * A memset and two kernels are captured (with an external id pushed: capturing submits
 * nothing, so nothing is recorded), then the graph is launched twice with a different id
 * pushed each time.  There must be one record per node per launch, one external record per
 * launch, and the three records of a launch must carry that launch's correlation id.
 */
#include "cupti_test.h"

static uint32_t corr_of(uint64_t id)
{
    for (size_t i = 0; i < ct_nrecords; i++)
        if (ct_records[i].any.kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION &&
            ct_records[i].ext.externalId == id)
            return ct_records[i].ext.correlationId;
    fprintf(stderr, "no external record for id %llu\n", (unsigned long long)id);
    exit(1);
}

/* Kernel and memset records carrying correlation id `corr`. */
static void count_corr(uint32_t corr, int *kernels, int *memsets)
{
    *kernels = *memsets = 0;
    for (size_t i = 0; i < ct_nrecords; i++) {
        const ct_record_t *r = &ct_records[i];
        if (r->any.kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
            *kernels += r->kernel.correlationId == corr;
        if (r->any.kind == CUPTI_ACTIVITY_KIND_MEMSET)
            *memsets += r->memset.correlationId == corr;
    }
}

int main(void)
{
    CUmodule mod;
    CUfunction f;
    CUstream s;
    CUgraph g;
    CUgraphExec exec;
    CUdeviceptr d;
    int kernels, memsets;

    st_setup(0);
    ct_open();
    ct_register();
    CHECK_CUPTI(ct.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    CHECK_CUPTI(ct.enable(CUPTI_ACTIVITY_KIND_MEMSET));
    CHECK_CUPTI(ct.enable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION));
    CHECK_CUPTI(ct.enable(CUPTI_ACTIVITY_KIND_DRIVER)); /* external records come with API ones */
    CHECK_CU(cuModuleLoadData(&mod, ct_costly_ptx));
    CHECK_CU(cuModuleGetFunction(&f, mod, "costly"));
    CHECK_CU(cuMemAlloc(&d, 4096));
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));

    CHECK_CUPTI(ct.push(CUPTI_EXTERNAL_CORRELATION_KIND_UNKNOWN, 499));
    CHECK_CU(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_CU(cuMemsetD32Async(d, 3, 1024, s));
    ct_launch(f, s, 1e6, 0);
    ct_launch(f, s, 2e6, 0);
    CHECK_CU(cuStreamEndCapture(s, &g));
    CHECK_CUPTI(ct.pop(CUPTI_EXTERNAL_CORRELATION_KIND_UNKNOWN, NULL));
    CHECK_CU(cuGraphInstantiate(&exec, g, 0));

    for (uint64_t id = 500; id < 502; id++) {
        CHECK_CUPTI(ct.push(CUPTI_EXTERNAL_CORRELATION_KIND_UNKNOWN, id));
        CHECK_CU(cuGraphLaunch(exec, s));
        CHECK_CUPTI(ct.pop(CUPTI_EXTERNAL_CORRELATION_KIND_UNKNOWN, NULL));
    }
    CHECK_CU(cuStreamSynchronize(s));
    ct_flush();

    EXPECT(ct_count(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) == 2,
           "one external record per graph launch, none for the capture; got %zu",
           ct_count(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION));
    EXPECT(ct_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == 4 &&
           ct_count(CUPTI_ACTIVITY_KIND_MEMSET) == 2,
           "2 kernels and 1 memset per launch: got %zu kernels, %zu memsets",
           ct_count(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), ct_count(CUPTI_ACTIVITY_KIND_MEMSET));
    uint32_t c0 = corr_of(500), c1 = corr_of(501);
    EXPECT(c0 && c1 && c0 != c1, "two launches, two correlation ids: %u %u", c0, c1);
    uint32_t corrs[] = { c0, c1 };
    for (int i = 0; i < 2; i++) {
        count_corr(corrs[i], &kernels, &memsets);
        EXPECT(kernels == 2 && memsets == 1,
               "launch %d: its 2 kernels and memset carry id %u; got %d and %d", i, corrs[i],
               kernels, memsets);
    }

    CHECK_CU(cuGraphExecDestroy(exec));
    CHECK_CU(cuGraphDestroy(g));
    CHECK_CU(cuStreamDestroy(s));
    CHECK_CU(cuMemFree(d));
    CHECK_CU(cuModuleUnload(mod));
    return 0;
}
