#!/bin/bash
# SPDX-License-Identifier: MIT
# nvme_train.sh - examples/train.py with the GPU at 1/4 and host memory at 1/4 of the job's
# footprint, the rest on the NVMe tier (ELIXIR_NVME_PATH in a scratch directory), under the
# planned policy (ELIXIR_POLICY=plan) and the reactive engine side by side, against the same
# GPU budget with host memory unlimited (everything evicted stays in host RAM) and an unlimited
# GPU.
#
# The job runs on the simulator (build/bin/elixir-sim) with ELIXIR_SIM_STATS=1, whose "virtual
# time" is the machine model's clock, NVMe drive included (sim/nvme.c: the shim's I/O is
# charged on it): deterministic whatever else the host is doing, so the runs go two at a time.
# The footprint is the shim's "GPU peak" with its default (ample) budget.  The time of one step
# is taken in the steady state, the mean of steps S1+1 .. S2 of the run of S2 steps as
# train.py --step-times times them (CUDA events on the job's stream).  Both
# allocation patterns of train.py are measured; every run must give the digest of the same job
# without the shim (else the figures mean nothing and the script fails).
set -u
build=${BUILD:-build}
python=${PYTHON:-python3}
sim=$build/bin/elixir-sim
shim=$(realpath "$build/libelixir.so" 2>/dev/null || echo "$build/libelixir.so")
job="--layers 2 --width 512 --heads 8 --seq 16 --batch 2 --vocab 1024"
s1=5
s2=8
name=nvme_train
. "$(dirname "$0")/lib/jobs.sh"
bench_setup "$sim" "$shim" "$build/examples/kernels_sim.so" examples/train.py

# job NAME ALLOC STEPS [VAR=VALUE...]: run train.py into $tmp/NAME.{out,err}, in the background;
# each run has its own swap directory.
job() {
    local name=$1 alloc=$2 steps=$3
    shift 3
    mkdir -p "$tmp/swap-$name"
    env ELIXIR_SIM_STATS=1 ELIXIR_STATS=1 "$@" "$sim" -- "$python" examples/train.py $job \
        --alloc "$alloc" --steps "$steps" --step-times >"$tmp/$name.out" 2>"$tmp/$name.err" &
}

# MiB written to and read from NVMe in a run (the shim's statistics).
nvme_mib() {
    sed -n 's/.*NVMe: engine.*written [0-9]* (\([0-9]*\) MiB), read [0-9]* (\([0-9]*\) MiB).*/\1 \2/p' \
        "$tmp/$1.err" | awk '{ print $1 + $2 }'
}
# The plan's reads ahead from NVMe in a run, and those the host had to wait for.
ahead() { sed -n 's/.*reads ahead \([0-9]*\) (completed [0-9]*, waited for \([0-9]*\),.*/\1 \2/p' "$tmp/$1.err"; }

per_step() {
    local m1 m2
    m1=$(nvme_mib "$1-$s1")
    m2=$(nvme_mib "$1-$s2")
    awk -v m1="${m1:-0}" -v m2="${m2:-0}" -v s1="$s1" -v s2="$s2" \
        'BEGIN { printf "%.1f", (m2 - m1) / (s2 - s1) }'
}

measure() {
    local alloc=$1 peak quarter pol a w
    pair "$alloc-plain" "$alloc"
    pair "$alloc-full" "$alloc" LD_PRELOAD="$shim"
    peak=$(gpu_peak "$alloc-full-$s2")
    quarter=$((peak * 1024 * 1024 / 4))
    # (ELIXIR_PLAN_UNMAP=1 in both planned configurations, as an NVMe area makes it by
    # default: the plan's evictions unmap, with host memory unlimited too.)
    for pol in reactive plan; do
        pair "$alloc-host-$pol" "$alloc" LD_PRELOAD="$shim" ELIXIR_POLICY=$pol \
            ELIXIR_PLAN_UNMAP=1 ELIXIR_GPU_MEMORY=$quarter
    done
    for pol in reactive plan; do
        job "$alloc-nvme-$pol-$s1" "$alloc" "$s1" LD_PRELOAD="$shim" ELIXIR_POLICY=$pol \
            ELIXIR_PLAN_UNMAP=1 ELIXIR_GPU_MEMORY=$quarter ELIXIR_HOST_MEMORY=$quarter \
            ELIXIR_NVME_PATH="$tmp/swap-$alloc-nvme-$pol-$s1" ELIXIR_NVME_MEMORY=$((peak * 2))M
        job "$alloc-nvme-$pol-$s2" "$alloc" "$s2" LD_PRELOAD="$shim" ELIXIR_POLICY=$pol \
            ELIXIR_PLAN_UNMAP=1 ELIXIR_GPU_MEMORY=$quarter ELIXIR_HOST_MEMORY=$quarter \
            ELIXIR_NVME_PATH="$tmp/swap-$alloc-nvme-$pol-$s2" ELIXIR_NVME_MEMORY=$((peak * 2))M
        wait_all
    done
    check_digests "$alloc"
    need_line 'step times (ms)' "$tmp/$alloc"-*-"$s2".err
    need_line 'NVMe: engine.*written' "$tmp/$alloc"-nvme-*.err
    read -r a w <<<"$(ahead "$alloc-nvme-plan-$s2")"

    echo "  --alloc $alloc: footprint (shim's GPU peak, default budget) $peak MiB; GPU and" \
         "host budgets $((quarter >> 20)) MiB each"
    awk -v u="$(step "$alloc-full")" -v hr="$(step "$alloc-host-reactive")" \
        -v hp="$(step "$alloc-host-plan")" -v nr="$(step "$alloc-nvme-reactive")" \
        -v np="$(step "$alloc-nvme-plan")" -v mr="$(per_step "$alloc-nvme-reactive")" \
        -v mp="$(per_step "$alloc-nvme-plan")" 'BEGIN {
        printf "  %-34s %10s %10s %8s\n", "", "reactive", "planned", "r/p"
        printf "  %-34s %10.3f %10.3f %7.2fx\n", "host RAM unlimited (ms/step)", hr, hp, hr / hp
        printf "  %-34s %10.3f %10.3f %7.2fx\n", "host at 1/4, rest on NVMe (ms/step)", nr, np,
               nr / np
        printf "  %-34s %10.1f %10.1f\n", "NVMe MiB written + read per step", mr, mp
        printf "  %-34s %10.2fx %9.2fx\n", "NVMe over host RAM", nr / hr, np / hp
        printf "  %-34s %10.2fx %9.2fx\n", "over the unlimited GPU", nr / u, np / u
        printf "  unlimited GPU %.3f ms/step\n", u
    }'
    echo "  the plan's reads ahead from NVMe in $s2 steps: ${a:-0}, of which the host waited for ${w:-0}"
}

echo "nvme_train: examples/train.py $job on the simulator with its NVMe drive, GPU and host"
echo "  memory at 1/4 of the footprint each, ELIXIR_POLICY=reactive and plan; virtual ms per"
echo "  step in the steady state (the mean of steps $((s1 + 1))..$s2, timed by events); r/p: reactive"
echo "  over planned; planned: ELIXIR_PLAN_UNMAP=1 (the plan's evictions unmap), with and without"
echo "  NVMe"
measure per-tensor
measure pooled
echo "  every run gave the same digest as the job without the shim"
