#!/bin/bash
# SPDX-License-Identifier: MIT
# shim_res_nvme_train.sh - examples/train.py under libelixir.so with the GPU budget at 1/4 and
# the host budget at 1/4 of the job's footprint and the NVMe tier in a scratch directory, in
# both allocation patterns: what fits in neither budget goes to NVMe and comes back, and the
# parameter digest is the one of the job without the shim; no race (the race checker fails the
# run with exit 66).
set -u
. tests/lib/sim_env.sh
sim_setup
sim_tmpdir
JOB=(--layers 2 --width 256 --heads 4 --seq 16 --batch 2 --vocab 512 --steps 5)
mkdir -p "$tmp/nvme"

for mode in per-tensor pooled; do
    shim_train_reference "$mode" "${JOB[@]}" --alloc "$mode"
    quarter=$((peak * 1024 * 1024 / 4))
    ELIXIR_HOST_MEMORY=$quarter ELIXIR_NVME_PATH="$tmp/nvme" ELIXIR_NVME_MEMORY=$((peak * 2))M \
        ELIXIR_NVME_VERIFY=1 shim_train_budget 4 "${JOB[@]}" --alloc "$mode"
    nvme=$(shim_stat "$tmp/o.err" "chunks to NVMe")
    echo "$mode, GPU and host budgets 1/4 of $peak MiB each: digest ${got:-none}," \
         "migrations to host ${moved:-?}, chunks to NVMe ${nvme:-?}"
    [ "$got" = "$want" ] || fail_showing "$tmp/o.err" "expected digest $want"
    [ "${nvme:-0}" -gt 0 ] || fail_showing "$tmp/o.err" "nothing went to NVMe"
done
echo "same digest with GPU and host at 1/4 of the footprint each, the rest on NVMe"
