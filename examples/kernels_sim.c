/* SPDX-License-Identifier: MIT */
/*
 * kernels_sim.c - the kernels of examples/kernels.cu as host functions for the simulator.
 *
 * Each function has the name of a `.entry` in examples/kernels.ptx and the host-kernel signature
 * of sim/include/simcuda.h.  It computes the whole launch at once (the grid and block that
 * train.py chooses are the ones kernels.cu needs; here they are ignored), declares the exact byte
 * ranges it reads and writes for the race checker, and charges its cost to the virtual clock.
 *
 * The maths is the same as kernels.cu; only the order of float additions may differ from the
 * GPU.  Every order here is fixed, so results are bit-for-bit reproducible from run to run.
 * The matrix products are the hot spot on a one-core executor: they are blocked so that the
 * small activation matrices stay in cache while each weight matrix streams through once, and
 * their inner loops have compile-time trip counts so that the compiler vectorizes them.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "simcuda.h"

#define KERNEL __attribute__((visibility("default")))

enum { RD = SIM_ACCESS_READ, WR = SIM_ACCESS_WRITE, RW = SIM_ACCESS_READWRITE };

/* ---------------------------------------------------------------- arguments */

static void *arg_ptr(void **params, int i)
{
    void *p;
    memcpy(&p, params[i], sizeof(p));
    return p;
}

static int arg_int(void **params, int i)
{
    int32_t v;
    memcpy(&v, params[i], sizeof(v));
    return v;
}

static uint64_t arg_u64(void **params, int i)
{
    uint64_t v;
    memcpy(&v, params[i], sizeof(v));
    return v;
}

static float arg_f32(void **params, int i)
{
    float v;
    memcpy(&v, params[i], sizeof(v));
    return v;
}

/* Declare an access of `count` floats (or ints) at p; a NULL p declares nothing. */
static void touch(const void *p, size_t count, int mode)
{
    if (p && count)
        sim_kernel_access(p, count * 4, mode);
}

/* ---------------------------------------------------------------- initialisation */

/* The counter-based generator shared with kernels.cu and train.py (splitmix64's finaliser). */
static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* p[i] = uniform in [-a, a): the top 24 bits of mix64(seed + i), centred, times a / 2^23. */
KERNEL void train_init_uniform(const sim_launch_t *launch, void **params)
{
    float *p = arg_ptr(params, 0);
    uint64_t n = arg_u64(params, 1), seed = arg_u64(params, 2);
    float k = arg_f32(params, 3) * 0x1p-23f;

    touch(p, n, WR);
    sim_kernel_cost(6.0 * (double)n, 4.0 * (double)n);
    for (uint64_t i = 0; i < n; i++)
        p[i] = (float)((int32_t)(mix64(seed + i) >> 40) - (1 << 23)) * k;
}

/* ---------------------------------------------------------------- embeddings */

/* x[i, :] = wte[tok[i], :] + wpe[i % t, :] for i < n. */
KERNEL void train_embed_fwd(const sim_launch_t *launch, void **params)
{
    float *x = arg_ptr(params, 0);
    const float *wte = arg_ptr(params, 1), *wpe = arg_ptr(params, 2);
    const int32_t *tok = arg_ptr(params, 3);
    int n = arg_int(params, 4), t = arg_int(params, 5), d = arg_int(params, 6);

    touch(tok, (size_t)n, RD);
    touch(wpe, (size_t)t * d, RD);
    for (int i = 0; i < n; i++)
        touch(wte + (size_t)tok[i] * d, (size_t)d, RD);
    touch(x, (size_t)n * d, WR);
    sim_kernel_cost((double)n * d, 12.0 * n * d);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < d; j++)
            x[(size_t)i * d + j] = wte[(size_t)tok[i] * d + j] + wpe[(size_t)(i % t) * d + j];
}

/* dwte[v, :] = sum over i with tok[i] == v, in increasing i, of dx[i, :] (zero if none). */
KERNEL void train_embed_bwd_tok(const sim_launch_t *launch, void **params)
{
    float *dwte = arg_ptr(params, 0);
    const float *dx = arg_ptr(params, 1);
    const int32_t *tok = arg_ptr(params, 2);
    int n = arg_int(params, 3), d = arg_int(params, 4), v = arg_int(params, 5);

    touch(dx, (size_t)n * d, RD);
    touch(tok, (size_t)n, RD);
    touch(dwte, (size_t)v * d, WR);
    sim_kernel_cost((double)n * d, 4.0 * ((double)v * d + 2.0 * n * d));
    memset(dwte, 0, (size_t)v * d * sizeof(float));
    for (int i = 0; i < n; i++)
        for (int j = 0; j < d; j++)
            dwte[(size_t)tok[i] * d + j] += dx[(size_t)i * d + j];
}

/* dwpe[p, :] = sum over batch rows b, in increasing b, of dx[b * t + p, :]. */
KERNEL void train_embed_bwd_pos(const sim_launch_t *launch, void **params)
{
    float *dwpe = arg_ptr(params, 0);
    const float *dx = arg_ptr(params, 1);
    int n = arg_int(params, 2), t = arg_int(params, 3), d = arg_int(params, 4);

    touch(dx, (size_t)n * d, RD);
    touch(dwpe, (size_t)t * d, WR);
    sim_kernel_cost((double)n * d, 4.0 * ((double)t * d + n * d));
    for (int p = 0; p < t; p++)
        for (int j = 0; j < d; j++) {
            float acc = 0.0f;
            for (int r = p; r < n; r += t)
                acc += dx[(size_t)r * d + j];
            dwpe[(size_t)p * d + j] = acc;
        }
}

/* ---------------------------------------------------------------- layer norm */

/* One row: mean, then the mean of squared deviations, rstd = 1 / sqrt(var + 1e-5). */
static void ln_row(float *restrict y, float *mean, float *rstd, const float *restrict x,
                   const float *restrict g, const float *restrict b, int d)
{
    float s = 0.0f, q = 0.0f;
    for (int j = 0; j < d; j++)
        s += x[j];
    float mu = s / (float)d;
    for (int j = 0; j < d; j++)
        q += (x[j] - mu) * (x[j] - mu);
    float rs = 1.0f / sqrtf(q / (float)d + 1e-5f);
    for (int j = 0; j < d; j++)
        y[j] = (x[j] - mu) * rs * g[j] + b[j];
    *mean = mu;
    *rstd = rs;
}

KERNEL void train_layernorm_fwd(const sim_launch_t *launch, void **params)
{
    float *y = arg_ptr(params, 0), *mean = arg_ptr(params, 1), *rstd = arg_ptr(params, 2);
    const float *x = arg_ptr(params, 3), *g = arg_ptr(params, 4), *b = arg_ptr(params, 5);
    int n = arg_int(params, 6), d = arg_int(params, 7);

    touch(x, (size_t)n * d, RD);
    touch(g, (size_t)d, RD);
    touch(b, (size_t)d, RD);
    touch(y, (size_t)n * d, WR);
    touch(mean, (size_t)n, WR);
    touch(rstd, (size_t)n, WR);
    sim_kernel_cost(8.0 * n * d, 4.0 * (2.0 * n * d + 2.0 * d));
    for (int i = 0; i < n; i++)
        ln_row(y + (size_t)i * d, mean + i, rstd + i, x + (size_t)i * d, g, b, d);
}

/*
 * One row of the input gradient: with xhat = (x - mean) * rstd and u = dy * g,
 * dx = dres + rstd * (u - mean(u) - xhat * mean(u * xhat)).
 */
static void ln_bwd_row(float *restrict dx, const float *restrict dy, const float *restrict x,
                       const float *restrict g, float mu, float rs, const float *restrict dres,
                       int d)
{
    float su = 0.0f, sux = 0.0f;
    for (int j = 0; j < d; j++) {
        float u = dy[j] * g[j];
        su += u;
        sux += u * ((x[j] - mu) * rs);
    }
    float mu_u = su / (float)d, mu_ux = sux / (float)d;
    for (int j = 0; j < d; j++) {
        float xh = (x[j] - mu) * rs;
        float v = rs * (dy[j] * g[j] - mu_u - xh * mu_ux);
        dx[j] = dres ? dres[j] + v : v;
    }
}

KERNEL void train_layernorm_bwd_x(const sim_launch_t *launch, void **params)
{
    float *dx = arg_ptr(params, 0);
    const float *dy = arg_ptr(params, 1), *x = arg_ptr(params, 2), *g = arg_ptr(params, 3);
    const float *mean = arg_ptr(params, 4), *rstd = arg_ptr(params, 5);
    const float *dres = arg_ptr(params, 6);
    int n = arg_int(params, 7), d = arg_int(params, 8);

    touch(dy, (size_t)n * d, RD);
    touch(x, (size_t)n * d, RD);
    touch(g, (size_t)d, RD);
    touch(mean, (size_t)n, RD);
    touch(rstd, (size_t)n, RD);
    touch(dres, (size_t)n * d, RD);
    touch(dx, (size_t)n * d, WR);
    sim_kernel_cost(14.0 * n * d, 4.0 * (4.0 * n * d + d));
    for (int i = 0; i < n; i++)
        ln_bwd_row(dx + (size_t)i * d, dy + (size_t)i * d, x + (size_t)i * d, g, mean[i], rstd[i],
                   dres ? dres + (size_t)i * d : NULL, d);
}

/* dg[j] = sum_i dy[i, j] * xhat[i, j], db[j] = sum_i dy[i, j], both in increasing i. */
KERNEL void train_layernorm_bwd_params(const sim_launch_t *launch, void **params)
{
    float *dg = arg_ptr(params, 0), *db = arg_ptr(params, 1);
    const float *dy = arg_ptr(params, 2), *x = arg_ptr(params, 3);
    const float *mean = arg_ptr(params, 4), *rstd = arg_ptr(params, 5);
    int n = arg_int(params, 6), d = arg_int(params, 7);

    touch(dy, (size_t)n * d, RD);
    touch(x, (size_t)n * d, RD);
    touch(mean, (size_t)n, RD);
    touch(rstd, (size_t)n, RD);
    touch(dg, (size_t)d, WR);
    touch(db, (size_t)d, WR);
    sim_kernel_cost(5.0 * n * d, 4.0 * (2.0 * n * d + 2.0 * d));
    for (int j = 0; j < d; j++) {
        float sg = 0.0f, sb = 0.0f;
        for (int i = 0; i < n; i++) {
            float v = dy[(size_t)i * d + j];
            sg += v * ((x[(size_t)i * d + j] - mean[i]) * rstd[i]);
            sb += v;
        }
        dg[j] = sg;
        db[j] = sb;
    }
}

/* ---------------------------------------------------------------- matrix products */

/* Tile sizes: KB weight rows at a time, MB output columns at a time (a multiple of 16). */
#define KB 8
#define MB 64

/* y[n, m0:m0+MB] += x[n, k0:k0+KB] @ w[k0:k0+KB, m0:m0+MB] for every row, in increasing k. */
static void mm_tile_full(float *restrict y, const float *restrict x, const float *restrict w,
                         int n, int k, int m)
{
    for (int r = 0; r < n; r++) {
        float acc[MB];
        float *yr = y + (size_t)r * m;
        memcpy(acc, yr, sizeof(acc));
        for (int q = 0; q < KB; q++) {
            float xv = x[(size_t)r * k + q];
            const float *wr = w + (size_t)q * m;
            for (int j = 0; j < MB; j++)
                acc[j] += xv * wr[j];
        }
        memcpy(yr, acc, sizeof(acc));
    }
}

/* The same for a partial tile: kb rows of w, mb columns. */
static void mm_tile_part(float *restrict y, const float *restrict x, const float *restrict w,
                         int n, int k, int m, int kb, int mb)
{
    for (int r = 0; r < n; r++)
        for (int q = 0; q < kb; q++) {
            float xv = x[(size_t)r * k + q];
            for (int j = 0; j < mb; j++)
                y[(size_t)r * m + j] += xv * w[(size_t)q * m + j];
        }
}

/*
 * y = x @ w, then + bias[j], then + res[i, j] (each optional).  x is n x k, w is k x m, all
 * row-major.  Each output sums its k products in increasing k, starting from zero.  The weight
 * matrix streams once through KB rows at a time; y (n x m, small) stays in cache.
 */
static void matmul(float *restrict y, const float *restrict x, const float *restrict w,
                   const float *bias, const float *res, int n, int k, int m)
{
    memset(y, 0, (size_t)n * m * sizeof(float));
    for (int k0 = 0; k0 < k; k0 += KB) {
        int kb = k - k0 < KB ? k - k0 : KB;
        for (int m0 = 0; m0 < m; m0 += MB) {
            int mb = m - m0 < MB ? m - m0 : MB;
            const float *wt = w + (size_t)k0 * m + m0;
            if (kb == KB && mb == MB)
                mm_tile_full(y + m0, x + k0, wt, n, k, m);
            else
                mm_tile_part(y + m0, x + k0, wt, n, k, m, kb, mb);
        }
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < m; j++) {
            float v = y[(size_t)i * m + j];
            if (bias)
                v += bias[j];
            if (res)
                v += res[(size_t)i * m + j];
            y[(size_t)i * m + j] = v;
        }
}

/* y = x @ w + bias + res (bias and res may be NULL); x: n x k, w: k x m, y and res: n x m. */
KERNEL void train_matmul_fwd(const sim_launch_t *launch, void **params)
{
    float *y = arg_ptr(params, 0);
    const float *x = arg_ptr(params, 1), *w = arg_ptr(params, 2);
    const float *bias = arg_ptr(params, 3), *res = arg_ptr(params, 4);
    int n = arg_int(params, 5), k = arg_int(params, 6), m = arg_int(params, 7);

    touch(x, (size_t)n * k, RD);
    touch(w, (size_t)k * m, RD);
    touch(bias, (size_t)m, RD);
    touch(res, (size_t)n * m, RD);
    touch(y, (size_t)n * m, WR);
    sim_kernel_cost(2.0 * n * k * m, 4.0 * ((double)n * k + (double)k * m + 2.0 * n * m + m));
    matmul(y, x, w, bias, res, n, k, m);
}

/* Lanes of the blocked dot products below (a multiple of the vector width). */
#define LANES 16

/*
 * out[q] = dot(a, b + q * m) for q < 4, over m values.  Lane l sums the products at indices
 * congruent to l modulo LANES in increasing order; the lanes are then added in order 0..15 and
 * the leftover tail (m % LANES values) after them, in increasing index.
 */
static void dot4(float out[4], const float *restrict a, const float *restrict b, int m)
{
    float acc[4][LANES] = { { 0 } };
    int mm = m - m % LANES;
    for (int j = 0; j < mm; j += LANES)
        for (int q = 0; q < 4; q++)
            for (int l = 0; l < LANES; l++)
                acc[q][l] += a[j + l] * b[(size_t)q * m + j + l];
    for (int q = 0; q < 4; q++) {
        float s = 0.0f;
        for (int l = 0; l < LANES; l++)
            s += acc[q][l];
        for (int j = mm; j < m; j++)
            s += a[j] * b[(size_t)q * m + j];
        out[q] = s;
    }
}

/* The single-row version of dot4, with the same order of additions. */
static float dot1(const float *restrict a, const float *restrict b, int m)
{
    float acc[LANES] = { 0 };
    int mm = m - m % LANES;
    for (int j = 0; j < mm; j += LANES)
        for (int l = 0; l < LANES; l++)
            acc[l] += a[j + l] * b[j + l];
    float s = 0.0f;
    for (int l = 0; l < LANES; l++)
        s += acc[l];
    for (int j = mm; j < m; j++)
        s += a[j] * b[j];
    return s;
}

/* dx = dy @ w^T: dx[i, q] = dot(dy[i, :], w[q, :]); dy: n x m, w: k x m, dx: n x k. */
KERNEL void train_matmul_bwd_x(const sim_launch_t *launch, void **params)
{
    float *dx = arg_ptr(params, 0);
    const float *dy = arg_ptr(params, 1), *w = arg_ptr(params, 2);
    int n = arg_int(params, 3), k = arg_int(params, 4), m = arg_int(params, 5);

    touch(dy, (size_t)n * m, RD);
    touch(w, (size_t)k * m, RD);
    touch(dx, (size_t)n * k, WR);
    sim_kernel_cost(2.0 * n * k * m, 4.0 * ((double)n * m + (double)k * m + (double)n * k));
    int k4 = k - k % 4;
    for (int q = 0; q < k4; q += 4)
        for (int i = 0; i < n; i++) {
            float out[4];
            dot4(out, dy + (size_t)i * m, w + (size_t)q * m, m);
            for (int c = 0; c < 4; c++)
                dx[(size_t)i * k + q + c] = out[c];
        }
    for (int q = k4; q < k; q++)
        for (int i = 0; i < n; i++)
            dx[(size_t)i * k + q] = dot1(dy + (size_t)i * m, w + (size_t)q * m, m);
}

/* Output columns per tile of train_matmul_bwd_w (a multiple of the vector width). */
#define WB 64

/* dw[q, j0:j0+WB] = sum over rows i, in increasing i, of x[i, q] * dy[i, j0:j0+WB]. */
static void dw_row_full(float *restrict dw, const float *restrict x, const float *restrict dy,
                        int n, int k, int m)
{
    float acc[WB];
    for (int j = 0; j < WB; j++)
        acc[j] = x[0] * dy[j];
    for (int i = 1; i < n; i++) {
        float xv = x[(size_t)i * k];
        const float *dr = dy + (size_t)i * m;
        for (int j = 0; j < WB; j++)
            acc[j] += xv * dr[j];
    }
    memcpy(dw, acc, sizeof(acc));
}

/* The same for mb < WB columns, in the same order. */
static void dw_row_part(float *restrict dw, const float *restrict x, const float *restrict dy,
                        int n, int k, int m, int mb)
{
    for (int j = 0; j < mb; j++) {
        float acc = x[0] * dy[j];
        for (int i = 1; i < n; i++)
            acc += x[(size_t)i * k] * dy[(size_t)i * m + j];
        dw[j] = acc;
    }
}

/* dw = x^T @ dy: x: n x k, dy: n x m, dw: k x m (written, not accumulated). */
KERNEL void train_matmul_bwd_w(const sim_launch_t *launch, void **params)
{
    float *dw = arg_ptr(params, 0);
    const float *x = arg_ptr(params, 1), *dy = arg_ptr(params, 2);
    int n = arg_int(params, 3), k = arg_int(params, 4), m = arg_int(params, 5);

    touch(x, (size_t)n * k, RD);
    touch(dy, (size_t)n * m, RD);
    touch(dw, (size_t)k * m, WR);
    sim_kernel_cost(2.0 * n * k * m, 4.0 * ((double)n * m + (double)k * m + (double)n * k));
    if (n == 0) {
        memset(dw, 0, (size_t)k * m * sizeof(float));
        return;
    }
    for (int q = 0; q < k; q++)
        for (int j0 = 0; j0 < m; j0 += WB) {
            float *out = dw + (size_t)q * m + j0;
            if (m - j0 >= WB)
                dw_row_full(out, x + q, dy + j0, n, k, m);
            else
                dw_row_part(out, x + q, dy + j0, n, k, m, m - j0);
        }
}

/* db[j] = sum over rows i, in increasing i, of dy[i, j]. */
KERNEL void train_bias_bwd(const sim_launch_t *launch, void **params)
{
    float *db = arg_ptr(params, 0);
    const float *dy = arg_ptr(params, 1);
    int n = arg_int(params, 2), m = arg_int(params, 3);

    touch(dy, (size_t)n * m, RD);
    touch(db, (size_t)m, WR);
    sim_kernel_cost((double)n * m, 4.0 * ((double)n * m + m));
    for (int j = 0; j < m; j++) {
        float s = 0.0f;
        for (int i = 0; i < n; i++)
            s += dy[(size_t)i * m + j];
        db[j] = s;
    }
}

/* ---------------------------------------------------------------- attention */

/*
 * The shapes of causal self-attention: b sequences of t tokens, h heads of hd = d / h values;
 * qkv is (b * t) x 3d with q, k and v side by side, head c of each in columns c * hd ...
 */
typedef struct attn_shape {
    int b, t, h, d, hd;
    float scale;
} attn_shape_t;

static attn_shape_t attn_args(void **params, int first)
{
    attn_shape_t s = { arg_int(params, first), arg_int(params, first + 1),
                       arg_int(params, first + 2), arg_int(params, first + 3), 0, 0.0f };
    s.hd = s.d / s.h;
    s.scale = 1.0f / sqrtf((float)s.hd);
    return s;
}

static float dotn(const float *a, const float *b, int n)
{
    float s = 0.0f;
    for (int i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/*
 * Row i of head c of sequence bi: p[j] = softmax over j <= i of scale * q_i . k_j (p[j] = 0 for
 * j > i), out_i = sum over j <= i, in increasing j, of p[j] * v_j.
 */
static void attn_row(float *restrict out, float *restrict p, const float *restrict qkv,
                     const attn_shape_t *s, int bi, int c, int i)
{
    size_t w = 3 * (size_t)s->d, base = (size_t)bi * s->t * w + (size_t)c * s->hd;
    const float *q = qkv + base + (size_t)i * w;
    float mx = -INFINITY, sum = 0.0f;
    for (int j = 0; j <= i; j++) {
        p[j] = dotn(q, qkv + base + (size_t)j * w + s->d, s->hd) * s->scale;
        mx = p[j] > mx ? p[j] : mx;
    }
    for (int j = 0; j <= i; j++) {
        p[j] = expf(p[j] - mx);
        sum += p[j];
    }
    for (int j = 0; j <= i; j++)
        p[j] = p[j] / sum;
    for (int j = i + 1; j < s->t; j++)
        p[j] = 0.0f;
    for (int e = 0; e < s->hd; e++) {
        float acc = 0.0f;
        for (int j = 0; j <= i; j++)
            acc += p[j] * qkv[base + (size_t)j * w + 2 * (size_t)s->d + e];
        out[e] = acc;
    }
}

/* out: (b t) x d, prob: b x h x t x t, qkv: (b t) x 3d. */
KERNEL void train_attn_fwd(const sim_launch_t *launch, void **params)
{
    float *out = arg_ptr(params, 0), *prob = arg_ptr(params, 1);
    const float *qkv = arg_ptr(params, 2);
    attn_shape_t s = attn_args(params, 3);
    size_t n = (size_t)s.b * s.t, np = (size_t)s.b * s.h * s.t * s.t;

    touch(qkv, n * 3 * s.d, RD);
    touch(out, n * s.d, WR);
    touch(prob, np, WR);
    sim_kernel_cost(4.0 * np * s.hd, 4.0 * (4.0 * n * s.d + np));
    for (int bi = 0; bi < s.b; bi++)
        for (int c = 0; c < s.h; c++)
            for (int i = 0; i < s.t; i++)
                attn_row(out + ((size_t)bi * s.t + i) * s.d + (size_t)c * s.hd,
                         prob + (((size_t)bi * s.h + c) * s.t + i) * s.t, qkv, &s, bi, c, i);
}

/*
 * Row i: dp[j] = dout_i . v_j, ds[j] = p[j] * (dp[j] - sum over j' <= i of p[j'] dp[j']) for
 * j <= i (0 beyond), dq_i = scale * sum over j <= i, in increasing j, of ds[j] * k_j.
 */
static void attn_bwd_q_row(float *restrict dqkv, float *restrict ds, const float *restrict dout,
                           const float *restrict qkv, const float *restrict p,
                           const attn_shape_t *s, int bi, int c, int i)
{
    size_t w = 3 * (size_t)s->d, base = (size_t)bi * s->t * w + (size_t)c * s->hd;
    const float *dor = dout + ((size_t)bi * s->t + i) * s->d + (size_t)c * s->hd;
    float dot = 0.0f;
    for (int j = 0; j <= i; j++) {
        ds[j] = dotn(dor, qkv + base + (size_t)j * w + 2 * (size_t)s->d, s->hd);
        dot += p[j] * ds[j];
    }
    for (int j = 0; j < s->t; j++)
        ds[j] = j <= i ? p[j] * (ds[j] - dot) : 0.0f;
    for (int e = 0; e < s->hd; e++) {
        float acc = 0.0f;
        for (int j = 0; j <= i; j++)
            acc += ds[j] * qkv[base + (size_t)j * w + s->d + e];
        dqkv[base + (size_t)i * w + e] = acc * s->scale;
    }
}

/* Writes the q columns of dqkv and ds (b x h x t x t). */
KERNEL void train_attn_bwd_q(const sim_launch_t *launch, void **params)
{
    float *dqkv = arg_ptr(params, 0), *ds = arg_ptr(params, 1);
    const float *dout = arg_ptr(params, 2), *qkv = arg_ptr(params, 3);
    const float *prob = arg_ptr(params, 4);
    attn_shape_t s = attn_args(params, 5);
    size_t n = (size_t)s.b * s.t, np = (size_t)s.b * s.h * s.t * s.t;

    touch(dout, n * s.d, RD);
    touch(qkv, n * 3 * s.d, RD);
    touch(prob, np, RD);
    touch(dqkv, n * 3 * s.d, WR);
    touch(ds, np, WR);
    sim_kernel_cost(4.0 * np * s.hd, 4.0 * (5.0 * n * s.d + 2.0 * np));
    for (int bi = 0; bi < s.b; bi++)
        for (int c = 0; c < s.h; c++)
            for (int i = 0; i < s.t; i++) {
                size_t row = (((size_t)bi * s.h + c) * s.t + i) * s.t;
                attn_bwd_q_row(dqkv, ds + row, dout, qkv, prob + row, &s, bi, c, i);
            }
}

/*
 * Column j: dk_j = scale * sum over i >= j of ds[i][j] q_i, dv_j = sum over i >= j of
 * p[i][j] dout_i, both in increasing i.
 */
static void attn_bwd_kv_col(float *restrict dqkv, const float *restrict ds,
                            const float *restrict dout, const float *restrict qkv,
                            const float *restrict p, const attn_shape_t *s, int bi, int c, int j)
{
    size_t w = 3 * (size_t)s->d, base = (size_t)bi * s->t * w + (size_t)c * s->hd;
    const float *dob = dout + (size_t)bi * s->t * s->d + (size_t)c * s->hd;
    for (int e = 0; e < s->hd; e++) {
        float dk = 0.0f, dv = 0.0f;
        for (int i = j; i < s->t; i++) {
            dk += ds[(size_t)i * s->t + j] * qkv[base + (size_t)i * w + e];
            dv += p[(size_t)i * s->t + j] * dob[(size_t)i * s->d + e];
        }
        dqkv[base + (size_t)j * w + s->d + e] = dk * s->scale;
        dqkv[base + (size_t)j * w + 2 * (size_t)s->d + e] = dv;
    }
}

/* Writes the k and v columns of dqkv. */
KERNEL void train_attn_bwd_kv(const sim_launch_t *launch, void **params)
{
    float *dqkv = arg_ptr(params, 0);
    const float *ds = arg_ptr(params, 1), *dout = arg_ptr(params, 2);
    const float *qkv = arg_ptr(params, 3), *prob = arg_ptr(params, 4);
    attn_shape_t s = attn_args(params, 5);
    size_t n = (size_t)s.b * s.t, np = (size_t)s.b * s.h * s.t * s.t;

    touch(ds, np, RD);
    touch(dout, n * s.d, RD);
    touch(qkv, n * 3 * s.d, RD);
    touch(prob, np, RD);
    touch(dqkv, n * 3 * s.d, WR);
    sim_kernel_cost(4.0 * np * s.hd, 4.0 * (6.0 * n * s.d + 2.0 * np));
    for (int bi = 0; bi < s.b; bi++)
        for (int c = 0; c < s.h; c++) {
            size_t head = ((size_t)bi * s.h + c) * s.t * s.t;
            for (int j = 0; j < s.t; j++)
                attn_bwd_kv_col(dqkv, ds + head, dout, qkv, prob + head, &s, bi, c, j);
        }
}

/* ---------------------------------------------------------------- GELU (tanh form) */

#define GELU_C 0.7978845608f /* sqrt(2 / pi) */
#define GELU_A 0.044715f

/* y = 0.5 x (1 + tanh(c (x + a x^3))). */
KERNEL void train_gelu_fwd(const sim_launch_t *launch, void **params)
{
    float *y = arg_ptr(params, 0);
    const float *x = arg_ptr(params, 1);
    int n = arg_int(params, 2);

    touch(x, (size_t)n, RD);
    touch(y, (size_t)n, WR);
    sim_kernel_cost(10.0 * n, 8.0 * n);
    for (int i = 0; i < n; i++) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(GELU_C * (v + GELU_A * v * v * v)));
    }
}

/* dx = dy * (0.5 (1 + th) + 0.5 x (1 - th^2) c (1 + 3 a x^2)), th = tanh(c (x + a x^3)). */
KERNEL void train_gelu_bwd(const sim_launch_t *launch, void **params)
{
    float *dx = arg_ptr(params, 0);
    const float *dy = arg_ptr(params, 1), *x = arg_ptr(params, 2);
    int n = arg_int(params, 3);

    touch(dy, (size_t)n, RD);
    touch(x, (size_t)n, RD);
    touch(dx, (size_t)n, WR);
    sim_kernel_cost(16.0 * n, 12.0 * n);
    for (int i = 0; i < n; i++) {
        float v = x[i];
        float th = tanhf(GELU_C * (v + GELU_A * v * v * v));
        float dg = 0.5f * (1.0f + th) + 0.5f * v * (1.0f - th * th) * GELU_C *
                   (1.0f + 3.0f * GELU_A * v * v);
        dx[i] = dy[i] * dg;
    }
}

/* ---------------------------------------------------------------- loss */

/*
 * Softmax cross-entropy of each row of logits (n x v) against targets: losses[i] =
 * log(sum_j exp(l_j - max)) - (l_t - max); dlogits[i, j] = (softmax_j - [j == t]) / n.
 */
KERNEL void train_xent(const sim_launch_t *launch, void **params)
{
    float *dlogits = arg_ptr(params, 0), *losses = arg_ptr(params, 1);
    const float *logits = arg_ptr(params, 2);
    const int32_t *tgt = arg_ptr(params, 3);
    int n = arg_int(params, 4), v = arg_int(params, 5);

    touch(logits, (size_t)n * v, RD);
    touch(tgt, (size_t)n, RD);
    touch(dlogits, (size_t)n * v, WR);
    touch(losses, (size_t)n, WR);
    sim_kernel_cost(6.0 * n * v, 8.0 * n * v);
    float inv_n = 1.0f / (float)n;
    for (int i = 0; i < n; i++) {
        const float *l = logits + (size_t)i * v;
        float *dl = dlogits + (size_t)i * v;
        float mx = -INFINITY, sum = 0.0f;
        for (int j = 0; j < v; j++)
            mx = l[j] > mx ? l[j] : mx;
        for (int j = 0; j < v; j++)
            sum += expf(l[j] - mx);
        for (int j = 0; j < v; j++)
            dl[j] = (expf(l[j] - mx) / sum - (j == tgt[i] ? 1.0f : 0.0f)) * inv_n;
        losses[i] = logf(sum) - (l[tgt[i]] - mx);
    }
}

/* loss[0] = (sum over i, in increasing i, of losses[i]) / n. */
KERNEL void train_loss_mean(const sim_launch_t *launch, void **params)
{
    float *loss = arg_ptr(params, 0);
    const float *losses = arg_ptr(params, 1);
    int n = arg_int(params, 2);

    touch(losses, (size_t)n, RD);
    touch(loss, 1, WR);
    sim_kernel_cost(n, 4.0 * n + 4.0);
    float s = 0.0f;
    for (int i = 0; i < n; i++)
        s += losses[i];
    loss[0] = s / (float)n;
}

/* ---------------------------------------------------------------- optimiser */

/*
 * Adam: m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2, p -= lr (m c1) / (sqrt(v c2) + eps),
 * where c1 and c2 are the bias corrections 1 / (1 - b^t) computed by the caller.
 */
KERNEL void train_adam(const sim_launch_t *launch, void **params)
{
    float *restrict p = arg_ptr(params, 0);
    const float *restrict g = arg_ptr(params, 1);
    float *restrict m = arg_ptr(params, 2), *restrict v = arg_ptr(params, 3);
    uint64_t n = arg_u64(params, 4);
    float lr = arg_f32(params, 5), b1 = arg_f32(params, 6), b2 = arg_f32(params, 7);
    float eps = arg_f32(params, 8), c1 = arg_f32(params, 9), c2 = arg_f32(params, 10);

    touch(g, n, RD);
    touch(p, n, RW);
    touch(m, n, RW);
    touch(v, n, RW);
    sim_kernel_cost(12.0 * (double)n, 28.0 * (double)n);
    for (uint64_t i = 0; i < n; i++) {
        float gi = g[i];
        float mi = b1 * m[i] + (1.0f - b1) * gi;
        float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        p[i] -= lr * (mi * c1) / (sqrtf(vi * c2) + eps);
    }
}
