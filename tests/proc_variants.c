/* SPDX-License-Identifier: MIT */
/*
 * proc_variants.c - cuGetProcAddress picks the variant the real driver would.
 *
 * Each case names a base symbol, a CUDA version and flags, and the exported name that must
 * come back, read off cuda.h and cudaTypedefs.h by hand (PFN_<name>_v<version> typedefs and the
 * #define NAME NAME_vN lines), not from the generator, and where the docs leave it open, the
 * real driver's answers (580): a negative version is newer than any, both stream flags
 * together ask for the per-thread variant, and a name with per-thread variants asked for one
 * at a version before them has none.  A lookup that finds
 * nothing returns CUDA_SUCCESS with *pfn NULL and the reason in symbolStatus through
 * cuGetProcAddress_v2 (5 arguments; the docs say so), CUDA_ERROR_NOT_FOUND with *pfn untouched
 * through the legacy 4-argument cuGetProcAddress (the driver does so).  Then the error cases,
 * which leave *pfn and symbolStatus untouched: bad flags, a version above the driver's, and on
 * the simulator NULL arguments (the real driver crashes on them).  Nothing here calls cuInit:
 * like the real driver, the lookup works before it.
 */
#include <limits.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <cuda.h>
#include <cudaTypedefs.h>

#include "simtest.h"

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
    { "cuMemcpy", 7000, LEG | PTDS, "cuMemcpy_ptds", 0 },
    { "cuMemcpy", 6050, LEG | PTDS, NULL, OLD },
    { "cuMemAlloc", 13000, LEG | PTDS, "cuMemAlloc_v2", 0 },
    { "cuMemcpy", 6050, PTDS, NULL, OLD },                      /* per-thread came in 7.0 */
    { "cuMemcpyHtoD", 3020, PTDS, NULL, OLD },                  /* not cuMemcpyHtoD_v2 */
    { "cuLaunchKernel", 6050, PTDS, NULL, OLD },
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
    { "cuInit", -1, DEF, "cuInit", 0 },                         /* negative: the newest */
    { "cuCtxSynchronize", -1, DEF, "cuCtxSynchronize_v2", 0 },
    { "cuMemAlloc", INT_MIN, DEF, "cuMemAlloc_v2", 0 },
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

/* Check one lookup's outcome (res, fn, status) against case c; `untouched` is what fn held
 * before, which a miss through the legacy entry point leaves. */
static void check_case(const char *via, const proc_case_t *c, CUresult res, void *fn,
                       int status, int have_status, int legacy, void *untouched)
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
    if (legacy) {
        snprintf(exp, sizeof(exp), "result %d pfn untouched (%p)", CUDA_ERROR_NOT_FOUND,
                 untouched);
        if (res != CUDA_ERROR_NOT_FOUND || fn != untouched)
            fail(what, exp, got);
        return;
    }
    snprintf(exp, sizeof(exp), "result 0 status %d pfn (nil)", c->status);
    if (res != CUDA_SUCCESS || fn || (have_status && status != c->status))
        fail(what, exp, got);
}

static void run_cases(PFN_cuGetProcAddress_v11030 legacy)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const proc_case_t *c = &cases[i];
        CUdriverProcAddressQueryResult status = 99;
        void *fn = (void *)&status;
        CUresult res = cuGetProcAddress_v2(c->symbol, &fn, c->version, c->flags, &status);

        check_case("cuGetProcAddress_v2", c, res, fn, (int)status, 1, 0, NULL);
        fn = (void *)&status;
        res = cuGetProcAddress_v2(c->symbol, &fn, c->version, c->flags, NULL);
        check_case("cuGetProcAddress_v2/no status", c, res, fn, 0, 0, 0, NULL);
        fn = (void *)&status;
        res = legacy(c->symbol, &fn, c->version, c->flags);
        check_case("cuGetProcAddress", c, res, fn, 0, 0, 1, (void *)&status);
    }
}

/* One invalid call, through both entry points: must return CUDA_ERROR_INVALID_VALUE and leave
 * *pfn and symbolStatus alone. */
static void check_invalid(const char *what, PFN_cuGetProcAddress_v11030 legacy,
                          const char *symbol, int null_pfn, int version, cuuint64_t flags)
{
    CUdriverProcAddressQueryResult status = 99;
    void *fn = &fn;
    void **pfn = null_pfn ? NULL : &fn;
    CUresult res = cuGetProcAddress_v2(symbol, pfn, version, flags, &status);
    char got[96];

    snprintf(got, sizeof(got), "result %d status %d pfn %s", res, (int)status,
             fn == (void *)&fn ? "untouched" : "changed");
    if (res != CUDA_ERROR_INVALID_VALUE || status != 99 || fn != (void *)&fn)
        fail(what, "result 1 (CUDA_ERROR_INVALID_VALUE) status and pfn untouched", got);
    res = legacy(symbol, pfn, version, flags);
    snprintf(got, sizeof(got), "legacy: result %d pfn %s", res,
             fn == (void *)&fn ? "untouched" : "changed");
    if (res != CUDA_ERROR_INVALID_VALUE || fn != (void *)&fn)
        fail(what, "legacy: result 1 (CUDA_ERROR_INVALID_VALUE) pfn untouched", got);
}

static void run_invalid(PFN_cuGetProcAddress_v11030 legacy)
{
    check_invalid("flags 4", legacy, "cuMemAlloc", 0, 13000, 4);
    check_invalid("flags bit 40", legacy, "cuMemcpy", 0, 13000, 1ull << 40);
    check_invalid("version above the driver's", legacy, "cuMemAlloc", 0, CUDA_VERSION + 10,
                  DEF);
    if (!st_simulated())
        return;
    check_invalid("NULL symbol", legacy, NULL, 0, 13000, DEF);
    check_invalid("NULL pfn", legacy, "cuMemAlloc", 1, 13000, DEF);
    check_invalid("all NULL", legacy, NULL, 1, 13000, DEF);
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
    run_invalid(legacy);
    run_self();
    if (failures) {
        printf("proc_variants: %d failure(s)\n", failures);
        return 1;
    }
    printf("proc_variants: %zu cases x 3 entry points, invalid arguments, self lookup: ok\n",
           sizeof(cases) / sizeof(cases[0]));
    return 0;
}
