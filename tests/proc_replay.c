/* SPDX-License-Identifier: MIT */
/*
 * proc_replay.c - the CUDA 13 runtime's start-up lookups, replayed against libcuda.so.1.
 *
 * cudart opens the driver with dlopen("libcuda.so.1"), finds cuGetProcAddress_v2 with dlsym,
 * and then asks it for every entry point it uses: the (symbol, version, flags) requests listed
 * in ../shared/data/cudart13-proc-requests.txt (or the copy in tests/fixtures;
 * ELIXIR_PROC_REQUESTS overrides the path).
 * This test does the same and checks each answer:
 *   - a pointer handed back is an exported function named <symbol>, <symbol>_vN, with a
 *     _ptds/_ptsz suffix only when per-thread variants were asked for (flags 2);
 *   - with flags 2 it is a per-thread variant whenever cudaTypedefs.h declares one at or
 *     below the version asked for;
 *   - result, pointer and symbolStatus agree with each other: a miss is CUDA_SUCCESS with
 *     *pfn NULL and the reason in symbolStatus (the docs; the real driver, 580);
 *   - every request for a function that cudaTypedefs.h declares at a version not above the one
 *     asked for resolves, and one for a per-thread variant (flags 2) when a per-thread one is
 *     declared at that version; others report VERSION_NOT_SUFFICIENT.
 * cudaTypedefs.h is read at run time ($CUDA_HOME/include, default /usr/local/cuda).  Requests
 * for functions outside it (OpenGL, EGL, VDPAU and profiler interop) may miss; all misses are
 * listed in the summary.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cudaTypedefs.h>

#include "simtest.h"

#define MAX_NAME 128

typedef struct typedef_fn {
    char name[MAX_NAME];
    int first;              /* lowest version of any PFN_<name>_v<version> typedef */
    int first_pt;           /* lowest version of a _ptds/_ptsz one, INT_MAX when none */
} typedef_fn_t;

typedef struct known {
    typedef_fn_t *fns;
    size_t n, cap;
} known_t;

typedef struct tally {
    int requests, resolved, missed, failures;
    char missed_list[8192];
} tally_t;

static int by_name(const void *a, const void *b)
{
    return strcmp(((const typedef_fn_t *)a)->name, ((const typedef_fn_t *)b)->name);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long len;

    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)len + 1)) != NULL) {
        buf[fread(buf, 1, (size_t)len, f)] = '\0';
    }
    fclose(f);
    return buf;
}

/* Record PFN identifier `id` (e.g. cuMemcpyHtoD_v7000_ptds) as (name, version). */
static int add_pfn(known_t *k, const char *id, size_t len)
{
    char name[MAX_NAME];
    char *v;
    int pt = 0;

    if (len >= MAX_NAME)
        return 0;
    memcpy(name, id, len);
    name[len] = '\0';
    if (len > 5 && (!strcmp(name + len - 5, "_ptds") || !strcmp(name + len - 5, "_ptsz"))) {
        name[len - 5] = '\0';
        pt = 1;
    }
    v = strrchr(name, '_');
    if (!v || v[1] != 'v' || v[2] < '0' || v[2] > '9')
        return 0;
    *v = '\0';
    if (k->n == k->cap) {
        void *p = realloc(k->fns, (k->cap ? k->cap * 2 : 512) * sizeof(*k->fns));
        if (!p)
            return -1;
        k->fns = p;
        k->cap = k->cap ? k->cap * 2 : 512;
    }
    snprintf(k->fns[k->n].name, MAX_NAME, "%s", name);
    k->fns[k->n].first = atoi(v + 2);
    k->fns[k->n++].first_pt = pt ? atoi(v + 2) : INT_MAX;
    return 0;
}

/* Read every PFN_ typedef name of cudaTypedefs.h into k, sorted, one row per function. */
static int load_typedefs(const char *path, known_t *k)
{
    char *text = read_file(path), *p;
    size_t out = 0;

    if (!text)
        return -1;
    for (p = strstr(text, "PFN_"); p; p = strstr(p, "PFN_")) {
        size_t len = strspn(p + 4, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                   "0123456789_");
        if (add_pfn(k, p + 4, len) < 0)
            break;
        p += 4 + len;
    }
    free(text);
    qsort(k->fns, k->n, sizeof(*k->fns), by_name);
    for (size_t i = 0; i < k->n; i++) {         /* merge duplicates, keeping the first version */
        typedef_fn_t *prev = out ? &k->fns[out - 1] : NULL;
        if (prev && !strcmp(prev->name, k->fns[i].name)) {
            if (k->fns[i].first < prev->first)
                prev->first = k->fns[i].first;
            if (k->fns[i].first_pt < prev->first_pt)
                prev->first_pt = k->fns[i].first_pt;
        } else {
            k->fns[out++] = k->fns[i];
        }
    }
    k->n = out;
    return k->n ? 0 : -1;
}

/* The cudaTypedefs.h row of `name`, or NULL when it declares no such function. */
static const typedef_fn_t *lookup(const known_t *k, const char *name)
{
    typedef_fn_t key;

    if (strlen(name) >= MAX_NAME)
        return NULL;
    snprintf(key.name, MAX_NAME, "%s", name);
    return bsearch(&key, k->fns, k->n, sizeof(*k->fns), by_name);
}

/* Does a _ptds/_ptsz name end `name`? */
static int is_per_thread(const char *name)
{
    size_t n = strlen(name);

    return n > 5 && (!strcmp(name + n - 5, "_ptds") || !strcmp(name + n - 5, "_ptsz"));
}

/* Is `got` <symbol>, <symbol>_vN, optionally + _ptds/_ptsz when per_thread is set? */
static int name_fits(const char *symbol, const char *got, int per_thread)
{
    size_t n = strlen(symbol);
    const char *rest = got + n;

    if (strncmp(got, symbol, n))
        return 0;
    if (rest[0] == '_' && rest[1] == 'v' && rest[2] >= '2' && rest[2] <= '9') {
        rest += 2;
        rest += strspn(rest, "0123456789");
    }
    if (*rest == '\0')
        return 1;
    return per_thread && (!strcmp(rest, "_ptds") || !strcmp(rest, "_ptsz"));
}

static void fail(tally_t *t, const char *sym, int ver, int flags, const char *expect,
                 const char *got)
{
    printf("FAIL \"%s\" %d %d: expected %s, got %s\n", sym, ver, flags, expect, got);
    t->failures++;
}

/* Check a lookup that returned CUDA_SUCCESS. */
static void check_hit(tally_t *t, void *h, const known_t *k, const char *sym, int ver, int flags,
                      void *fn, int status)
{
    Dl_info info;
    const typedef_fn_t *td = lookup(k, sym);
    int per_thread = flags == CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    char got[256];

    t->resolved++;
    if (!fn || status != CU_GET_PROC_ADDRESS_SUCCESS) {
        snprintf(got, sizeof(got), "pfn %p status %d", fn, status);
        fail(t, sym, ver, flags, "a pointer and status SUCCESS", got);
        return;
    }
    if (!dladdr(fn, &info) || !info.dli_sname || info.dli_saddr != fn ||
        dlsym(h, info.dli_sname) != fn) {
        fail(t, sym, ver, flags, "an exported function", "an address no symbol names");
        return;
    }
    if (!name_fits(sym, info.dli_sname, per_thread))
        fail(t, sym, ver, flags, "a variant of the symbol asked for", info.dli_sname);
    if (td && td->first > ver) {
        snprintf(got, sizeof(got), "%s (first declared at %d)", info.dli_sname, td->first);
        fail(t, sym, ver, flags, "VERSION_NOT_SUFFICIENT", got);
    }
    if (td && per_thread && td->first_pt <= ver && !is_per_thread(info.dli_sname))
        fail(t, sym, ver, flags, "a _ptds/_ptsz variant", info.dli_sname);
}

/* Check a lookup that found nothing (CUDA_SUCCESS with *pfn NULL). */
static void check_miss(tally_t *t, const known_t *k, const char *sym, int ver, int flags,
                       void *fn, int status)
{
    const typedef_fn_t *td = lookup(k, sym);
    int per_thread = flags == CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    /* The version it needs: a name with per-thread variants has none for flags 2 below them. */
    int first = !td ? -1 : per_thread && td->first_pt != INT_MAX ? td->first_pt : td->first;
    size_t used = strlen(t->missed_list);
    char got[128];

    t->missed++;
    snprintf(t->missed_list + used, sizeof(t->missed_list) - used, "  \"%s\" %d %d: %s\n", sym,
             ver, flags, status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                             ? "VERSION_NOT_SUFFICIENT" : "SYMBOL_NOT_FOUND");
    snprintf(got, sizeof(got), "not found, pfn %p status %d", fn, status);
    if (fn || (status != CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND &&
               status != CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT))
        fail(t, sym, ver, flags, "pfn NULL and a not-found status", got);
    else if (first >= 0 && first <= ver)
        fail(t, sym, ver, flags, "found (declared in cudaTypedefs.h)", got);
    else if (first > ver && status != CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT)
        fail(t, sym, ver, flags, "status VERSION_NOT_SUFFICIENT", got);
}

/* Parse "symbol version flags" (symbol may be empty); 1 on success, 0 to skip the line. */
static int parse_request(char *line, char **sym, int *ver, int *flags)
{
    char *sp = strchr(line, ' '), *end;

    if (line[0] == '#' || !sp)
        return 0;
    *sp = '\0';
    *sym = line;
    *ver = (int)strtol(sp + 1, &end, 10);
    *flags = (int)strtol(end, &end, 10);
    return 1;
}

static void replay(FILE *f, void *h, PFN_cuGetProcAddress_v12000 gpa, const known_t *k,
                   tally_t *t)
{
    char line[512], *sym;
    int ver, flags;

    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (!parse_request(line, &sym, &ver, &flags))
            continue;
        CUdriverProcAddressQueryResult status = 99;
        void *fn = &status;
        CUresult res = gpa(sym, &fn, ver, (cuuint64_t)flags, &status);
        t->requests++;
        if (res == CUDA_SUCCESS && fn) {
            check_hit(t, h, k, sym, ver, flags, fn, (int)status);
        } else if (res == CUDA_SUCCESS) {
            check_miss(t, k, sym, ver, flags, fn, (int)status);
        } else {
            char got[32];
            snprintf(got, sizeof(got), "result %d", res);
            fail(t, sym, ver, flags, "CUDA_SUCCESS", got);
        }
    }
}

int main(void)
{
    const char *req = st_proc_requests();
    const char *home = getenv("CUDA_HOME");
    char path[1024];
    known_t known = { 0 };
    tally_t t = { 0 };
    PFN_cuGetProcAddress_v12000 gpa;
    FILE *f;
    void *h;

    snprintf(path, sizeof(path), "%s/include/cudaTypedefs.h", home ? home : "/usr/local/cuda");
    if (!(f = fopen(req, "r")) || load_typedefs(path, &known) < 0) {
        printf("skip: cannot read %s or %s\n", req, path);
        return 77;
    }
    h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    *(void **)&gpa = h ? dlsym(h, "cuGetProcAddress_v2") : NULL;
    if (!gpa) {
        printf("FAIL: libcuda.so.1 / cuGetProcAddress_v2: %s\n", dlerror());
        return 1;
    }
    replay(f, h, gpa, &known, &t);
    fclose(f);
    printf("proc_replay: %d requests, %d resolved, %d not found:\n%s", t.requests, t.resolved,
           t.missed, t.missed_list);
    free(known.fns);
    if (t.requests == 0 || t.failures) {
        printf("proc_replay: %d failure(s)%s\n", t.failures, t.requests ? "" : ", no requests");
        return 1;
    }
    return 0;
}
