/* SPDX-License-Identifier: MIT */
/*
 * shim_proc_replay.c - the CUDA 13 runtime's start-up lookups replayed through the shim.
 *
 * Like cudart: dlopen("libcuda.so.1"), dlsym("cuGetProcAddress_v2"), then every request of
 * ../shared/data/cudart13-proc-requests.txt (or the copy in tests/fixtures;
 * ELIXIR_PROC_REQUESTS overrides the path), with libelixir.so preloaded.  The dlsym must give
 * the shim's wrapper.  Each request is also put to the simulator's own cuGetProcAddress_v2
 * (found with the C library's dlsym, past the shim's override), and the two answers must
 * agree: same result and symbolStatus; where the simulator returns a symbol the shim hooks
 * (libelixir.so exports it), the shim's pointer is its wrapper of exactly that symbol;
 * anywhere else, the simulator's own pointer.  A symbol the shim hooks in some variant must
 * not be answered with a variant it does not hook: that call would bypass the shim (a
 * per-thread or newer ABI variant missing from shim/hooks.h).  Finally cuGetProcAddress asked
 * for itself (both ABIs) returns wrappers whose answers are wrapped.
 */
#include <cudaTypedefs.h>

#include "shim_test.h"
#include "simtest.h"

typedef void *(*dlsym_fn_t)(void *, const char *);

typedef struct replay {
    PFN_cuGetProcAddress_v12000 shim_gpa, real_gpa;
    dlsym_fn_t real_dlsym;
    void *shim_handle;
    int requests, wrapped, passed, missed, failures;
} replay_t;

static void fail(replay_t *r, const char *sym, int ver, int flags, const char *expect,
                 const char *got)
{
    printf("FAIL \"%s\" %d %d: expected %s, got %s\n", sym, ver, flags, expect, got);
    r->failures++;
}

/* Does libelixir.so export a variant of base symbol `sym` (the names cuda.h gives them)? */
static int hooks_some_variant(const replay_t *r, const char *sym)
{
    static const char *const suffixes[] = { "", "_v2", "_v3", "_ptds", "_ptsz", "_v2_ptds",
                                            "_v2_ptsz", "_v3_ptds", "_v3_ptsz" };
    char name[600];     /* a request line's symbol (under 512 bytes) and a suffix */

    for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
        snprintf(name, sizeof(name), "%s%s", sym, suffixes[i]);
        if (r->real_dlsym(r->shim_handle, name))
            return 1;
    }
    return 0;
}

/* Compare the shim's answer (p1) with the simulator's (p2) for one found symbol. */
static void check_pointer(replay_t *r, const char *sym, int ver, int flags, void *p1, void *p2)
{
    const char *real_name = sh_name(p2);
    char got[300];

    if (!strcmp(real_name, "?") || sh_in_shim(p2)) {
        fail(r, sym, ver, flags, "a simulator symbol from the real lookup", real_name);
        return;
    }
    snprintf(got, sizeof(got), "%s in %s", sh_name(p1), sh_in_shim(p1) ? "the shim" : "the driver");
    if (r->real_dlsym(r->shim_handle, real_name)) {
        r->wrapped++;
        if (!sh_in_shim(p1) || strcmp(sh_name(p1), real_name) != 0) {
            char want[200];
            snprintf(want, sizeof(want), "the shim's wrapper %s", real_name);
            fail(r, sym, ver, flags, want, got);
        }
    } else {
        r->passed++;
        if (p1 != p2)
            fail(r, sym, ver, flags, real_name, got);
        else if (hooks_some_variant(r, sym))
            fail(r, sym, ver, flags, "a variant the shim hooks", got);
    }
}

static void one_request(replay_t *r, const char *sym, int ver, int flags)
{
    CUdriverProcAddressQueryResult st1 = 99, st2 = 98;
    void *p1 = &st1, *p2 = &st2;
    CUresult r1 = r->shim_gpa(sym, &p1, ver, (cuuint64_t)flags, &st1);
    CUresult r2 = r->real_gpa(sym, &p2, ver, (cuuint64_t)flags, &st2);
    char want[64], got[64];

    r->requests++;
    if (r1 != r2 || st1 != st2) {
        snprintf(want, sizeof(want), "result %d status %d", (int)r2, (int)st2);
        snprintf(got, sizeof(got), "result %d status %d", (int)r1, (int)st1);
        fail(r, sym, ver, flags, want, got);
    } else if (!p2) {
        r->missed++;
        if (p1)
            fail(r, sym, ver, flags, "NULL, as from the driver", sh_name(p1));
    } else {
        check_pointer(r, sym, ver, flags, p1, p2);
    }
}

static void replay_file(replay_t *r, FILE *f)
{
    char line[512];

    while (fgets(line, sizeof(line), f)) {
        char *sp = strchr(line, ' '), *end;
        int ver, flags;

        if (line[0] == '#' || !sp)
            continue;
        *sp = '\0';
        ver = (int)strtol(sp + 1, &end, 10);
        flags = (int)strtol(end, &end, 10);
        one_request(r, line, ver, flags);
    }
}

/* cuGetProcAddress asked for itself: both ABIs come back wrapped and keep wrapping. */
static void check_chain(const replay_t *r)
{
    PFN_cuGetProcAddress_v12000 v2;
    PFN_cuGetProcAddress_v11030 v1;
    void *p;

    CHECK_CU(r->shim_gpa("cuGetProcAddress", (void **)&v2, 12000, 0, NULL));
    CHECK_CU(r->shim_gpa("cuGetProcAddress", (void **)&v1, 11030, 0, NULL));
    EXPECT(sh_in_shim((void *)v2) && !strcmp(sh_name((void *)v2), "cuGetProcAddress_v2"),
           "cuGetProcAddress@12000 is %s", sh_name((void *)v2));
    EXPECT(sh_in_shim((void *)v1) && !strcmp(sh_name((void *)v1), "cuGetProcAddress"),
           "cuGetProcAddress@11030 is %s", sh_name((void *)v1));
    CHECK_CU(v2("cuMemAlloc", &p, 3020, 0, NULL));
    EXPECT(sh_in_shim(p) && !strcmp(sh_name(p), "cuMemAlloc_v2"), "cuMemAlloc@3020 is %s",
           sh_name(p));
    CHECK_CU(v1("cuLaunchKernel", &p, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM));
    EXPECT(sh_in_shim(p) && !strcmp(sh_name(p), "cuLaunchKernel_ptsz"),
           "cuLaunchKernel@13000 per-thread is %s", sh_name(p));
}

static dlsym_fn_t libc_dlsym(void)
{
    void *p = dlvsym(RTLD_DEFAULT, "dlsym", "GLIBC_2.34");

    if (!p)
        p = dlvsym(RTLD_DEFAULT, "dlsym", "GLIBC_2.2.5");
    EXPECT(p && !sh_in_shim(p), "the C library's dlsym (got %p)", p);
    return (dlsym_fn_t)p;
}

int main(int argc, char **argv)
{
    replay_t r = { 0 };
    FILE *f;
    void *h;

    (void)argc;
    sh_reexec_preloaded(argv);
    f = fopen(st_proc_requests(), "r");
    if (!f) {
        printf("skip: no request list\n");
        return TEST_SKIP;
    }
    h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    EXPECT(h, "dlopen libcuda.so.1: %s", dlerror());
    *(void **)&r.shim_gpa = dlsym(h, "cuGetProcAddress_v2");
    EXPECT(sh_in_shim((void *)r.shim_gpa), "dlsym(cuGetProcAddress_v2) is %s, not the shim's",
           sh_name((void *)r.shim_gpa));
    r.real_dlsym = libc_dlsym();
    *(void **)&r.real_gpa = r.real_dlsym(h, "cuGetProcAddress_v2");
    EXPECT(r.real_gpa && !sh_in_shim((void *)r.real_gpa), "the simulator's cuGetProcAddress_v2");
    r.shim_handle = dlopen(sh_lib(), RTLD_NOW | RTLD_NOLOAD);
    EXPECT(r.shim_handle, "libelixir.so is not loaded");

    replay_file(&r, f);
    fclose(f);
    check_chain(&r);
    printf("shim_proc_replay: %d requests: %d wrapped, %d passed through, %d not found\n",
           r.requests, r.wrapped, r.passed, r.missed);
    EXPECT(r.failures == 0, "%d failure(s)", r.failures);
    EXPECT(r.requests > 400 && r.wrapped >= 50, "%d requests, %d wrapped", r.requests, r.wrapped);
    EXPECT(sh_calls("cuGetProcAddress_v2") >= r.requests, "%lld calls of the wrapper",
           sh_calls("cuGetProcAddress_v2"));
    return 0;
}
