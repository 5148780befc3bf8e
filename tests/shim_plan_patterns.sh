#!/bin/bash
# SPDX-License-Identifier: MIT
# shim_plan_patterns.sh - the three jobs of bench/plan_patterns.c (layered training, a long
# chain with large activations, many small tensors), each run once for a few iterations
# without the shim and under libelixir.so with ELIXIR_POLICY=plan on a GPU budget of
# half of the job's own peak of live allocations: the same digest both ways, with the
# shim paging.  Whether a plan was made and followed is printed, not required: this test
# proves that the benchmark's jobs run and stay bit-identical; the benchmark
# (bench/plan_patterns.sh) measures them side by side with the reactive engine.  No timing.
# The race checker fails any run with an unordered access, the plan's moves included.
set -u
case ${SANITIZE:-} in
*thread*)
    echo "skip: the jobs page hundreds of MiB, too slow under ThreadSanitizer"
    exit 77 ;;
esac
. tests/lib/sim_env.sh
sim_setup
sim_tmpdir
prog=$BUILD/bench/plan_patterns
iters=4         # the detector finds the loop at the second, the third is profiled, the fourth planned
[ -x "$prog" ] || { echo "FAIL: $prog is missing (run make first)"; exit 1; }

for pattern in layers chain small; do
    run_or_fail "$pattern without the shim" plain sim_run "$prog" "$pattern" "$iters"
    want=$(sed -n 's/^digest //p' "$tmp/plain.out")
    live=$(sed -n 's/.*peak of live allocations \([0-9]*\).*/\1/p' "$tmp/plain.out")
    [ -n "$want" ] && [ "${live:-0}" -ge 64 ] ||
        fail_showing "$tmp/plain.out" "$pattern: no digest or peak from the run without the shim"
    budget=$((live / 2))
    ELIXIR_POLICY=plan ELIXIR_GPU_MEMORY=${budget}M ELIXIR_LOG=info ELIXIR_LOG_SUBSYS=RES \
        ELIXIR_STATS=1 LD_PRELOAD=${LD_PRELOAD:+$LD_PRELOAD:}$SHIM \
        sim_run "$prog" "$pattern" "$iters" >"$tmp/o.out" 2>"$tmp/o.err" ||
        fail_showing "$tmp/o.err" "$pattern under the shim exited $?"
    got=$(sed -n 's/^digest //p' "$tmp/o.out")
    plans=$(sed -n 's/.*device 0: plan: \([0-9]*\) planned.*/\1/p' "$tmp/o.err")
    foreseen=$(shim_stat "$tmp/o.err" "operations foreseen")
    moved=$(shim_stat "$tmp/o.err" "migrations to host")
    echo "$pattern, $budget MiB of $live: digest $got (without the shim $want); plans" \
         "${plans:-?}, operations foreseen ${foreseen:-?}, migrations to host ${moved:-?}"
    [ "$got" = "$want" ] || fail_showing "$tmp/o.err" "$pattern: expected digest $want"
    [ "${moved:-0}" -gt 0 ] || fail_showing "$tmp/o.err" "$pattern: nothing was paged out"
done
echo "every job gives the same digest under the plan at half its live peak"
