#!/bin/bash
# SPDX-License-Identifier: MIT
# shim_plan_train.sh - examples/train.py under libelixir.so with ELIXIR_POLICY=plan on a
# simulated GPU of 1/2, 1/4 and 1/8 of the job's footprint, in both allocation patterns: the
# same parameter digest as without the shim, a plan made from the profiled iteration and
# followed (operations foreseen, moves issued); the bytes moved under the plan and under the
# reactive engine are printed side by side (bench/train_oversub.sh measures them per step; at
# this size most chunks are slabs shared by tensors of every lifetime, and the plan moves about
# as much as the reactive engine).  Where an operation reaches more chunks than the GPU holds,
# it runs in place and the plan is made for the rest: a plan at every fraction.  Then again
# with the plan's evictions unmapping (ELIXIR_PLAN_UNMAP=1), where evictions complete ahead of
# their copies (per tensor).  Last, a wider pooled job at 1/2 and 1/4, unmapped, whose plan
# says whether it brings in the chunks behind kernels' pointers (POL_NEAR in the profile), and
# whose prefetches refused while a kernel reaches their chunk go once it is done; and mapped at
# 1/2, where the plan evicts chunks behind a kernel's pointers just before it.  The race
# checker fails the run (exit 66) on any unordered access, asynchronous moves included.
set -u
. tests/lib/sim_env.sh
sim_setup
sim_tmpdir
JOB=(--layers 2 --width 256 --heads 4 --seq 16 --batch 2 --vocab 512 --steps 6)

# mib FILE: MiB moved both ways: migrations (of one 2 MiB chunk each) in the statistics.
mib() {
    sed -n 's/.*migrations to host \([0-9]*\) (.*), to GPU \([0-9]*\) (.*/\1 \2/p' \
        "$1" | awk '{ print 2 * ($1 + $2); exit }'
}

for mode in per-tensor pooled; do
    shim_train_reference "$mode" "${JOB[@]}" --alloc "$mode"
    for frac in 2 4 8; do
        ELIXIR_POLICY=reactive shim_train_device "$frac" "${JOB[@]}" --alloc "$mode"
        [ "$got" = "$want" ] || fail_showing "$tmp/o.err" "reactive: expected digest $want"
        reactive=$(mib "$tmp/o.err")
        ELIXIR_POLICY=plan ELIXIR_LOG=info ELIXIR_LOG_SUBSYS=RES \
            shim_train_device "$frac" "${JOB[@]}" --alloc "$mode"
        planned=$(mib "$tmp/o.err")
        foreseen=$(shim_stat "$tmp/o.err" "operations foreseen")
        chunks=$(sed -n 's/.*moves issued [0-9]* (\([0-9]*\) chunks.*/\1/p' "$tmp/o.err" | head -1)
        echo "$mode, 1/$frac of $peak MiB: digest ${got:-none}; moved $planned MiB planned," \
             "$reactive MiB reactive; operations foreseen ${foreseen:-?}, chunks moved by" \
             "the plan ${chunks:-?}"
        [ "$got" = "$want" ] || fail_showing "$tmp/o.err" "plan: expected digest $want"
        # (At 1/8 per tensor and 1/4 pooled of this small job some operations reach more
        # chunks than the GPU holds: they run in place, and the plan is made for the rest.)
        grep -q "device 0: planned" "$tmp/o.err" || fail_showing "$tmp/o.err" \
            "no plan was made at 1/$frac"
        [ "${foreseen:-0}" -gt 0 ] || fail_showing "$tmp/o.err" "no operation followed the plan"
        [ "${chunks:-0}" -gt 0 ] || fail_showing "$tmp/o.err" "the plan moved nothing at 1/$frac"
        # The plan's evictions unmapping: an eviction completes ahead of its copy, and the
        # prefetch taking its GPU memory waits for that copy on the device.
        ELIXIR_POLICY=plan ELIXIR_PLAN_UNMAP=1 shim_train_device "$frac" "${JOB[@]}" --alloc "$mode"
        early=$(sed -n 's/.*done ahead of their copies \([0-9]*\),.*/\1/p' "$tmp/o.err" | head -1)
        echo "$mode, 1/$frac, evictions unmapped: digest ${got:-none}; evictions done ahead of" \
             "their copies ${early:-?}"
        [ "$got" = "$want" ] || fail_showing "$tmp/o.err" "plan, unmapped: expected digest $want"
        [ "$mode" = pooled ] || [ "${early:-0}" -gt 0 ] ||
            fail_showing "$tmp/o.err" "no eviction completed ahead of its copy at 1/$frac"
    done
done
# A wider job, pooled, at 1/2 with evictions unmapping: its kernels' pointers into segments of
# several chunks leave chunks behind them, which the profile records (POL_NEAR) and the plan
# either brings in or leaves where they are, saying which; the digest is the same either way.
WIDE=(--layers 2 --width 512 --heads 8 --seq 16 --batch 2 --vocab 1024 --steps 6)
shim_train_reference "wide pooled" "${WIDE[@]}" --alloc pooled
ELIXIR_POLICY=plan ELIXIR_PLAN_UNMAP=1 ELIXIR_LOG=info ELIXIR_LOG_SUBSYS=RES \
    shim_train_device 2 "${WIDE[@]}" --alloc pooled
near=$(sed -n "s/.*chunks behind kernels' pointers \([a-z ]*\);.*/\1/p" "$tmp/o.err" | head -1)
echo "wide pooled, 1/2 of $peak MiB, evictions unmapped: digest ${got:-none}; chunks behind" \
     "kernels' pointers ${near:-none recorded}"
[ "$got" = "$want" ] || fail_showing "$tmp/o.err" "wide pooled: expected digest $want"
[ -n "$near" ] || fail_showing "$tmp/o.err" "wide pooled: the plan says nothing of chunks" \
    "behind kernels' pointers"
# At 1/4 the plan leaves them where they are: its prefetch of such a chunk, refused while the
# kernel that reached it runs, goes when the operation that needs it comes (the host waiting
# for that kernel), not to the reactive engine.
ELIXIR_POLICY=plan ELIXIR_PLAN_UNMAP=1 shim_train_device 4 "${WIDE[@]}" --alloc pooled
waited=$(sed -n 's/.* chunks, \([0-9]*\) of them once a use in flight completed.*/\1/p' \
         "$tmp/o.err" | head -1)
left=$(sed -n 's/.* \([0-9]*\) left to the reactive engine.*/\1/p' "$tmp/o.err" | head -1)
echo "wide pooled, 1/4, evictions unmapped: digest ${got:-none}; chunks moved once a use in" \
     "flight completed ${waited:-?}, left to the reactive engine ${left:-?}"
[ "$got" = "$want" ] || fail_showing "$tmp/o.err" "wide pooled at 1/4: expected digest $want"
[ "${waited:-0}" -gt "${left:-0}" ] || fail_showing "$tmp/o.err" "wide pooled at 1/4:" \
    "expected more moves once a use in flight completed than left to the reactive engine"
# At 1/2 with evicted memory mapped, the plan makes a kernel's room by evicting chunks behind
# that kernel's own pointers just before it: those evictions go (the kernel does not keep
# them; they complete before it is enqueued), so the prefetches that need their room go too,
# and none is left to the reactive engine.
ELIXIR_POLICY=plan shim_train_device 2 "${WIDE[@]}" --alloc pooled
left=$(sed -n 's/.* \([0-9]*\) left to the reactive engine.*/\1/p' "$tmp/o.err" | head -1)
echo "wide pooled, 1/2, evicted memory mapped: digest ${got:-none}; left to the reactive" \
     "engine ${left:-?}"
[ "$got" = "$want" ] || fail_showing "$tmp/o.err" "wide pooled at 1/2: expected digest $want"
[ "${left:-1}" -eq 0 ] || fail_showing "$tmp/o.err" "wide pooled at 1/2: expected no move" \
    "of the plan left to the reactive engine"
echo "same digest under the plan at 1/2, 1/4 and 1/8 of the footprint"
