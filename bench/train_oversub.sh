#!/bin/bash
# SPDX-License-Identifier: MIT
# train_oversub.sh - examples/train.py on a GPU smaller than the job, under libelixir.so: the
# virtual iteration time at 1/2 and 1/4 of the job's footprint relative to an unlimited GPU.
# This is the reactive engine's figure, the baseline that the planned policy must later beat.
#
# A mid-size job runs on the simulator (build/bin/elixir-sim) with ELIXIR_SIM_STATS=1, whose
# "virtual time" is the simulator's machine-model clock: deterministic, whatever else the host
# is doing, so the runs go two at a time.  The footprint is the shim's "GPU peak" with its
# default (ample) budget; ELIXIR_GPU_MEMORY then gets half and a quarter of it.  The time of
# one step is taken in the steady state, ((time of S2 steps) - (time of S1 steps)) / (S2 - S1),
# which leaves out start-up, the first step's allocations and the final parameter download.
# Both allocation patterns of train.py are measured; every run must give the digest of the
# same job without the shim (the tests check that; here a mismatch voids the figures).
set -u
build=${BUILD:-build}
python=${PYTHON:-python3}
sim=$build/bin/elixir-sim
shim=$(realpath "$build/libelixir.so" 2>/dev/null || echo "$build/libelixir.so")
job="--layers 2 --width 512 --heads 8 --seq 16 --batch 2 --vocab 1024"
s1=4
s2=8
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for f in "$sim" "$shim" "$build/examples/kernels_sim.so" examples/train.py; do
    if [ ! -e "$f" ]; then
        echo "train_oversub: $f is missing (run make from the repository root)" >&2
        exit 1
    fi
done

# job NAME ALLOC STEPS [VAR=VALUE...]: run train.py into $tmp/NAME.{out,err}, in the background.
job() {
    local name=$1 alloc=$2 steps=$3
    shift 3
    env ELIXIR_SIM_STATS=1 ELIXIR_STATS=1 "$@" "$sim" -- "$python" examples/train.py $job \
        --alloc "$alloc" --steps "$steps" >"$tmp/$name.out" 2>"$tmp/$name.err" &
}

# Wait for every background job; exit 1, showing its stderr, if any failed.
wait_all() {
    local failed=0 pid
    for pid in $(jobs -p); do
        wait "$pid" || failed=1
    done
    if [ "$failed" = 1 ]; then
        for f in "$tmp"/*.err; do
            grep -q '^digest' "${f%.err}.out" || { echo "== $f" >&2; tail -5 "$f" >&2; }
        done
        echo "train_oversub: a run failed" >&2
        exit 1
    fi
}

# Both step counts of one configuration, two at a time.
pair() {
    local name=$1 alloc=$2
    shift 2
    job "$name-$s1" "$alloc" "$s1" "$@"
    job "$name-$s2" "$alloc" "$s2" "$@"
    wait_all
}

vtime() { sed -n 's/.*virtual time \([0-9.]*\) ms.*/\1/p' "$tmp/$1.err"; }
gpu_peak() { sed -n 's/.*GPU peak \([0-9]*\) MiB of.*/\1/p' "$tmp/$1.err"; }
gpu_budget() { sed -n 's/.*GPU peak [0-9]* MiB of \([0-9]*\),.*/\1/p' "$tmp/$1.err"; }
digest() { sed -n 's/^digest //p' "$tmp/$1.out"; }
# MiB migrated both ways in a run.
moved() {
    sed -n 's/.*to host [0-9]* (\([0-9]*\) MiB), to GPU [0-9]* (\([0-9]*\) MiB).*/\1 \2/p' \
        "$tmp/$1.err" | awk '{ print $1 + $2 }'
}

# row LABEL NAME BUDGET BASE: one line of the table for configuration NAME against BASE.
row() {
    local label=$1 name=$2 budget=$3 base=$4
    local m1 m2
    m1=$(moved "$name-$s1")
    m2=$(moved "$name-$s2")
    awk -v l="$label" -v b="$budget" -v a1="$(vtime "$name-$s1")" -v a2="$(vtime "$name-$s2")" \
        -v b1="$(vtime "$base-$s1")" -v b2="$(vtime "$base-$s2")" -v s1="$s1" -v s2="$s2" \
        -v m1="${m1:-0}" -v m2="${m2:-0}" 'BEGIN {
        step = (a2 - a1) / (s2 - s1); base = (b2 - b1) / (s2 - s1)
        printf "  %-22s %10s %10.3f ms %8.2fx %10.3f ms %8.2fx %9.1f MiB\n", l, b, step,
               step / base, a2, a2 / b2, (m2 - m1) / (s2 - s1)
    }'
}

# Every run of a step count gives the digest of the run without the shim.
check_digests() {
    local alloc=$1 n f want
    for n in $s1 $s2; do
        want=$(digest "$alloc-plain-$n")
        for f in "$tmp/$alloc"-*-"$n".out; do
            if [ -z "$want" ] || [ "$(sed -n 's/^digest //p' "$f")" != "$want" ]; then
                echo "train_oversub: $(basename "$f" .out) does not give the digest of the" \
                     "run without the shim; the figures mean nothing" >&2
                exit 1
            fi
        done
    done
}

measure() {
    local alloc=$1 peak half quarter
    pair "$alloc-plain" "$alloc"
    pair "$alloc-full" "$alloc" LD_PRELOAD="$shim"
    peak=$(gpu_peak "$alloc-full-$s2")
    half=$((peak / 2))
    quarter=$((peak / 4))
    job "$alloc-half-$s1" "$alloc" "$s1" LD_PRELOAD="$shim" ELIXIR_GPU_MEMORY="${half}M"
    job "$alloc-quarter-$s1" "$alloc" "$s1" LD_PRELOAD="$shim" ELIXIR_GPU_MEMORY="${quarter}M"
    wait_all
    job "$alloc-half-$s2" "$alloc" "$s2" LD_PRELOAD="$shim" ELIXIR_GPU_MEMORY="${half}M"
    job "$alloc-quarter-$s2" "$alloc" "$s2" LD_PRELOAD="$shim" ELIXIR_GPU_MEMORY="${quarter}M"
    wait_all
    check_digests "$alloc"

    echo "  --alloc $alloc: footprint (shim's GPU peak, default budget) $peak MiB"
    printf "  %-22s %10s %13s %9s %13s %9s %13s\n" "" "GPU budget" "per step" "ratio" \
        "$s2 steps" "ratio" "moved/step"
    row "plain simulator" "$alloc-plain" "device" "$alloc-full"
    row "shim, unlimited" "$alloc-full" "$(gpu_budget "$alloc-full-$s2") MiB" "$alloc-full"
    row "shim, 1/2 footprint" "$alloc-half" "$(gpu_budget "$alloc-half-$s2") MiB" "$alloc-full"
    row "shim, 1/4 footprint" "$alloc-quarter" "$(gpu_budget "$alloc-quarter-$s2") MiB" \
        "$alloc-full"
}

echo "train_oversub: examples/train.py $job on the simulator,"
echo "  virtual time per step in the steady state ((t($s2 steps) - t($s1 steps)) / $((s2 - s1))),"
echo "  and of the whole $s2-step run; ratios against the shim with an unlimited budget"
measure per-tensor
measure pooled
echo "  every run gave the same digest as the job without the shim"
