/* SPDX-License-Identifier: MIT */
/*
 * exports_all.c - libcuda.so.1 exports every Driver API name the real driver does.
 *
 * The build writes $BUILD/gen/exports.txt (BUILD defaults to "build"): every function name
 * cuda.h declares, legacy ABI and per-thread names included.  Each must resolve with dlsym in
 * libcuda.so.1.  The library's dynamic symbol table then tells implemented functions (global
 * binding) from the weak fallbacks that stand in for the rest; every fallback must return
 * CUDA_ERROR_NOT_SUPPORTED, and any other exported cu* name must be declared by one of the
 * interop headers (a name declared nowhere is a misspelt implementation that overrides
 * nothing).  No fallback is called with arguments it could use.
 */
#include <dlfcn.h>
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#define MAX_NAMES 4096

typedef struct names {
    char *text;             /* exports.txt, split in place */
    char *v[MAX_NAMES];
    size_t n;
} names_t;

typedef struct dynsym {
    const char *name;
    int weak;
} dynsym_t;

static int failures;

static char *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long len;

    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)len + 1)) != NULL) {
        *size = fread(buf, 1, (size_t)len, f);
        buf[*size] = '\0';
    }
    fclose(f);
    return buf;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Load the list of names, one per line, sorted for bsearch. */
static int load_names(const char *path, names_t *ns)
{
    size_t size;
    char *save = NULL;

    ns->text = read_file(path, &size);
    if (!ns->text)
        return -1;
    for (char *s = strtok_r(ns->text, "\n", &save); s && ns->n < MAX_NAMES;
         s = strtok_r(NULL, "\n", &save))
        ns->v[ns->n++] = s;
    qsort(ns->v, ns->n, sizeof(ns->v[0]), cmp_str);
    return ns->n ? 0 : -1;
}

static int listed(const names_t *ns, const char *name)
{
    return bsearch(&name, ns->v, ns->n, sizeof(ns->v[0]), cmp_str) != NULL;
}

/* Defined function symbols of the ELF file image `img`; *n set.  NULL if it is not ELF64. */
static dynsym_t *read_dynsym(const char *img, size_t size, size_t *n)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
    const Elf64_Shdr *sh;
    dynsym_t *out = NULL;

    *n = 0;
    if (size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
        eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shoff + eh->e_shnum * sizeof(*sh) > size)
        return NULL;
    sh = (const Elf64_Shdr *)(img + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum ||
            sh[i].sh_offset + sh[i].sh_size > size)
            continue;
        const Elf64_Sym *sym = (const Elf64_Sym *)(img + sh[i].sh_offset);
        const char *str = img + sh[sh[i].sh_link].sh_offset;
        size_t count = sh[i].sh_size / sizeof(*sym);
        out = calloc(count, sizeof(*out));
        for (size_t j = 0; out && j < count; j++) {
            if (sym[j].st_shndx == SHN_UNDEF || ELF64_ST_TYPE(sym[j].st_info) != STT_FUNC)
                continue;
            out[*n].name = str + sym[j].st_name;
            out[(*n)++].weak = ELF64_ST_BIND(sym[j].st_info) == STB_WEAK;
        }
    }
    return out;
}

/* Is `name` declared, as "name(", in one of the CUDA interop headers? */
static int in_interop_headers(const char *name)
{
    static const char *const headers[] = { "cudaProfiler.h", "cudaGL.h", "cudaEGL.h",
                                           "cudaVDPAU.h" };
    const char *home = getenv("CUDA_HOME");
    char path[1024], pat[256];
    int found = 0;

    snprintf(pat, sizeof(pat), "%s(", name);
    for (size_t i = 0; i < sizeof(headers) / sizeof(headers[0]) && !found; i++) {
        size_t size;
        char *text;
        snprintf(path, sizeof(path), "%s/include/%s", home ? home : "/usr/local/cuda",
                 headers[i]);
        text = read_file(path, &size);
        found = text && strstr(text, pat);
        free(text);
    }
    return found;
}

/* Every listed name resolves in the library opened as h. */
static void check_listed(void *h, const names_t *ns)
{
    for (size_t i = 0; i < ns->n; i++)
        if (!dlsym(h, ns->v[i])) {
            printf("FAIL dlsym(\"%s\"): expected a function, got %s\n", ns->v[i], dlerror());
            failures++;
        }
}

/* Fallbacks return CUDA_ERROR_NOT_SUPPORTED; other cu* names must be declared somewhere. */
static void check_dynsym(void *h, const names_t *ns, const dynsym_t *syms, size_t n,
                         int *implemented, int *fallbacks)
{
    for (size_t i = 0; i < n; i++) {
        const char *name = syms[i].name;
        if (strncmp(name, "cu", 2))
            continue;
        if (!listed(ns, name) && !in_interop_headers(name)) {
            printf("FAIL %s: expected a name declared by cuda.h or an interop header, got "
                   "an export declared nowhere\n", name);
            failures++;
        }
        if (!syms[i].weak) {
            (*implemented)++;
            continue;
        }
        int (*fallback)(void);
        *(void **)&fallback = dlsym(h, name);
        int got = fallback ? fallback() : -1;
        (*fallbacks)++;
        if (got != CUDA_ERROR_NOT_SUPPORTED) {
            printf("FAIL fallback %s(): expected %d (CUDA_ERROR_NOT_SUPPORTED), got %d\n", name,
                   CUDA_ERROR_NOT_SUPPORTED, got);
            failures++;
        }
    }
}

/* A function no simulator implements, called through its real prototype. */
static void check_typed_call(const dynsym_t *syms, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(syms[i].name, "cuGraphicsUnregisterResource") && syms[i].weak) {
            CUresult res = cuGraphicsUnregisterResource(NULL);
            if (res != CUDA_ERROR_NOT_SUPPORTED) {
                printf("FAIL cuGraphicsUnregisterResource(NULL): expected %d, got %d\n",
                       CUDA_ERROR_NOT_SUPPORTED, res);
                failures++;
            }
        }
}

int main(void)
{
    const char *build = getenv("BUILD");
    char path[1024];
    names_t ns = { 0 };
    Dl_info info;
    size_t size, n;
    int implemented = 0, fallbacks = 0;

    snprintf(path, sizeof(path), "%s/gen/exports.txt", build && *build ? build : "build");
    if (load_names(path, &ns) < 0) {
        printf("FAIL: cannot read the export list %s\n", path);
        return 1;
    }
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    void *any = h ? dlsym(h, "cuGetProcAddress_v2") : NULL;
    if (!any || !dladdr(any, &info) || !info.dli_fname) {
        printf("FAIL: cannot open libcuda.so.1: %s\n", dlerror());
        return 1;
    }
    char *img = read_file(info.dli_fname, &size);
    dynsym_t *syms = img ? read_dynsym(img, size, &n) : NULL;
    if (!syms) {
        printf("FAIL: cannot read the dynamic symbols of %s\n", info.dli_fname);
        return 1;
    }
    check_listed(h, &ns);
    check_dynsym(h, &ns, syms, n, &implemented, &fallbacks);
    check_typed_call(syms, n);
    printf("exports_all: %zu names from cuda.h; %s exports %d implemented, %d fallbacks\n",
           ns.n, info.dli_fname, implemented, fallbacks);
    free(syms);
    free(img);
    free(ns.text);
    if (failures) {
        printf("exports_all: %d failure(s)\n", failures);
        return 1;
    }
    return 0;
}
