#!/bin/bash
# SPDX-License-Identifier: MIT
# train_demo.sh - the demo preset (more than 4 GiB of device memory) without the shim on a
# simulated device of 6 GiB, as `make demo ELIXIR=0` runs it: it trains and races nothing; its
# wall and CPU time are printed, not judged.  Slow, and too slow under sanitizers, so it runs
# only with ELIXIR_TEST_SLOW=1.  (demo_full.sh runs `make demo` itself.)
set -u
if [ "${ELIXIR_TEST_SLOW:-0}" != 1 ]; then
    echo "skip: set ELIXIR_TEST_SLOW=1 to run the demo"
    exit 77
fi
if [ -n "${SANITIZE:-}" ]; then
    echo "skip: the demo is too slow under SANITIZE=$SANITIZE"
    exit 77
fi
. tests/lib/sim_env.sh
sim_setup
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The limit is on CPU time (user + sys of the whole job), which other load on the machine does
# not inflate the way it inflates wall-clock time; both are reported.
TIMEFORMAT='%R %U %S'
{ time "$SIM_LAUNCHER" --memory 6G -- "$PYTHON" examples/train.py --preset demo \
      >"$tmp/out" 2>"$tmp/err"; } 2>"$tmp/time"
rc=$?
cat "$tmp/out" "$tmp/err"
if [ $rc -ne 0 ]; then
    echo "FAIL: expected exit 0, got $rc"
    exit 1
fi
steps=$(grep -c '^step ' "$tmp/out")
train_output_ok "$tmp/out" "$steps" || exit 1
train_loss_falls "$tmp/out" || exit 1
read -r wall user sys <"$tmp/time"
cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.1f", u + s }')
echo "demo: $wall s wall, $cpu s CPU (reported, not judged: the machine may be busy)"
