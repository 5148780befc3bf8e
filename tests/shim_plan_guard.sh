#!/bin/bash
# SPDX-License-Identifier: MIT
# shim_plan_guard.sh - the guard that drops a plan slower than paging on demand
# (ELIXIR_PLAN_GUARD): examples/train.py per tensor under ELIXIR_POLICY=plan on a simulated GPU
# of half its footprint.  With the default the plan, faster than the reactive iteration
# profiled before it, is kept, and the statistics give both figures; with the limit at 0.01
# (the plan must take at most 1/100 of the reactive iteration) it is dropped after the two
# iterations judged, with one warning, the reactive engine serves the rest (fewer operations
# foreseen than with the plan kept) and the digest stays that of the run without the shim;
# its trace's GUARD record gives `elixir-trace summary` the verdict, given as the fourth
# iteration after the profiled one began (the first under the plan is not judged, the next
# two are); with 0 the plan is kept whatever it measures, and the trace says the guard was
# off.  (tests/shim_plan_victim.c has a plan that the default drops.)
set -u
. tests/lib/sim_env.sh
sim_setup
sim_tmpdir
JOB=(--layers 2 --width 256 --heads 4 --seq 16 --batch 2 --vocab 512 --steps 8 --alloc per-tensor)
export ELIXIR_POLICY=plan ELIXIR_LOG=warn ELIXIR_STATS=1

shim_train_reference "train.py" "${JOB[@]}"

# guard_run LIMIT: the job at half its footprint with ELIXIR_PLAN_GUARD=LIMIT, traced, its
# digest checked; sets verdict ("kept", "dropped" or "not judged"), planned and reactive (the
# statistics' iteration times, ms), seen (operations foreseen), drops (warnings of a drop),
# and writes the trace's summary to $tmp/summary.txt.
guard_run() {
    local limit=$1
    ELIXIR_PLAN_GUARD=$limit ELIXIR_TRACE="$tmp/$limit.trace" shim_train_device 2 "${JOB[@]}"
    [ "$got" = "$want" ] || fail_showing "$tmp/o.err" "guard $limit: expected digest $want"
    read -r verdict planned reactive <<<"$(sed -n 's/.*device 0: plan: .*; guard: \([a-z ]*[a-z]\)\( (planned iteration \([0-9.]*\) ms against \([0-9.]*\) ms reactive)\)\{0,1\}$/\1 \3 \4/p' \
        "$tmp/o.err" | head -1)"
    seen=$(shim_stat "$tmp/o.err" "operations foreseen")
    drops=$(grep -c "the plan is dropped, and the reactive engine serves" "$tmp/o.err")
    echo "guard $limit: ${verdict:-?}, planned ${planned:-?} ms against ${reactive:-?} ms" \
         "reactive; operations foreseen ${seen:-?}"
    "$BUILD/bin/elixir-trace" summary "$tmp/$limit.trace" >"$tmp/summary.txt" 2>&1 ||
        fail_showing "$tmp/summary.txt" "guard $limit: elixir-trace summary failed"
}

guard_run 1.1
[ "$verdict" = kept ] || fail_showing "$tmp/o.err" "guard 1.1: the plan was not kept"
[ -n "$planned" ] && [ -n "$reactive" ] ||
    fail_showing "$tmp/o.err" "guard 1.1: no planned and reactive iteration times"
awk -v p="$planned" -v r="$reactive" 'BEGIN { exit !(p > 0 && p < r) }' ||
    fail_showing "$tmp/o.err" "guard 1.1: the planned iteration is not the shorter"
[ "$drops" -eq 0 ] || fail_showing "$tmp/o.err" "guard 1.1: a plan was dropped"
kept_seen=$seen

guard_run 0.01
[ "$verdict" = dropped ] || fail_showing "$tmp/o.err" "guard 0.01: the plan was not dropped"
[ "$drops" -eq 1 ] || fail_showing "$tmp/o.err" "guard 0.01: not one warning of the drop"
grep -q "device 0: plan: 1 planned, 0 re-planned" "$tmp/o.err" ||
    fail_showing "$tmp/o.err" "guard 0.01: profiled or planned again after the drop"
[ "${seen:-0}" -gt 0 ] && [ "$seen" -lt "${kept_seen:-0}" ] ||
    fail_showing "$tmp/o.err" "guard 0.01: as many operations foreseen as with the plan kept"
grep -E "^    guard: dropped as iteration [0-9]+ began: .*limit 0\.01x\); the reactive" \
    "$tmp/summary.txt" || fail_showing "$tmp/summary.txt" "guard 0.01: no verdict in the summary"
profiled=$(sed -n 's/^  plan 1 at .*: profiled iteration \([0-9]*\),.*/\1/p' "$tmp/summary.txt")
judged=$(sed -n 's/^    guard: dropped as iteration \([0-9]*\) began.*/\1/p' "$tmp/summary.txt")
[ -n "$profiled" ] && [ "${judged:-0}" -eq $((profiled + 4)) ] ||
    fail_showing "$tmp/summary.txt" \
        "guard 0.01: verdict as iteration ${judged:-?} began, not the profiled ${profiled:-?} + 4"

guard_run 0
[ "$verdict" = kept ] || fail_showing "$tmp/o.err" "guard 0: the plan was not kept"
[ "$drops" -eq 0 ] || fail_showing "$tmp/o.err" "guard 0: a plan was dropped"
grep -E "^    guard: kept as iteration [0-9]+ began: .*, guard off\)$" "$tmp/summary.txt" ||
    fail_showing "$tmp/summary.txt" "guard 0: the summary does not say the guard was off"
echo "the guard keeps a faster plan, drops one slower than asked, and never drops with 0"
