#!/bin/bash
# SPDX-License-Identifier: MIT
# shim_trace_plan.sh - examples/train.py recorded under ELIXIR_POLICY=plan on a simulated GPU
# of half its footprint: the same parameter digest as without the shim, and `elixir-trace
# summary` shows the plan at work, as the shim's statistics count it: a plan made (PLAN),
# iterations that followed it with their operations foreseen (FOLLOW), moves flagged as the
# plan's (MIGRATION), most with their copies' device times (TIMING), and host time in the
# shim's mapping calls (MAPPING).  The operations foreseen and the chunks the plan moved are
# those of the shim's `plan:` statistics line (the last iteration's FOLLOW record is written
# as its context goes).  The iteration time the summary measured under the plan, the mean of
# K iterations, is that of the job's own steps (train.py --step-times, virtual time by
# events): within 3% of the mean of the K steps before the last, whose iteration was in
# progress at exit (its FOLLOW record is partial, format 1.9, and left out); the job runs on
# virtual time, the same in every run.
# The same job under ELIXIR_POLICY=reactive gets the one-line plan section and no plan moves.
set -u
. tests/lib/sim_env.sh
sim_setup
sim_tmpdir
TOOL=$BUILD/bin/elixir-trace
JOB=(--layers 2 --width 256 --heads 4 --seq 16 --batch 2 --vocab 512 --steps 6 --alloc per-tensor
     --step-times)

shim_train_reference per-tensor "${JOB[@]}"
ELIXIR_POLICY=plan ELIXIR_TRACE=$tmp/plan.trace shim_train_device 2 "${JOB[@]}"
[ "$got" = "$want" ] || fail_showing "$tmp/o.err" "plan, recorded: expected digest $want"
"$TOOL" summary "$tmp/plan.trace" >"$tmp/plan.summary" 2>&1 ||
    fail_showing "$tmp/plan.summary" "elixir-trace cannot read the planned run's trace"
sed -n '/^plan/,/^[a-z]/p' "$tmp/plan.summary"

# The shim's own statistics of the run.
foreseen=$(shim_stat "$tmp/o.err" "operations foreseen")
chunks=$(sed -n 's/.*moves issued [0-9]* (\([0-9]*\) chunks.*/\1/p' "$tmp/o.err" | head -1)
[ "${foreseen:-0}" -gt 0 ] && [ "${chunks:-0}" -gt 0 ] ||
    fail_showing "$tmp/o.err" \
        "the plan was not followed (foreseen ${foreseen:-?}, chunks ${chunks:-?})"

# What the summary says.
grep -Eq '^  device 0: 1 plan made, [1-9][0-9]* iterations? followed it$' "$tmp/plan.summary" ||
    fail_showing "$tmp/plan.summary" "no plan or no iteration following it in the summary"
grep -Eq '^  plan 1 at .*: profiled iteration [0-9]+, [1-9][0-9]* operations, ' \
    "$tmp/plan.summary" || fail_showing "$tmp/plan.summary" "the plan's PLAN record is missing"
seen=$(sed -n 's/^  operations  foreseen \([0-9]*\), not foreseen.*/\1/p' "$tmp/plan.summary")
moved=$(sed -n 's/^  plan moves  [0-9]* issued: \([0-9]*\) chunks moved.*/\1/p' "$tmp/plan.summary")
planned=$(sed -n '/^  moves$/,$ s/^  by the plan  *\([0-9]*\)$/\1/p' "$tmp/plan.summary")
remaps=$(sed -n 's/^    by the plan  *\([0-9]*\) remaps.*/\1/p' "$tmp/plan.summary")
echo "shim: foreseen $foreseen, chunks moved $chunks; trace: foreseen ${seen:-?}," \
     "chunks moved ${moved:-?}, plan moves ${planned:-?}, remaps by the plan ${remaps:-?}"
[ "${seen:-0}" = "$foreseen" ] ||
    fail_showing "$tmp/plan.summary" "foreseen ${seen:-none} in the trace, $foreseen by the shim"
[ "${moved:-0}" = "$chunks" ] ||
    fail_showing "$tmp/plan.summary" "chunks moved ${moved:-none} in the trace, $chunks by the shim"
# A planned MIGRATION for each chunk the plan moved or put where it starts them at an
# iteration's first operation, but evictions cancelled after their copy (a use of the chunk
# came first: it stayed on the GPU).
placed=$(sed -n 's/.*, \([0-9]*\) put where the plan starts them.*/\1/p' "$tmp/o.err" | head -1)
[ "${planned:-0}" -gt 0 ] && [ "$planned" -le $((chunks + ${placed:-0})) ] ||
    fail_showing "$tmp/plan.summary" "${planned:-no} migrations flagged as the plan's"
[ "${remaps:-0}" -gt 0 ] ||
    fail_showing "$tmp/plan.summary" "no mapping time of the plan's moves"
# The plan's copies are timed by events on their copy streams (all but those issued before
# their context had a reference event: the first ones).
timed=$(sed -n 's/^    \([0-9]*\) timed on the device.*/\1/p' "$tmp/plan.summary")
echo "plan moves timed on the device: ${timed:-?} of $planned"
[ "${timed:-0}" -gt 0 ] && [ "$timed" -le "$planned" ] ||
    fail_showing "$tmp/plan.summary" "${timed:-no} planned moves timed on the device"

# The iteration measured under the plan against the job's steps before the last.
steps=$(sed -n 's/^train\.py: step times (ms): //p' "$tmp/o.err")
pattern='s/^    measured \([0-9.]*\) \([a-z]*\) (mean of \([0-9]*\).*/\1 \2 \3/p'
read -r value unit k <<<"$(sed -n "$pattern" "$tmp/plan.summary")"
echo "measured under the plan: ${value:-?} ${unit:-} over ${k:-?}; the job's steps: ${steps:-?} ms"
awk -v v="${value:-0}" -v u="${unit:-}" -v k="${k:-0}" -v s="$steps" 'BEGIN {
    m = v * (u == "s" ? 1e3 : u == "ms" ? 1 : u == "us" ? 1e-3 : u == "ns" ? 1e-6 : 0)
    n = split(s, t, " ")
    if (k < 1 || n < k + 1 || m <= 0) exit 1
    for (i = n - k; i < n; i++) e += t[i] / k
    exit !(m > 0.97 * e && m < 1.03 * e) }' ||
    fail_showing "$tmp/plan.summary" "measured ${value:-nothing} ${unit:-} under the plan\
 (${k:-?} iterations), the job's steps: ${steps:-?} ms"

# The reactive engine: one line, no plan moves.
ELIXIR_POLICY=reactive ELIXIR_TRACE=$tmp/reactive.trace shim_train_device 2 "${JOB[@]}"
[ "$got" = "$want" ] || fail_showing "$tmp/o.err" "reactive, recorded: expected digest $want"
"$TOOL" summary "$tmp/reactive.trace" >"$tmp/reactive.summary" 2>&1 ||
    fail_showing "$tmp/reactive.summary" "elixir-trace cannot read the reactive run's trace"
grep -E '^plan' "$tmp/reactive.summary"
[ "$(grep -c '^plan' "$tmp/reactive.summary")" = 1 ] &&
    grep -Eq '^plan +none: the reactive engine \(ELIXIR_POLICY=reactive\); mapping calls [1-9]' \
        "$tmp/reactive.summary" ||
    fail_showing "$tmp/reactive.summary" "the reactive run's plan section is not one line"
echo "the trace shows the plan at work"
