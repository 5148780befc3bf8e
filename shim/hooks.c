/* SPDX-License-Identifier: MIT */
/*
 * hooks.c - the tables generated from hooks.h: each hook's exported name and our wrapper of
 * it, the lookup by name used by the dlsym override, and the test-only call counter.
 */
#include "shim.h"

const char *const shim_hook_names[SHIM_NHOOKS] = {
#define X(sym, base, ver, pt) [SHIM_HOOK_##sym] = #sym,
    SHIM_HOOKS(X)
#undef X
};

const char *const shim_call_names[SHIM_NCALLS] = {
#define X(sym, base, ver, pt) [SHIM_CALL_##sym] = #sym,
    SHIM_DRIVER_CALLS(X)
#undef X
};

/* 1 for the _ptsz/_ptds variants (pt column of hooks.h): their NULL stream is the calling
 * thread's per-thread default stream. */
const unsigned char shim_hook_per_thread[SHIM_NHOOKS] = {
#define X(sym, base, ver, pt) [SHIM_HOOK_##sym] = sizeof(#pt) > 1,
    SHIM_HOOKS(X)
#undef X
};

/* libelixir.so is linked with -Bsymbolic, so these are our definitions whatever else the
 * process exports under the same names. */
void *const shim_hook_wrappers[SHIM_NHOOKS] = {
#define X(sym, base, ver, pt) [SHIM_HOOK_##sym] = (void *)sym,
    SHIM_HOOKS(X)
#undef X
};

/*
 * A linear scan: dlsym is not a hot path, every hooked name starts with "cu" (checked first
 * by the caller), and a scan needs neither start-up nor allocation, so it works when dlsym
 * is called while the process is still loading.
 */
SHIM_NO_SANITIZE int shim_hook_find(const char *name)
{
    for (int i = 0; i < SHIM_NHOOKS; i++)
        if (shim_same_name(shim_hook_names[i], name))
            return i;
    return -1;
}

/*
 * Test-only introspection, exported: how many times the wrapper of `name` (a driver or an
 * NCCL entry point) was entered in this process (a forked child counts from zero), or -1
 * when `name` is not hooked.  Tests use it to prove that a call went through the shim;
 * nothing else may depend on it.
 */
SHIM_EXPORT long long elixir_shim_calls(const char *name);

SHIM_EXPORT long long elixir_shim_calls(const char *name)
{
    int h = name ? shim_hook_find(name) : -1;

    if (h < 0)
        return name ? shim_nccl_calls(shim_nccl_find(name)) : -1;
    return (long long)shim_stat_calls_of((shim_hook_t)h);
}
