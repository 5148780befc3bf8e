/* SPDX-License-Identifier: MIT */
/*
 * dlsym.c - the dlsym override: dlopen("libcuda.so.1") + dlsym(handle, "cuMemAlloc_v2")
 * must land in our wrapper, as linked calls do.
 *
 * Every dlsym in the process comes here, often before anything is initialised (sanitizer
 * runtimes and other interposers look up their "next" functions while the process loads),
 * so the common path does nothing but forward: a name that is not hooked goes to the C
 * library's dlsym by a tail jump, with the caller's own return address, because glibc
 * resolves RTLD_NEXT (and the caller's namespace) from that address.  A C call from here
 * would make RTLD_NEXT mean "next after libelixir.so" and send another interposer's lookup
 * back to itself.  On x86-64 the entry is a few instructions of assembly around
 * shim_dlsym_route(), so the jump is guaranteed.  Elsewhere a C entry forwards; it is a tail
 * call only where the compiler makes it one (it does at -O2), and otherwise RTLD_NEXT lookups
 * of names we do not hook are resolved relative to libelixir.so.  The fast path is not
 * instrumented by sanitizers: their runtimes call dlsym before they are ready.
 *
 * RTLD_NEXT of a hooked name from outside libelixir.so also goes to the C library's dlsym by
 * the tail jump: only it can resolve "next" from the caller.  Asked from here it would answer
 * what follows libelixir.so, which for a caller loaded before us skips our export for
 * whatever comes after us, and for one loaded after us (another interposer preloaded after
 * us) may be the caller's own definition, which then calls itself forever.  A caller loaded
 * before us gets our wrapper (or an interposer between us); one loaded after us (or opened
 * with RTLD_LOCAL) gets what follows it, as without us, the driver's own function included.
 * With ELIXIR_DISABLE a caller loaded before us gets what follows us, as below.  Otherwise a
 * hooked name is looked up with the real dlsym, then:
 *   - not found: NULL, as without us (for RTLD_NEXT from inside libelixir.so, our wrapper);
 *   - found in libelixir.so (RTLD_DEFAULT finds our export first): our wrapper where a
 *     definition follows libelixir.so (the driver's), else NULL, as without us (a driver
 *     that lacks the name, or none loaded);
 *   - found in the driver: our wrapper of that variant (through the cuGetProcAddress map once
 *     the shim has started; before that, when the defining object is a CUDA driver and the
 *     symbol found is `name` itself);
 *   - found anywhere else: unchanged.
 * With ELIXIR_DISABLE the driver's own function is returned where one exists.
 *
 * An NCCL name of hooks_nccl.h found outside libelixir.so gives our wrapper, which remembers
 * what was found as NCCL's function (a library opened with RTLD_LOCAL is reached no other
 * way); found as our own export, our wrapper where an NCCL follows us, else NULL; with
 * ELIXIR_DISABLE, what was found (wrap_nccl.c, shim_nccl_lookup).
 *
 * Nothing here takes a lock of ours or starts the shim (the wrappers start it when called),
 * so a library probing symbols from its constructor, under the loader's lock, cannot
 * deadlock against a thread that is starting the shim; the fast path does not allocate or
 * touch stdio.  A thread-local guard sends any dlsym made while we are inside the real one
 * straight through.
 */
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "shim.h"

typedef void *(*dlsym_fn_t)(void *, const char *);

static _Atomic(dlsym_fn_t) real_dlsym;
static SHIM_TLS int in_dlsym;

/* The C library's dlsym: GLIBC_2.34 where libdl was merged into libc, else the first
 * version of the architecture. */
SHIM_NO_SANITIZE dlsym_fn_t shim_real_dlsym(void)
{
    static const char *const versions[] = { "GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17" };
    dlsym_fn_t fn = atomic_load_explicit(&real_dlsym, memory_order_acquire);

    for (size_t i = 0; !fn && i < SHIM_ARRAY_LEN(versions); i++)
        fn = (dlsym_fn_t)dlvsym(RTLD_NEXT, "dlsym", versions[i]);
    if (fn)
        atomic_store_explicit(&real_dlsym, fn, memory_order_release);
    return fn;
}

/* Resolve the C library's dlsym while the process is still single-threaded. */
__attribute__((constructor)) static void dlsym_load(void)
{
    shim_real_dlsym();
}

/* Is `sym` the definition of `name` in a CUDA driver (an object that exports cuInit)? */
static int driver_symbol(dlsym_fn_t rdlsym, void *sym, const char *name)
{
    Dl_info info, init_info;
    void *obj, *init;
    int yes;

    if (!dladdr(sym, &info) || !info.dli_fname || !info.dli_sname || info.dli_saddr != sym ||
        strcmp(info.dli_sname, name) != 0)
        return 0;
    obj = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);     /* loaded: no constructor runs */
    if (!obj)
        return 0;
    init = rdlsym(obj, "cuInit");
    yes = init && dladdr(init, &init_info) && init_info.dli_fbase == info.dli_fbase;
    dlclose(obj);
    return yes;
}

/*
 * Our wrapper for `sym`, found as hook h's name: exact through the cuGetProcAddress map once
 * the shim has started (unchanged when it has no driver or is disabled); before that, when
 * `sym` is a driver's own definition of that name.
 */
static void *wrap_found(dlsym_fn_t rdlsym, void *sym, int h)
{
    const shim_driver_t *d = atomic_load_explicit(&shim_drv, memory_order_acquire);
    int hook;

    if (d) {
        hook = d->nmap ? shim_proc_find(d, sym) : -1;
        return hook >= 0 ? shim_hook_wrappers[hook] : sym;
    }
    return driver_symbol(rdlsym, sym, shim_hook_names[h]) ? shim_hook_wrappers[h] : sym;
}

/* Is the object holding `caller` loaded after libelixir.so?  The link map chain is in load
 * order, which is the order of the global search list that RTLD_NEXT walks; an object opened
 * with RTLD_LOCAL is after us too (its RTLD_NEXT never reaches us). */
static int loaded_after_us(const void *caller)
{
    struct link_map *lm_caller = NULL, *lm_us = NULL;
    Dl_info info;

    if (!dladdr1(caller, &info, (void **)&lm_caller, RTLD_DL_LINKMAP) ||
        !dladdr1((void *)loaded_after_us, &info, (void **)&lm_us, RTLD_DL_LINKMAP))
        return 0;
    for (const struct link_map *l = lm_us ? lm_us->l_next : NULL; l; l = l->l_next)
        if (l == lm_caller)
            return 1;
    return 0;
}

/* Is dlsym(handle, ...) from `caller` an RTLD_NEXT lookup that only the C library can answer
 * (see the file comment)? */
static int next_of_caller(void *handle, const void *caller)
{
    return handle == RTLD_NEXT && !shim_is_own(caller) &&
           (!shim_disabled() || loaded_after_us(caller));
}

/* dlsym(handle, name) for a hooked name (see the file comment). */
static void *hooked_lookup(dlsym_fn_t rdlsym, void *handle, const char *name, int h)
{
    void *sym = rdlsym(handle, name);

    /* (Found as the shim's own export, in the global scope: the driver's definition, after
     * the shim, says whether the name exists there at all; without one, as without the shim,
     * there is none.) */
    if (shim_disabled())
        return sym && shim_is_own(sym) ? rdlsym(RTLD_NEXT, name) : sym;
    if (!sym)
        return handle == RTLD_NEXT ? shim_hook_wrappers[h] : NULL;
    if (shim_is_own(sym))
        return handle == RTLD_NEXT || rdlsym(RTLD_NEXT, name) ? sym : NULL;
    return wrap_found(rdlsym, sym, h);
}

/*
 * Called by the dlsym entry with the caller's arguments and return address.  Returns the
 * function the entry must tail-jump to (the real dlsym), or NULL when *out holds the answer.
 */
__attribute__((used)) SHIM_NO_SANITIZE void *shim_dlsym_route(void *handle, const char *name,
                                                               void **out, const void *caller)
{
    dlsym_fn_t rdlsym = shim_real_dlsym();
    int h;

    *out = NULL;
    if (!rdlsym)
        return NULL;
    if (!in_dlsym && name[0] == 'n' && name[1] == 'c' && (h = shim_nccl_find(name)) >= 0) {
        if (next_of_caller(handle, caller))
            return (void *)rdlsym;
        in_dlsym = 1;
        *out = shim_nccl_lookup(rdlsym, handle, name, h);
        in_dlsym = 0;
        return NULL;
    }
    if (name[0] != 'c' || name[1] != 'u' || in_dlsym || (h = shim_hook_find(name)) < 0 ||
        next_of_caller(handle, caller))
        return (void *)rdlsym;
    in_dlsym = 1;
    *out = hooked_lookup(rdlsym, handle, name, h);
    in_dlsym = 0;
    return NULL;
}

#if defined(__x86_64__)
/*
 * dlsym(handle, name): keep the arguments, ask shim_dlsym_route (with the caller's return
 * address, 40 bytes up once they are kept), then either jump to the real dlsym with the
 * arguments and return address untouched or return its answer.  The 24 bytes hold *out and
 * keep the stack 16-byte aligned at the call.
 */
__asm__(".pushsection .text\n"
        ".globl dlsym\n"
        ".type dlsym, @function\n"
        ".p2align 4\n"
        "dlsym:\n"
        "  .cfi_startproc\n"
#if defined(__CET__)
        "  endbr64\n"
#endif
        "  pushq %rdi\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  pushq %rsi\n"
        "  .cfi_adjust_cfa_offset 8\n"
        "  subq $24, %rsp\n"
        "  .cfi_adjust_cfa_offset 24\n"
        "  movq %rsp, %rdx\n"
        "  movq 40(%rsp), %rcx\n"
        "  call shim_dlsym_route\n"
        "  movq (%rsp), %rcx\n"
        "  addq $24, %rsp\n"
        "  .cfi_adjust_cfa_offset -24\n"
        "  popq %rsi\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  popq %rdi\n"
        "  .cfi_adjust_cfa_offset -8\n"
        "  testq %rax, %rax\n"
        "  jz 1f\n"
        "  jmp *%rax\n"
        "1:\n"
        "  movq %rcx, %rax\n"
        "  ret\n"
        "  .cfi_endproc\n"
        ".size dlsym, .-dlsym\n"
        ".popsection\n");
#else
SHIM_EXPORT void *dlsym(void *restrict handle, const char *restrict name)
{
    void *out;
    dlsym_fn_t next = (dlsym_fn_t)shim_dlsym_route(handle, name, &out,
                                                   __builtin_return_address(0));

    return next ? next(handle, name) : out;
}
#endif
