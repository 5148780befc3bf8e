#!/bin/bash
# SPDX-License-Identifier: MIT
# shim_res_unmapped_train.sh - examples/train.py under libelixir.so on a device that cannot map
# host memory through VMM (ELIXIR_SIM_HOST_VMM=0), with the GPU budget at 1/2 and 1/4 of the
# job's footprint, in both allocation patterns: evicted chunks are unmapped and mapped back
# before every kernel, copy and memset that reaches them, and the parameter digest is the one
# of the job without the shim; no race (the race checker fails the run with exit 66).
set -u
. tests/lib/sim_env.sh
sim_setup
sim_tmpdir
JOB=(--layers 2 --width 256 --heads 4 --seq 16 --batch 2 --vocab 512 --steps 5)
export ELIXIR_SIM_HOST_VMM=0

for mode in per-tensor pooled; do
    shim_train_reference "$mode" "${JOB[@]}" --alloc "$mode"
    for frac in 2 4; do
        shim_train_budget "$frac" "${JOB[@]}" --alloc "$mode"
        echo "$mode, GPU budget 1/$frac of $peak MiB, no host mapping: digest ${got:-none}," \
             "migrations to host ${moved:-?}"
        [ "$got" = "$want" ] || fail_showing "$tmp/o.err" "expected digest $want"
        if ! grep -q "evicted chunks unmapped" "$tmp/o.err" || [ "${moved:-0}" -eq 0 ]; then
            fail_showing "$tmp/o.err" "nothing was unmapped at 1/$frac"
        fi
    done
done
echo "same digest at 1/2 and 1/4 of the footprint with evicted chunks unmapped"
