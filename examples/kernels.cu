// SPDX-License-Identifier: MIT
//
// kernels.cu - the CUDA kernels of examples/train.py, a small GPT-style decoder trained with Adam.
//
// Compiled to PTX (examples/kernels.ptx, checked in) with `nvcc -ptx -arch=compute_80`; train.py
// loads that text with cuModuleLoadData and launches each entry with the grid and block given
// next to it here.  examples/kernels_sim.c holds the same kernels as host functions for the
// simulator, with the same names and arguments.
//
// Every kernel is deterministic: each output element is produced by one thread (or by one
// block through a fixed tree reduction in shared memory), never by atomics, so a run on the
// same GPU and driver is reproducible bit for bit.  All matrices are row-major float32.

#include <stdint.h>

#define TILE 16       // matrix-product tiles: blockDim (16, 16)
#define ROW_THREADS 256 // row kernels (layer norm, cross-entropy): one block of 256 per row

// ------------------------------------------------------------------ initialisation

// splitmix64's finaliser, the counter-based generator shared with kernels_sim.c and train.py.
__device__ static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// p[i] = uniform in [-a, a): the top 24 bits of mix64(seed + i), centred, times a / 2^23.
// Exact integer arithmetic and one rounding, so the values are those of the simulator.
// Grid-stride: any 1-D grid of 256-thread blocks.
extern "C" __global__ void train_init_uniform(float *p, unsigned long long n,
                                              unsigned long long seed, float a)
{
    float k = a * 0x1p-23f;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        p[i] = __fmul_rn((float)((int32_t)(mix64(seed + i) >> 40) - (1 << 23)), k);
}

// ------------------------------------------------------------------ embeddings

// x[i, :] = wte[tok[i], :] + wpe[i % t, :]; one thread per element of x (n * d).
extern "C" __global__ void train_embed_fwd(float *x, const float *wte, const float *wpe,
                                           const int *tok, int n, int t, int d)
{
    long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (e >= (long long)n * d)
        return;
    int i = (int)(e / d), j = (int)(e % d);
    x[e] = wte[(long long)tok[i] * d + j] + wpe[(long long)(i % t) * d + j];
}

// dwte[v, j] = sum over i with tok[i] == v, in increasing i, of dx[i, j]; one thread per
// element of dwte (vocab * d), so rows of tokens absent from the batch are written as zero.
extern "C" __global__ void train_embed_bwd_tok(float *dwte, const float *dx, const int *tok,
                                               int n, int d, int vocab)
{
    long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (e >= (long long)vocab * d)
        return;
    int v = (int)(e / d), j = (int)(e % d);
    float acc = 0.0f;
    for (int i = 0; i < n; i++)
        if (tok[i] == v)
            acc += dx[(long long)i * d + j];
    dwte[e] = acc;
}

// dwpe[p, j] = sum over rows r = p, p + t, ... < n of dx[r, j]; one thread per element (t * d).
extern "C" __global__ void train_embed_bwd_pos(float *dwpe, const float *dx, int n, int t, int d)
{
    long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (e >= (long long)t * d)
        return;
    int p = (int)(e / d), j = (int)(e % d);
    float acc = 0.0f;
    for (int r = p; r < n; r += t)
        acc += dx[(long long)r * d + j];
    dwpe[e] = acc;
}

// ------------------------------------------------------------------ block reductions

// Sum of v over the block (blockDim.x == ROW_THREADS), by a fixed tree: deterministic.
// Every thread gets the result.  buf has ROW_THREADS floats.
__device__ static float block_sum(float v, float *buf)
{
    buf[threadIdx.x] = v;
    __syncthreads();
    for (int s = ROW_THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            buf[threadIdx.x] += buf[threadIdx.x + s];
        __syncthreads();
    }
    float r = buf[0];
    __syncthreads();
    return r;
}

// Maximum of v over the block, as block_sum.
__device__ static float block_max(float v, float *buf)
{
    buf[threadIdx.x] = v;
    __syncthreads();
    for (int s = ROW_THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            buf[threadIdx.x] = fmaxf(buf[threadIdx.x], buf[threadIdx.x + s]);
        __syncthreads();
    }
    float r = buf[0];
    __syncthreads();
    return r;
}

// ------------------------------------------------------------------ layer norm

// y = (x - mean) * rstd * g + b per row, rstd = 1 / sqrt(var + 1e-5); saves mean and rstd.
// Grid (n), block (ROW_THREADS).
extern "C" __global__ void train_layernorm_fwd(float *y, float *mean, float *rstd, const float *x,
                                               const float *g, const float *b, int n, int d)
{
    __shared__ float buf[ROW_THREADS];
    const float *xr = x + (long long)blockIdx.x * d;
    float *yr = y + (long long)blockIdx.x * d;
    float s = 0.0f;
    for (int j = threadIdx.x; j < d; j += ROW_THREADS)
        s += xr[j];
    float mu = block_sum(s, buf) / (float)d;
    float q = 0.0f;
    for (int j = threadIdx.x; j < d; j += ROW_THREADS)
        q += (xr[j] - mu) * (xr[j] - mu);
    float rs = 1.0f / sqrtf(block_sum(q, buf) / (float)d + 1e-5f);
    for (int j = threadIdx.x; j < d; j += ROW_THREADS)
        yr[j] = (xr[j] - mu) * rs * g[j] + b[j];
    if (threadIdx.x == 0) {
        mean[blockIdx.x] = mu;
        rstd[blockIdx.x] = rs;
    }
}

// With xhat = (x - mean) * rstd and u = dy * g: dx = dres + rstd * (u - mean(u) - xhat *
// mean(u * xhat)), dres optional (NULL).  Grid (n), block (ROW_THREADS).
extern "C" __global__ void train_layernorm_bwd_x(float *dx, const float *dy, const float *x,
                                                 const float *g, const float *mean,
                                                 const float *rstd, const float *dres, int n,
                                                 int d)
{
    __shared__ float buf[ROW_THREADS];
    long long off = (long long)blockIdx.x * d;
    float mu = mean[blockIdx.x], rs = rstd[blockIdx.x];
    float su = 0.0f, sux = 0.0f;
    for (int j = threadIdx.x; j < d; j += ROW_THREADS) {
        float u = dy[off + j] * g[j];
        su += u;
        sux += u * ((x[off + j] - mu) * rs);
    }
    float mu_u = block_sum(su, buf) / (float)d;
    float mu_ux = block_sum(sux, buf) / (float)d;
    for (int j = threadIdx.x; j < d; j += ROW_THREADS) {
        float xh = (x[off + j] - mu) * rs;
        float v = rs * (dy[off + j] * g[j] - mu_u - xh * mu_ux);
        dx[off + j] = dres ? dres[off + j] + v : v;
    }
}

// dg[j] = sum_i dy[i, j] * xhat[i, j], db[j] = sum_i dy[i, j]; one thread per column j.
extern "C" __global__ void train_layernorm_bwd_params(float *dg, float *db, const float *dy,
                                                      const float *x, const float *mean,
                                                      const float *rstd, int n, int d)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= d)
        return;
    float sg = 0.0f, sb = 0.0f;
    for (int i = 0; i < n; i++) {
        float v = dy[(long long)i * d + j];
        sg += v * ((x[(long long)i * d + j] - mean[i]) * rstd[i]);
        sb += v;
    }
    dg[j] = sg;
    db[j] = sb;
}

// ------------------------------------------------------------------ matrix products

// y = x @ w (+ bias[j]) (+ res[i, j]); x: n x k, w: k x m.  Grid (ceil(m/16), ceil(n/16)),
// block (16, 16): thread (tx, ty) of block (bx, by) owns y[by * 16 + ty, bx * 16 + tx].
extern "C" __global__ void train_matmul_fwd(float *y, const float *x, const float *w,
                                            const float *bias, const float *res, int n, int k,
                                            int m)
{
    __shared__ float xs[TILE][TILE + 1], ws[TILE][TILE + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < k; k0 += TILE) {
        xs[ty][tx] = (row < n && k0 + tx < k) ? x[(long long)row * k + k0 + tx] : 0.0f;
        ws[ty][tx] = (k0 + ty < k && col < m) ? w[(long long)(k0 + ty) * m + col] : 0.0f;
        __syncthreads();
        for (int q = 0; q < TILE; q++)
            acc += xs[ty][q] * ws[q][tx];
        __syncthreads();
    }
    if (row < n && col < m) {
        if (bias)
            acc += bias[col];
        if (res)
            acc += res[(long long)row * m + col];
        y[(long long)row * m + col] = acc;
    }
}

// dx = dy @ w^T; dy: n x m, w: k x m, dx: n x k.  Grid (ceil(k/16), ceil(n/16)), block (16, 16):
// thread (tx, ty) owns dx[by * 16 + ty, bx * 16 + tx].
extern "C" __global__ void train_matmul_bwd_x(float *dx, const float *dy, const float *w, int n,
                                              int k, int m)
{
    __shared__ float ds[TILE][TILE + 1], ws[TILE][TILE + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    int wrow = blockIdx.x * TILE + ty; // the row of w this thread loads
    float acc = 0.0f;
    for (int m0 = 0; m0 < m; m0 += TILE) {
        ds[ty][tx] = (row < n && m0 + tx < m) ? dy[(long long)row * m + m0 + tx] : 0.0f;
        ws[ty][tx] = (wrow < k && m0 + tx < m) ? w[(long long)wrow * m + m0 + tx] : 0.0f;
        __syncthreads();
        for (int q = 0; q < TILE; q++)
            acc += ds[ty][q] * ws[tx][q];
        __syncthreads();
    }
    if (row < n && col < k)
        dx[(long long)row * k + col] = acc;
}

// dw = x^T @ dy; x: n x k, dy: n x m, dw: k x m (written, not accumulated).
// Grid (ceil(m/16), ceil(k/16)), block (16, 16): thread (tx, ty) owns dw[by * 16 + ty, bx * 16 + tx].
extern "C" __global__ void train_matmul_bwd_w(float *dw, const float *x, const float *dy, int n,
                                              int k, int m)
{
    __shared__ float xs[TILE][TILE + 1], ds[TILE][TILE + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    int xcol = blockIdx.y * TILE + tx; // the column of x this thread loads
    float acc = 0.0f;
    for (int i0 = 0; i0 < n; i0 += TILE) {
        xs[ty][tx] = (i0 + ty < n && xcol < k) ? x[(long long)(i0 + ty) * k + xcol] : 0.0f;
        ds[ty][tx] = (i0 + ty < n && col < m) ? dy[(long long)(i0 + ty) * m + col] : 0.0f;
        __syncthreads();
        for (int q = 0; q < TILE; q++)
            acc += xs[q][ty] * ds[q][tx];
        __syncthreads();
    }
    if (row < k && col < m)
        dw[(long long)row * m + col] = acc;
}

// db[j] = sum over rows i, in increasing i, of dy[i, j]; one thread per column.
extern "C" __global__ void train_bias_bwd(float *db, const float *dy, int n, int m)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= m)
        return;
    float s = 0.0f;
    for (int i = 0; i < n; i++)
        s += dy[(long long)i * m + j];
    db[j] = s;
}

// ------------------------------------------------------------------ attention
//
// Causal self-attention over b sequences of t tokens and h heads of hd = d / h values.  qkv is
// (b t) x 3d with q, k and v side by side; head c uses columns c * hd .. c * hd + hd - 1 of each.
// prob and ds are b x h x t x t.  One thread per (sequence, head, row): grid (ceil(b h t / 64)),
// block (64).

// prob[i, j] = softmax over j <= i of q_i . k_j / sqrt(hd) (0 for j > i); out_i = sum_j prob v_j.
extern "C" __global__ void train_attn_fwd(float *out, float *prob, const float *qkv, int b, int t,
                                          int h, int d)
{
    int id = blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= b * h * t)
        return;
    int i = id % t, c = (id / t) % h, bi = id / (t * h);
    int hd = d / h;
    float scale = 1.0f / sqrtf((float)hd);
    long long w = 3LL * d, base = (long long)bi * t * w + (long long)c * hd;
    const float *q = qkv + base + i * w;
    float *p = prob + (long long)id * t;
    float mx = -INFINITY, sum = 0.0f;
    for (int j = 0; j <= i; j++) {
        const float *kj = qkv + base + j * w + d;
        float s = 0.0f;
        for (int e = 0; e < hd; e++)
            s += q[e] * kj[e];
        p[j] = s * scale;
        mx = fmaxf(mx, p[j]);
    }
    for (int j = 0; j <= i; j++) {
        p[j] = expf(p[j] - mx);
        sum += p[j];
    }
    for (int j = 0; j <= i; j++)
        p[j] = p[j] / sum;
    for (int j = i + 1; j < t; j++)
        p[j] = 0.0f;
    float *o = out + ((long long)bi * t + i) * d + (long long)c * hd;
    for (int e = 0; e < hd; e++) {
        float acc = 0.0f;
        for (int j = 0; j <= i; j++)
            acc += p[j] * qkv[base + j * w + 2LL * d + e];
        o[e] = acc;
    }
}

// Row i: dp_j = dout_i . v_j, ds[i, j] = p_ij (dp_j - sum_j' p_ij' dp_j') for j <= i (0 beyond),
// dq_i = sum_j ds[i, j] k_j / sqrt(hd).  Writes the q columns of dqkv, and ds.
extern "C" __global__ void train_attn_bwd_q(float *dqkv, float *ds, const float *dout,
                                            const float *qkv, const float *prob, int b, int t,
                                            int h, int d)
{
    int id = blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= b * h * t)
        return;
    int i = id % t, c = (id / t) % h, bi = id / (t * h);
    int hd = d / h;
    float scale = 1.0f / sqrtf((float)hd);
    long long w = 3LL * d, base = (long long)bi * t * w + (long long)c * hd;
    const float *dor = dout + ((long long)bi * t + i) * d + (long long)c * hd;
    const float *p = prob + (long long)id * t;
    float *dsr = ds + (long long)id * t;
    float dot = 0.0f;
    for (int j = 0; j <= i; j++) {
        const float *vj = qkv + base + j * w + 2LL * d;
        float s = 0.0f;
        for (int e = 0; e < hd; e++)
            s += dor[e] * vj[e];
        dsr[j] = s;
        dot += p[j] * s;
    }
    for (int j = 0; j < t; j++)
        dsr[j] = j <= i ? p[j] * (dsr[j] - dot) : 0.0f;
    for (int e = 0; e < hd; e++) {
        float acc = 0.0f;
        for (int j = 0; j <= i; j++)
            acc += dsr[j] * qkv[base + j * w + d + e];
        dqkv[base + i * w + e] = acc * scale;
    }
}

// Column j (id's row index read as j): dk_j = sum_{i >= j} ds[i, j] q_i / sqrt(hd),
// dv_j = sum_{i >= j} p_ij dout_i.  Writes the k and v columns of dqkv.
extern "C" __global__ void train_attn_bwd_kv(float *dqkv, const float *ds, const float *dout,
                                             const float *qkv, const float *prob, int b, int t,
                                             int h, int d)
{
    int id = blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= b * h * t)
        return;
    int j = id % t, c = (id / t) % h, bi = id / (t * h);
    int hd = d / h;
    float scale = 1.0f / sqrtf((float)hd);
    long long w = 3LL * d, base = (long long)bi * t * w + (long long)c * hd;
    long long head = ((long long)bi * h + c) * t * t;
    const float *dob = dout + (long long)bi * t * d + (long long)c * hd;
    for (int e = 0; e < hd; e++) {
        float dk = 0.0f, dv = 0.0f;
        for (int i = j; i < t; i++) {
            dk += ds[head + (long long)i * t + j] * qkv[base + i * w + e];
            dv += prob[head + (long long)i * t + j] * dob[(long long)i * d + e];
        }
        dqkv[base + j * w + d + e] = dk * scale;
        dqkv[base + j * w + 2LL * d + e] = dv;
    }
}

// ------------------------------------------------------------------ GELU (tanh form)

#define GELU_C 0.7978845608f // sqrt(2 / pi)
#define GELU_A 0.044715f

// y = 0.5 x (1 + tanh(c (x + a x^3))); one thread per element.
extern "C" __global__ void train_gelu_fwd(float *y, const float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float v = x[i];
    y[i] = 0.5f * v * (1.0f + tanhf(GELU_C * (v + GELU_A * v * v * v)));
}

// dx = dy * (0.5 (1 + th) + 0.5 x (1 - th^2) c (1 + 3 a x^2)); one thread per element.
extern "C" __global__ void train_gelu_bwd(float *dx, const float *dy, const float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float v = x[i];
    float th = tanhf(GELU_C * (v + GELU_A * v * v * v));
    float dg = 0.5f * (1.0f + th) + 0.5f * v * (1.0f - th * th) * GELU_C *
               (1.0f + 3.0f * GELU_A * v * v);
    dx[i] = dy[i] * dg;
}

// ------------------------------------------------------------------ loss

// losses[i] = log(sum_j exp(l_ij - max)) - (l_it - max); dlogits = (softmax - onehot) / n.
// Grid (n), block (ROW_THREADS).
extern "C" __global__ void train_xent(float *dlogits, float *losses, const float *logits,
                                      const int *targets, int n, int v)
{
    __shared__ float buf[ROW_THREADS];
    const float *l = logits + (long long)blockIdx.x * v;
    float *dl = dlogits + (long long)blockIdx.x * v;
    int tgt = targets[blockIdx.x];
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < v; j += ROW_THREADS)
        mx = fmaxf(mx, l[j]);
    mx = block_max(mx, buf);
    float s = 0.0f;
    for (int j = threadIdx.x; j < v; j += ROW_THREADS)
        s += expf(l[j] - mx);
    float sum = block_sum(s, buf);
    float inv_n = 1.0f / (float)n;
    for (int j = threadIdx.x; j < v; j += ROW_THREADS)
        dl[j] = (expf(l[j] - mx) / sum - (j == tgt ? 1.0f : 0.0f)) * inv_n;
    if (threadIdx.x == 0)
        losses[blockIdx.x] = logf(sum) - (l[tgt] - mx);
}

// loss[0] = (sum over i, in increasing i, of losses[i]) / n.  Grid (1), block (1).
extern "C" __global__ void train_loss_mean(float *loss, const float *losses, int n)
{
    if (blockIdx.x != 0 || threadIdx.x != 0)
        return;
    float s = 0.0f;
    for (int i = 0; i < n; i++)
        s += losses[i];
    loss[0] = s / (float)n;
}

// ------------------------------------------------------------------ optimiser

// Adam with bias corrections c1 = 1 / (1 - b1^t), c2 = 1 / (1 - b2^t) from the caller:
// m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2, p -= lr (m c1) / (sqrt(v c2) + eps).
// Grid-stride: any 1-D grid of 256-thread blocks.
extern "C" __global__ void train_adam(float *p, const float *g, float *m, float *v,
                                      unsigned long long n, float lr, float b1, float b2,
                                      float eps, float c1, float c2)
{
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        float gi = g[i];
        float mi = b1 * m[i] + (1.0f - b1) * gi;
        float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
        m[i] = mi;
        v[i] = vi;
        p[i] -= lr * (mi * c1) / (sqrtf(vi * c2) + eps);
    }
}
