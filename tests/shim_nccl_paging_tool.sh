#!/bin/bash
# SPDX-License-Identifier: MIT
# shim_nccl_paging_tool.sh - tools/gpu/nccl_paging (the `nccl` check of `make gpu-check`) on
# the simulator and its NCCL stand-in, with host memory mapped and without: under
# libelixir.so with a 16 MiB GPU budget, 64 MiB of send and receive buffers go through every
# collective, alone and in groups; the program must exit 0 (every receive buffer right) and
# the shim must have paged them out and back.  No race (the race checker fails the run).
set -u
. tests/lib/sim_env.sh
sim_setup
sim_tmpdir
export ELIXIR_SIM_MEMORY=64M ELIXIR_GPU_MEMORY=16M ELIXIR_STATS=1

for vmm in 1 0; do
    shim_gpu_tool "$vmm" nccl_paging 16
    out=$(shim_stat "$tmp/o.err" "migrations to host")
    back=$(shim_stat "$tmp/o.err" "to GPU")
    echo "host mapping $vmm: $out migrations to host, $back to the GPU"
    [ "${out:-0}" -gt 0 ] && [ "${back:-0}" -gt 0 ] ||
        fail_showing "$tmp/o.err" "nothing was paged out and back"
done
echo "every collective found its buffers, with host memory mapped and without"
