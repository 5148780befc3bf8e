#!/bin/bash
# SPDX-License-Identifier: MIT
# shim_train_oversub.sh - examples/train.py under libelixir.so with the simulated GPU at 1/2,
# 1/4 and 1/8 of the job's footprint, in both allocation patterns: the same parameter digest as
# without the shim, chunks really paged to host memory and back, the GPU peak within the
# device, no race (the simulator's race checker fails the run with exit 66 otherwise).
set -u
. tests/lib/sim_env.sh
sim_setup
sim_tmpdir
JOB=(--layers 2 --width 256 --heads 4 --seq 16 --batch 2 --vocab 512 --steps 5)

for mode in per-tensor pooled; do
    shim_train_reference "$mode" "${JOB[@]}" --alloc "$mode"
    for frac in 2 4 8; do
        shim_train_device "$frac" "${JOB[@]}" --alloc "$mode"
        echo "$mode, simulated GPU 1/$frac of $peak MiB: digest ${got:-none}," \
             "migrations to host ${moved:-?}, GPU peak ${used:-?} MiB"
        [ "$got" = "$want" ] || fail_showing "$tmp/o.err" "expected digest $want"
        [ "${moved:-0}" -ne 0 ] || fail_showing "$tmp/o.err" "nothing was paged out at 1/$frac"
    done
done
echo "same digest at 1/2, 1/4 and 1/8 of the footprint"
