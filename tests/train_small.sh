#!/bin/bash
# SPDX-License-Identifier: MIT
# train_small.sh - examples/train.py --preset small trains on the simulator (loss falls) in both
# allocation modes with the same digest, and no race is reported.
set -u
. tests/lib/sim_env.sh
sim_setup
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for mode in per-tensor pooled; do
    train --preset small --steps 12 --alloc "$mode" >"$tmp/$mode.out" 2>"$tmp/$mode.err"
    rc=$?
    cat "$tmp/$mode.err"
    if [ $rc -ne 0 ]; then
        echo "FAIL: --alloc $mode: expected exit 0, got $rc"
        exit 1
    fi
    train_output_ok "$tmp/$mode.out" 12 || exit 1
    train_loss_falls "$tmp/$mode.out" || exit 1
done
if ! cmp -s "$tmp/per-tensor.out" "$tmp/pooled.out"; then
    echo "FAIL: the allocators disagree"
    echo "  per-tensor: $(train_losses "$tmp/per-tensor.out") $(train_digest "$tmp/per-tensor.out")"
    echo "  pooled:     $(train_losses "$tmp/pooled.out") $(train_digest "$tmp/pooled.out")"
    exit 1
fi
