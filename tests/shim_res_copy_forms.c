/* SPDX-License-Identifier: MIT */
/*
 * shim_res_copy_forms.c - every copy and memset form the simulator implements, run on memory
 * that libelixir.so has paged out, does the same with the shim as without it.
 *
 * Four 2 MiB buffers B0-B3 (one chunk each) live under a 4 MiB GPU budget, so two of them are
 * always on the host.  Before each operation a kernel reads the two buffers the operation does
 * not use, which brings those into GPU memory and pages the others out: every device operand
 * is evicted when the operation is issued (under the shim the scenario checks this with
 * sh_where).  The forms: cuMemcpy and cuMemcpyAsync (unified), cuMemcpyHtoD, DtoH, DtoD and
 * their Async forms, cuMemsetD8/D16/D32 and cuMemsetD2D8/D2D16/D2D32 and their Async forms,
 * cuMemcpy2D, cuMemcpy2DUnaligned, cuMemcpy2DAsync, cuMemcpy3D (device to device),
 * cuMemcpy3DAsync (host to device), cuMemcpy3DPeer and cuMemcpy3DPeerAsync: each once by its
 * name from cuda.h (the default-stream ABI) and once as the per-thread variant (_ptds, _ptsz)
 * that cuGetProcAddress returns for CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM.  Under the
 * shim each call must enter the shim's wrapper of exactly that symbol, once.  The shim reads
 * the operands of a 2D or 3D copy from its descriptor, so these too find their operands
 * evicted, whether evicted chunks are mapped or not.
 *
 * After each operation its destination is read back (cuMemcpyDtoH) and compared with a host
 * mirror of what every buffer must hold, and a line naming the form, its operands and a
 * digest of the destination is printed.  Async forms are followed by a synchronisation of
 * their stream, all else relies on stream order.
 *
 * The simulator has no CUDA arrays (cuArrayCreate and the array copies are its
 * CUDA_ERROR_NOT_SUPPORTED fallbacks), so cuMemcpyDtoA, AtoD, HtoA, AtoH, AtoA, HtoAAsync and
 * AtoHAsync move no data here: the scenario only calls each once at the end, with B0 and B1 as
 * device operands, and prints its result, which must be the same under the shim.  Then
 * cuMemcpyBatchAsync and cuMemcpy3DBatchAsync copy the first bytes of B0 into B1; the
 * buffers must hold exactly that after.
 *
 * The test runs the scenario without the shim and under it (ELIXIR_GPU_MEMORY=4M,
 * ELIXIR_STATS=1), with evicted chunks mapped and unmapped (ELIXIR_SIM_HOST_VMM=0), and the
 * race checker failing the run on any race (ELIXIR_SIM_RACECHECK=fail).  The transcripts must
 * be equal, and the shim's statistics must show chunks migrated to the host and back.
 */
#define SH_RES_KERNELS
#include <cudaTypedefs.h>

#include "shim_test.h"

#define NBUF 4
#define BYTES (2 * SH_MIB)
#define WORDS (BYTES / 4)
/* The stream the helpers below are given for a synchronous form: nothing to wait for (the
 * scenario never passes this handle to an entry point). */
#define SYNC_FORM CU_STREAM_LEGACY

#define STR_(x) #x
#define STR(x) STR_(x)  /* after cuda.h's renaming: STR(cuMemcpyHtoD) is "cuMemcpyHtoD_v2" */

/* The forms called through an abi_t: field, type (cudaTypedefs.h), the name cuda.h declares,
 * and the suffix of its per-thread variant. */
#define FORMS(X)                                                                             \
    X(copy, PFN_cuMemcpy_v4000, cuMemcpy, "_ptds")                                           \
    X(copy_async, PFN_cuMemcpyAsync_v4000, cuMemcpyAsync, "_ptsz")                           \
    X(htod, PFN_cuMemcpyHtoD_v3020, cuMemcpyHtoD, "_ptds")                                   \
    X(dtoh, PFN_cuMemcpyDtoH_v3020, cuMemcpyDtoH, "_ptds")                                   \
    X(dtod, PFN_cuMemcpyDtoD_v3020, cuMemcpyDtoD, "_ptds")                                   \
    X(htod_async, PFN_cuMemcpyHtoDAsync_v3020, cuMemcpyHtoDAsync, "_ptsz")                   \
    X(dtoh_async, PFN_cuMemcpyDtoHAsync_v3020, cuMemcpyDtoHAsync, "_ptsz")                   \
    X(dtod_async, PFN_cuMemcpyDtoDAsync_v3020, cuMemcpyDtoDAsync, "_ptsz")                   \
    X(set8, PFN_cuMemsetD8_v3020, cuMemsetD8, "_ptds")                                       \
    X(set16, PFN_cuMemsetD16_v3020, cuMemsetD16, "_ptds")                                    \
    X(set32, PFN_cuMemsetD32_v3020, cuMemsetD32, "_ptds")                                    \
    X(set2d8, PFN_cuMemsetD2D8_v3020, cuMemsetD2D8, "_ptds")                                 \
    X(set2d16, PFN_cuMemsetD2D16_v3020, cuMemsetD2D16, "_ptds")                              \
    X(set2d32, PFN_cuMemsetD2D32_v3020, cuMemsetD2D32, "_ptds")                              \
    X(set8_async, PFN_cuMemsetD8Async_v3020, cuMemsetD8Async, "_ptsz")                       \
    X(set16_async, PFN_cuMemsetD16Async_v3020, cuMemsetD16Async, "_ptsz")                    \
    X(set32_async, PFN_cuMemsetD32Async_v3020, cuMemsetD32Async, "_ptsz")                    \
    X(set2d8_async, PFN_cuMemsetD2D8Async_v3020, cuMemsetD2D8Async, "_ptsz")                 \
    X(set2d16_async, PFN_cuMemsetD2D16Async_v3020, cuMemsetD2D16Async, "_ptsz")              \
    X(set2d32_async, PFN_cuMemsetD2D32Async_v3020, cuMemsetD2D32Async, "_ptsz")              \
    X(copy2d, PFN_cuMemcpy2D_v3020, cuMemcpy2D, "_ptds")                                     \
    X(copy2d_unaligned, PFN_cuMemcpy2DUnaligned_v3020, cuMemcpy2DUnaligned, "_ptds")         \
    X(copy2d_async, PFN_cuMemcpy2DAsync_v3020, cuMemcpy2DAsync, "_ptsz")                     \
    X(copy3d, PFN_cuMemcpy3D_v3020, cuMemcpy3D, "_ptds")                                     \
    X(copy3d_async, PFN_cuMemcpy3DAsync_v3020, cuMemcpy3DAsync, "_ptsz")                     \
    X(copy3d_peer, PFN_cuMemcpy3DPeer_v4000, cuMemcpy3DPeer, "_ptds")                        \
    X(copy3d_peer_async, PFN_cuMemcpy3DPeerAsync_v4000, cuMemcpy3DPeerAsync, "_ptsz")

#define FORM_ID(f, T, name, sfx) F_##f,
#define FORM_NAME(f, T, name, sfx) #name,
#define FORM_SYM(f, T, name, sfx) STR(name),
#define FORM_SYM_PT(f, T, name, sfx) STR(name) sfx,
#define FORM_FIELD(f, T, name, sfx) T f;
#define FORM_LEGACY(f, T, name, sfx) .f = name,

enum { FORMS(FORM_ID) NFORMS };

/* The names asked of cuGetProcAddress and printed, and the symbols of the two ABIs. */
static const char *const form_names[NFORMS] = { FORMS(FORM_NAME) };
static const char *const default_syms[NFORMS] = { FORMS(FORM_SYM) };
static const char *const per_thread_syms[NFORMS] = { FORMS(FORM_SYM_PT) };

/* One ABI's entry points. */
typedef struct abi {
    const char *label;              /* "default" or "per-thread" */
    const char *const *syms;        /* the exported name of each form */
    CUstream dflt;                  /* the stream a NULL handle names */
    FORMS(FORM_FIELD)
} abi_t;

static const abi_t default_abi = { "default", default_syms, CU_STREAM_LEGACY,
                                   FORMS(FORM_LEGACY) };
static abi_t per_thread_abi;

/* Where a 2D or 3D copy starts in one operand's memory (a mirror or host memory). */
typedef struct box {
    uint8_t *mem;
    size_t x, y, z, pitch, height;
} box_t;

static CUfunction fill, touch;
static CUcontext ctx;
static CUstream side;                   /* a non-blocking stream */
static CUdeviceptr buf[NBUF];
static uint8_t mirror[NBUF][BYTES];     /* what each buffer must hold */
static uint8_t pageable[BYTES], readback[BYTES], expected[BYTES];
static uint8_t *pinned;                 /* BYTES of cuMemHostAlloc memory */
static uint32_t seeds = 1;              /* the next pattern seed */
static unsigned step;                   /* operations so far */
static int shimmed;                     /* running under libelixir.so */

/* forms_touch(a, b, n): reads n words at a and at b; changes nothing. */
static const char touch_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry forms_touch(.param .u64 a, .param .u64 b, .param .u64 n)\n{\n ret;\n}\n";

SIM_KERNEL void forms_touch(const sim_launch_t *l, void **params)
{
    uint64_t n = *(uint64_t *)params[2];

    sim_kernel_access(*(const void **)params[0], n * 4, SIM_ACCESS_READ);
    sim_kernel_access(*(const void **)params[1], n * 4, SIM_ACCESS_READ);
}

/* ------------------------------------------------------------ checks */

/* Entries into the shim's wrapper `sym` so far (0 without the shim). */
static long long entries(const char *sym)
{
    return shimmed ? sh_calls(sym) : 0;
}

static void expect_entered(const char *sym, long long before)
{
    long long now = entries(sym);

    EXPECT(now == before + shimmed, "%s: the shim's wrapper was entered %lld times, not once",
           sym, now - before);
}

/* a->f args, which must succeed and, under the shim, enter the wrapper of that symbol once. */
#define CALL(a, f, args)                                                                     \
    do {                                                                                     \
        long long before_ = entries((a)->syms[F_##f]);                                       \
        CHECK_CU((a)->f args);                                                               \
        expect_entered((a)->syms[F_##f], before_);                                           \
    } while (0)

/* 64-bit FNV-1a of n bytes. */
static unsigned long long digest(const uint8_t *p, size_t n)
{
    unsigned long long h = 14695981039346656037ull;

    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* The n bytes at got must equal those at want: otherwise exit 1 naming the first that
 * differs. */
static void expect_same(const uint8_t *got, const uint8_t *want, size_t n, const char *what)
{
    size_t i = 0;

    if (memcmp(got, want, n) == 0)
        return;
    while (got[i] == want[i])
        i++;
    EXPECT(0, "%s: byte %zu is 0x%02x, expected 0x%02x", what, i, got[i], want[i]);
}

/* Buffer b, read back, must hold its mirror: prints what form f of ABI a did, with a digest
 * of b. */
static void report(const abi_t *a, int f, const char *what, int b)
{
    char line[160];

    snprintf(line, sizeof(line), "%-20s %-10s %-40s B%d", form_names[f], a->label, what, b);
    CHECK_CU(cuMemcpyDtoH(readback, buf[b], BYTES));
    expect_same(readback, mirror[b], BYTES, line);
    printf("%s %016llx\n", line, digest(readback, BYTES));
}

/* Host memory h, written by form f, must hold `expected`. */
static void report_host(const abi_t *a, int f, const char *what, const uint8_t *h)
{
    char line[160];

    snprintf(line, sizeof(line), "%-20s %-10s %-40s host", form_names[f], a->label, what);
    expect_same(h, expected, BYTES, line);
    printf("%s %016llx\n", line, digest(h, BYTES));
}

/* Under the shim, buffer b (-1: none) must be evicted. */
static void expect_evicted(int b)
{
    if (!shimmed || b < 0)
        return;
    EXPECT(sh_where(buf[b]) != 'G', "operation %u: B%d is in GPU memory, so it would not "
           "exercise evicted memory", step, b);
}

/* ------------------------------------------------------------ set-up and mirrors */

/* Host memory h of BYTES bytes holds sh_pattern(seed, .), as sh_fill writes it. */
static void fill_host(uint8_t *h, uint32_t seed)
{
    for (uint64_t i = 0; i < WORDS; i++) {
        uint32_t w = sh_pattern(seed, i);
        memcpy(h + 4 * i, &w, 4);
    }
}

/* Buffer b gets new contents, written by a kernel (which brings it into GPU memory). */
static void refresh(int b)
{
    uint32_t seed = seeds++;

    CHECK_CU(sh_fill_async(fill, buf[b], WORDS, seed, NULL));
    fill_host(mirror[b], seed);
}

/* The four buffers, filled in order: B0 and B1 end up evicted. */
static void alloc_buffers(void)
{
    for (int i = 0; i < NBUF; i++) {
        CHECK_CU(cuMemAlloc(&buf[i], BYTES));
        refresh(i);
    }
}

/*
 * Before an operation on buffers d and s (-1: a host operand, or none): a kernel reads the
 * first two other buffers, which brings them into GPU memory and, under the 4 MiB budget,
 * pages out the rest.  Waits for it, so that any stream may use the buffers next.
 */
static void arrange(int d, int s)
{
    CUdeviceptr other[2];
    uint64_t words = WORDS;
    void *args[] = { &other[0], &other[1], &words };

    for (int i = 0, n = 0; i < NBUF && n < 2; i++)
        if (i != d && i != s)
            other[n++] = buf[i];
    CHECK_CU(sh_launch(touch, NULL, args));
    CHECK_CU(cuCtxSynchronize());
    step++;
    expect_evicted(d);
    expect_evicted(s);
}

/* A memset value for this operation (its low bytes for the narrower forms). */
static unsigned value(void)
{
    return 0x9e3779b9u * (step + 1) ^ 0x5a5a5a5au;
}

/* Wait for stream s (NULL: the ABI's default stream). */
static void wait_stream(const abi_t *a, CUstream s)
{
    CHECK_CU(cuStreamSynchronize(s ? s : a->dflt));
}

/* The per-thread variant of every form, from cuGetProcAddress. */
static void lookup_per_thread(void)
{
    abi_t *a = &per_thread_abi;
    void *fn[NFORMS];
    CUdriverProcAddressQueryResult found;

    for (int i = 0; i < NFORMS; i++) {
        CHECK_CU(cuGetProcAddress(form_names[i], &fn[i], 13000,
                                  CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &found));
        EXPECT(found == CU_GET_PROC_ADDRESS_SUCCESS && fn[i], "%s: no per-thread variant",
               form_names[i]);
    }
    *a = (abi_t){ .label = "per-thread", .syms = per_thread_syms, .dflt = CU_STREAM_PER_THREAD };
#define FORM_SET(f, T, name, sfx) *(void **)&a->f = fn[F_##f];
    FORMS(FORM_SET)
#undef FORM_SET
}

/* ------------------------------------------------------------ 1D copies */

/* After a copy of n bytes from src (host memory or a mirror) into buffer b at off on stream
 * s: wait for s (async forms), update the mirror and report. */
static void copied(const abi_t *a, int f, CUstream s, int b, size_t off, const uint8_t *src,
                   size_t n, const char *what)
{
    if (s != SYNC_FORM)
        wait_stream(a, s);
    memcpy(mirror[b] + off, src, n);
    report(a, f, what, b);
}

/* After a copy of n bytes from buffer b at off into host memory h, cleared before, on stream
 * s: wait for s and check h. */
static void copied_to_host(const abi_t *a, int f, CUstream s, uint8_t *h, size_t hoff, int b,
                           size_t off, size_t n, const char *what)
{
    if (s != SYNC_FORM)
        wait_stream(a, s);
    memcpy(expected + hoff, mirror[b] + off, n);
    report_host(a, f, what, h);
}

/* Host memory h and `expected` both cleared. */
static void clear_host(uint8_t *h)
{
    memset(h, 0, BYTES);
    memset(expected, 0, BYTES);
}

/* HtoD from pageable memory, HtoDAsync from pinned memory on the default stream, and the
 * unified cuMemcpyAsync from pinned memory on `side`. */
static void copies_from_host(const abi_t *a)
{
    arrange(0, -1);
    fill_host(pageable, seeds++);
    CALL(a, htod, (buf[0] + 4096, pageable, SH_MIB + 12));
    copied(a, F_htod, SYNC_FORM, 0, 4096, pageable, SH_MIB + 12, "B0+4096 <- pageable");

    arrange(2, -1);
    fill_host(pinned, seeds++);
    CALL(a, htod_async, (buf[2] + 100, pinned, 999999, NULL));
    copied(a, F_htod_async, NULL, 2, 100, pinned, 999999, "B2+100 <- pinned, stream 0");

    arrange(3, -1);
    fill_host(pinned, seeds++);
    CALL(a, copy_async, (buf[3] + 2, (CUdeviceptr)(uintptr_t)(pinned + 8), BYTES - 4096, side));
    copied(a, F_copy_async, side, 3, 2, pinned + 8, BYTES - 4096, "B3+2 <- pinned+8, side");
}

/* DtoH into pageable memory, DtoHAsync into pinned memory on `side`. */
static void copies_to_host(const abi_t *a)
{
    arrange(1, -1);
    clear_host(pageable);
    CALL(a, dtoh, (pageable + 4, buf[1] + 12, SH_MIB));
    copied_to_host(a, F_dtoh, SYNC_FORM, pageable, 4, 1, 12, SH_MIB, "pageable+4 <- B1+12");

    arrange(0, -1);
    clear_host(pinned);
    CALL(a, dtoh_async, (pinned, buf[0] + 3, 1234567, side));
    copied_to_host(a, F_dtoh_async, side, pinned, 0, 0, 3, 1234567, "pinned <- B0+3, side");
}

/* DtoD, the unified cuMemcpy, and DtoDAsync on the default stream, each from a source just
 * written by a kernel and paged out again. */
static void copies_on_device(const abi_t *a)
{
    refresh(3);
    arrange(2, 3);
    CALL(a, dtod, (buf[2] + 64, buf[3] + 8192, 3 * SH_MIB / 2));
    copied(a, F_dtod, SYNC_FORM, 2, 64, mirror[3] + 8192, 3 * SH_MIB / 2, "B2+64 <- B3+8192");

    refresh(0);
    arrange(1, 0);
    CALL(a, copy, (buf[1] + 1, buf[0] + 4095, SH_MIB + 333));
    copied(a, F_copy, SYNC_FORM, 1, 1, mirror[0] + 4095, SH_MIB + 333, "B1+1 <- B0+4095");

    refresh(1);
    arrange(0, 1);
    CALL(a, dtod_async, (buf[0], buf[1] + 4, BYTES - 4, NULL));
    copied(a, F_dtod_async, NULL, 0, 0, mirror[1] + 4, BYTES - 4, "B0 <- B1+4, stream 0");
}

/* ------------------------------------------------------------ memsets */

/* The mirror of a memset of `height` rows, `pitch` bytes apart, of `width` elements of `elem`
 * bytes each (little-endian, as the device stores them). */
static void mirror_set(uint8_t *m, unsigned v, unsigned elem, size_t width, size_t height,
                       size_t pitch)
{
    for (size_t y = 0; y < height; y++)
        for (size_t x = 0; x < width; x++)
            memcpy(m + y * pitch + x * elem, &v, elem);
}

/* How a line names the stream of an operation ("" for a synchronous form). */
static const char *stream_name(CUstream s)
{
    return s == SYNC_FORM ? "" : s == side ? ", side" : ", stream 0";
}

/* After a memset of buffer b at off on stream s: wait for s, update the mirror and report. */
static void set_done(const abi_t *a, int f, CUstream s, int b, size_t off, unsigned v,
                     unsigned elem, size_t width, size_t height, size_t pitch)
{
    char what[64];

    if (s != SYNC_FORM)
        wait_stream(a, s);
    mirror_set(mirror[b] + off, v, elem, width, height, pitch);
    if (height > 1)
        snprintf(what, sizeof(what), "B%d+%zu: %zu x %zu, pitch %zu%s", b, off, width, height,
                 pitch, stream_name(s));
    else
        snprintf(what, sizeof(what), "B%d+%zu: %zu%s", b, off, width, stream_name(s));
    report(a, f, what, b);
}

/* cuMemsetD8, D16 and D32, at offsets and lengths that are no multiple of a chunk. */
static void memsets_1d(const abi_t *a)
{
    arrange(1, -1);
    CALL(a, set8, (buf[1] + 3, (unsigned char)value(), 100001));
    set_done(a, F_set8, SYNC_FORM, 1, 3, value(), 1, 100001, 1, 0);
    arrange(2, -1);
    CALL(a, set16, (buf[2] + 2, (unsigned short)value(), 77777));
    set_done(a, F_set16, SYNC_FORM, 2, 2, value(), 2, 77777, 1, 0);
    arrange(3, -1);
    CALL(a, set32, (buf[3] + 4, value(), 300001));
    set_done(a, F_set32, SYNC_FORM, 3, 4, value(), 4, 300001, 1, 0);
}

/* cuMemsetD2D8, D2D16 and D2D32: rows narrower than their pitch. */
static void memsets_2d(const abi_t *a)
{
    arrange(0, -1);
    CALL(a, set2d8, (buf[0] + 7, 4096, (unsigned char)value(), 1001, 300));
    set_done(a, F_set2d8, SYNC_FORM, 0, 7, value(), 1, 1001, 300, 4096);
    arrange(1, -1);
    CALL(a, set2d16, (buf[1] + 2, 8192, (unsigned short)value(), 1500, 200));
    set_done(a, F_set2d16, SYNC_FORM, 1, 2, value(), 2, 1500, 200, 8192);
    arrange(2, -1);
    CALL(a, set2d32, (buf[2] + 8, 6144, value(), 1000, 250));
    set_done(a, F_set2d32, SYNC_FORM, 2, 8, value(), 4, 1000, 250, 6144);
}

/* The Async forms, on `side` and on the default stream in turn. */
static void memsets_1d_async(const abi_t *a)
{
    arrange(3, -1);
    CALL(a, set8_async, (buf[3] + 5, (unsigned char)value(), 555555, side));
    set_done(a, F_set8_async, side, 3, 5, value(), 1, 555555, 1, 0);
    arrange(0, -1);
    CALL(a, set16_async, (buf[0] + 6, (unsigned short)value(), 123457, NULL));
    set_done(a, F_set16_async, NULL, 0, 6, value(), 2, 123457, 1, 0);
    arrange(1, -1);
    CALL(a, set32_async, (buf[1], value(), WORDS, side));
    set_done(a, F_set32_async, side, 1, 0, value(), 4, WORDS, 1, 0);
}

static void memsets_2d_async(const abi_t *a)
{
    arrange(2, -1);
    CALL(a, set2d8_async, (buf[2] + 1, 2048, (unsigned char)value(), 2047, 900, NULL));
    set_done(a, F_set2d8_async, NULL, 2, 1, value(), 1, 2047, 900, 2048);
    arrange(3, -1);
    CALL(a, set2d16_async, (buf[3] + 10, 4000, (unsigned short)value(), 1000, 500, side));
    set_done(a, F_set2d16_async, side, 3, 10, value(), 2, 1000, 500, 4000);
    arrange(0, -1);
    CALL(a, set2d32_async, (buf[0] + 4, 65536, value(), 3, 31, NULL));
    set_done(a, F_set2d32_async, NULL, 0, 4, value(), 4, 3, 31, 65536);
}

/* ------------------------------------------------------------ 2D and 3D copies */

/* The mirror of a copy of depth x height rows of width bytes from s to d. */
static void mirror_box(box_t d, box_t s, size_t width, size_t height, size_t depth)
{
    for (size_t z = 0; z < depth; z++)
        for (size_t y = 0; y < height; y++)
            memcpy(d.mem + ((d.z + z) * d.height + d.y + y) * d.pitch + d.x,
                   s.mem + ((s.z + z) * s.height + s.y + y) * s.pitch + s.x, width);
}

/* cuMemcpy2D from B0 to B1, device to device. */
static void copy_2d(const abi_t *a)
{
    CUDA_MEMCPY2D p = { .srcXInBytes = 24, .srcY = 3, .srcMemoryType = CU_MEMORYTYPE_DEVICE,
                        .srcDevice = buf[0], .srcPitch = 4096,
                        .dstXInBytes = 100, .dstY = 7, .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                        .dstDevice = buf[1], .dstPitch = 8192,
                        .WidthInBytes = 3000, .Height = 200 };

    refresh(0);
    arrange(1, 0);
    CALL(a, copy2d, (&p));
    mirror_box((box_t){ mirror[1], 100, 7, 0, 8192, 0 }, (box_t){ mirror[0], 24, 3, 0, 4096, 0 },
               3000, 200, 1);
    report(a, F_copy2d, "B1 (100,7) <- B0 (24,3), 3000 x 200", 1);
}

/* cuMemcpy2DUnaligned from pageable memory to B0, with odd offsets and pitches. */
static void copy_2d_unaligned(const abi_t *a)
{
    CUDA_MEMCPY2D p = { .srcXInBytes = 5, .srcY = 1, .srcMemoryType = CU_MEMORYTYPE_HOST,
                        .srcHost = pageable, .srcPitch = 3001,
                        .dstXInBytes = 3, .dstY = 2, .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                        .dstDevice = buf[0], .dstPitch = 5003,
                        .WidthInBytes = 2995, .Height = 300 };

    arrange(0, -1);
    fill_host(pageable, seeds++);
    CALL(a, copy2d_unaligned, (&p));
    mirror_box((box_t){ mirror[0], 3, 2, 0, 5003, 0 }, (box_t){ pageable, 5, 1, 0, 3001, 0 },
               2995, 300, 1);
    report(a, F_copy2d_unaligned, "B0 (3,2) <- pageable (5,1), 2995 x 300", 0);
}

/* cuMemcpy2DAsync from B1 to pinned memory on `side`. */
static void copy_2d_async(const abi_t *a)
{
    CUDA_MEMCPY2D p = { .srcY = 10, .srcMemoryType = CU_MEMORYTYPE_DEVICE,
                        .srcDevice = buf[1], .srcPitch = 6000,
                        .dstXInBytes = 16, .dstMemoryType = CU_MEMORYTYPE_HOST,
                        .dstHost = pinned, .dstPitch = 4096,
                        .WidthInBytes = 4000, .Height = 250 };

    arrange(1, -1);
    clear_host(pinned);
    CALL(a, copy2d_async, (&p, side));
    wait_stream(a, side);
    mirror_box((box_t){ expected, 16, 0, 0, 4096, 0 }, (box_t){ mirror[1], 0, 10, 0, 6000, 0 },
               4000, 250, 1);
    report_host(a, F_copy2d_async, "pinned (16,0) <- B1 (0,10), side", pinned);
}

/* cuMemcpy3D from B1 to B0, device to device. */
static void copy_3d(const abi_t *a)
{
    CUDA_MEMCPY3D p = { .srcXInBytes = 8, .srcY = 2, .srcZ = 1,
                        .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = buf[1],
                        .srcPitch = 4096, .srcHeight = 64,
                        .dstXInBytes = 40, .dstY = 5, .dstZ = 2,
                        .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = buf[0],
                        .dstPitch = 2048, .dstHeight = 100,
                        .WidthInBytes = 1000, .Height = 50, .Depth = 5 };

    refresh(1);
    arrange(0, 1);
    CALL(a, copy3d, (&p));
    mirror_box((box_t){ mirror[0], 40, 5, 2, 2048, 100 },
               (box_t){ mirror[1], 8, 2, 1, 4096, 64 }, 1000, 50, 5);
    report(a, F_copy3d, "B0 (40,5,2) <- B1 (8,2,1), 1000x50x5", 0);
}

/* cuMemcpy3DAsync from pinned memory to B1 on the default stream. */
static void copy_3d_async(const abi_t *a)
{
    CUDA_MEMCPY3D p = { .srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = pinned,
                        .srcPitch = 1024, .srcHeight = 32,
                        .dstXInBytes = 1, .dstY = 3,
                        .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = buf[1],
                        .dstPitch = 3000, .dstHeight = 40,
                        .WidthInBytes = 1000, .Height = 30, .Depth = 10 };

    arrange(1, -1);
    fill_host(pinned, seeds++);
    CALL(a, copy3d_async, (&p, NULL));
    wait_stream(a, NULL);
    mirror_box((box_t){ mirror[1], 1, 3, 0, 3000, 40 }, (box_t){ pinned, 0, 0, 0, 1024, 32 },
               1000, 30, 10);
    report(a, F_copy3d_async, "B1 (1,3,0) <- pinned, 1000x30x10", 1);
}

/* cuMemcpy3DPeer from B0 to B1, and cuMemcpy3DPeerAsync from B1 to B0 on `side`, both in the
 * current context. */
static void copy_3d_peer(const abi_t *a)
{
    CUDA_MEMCPY3D_PEER p = { .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = buf[0],
                             .srcContext = ctx, .srcPitch = 4096, .srcHeight = 16,
                             .dstXInBytes = 64, .dstY = 1, .dstZ = 3,
                             .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = buf[1],
                             .dstContext = ctx, .dstPitch = 4096, .dstHeight = 20,
                             .WidthInBytes = 2048, .Height = 15, .Depth = 20 };

    refresh(0);
    arrange(1, 0);
    CALL(a, copy3d_peer, (&p));
    mirror_box((box_t){ mirror[1], 64, 1, 3, 4096, 20 }, (box_t){ mirror[0], 0, 0, 0, 4096, 16 },
               2048, 15, 20);
    report(a, F_copy3d_peer, "B1 (64,1,3) <- B0, 2048x15x20", 1);
}

static void copy_3d_peer_async(const abi_t *a)
{
    CUDA_MEMCPY3D_PEER p = { .srcXInBytes = 7, .srcMemoryType = CU_MEMORYTYPE_DEVICE,
                             .srcDevice = buf[1], .srcContext = ctx,
                             .srcPitch = 1024, .srcHeight = 128,
                             .dstZ = 2, .dstMemoryType = CU_MEMORYTYPE_DEVICE,
                             .dstDevice = buf[0], .dstContext = ctx,
                             .dstPitch = 2048, .dstHeight = 100,
                             .WidthInBytes = 512, .Height = 100, .Depth = 3 };

    refresh(1);
    arrange(0, 1);
    CALL(a, copy3d_peer_async, (&p, side));
    wait_stream(a, side);
    mirror_box((box_t){ mirror[0], 0, 0, 2, 2048, 100 },
               (box_t){ mirror[1], 7, 0, 0, 1024, 128 }, 512, 100, 3);
    report(a, F_copy3d_peer_async, "B0 (0,0,2) <- B1 (7,0,0), side", 0);
}

/* Each 2D and 3D form. */
static void structured(const abi_t *a)
{
    static void (*const steps[])(const abi_t *) = {
        copy_2d, copy_2d_unaligned, copy_2d_async, copy_3d, copy_3d_async, copy_3d_peer,
        copy_3d_peer_async,
    };

    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
        steps[i](a);
}

/* ------------------------------------------------------------ forms the simulator lacks */

/* The entry point `name` (default stream) called with args: prints its result; under the
 * shim its wrapper must have been entered once. */
#define TRY(name, args)                                                                      \
    do {                                                                                     \
        long long before_ = entries(STR(name));                                              \
        CUresult r_ = name args;                                                             \
        expect_entered(STR(name), before_);                                                  \
        printf("%-20s %-10s %-40s %s\n", #name, "default", "evicted operands", st_err(r_));  \
    } while (0)

/* Arrays and batches on B0 and B1 (evicted): whatever the simulator answers, the same with
 * the shim; the array forms change no buffer, the batches copy B0's first 4096 bytes into
 * B1, each with both evicted when it is issued. */
static void unsupported(void)
{
    CUDA_ARRAY_DESCRIPTOR ad = { .Width = 4096, .Height = 1, .Format = CU_AD_FORMAT_UNSIGNED_INT8,
                                 .NumChannels = 1 };
    CUarray arr = NULL;
    CUdeviceptr dsts[1], srcs[1];
    size_t sizes[1] = { 4096 }, attr_idx[1] = { 0 };
    CUmemcpyAttributes attr = { .srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM };
    CUDA_MEMCPY3D_BATCH_OP op = { .extent = { 1024, 2, 1 },
                                  .srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM };

    printf("%-20s %-10s %-40s %s\n", "cuArrayCreate", "default", "4096 bytes",
           st_err(cuArrayCreate(&arr, &ad)));
    arrange(0, 1);
    TRY(cuMemcpyDtoA, (arr, 0, buf[0], 4096));
    TRY(cuMemcpyAtoD, (buf[1], arr, 0, 4096));
    TRY(cuMemcpyHtoA, (arr, 0, pageable, 4096));
    TRY(cuMemcpyAtoH, (pageable, arr, 0, 4096));
    TRY(cuMemcpyAtoA, (arr, 0, arr, 0, 4096));
    TRY(cuMemcpyHtoAAsync, (arr, 0, pinned, 4096, side));
    TRY(cuMemcpyAtoHAsync, (pinned, arr, 0, 4096, side));
    CHECK_CU(cuStreamSynchronize(side));
    dsts[0] = buf[1];
    srcs[0] = buf[0];
    arrange(0, 1);
    TRY(cuMemcpyBatchAsync, (dsts, srcs, sizes, 1, &attr, attr_idx, 1, side));
    op.src.type = op.dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
    op.src.op.ptr.ptr = buf[0];
    op.dst.op.ptr.ptr = buf[1];
    op.src.op.ptr.rowLength = op.dst.op.ptr.rowLength = 1024;
    op.src.op.ptr.layerHeight = op.dst.op.ptr.layerHeight = 2;
    CHECK_CU(cuStreamSynchronize(side));
    arrange(0, 1);
    TRY(cuMemcpy3DBatchAsync, (1, &op, 0, side));
    CHECK_CU(cuStreamSynchronize(side));
    memcpy(mirror[1], mirror[0], sizes[0]);     /* the 3D batch copies a part of the same */
    if (arr)
        CHECK_CU(cuArrayDestroy(arr));
}

/* ------------------------------------------------------------ the scenario */

/* Every buffer, read back, holds its mirror. */
static void check_all(void)
{
    for (int b = 0; b < NBUF; b++)
        report(&default_abi, F_dtoh, "final contents", b);
}

static void scenario(void)
{
    const abi_t *abis[] = { &default_abi, &per_thread_abi };

    shimmed = sh_calls("cuMemAlloc_v2") >= 0;
    ctx = st_setup(0);
    fill = st_function(sh_res_ptx, "sh_fill");
    touch = st_function(touch_ptx, "forms_touch");
    CHECK_CU(cuStreamCreate(&side, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemHostAlloc((void **)&pinned, BYTES, 0));
    lookup_per_thread();
    alloc_buffers();
    for (int i = 0; i < 2; i++) {
        copies_from_host(abis[i]);
        copies_to_host(abis[i]);
        copies_on_device(abis[i]);
        memsets_1d(abis[i]);
        memsets_2d(abis[i]);
        memsets_1d_async(abis[i]);
        memsets_2d_async(abis[i]);
    }
    for (int i = 0; i < 2; i++)
        structured(abis[i]);
    unsupported();
    check_all();
    for (int b = 0; b < NBUF; b++)
        CHECK_CU(cuMemFree(buf[b]));
    CHECK_CU(cuMemFreeHost(pinned));
    CHECK_CU(cuStreamDestroy(side));
}

/* The scenario without the shim and under it, evicted chunks mapped or not (host_vmm). */
static void run(const char *what, const char *host_vmm)
{
    const char *plain_env[] = { "ELIXIR_SIM_RACECHECK=fail", NULL };
    const char *env[] = { "ELIXIR_SIM_RACECHECK=fail", "ELIXIR_GPU_MEMORY=4M", "ELIXIR_STATS=1",
                          host_vmm, NULL };
    sh_run_t plain = sh_run_plain_ok(plain_env), shim = sh_run_ok("scenario", env);
    long long out, back;

    out = sh_stat(shim.err, "migrations to host ");
    back = sh_stat(shim.err, "to GPU ");
    EXPECT(out > 0 && back > 0, "%s: expected chunks paged out and back:\n%s", what, shim.err);
    sh_same_transcript(what, &plain, &shim);
}

int main(int argc, char **argv)
{
    return sh_main_mapped_unmapped(argc, argv, scenario, run);
}
