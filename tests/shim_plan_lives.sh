#!/bin/bash
# SPDX-License-Identifier: MIT
# shim_plan_lives.sh - the profile's buffer lives under ELIXIR_POLICY=plan, on two jobs of
# bench/plan_patterns.c at half their live peak: layers and chain allocate an activation per
# layer in the forward pass and free it in the backward pass, and allocate the first one after
# the copy of the step's input, before the step's first launch (the iteration detector counts
# that copy, so that allocation, with the step before).  Under the plan each job must be
# planned (a profile the planner refuses turns the plan off), the plan must see the
# activations born in the iteration (chunks it materialises, "new" in the log: a profile that
# misses the births describes each activation as a buffer alive all along, more chunks than
# the job ever holds), and the digest must be the one without the shim.  The third job, small,
# keeps every tensor in slab chunks of small allocations: a slab chunk that its frees empty is
# born again with its next allocation, and the plan must see those births too.  With every
# operation foreseen, no eviction of the plan may be cancelled: one whose copy completed with
# no use of its chunk since completes, though a later event now covers that use.  The
# reactive engine evicts nothing while the plan is followed: where an allocation needs GPU
# room, the plan's moves due before the next operation are issued first and their evictions
# give it (made first, the room took the very chunks those moves evict: in chain at a
# quarter of its footprint with evictions unmapped, two in three of the plan's evictions).
# One exception, with ELIXIR_PLAN_UNMAP=1 set by the caller: layers allocates its first
# activation after the iteration's last operation, and the plan makes its room before the
# activation's first use, a few operations into the next iteration; where evictions stay
# mapped, one still in flight gives it, where they unmap none is left and the reactive
# engine evicts two chunks.  No timing.
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
unmap=${ELIXIR_PLAN_UNMAP:-0}
iters=6         # the detector finds the loop at the second, the third is profiled; planning waits
                # (up to four iterations) for the profile's timing events
[ -x "$prog" ] || { echo "FAIL: $prog is missing (run make first)"; exit 1; }

for pattern in chain layers small; do
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
    line=$(grep "device 0: planned" "$tmp/o.err" | head -1)
    new=$(echo "$line" | sed -n 's/.*, new \([0-9]*\)).*/\1/p')
    echo "$pattern, $budget MiB of $live: digest $got (without the shim $want);" \
         "${line#*device 0: }"
    grep -q "no planner input" "$tmp/o.err" &&
        fail_showing "$tmp/o.err" "$pattern: the planner refused the profiled iteration"
    [ -n "$line" ] || fail_showing "$tmp/o.err" "$pattern: no plan was made"
    [ "${new:-0}" -gt 0 ] ||
        fail_showing "$tmp/o.err" "$pattern: the plan materialises no chunk (no birth seen)"
    cancelled=$(sed -n 's/.*device 0: plan: .*evictions [0-9]* (cancelled \([0-9]*\).*/\1/p' \
                "$tmp/o.err")
    [ "${cancelled:-x}" = 0 ] ||
        fail_showing "$tmp/o.err" "$pattern: expected no eviction cancelled, got ${cancelled:-none}"
    victims=$(shim_stat "$tmp/o.err" "the victim the plan uses last")
    # (unmapped, layers's first activation, allocated after the iteration's last operation,
    # takes two chunks the reactive engine evicts: see the header)
    [ "$pattern $unmap" = "layers 1" ] || [ "${victims:-x}" = 0 ] ||
        fail_showing "$tmp/o.err" "$pattern: expected no reactive eviction, got ${victims:-none}"
    [ "$got" = "$want" ] || fail_showing "$tmp/o.err" "$pattern: expected digest $want"
done
echo "every job planned with its activations born and freed in the iteration, no eviction" \
     "cancelled, none reactive, same digest"
