/* SPDX-License-Identifier: MIT */
/*
 * proc_variants.c - cuGetProcAddress picks the variant the real driver would.
 *
 * Each case names a base symbol, a CUDA version and flags, and the exported name that must
 * come back, read off cuda.h and cudaTypedefs.h by hand (PFN_<name>_v<version> typedefs and the
 * #define NAME NAME_vN lines), not from the generator.  Then the error cases: NULL arguments,
 * bad flags, a version above the driver's, unknown and empty names.  Both entry points are
 * checked: cuGetProcAddress_v2 (5 arguments) and the legacy 4-argument cuGetProcAddress.
 * Nothing here calls cuInit: like the real driver, the lookup works before it.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <cuda.h>
#include <cudaTypedefs.h>

#define DEF CU_GET_PROC_ADDRESS_DEFAULT
#define LEG CU_GET_PROC_ADDRESS_LEGACY_STREAM
#define PTDS CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
#define NOSYM CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
#define OLD CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT

typedef struct proc_case {
    const char *symbol;
    int version;
    cuuint64_t flags;
    const char *expect;     /* exported name, or NULL when the lookup must miss */
    int status;             /* CUdriverProcAddressQueryResult expected when expect is NULL */
} proc_case_t;

static const proc_case_t cases[] = {
    { "cuMemAlloc", 2000, DEF, "cuMemAlloc", 0 },
    { "cuMemAlloc", 3010, DEF, "cuMemAlloc", 0 },
    { "cuMemAlloc", 3020, DEF, "cuMemAlloc_v2", 0 },
    { "cuMemAlloc", 13000, PTDS, "cuMemAlloc_v2", 0 },          /* no per-thread variant */
    { "cuMemAlloc", 1000, DEF, NULL, OLD },
    { "cuCtxSynchronize", 2000, DEF, "cuCtxSynchronize", 0 },
    { "cuCtxSynchronize", 12090, DEF, "cuCtxSynchronize", 0 },
    { "cuCtxSynchronize", 13000, DEF, "cuCtxSynchronize_v2", 0 },
    { "cuGetProcAddress", 11030, DEF, "cuGetProcAddress", 0 },
    { "cuGetProcAddress", 12000, DEF, "cuGetProcAddress_v2", 0 },
    { "cuGetProcAddress", 11020, DEF, NULL, OLD },
    { "cuMemcpy", 7000, PTDS, "cuMemcpy_ptds", 0 },
    { "cuMemcpy", 7000, DEF, "cuMemcpy", 0 },
    { "cuMemcpy", 7000, LEG, "cuMemcpy", 0 },
    { "cuMemcpy", 6050, PTDS, "cuMemcpy", 0 },                  /* per-thread came in 7.0 */
    { "cuLaunchKernel", 7000, PTDS, "cuLaunchKernel_ptsz", 0 },
    { "cuLaunchKernel", 4000, DEF, "cuLaunchKernel", 0 },
    { "cuLaunchKernel", 3020, DEF, NULL, OLD },
    { "cuMemcpyHtoD", 2000, DEF, "cuMemcpyHtoD", 0 },
    { "cuMemcpyHtoD", 3020, DEF, "cuMemcpyHtoD_v2", 0 },
    { "cuMemcpyHtoD", 7000, PTDS, "cuMemcpyHtoD_v2_ptds", 0 },
    { "cuMemcpyHtoD", 7000, LEG, "cuMemcpyHtoD_v2", 0 },
    { "cuCtxCreate", 2000, DEF, "cuCtxCreate", 0 },
    { "cuCtxCreate", 3020, DEF, "cuCtxCreate_v2", 0 },
    { "cuCtxCreate", 11040, DEF, "cuCtxCreate_v3", 0 },
    { "cuCtxCreate", 12050, DEF, "cuCtxCreate_v4", 0 },
    { "cuCtxCreate", 13000, DEF, "cuCtxCreate_v4", 0 },
    { "cuStreamGetCaptureInfo", 10010, PTDS, "cuStreamGetCaptureInfo_ptsz", 0 },
    { "cuStreamGetCaptureInfo", 11030, PTDS, "cuStreamGetCaptureInfo_v2_ptsz", 0 },
    { "cuStreamGetCaptureInfo", 12030, PTDS, "cuStreamGetCaptureInfo_v3_ptsz", 0 },
    { "cuStreamGetCaptureInfo", 12030, DEF, "cuStreamGetCaptureInfo_v3", 0 },
    { "cuStreamGetCaptureInfo", 11030, DEF, "cuStreamGetCaptureInfo_v2", 0 },
    { "cuDeviceTotalMem", 2000, DEF, "cuDeviceTotalMem", 0 },
    { "cuDeviceTotalMem", 3020, DEF, "cuDeviceTotalMem_v2", 0 },
    { "cuStreamBeginCapture", 10000, PTDS, "cuStreamBeginCapture_ptsz", 0 },
    { "cuStreamBeginCapture", 10010, PTDS, "cuStreamBeginCapture_v2_ptsz", 0 },
    { "cuStreamBeginCapture", 10010, DEF, "cuStreamBeginCapture_v2", 0 },
    { "cuMemcpyBatchAsync", 12080, PTDS, "cuMemcpyBatchAsync_ptsz", 0 },
    { "cuMemcpyBatchAsync", 13000, PTDS, "cuMemcpyBatchAsync_v2_ptsz", 0 },
    { "cuMemPrefetchAsync", 8000, DEF, "cuMemPrefetchAsync", 0 },
    { "cuMemPrefetchAsync", 12020, DEF, "cuMemPrefetchAsync_v2", 0 },
    { "cuMemPrefetchAsync", 12020, PTDS, "cuMemPrefetchAsync_v2_ptsz", 0 },
    { "cuStreamWaitValue32", 8000, PTDS, "cuStreamWaitValue32_ptsz", 0 },
    { "cuStreamWaitValue32", 11070, PTDS, "cuStreamWaitValue32_v2_ptsz", 0 },
    { "cuStreamWaitValue32", 11070, DEF, "cuStreamWaitValue32_v2", 0 },
    { "cuTexRefSetAddress2D", 2020, DEF, "cuTexRefSetAddress2D", 0 },
    { "cuTexRefSetAddress2D", 3020, DEF, "cuTexRefSetAddress2D_v2", 0 },
    { "cuTexRefSetAddress2D", 4010, DEF, "cuTexRefSetAddress2D_v3", 0 },
    { "cuGraphInstantiate", 10000, DEF, "cuGraphInstantiate", 0 },
    { "cuGraphInstantiate", 11000, DEF, "cuGraphInstantiate_v2", 0 },
    { "cuEventDestroy", 2000, DEF, "cuEventDestroy", 0 },
    { "cuEventDestroy", 4000, DEF, "cuEventDestroy_v2", 0 },
    { "cuEventElapsedTime", 12080, DEF, "cuEventElapsedTime_v2", 0 },
    { "cuDevicePrimaryCtxRelease", 7000, DEF, "cuDevicePrimaryCtxRelease", 0 },
    { "cuDevicePrimaryCtxRelease", 11000, DEF, "cuDevicePrimaryCtxRelease_v2", 0 },
    { "cuStreamGetCtx", 9020, PTDS, "cuStreamGetCtx_ptsz", 0 },
    { "cuStreamGetCtx", 12050, PTDS, "cuStreamGetCtx_v2_ptsz", 0 },
    { "cuMemBatchDecompressAsync", 12060, PTDS, "cuMemBatchDecompressAsync_ptsz", 0 },
    { "cuDeviceGetHostAtomicCapabilities", 12090, DEF, NULL, OLD },
    { "cuDeviceGetHostAtomicCapabilities", 13000, DEF, "cuDeviceGetHostAtomicCapabilities", 0 },
    { "cuInit", 2000, DEF, "cuInit", 0 },
    { "cuInit", 0, DEF, NULL, OLD },
    { "cuInit", -1, DEF, NULL, OLD },
    { "cuNoSuchFunction", 13000, DEF, NULL, NOSYM },
    { "", 0, DEF, NULL, NOSYM },
    { "", 13000, PTDS, NULL, NOSYM },
    { "cuMemAlloc_v2", 13000, DEF, NULL, NOSYM },               /* base names only */
    { "cumemalloc", 13000, DEF, NULL, NOSYM },                  /* case matters */
};

static int failures;

static void fail(const char *what, const char *expect, const char *got)
{
    printf("FAIL %s: expected %s, got %s\n", what, expect, got);
    failures++;
}

/* The exported name at address fn, or "(none)". */
static const char *name_of(void *fn)
{
    Dl_info info;

    if (fn && dladdr(fn, &info) && info.dli_sname && info.dli_saddr == fn)
        return info.dli_sname;
    return "(none)";
}

/* Check one lookup's outcome (res, fn, status) against case c. */
static void check_case(const char *via, const proc_case_t *c, CUresult res, void *fn,
                       int status, int have_status)
{
    char what[160], exp[96], got[160];

    snprintf(what, sizeof(what), "%s(\"%s\", %d, %llu)", via, c->symbol, c->version,
             (unsigned long long)c->flags);
    if (c->expect) {
        void *want = dlsym(RTLD_DEFAULT, c->expect);
        snprintf(got, sizeof(got), "result %d status %d %s", res, status, name_of(fn));
        snprintf(exp, sizeof(exp), "result 0 status 0 %s", c->expect);
        if (res != CUDA_SUCCESS || !want || fn != want ||
            (have_status && status != CU_GET_PROC_ADDRESS_SUCCESS))
            fail(what, exp, got);
        return;
    }
    snprintf(got, sizeof(got), "result %d status %d pfn %p", res, status, fn);
    snprintf(exp, sizeof(exp), "result %d status %d pfn (nil)", CUDA_ERROR_NOT_FOUND, c->status);
    if (res != CUDA_ERROR_NOT_FOUND || fn || (have_status && status != c->status))
        fail(what, exp, got);
}

static void run_cases(PFN_cuGetProcAddress_v11030 legacy)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const proc_case_t *c = &cases[i];
        CUdriverProcAddressQueryResult status = 99;
        void *fn = (void *)&status;
        CUresult res = cuGetProcAddress_v2(c->symbol, &fn, c->version, c->flags, &status);

        check_case("cuGetProcAddress_v2", c, res, fn, (int)status, 1);
        fn = (void *)&status;
        res = cuGetProcAddress_v2(c->symbol, &fn, c->version, c->flags, NULL);
        check_case("cuGetProcAddress_v2/no status", c, res, fn, 0, 0);
        fn = (void *)&status;
        res = legacy(c->symbol, &fn, c->version, c->flags);
        check_case("cuGetProcAddress", c, res, fn, 0, 0);
    }
}

/* One invalid call: must return CUDA_ERROR_INVALID_VALUE and leave symbolStatus alone. */
static void check_invalid(const char *what, const char *symbol, void **pfn, int version,
                          cuuint64_t flags)
{
    CUdriverProcAddressQueryResult status = 99;
    CUresult res = cuGetProcAddress_v2(symbol, pfn, version, flags, &status);
    char got[64];

    snprintf(got, sizeof(got), "result %d status %d pfn %p", res, (int)status,
             pfn ? *pfn : NULL);
    if (res != CUDA_ERROR_INVALID_VALUE || status != 99 || (pfn && *pfn))
        fail(what, "result 1 (CUDA_ERROR_INVALID_VALUE) status untouched pfn (nil)", got);
}

static void run_invalid(void)
{
    void *fn = &fn;

    check_invalid("NULL symbol", NULL, &fn, 13000, DEF);
    check_invalid("NULL pfn", "cuMemAlloc", NULL, 13000, DEF);
    fn = &fn;
    check_invalid("flags 4", "cuMemAlloc", &fn, 13000, 4);
    fn = &fn;
    check_invalid("flags LEGACY|PTDS", "cuMemAlloc", &fn, 13000, LEG | PTDS);
    fn = &fn;
    check_invalid("flags bit 40", "cuMemcpy", &fn, 13000, 1ull << 40);
    fn = &fn;
    check_invalid("version above the driver's", "cuMemAlloc", &fn, CUDA_VERSION + 10, DEF);
    if (cuGetProcAddress_v2(NULL, NULL, 13000, DEF, NULL) != CUDA_ERROR_INVALID_VALUE)
        fail("all NULL", "CUDA_ERROR_INVALID_VALUE", "another result");
}

/* The pointers handed out for cuGetProcAddress itself are usable entry points. */
static void run_self(void)
{
    PFN_cuGetProcAddress_v12000 v2 = NULL;
    PFN_cuGetProcAddress_v11030 v1 = NULL;
    void *fn = NULL;

    if (cuGetProcAddress_v2("cuGetProcAddress", (void **)&v2, 12000, DEF, NULL) ||
        v2 != (PFN_cuGetProcAddress_v12000)&cuGetProcAddress_v2) {
        fail("cuGetProcAddress@12000", "cuGetProcAddress_v2 itself", name_of((void *)v2));
        return;
    }
    if (cuGetProcAddress_v2("cuGetProcAddress", (void **)&v1, 11030, DEF, NULL) || !v1) {
        fail("cuGetProcAddress@11030", "cuGetProcAddress", name_of((void *)v1));
        return;
    }
    if (v2("cuMemAlloc", &fn, 3020, DEF, NULL) || fn != dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"))
        fail("v2 via itself: cuMemAlloc@3020", "cuMemAlloc_v2", name_of(fn));
    fn = NULL;
    if (v1("cuLaunchKernel", &fn, 7000, PTDS) || fn != dlsym(RTLD_DEFAULT, "cuLaunchKernel_ptsz"))
        fail("legacy via v2: cuLaunchKernel@7000/ptds", "cuLaunchKernel_ptsz", name_of(fn));
}

int main(void)
{
    PFN_cuGetProcAddress_v11030 legacy;

    *(void **)&legacy = dlsym(RTLD_DEFAULT, "cuGetProcAddress");
    if (!legacy) {
        printf("FAIL: libcuda.so.1 exports no cuGetProcAddress: %s\n", dlerror());
        return 1;
    }
    run_cases(legacy);
    run_invalid();
    run_self();
    if (failures) {
        printf("proc_variants: %d failure(s)\n", failures);
        return 1;
    }
    printf("proc_variants: %zu cases x 3 entry points, invalid arguments, self lookup: ok\n",
           sizeof(cases) / sizeof(cases[0]));
    return 0;
}
