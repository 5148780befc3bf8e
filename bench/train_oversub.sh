#!/bin/bash
# SPDX-License-Identifier: MIT
# train_oversub.sh - examples/train.py on a GPU smaller than the job, under libelixir.so: the
# virtual step time at 1/2, 1/4 and 1/8 of the job's footprint under the planned policy
# (ELIXIR_POLICY=plan, with ELIXIR_PLAN_UNMAP off and on) and the reactive engine side by side,
# against an unlimited GPU.
#
# A mid-size job runs on the simulator (build/bin/elixir-sim) with ELIXIR_SIM_STATS=1, whose
# "virtual time" is the simulator's machine-model clock: deterministic, whatever else the host
# is doing, so the runs go two at a time.  The footprint is the shim's "GPU peak" with its
# default (ample) budget; ELIXIR_GPU_MEMORY then gets a half, a quarter and an eighth of it.
# The time of one step is taken in the steady state, the mean of steps S1+1 .. S2 of the run of
# S2 steps as train.py --step-times times them (CUDA events on the job's stream); bytes moved
# per step are ((moved in S2 steps) - (moved in S1 steps)) / (S2 - S1).
# Both allocation patterns of train.py are measured, and the per-tensor one again on a device
# without host VMM (ELIXIR_SIM_HOST_VMM=0); every run must give the digest of the
# same job without the shim (the tests check that; here a mismatch voids the figures).
set -u
build=${BUILD:-build}
python=${PYTHON:-python3}
sim=$build/bin/elixir-sim
shim=$(realpath "$build/libelixir.so" 2>/dev/null || echo "$build/libelixir.so")
job="--layers 2 --width 512 --heads 8 --seq 16 --batch 2 --vocab 1024"
s1=5
s2=8
name=train_oversub
. "$(dirname "$0")/lib/jobs.sh"
bench_setup "$sim" "$shim" "$build/examples/kernels_sim.so" examples/train.py

# job NAME ALLOC STEPS [VAR=VALUE...]: run train.py into $tmp/NAME.{out,err}, in the background.
job() {
    local name=$1 alloc=$2 steps=$3
    shift 3
    env ELIXIR_SIM_STATS=1 ELIXIR_STATS=1 ELIXIR_LOG=info ELIXIR_LOG_SUBSYS=RES "$@" "$sim" -- \
        "$python" examples/train.py $job --alloc "$alloc" --steps "$steps" --step-times \
        >"$tmp/$name.out" 2>"$tmp/$name.err" &
}

# MiB migrated both ways in a run: its migrations (one chunk each, both ways) times the
# chunk the shim logged; the log's byte figures are rounded to 0.1 GiB.
moved() {
    local kib
    kib=$(sed -n 's/.*device 0: GPU budget .*, chunk \([0-9]*\) KiB.*/\1/p' "$tmp/$1.err" | head -1)
    sed -n 's/.*migrations to host \([0-9]*\) ([^)]*), to GPU \([0-9]*\) .*/\1 \2/p' \
        "$tmp/$1.err" | awk -v kib="$kib" '{ print (($1 + $2) * kib) / 1024; exit }'
}

# step NAME: virtual ms of one steady step of configuration NAME.
per_step() {
    local m1 m2
    m1=$(moved "$1-$s1")
    m2=$(moved "$1-$s2")
    awk -v m1="${m1:-0}" -v m2="${m2:-0}" -v s1="$s1" -v s2="$s2" \
        'BEGIN { printf "%.1f", (m2 - m1) / (s2 - s1) }'
}
# The planner's figures from a run's log (the last plan made): predicted iteration and bound.
predicted() {
    sed -n 's/.*plan: [1-9].*predicted iteration \([0-9.]*\) ms.*/\1/p' "$tmp/$1-$s2.err" | tail -1
}
bound() { sed -n 's/.*plan: [1-9].*(bound \([0-9.]*\) ms, .*/\1/p' "$tmp/$1-$s2.err" | tail -1; }
# The bound with the chunks that must come in alone (no write-backs).
bound_in() {
    sed -n 's/.*plan: [1-9].*, \([0-9.]*\) ms with the chunks in alone).*/\1/p' "$tmp/$1-$s2.err" |
        tail -1
}

# row ALLOC FRAC: one line of the table for 1/FRAC of the footprint.  The lower bound is
# max(the unlimited step, the planner's bound: bytes that must move / link bandwidth); u/in
# takes the bound of the bytes that must come in alone.
row() {
    local alloc=$1 frac=$2 r=$1-reactive-$2 p=$1-plan-$2 m=$1-unmap-$2
    awk -v f="1/$frac" -v b="$(gpu_budget "$p-$s2")" -v u="$(step "$alloc-full")" \
        -v r="$(step "$r")" -v p="$(step "$p")" -v mr="$(per_step "$r")" \
        -v mp="$(per_step "$p")" -v pr="$(predicted "$p")" -v lb="$(bound "$p")" \
        -v li="$(bound_in "$p")" -v m="$(step "$m")" -v pm="$(predicted "$m")" 'BEGIN {
        lower = lb > u ? lb : u
        lower_in = li > u ? li : u
        printf "  %-4s %6s MiB %10.3f %10.3f %7.2fx %7.2fx %7.2fx %9.1f %9.1f", f, b, r, p,
               r / p, p / u, p / lower, mr, mp
        if (pr != "")
            printf " %9.3f %7.2f", pr, pr / p
        else
            printf " %9s %7s", "no plan", "-"
        printf " %10.3f %7.2fx %7.2fx", m, r / m, m / lower
        if (pm != "")
            printf " %7.2f", pm / m
        else
            printf " %7s", "-"
        printf " %7.2fx\n", m / lower_in
    }'
}

measure() {
    local alloc=$1 peak frac
    pair "$alloc-plain" "$alloc"
    pair "$alloc-full" "$alloc" LD_PRELOAD="$shim"
    peak=$(gpu_peak "$alloc-full-$s2")
    for frac in 2 4 8; do
        for pol in reactive plan; do
            pair "$alloc-$pol-$frac" "$alloc" LD_PRELOAD="$shim" ELIXIR_POLICY=$pol \
                ELIXIR_PLAN_UNMAP=0 ELIXIR_GPU_MEMORY="$((peak / frac))M"
        done
        pair "$alloc-unmap-$frac" "$alloc" LD_PRELOAD="$shim" ELIXIR_POLICY=plan \
            ELIXIR_PLAN_UNMAP=1 ELIXIR_GPU_MEMORY="$((peak / frac))M"
    done
    check_digests "$alloc"
    need_line 'step times (ms)' "$tmp/$alloc"-*-"$s2".err
    need_line 'migrations to host' "$tmp/$alloc"-{reactive,plan,unmap}-*.err
    need_line 'device 0: GPU budget .*, chunk [0-9]* KiB' "$tmp/$alloc"-{reactive,plan,unmap}-*.err

    echo "  --alloc $alloc: footprint (shim's GPU peak, default budget) $peak MiB;" \
         "unlimited step $(step "$alloc-full") ms, plain simulator $(step "$alloc-plain") ms"
    printf "  %-4s %10s %10s %10s %8s %8s %8s %9s %9s %9s %7s %10s %8s %8s %7s %7s\n" "" "GPU" \
        "reactive" "planned" "r/p" "p/unlim" "p/bound" "MiB/st r" "MiB/st p" "predicted" \
        "pred/p" "unmapped" "r/u" "u/bound" "pred/u" "u/in"
    for frac in 2 4 8; do
        row "$alloc" "$frac"
    done
}

echo "train_oversub: examples/train.py $job on the simulator, ELIXIR_POLICY=reactive and plan,"
echo "  virtual ms per step in the steady state (the mean of steps $((s1 + 1))..$s2, timed by events);"
echo "  r/p: reactive over planned; p/bound: planned over max(unlimited step, the planner's"
echo "  bound of bytes that must move / link bandwidth); MiB/st: migrated per step; predicted:"
echo "  the planner's iteration time (its cost model) and its ratio to the measured planned step;"
echo "  planned: ELIXIR_PLAN_UNMAP=0 (evicted memory stays mapped); unmapped: ELIXIR_PLAN_UNMAP=1"
echo "  (the plan's evictions of memory whose every use was seen unmap it); the bound counts"
echo "  the chunks that must come in and those that must go back with a copy (a launch counts as"
echo "  writing what it reaches), over the link's duplex rate; u/in: unmapped over the bound of"
echo "  the chunks in alone"
# novmm: per tensor on a device without host VMM (ELIXIR_SIM_HOST_VMM=0: evicted chunks are
# unmapped in pinned host pieces), reactive against planned, at the per-tensor budgets.
novmm() {
    local peak frac pol r p
    peak=$(gpu_peak "per-tensor-full-$s2")
    for frac in 2 4 8; do
        for pol in reactive plan; do
            pair "per-tensor-novmm-$pol-$frac" per-tensor LD_PRELOAD="$shim" ELIXIR_POLICY=$pol \
                ELIXIR_SIM_HOST_VMM=0 ELIXIR_GPU_MEMORY="$((peak / frac))M"
        done
    done
    check_digests per-tensor
    echo "  --alloc per-tensor without host VMM (ELIXIR_SIM_HOST_VMM=0):"
    printf "  %-4s %10s %10s %8s %9s %7s\n" "" "reactive" "planned" "r/p" "predicted" "pred/p"
    for frac in 2 4 8; do
        r=per-tensor-novmm-reactive-$frac p=per-tensor-novmm-plan-$frac
        awk -v f="1/$frac" -v r="$(step "$r")" -v p="$(step "$p")" -v pr="$(predicted "$p")" \
            'BEGIN { printf "  %-4s %10.3f %10.3f %7.2fx", f, r, p, r / p
                     if (pr != "") printf " %9.3f %7.2f\n", pr, pr / p
                     else printf " %9s %7s\n", "no plan", "-" }'
    done
}

measure per-tensor
measure pooled
novmm
echo "  every run gave the same digest as the job without the shim"
