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
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
SHIM=$BUILD/libelixir.so
JOB=(--layers 2 --width 256 --heads 4 --seq 16 --batch 2 --vocab 512 --steps 5)
export ELIXIR_SIM_HOST_VMM=0

run_shim() { # run_shim OUT ERR ARGS... (train.py under the shim)
    local out=$1 err=$2
    shift 2
    LD_PRELOAD=${LD_PRELOAD:+$LD_PRELOAD:}$SHIM ELIXIR_STATS=1 train "$@" >"$out" 2>"$err"
}

for mode in per-tensor pooled; do
    train "${JOB[@]}" --alloc "$mode" >"$tmp/plain.out" 2>"$tmp/plain.err" || {
        cat "$tmp/plain.err"; echo "FAIL: $mode without the shim"; exit 1; }
    want=$(train_digest "$tmp/plain.out")
    run_shim "$tmp/full.out" "$tmp/full.err" "${JOB[@]}" --alloc "$mode" || {
        cat "$tmp/full.err"; echo "FAIL: $mode under the shim, unlimited"; exit 1; }
    peak=$(sed -n 's/.*GPU peak \([0-9]*\) MiB.*/\1/p' "$tmp/full.err" | head -n 1)
    if [ -z "$peak" ] || [ "$peak" -lt 8 ]; then
        cat "$tmp/full.err"; echo "FAIL: footprint not reported or too small: '$peak' MiB"; exit 1
    fi
    for frac in 2 4; do
        budget=$((peak * 1024 * 1024 / frac))
        ELIXIR_GPU_MEMORY=$budget run_shim "$tmp/o.out" "$tmp/o.err" "${JOB[@]}" --alloc "$mode" \
            && got=$(train_digest "$tmp/o.out") || got=""
        moved=$(sed -n 's/.*migrations to host \([0-9]*\).*/\1/p' "$tmp/o.err" | head -n 1)
        echo "$mode, GPU budget 1/$frac of $peak MiB, no host mapping: digest ${got:-none}," \
             "migrations to host ${moved:-?}"
        if [ "$got" != "$want" ]; then
            tail -n 30 "$tmp/o.err"; echo "FAIL: expected digest $want"; exit 1
        fi
        if ! grep -q "evicted chunks unmapped" "$tmp/o.err" || [ "${moved:-0}" -eq 0 ]; then
            tail -n 30 "$tmp/o.err"; echo "FAIL: nothing was unmapped at 1/$frac"; exit 1
        fi
    done
done
echo "same digest at 1/2 and 1/4 of the footprint with evicted chunks unmapped"
