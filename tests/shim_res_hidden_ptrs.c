/* SPDX-License-Identifier: MIT */
/*
 * shim_res_hidden_ptrs.c - kernels whose pointers hide in a struct passed by value, in the
 * `extra` buffer, or point into the middle of an allocation: the shim finds them, brings
 * their chunks in, records their use, and the data they reach is right.
 *
 * Under libelixir.so with an 8 MiB GPU budget (four chunks), four 4 MiB buffers A-D (each two
 * chunks) are filled by kernels; then, on one non-blocking stream with no host
 * synchronisation until the end:
 *  1. sh_struct_add(10, {n, A, B}) - B = A + 10, both pointers inside a 24-byte struct;
 *  2. sh_pair_add(C, D, n, 20) launched with CU_LAUNCH_PARAM_BUFFER_POINTER - D = C + 20;
 *  3. sh_add(B + 2 MiB + 4 KiB, ...) - a pointer into B's second chunk adds 5 there;
 *  4. sh_struct_add(0, {n, A + 1 MiB, C + 1 MiB}) - interior pointers inside a struct;
 *  5. sh_verify(A, ...) - A is unchanged.
 * Each launch needs chunks that the previous one left in GPU memory to be evicted, so a
 * pointer the shim failed to see shows up twice: its chunks are not brought in (the
 * statistics count migrations to the GPU) and its use is not recorded, so the next eviction
 * copies the chunk while the kernel may still write it, which the race checker
 * (ELIXIR_SIM_RACECHECK=fail) reports.  Finally every buffer is read back and checked.
 */
#define SH_RES_KERNELS
#include "shim_test.h"

#define BUF (4 * SH_MIB)
#define WORDS (BUF / 4)

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry sh_struct_add(.param .u32 tag, .param .align 8 .b8 s[24])\n{\n ret;\n}\n"
    ".visible .entry sh_pair_add(.param .u64 src, .param .u64 dst, .param .u64 n,"
    " .param .u32 tag)\n{\n ret;\n}\n";

/* The struct argument of sh_struct_add, as the application lays it out. */
typedef struct span {
    uint64_t n;
    CUdeviceptr src, dst;
} span_t;

/* dst[i] = src[i] + tag for i < n. */
static void add_words(uint32_t *dst, const uint32_t *src, uint64_t n, uint32_t tag)
{
    sim_kernel_access(src, n * 4, SIM_ACCESS_READ);
    sim_kernel_access(dst, n * 4, SIM_ACCESS_WRITE);
    for (uint64_t i = 0; i < n; i++)
        dst[i] = src[i] + tag;
}

/* sh_struct_add(tag, {n, src, dst}): the pointers travel inside a struct passed by value. */
SIM_KERNEL void sh_struct_add(const sim_launch_t *l, void **params)
{
    uint32_t tag = *(uint32_t *)params[0];
    span_t s;

    memcpy(&s, params[1], sizeof(s));
    add_words((uint32_t *)(uintptr_t)s.dst, (const uint32_t *)(uintptr_t)s.src, s.n, tag);
}

/* sh_pair_add(src, dst, n, tag), launched through the `extra` buffer. */
SIM_KERNEL void sh_pair_add(const sim_launch_t *l, void **params)
{
    add_words(*(uint32_t **)params[1], *(const uint32_t **)params[0], *(uint64_t *)params[2],
              *(uint32_t *)params[3]);
}

static CUfunction fill, add, verify, struct_add, pair_add;

static void launch_struct(CUstream s, uint32_t tag, CUdeviceptr src, CUdeviceptr dst,
                          uint64_t n)
{
    span_t span = { n, src, dst };
    void *args[] = { &tag, &span };

    CHECK_CU(sh_launch(struct_add, s, args));
}

/* sh_pair_add with its arguments packed at the offsets cuFuncGetParamInfo reports. */
static void launch_extra(CUstream s, CUdeviceptr src, CUdeviceptr dst, uint64_t n, uint32_t tag)
{
    const void *vals[] = { &src, &dst, &n, &tag };
    unsigned char buf[32] = { 0 };
    size_t off, size, bytes = 0;

    for (size_t i = 0; i < 4; i++) {
        CHECK_CU(cuFuncGetParamInfo(pair_add, i, &off, &size));
        EXPECT(off + size <= sizeof(buf), "parameter %zu at %zu+%zu", i, off, size);
        memcpy(buf + off, vals[i], size);
        bytes = off + size;     /* the buffer size is the last parameter's end */
    }
    void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &bytes,
                      CU_LAUNCH_PARAM_END };
    CHECK_CU(cuLaunchKernel(pair_add, 1, 1, 1, 1, 1, 1, 0, s, NULL, extra));
}

/* Word i of buffer p must be sh_pattern(seed, i) + plus, plus2 from word `from` on. */
static void expect_buffer(CUdeviceptr p, uint32_t seed, uint32_t plus, uint64_t from,
                          uint32_t plus2, const char *what)
{
    static uint32_t host[WORDS];

    CHECK_CU(cuMemcpyDtoH(host, p, BUF));
    for (uint64_t i = 0; i < WORDS; i++) {
        uint32_t want = sh_pattern(seed, i) + plus + (i >= from ? plus2 : 0);
        EXPECT(host[i] == want, "%s: word %llu is 0x%08x, expected 0x%08x", what,
               (unsigned long long)i, host[i], want);
    }
}

static void load_kernels(void)
{
    fill = st_function(sh_res_ptx, "sh_fill");
    add = st_function(sh_res_ptx, "sh_add");
    verify = st_function(sh_res_ptx, "sh_verify");
    struct_add = st_function(ptx, "sh_struct_add");
    pair_add = st_function(ptx, "sh_pair_add");
}

/* Launches 1-5 of the header, on stream s, with no host synchronisation in between. */
static void launch_all(CUstream s, CUdeviceptr *buf, CUdeviceptr bad)
{
    uint64_t n = WORDS, tail = (BUF - 2 * SH_MIB - 4096) / 4;
    uint32_t five = 5;
    uint64_t seed_a = 1;
    CUdeviceptr mid = buf[1] + 2 * SH_MIB + 4096;
    void *add_args[] = { &mid, &tail, &five }, *verify_args[] = { &buf[0], &n, &seed_a, &bad };

    launch_struct(s, 10, buf[0], buf[1], WORDS);                        /* B = A + 10 */
    launch_extra(s, buf[2], buf[3], WORDS, 20);                         /* D = C + 20 */
    CHECK_CU(sh_launch(add, s, add_args));                              /* B tail += 5 */
    launch_struct(s, 0, buf[0] + SH_MIB, buf[2] + SH_MIB, WORDS / 4);   /* C[1M..2M) = A */
    CHECK_CU(sh_launch(verify, s, verify_args));
}

/* C holds its own pattern except for the MiB copied from A at offset 1 MiB. */
static void expect_c(CUdeviceptr c)
{
    static uint32_t host[WORDS];

    CHECK_CU(cuMemcpyDtoH(host, c, BUF));
    for (uint64_t i = 0; i < WORDS; i++) {
        int copied = i >= SH_MIB / 4 && i < SH_MIB / 4 + WORDS / 4;
        uint32_t want = copied ? sh_pattern(1, i) : sh_pattern(3, i);
        EXPECT(host[i] == want, "C: word %llu is 0x%08x, expected 0x%08x",
               (unsigned long long)i, host[i], want);
    }
}

static void scenario(void)
{
    CUdeviceptr buf[4], bad;
    CUstream s;
    uint32_t wrong = ~0u;

    st_setup(0);
    load_kernels();
    CHECK_CU(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAlloc(&bad, 4));
    sh_alloc_filled(fill, buf, 4, BUF, 1, s);
    launch_all(s, buf, bad);
    CHECK_CU(cuStreamSynchronize(s));
    CHECK_CU(cuMemcpyDtoH(&wrong, bad, 4));
    EXPECT(wrong == 0, "A read by a kernel: %u words wrong", wrong);
    expect_buffer(buf[0], 1, 0, WORDS, 0, "A");
    expect_buffer(buf[1], 1, 10, (2 * SH_MIB + 4096) / 4, 5, "B = A + 10, tail + 5");
    expect_c(buf[2]);
    expect_buffer(buf[3], 3, 20, WORDS, 0, "D = C + 20");
    printf("struct, extra and interior pointers: data right\n");
}

int main(int argc, char **argv)
{
    static const char *const env[] = { "ELIXIR_GPU_MEMORY=8M", "ELIXIR_STATS=1", NULL };

    sh_scenario_child(argc, argv, scenario);
    sh_run_t r = sh_run_migrations(env);
    long long in = sh_stat(r.err, "to GPU ");

    /* Launches 1-5 need 4 + 4 + 2 + 4 + 2 chunks, each set evicted by the next. */
    EXPECT(in >= 12, "only %lld chunks brought in: a hidden pointer was missed\n%s", in, r.err);
    sh_run_free(&r);
    return 0;
}
