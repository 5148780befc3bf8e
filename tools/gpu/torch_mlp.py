# SPDX-License-Identifier: MIT
"""torch_mlp.py - a PyTorch training loop for tools/gpu/check.sh, run with and without libelixir.so.

An MLP of --layers Linear+GELU blocks of --width, trained with Adam on fixed random data for
--steps steps, deterministic (TF32 off, deterministic algorithms, cuBLAS's fixed workspace).
It prints `step N loss X` per step, then `peak BYTES` (the caching allocator's peak reserved
memory: the job's footprint) and last `digest HEX`, the SHA-256 of every parameter's bytes.
Run twice on the same GPU it prints the same digest; under the shim it must print it too.
"""
import argparse
import hashlib
import os
import sys


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--width", type=int, default=4096)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=6)
    cfg = ap.parse_args(argv)

    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(1)
    blocks = []
    for _ in range(cfg.layers):
        blocks += [torch.nn.Linear(cfg.width, cfg.width), torch.nn.GELU()]
    model = torch.nn.Sequential(*blocks).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    gen = torch.Generator(device="cuda").manual_seed(2)
    x = torch.randn(cfg.batch, cfg.width, device="cuda", generator=gen)
    y = torch.randn(cfg.batch, cfg.width, device="cuda", generator=gen)
    for step in range(1, cfg.steps + 1):
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        print("step %d loss %.9g" % (step, loss.item()), flush=True)
    torch.cuda.synchronize()
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().cpu().numpy().tobytes())
    print("peak %d" % torch.cuda.max_memory_reserved())
    print("digest %s" % h.hexdigest())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
