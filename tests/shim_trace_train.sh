#!/bin/bash
# SPDX-License-Identifier: MIT
# shim_trace_train.sh - examples/train.py recorded: the same parameter digest with
# ELIXIR_TRACE on as without the shim (recording changes no result), with everything resident
# and with a GPU budget of a quarter of the job (migrations recorded too); each trace reads
# back whole with elixir-trace, with one iteration marked per training step, in at most 32
# bytes per event on average (the whole file, tables included).  (The event count, iteration
# count and migration total are read from `elixir-trace summary`.)  `elixir-trace diff` of the
# two runs must show the migrations as new, the same iteration count and a lower GPU peak.
set -u
. tests/lib/sim_env.sh
sim_setup
sim_tmpdir
TOOL=$BUILD/bin/elixir-trace
STEPS=6
JOB=(--layers 2 --width 128 --heads 4 --seq 16 --batch 2 --vocab 256 --steps $STEPS)

for mode in per-tensor pooled; do
    run_or_fail "$mode without the shim" plain train "${JOB[@]}" --alloc "$mode"
    want=$(train_digest "$tmp/plain.out")
    [ -n "$want" ] || fail_showing "$tmp/plain.out" "no digest from the run without the shim"
    ELIXIR_TRACE=$tmp/full.trace run_or_fail "$mode recorded, unlimited" full \
        shim_train "${JOB[@]}" --alloc "$mode"
    peak=$(shim_stat "$tmp/full.err" "GPU peak")
    budget=$(( ${peak:-8} * 1024 * 1024 / 4 ))
    ELIXIR_TRACE=$tmp/small.trace ELIXIR_GPU_MEMORY=$budget run_or_fail \
        "$mode recorded, GPU budget $budget" small shim_train "${JOB[@]}" --alloc "$mode"
    for run in full small; do
        got=$(train_digest "$tmp/$run.out")
        if [ "$got" != "$want" ]; then
            tail -n 20 "$tmp/$run.err"
            echo "FAIL: $mode, $run: digest ${got:-none} while recording, $want without the shim"
            exit 1
        fi
        "$TOOL" summary "$tmp/$run.trace" >"$tmp/$run.summary" 2>&1 || {
            cat "$tmp/$run.summary"; echo "FAIL: $mode, $run: elixir-trace cannot read the trace"
            exit 1; }
        events=$(sed -n 's/^  format [0-9.]*, \([0-9]*\) events.*/\1/p' "$tmp/$run.summary")
        bytes=$(stat -c %s "$tmp/$run.trace")
        if [ -z "$events" ] || [ "$bytes" -gt $(( 32 * events )) ]; then
            cat "$tmp/$run.summary"
            echo "FAIL: $mode, $run: $bytes bytes for ${events:-no} events, over 32 per event"
            exit 1
        fi
        marks=$(sed -n 's/^iterations *\([0-9]*\) marked.*/\1/p' "$tmp/$run.summary")
        if [ "${marks:-0}" != "$STEPS" ]; then
            cat "$tmp/$run.summary"
            echo "FAIL: $mode, $run: ${marks:-no} iterations marked, the job ran $STEPS steps"
            exit 1
        fi
    done
    moved=$(sed -n 's/^migrations *\([0-9]*\).*/\1/p' "$tmp/small.summary")
    if [ "${moved:-0}" -eq 0 ]; then
        cat "$tmp/small.summary"; echo "FAIL: $mode: no migration recorded at a quarter of the GPU"
        exit 1
    fi
    "$TOOL" diff "$tmp/full.trace" "$tmp/small.trace" >"$tmp/diff" 2>&1 || {
        cat "$tmp/diff"; echo "FAIL: $mode: elixir-trace diff cannot compare the runs"; exit 1; }
    if ! grep -Eq "^migrations +0 +$moved +new \(was 0\)$" "$tmp/diff" ||
        ! grep -Eq "^iterations +$STEPS +$STEPS +same$" "$tmp/diff" ||
        ! grep -Eq "^peak gpu, device 0 +.* -[0-9.]+% \(x0\.[0-9]+\)$" "$tmp/diff"; then
        cat "$tmp/diff"
        echo "FAIL: $mode: diff does not show $moved new migrations, the same $STEPS" \
             "iterations and a lower GPU peak at a quarter of the GPU"
        exit 1
    fi
    echo "$mode: digest $want with and without recording; $STEPS iterations marked;" \
         "${moved:-?} migrations recorded at a quarter of the GPU; the last trace" \
         "$bytes bytes for $events events"
    rm -f "$tmp"/*.trace
done
