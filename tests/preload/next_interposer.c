/* SPDX-License-Identifier: MIT */
/*
 * next_interposer.c - another interposer of the driver, preloaded after libelixir.so by
 * tests/shim_dlsym_next.c, as a user stacking a second tool would.
 *
 * Like most interposers it wraps driver entry points (cuMemAlloc_v2 and NCCL's
 * ncclAllReduce here) and finds what it wraps with dlsym(RTLD_NEXT), which the C library
 * resolves from the caller: the next definition after this object.  next_lookup(name) makes
 * that lookup from here, so the test can see what this object is handed.  A wrapper that is
 * handed itself says so and fails, rather than recursing until the stack runs out.
 */
#include <dlfcn.h>

#include <cuda.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT void *next_lookup(const char *name);
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
/* NCCL's prototype, with its enums and handles as plain types (no nccl.h needed). */
EXPORT int ncclAllReduce(const void *send, void *recv, size_t count, int type, int op,
                         void *comm, void *stream);

EXPORT void *next_lookup(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);

    /* Not a tail call: the C library takes "next" after the object its caller returns to. */
    __asm__ volatile("" ::: "memory");
    return p;
}

/* Is f defined in this object?  (Its own exported names may resolve elsewhere from here.) */
static int mine(void *f)
{
    Dl_info a, b;

    return f && dladdr(f, &a) && dladdr((void *)next_lookup, &b) && a.dli_fbase == b.dli_fbase;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    CUresult (*next)(CUdeviceptr *, size_t);

    *(void **)&next = dlsym(RTLD_NEXT, "cuMemAlloc_v2");
    if (!next || mine((void *)next))
        return CUDA_ERROR_NOT_FOUND;
    return next(dptr, bytesize);
}

EXPORT int ncclAllReduce(const void *send, void *recv, size_t count, int type, int op,
                         void *comm, void *stream)
{
    int (*next)(const void *, void *, size_t, int, int, void *, void *);

    *(void **)&next = dlsym(RTLD_NEXT, "ncclAllReduce");
    if (!next || mine((void *)next))
        return 2;                       /* ncclSystemError */
    return next(send, recv, count, type, op, comm, stream);
}
