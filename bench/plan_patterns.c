/* SPDX-License-Identifier: MIT */
/*
 * plan_patterns.c - three training-like jobs for the planned policy's benchmark
 * (bench/plan_patterns.sh runs them; tests/shim_plan_patterns.sh checks them).
 *
 * An ordinary CUDA Driver API program that knows nothing of Elixir: it allocates with
 * cuMemAlloc and frees with cuMemFree as a framework without a caching allocator does, and
 * its kernels are host functions of this program that the simulator finds by name.  Each
 * kernel does cheap, deterministic integer work on every byte it is given (so the digest
 * printed at the end proves that nothing was lost or misplaced by paging) and charges the
 * virtual clock the flops a real layer of that shape would take (sim_kernel_cost), so the
 * jobs are as compute-heavy as the model says without costing the CPU that time.
 *
 *   plan_patterns PATTERN ITERATIONS
 *
 * PATTERN is one of:
 *   layers  layered training: 16 transformer-like layers of P = 8 d^2 parameters (d = 256,
 *           2 MiB in fp32) with weights, gradients and two optimizer-state buffers each that
 *           live across iterations; per iteration, token ids copied in, one activation of
 *           T x d floats (T = 4096 tokens in sequences of S = 2048: 4 MiB) allocated per layer
 *           in the forward pass and freed in the backward pass, then an optimizer step.
 *           Flops: forward 2 T P + 4 T S d (the matrix products and the attention scores),
 *           backward twice that (split between the data and the weight gradients).
 *   chain   a long chain with large activations (CNN-like): 28 convolutions of 3 x 3 x 128 x
 *           128 (576 KiB of fp32 weights, with gradients and momentum: small tensors) on
 *           feature maps of 24 x 32 x 32 pixels in bf16 (6 MiB each), all saved for the
 *           backward pass.  Flops: forward 2 x pixels x 9 x 128 x 128, backward twice that.
 *   small   many small tensors: 640 parameters of 16 KiB to 1 MiB (log-uniform, fixed seed),
 *           each with a saved activation of a quarter of its size allocated in the forward
 *           pass and a gradient of that size allocated and freed in the backward pass (1,280
 *           allocations per iteration, all below the shim's 2 MiB chunk, so they share slab
 *           chunks), touched by three small kernels per parameter.  Flops: 2 x 1024 rows x
 *           the parameter's elements per kernel.
 *
 * Each iteration begins with a copy of its input (pinned host memory to the device) and ends
 * with a copy of a small result back and a stream synchronisation, as a training step that
 * reads its loss does.  The program prints its peak of live allocations, the virtual time of
 * every iteration (cuEventElapsedTime between events recorded at the iterations' starts, and
 * after the last one's synchronisation), and a digest (FNV-1a of the results read back and of
 * every persistent buffer at the end).  The digest depends on the pattern and the number of
 * iterations only.
 */
#include <cuda.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simtest.h"

#define NARGS 6         /* pointer arguments of every kernel: outputs first, then inputs */
#define MIB (1024.0 * 1024.0)

/* ---------------------------------------------------------------- the kernels */

enum { K_INIT, K_EMBED, K_FWD, K_LOSS, K_BWD_DATA, K_BWD_WEIGHT, K_OPT, K_SMALL_FWD,
       K_SMALL_BWD, K_SMALL_UPD, NKERNELS };

static const char *const kernel_names[NKERNELS] = {
    "pp_init", "pp_embed", "pp_fwd", "pp_loss", "pp_bwd_data", "pp_bwd_weight", "pp_opt",
    "pp_small_fwd", "pp_small_bwd", "pp_small_upd",
};

/* out[j] mixes in every word of in, in blocks of n words. */
static void fold(uint32_t *out, uint64_t n, const uint32_t *in, uint64_t m, uint32_t salt)
{
    for (uint64_t base = 0; base < m; base += n) {
        uint64_t len = m - base < n ? m - base : n;
        const uint32_t *src = in + base;
        for (uint64_t j = 0; j < len; j++)
            out[j] = (out[j] ^ src[j]) * 0x9E3779B1u + salt;
    }
}

/*
 * Every kernel: p0..p5 (outputs p0..p[nout-1], then inputs; NULL: none), n0..n5 (their sizes
 * in 32-bit words), nout, rw (bit o: output o is read and written; otherwise written whole),
 * flops (charged), salt.  Each output is first set (unless rw) and then mixed with every
 * input; the kernel declares exactly those accesses.
 */
static void op(void **params)
{
    uint32_t *p[NARGS], nout, rw, salt;
    uint64_t n[NARGS];
    double flops, bytes = 0;

    for (int i = 0; i < NARGS; i++) {
        memcpy(&p[i], params[i], sizeof(p[i]));
        memcpy(&n[i], params[NARGS + i], sizeof(n[i]));
    }
    memcpy(&nout, params[2 * NARGS], sizeof(nout));
    memcpy(&rw, params[2 * NARGS + 1], sizeof(rw));
    memcpy(&flops, params[2 * NARGS + 2], sizeof(flops));
    memcpy(&salt, params[2 * NARGS + 3], sizeof(salt));
    for (uint32_t i = 0; i < NARGS; i++) {
        if (!p[i])
            continue;
        int mode = i >= nout ? SIM_ACCESS_READ
                   : (rw >> i & 1) ? SIM_ACCESS_READWRITE : SIM_ACCESS_WRITE;
        sim_kernel_access(p[i], n[i] * 4, mode);
        bytes += (double)n[i] * 4;
    }
    for (uint32_t o = 0; o < nout && o < NARGS; o++) {
        if (!(rw >> o & 1))
            for (uint64_t j = 0; j < n[o]; j++)
                p[o][j] = salt + o + (uint32_t)j * 0x85EBCA6Bu;
        for (uint32_t i = nout; i < NARGS; i++)
            if (p[i])
                fold(p[o], n[o], p[i], n[i], salt + i);
    }
    sim_kernel_cost(flops, bytes);
}

#define PP_KERNEL(name) \
    SIM_KERNEL void name(const sim_launch_t *l, void **params) { (void)l; op(params); }
PP_KERNEL(pp_init)
PP_KERNEL(pp_embed)
PP_KERNEL(pp_fwd)
PP_KERNEL(pp_loss)
PP_KERNEL(pp_bwd_data)
PP_KERNEL(pp_bwd_weight)
PP_KERNEL(pp_opt)
PP_KERNEL(pp_small_fwd)
PP_KERNEL(pp_small_bwd)
PP_KERNEL(pp_small_upd)

/* ---------------------------------------------------------------- the host side */

typedef struct arg {
    CUdeviceptr p;
    size_t bytes;
} arg_t;

static CUfunction fn[NKERNELS];
static CUstream stream;
static size_t live_bytes, peak_bytes;
static uint64_t digest = 0xcbf29ce484222325ull;     /* FNV-1a, 64 bits */

static void hash(const void *data, size_t len)
{
    const unsigned char *b = data;
    for (size_t i = 0; i < len; i++)
        digest = (digest ^ b[i]) * 0x100000001b3ull;
}

static void load_kernels(void)
{
    static char ptx[8192];
    size_t at = (size_t)snprintf(ptx, sizeof(ptx), "%s", ST_PTX_HEADER);
    for (int k = 0; k < NKERNELS; k++) {
        at += (size_t)snprintf(ptx + at, sizeof(ptx) - at, ".visible .entry %s(", kernel_names[k]);
        for (int i = 0; i < 2 * NARGS; i++)
            at += (size_t)snprintf(ptx + at, sizeof(ptx) - at, ".param .u64 a%d, ", i);
        at += (size_t)snprintf(ptx + at, sizeof(ptx) - at, ".param .u32 nout, .param .u32 rw, "
                               ".param .f64 flops, .param .u32 salt)\n{\n ret;\n}\n");
    }
    CUmodule m;
    CHECK_CU(cuModuleLoadData(&m, ptx));
    for (int k = 0; k < NKERNELS; k++)
        CHECK_CU(cuModuleGetFunction(&fn[k], m, kernel_names[k]));
}

/* Kernel k on the job's stream: a[0..nout) written (read too where bit o of rw is set), the
 * rest read; flops charged. */
static void launch(int k, uint32_t nout, uint32_t rw, double flops, uint32_t salt,
                   const arg_t *a, int na)
{
    CUdeviceptr p[NARGS] = { 0 };
    uint64_t n[NARGS] = { 0 };
    void *params[2 * NARGS + 4];
    for (int i = 0; i < na && i < NARGS; i++) {
        p[i] = a[i].p;
        n[i] = a[i].bytes / 4;
    }
    for (int i = 0; i < NARGS; i++) {
        params[i] = &p[i];
        params[NARGS + i] = &n[i];
    }
    params[2 * NARGS] = &nout;
    params[2 * NARGS + 1] = &rw;
    params[2 * NARGS + 2] = &flops;
    params[2 * NARGS + 3] = &salt;
    CHECK_CU(cuLaunchKernel(fn[k], 1, 1, 1, 1, 1, 1, 0, stream, params, NULL));
}

static arg_t dalloc(size_t bytes)
{
    arg_t a = { 0, bytes };
    CHECK_CU(cuMemAlloc(&a.p, bytes));
    live_bytes += bytes;
    peak_bytes = live_bytes > peak_bytes ? live_bytes : peak_bytes;
    return a;
}

static void dfree(arg_t *a)
{
    CHECK_CU(cuMemFree(a->p));
    live_bytes -= a->bytes;
    a->p = 0;
}

/* A persistent buffer with deterministic contents. */
static arg_t dalloc_init(size_t bytes, uint32_t salt)
{
    arg_t a = dalloc(bytes);
    launch(K_INIT, 1, 0, 0, salt, &a, 1);
    return a;
}

/* The persistent buffers' contents, into the digest. */
static void hash_buffers(const arg_t *a, size_t n)
{
    size_t most = 0;
    for (size_t i = 0; i < n; i++)
        most = a[i].bytes > most ? a[i].bytes : most;
    void *h = malloc(most ? most : 1);
    EXPECT(h != NULL, "%zu bytes of host memory", most);
    for (size_t i = 0; i < n; i++) {
        CHECK_CU(cuMemcpyDtoH(h, a[i].p, a[i].bytes));
        hash(h, a[i].bytes);
    }
    free(h);
}

/* The iteration's input: `bytes` of pinned memory filled for iteration `it`, copied to dst. */
static void input(void *host, arg_t dst, int it)
{
    uint32_t *w = host;
    for (size_t j = 0; j < dst.bytes / 4; j++)
        w[j] = (uint32_t)(it + 1) * 0x27D4EB2Fu ^ (uint32_t)j;
    CHECK_CU(cuMemcpyHtoDAsync(dst.p, host, dst.bytes, stream));
}

/* The iteration's result (the first 64 bytes of src) read back, into the digest. */
static void result(void *host, arg_t src)
{
    size_t n = src.bytes < 64 ? src.bytes : 64;
    CHECK_CU(cuMemcpyDtoHAsync(host, src.p, n, stream));
    CHECK_CU(cuStreamSynchronize(stream));
    hash(host, n);
}

/* ---------------------------------------------------------------- layered training */

enum { L_LAYERS = 16, L_D = 256, L_TOKENS = 4096, L_SEQ = 2048, L_VOCAB = 2048 };

typedef struct job {
    void (*setup)(void);
    void (*iteration)(int it);
    void (*finish)(void);
    const char *what;
} job_t;

static void *pin_in, *pin_out;

static struct {
    arg_t w[L_LAYERS], g[L_LAYERS], m[L_LAYERS], v[L_LAYERS], embed, tokens, loss;
} ly;

static void layers_setup(void)
{
    size_t p = (size_t)8 * L_D * L_D * 4;
    for (int l = 0; l < L_LAYERS; l++) {
        ly.w[l] = dalloc_init(p, 100 + l);
        ly.g[l] = dalloc_init(p, 200 + l);
        ly.m[l] = dalloc_init(p, 300 + l);
        ly.v[l] = dalloc_init(p, 400 + l);
    }
    ly.embed = dalloc_init((size_t)L_VOCAB * L_D * 4, 1);
    ly.tokens = dalloc_init((size_t)L_TOKENS * 4, 2);
    ly.loss = dalloc_init(64, 3);
}

static void layers_iteration(int it)
{
    const double params = 8.0 * L_D * L_D, fwd = 2.0 * L_TOKENS * params +
                          4.0 * L_TOKENS * L_SEQ * L_D;
    const size_t act = (size_t)L_TOKENS * L_D * 4;
    arg_t x[L_LAYERS + 1], dy, dx = { 0, 0 };
    uint32_t s = (uint32_t)it << 8;

    input(pin_in, ly.tokens, it);
    x[0] = dalloc(act);
    launch(K_EMBED, 1, 0, 2.0 * L_TOKENS * L_D, s, (arg_t[]){ x[0], ly.tokens, ly.embed }, 3);
    for (int l = 0; l < L_LAYERS; l++) {
        x[l + 1] = dalloc(act);
        launch(K_FWD, 1, 0, fwd, s + l, (arg_t[]){ x[l + 1], x[l], ly.w[l] }, 3);
    }
    dy = dalloc(act);
    launch(K_LOSS, 2, 0, 4.0 * L_TOKENS * L_D, s, (arg_t[]){ ly.loss, dy, x[L_LAYERS] }, 3);
    dfree(&x[L_LAYERS]);
    for (int l = L_LAYERS - 1; l >= 0; l--) {
        if (l > 0) {
            dx = dalloc(act);
            launch(K_BWD_DATA, 1, 0, fwd, s + l, (arg_t[]){ dx, dy, ly.w[l] }, 3);
        }
        launch(K_BWD_WEIGHT, 1, 0, fwd, s + l, (arg_t[]){ ly.g[l], x[l], dy }, 3);
        dfree(&dy);
        dfree(&x[l]);
        dy = dx;
    }
    for (int l = 0; l < L_LAYERS; l++)
        launch(K_OPT, 3, 7, 10.0 * params, s + l, (arg_t[]){ ly.w[l], ly.m[l], ly.v[l], ly.g[l] },
               4);
    result(pin_out, ly.loss);
}

static void layers_finish(void)
{
    hash_buffers(ly.w, L_LAYERS);
    hash_buffers(ly.m, L_LAYERS);
    hash_buffers(ly.v, L_LAYERS);
}

/* ---------------------------------------------------------------- a long chain */

enum { C_LAYERS = 28, C_CH = 128, C_PIXELS = 24 * 32 * 32, C_IN_CH = 3 };

static struct {
    arg_t w[C_LAYERS], g[C_LAYERS], m[C_LAYERS], image, loss;
} ch;

static void chain_setup(void)
{
    size_t wb = (size_t)9 * C_CH * C_CH * 4;
    for (int l = 0; l < C_LAYERS; l++) {
        ch.w[l] = dalloc_init(wb, 100 + l);
        ch.g[l] = dalloc_init(wb, 200 + l);
        ch.m[l] = dalloc_init(wb, 300 + l);
    }
    ch.image = dalloc_init((size_t)C_PIXELS * C_IN_CH * 2, 1);
    ch.loss = dalloc_init(64, 2);
}

static void chain_iteration(int it)
{
    const double conv = 2.0 * C_PIXELS * 9 * C_CH * C_CH;   /* one forward convolution */
    const size_t act = (size_t)C_PIXELS * C_CH * 2;         /* bf16 */
    arg_t x[C_LAYERS + 1], dy, dx = { 0, 0 };
    uint32_t s = (uint32_t)it << 8;

    input(pin_in, ch.image, it);
    x[0] = ch.image;
    for (int l = 0; l < C_LAYERS; l++) {
        x[l + 1] = dalloc(act);
        double f = l == 0 ? 2.0 * C_PIXELS * 9 * C_IN_CH * C_CH : conv;
        launch(K_FWD, 1, 0, f, s + l, (arg_t[]){ x[l + 1], x[l], ch.w[l] }, 3);
    }
    dy = dalloc(act);
    launch(K_LOSS, 2, 0, 4.0 * C_PIXELS * C_CH, s, (arg_t[]){ ch.loss, dy, x[C_LAYERS] }, 3);
    dfree(&x[C_LAYERS]);
    for (int l = C_LAYERS - 1; l >= 0; l--) {
        if (l > 0) {
            dx = dalloc(act);
            launch(K_BWD_DATA, 1, 0, conv, s + l, (arg_t[]){ dx, dy, ch.w[l] }, 3);
        }
        double f = l == 0 ? 2.0 * C_PIXELS * 9 * C_IN_CH * C_CH : conv;
        launch(K_BWD_WEIGHT, 1, 0, f, s + l, (arg_t[]){ ch.g[l], x[l], dy }, 3);
        dfree(&dy);
        if (l > 0)
            dfree(&x[l]);
        dy = dx;
    }
    for (int l = 0; l < C_LAYERS; l++)
        launch(K_OPT, 2, 3, 4.0 * 9 * C_CH * C_CH, s + l,
               (arg_t[]){ ch.w[l], ch.m[l], ch.g[l] }, 3);
    result(pin_out, ch.loss);
}

static void chain_finish(void)
{
    hash_buffers(ch.w, C_LAYERS);
    hash_buffers(ch.m, C_LAYERS);
}

/* ---------------------------------------------------------------- many small tensors */

enum { S_TENSORS = 640, S_ROWS = 1024 };

static struct {
    arg_t p[S_TENSORS], in, out;
    size_t act[S_TENSORS];
} sm;

static void small_setup(void)
{
    uint64_t z = 0x5eed;
    for (int i = 0; i < S_TENSORS; i++) {
        z = z * 6364136223846793005ull + 1442695040888963407ull;
        double u = (double)(z >> 11) / 9007199254740992.0;          /* [0, 1) */
        size_t bytes = (size_t)(16384.0 * pow(64.0, u)) & ~(size_t)255;
        sm.p[i] = dalloc_init(bytes, 100 + i);
        sm.act[i] = (bytes / 4 + 255) & ~(size_t)255;
    }
    sm.in = dalloc_init(sm.act[0], 1);
    sm.out = dalloc_init(64, 2);
}

static void small_iteration(int it)
{
    arg_t t[S_TENSORS], g, gnext;
    uint32_t s = (uint32_t)it << 12;

    input(pin_in, sm.in, it);
    for (int i = 0; i < S_TENSORS; i++) {
        double f = 2.0 * S_ROWS * (double)(sm.p[i].bytes / 4);
        t[i] = dalloc(sm.act[i]);
        launch(K_SMALL_FWD, 1, 0, f, s + i, (arg_t[]){ t[i], sm.p[i], i ? t[i - 1] : sm.in },
               3);
    }
    gnext = (arg_t){ 0, 0 };
    for (int i = S_TENSORS - 1; i >= 0; i--) {
        double f = 2.0 * S_ROWS * (double)(sm.p[i].bytes / 4);
        g = dalloc(sm.act[i]);
        launch(K_SMALL_BWD, 1, 0, f, s + i,
               (arg_t[]){ g, t[i], sm.p[i], gnext.p ? gnext : t[S_TENSORS - 1] }, 4);
        launch(K_SMALL_UPD, 1, 1, f, s + i, (arg_t[]){ sm.p[i], g, t[i] }, 3);
        dfree(&t[i]);
        if (gnext.p)
            dfree(&gnext);
        gnext = g;
    }
    launch(K_SMALL_FWD, 1, 0, 0, s, (arg_t[]){ sm.out, gnext }, 2);
    dfree(&gnext);
    result(pin_out, sm.out);
}

static void small_finish(void)
{
    hash_buffers(sm.p, S_TENSORS);
}

/* ---------------------------------------------------------------- main */

static const struct {
    const char *name;
    job_t job;
} jobs[] = {
    { "layers", { layers_setup, layers_iteration, layers_finish,
                  "16 layers of 8 x 256^2 parameters (2 MiB), 4096 tokens" } },
    { "chain", { chain_setup, chain_iteration, chain_finish,
                 "28 convolutions 3x3x128x128, 24576 pixels in bf16 (6 MiB per activation)" } },
    { "small", { small_setup, small_iteration, small_finish,
                 "640 parameters of 16 KiB-1 MiB, an activation and a gradient each" } },
};

static int usage(void)
{
    fprintf(stderr, "usage: plan_patterns layers|chain|small ITERATIONS (1-1000)\n");
    return 2;
}

int main(int argc, char **argv)
{
    const job_t *job = NULL;
    char *end;
    if (argc != 3)
        return usage();
    for (size_t i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++)
        if (strcmp(argv[1], jobs[i].name) == 0)
            job = &jobs[i].job;
    long iters = strtol(argv[2], &end, 10);
    if (!job || *end || iters < 1 || iters > 1000)
        return usage();

    st_setup(0);
    load_kernels();
    CHECK_CU(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CHECK_CU(cuMemAllocHost(&pin_in, 1 << 20));
    CHECK_CU(cuMemAllocHost(&pin_out, 64));
    CUevent *ev = calloc((size_t)iters + 1, sizeof(*ev));
    EXPECT(ev != NULL, "%ld events", iters + 1);
    for (long i = 0; i <= iters; i++)
        CHECK_CU(cuEventCreate(&ev[i], CU_EVENT_DEFAULT));

    job->setup();
    CHECK_CU(cuStreamSynchronize(stream));
    for (int it = 0; it < iters; it++) {
        CHECK_CU(cuEventRecord(ev[it], stream));
        job->iteration(it);
    }
    CHECK_CU(cuEventRecord(ev[iters], stream));
    CHECK_CU(cuEventSynchronize(ev[iters]));
    printf("pattern %s: %s; peak of live allocations %.1f MiB\n", argv[1], job->what,
           (double)peak_bytes / MIB);
    for (long i = 0; i < iters; i++) {
        float ms;
        CHECK_CU(cuEventElapsedTime(&ms, ev[i], ev[i + 1]));
        printf("iteration %ld %.4f ms\n", i, ms);
    }
    job->finish();
    printf("digest %016llx\n", (unsigned long long)digest);
    return 0;
}
