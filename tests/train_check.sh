#!/bin/bash
# SPDX-License-Identifier: MIT
# train_check.sh - examples/train.py --preset tiny --check on the simulator: every loss of the
# kernels agrees with the pure-Python float64 reference within 1e-5.
set -u
. tests/lib/sim_env.sh
sim_setup
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

train --preset tiny --check >"$tmp/out" 2>"$tmp/err"
rc=$?
cat "$tmp/err"
if [ $rc -ne 0 ]; then
    echo "FAIL: expected exit 0, got $rc"
    exit 1
fi
train_output_ok "$tmp/out" 12 || exit 1
if ! grep -q '^check: ok' "$tmp/err"; then
    echo "FAIL: expected a line 'check: ok' on stderr"
    exit 1
fi
