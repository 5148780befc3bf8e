#!/bin/bash
# SPDX-License-Identifier: MIT
# shim_plan_retime.sh - times under the plan (shim/res_plan_retime.c).  examples/train.py,
# pooled, on a simulated GPU of 1/8 of its footprint: most of its kernels reach more than the
# GPU holds and run in place, reading their chunks in host memory over the link, which the
# profile (the reactive engine's iteration, those chunks brought in) did not time.  The first
# iteration under the plan is timed again, the model's times for it miss by more than 5%, and
# the plan's prediction is made again with both timings: the log and the statistics say so,
# and the prediction is within 10% of the last steps, after it (virtual time; from the
# profile's times alone it was 0.61 of them).  The trace says the same (format 1.10): its
# summary lists plan 2 as plan 1 predicted again, measured at 1.00x-1.05x of it.  The digest
# stays the job's.  Per tensor at 1/2
# every chunk an operation reaches is on the GPU under the plan, as in the profile: timed
# again, no operation ran with another count away, and the prediction stays.
set -u
. tests/lib/sim_env.sh
sim_setup
sim_tmpdir
WIDE=(--layers 2 --width 512 --heads 8 --seq 16 --batch 2 --vocab 1024 --steps 10 --step-times)

shim_train_reference "wide pooled" "${WIDE[@]}" --alloc pooled
ELIXIR_POLICY=plan ELIXIR_LOG=info ELIXIR_LOG_SUBSYS=RES ELIXIR_TRACE=$tmp/p.trace \
    shim_train_device 8 "${WIDE[@]}" --alloc pooled
[ "$got" = "$want" ] || fail_showing "$tmp/o.err" "pooled at 1/8: expected digest $want"
line=$(grep -m1 'under the plan timed again' "$tmp/o.err")
echo "pooled, 1/8 of $peak MiB: ${line#*device 0: }"
case "$line" in
*"its prediction made again with both timings") ;;
*) fail_showing "$tmp/o.err" "pooled at 1/8: expected the first iteration under the plan" \
       "timed again and the plan predicted again" ;;
esac
again=$(sed -n 's/.*re-planned, \([0-9]*\) predicted again with the times.*/\1/p' "$tmp/o.err")
[ "${again:-0}" -eq 1 ] || fail_showing "$tmp/o.err" "pooled at 1/8: the statistics count" \
    "${again:-no} predictions made again, expected 1"
predicted=$(sed -n 's/.*plan: [1-9].*predicted iteration \([0-9.]*\) ms.*/\1/p' "$tmp/o.err")
steps=$(sed -n 's/^train\.py: step times (ms): //p' "$tmp/o.err")
measured=$(echo "$steps" | awk '{ print ($8 + $9 + $10) / 3 }')
echo "pooled, 1/8: predicted ${predicted:-?} ms, steps 8-10 measured ${measured:-?} ms ($steps)"
awk -v p="${predicted:-0}" -v m="${measured:-0}" \
    'BEGIN { exit !(m > 0 && p / m > 0.9 && p / m < 1.1) }' ||
    fail_showing "$tmp/o.err" "pooled at 1/8: the prediction is not within 10% of the steps"
"$BUILD/bin/elixir-trace" summary "$tmp/p.trace" >"$tmp/p.summary" 2>&1 ||
    fail_showing "$tmp/p.summary" "elixir-trace cannot read the trace"
sed -n '/^plan/,/^  operations/p' "$tmp/p.summary"
plan2=$(awk '/^  plan 2 at / { on = 1; print; next } on && /^    / { print; next } { on = 0 }' \
        "$tmp/p.summary")
grep -Eq '^  device 0: 2 plans made \(1 of them a plan predicted again\),' "$tmp/p.summary" &&
    echo "$plan2" | grep -Eq '^  plan 2 at .*: plan 1 predicted again with the times of itera' &&
    echo "$plan2" | grep -Eq '^    measured .*: 1\.0[0-5]x the prediction$' ||
    fail_showing "$tmp/p.summary" "pooled at 1/8: expected the summary to list plan 1" \
        "predicted again as plan 2, measured within 5% of it"

JOB=(--layers 2 --width 256 --heads 4 --seq 16 --batch 2 --vocab 512 --steps 6)
shim_train_reference "per tensor" "${JOB[@]}" --alloc per-tensor
ELIXIR_POLICY=plan ELIXIR_LOG=info ELIXIR_LOG_SUBSYS=RES \
    shim_train_device 2 "${JOB[@]}" --alloc per-tensor
[ "$got" = "$want" ] || fail_showing "$tmp/o.err" "per tensor at 1/2: expected digest $want"
line=$(grep -m1 'under the plan timed again' "$tmp/o.err")
echo "per tensor, 1/2 of $peak MiB: ${line#*device 0: }"
case "$line" in
*" 0 of them with another count"*"the prediction stays") ;;
*) fail_showing "$tmp/o.err" "per tensor at 1/2: expected an iteration timed again, none of" \
       "its operations with another count away, and the prediction kept" ;;
esac
grep -q 'plan: 1 planned, 0 re-planned, 0 predicted again' "$tmp/o.err" ||
    fail_showing "$tmp/o.err" "per tensor at 1/2: expected one plan, not predicted again"
echo "predicted again where the times under the plan missed the model's; kept where they did not"
