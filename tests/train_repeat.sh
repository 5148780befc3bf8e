#!/bin/bash
# SPDX-License-Identifier: MIT
# train_repeat.sh - two runs of examples/train.py --preset tiny on the simulator print the same
# losses and the same digest (the job and its kernels are deterministic); a third run with
# another seed gives another digest (the digest covers the weights).  The second run times its
# steps (--step-times): the same output, and one time per step on stderr, each above zero.
set -u
. tests/lib/sim_env.sh
sim_setup
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for run in 1 2 3; do
    seed=1
    [ $run -eq 3 ] && seed=2
    extra=()
    [ $run -eq 2 ] && extra=(--step-times)
    train --preset tiny --seed $seed "${extra[@]}" >"$tmp/$run.out" 2>"$tmp/$run.err"
    rc=$?
    if [ $rc -ne 0 ]; then
        cat "$tmp/$run.err"
        echo "FAIL: run $run: expected exit 0, got $rc"
        exit 1
    fi
done
d1=$(train_digest "$tmp/1.out") d2=$(train_digest "$tmp/2.out") d3=$(train_digest "$tmp/3.out")
if [ -z "$d1" ] || [ "$d1" != "$d2" ] || ! cmp -s "$tmp/1.out" "$tmp/2.out"; then
    echo "FAIL: two runs differ"
    echo "  run 1: $(train_losses "$tmp/1.out") digest $d1"
    echo "  run 2: $(train_losses "$tmp/2.out") digest $d2"
    exit 1
fi
steps=$(grep -c '^step [0-9]* loss' "$tmp/2.out")
times=$(sed -n 's/^train.py: step times (ms): //p' "$tmp/2.err")
if ! echo "$times" | awk -v n="$steps" 'NF != n || n < 1 { exit 1 }
                                       { for (i = 1; i <= NF; i++) if (!($i > 0)) exit 1 }'; then
    echo "FAIL: --step-times: expected $steps times above zero, got '$times'"
    exit 1
fi
if [ "$d3" = "$d1" ]; then
    echo "FAIL: --seed 2 gave the digest of --seed 1 ($d1)"
    exit 1
fi
echo "two runs agree: digest $d1"
