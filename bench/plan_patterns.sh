#!/bin/bash
# SPDX-License-Identifier: MIT
# plan_patterns.sh - the planned policy (ELIXIR_POLICY=plan, with ELIXIR_PLAN_UNMAP off and on)
# against the reactive engine and an unlimited GPU on three access patterns of
# build/bench/plan_patterns (see bench/plan_patterns.c: layered training, a long chain with
# large activations, many small tensors), at 1/2, 1/4 and 1/8 of each job's footprint, in
# virtual time on the simulator's h100-pcie model.
#
# The footprint is the shim's "GPU peak" with its default (ample) budget; ELIXIR_GPU_MEMORY then
# gets a half, a quarter and an eighth of it.  An iteration's time is the mean of iterations
# S1 .. S2-1 of a run of S2 iterations, as the program measures them (events at each
# iteration's start); bytes moved per iteration are ((moved in S2 iterations) - (moved in S1))
# / (S2 - S1), from the shim's statistics, which leaves out start-up and the final download.
# The lower bound is max(the unlimited iteration, the planner's bound: bytes that must move /
# link bandwidth, from its log line; u/in with the bytes that must come in alone); the
# prediction is the planner's cost model.  Every run under the shim must print the digest of
# the same job without it, or the figures are void.
# The runs go two at a time (virtual time does not depend on the host's load; the planned
# engine's asynchronous moves make its figures vary by a few per cent from run to run).
# PLAN_PATTERNS picks some of the patterns (default: layers chain small); PLAN_PATTERNS_MACHINE
# another machine model.  Where the shim made no plan, its reason is printed and the planned
# column is the reactive engine's fallback.
set -u
build=${BUILD:-build}
sim=$build/bin/elixir-sim
prog=$build/bench/plan_patterns
shim=$(realpath "$build/libelixir.so" 2>/dev/null || echo "$build/libelixir.so")
machine=${PLAN_PATTERNS_MACHINE:-h100-pcie}
patterns=${PLAN_PATTERNS:-layers chain small}
s1=5
s2=8
name=plan_patterns
. "$(dirname "$0")/lib/jobs.sh"
bench_setup "$sim" "$shim" "$prog"

# job NAME PATTERN ITERATIONS [VAR=VALUE...]: one run into $tmp/NAME.{out,err}, in the background.
job() {
    local name=$1 pattern=$2 iters=$3
    shift 3
    env ELIXIR_SIM_STATS=1 ELIXIR_STATS=1 ELIXIR_LOG=info ELIXIR_LOG_SUBSYS=RES "$@" \
        "$sim" --machine "$machine" -- "$prog" "$pattern" "$iters" \
        >"$tmp/$name.out" 2>"$tmp/$name.err" &
}

# iter NAME: virtual ms of one iteration in the steady state: the mean of iterations s1..s2-1.
iter() {
    awk -v a="$s1" '$1 == "iteration" && $2 >= a { t += $3; n++ }
                    END { if (n) printf "%.3f", t / n }' "$tmp/$1-$s2.out"
}
# MiB migrated both ways in a run: migrations (one chunk each) times the chunk size, from the
# shim's log (its statistics round sizes to a tenth of their unit).
moved() {
    local kib
    kib=$(sed -n 's/.*device 0: GPU budget .*, chunk \([0-9]*\) KiB.*/\1/p' "$tmp/$1.err" | head -1)
    sed -n 's/.*device 0: migrations to host \([0-9]*\) (.*), to GPU \([0-9]*\) (.*/\1 \2/p' \
        "$tmp/$1.err" | awk -v kib="${kib:-0}" '{ print ($1 + $2) * kib / 1024; exit }'
}
# per_iter NAME: MiB migrated per steady iteration.
per_iter() {
    local m1 m2
    m1=$(moved "$1-$s1")
    m2=$(moved "$1-$s2")
    awk -v m1="${m1:-0}" -v m2="${m2:-0}" -v s1="$s1" -v s2="$s2" \
        'BEGIN { printf "%.1f", (m2 - m1) / (s2 - s1) }'
}
# The planner's figures from a run's statistics (its last plan, or that plan predicted again
# with the times of an iteration under it): predicted iteration and bound.
predicted() {
    sed -n 's/.*plan: [1-9].*predicted iteration \([0-9.]*\) ms.*/\1/p' "$tmp/$1-$s2.err" | tail -1
}
bound() { sed -n 's/.*plan: [1-9].*(bound \([0-9.]*\) ms, .*/\1/p' "$tmp/$1-$s2.err" | tail -1; }
# The bound with the chunks that must come in alone (no write-backs).
bound_in() {
    sed -n 's/.*plan: [1-9].*, \([0-9.]*\) ms with the chunks in alone).*/\1/p' "$tmp/$1-$s2.err" |
        tail -1
}
# The plan's statistics line of a run: plans, re-plans, operations foreseen and not.
plan_line() { sed -n 's/^.*device 0: plan: //p' "$tmp/$1-$s2.err" | head -1; }
# plan_off NAME: why the shim made no plan, from its log, or nothing.
plan_off() {
    sed -n 's/.*device 0: \(.*the plan is off.*\|no plan for .*\)$/\1/p' "$tmp/$1-$s2.err" |
        head -1
}
# unforeseen_per_iter NAME: operations the plan did not foresee per steady iteration (the
# copies of the final download, the same in both runs, drop out).
unforeseen_per_iter() {
    local u1 u2
    u1=$(sed -n 's/.*device 0: plan: .*not foreseen \([0-9]*\)[,;].*/\1/p' "$tmp/$1-$s1.err")
    u2=$(sed -n 's/.*device 0: plan: .*not foreseen \([0-9]*\)[,;].*/\1/p' "$tmp/$1-$s2.err")
    awk -v u1="${u1:-0}" -v u2="${u2:-0}" -v s1="$s1" -v s2="$s2" \
        'BEGIN { printf "%.1f", (u2 - u1) / (s2 - s1) }'
}

# row PATTERN FRAC: one line of the table for 1/FRAC of the footprint.
row() {
    local pattern=$1 frac=$2 r=$1-reactive-$2 p=$1-plan-$2 m=$1-unmap-$2
    awk -v f="1/$frac" -v b="$(gpu_budget "$p-$s2")" -v u="$(iter "$pattern-full")" \
        -v r="$(iter "$r")" -v p="$(iter "$p")" -v mr="$(per_iter "$r")" \
        -v mp="$(per_iter "$p")" -v pr="$(predicted "$p")" -v lb="$(bound "$p")" \
        -v li="$(bound_in "$p")" -v m="$(iter "$m")" -v pm="$(predicted "$m")" 'BEGIN {
        lower = lb > u ? lb : u
        lower_in = li > u ? li : u
        printf "  %-4s %5s MiB %8.3f %8.3f %8.3f %8.3f %7.2fx %7.2fx %8.1f %8.1f", f, b, u,
               r, p, lower, r / p, p / lower, mr, mp
        if (pr != "")
            printf " %9.3f %6.2f", pr, pr / p
        else
            printf " %9s %6s", "no plan", "-"
        printf " %8.3f %6.2fx %7.2fx", m, r / m, m / lower
        if (pm != "")
            printf " %6.2f", pm / m
        else
            printf " %6s", "-"
        printf " %7.2fx\n", m / lower_in
    }'
}

measure() {
    local pattern=$1 peak frac pol off
    pair "$pattern-plain" "$pattern"
    pair "$pattern-full" "$pattern" LD_PRELOAD="$shim"
    peak=$(gpu_peak "$pattern-full-$s2")
    for frac in 2 4 8; do
        for pol in reactive plan; do
            pair "$pattern-$pol-$frac" "$pattern" LD_PRELOAD="$shim" ELIXIR_POLICY=$pol \
                ELIXIR_PLAN_UNMAP=0 ELIXIR_GPU_MEMORY="$((peak / frac))M"
        done
        pair "$pattern-unmap-$frac" "$pattern" LD_PRELOAD="$shim" ELIXIR_POLICY=plan \
            ELIXIR_PLAN_UNMAP=1 ELIXIR_GPU_MEMORY="$((peak / frac))M"
    done
    check_digests "$pattern"
    need_line '^iteration ' "$tmp/$pattern"-*-"$s2".out
    need_line 'migrations to host' "$tmp/$pattern"-{reactive,plan,unmap}-*.err
    need_line 'device 0: GPU budget .*, chunk [0-9]* KiB' \
        "$tmp/$pattern"-{reactive,plan,unmap}-*.err

    sed -n 's/^pattern \([a-z]*\): /\1: /p' "$tmp/$pattern-plain-$s2.out"
    echo "  footprint (shim's GPU peak, default budget) $peak MiB; unlimited iteration" \
         "$(iter "$pattern-full") ms, without the shim $(iter "$pattern-plain") ms"
    printf "  %-4s %9s %8s %8s %8s %8s %8s %8s %8s %8s %9s %6s %8s %7s %8s %6s %7s\n" "" "GPU" \
        "unlim" "reactive" "planned" "bound" "r/p" "p/bound" "MiB/it r" "MiB/it p" "predicted" \
        "pred/p" "unmapped" "r/u" "u/bound" "pred/u" "u/in"
    for frac in 2 4 8; do
        row "$pattern" "$frac"
    done
    for frac in 2 4 8; do
        echo "  1/$frac, $s2 iterations: $(plan_line "$pattern-plan-$frac"); operations not" \
             "foreseen per steady iteration $(unforeseen_per_iter "$pattern-plan-$frac")"
        off=$(plan_off "$pattern-plan-$frac")
        [ -z "$off" ] || echo "    no plan: $off"
    done
}

echo "plan_patterns: build/bench/plan_patterns on the simulator's $machine model, ELIXIR_POLICY"
echo "  reactive and plan against an unlimited GPU; virtual ms per iteration in the steady state"
echo "  (the mean of iterations $s1..$((s2 - 1))); bound: max(unlimited, the planner's bound of bytes"
echo "  that must move / link bandwidth); r/p: reactive over planned; p/bound: planned over the"
echo "  bound; MiB/it: migrated per iteration; predicted: the planner's iteration time (its cost"
echo "  model) and its ratio to the measured planned iteration; planned: ELIXIR_PLAN_UNMAP=0"
echo "  (evicted memory stays mapped); unmapped: ELIXIR_PLAN_UNMAP=1 (the plan's evictions of"
echo "  memory whose every use was seen unmap it); the bound counts the chunks that must come in"
echo "  and those that must go back with a copy (a launch counts as writing what it reaches), over"
echo "  the link's duplex rate; u/in: unmapped over the bound of the chunks in alone"
for pattern in $patterns; do
    measure "$pattern"
done
echo "  every run gave the same digest as the job without the shim"
