/* SPDX-License-Identifier: MIT */
/*
 * load_probe.c - a library that uses the driver from its constructor, opened with dlopen by
 * tests/shim_dlsym_load_race.c while another thread starts libelixir.so.
 *
 * Libraries that find the driver at load time (framework extensions, other tools) do this
 * from a constructor, which the dynamic loader runs holding its own lock.  This one looks up
 * cuGetProcAddress_v2 and cuMemAlloc_v2 with dlsym and calls cuGetProcAddress_v2 through what
 * it found (which starts the shim when no other thread has yet), then keeps what it saw for
 * the test to read.
 */
#include <dlfcn.h>

#include <cudaTypedefs.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT void *load_probe_found[3];       /* cuGetProcAddress_v2, cuMemAlloc_v2, its answer */
EXPORT int load_probe_result = -1;      /* what cuGetProcAddress_v2 returned */

__attribute__((constructor)) static void load_probe(void)
{
    PFN_cuGetProcAddress_v12000 gpa;
    CUdriverProcAddressQueryResult found;

    *(void **)&gpa = dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2");
    load_probe_found[0] = *(void **)&gpa;
    load_probe_found[1] = dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
    if (gpa)
        load_probe_result = (int)gpa("cuMemAlloc", &load_probe_found[2], 3020, 0, &found);
}
