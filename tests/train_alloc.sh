#!/bin/bash
# SPDX-License-Identifier: MIT
# train_alloc.sh - examples/train.py --preset tiny on the simulator, once with one cuMemAlloc per
# tensor and once through its caching allocator: both learn, race nothing, and agree bit for bit
# (same losses, same digest).
set -u
. tests/lib/sim_env.sh
sim_setup
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for mode in per-tensor pooled; do
    train --preset tiny --steps 12 --alloc "$mode" >"$tmp/$mode.out" 2>"$tmp/$mode.err"
    rc=$?
    cat "$tmp/$mode.err"
    if [ $rc -ne 0 ]; then
        echo "FAIL: --alloc $mode: expected exit 0, got $rc"
        exit 1
    fi
    train_output_ok "$tmp/$mode.out" 12 || exit 1
    train_loss_falls "$tmp/$mode.out" || exit 1
done

a=$(train_digest "$tmp/per-tensor.out") b=$(train_digest "$tmp/pooled.out")
if [ "$a" != "$b" ] || ! cmp -s "$tmp/per-tensor.out" "$tmp/pooled.out"; then
    echo "FAIL: the allocators disagree"
    echo "  per-tensor: $(train_losses "$tmp/per-tensor.out") digest $a"
    echo "  pooled:     $(train_losses "$tmp/pooled.out") digest $b"
    exit 1
fi
echo "per-tensor and pooled agree: digest $a"
