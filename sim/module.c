/* SPDX-License-Identifier: MIT */
/*
 * module.c - modules, libraries, kernels and functions.
 *
 * An image is PTX text or a fatbin holding PTX (ptx.c reads it, image.c finds it).  Each `.entry NAME` binds
 * to a host C function NAME, looked up first in the shared objects of ELIXIR_SIM_KERNELS
 * (colon-separated, opened once) and then in the whole process.  Module-scope variables get
 * device memory of their declared size, initialised from the PTX.
 *
 * A module belongs to the context it was loaded in: "The lifetime of the module corresponds
 * to the lifetime of the context it was loaded in or until the module is explicitly unloaded"
 * (cuFuncGetModule), so destroying or resetting a context unloads its modules
 * (sim_module_free_ctx).  A library is context-independent: its CUkernel handles, and the
 * functions they name when launched directly, belong to a template module of no context,
 * which holds no globals; each context that asks for the library's module, a kernel's
 * CUfunction or a global (cuLibraryGetModule, cuKernelGetFunction, cuLibraryGetGlobal answer
 * "for the current context") gets a module of its own, made at the first such call, which
 * goes with the context while the library stays.
 *
 * Module structures and their function arrays are never freed: an unloaded module's shell
 * (magic cleared, functions' magic cleared) waits on a spare list and the next module loaded
 * takes the one freed last, so that, as with a driver whose handles are addresses of its own
 * objects, an unloaded module's and its functions' handles come back for new code, and a
 * stale handle is CUDA_ERROR_INVALID_HANDLE rather than a use after free.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

#define SIM_MOD_MAGIC 0x444f4d53u
#define SIM_LIB_MAGIC 0x42494c53u
#define SIM_KERN_MAGIC 0x4e524b53u

struct CUmod_st {
    uint32_t magic;
    struct CUmod_st *next;          /* live modules, or spare shells (modules_lock) */
    sim_ptx_module_t ptx;
    struct CUfunc_st *funcs;        /* one per entry, in an array of nfuncs_cap */
    uint32_t nfuncs_cap;
    uint64_t *globals;              /* device address of each global */
    int device;                     /* -1: a library's template module */
    CUcontext ctx;                  /* the context it was loaded in; NULL for a template */
    struct CUlib_st *lib;           /* the library it is a context's module of, or NULL */
    struct CUmod_st *lib_next;      /* next module of that library (modules_lock) */
};

struct CUkern_st {
    uint32_t magic;
    struct CUfunc_st *func;         /* in the library's template module */
    struct CUlib_st *lib;
};

struct CUlib_st {
    uint32_t magic;
    struct CUmod_st *mod;           /* template: no context, no globals */
    struct CUkern_st *kernels;      /* one per entry */
    char *ptx;                      /* the image's PTX text, for each context's module */
    size_t ptx_len;
    struct CUmod_st *ctx_mods;      /* its module in each context that asked (modules_lock) */
};

/* ---------------------------------------------------------------- host kernel lookup */

static void *kernel_libs[32];
static int nkernel_libs = -1;
static pthread_mutex_t libs_lock = PTHREAD_MUTEX_INITIALIZER;

static void open_kernel_libs(void)
{
    char list[sizeof(sim_cfg.kernels)];
    char *save = NULL;

    nkernel_libs = 0;
    snprintf(list, sizeof(list), "%s", sim_cfg.kernels);
    for (char *p = strtok_r(list, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
        if (nkernel_libs == (int)SIM_ARRAY_LEN(kernel_libs))
            break;
        void *h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
        if (!h)
            SIM_WARN("ELIXIR_SIM_KERNELS: cannot load %s: %s", p, dlerror());
        else
            kernel_libs[nkernel_libs++] = h;
    }
}

/* Host kernels registered by name (sim_kernel_register), searched first. */
typedef struct registered {
    char *name;
    sim_kernel_fn fn;
    struct registered *next;
} registered_t;

static registered_t *registered;

SIM_API int sim_kernel_register(const char *name, sim_kernel_fn fn)
{
    if (!name || !*name || !fn)
        return -EINVAL;
    pthread_mutex_lock(&libs_lock);
    registered_t *r = registered;
    while (r && strcmp(r->name, name) != 0)
        r = r->next;
    if (!r && (r = calloc(1, sizeof(*r)))) {
        if ((r->name = strdup(name))) {
            r->next = registered;
            registered = r;
        } else {
            free(r);
            r = NULL;
        }
    }
    if (r)
        r->fn = fn;
    pthread_mutex_unlock(&libs_lock);
    return r ? 0 : -ENOMEM;
}

static sim_kernel_fn find_kernel(const char *name)
{
    void *sym = NULL;
    pthread_mutex_lock(&libs_lock);
    for (const registered_t *r = registered; r; r = r->next)
        if (strcmp(r->name, name) == 0) {
            sim_kernel_fn fn = r->fn;
            pthread_mutex_unlock(&libs_lock);
            return fn;
        }
    if (nkernel_libs < 0)
        open_kernel_libs();
    for (int i = 0; i < nkernel_libs && !sym; i++)
        sym = dlsym(kernel_libs[i], name);
    pthread_mutex_unlock(&libs_lock);
    if (!sym)
        sym = dlsym(RTLD_DEFAULT, name);
    sim_kernel_fn fn;
    memcpy(&fn, &sym, sizeof(fn));
    return fn;
}

/* ---------------------------------------------------------------- loading */

static CUresult image_error(int err)
{
    switch (err) {
    case -ENOEXEC: return CUDA_ERROR_NO_BINARY_FOR_GPU;
    case -ENOTSUP: return CUDA_ERROR_NOT_SUPPORTED;
    case -ENOMEM: return CUDA_ERROR_OUT_OF_MEMORY;
    default: return CUDA_ERROR_INVALID_IMAGE;
    }
}

static struct CUmod_st *modules;        /* live modules */
static struct CUmod_st *spare_mods;     /* unloaded shells, the one freed last first */
static pthread_mutex_t modules_lock = PTHREAD_MUTEX_INITIALIZER;

/* A function array a shell outgrew: kept, since stale handles may still point into it. */
typedef struct retired_funcs {
    struct CUfunc_st *funcs;
    struct retired_funcs *next;
} retired_funcs_t;

static retired_funcs_t *retired_funcs;

/* A module shell with room for n functions, all zero but for funcs and nfuncs_cap: the one
 * unloaded last when there is one, so that its handles come back.  NULL when out of memory. */
static struct CUmod_st *module_new(uint32_t n)
{
    if (n == 0)
        n = 1;
    pthread_mutex_lock(&modules_lock);
    struct CUmod_st *m = spare_mods;
    if (m)
        spare_mods = m->next;
    pthread_mutex_unlock(&modules_lock);
    if (!m && !(m = calloc(1, sizeof(*m))))
        return NULL;
    struct CUfunc_st *funcs = m->funcs;
    uint32_t cap = m->nfuncs_cap;
    if (cap < n) {
        retired_funcs_t *old = funcs ? malloc(sizeof(*old)) : NULL;
        struct CUfunc_st *nf = calloc(n, sizeof(*nf));
        if (!nf || (funcs && !old)) {
            free(nf);
            free(old);
            nf = NULL;
        }
        if (!nf) {                      /* the shell goes back, unchanged */
            pthread_mutex_lock(&modules_lock);
            m->next = spare_mods;
            spare_mods = m;
            pthread_mutex_unlock(&modules_lock);
            return NULL;
        }
        if (old) {
            pthread_mutex_lock(&modules_lock);
            *old = (retired_funcs_t){ funcs, retired_funcs };
            retired_funcs = old;
            pthread_mutex_unlock(&modules_lock);
        }
        funcs = nf;
        cap = n;
    }
    memset(m, 0, sizeof(*m));
    memset(funcs, 0, cap * sizeof(*funcs));
    m->funcs = funcs;
    m->nfuncs_cap = cap;
    return m;
}

static void module_link(struct CUmod_st *m)
{
    pthread_mutex_lock(&modules_lock);
    m->next = modules;
    modules = m;
    pthread_mutex_unlock(&modules_lock);
}

/* Take m off the live list and off its library's list (modules_lock held). */
static void module_unlink_locked(struct CUmod_st *m)
{
    for (struct CUmod_st **p = &modules; *p; p = &(*p)->next)
        if (*p == m) {
            *p = m->next;
            break;
        }
    for (struct CUmod_st **p = m->lib ? &m->lib->ctx_mods : NULL; p && *p; p = &(*p)->lib_next)
        if (*p == m) {
            *p = m->lib_next;
            break;
        }
}

/* Free what an unlinked module holds; its shell, its handles dead, becomes the next one
 * module_new hands out. */
static void module_release(struct CUmod_st *m)
{
    for (uint32_t i = 0; m->globals && i < m->ptx.nglobals; i++)
        if (m->globals[i])
            sim_free_device(m->globals[i], 0);
    free(m->globals);
    m->globals = NULL;
    for (uint32_t i = 0; i < m->nfuncs_cap; i++)
        m->funcs[i].magic = 0;
    sim_ptx_free(&m->ptx);
    m->magic = 0;
    pthread_mutex_lock(&modules_lock);
    m->next = spare_mods;
    spare_mods = m;
    pthread_mutex_unlock(&modules_lock);
}

static void module_free(struct CUmod_st *m)
{
    pthread_mutex_lock(&modules_lock);
    module_unlink_locked(m);
    pthread_mutex_unlock(&modules_lock);
    module_release(m);
}

/*
 * Unload every module loaded in context ctx, a library's module in it included: the context
 * is being destroyed or reset, its work done.  Globals are freed and handles become invalid.
 */
void sim_module_free_ctx(CUcontext ctx)
{
    for (;;) {
        struct CUmod_st *m;
        pthread_mutex_lock(&modules_lock);
        for (m = modules; m && m->ctx != ctx; m = m->next)
            ;
        if (m)
            module_unlink_locked(m);
        pthread_mutex_unlock(&modules_lock);
        if (!m)
            return;
        module_release(m);
    }
}

static CUresult load_globals(struct CUmod_st *m, int device)
{
    m->globals = calloc(m->ptx.nglobals ? m->ptx.nglobals : 1, sizeof(uint64_t));
    if (!m->globals)
        return CUDA_ERROR_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < m->ptx.nglobals; i++) {
        const sim_ptx_global_t *g = &m->ptx.globals[i];
        CUdeviceptr p;
        CUresult r = sim_alloc_device(g->size ? g->size : 1, SIM_RANGE_GLOBAL, NULL, device, &p);
        if (r != CUDA_SUCCESS)
            return r;
        m->globals[i] = p;
        if (g->init)
            memcpy((void *)(uintptr_t)p, g->init, g->size);
        else
            memset((void *)(uintptr_t)p, 0, g->size);
    }
    return CUDA_SUCCESS;
}

/* The module of PTX text ptx for context ctx (current, so that its globals are ctx's), or a
 * library's template module (ctx NULL: no globals). */
static CUresult module_from_ptx(const char *ptx, size_t len, CUcontext ctx,
                                struct CUmod_st **out)
{
    char err[256];
    sim_ptx_module_t parsed;
    int e = sim_ptx_parse(ptx, len, &parsed, err, sizeof(err));
    if (e < 0) {
        SIM_WARN("cannot read PTX image: %s", err);
        return image_error(e);
    }
    struct CUmod_st *m = module_new(parsed.nentries);
    if (!m) {
        sim_ptx_free(&parsed);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    m->ptx = parsed;
    m->device = ctx ? ctx->device : -1;
    m->ctx = ctx;
    CUresult r = ctx ? load_globals(m, ctx->device) : CUDA_SUCCESS;
    if (r != CUDA_SUCCESS) {
        module_release(m);
        return r;
    }
    m->magic = SIM_MOD_MAGIC;
    for (uint32_t i = 0; i < m->ptx.nentries; i++) {
        m->funcs[i].mod = m;
        m->funcs[i].entry = &m->ptx.entries[i];
        m->funcs[i].fn = find_kernel(m->ptx.entries[i].name);
        m->funcs[i].max_dyn_shared = SIM_SHARED_PER_BLOCK;   /* no static shared memory */
        m->funcs[i].attrs = &m->funcs[i];
        m->funcs[i].magic = SIM_FUNC_MAGIC;
    }
    module_link(m);
    *out = m;
    return CUDA_SUCCESS;
}

/* Parse an image and build the module (for context ctx, or NULL for a library). */
static CUresult module_build(const void *image, CUcontext ctx, struct CUmod_st **out)
{
    const char *ptx;
    size_t len;

    if (!image)
        return CUDA_ERROR_INVALID_VALUE;
    int e = sim_image_ptx(image, &ptx, &len, NULL);
    if (e < 0)
        return image_error(e);
    return module_from_ptx(ptx, len, ctx, out);
}

SIM_API CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image)
{
    CUcontext ctx;
    CUresult r = sim_ctx_get(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    if (!module)
        return CUDA_ERROR_INVALID_VALUE;
    return module_build(image, ctx, module);
}

SIM_API CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image,
                                            unsigned int numOptions, CUjit_option *options,
                                            void **optionValues)
{
    if (numOptions && (!options || !optionValues))
        return CUDA_ERROR_INVALID_VALUE;
    return cuModuleLoadData(module, image);
}

SIM_API CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
    return cuModuleLoadData(module, fatCubin);
}

/* Read a whole file, NUL-terminated. */
static CUresult read_file(const char *path, char **out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return CUDA_ERROR_FILE_NOT_FOUND;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        char *nb = realloc(buf, cap * 2 + 1);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    fclose(f);
    if (!buf)
        return CUDA_ERROR_OUT_OF_MEMORY;
    buf[n] = 0;
    *out = buf;
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuModuleLoad(CUmodule *module, const char *fname)
{
    char *data;
    CUresult r = sim_ctx_get(NULL);
    if (r != CUDA_SUCCESS)
        return r;
    if (!module || !fname)
        return CUDA_ERROR_INVALID_VALUE;
    r = read_file(fname, &data);
    if (r != CUDA_SUCCESS)
        return r;
    r = cuModuleLoadData(module, data);
    free(data);     /* the parsed module keeps no pointer into the image */
    return r;
}

static int module_valid(CUmodule m)
{
    return m && m->magic == SIM_MOD_MAGIC;
}

SIM_API CUresult CUDAAPI cuModuleUnload(CUmodule hmod)
{
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!module_valid(hmod) || hmod->device < 0 || hmod->lib)
        return CUDA_ERROR_INVALID_HANDLE;      /* a library's modules go with it */
    sim_wait_all();
    module_free(hmod);
    return CUDA_SUCCESS;
}

static int entry_index(CUmodule m, const char *name)
{
    for (uint32_t i = 0; i < m->ptx.nentries; i++)
        if (strcmp(m->ptx.entries[i].name, name) == 0)
            return (int)i;
    return -1;
}

SIM_API CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    CUresult r = sim_ctx_get(NULL);
    if (r != CUDA_SUCCESS)
        return r;
    if (!hfunc || !name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!module_valid(hmod))
        return CUDA_ERROR_INVALID_HANDLE;
    int i = entry_index(hmod, name);
    if (i < 0)
        return CUDA_ERROR_NOT_FOUND;
    if (!hmod->funcs[i].fn) {
        SIM_WARN("kernel %s: no host function of that name in ELIXIR_SIM_KERNELS (\"%s\") "
                 "or the process", name, sim_cfg.kernels);
        return CUDA_ERROR_NOT_FOUND;
    }
    *hfunc = &hmod->funcs[i];
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuModuleGetFunctionCount(unsigned int *count, CUmodule mod)
{
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    if (!module_valid(mod))
        return CUDA_ERROR_INVALID_HANDLE;
    *count = mod->ptx.nentries;
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuModuleEnumerateFunctions(CUfunction *functions, unsigned int num,
                                                    CUmodule mod)
{
    if (!functions)
        return CUDA_ERROR_INVALID_VALUE;
    if (!module_valid(mod))
        return CUDA_ERROR_INVALID_HANDLE;
    for (unsigned i = 0; i < num && i < mod->ptx.nentries; i++)
        functions[i] = &mod->funcs[i];
    return CUDA_SUCCESS;
}

static CUresult get_global(CUmodule m, const char *name, CUdeviceptr *dptr, size_t *bytes)
{
    if (!name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!m->globals)            /* a library's template: its globals are per context */
        return CUDA_ERROR_NOT_FOUND;
    for (uint32_t i = 0; i < m->ptx.nglobals; i++)
        if (strcmp(m->ptx.globals[i].name, name) == 0) {
            if (dptr)
                *dptr = m->globals[i];
            if (bytes)
                *bytes = m->ptx.globals[i].size;
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_NOT_FOUND;
}

SIM_API CUresult CUDAAPI cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod,
                                              const char *name)
{
    CUresult r = sim_ctx_get(NULL);
    if (r != CUDA_SUCCESS)
        return r;
    if (!module_valid(hmod))
        return CUDA_ERROR_INVALID_HANDLE;
    return get_global(hmod, name, dptr, bytes);
}

SIM_API CUresult CUDAAPI cuModuleGetLoadingMode(CUmoduleLoadingMode *mode)
{
    if (!mode)
        return CUDA_ERROR_INVALID_VALUE;
    *mode = CU_MODULE_EAGER_LOADING;
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- functions */

CUresult sim_func_resolve(CUfunction f, struct CUfunc_st **out)
{
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    uint32_t magic;
    memcpy(&magic, f, sizeof(magic));
    if (magic == SIM_KERN_MAGIC)
        f = ((struct CUkern_st *)(void *)f)->func;
    else if (magic != SIM_FUNC_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!f->fn)
        return CUDA_ERROR_NOT_FOUND;
    *out = f;
    return CUDA_SUCCESS;
}

/* Like sim_func_resolve, but a function without a host kernel is still a valid handle. */
static CUresult func_handle(CUfunction f, struct CUfunc_st **out)
{
    CUresult r = sim_func_resolve(f, out);
    if (r == CUDA_ERROR_NOT_FOUND) {
        uint32_t magic;
        memcpy(&magic, f, sizeof(magic));
        *out = magic == SIM_KERN_MAGIC ? ((struct CUkern_st *)(void *)f)->func : f;
        r = CUDA_SUCCESS;
    }
    return r;
}

/* The offset is always returned and only the size is optional ("paramSize can be set to NULL
 * if only the parameter offset is desired"): a NULL paramOffset is CUDA_ERROR_INVALID_VALUE,
 * as the real driver answers it. */
static CUresult param_info(CUfunction f, size_t index, size_t *offset, size_t *size)
{
    struct CUfunc_st *fn;
    CUresult r = func_handle(f, &fn);
    if (r != CUDA_SUCCESS)
        return r;
    if (!offset)
        return CUDA_ERROR_INVALID_VALUE;
    if (index >= fn->entry->nparams)
        return CUDA_ERROR_INVALID_VALUE;
    *offset = fn->entry->params[index].offset;
    if (size)
        *size = fn->entry->params[index].size;
    return CUDA_SUCCESS;
}

/* The documentation takes a CUfunction here and offers cuKernelGetParamInfo for a CUkernel
 * (which only the launch calls accept in a CUfunction's place): a CUkernel is refused, so
 * that a caller relying on it is caught. */
SIM_API CUresult CUDAAPI cuFuncGetParamInfo(CUfunction func, size_t paramIndex,
                                            size_t *paramOffset, size_t *paramSize)
{
    uint32_t magic;
    if (func) {
        memcpy(&magic, func, sizeof(magic));
        if (magic == SIM_KERN_MAGIC)
            return CUDA_ERROR_INVALID_VALUE;
    }
    return param_info(func, paramIndex, paramOffset, paramSize);
}

SIM_API CUresult CUDAAPI cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex,
                                              size_t *paramOffset, size_t *paramSize)
{
    if (!kernel || kernel->magic != SIM_KERN_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    return param_info(kernel->func, paramIndex, paramOffset, paramSize);
}

/* "If either **name or hfunc is NULL, CUDA_ERROR_INVALID_VALUE is returned" (both calls). */
SIM_API CUresult CUDAAPI cuFuncGetName(const char **name, CUfunction hfunc)
{
    struct CUfunc_st *fn;
    if (!name || !hfunc)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = func_handle(hfunc, &fn);
    if (r == CUDA_SUCCESS)
        *name = fn->entry->name;
    return r;
}

SIM_API CUresult CUDAAPI cuKernelGetName(const char **name, CUkernel hfunc)
{
    if (!name || !hfunc)
        return CUDA_ERROR_INVALID_VALUE;
    if (hfunc->magic != SIM_KERN_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    return cuFuncGetName(name, hfunc->func);
}

static CUresult lib_module(CUlibrary lib, struct CUmod_st **out);

/* A CUkernel's module is its library's in the current context, as its function's is. */
SIM_API CUresult CUDAAPI cuFuncGetModule(CUmodule *hmod, CUfunction hfunc)
{
    struct CUfunc_st *fn;
    uint32_t magic;
    if (!hmod)
        return CUDA_ERROR_INVALID_VALUE;
    if (hfunc) {
        memcpy(&magic, hfunc, sizeof(magic));
        if (magic == SIM_KERN_MAGIC)
            return lib_module(((struct CUkern_st *)(void *)hfunc)->lib, hmod);
    }
    CUresult r = func_handle(hfunc, &fn);
    if (r == CUDA_SUCCESS)
        *hmod = fn->mod;
    return r;
}

static int func_attribute(const struct CUfunc_st *fn, CUfunction_attribute a, int *v)
{
    switch (a) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; return 0;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *v = 32; return 0;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: *v = 90; return 0;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *v = 90; return 0;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *v = fn->attrs->max_dyn_shared; return 0;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *v = -1; return 0;
    default:
        if ((int)a < 0 || a >= CU_FUNC_ATTRIBUTE_MAX)
            return -EINVAL;
        *v = 0;
        return 0;
    }
}

SIM_API CUresult CUDAAPI cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
    struct CUfunc_st *fn;
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = func_handle(hfunc, &fn);
    if (r != CUDA_SUCCESS)
        return r;
    return func_attribute(fn, attrib, pi) < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

/* Only the dynamic shared memory limit is kept ("The sum of this value and the function
 * attribute CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES cannot exceed the device attribute
 * CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"); launches asking for more dynamic
 * shared memory than it allows fail.  Other attributes are accepted and ignored. */
SIM_API CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib,
                                            int value)
{
    struct CUfunc_st *fn;
    CUresult r = func_handle(hfunc, &fn);
    if (r != CUDA_SUCCESS)
        return r;
    int cur;
    if (func_attribute(fn, attrib, &cur) < 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
        if (value < 0 || value > SIM_SHARED_PER_BLOCK_OPTIN)
            return CUDA_ERROR_INVALID_VALUE;
        fn->attrs->max_dyn_shared = value;
    }
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
    struct CUfunc_st *fn;
    return func_handle(hfunc, &fn);
}

/* ---------------------------------------------------------------- libraries */

SIM_API CUresult CUDAAPI cuLibraryLoadData(CUlibrary *library, const void *code,
                                           CUjit_option *jitOptions, void **jitOptionsValues,
                                           unsigned int numJitOptions,
                                           CUlibraryOption *libraryOptions,
                                           void **libraryOptionValues,
                                           unsigned int numLibraryOptions)
{
    struct CUmod_st *m;
    const char *ptx;
    size_t len;
    CUresult r = sim_check_init();
    if (r != CUDA_SUCCESS)
        return r;
    if (!library || !code)
        return CUDA_ERROR_INVALID_VALUE;
    int e = sim_image_ptx(code, &ptx, &len, NULL);
    if (e < 0)
        return image_error(e);
    r = module_from_ptx(ptx, len, NULL, &m);
    if (r != CUDA_SUCCESS)
        return r;
    CUlibrary lib = calloc(1, sizeof(*lib));
    struct CUkern_st *k = calloc(m->ptx.nentries ? m->ptx.nentries : 1, sizeof(*k));
    char *text = malloc(len + 1);
    if (!lib || !k || !text) {
        free(lib);
        free(k);
        free(text);
        module_free(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memcpy(text, ptx, len);
    text[len] = 0;
    for (uint32_t i = 0; i < m->ptx.nentries; i++) {
        k[i].magic = SIM_KERN_MAGIC;
        k[i].func = &m->funcs[i];
        k[i].lib = lib;
        m->funcs[i].kernel = &k[i];
    }
    lib->magic = SIM_LIB_MAGIC;
    lib->mod = m;
    lib->kernels = k;
    lib->ptx = text;
    lib->ptx_len = len;
    *library = lib;
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
                                               CUjit_option *jitOptions, void **jitOptionsValues,
                                               unsigned int numJitOptions,
                                               CUlibraryOption *libraryOptions,
                                               void **libraryOptionValues,
                                               unsigned int numLibraryOptions)
{
    char *data;
    if (!fileName)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = read_file(fileName, &data);
    if (r != CUDA_SUCCESS)
        return r;
    r = cuLibraryLoadData(library, data, NULL, NULL, 0, NULL, NULL, 0);
    free(data);
    return r;
}

static int lib_valid(CUlibrary l)
{
    return l && l->magic == SIM_LIB_MAGIC;
}

/* The module of library lib in the current context, made at the first call there: "the
 * module handle associated with the current context" (cuLibraryGetModule).  The context is
 * checked after the library. */
static CUresult lib_module(CUlibrary lib, struct CUmod_st **out)
{
    CUcontext ctx;
    struct CUmod_st *m, *mine;
    if (!lib_valid(lib))
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult r = sim_ctx_get(&ctx);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&modules_lock);
    for (m = lib->ctx_mods; m && m->ctx != ctx; m = m->lib_next)
        ;
    pthread_mutex_unlock(&modules_lock);
    if (m) {
        *out = m;
        return CUDA_SUCCESS;
    }
    if ((r = module_from_ptx(lib->ptx, lib->ptx_len, ctx, &mine)) != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&modules_lock);
    for (m = lib->ctx_mods; m && m->ctx != ctx; m = m->lib_next)
        ;
    if (!m) {                   /* no other thread made one meanwhile */
        m = mine;
        m->lib = lib;
        m->lib_next = lib->ctx_mods;
        lib->ctx_mods = m;
        for (uint32_t i = 0; i < m->ptx.nentries; i++) {
            m->funcs[i].kernel = &lib->kernels[i];
            m->funcs[i].attrs = lib->kernels[i].func;
        }
    }
    pthread_mutex_unlock(&modules_lock);
    if (m != mine)
        module_free(mine);
    *out = m;
    return CUDA_SUCCESS;
}

/* The library's module in every context goes with it, and its template. */
SIM_API CUresult CUDAAPI cuLibraryUnload(CUlibrary library)
{
    if (!lib_valid(library))
        return CUDA_ERROR_INVALID_HANDLE;
    sim_wait_all();
    for (;;) {
        pthread_mutex_lock(&modules_lock);
        struct CUmod_st *m = library->ctx_mods;
        if (m)
            module_unlink_locked(m);
        pthread_mutex_unlock(&modules_lock);
        if (!m)
            break;
        module_release(m);
    }
    for (uint32_t i = 0; i < library->mod->ptx.nentries; i++)
        library->kernels[i].magic = 0;
    free(library->kernels);
    free(library->ptx);
    module_free(library->mod);
    library->magic = 0;
    free(library);
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library,
                                            const char *name)
{
    if (!pKernel || !name)
        return CUDA_ERROR_INVALID_VALUE;
    if (!lib_valid(library))
        return CUDA_ERROR_INVALID_HANDLE;
    int i = entry_index(library->mod, name);
    if (i < 0)
        return CUDA_ERROR_NOT_FOUND;
    *pKernel = &library->kernels[i];
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuLibraryGetKernelCount(unsigned int *count, CUlibrary lib)
{
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    if (!lib_valid(lib))
        return CUDA_ERROR_INVALID_HANDLE;
    *count = lib->mod->ptx.nentries;
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuLibraryEnumerateKernels(CUkernel *kernels, unsigned int numKernels,
                                                   CUlibrary lib)
{
    if (!kernels)
        return CUDA_ERROR_INVALID_VALUE;
    if (!lib_valid(lib))
        return CUDA_ERROR_INVALID_HANDLE;
    for (unsigned i = 0; i < numKernels && i < lib->mod->ptx.nentries; i++)
        kernels[i] = &lib->kernels[i];
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
    if (!pMod)
        return CUDA_ERROR_INVALID_VALUE;
    return lib_module(library, pMod);
}

SIM_API CUresult CUDAAPI cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
                                            const char *name)
{
    struct CUmod_st *m;
    CUresult r = lib_module(library, &m);
    return r == CUDA_SUCCESS ? get_global(m, name, dptr, bytes) : r;
}

/* The kernel's function in the current context's module of its library. */
SIM_API CUresult CUDAAPI cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
    struct CUmod_st *m;
    CUresult r = sim_ctx_get(NULL);
    if (r != CUDA_SUCCESS)
        return r;
    if (!pFunc)
        return CUDA_ERROR_INVALID_VALUE;
    if (!kernel || kernel->magic != SIM_KERN_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((r = lib_module(kernel->lib, &m)) != CUDA_SUCCESS)
        return r;
    *pFunc = &m->funcs[kernel - kernel->lib->kernels];
    return CUDA_SUCCESS;
}

SIM_API CUresult CUDAAPI cuKernelGetAttribute(int *pi, CUfunction_attribute attrib,
                                              CUkernel kernel, CUdevice dev)
{
    if (!kernel || kernel->magic != SIM_KERN_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult r = sim_device_get(dev, NULL);
    if (r != CUDA_SUCCESS)
        return r;
    return cuFuncGetAttribute(pi, attrib, kernel->func);
}

SIM_API CUresult CUDAAPI cuKernelSetAttribute(CUfunction_attribute attrib, int val,
                                              CUkernel kernel, CUdevice dev)
{
    if (!kernel || kernel->magic != SIM_KERN_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    return cuFuncSetAttribute(kernel->func, attrib, val);
}
