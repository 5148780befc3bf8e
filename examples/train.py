#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""train.py - a real, deterministic training job on the CUDA Driver API, for a GPU or sim/.

A GPT-style decoder (token and position embeddings, N blocks of causal self-attention and a
GELU MLP, each behind a layer norm and a residual, a final layer norm, a separate output head,
softmax cross-entropy) trained with Adam on a synthetic, learnable token stream.  fp32.

Python 3 standard library only: the driver is reached through ctypes (libcuda.so.1, found by
the dynamic loader as any CUDA program finds it), the kernels are the PTX text of
examples/kernels.ptx loaded with cuModuleLoadData and launched with cuLaunchKernel on the job's
own stream.  On the simulator each PTX entry runs as the host function of the same name in
build/examples/kernels_sim.so (see tools/elixir-sim.c).

Memory is allocated as a framework does it: parameters at start-up, each gradient at the first
backward pass that produces it, the Adam moments at the first optimiser step, and activations in
the forward pass, freed in the backward pass once used.  --alloc per-tensor gives every tensor
its own cuMemAlloc; --alloc pooled sub-allocates from a few large segments through a caching
allocator shaped like PyTorch's.  Both give the same numbers bit for bit.

Output (an interface): one line `step N loss X` per step (N from 1), and as the last line
`digest <sha256 hex>` over all parameters in a fixed order.  A summary goes to stderr.
--check (tiny models) replays the same steps in a pure-Python float64 reference and verifies
that the initial weights are identical, the first gradients agree and every loss agrees within
1e-5.
"""

import argparse
import array
import ctypes
import hashlib
import math
import os
import re
import sys
import time

PRESETS = {
    # layers, width, heads, seq, batch, vocab, steps, learning rate
    "tiny": dict(layers=2, width=16, heads=2, seq=8, batch=2, vocab=32, steps=12, lr=1e-2),
    "small": dict(layers=4, width=64, heads=4, seq=16, batch=4, vocab=128, steps=12, lr=3e-3),
    "demo": dict(layers=5, width=2048, heads=16, seq=4, batch=2, vocab=8192, steps=8, lr=1e-5),
}

ADAM_B1, ADAM_B2, ADAM_EPS = 0.9, 0.999, 1e-8
INIT_STD = 0.02
CHECK_TOLERANCE = 1e-5      # on each loss (float32 kernels against the float64 reference)
CHECK_GRAD_TOLERANCE = 1e-4 # on step-1 gradients, relative to each tensor's largest magnitude
CHECK_MAX_PARAMS = 200_000

M64 = (1 << 64) - 1


def f32(x):
    """x rounded to the nearest float32, as a Python float."""
    return array.array("f", [x])[0]


# ------------------------------------------------------------------ random numbers and data

def mix64(z):
    """splitmix64's finaliser; the same function as mix64() in the kernels."""
    z = (z + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


class Rng:
    """A small counter-based generator, identical on every Python version."""

    def __init__(self, seed):
        self.key = mix64(seed & M64)
        self.count = 0

    def below(self, n):
        self.count += 1
        return mix64((self.key + self.count) & M64) % n


class TokenStream:
    """A synthetic, learnable token stream.

    Two cycles of `period` distinct tokens are drawn from the vocabulary.  Each sequence of a
    batch walks one of them from a random offset, so the next token is a function of the
    current one and of which cycle the sequence is on, which the context tells.
    """

    CYCLES = 2

    def __init__(self, vocab, seq, seed):
        self.rng = Rng(seed ^ 0x5EED)
        self.period = min(vocab, seq)
        self.cycles = []
        for _ in range(self.CYCLES):
            pool = list(range(vocab))
            for i in range(self.period):  # a partial Fisher-Yates shuffle
                j = i + self.rng.below(vocab - i)
                pool[i], pool[j] = pool[j], pool[i]
            self.cycles.append(pool[: self.period])

    def batch(self, batch, seq):
        """Inputs and targets of one step, each a list of batch * seq token ids."""
        inputs, targets = [], []
        for _ in range(batch):
            cycle = self.cycles[self.rng.below(self.CYCLES)]
            start = self.rng.below(self.period)
            row = [cycle[(start + i) % self.period] for i in range(seq + 1)]
            inputs += row[:-1]
            targets += row[1:]
        return inputs, targets


# ------------------------------------------------------------------ the model's parameters

def param_specs(cfg):
    """(name, shape, init) for every parameter, in the fixed order of init seeds and digest.

    init is ("uniform", half-width), ("ones",) or ("zeros",).  Uniform weights have the
    standard deviation INIT_STD; the two projections back into the residual stream are scaled
    by 1 / sqrt(2 * layers) as in GPT-2.
    """
    d, f, v, t = cfg.width, 4 * cfg.width, cfg.vocab, cfg.seq
    a = INIT_STD * math.sqrt(3.0)
    a_res = a / math.sqrt(2.0 * cfg.layers)
    specs = [("wte", (v, d), ("uniform", a)), ("wpe", (t, d), ("uniform", a))]
    for l in range(cfg.layers):
        p = "h%d." % l
        specs += [
            (p + "ln1.g", (d,), ("ones",)), (p + "ln1.b", (d,), ("zeros",)),
            (p + "qkv.w", (d, 3 * d), ("uniform", a)), (p + "qkv.b", (3 * d,), ("zeros",)),
            (p + "o.w", (d, d), ("uniform", a_res)), (p + "o.b", (d,), ("zeros",)),
            (p + "ln2.g", (d,), ("ones",)), (p + "ln2.b", (d,), ("zeros",)),
            (p + "fc.w", (d, f), ("uniform", a)), (p + "fc.b", (f,), ("zeros",)),
            (p + "proj.w", (f, d), ("uniform", a_res)), (p + "proj.b", (d,), ("zeros",)),
        ]
    specs += [("lnf.g", (d,), ("ones",)), ("lnf.b", (d,), ("zeros",)),
              ("head.w", (d, v), ("uniform", a))]
    return specs


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def init_seed(seed, index):
    """The generator key of parameter number `index`."""
    return mix64(((seed & 0xFFFFFFFF) << 20) + index)


def init_values(init, n, key):
    """The initial values of a parameter, computed on the host exactly as the kernel does."""
    if init[0] == "ones":
        return [1.0] * n
    if init[0] == "zeros":
        return [0.0] * n
    k = f32(init[1]) * 2.0 ** -23
    vals = [float((mix64((key + i) & M64) >> 40) - (1 << 23)) * k for i in range(n)]
    return array.array("f", vals).tolist()


# ------------------------------------------------------------------ the driver

class CudaError(RuntimeError):
    pass


CU_VOIDP = ctypes.c_void_p
CU_PTR = ctypes.c_uint64  # CUdeviceptr
U32 = ctypes.c_uint
SIZE = ctypes.c_size_t

# The Driver API entry points this program uses, with their ABI.
DRIVER_API = {
    "cuInit": (U32,),
    "cuDeviceGet": (ctypes.POINTER(ctypes.c_int), ctypes.c_int),
    "cuDeviceGetName": (ctypes.c_char_p, ctypes.c_int, ctypes.c_int),
    "cuDevicePrimaryCtxRetain": (ctypes.POINTER(CU_VOIDP), ctypes.c_int),
    "cuDevicePrimaryCtxRelease_v2": (ctypes.c_int,),
    "cuCtxSetCurrent": (CU_VOIDP,),
    "cuStreamCreate": (ctypes.POINTER(CU_VOIDP), U32),
    "cuStreamSynchronize": (CU_VOIDP,),
    "cuStreamDestroy_v2": (CU_VOIDP,),
    "cuModuleLoadData": (ctypes.POINTER(CU_VOIDP), ctypes.c_char_p),
    "cuModuleGetFunction": (ctypes.POINTER(CU_VOIDP), CU_VOIDP, ctypes.c_char_p),
    "cuModuleUnload": (CU_VOIDP,),
    "cuMemAlloc_v2": (ctypes.POINTER(CU_PTR), SIZE),
    "cuMemFree_v2": (CU_PTR,),
    "cuMemGetInfo_v2": (ctypes.POINTER(SIZE), ctypes.POINTER(SIZE)),
    "cuMemcpyHtoDAsync_v2": (CU_PTR, CU_VOIDP, SIZE, CU_VOIDP),
    "cuMemcpyDtoHAsync_v2": (CU_VOIDP, CU_PTR, SIZE, CU_VOIDP),
    "cuMemsetD32Async": (CU_PTR, U32, SIZE, CU_VOIDP),
    "cuLaunchKernel": (CU_VOIDP, U32, U32, U32, U32, U32, U32, U32, CU_VOIDP,
                       ctypes.POINTER(CU_VOIDP), ctypes.POINTER(CU_VOIDP)),
    "cuGetErrorName": (ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)),
    "cuEventCreate": (ctypes.POINTER(CU_VOIDP), U32),
    "cuEventRecord": (CU_VOIDP, CU_VOIDP),
    "cuEventSynchronize": (CU_VOIDP,),
    "cuEventElapsedTime": (ctypes.POINTER(ctypes.c_float), CU_VOIDP, CU_VOIDP),
    "cuEventDestroy_v2": (CU_VOIDP,),
}


class Driver:
    """The CUDA driver through ctypes; every call is checked and fails with its name."""

    def __init__(self):
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise CudaError("cannot load libcuda.so.1 (%s); on a machine without a GPU run "
                            "through build/bin/elixir-sim" % e) from None
        self.fn = {}
        for name, argtypes in DRIVER_API.items():
            f = getattr(self.lib, name)
            f.argtypes = argtypes
            f.restype = ctypes.c_int
            self.fn[name] = f

    def error_name(self, rc):
        s = ctypes.c_char_p()
        if self.fn["cuGetErrorName"](rc, ctypes.byref(s)) != 0 or not s.value:
            return "CUresult %d" % rc
        return s.value.decode()

    def __call__(self, name, *args):
        rc = self.fn[name](*args)
        if rc != 0:
            raise CudaError("%s failed: %s" % (name, self.error_name(rc)))


# ------------------------------------------------------------------ allocators

class PerTensorAllocator:
    """Every tensor its own cuMemAlloc, every free a cuMemFree (which waits for the device)."""

    def __init__(self, drv):
        self.drv = drv
        self.live = {}
        self.current = self.peak = self.reserved_peak = 0

    def alloc(self, nbytes):
        ptr = CU_PTR()
        self.drv("cuMemAlloc_v2", ctypes.byref(ptr), max(nbytes, 1))
        self.live[ptr.value] = nbytes
        self.current += nbytes
        self.peak = max(self.peak, self.current)
        self.reserved_peak = self.peak
        return ptr.value

    def free(self, ptr):
        self.current -= self.live.pop(ptr)
        self.drv("cuMemFree_v2", ptr)

    def release(self):
        for ptr in list(self.live):
            self.free(ptr)


class Block:
    __slots__ = ("ptr", "size", "small", "prev", "next", "free")

    def __init__(self, ptr, size, small):
        self.ptr, self.size, self.small = ptr, size, small
        self.prev = self.next = None
        self.free = True


class CachingAllocator:
    """Sub-allocation from large cuMemAlloc segments, shaped like PyTorch's caching allocator.

    Requests round up to 512 bytes.  Those of at most 1 MiB come from 2 MiB segments (the small
    pool), those under 10 MiB from 20 MiB segments, larger ones from a segment of their own
    rounded up to 2 MiB (the large pool).  A request takes the smallest cached free block of
    its pool that fits (lowest address on ties) and splits off the rest if it is big enough to
    be useful; a freed block merges with free neighbours of its segment and stays cached.
    Segments are returned to the driver only at exit.  All work is on one stream, so a block
    freed and handed out again is ordered by the stream, as in PyTorch.
    """

    ROUND, SMALL, SMALL_SEGMENT = 512, 1 << 20, 2 << 20
    MID, LARGE_SEGMENT, LARGE_ROUND = 10 << 20, 20 << 20, 2 << 20

    def __init__(self, drv):
        self.drv = drv
        self.segments = []
        self.free_blocks = {True: set(), False: set()}
        self.used = {}
        self.current = self.peak = self.reserved = self.reserved_peak = 0

    def segment_size(self, size):
        if size <= self.SMALL:
            return self.SMALL_SEGMENT
        if size < self.MID:
            return self.LARGE_SEGMENT
        return -(-size // self.LARGE_ROUND) * self.LARGE_ROUND

    def new_segment(self, size, small):
        ptr = CU_PTR()
        seg = self.segment_size(size)
        self.drv("cuMemAlloc_v2", ctypes.byref(ptr), seg)
        self.segments.append(ptr.value)
        self.reserved += seg
        self.reserved_peak = max(self.reserved_peak, self.reserved)
        block = Block(ptr.value, seg, small)
        self.free_blocks[small].add(block)
        return block

    def split(self, block, size):
        rest = block.size - size
        if rest < (self.ROUND if block.small else self.SMALL + 1):
            return
        tail = Block(block.ptr + size, rest, block.small)
        tail.prev, tail.next = block, block.next
        if block.next:
            block.next.prev = tail
        block.next, block.size = tail, size
        self.free_blocks[block.small].add(tail)

    def alloc(self, nbytes):
        size = max(-(-nbytes // self.ROUND) * self.ROUND, self.ROUND)
        small = size <= self.SMALL
        fits = [b for b in self.free_blocks[small] if b.size >= size]
        block = min(fits, key=lambda b: (b.size, b.ptr)) if fits else self.new_segment(size, small)
        self.free_blocks[small].discard(block)
        block.free = False
        self.split(block, size)
        self.used[block.ptr] = (block, nbytes)
        self.current += nbytes
        self.peak = max(self.peak, self.current)
        return block.ptr

    def free(self, ptr):
        block, nbytes = self.used.pop(ptr)
        self.current -= nbytes
        block.free = True
        pool = self.free_blocks[block.small]
        for other in (block.next, block.prev):
            if other is not None and other.free:
                pool.discard(other)
                first, second = (block, other) if other is block.next else (other, block)
                first.size += second.size
                first.next = second.next
                if second.next:
                    second.next.prev = first
                block = first
        pool.add(block)

    def release(self):
        for seg in self.segments:
            self.drv("cuMemFree_v2", seg)
        self.segments, self.used = [], {}
        self.free_blocks = {True: set(), False: set()}


# ------------------------------------------------------------------ kernels

# Argument kinds: p = device pointer (.u64), q = unsigned 64-bit (.u64), i = int (.u32),
# f = float (.f32).  Checked against the .param lists of the PTX at start-up.
KERNELS = {
    "train_init_uniform": "pqqf",
    "train_embed_fwd": "ppppiii",
    "train_embed_bwd_tok": "pppiii",
    "train_embed_bwd_pos": "ppiii",
    "train_layernorm_fwd": "ppppppii",
    "train_layernorm_bwd_x": "pppppppii",
    "train_layernorm_bwd_params": "ppppppii",
    "train_matmul_fwd": "pppppiii",
    "train_matmul_bwd_x": "pppiii",
    "train_matmul_bwd_w": "pppiii",
    "train_bias_bwd": "ppii",
    "train_attn_fwd": "pppiiii",
    "train_attn_bwd_q": "pppppiiii",
    "train_attn_bwd_kv": "pppppiiii",
    "train_gelu_fwd": "ppi",
    "train_gelu_bwd": "pppi",
    "train_xent": "ppppii",
    "train_loss_mean": "ppi",
    "train_adam": "ppppqffffff",
}
PTX_KIND = {"p": ".u64", "q": ".u64", "i": ".u32", "f": ".f32"}
CTYPE = {"p": ctypes.c_uint64, "q": ctypes.c_uint64, "i": ctypes.c_int32, "f": ctypes.c_float}


def ptx_signatures(text):
    """{entry name: [param type, ...]} from PTX text."""
    sigs = {}
    for m in re.finditer(r"\.entry\s+(\w+)\s*\(([^)]*)\)", text):
        sigs[m.group(1)] = re.findall(r"\.param\s+(\.\w+)", m.group(2))
    return sigs


def cdiv(a, b):
    return -(-a // b)


class Kernels:
    """The loaded module; launch(name, grid, block, *args) enqueues on the job's stream."""

    def __init__(self, drv, stream, ptx_path):
        with open(ptx_path, "rb") as f:
            text = f.read()
        sigs = ptx_signatures(text.decode())
        self.drv, self.stream = drv, stream
        self.module = CU_VOIDP()
        drv("cuModuleLoadData", ctypes.byref(self.module), text + b"\0")
        self.funcs = {}
        for name, kinds in KERNELS.items():
            want = [PTX_KIND[k] for k in kinds]
            if sigs.get(name) != want:
                raise CudaError("%s: %s has parameters %s, train.py passes %s"
                                % (ptx_path, name, sigs.get(name), want))
            fn = CU_VOIDP()
            drv("cuModuleGetFunction", ctypes.byref(fn), self.module, name.encode())
            self.funcs[name] = fn
        self.launches = 0

    def launch(self, name, grid, block, *args):
        kinds = KERNELS[name]
        vals = [CTYPE[k](0 if a is None else a) for k, a in zip(kinds, args)]
        assert len(vals) == len(kinds) == len(args), name
        ptrs = (CU_VOIDP * len(vals))(*[ctypes.addressof(v) for v in vals])
        grid = tuple(grid) + (1,) * (3 - len(grid))
        block = tuple(block) + (1,) * (3 - len(block))
        self.drv("cuLaunchKernel", self.funcs[name], *grid, *block, 0, self.stream, ptrs, None)
        self.launches += 1


# ------------------------------------------------------------------ the job on the device

class Tensor:
    __slots__ = ("ptr", "n", "name")

    def __init__(self, ptr, n, name):
        self.ptr, self.n, self.name = ptr, n, name


class Param:
    __slots__ = ("name", "shape", "n", "init", "p", "g", "m", "v")

    def __init__(self, name, shape, init):
        self.name, self.shape, self.n, self.init = name, shape, numel(shape), init
        self.p = self.g = self.m = self.v = None


class Trainer:
    """The model on the device: parameters, forward, backward, Adam, digest."""

    def __init__(self, cfg, drv, alloc, kernels):
        self.cfg, self.drv, self.mem, self.k = cfg, drv, alloc, kernels
        self.stream = kernels.stream
        self.params = [Param(*s) for s in param_specs(cfg)]
        self.by_name = {p.name: p for p in self.params}
        self.loss = self.tensor(1, "loss")
        self.host_loss = ctypes.c_float()
        self.step_no = 0
        for i, p in enumerate(self.params):
            p.p = self.tensor(p.n, p.name)
            self.initialise(p, init_seed(cfg.seed, i))

    # -- memory

    def tensor(self, n, name):
        return Tensor(self.mem.alloc(4 * n), n, name)

    def free(self, *tensors):
        for t in tensors:
            self.mem.free(t.ptr)

    def memset(self, t, word):
        self.drv("cuMemsetD32Async", t.ptr, word, t.n, self.stream)

    def upload_ints(self, values, name):
        t = self.tensor(len(values), name)
        buf = array.array("i", values)
        addr, _ = buf.buffer_info()
        self.drv("cuMemcpyHtoDAsync_v2", t.ptr, addr, 4 * len(values), self.stream)
        return t

    def initialise(self, p, key):
        if p.init[0] == "uniform":
            self.k.launch("train_init_uniform", (min(cdiv(p.n, 256), 65535),), (256,),
                          p.p.ptr, p.n, key, p.init[1])
        else:
            self.memset(p.p, 0x3F800000 if p.init[0] == "ones" else 0)

    def grad(self, name):
        """The gradient buffer of a parameter, allocated when first needed."""
        p = self.by_name[name]
        if p.g is None:
            p.g = self.tensor(p.n, p.name + ".grad")
        return p.g.ptr

    def w(self, name):
        return self.by_name[name].p.ptr

    # -- kernel wrappers (grids as kernels.cu needs them)

    def matmul(self, x, w, bias, res, n, k, m, name):
        y = self.tensor(n * m, name)
        self.k.launch("train_matmul_fwd", (cdiv(m, 16), cdiv(n, 16)), (16, 16),
                      y.ptr, x.ptr, w, bias, res.ptr if res else None, n, k, m)
        return y

    def linear_bwd(self, x, dy, wname, n, k, m):
        """Gradients of y = x @ W (+ b): writes dW (and db), returns a new tensor dx."""
        self.k.launch("train_matmul_bwd_w", (cdiv(m, 16), cdiv(k, 16)), (16, 16),
                      self.grad(wname + ".w"), x.ptr, dy.ptr, n, k, m)
        if wname + ".b" in self.by_name:
            self.k.launch("train_bias_bwd", (cdiv(m, 256),), (256,),
                          self.grad(wname + ".b"), dy.ptr, n, m)
        dx = self.tensor(n * k, "d" + x.name)
        self.k.launch("train_matmul_bwd_x", (cdiv(k, 16), cdiv(n, 16)), (16, 16),
                      dx.ptr, dy.ptr, self.w(wname + ".w"), n, k, m)
        return dx

    def layernorm(self, x, lname, n, d):
        y, mean, rstd = (self.tensor(n * d, lname + ".out"), self.tensor(n, lname + ".mean"),
                         self.tensor(n, lname + ".rstd"))
        self.k.launch("train_layernorm_fwd", (n,), (256,), y.ptr, mean.ptr, rstd.ptr, x.ptr,
                      self.w(lname + ".g"), self.w(lname + ".b"), n, d)
        return y, mean, rstd

    def layernorm_bwd(self, dy, x, mean, rstd, dres, lname, n, d):
        dx = self.tensor(n * d, "d" + x.name)
        self.k.launch("train_layernorm_bwd_x", (n,), (256,), dx.ptr, dy.ptr, x.ptr,
                      self.w(lname + ".g"), mean.ptr, rstd.ptr, dres.ptr if dres else None,
                      n, d)
        self.k.launch("train_layernorm_bwd_params", (cdiv(d, 256),), (256,),
                      self.grad(lname + ".g"), self.grad(lname + ".b"), dy.ptr, x.ptr,
                      mean.ptr, rstd.ptr, n, d)
        return dx

    # -- one step

    def forward_block(self, l, x):
        c = self.cfg
        n, d, h, p = c.batch * c.seq, c.width, c.heads, "h%d." % l
        s = {"x": x}
        s["h1"], s["mean1"], s["rstd1"] = self.layernorm(x, p + "ln1", n, d)
        s["qkv"] = self.matmul(s["h1"], self.w(p + "qkv.w"), self.w(p + "qkv.b"), None,
                               n, d, 3 * d, p + "qkv")
        s["att"] = self.tensor(n * d, p + "att")
        s["prob"] = self.tensor(c.batch * h * c.seq * c.seq, p + "prob")
        self.k.launch("train_attn_fwd", (cdiv(c.batch * h * c.seq, 64),), (64,), s["att"].ptr,
                      s["prob"].ptr, s["qkv"].ptr, c.batch, c.seq, h, d)
        s["x1"] = self.matmul(s["att"], self.w(p + "o.w"), self.w(p + "o.b"), x, n, d, d,
                              p + "x1")
        s["h2"], s["mean2"], s["rstd2"] = self.layernorm(s["x1"], p + "ln2", n, d)
        s["f"] = self.matmul(s["h2"], self.w(p + "fc.w"), self.w(p + "fc.b"), None,
                             n, d, 4 * d, p + "fc")
        s["ga"] = self.tensor(n * 4 * d, p + "gelu")
        self.k.launch("train_gelu_fwd", (cdiv(n * 4 * d, 256),), (256,), s["ga"].ptr,
                      s["f"].ptr, n * 4 * d)
        x2 = self.matmul(s["ga"], self.w(p + "proj.w"), self.w(p + "proj.b"), s["x1"],
                         n, 4 * d, d, p + "x2")
        return x2, s

    def backward_block(self, l, s, dx2):
        """Gradients of block l from dx2 (consumed); frees the block's activations."""
        c = self.cfg
        n, d, h, p = c.batch * c.seq, c.width, c.heads, "h%d." % l
        dga = self.linear_bwd(s["ga"], dx2, p + "proj", n, 4 * d, d)
        self.free(s["ga"])
        df = self.tensor(n * 4 * d, p + "dfc")
        self.k.launch("train_gelu_bwd", (cdiv(n * 4 * d, 256),), (256,), df.ptr, dga.ptr,
                      s["f"].ptr, n * 4 * d)
        self.free(dga, s["f"])
        dh2 = self.linear_bwd(s["h2"], df, p + "fc", n, d, 4 * d)
        self.free(df, s["h2"])
        dx1 = self.layernorm_bwd(dh2, s["x1"], s["mean2"], s["rstd2"], dx2, p + "ln2", n, d)
        self.free(dh2, dx2, s["x1"], s["mean2"], s["rstd2"])
        datt = self.linear_bwd(s["att"], dx1, p + "o", n, d, d)
        self.free(s["att"])
        dqkv = self.tensor(n * 3 * d, p + "dqkv")
        ds = self.tensor(c.batch * h * c.seq * c.seq, p + "dprob")
        grid, args = (cdiv(c.batch * h * c.seq, 64),), (c.batch, c.seq, h, d)
        self.k.launch("train_attn_bwd_q", grid, (64,), dqkv.ptr, ds.ptr, datt.ptr,
                      s["qkv"].ptr, s["prob"].ptr, *args)
        self.k.launch("train_attn_bwd_kv", grid, (64,), dqkv.ptr, ds.ptr, datt.ptr,
                      s["qkv"].ptr, s["prob"].ptr, *args)
        self.free(ds, datt, s["prob"])
        dh1 = self.linear_bwd(s["h1"], dqkv, p + "qkv", n, d, 3 * d)
        self.free(dqkv, s["qkv"], s["h1"])
        dx = self.layernorm_bwd(dh1, s["x"], s["mean1"], s["rstd1"], dx1, p + "ln1", n, d)
        self.free(dh1, dx1, s["x"], s["mean1"], s["rstd1"])
        return dx

    def forward_loss(self, inputs, targets, keep):
        """The forward pass and the loss of a batch, enqueued; the saved activations of every
        block are kept for the backward pass when `keep`, else freed as soon as made."""
        c = self.cfg
        n, d, v = c.batch * c.seq, c.width, c.vocab
        tok, tgt = self.upload_ints(inputs, "tokens"), self.upload_ints(targets, "targets")
        x = self.tensor(n * d, "x0")
        self.k.launch("train_embed_fwd", (cdiv(n * d, 256),), (256,), x.ptr, self.w("wte"),
                      self.w("wpe"), tok.ptr, n, c.seq, d)
        saved = []
        for l in range(c.layers):
            x, s = self.forward_block(l, x)
            if keep:
                saved.append(s)
            else:
                self.free(*s.values())
        hf, meanf, rstdf = self.layernorm(x, "lnf", n, d)
        logits = self.matmul(hf, self.w("head.w"), None, None, n, d, v, "logits")
        dlogits, losses = self.tensor(n * v, "dlogits"), self.tensor(n, "losses")
        self.k.launch("train_xent", (n,), (256,), dlogits.ptr, losses.ptr, logits.ptr, tgt.ptr,
                      n, v)
        self.k.launch("train_loss_mean", (1,), (1,), self.loss.ptr, losses.ptr, n)
        return tok, tgt, x, saved, hf, meanf, rstdf, logits, dlogits, losses

    def read_loss(self):
        """The loss of the last batch, once the stream has computed it."""
        self.drv("cuMemcpyDtoHAsync_v2", ctypes.addressof(self.host_loss), self.loss.ptr, 4,
                 self.stream)
        self.drv("cuStreamSynchronize", self.stream)
        return self.host_loss.value

    def step(self, inputs, targets):
        """One training step; returns the loss (float32, as a Python float)."""
        c = self.cfg
        n, d, v = c.batch * c.seq, c.width, c.vocab
        tok, tgt, x, saved, hf, meanf, rstdf, logits, dlogits, losses = \
            self.forward_loss(inputs, targets, True)
        self.free(logits, losses)
        dhf = self.linear_bwd(hf, dlogits, "head", n, d, v)
        self.free(dlogits, hf)
        dx = self.layernorm_bwd(dhf, x, meanf, rstdf, None, "lnf", n, d)
        self.free(dhf, x, meanf, rstdf)
        for l in reversed(range(c.layers)):
            dx = self.backward_block(l, saved.pop(), dx)
        self.k.launch("train_embed_bwd_tok", (cdiv(v * d, 256),), (256,), self.grad("wte"),
                      dx.ptr, tok.ptr, n, d, v)
        self.k.launch("train_embed_bwd_pos", (cdiv(c.seq * d, 256),), (256,), self.grad("wpe"),
                      dx.ptr, n, c.seq, d)
        self.free(dx, tok, tgt)
        self.adam()
        return self.read_loss()

    def evaluate(self, inputs, targets):
        """The loss of a batch without training (an evaluation pass): the forward pass alone,
        every tensor it made freed; the parameters do not change."""
        tok, tgt, x, _, hf, meanf, rstdf, logits, dlogits, losses = \
            self.forward_loss(inputs, targets, False)
        self.free(x, hf, meanf, rstdf, logits, dlogits, losses, tok, tgt)
        return self.read_loss()

    def adam(self):
        c = self.cfg
        self.step_no += 1
        b1, b2 = f32(ADAM_B1), f32(ADAM_B2)
        c1, c2 = adam_corrections(b1, b2, self.step_no)
        for p in self.params:
            if p.m is None:
                p.m, p.v = self.tensor(p.n, p.name + ".m"), self.tensor(p.n, p.name + ".v")
                self.memset(p.m, 0)
                self.memset(p.v, 0)
            self.k.launch("train_adam", (min(cdiv(p.n, 256), 65535),), (256,), p.p.ptr,
                          p.g.ptr, p.m.ptr, p.v.ptr, p.n, c.lr, b1, b2, ADAM_EPS, c1, c2)

    def digest(self):
        """sha256 over every parameter's float32 bytes, in param_specs order."""
        self.drv("cuStreamSynchronize", self.stream)
        h = hashlib.sha256()
        buf = ctypes.create_string_buffer(4 * max(p.n for p in self.params))
        for p in self.params:
            self.drv("cuMemcpyDtoHAsync_v2", ctypes.addressof(buf), p.p.ptr, 4 * p.n,
                     self.stream)
            self.drv("cuStreamSynchronize", self.stream)
            h.update(memoryview(buf)[: 4 * p.n])
        return h.hexdigest()

    def download(self, t):
        buf = array.array("f", bytes(4 * t.n))
        addr, _ = buf.buffer_info()
        self.drv("cuMemcpyDtoHAsync_v2", addr, t.ptr, 4 * t.n, self.stream)
        self.drv("cuStreamSynchronize", self.stream)
        return buf.tolist()


def adam_corrections(b1, b2, t):
    """The bias corrections 1 / (1 - b^t), rounded to float32 as the kernel receives them."""
    return f32(1.0 / (1.0 - b1 ** t)), f32(1.0 / (1.0 - b2 ** t))


# ------------------------------------------------------------------ the float64 reference

def mm(x, w, n, k, m):
    """x (n x k) @ w (k x m), flat row-major lists."""
    y = [0.0] * (n * m)
    for i in range(n):
        yi = [0.0] * m
        for q in range(k):
            a = x[i * k + q]
            if a:
                row = w[q * m:(q + 1) * m]
                yi = [u + a * b for u, b in zip(yi, row)]
        y[i * m:(i + 1) * m] = yi
    return y


def mm_t(dy, w, n, k, m):
    """dy (n x m) @ w^T (w is k x m)."""
    return [sum(a * b for a, b in zip(dy[i * m:(i + 1) * m], w[q * m:(q + 1) * m]))
            for i in range(n) for q in range(k)]


def tm(x, dy, n, k, m):
    """x^T (x is n x k) @ dy (n x m)."""
    dw = [0.0] * (k * m)
    for i in range(n):
        drow = dy[i * m:(i + 1) * m]
        for q in range(k):
            a = x[i * k + q]
            if a:
                base = q * m
                dw[base:base + m] = [u + a * b for u, b in zip(dw[base:base + m], drow)]
    return dw


def add_bias(y, b, n, m):
    return [y[i] + b[i % m] for i in range(n * m)]


def col_sum(dy, n, m):
    return [sum(dy[i * m + j] for i in range(n)) for j in range(m)]


def ln_fwd(x, g, b, n, d):
    y, cache = [], []
    for i in range(n):
        row = x[i * d:(i + 1) * d]
        mu = sum(row) / d
        rs = 1.0 / math.sqrt(sum((u - mu) ** 2 for u in row) / d + 1e-5)
        xh = [(u - mu) * rs for u in row]
        y += [a * gg + bb for a, gg, bb in zip(xh, g, b)]
        cache.append((xh, rs))
    return y, cache


def ln_bwd(dy, cache, g, n, d):
    dx, dg, db = [], [0.0] * d, [0.0] * d
    for i in range(n):
        xh, rs = cache[i]
        row = dy[i * d:(i + 1) * d]
        u = [a * gg for a, gg in zip(row, g)]
        mu_u = sum(u) / d
        mu_ux = sum(a * b for a, b in zip(u, xh)) / d
        dx += [rs * (a - mu_u - b * mu_ux) for a, b in zip(u, xh)]
        for j in range(d):
            dg[j] += row[j] * xh[j]
            db[j] += row[j]
    return dx, dg, db


GELU_C, GELU_A = 0.7978845608, 0.044715


def gelu(x):
    return [0.5 * v * (1.0 + math.tanh(GELU_C * (v + GELU_A * v ** 3))) for v in x]


def gelu_bwd(dy, x):
    out = []
    for a, v in zip(dy, x):
        th = math.tanh(GELU_C * (v + GELU_A * v ** 3))
        out.append(a * (0.5 * (1 + th) + 0.5 * v * (1 - th * th) * GELU_C
                        * (1 + 3 * GELU_A * v * v)))
    return out


class Reference:
    """The same model, data and optimiser in plain Python floats (float64)."""

    def __init__(self, cfg):
        self.cfg = cfg
        self.specs = param_specs(cfg)
        self.p = {name: init_values(init, numel(shape), init_seed(cfg.seed, i))
                  for i, (name, shape, init) in enumerate(self.specs)}
        self.m = {name: [0.0] * len(v) for name, v in self.p.items()}
        self.v = {name: [0.0] * len(v) for name, v in self.p.items()}
        self.t = 0

    def attn(self, qkv):
        c = self.cfg
        d, h, t = c.width, c.heads, c.seq
        hd, w = d // h, 3 * c.width
        scale = 1.0 / math.sqrt(hd)
        out, probs = [0.0] * (c.batch * t * d), {}
        for bi in range(c.batch):
            for hh in range(h):
                col = lambda r, part: qkv[(bi * t + r) * w + part * d + hh * hd:][:hd]
                for i in range(t):
                    q = col(i, 0)
                    s = [sum(a * b for a, b in zip(q, col(j, 1))) * scale for j in range(i + 1)]
                    mx = max(s)
                    e = [math.exp(u - mx) for u in s]
                    tot = sum(e)
                    pr = [u / tot for u in e]
                    probs[bi, hh, i] = pr
                    for j in range(i + 1):
                        vj = col(j, 2)
                        base = (bi * t + i) * d + hh * hd
                        for x in range(hd):
                            out[base + x] += pr[j] * vj[x]
        return out, probs

    def attn_bwd(self, datt, qkv, probs):
        c = self.cfg
        d, h, t = c.width, c.heads, c.seq
        hd, w = d // h, 3 * c.width
        scale = 1.0 / math.sqrt(hd)
        dqkv = [0.0] * len(qkv)
        for bi in range(c.batch):
            for hh in range(h):
                off = lambda r, part: (bi * t + r) * w + part * d + hh * hd
                for i in range(t):
                    do = datt[(bi * t + i) * d + hh * hd:][:hd]
                    pr = probs[bi, hh, i]
                    dp = [sum(a * b for a, b in zip(do, qkv[off(j, 2):][:hd]))
                          for j in range(i + 1)]
                    dot = sum(a * b for a, b in zip(pr, dp))
                    ds = [pr[j] * (dp[j] - dot) for j in range(i + 1)]
                    for j in range(i + 1):
                        for x in range(hd):
                            dqkv[off(i, 0) + x] += ds[j] * qkv[off(j, 1) + x] * scale
                            dqkv[off(j, 1) + x] += ds[j] * qkv[off(i, 0) + x] * scale
                            dqkv[off(j, 2) + x] += pr[j] * do[x]
        return dqkv

    def forward_block(self, l, x):
        c, P, p = self.cfg, self.p, "h%d." % l
        n, d = c.batch * c.seq, c.width
        s = {"x": x}
        s["h1"], s["c1"] = ln_fwd(x, P[p + "ln1.g"], P[p + "ln1.b"], n, d)
        s["qkv"] = add_bias(mm(s["h1"], P[p + "qkv.w"], n, d, 3 * d), P[p + "qkv.b"], n, 3 * d)
        s["att"], s["probs"] = self.attn(s["qkv"])
        o = add_bias(mm(s["att"], P[p + "o.w"], n, d, d), P[p + "o.b"], n, d)
        s["x1"] = [a + b for a, b in zip(o, x)]
        s["h2"], s["c2"] = ln_fwd(s["x1"], P[p + "ln2.g"], P[p + "ln2.b"], n, d)
        s["f"] = add_bias(mm(s["h2"], P[p + "fc.w"], n, d, 4 * d), P[p + "fc.b"], n, 4 * d)
        s["ga"] = gelu(s["f"])
        proj = add_bias(mm(s["ga"], P[p + "proj.w"], n, 4 * d, d), P[p + "proj.b"], n, d)
        return [a + b for a, b in zip(proj, s["x1"])], s

    def linear_bwd(self, G, x, dy, name, n, k, m):
        """Stores the gradients of W and b of y = x @ W + b in G; returns dx."""
        G[name + ".w"], G[name + ".b"] = tm(x, dy, n, k, m), col_sum(dy, n, m)
        return mm_t(dy, self.p[name + ".w"], n, k, m)

    def backward_block(self, l, s, dx, G):
        c, P, p = self.cfg, self.p, "h%d." % l
        n, d = c.batch * c.seq, c.width
        df = gelu_bwd(self.linear_bwd(G, s["ga"], dx, p + "proj", n, 4 * d, d), s["f"])
        dh2 = self.linear_bwd(G, s["h2"], df, p + "fc", n, d, 4 * d)
        dln, G[p + "ln2.g"], G[p + "ln2.b"] = ln_bwd(dh2, s["c2"], P[p + "ln2.g"], n, d)
        dx1 = [a + b for a, b in zip(dx, dln)]
        datt = self.linear_bwd(G, s["att"], dx1, p + "o", n, d, d)
        dqkv = self.attn_bwd(datt, s["qkv"], s["probs"])
        dh1 = self.linear_bwd(G, s["h1"], dqkv, p + "qkv", n, d, 3 * d)
        dln, G[p + "ln1.g"], G[p + "ln1.b"] = ln_bwd(dh1, s["c1"], P[p + "ln1.g"], n, d)
        return [a + b for a, b in zip(dx1, dln)]

    def loss(self, logits, targets):
        """Mean cross-entropy and its gradient with respect to the logits."""
        n, v = len(targets), self.cfg.vocab
        loss, dlogits = 0.0, []
        for i in range(n):
            row = logits[i * v:(i + 1) * v]
            mx = max(row)
            e = [math.exp(u - mx) for u in row]
            tot = sum(e)
            loss += math.log(tot) - (row[targets[i]] - mx)
            dlogits += [(e[j] / tot - (1.0 if j == targets[i] else 0.0)) / n for j in range(v)]
        return loss / n, dlogits

    def step(self, inputs, targets):
        """One training step; returns the loss before the update."""
        c, P = self.cfg, self.p
        n, d, v, t = c.batch * c.seq, c.width, c.vocab, c.seq
        x = [P["wte"][inputs[i] * d + j] + P["wpe"][(i % t) * d + j]
             for i in range(n) for j in range(d)]
        saved = []
        for l in range(c.layers):
            x, s = self.forward_block(l, x)
            saved.append(s)
        hf, cf = ln_fwd(x, P["lnf.g"], P["lnf.b"], n, d)
        loss, dlogits = self.loss(mm(hf, P["head.w"], n, d, v), targets)
        G = {"head.w": tm(hf, dlogits, n, d, v)}
        dx, G["lnf.g"], G["lnf.b"] = ln_bwd(mm_t(dlogits, P["head.w"], n, d, v), cf,
                                            P["lnf.g"], n, d)
        for l in reversed(range(c.layers)):
            dx = self.backward_block(l, saved.pop(), dx, G)
        G["wte"], G["wpe"] = [0.0] * (v * d), [0.0] * (t * d)
        for i in range(n):
            for j in range(d):
                G["wte"][inputs[i] * d + j] += dx[i * d + j]
                G["wpe"][(i % t) * d + j] += dx[i * d + j]
        self.grads = G
        self.adam(G)
        return loss

    def adam(self, G):
        self.t += 1
        b1, b2 = f32(ADAM_B1), f32(ADAM_B2)
        c1, c2 = adam_corrections(b1, b2, self.t)
        lr, eps = f32(self.cfg.lr), f32(ADAM_EPS)
        for name, p in self.p.items():
            g, m, v = G[name], self.m[name], self.v[name]
            for i in range(len(p)):
                m[i] = b1 * m[i] + (1 - b1) * g[i]
                v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i]
                p[i] -= lr * (m[i] * c1) / (math.sqrt(v[i] * c2) + eps)


# ------------------------------------------------------------------ main

def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="Train a small GPT-style decoder with Adam through the CUDA Driver API.")
    ap.add_argument("--preset", choices=sorted(PRESETS), default="tiny",
                    help="model size (default tiny); the options below override it")
    for name, what in (("layers", "decoder blocks"), ("width", "model width"),
                       ("heads", "attention heads (a divisor of the width)"),
                       ("seq", "tokens per sequence"), ("batch", "sequences per step"),
                       ("vocab", "vocabulary size"), ("steps", "training steps")):
        ap.add_argument("--" + name, type=int, help=what)
    ap.add_argument("--lr", type=float, help="Adam learning rate")
    ap.add_argument("--seed", type=int, default=1, help="seed of the weights and data")
    ap.add_argument("--alloc", choices=("per-tensor", "pooled"), default="per-tensor",
                    help="one cuMemAlloc per tensor, or a caching allocator (default per-tensor)")
    ap.add_argument("--eval-every", type=int, default=0, metavar="N",
                    help="after every N-th step, an evaluation pass (the forward pass of a "
                    "held-out batch, its loss on stderr; the training is unchanged)")
    ap.add_argument("--eval-from", type=int, default=1, metavar="S",
                    help="no evaluation pass before step S (the job's iteration changes there)")
    ap.add_argument("--batch-from", metavar="S:N",
                    help="from step S on, N sequences per step (the job's iteration changes "
                    "for good there)")
    ap.add_argument("--check", action="store_true",
                    help="verify the losses against a pure-Python reference (tiny models)")
    ap.add_argument("--step-times", action="store_true",
                    help="time each step with CUDA events on the job's stream (one recorded "
                    "as each step begins and one after the last; an evaluation pass counts in "
                    "the step before it) and print the times on stderr")
    ap.add_argument("--ptx", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "kernels.ptx"), help=argparse.SUPPRESS)
    cfg = ap.parse_args(argv)
    for key, val in PRESETS[cfg.preset].items():
        if getattr(cfg, key) is None:
            setattr(cfg, key, val)
    for name in ("layers", "width", "heads", "seq", "batch", "vocab", "steps"):
        if getattr(cfg, name) < 1:
            ap.error("--%s must be at least 1" % name)
    if cfg.eval_every < 0:
        ap.error("--eval-every must be 0 (none) or a number of steps")
    cfg.rebatch = None
    if cfg.batch_from is not None:
        try:
            step, n = (int(x) for x in cfg.batch_from.split(":"))
        except ValueError:
            step = n = 0
        if step < 1 or n < 1:
            ap.error("--batch-from takes S:N, a step and a number of sequences, both at least 1 "
                     "(got %r)" % cfg.batch_from)
        cfg.rebatch = (step, n, cfg.batch)
    if cfg.width % cfg.heads:
        ap.error("--width must be a multiple of --heads")
    if cfg.vocab < 2:
        ap.error("--vocab must be at least 2")
    if cfg.check and sum(numel(s) for _, s, _ in param_specs(cfg)) > CHECK_MAX_PARAMS:
        ap.error("--check runs a pure-Python reference: use it with --preset tiny")
    return cfg


def batch_at(cfg, step):
    """Sequences per step at `step` (--batch-from changes it for good)."""
    if cfg.rebatch and step >= cfg.rebatch[0]:
        return cfg.rebatch[1]
    return cfg.rebatch[2] if cfg.rebatch else cfg.batch


def memory_needed(cfg):
    """Bytes of parameters, gradients and Adam moments."""
    return 16 * sum(numel(s) for _, s, _ in param_specs(cfg))


class Job:
    """The device, context, stream, module and allocator of one run."""

    def __init__(self, cfg):
        self.drv = drv = Driver()
        drv("cuInit", 0)
        self.dev = ctypes.c_int()
        drv("cuDeviceGet", ctypes.byref(self.dev), 0)
        ctx = CU_VOIDP()
        drv("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), self.dev)
        drv("cuCtxSetCurrent", ctx)
        self.stream = CU_VOIDP()
        drv("cuStreamCreate", ctypes.byref(self.stream), 0)
        self.kernels = Kernels(drv, self.stream, cfg.ptx)
        self.mem = CachingAllocator(drv) if cfg.alloc == "pooled" else PerTensorAllocator(drv)

    def close(self):
        self.mem.release()
        self.drv("cuModuleUnload", self.kernels.module)
        self.drv("cuStreamDestroy_v2", self.stream)
        self.drv("cuDevicePrimaryCtxRelease_v2", self.dev)


def record_event(job):
    """A CUDA event recorded now on the job's stream."""
    ev = CU_VOIDP()
    job.drv("cuEventCreate", ctypes.byref(ev), 0)
    job.drv("cuEventRecord", ev, job.stream)
    return ev


def print_step_times(drv, marks):
    """The time between consecutive events (one per step, then one after the last), in ms on
    the device's clock (the simulator's virtual one), on one line of stderr; the events go."""
    drv("cuEventSynchronize", marks[-1])
    ms, times = ctypes.c_float(), []
    for a, b in zip(marks, marks[1:]):
        drv("cuEventElapsedTime", ctypes.byref(ms), a, b)
        times.append("%.3f" % ms.value)
    for ev in marks:
        drv("cuEventDestroy_v2", ev)
    print("train.py: step times (ms): %s" % " ".join(times), file=sys.stderr, flush=True)


def train(cfg):
    """Runs the job, printing the step lines.  Returns (losses, digest, stats, probe): probe
    holds, with --check, the initial weights and the first step's gradients."""
    job = Job(cfg)
    trainer = Trainer(cfg, job.drv, job.mem, job.kernels)
    data = TokenStream(cfg.vocab, cfg.seq, cfg.seed)
    held_out = TokenStream(cfg.vocab, cfg.seq, cfg.seed + 1)
    losses, probe, marks = [], {}, []
    if cfg.check:
        probe["init"] = {p.name: trainer.download(p.p) for p in trainer.params}
    for s in range(1, cfg.steps + 1):
        if cfg.step_times:
            marks.append(record_event(job))
        cfg.batch = batch_at(cfg, s)
        inputs, targets = data.batch(cfg.batch, cfg.seq)
        losses.append(trainer.step(inputs, targets))
        print("step %d loss %.6f" % (s, losses[-1]), flush=True)
        if cfg.eval_every and s >= cfg.eval_from and s % cfg.eval_every == 0:
            loss = trainer.evaluate(*held_out.batch(cfg.batch, cfg.seq))
            print("eval after step %d loss %.6f" % (s, loss), file=sys.stderr, flush=True)
        if cfg.check and s == 1:
            probe["grads"] = {p.name: trainer.download(p.g) for p in trainer.params}
    if cfg.step_times:
        marks.append(record_event(job))
        print_step_times(job.drv, marks)
    digest = trainer.digest()
    stats = (job.mem.peak, job.mem.reserved_peak, job.kernels.launches)
    job.close()
    return losses, digest, stats, probe


def check_tensors(what, got, want, tolerance, bad):
    """Compares named tensors, appending a line to bad for each that fails; with tolerance 0
    they must be equal, else the largest error relative to the tensor's largest magnitude must
    not exceed it.  Returns the largest error seen."""
    worst = 0.0
    for name, ref in want.items():
        scale = max(max(abs(v) for v in ref), 1e-6) if tolerance else 1.0
        err = max(abs(a - b) for a, b in zip(got[name], ref)) / scale
        worst = max(worst, err)
        if err > tolerance:
            bad.append("check: %s of %s differ from the reference by %.2e%s"
                       % (what, name, err, " (relative)" if tolerance else ""))
    return worst


def check(cfg, losses, probe):
    """Replays the steps in the float64 reference: the initial weights must match exactly, the
    first gradients to CHECK_GRAD_TOLERANCE and every loss to CHECK_TOLERANCE (Adam divides
    out the scale of a gradient, so the losses alone would miss a gradient off by a factor).
    Prints the verdict to stderr and returns True when all agree."""
    ref = Reference(cfg)
    data = TokenStream(cfg.vocab, cfg.seq, cfg.seed)
    bad = []
    worst_init = check_tensors("initial values", probe["init"], ref.p, 0.0, bad)
    worst, worst_grad = 0.0, 0.0
    for s, got in enumerate(losses, 1):
        cfg.batch = batch_at(cfg, s)
        want = ref.step(*data.batch(cfg.batch, cfg.seq))
        if s == 1:
            worst_grad = check_tensors("step 1 gradients", probe["grads"], ref.grads,
                                       CHECK_GRAD_TOLERANCE, bad)
        worst = max(worst, abs(got - want))
        if abs(got - want) > CHECK_TOLERANCE:
            bad.append("check: step %d loss %.8f, reference %.8f (|diff| %.2e > %.0e)"
                       % (s, got, want, abs(got - want), CHECK_TOLERANCE))
    for line in bad:
        print(line, file=sys.stderr)
    print("check: %s, %d steps: initial weights max |diff| %.1e, step 1 gradients max relative "
          "error %.1e, max |loss - reference| %.1e" % ("FAILED" if bad else "ok", len(losses),
                                                      worst_init, worst_grad, worst),
          file=sys.stderr)
    return not bad


def size(n):
    """A byte count for people: 4.25 GiB, 12.0 MiB."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return "%.*f %s" % (2 if shift == 30 else 1, n / float(1 << shift), unit)
    return "%d B" % n


def count(n):
    return "%.1fM" % (n / 1e6) if n >= 1e6 else "%.1fK" % (n / 1e3)


def main(argv):
    cfg = parse_args(argv)
    t0 = time.monotonic()
    try:
        losses, digest, (peak, reserved, launches), probe = train(cfg)
    except CudaError as e:
        print("train.py: %s" % e, file=sys.stderr)
        if "OUT_OF_MEMORY" in str(e):
            print("train.py: this job needs more than %s of device memory (parameters, "
                  "gradients and Adam moments)" % size(memory_needed(cfg)), file=sys.stderr)
        return 1
    elapsed = time.monotonic() - t0
    print("train.py: %s, %d layers x %d wide, %s parameters, %d steps of %d tokens, --alloc %s: "
          "peak %s in use, %s allocated, %d launches, %.1f s"
          % (cfg.preset, cfg.layers, cfg.width, count(memory_needed(cfg) // 16), cfg.steps,
             cfg.batch * cfg.seq, cfg.alloc, size(peak), size(reserved), launches, elapsed),
          file=sys.stderr)
    ok = check(cfg, losses, probe) if cfg.check else True
    print("digest %s" % digest, flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
