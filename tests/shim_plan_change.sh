#!/bin/bash
# SPDX-License-Identifier: MIT
# shim_plan_change.sh - a job whose iteration changes, under ELIXIR_POLICY=plan on a simulated
# GPU of a quarter (per-tensor) or a half (pooled) of its footprint: examples/train.py with an
# evaluation pass (a forward pass of a held-out batch) after every 4th step keeps its plan
# (one odd iteration is served by the reactive engine, no re-plan), and one with an evaluation
# pass after every step from step 7 on still follows it (the evaluation's forward pass is the
# plan's, as the iteration detector sees it).  A job whose batch grows for good at step 6
# (--batch-from 6:16, eight times the sequences, so operations reach more chunks) re-plans.
# Every run gives the digest of the job without the shim (the evaluation passes change no
# parameter), and the race checker fails any run with an unordered access.
set -u
. tests/lib/sim_env.sh
sim_setup
sim_tmpdir
JOB=(--layers 2 --width 256 --heads 4 --seq 16 --batch 2 --vocab 512 --steps 12)

# (A quarter of the pooled job leaves room for fewer chunks than one operation reaches: no
# plan can exist there, so it runs at a half.)
for mode in per-tensor pooled; do
    frac=4
    [ "$mode" = pooled ] && frac=2
    shim_train_reference "$mode" "${JOB[@]}" --alloc "$mode"
    for change in "--eval-every 4" "--eval-every 1 --eval-from 7"; do
        # shellcheck disable=SC2086
        ELIXIR_POLICY=plan ELIXIR_LOG=info ELIXIR_LOG_SUBSYS=RES \
            shim_train_device "$frac" "${JOB[@]}" --alloc "$mode" $change
        plans=$(sed -n 's/.*plan: \([0-9]*\) planned, \([0-9]*\) re-planned.*/\1 \2/p' "$tmp/o.err")
        unforeseen=$(shim_stat "$tmp/o.err" "not foreseen")
        echo "$mode, $change: digest ${got:-none}; plans made, re-plans: ${plans:-?};" \
             "operations not foreseen ${unforeseen:-?}"
        [ "$got" = "$want" ] || fail_showing "$tmp/o.err" "$change: expected digest $want"
        grep -q "eval after step 12 loss" "$tmp/o.err" ||
            fail_showing "$tmp/o.err" "$change: no evaluation pass after step 12"
        set -- $plans
        [ "${1:-0}" -ge 1 ] || fail_showing "$tmp/o.err" "$change: no plan was made"
        [ "${unforeseen:-0}" -gt 0 ] ||
            fail_showing "$tmp/o.err" "$change: the evaluation passes were all foreseen"
        case $change in
        *eval-from*) ;;     # (train and evaluate alternate: the evaluation follows the plan's
                            # forward part, and the steps the whole plan; see res_plan.c)
        *) [ "${2:-0}" = 0 ] ||
            fail_showing "$tmp/o.err" "$change: an occasional evaluation pass re-planned" ;;
        esac
    done
done
# A permanent change: from step 6 on, sixteen sequences per step instead of two.  The plan of the
# old iteration stops matching; after two straying iterations the shim profiles and plans the
# new one, and follows it to the end.
for mode in per-tensor pooled; do
    frac=4
    [ "$mode" = pooled ] && frac=2
    shim_train_reference "$mode" "${JOB[@]}" --alloc "$mode" --batch-from 6:16
    ELIXIR_POLICY=plan ELIXIR_LOG=info ELIXIR_LOG_SUBSYS=RES \
        shim_train_device "$frac" "${JOB[@]}" --alloc "$mode" --batch-from 6:16
    plans=$(sed -n 's/.*plan: \([0-9]*\) planned, \([0-9]*\) re-planned.*/\1 \2/p' "$tmp/o.err")
    echo "$mode, --batch-from 6:16: digest ${got:-none}; plans made, re-plans: ${plans:-?}"
    [ "$got" = "$want" ] || fail_showing "$tmp/o.err" "--batch-from 6:16: expected digest $want"
    set -- $plans
    [ "${2:-0}" -ge 1 ] || fail_showing "$tmp/o.err" "--batch-from 6:16: the shim did not re-plan"
    [ "${1:-0}" -ge 2 ] ||
        fail_showing "$tmp/o.err" "--batch-from 6:16: no plan was made for the new iteration"
done
echo "same digest while the iteration changes; an occasional evaluation pass keeps the plan;" \
     "a lasting change re-plans"
