#!/bin/bash
# SPDX-License-Identifier: MIT
# shim_res_nvme_train.sh - examples/train.py under libelixir.so with the GPU budget at 1/4 and
# the host budget at 1/4 of the job's footprint and the NVMe tier in a scratch directory, in
# both allocation patterns: what fits in neither budget goes to NVMe and comes back, and the
# parameter digest is the one of the job without the shim; no race (the race checker fails the
# run with exit 66).  The same under the planned policy (ELIXIR_POLICY=plan), whose plan must
# place chunks on NVMe and read them ahead (dropping at most 1/8 of those reads: an operation
# that needs a chunk being read ahead takes that read), cancel at most 1/4 of its moves to
# NVMe (the reactive engine completes those from GPU memory for room) and, per tensor, issue
# some of its moves host -> NVMe ahead of their place and map back few chunks that its
# evictions left unmapped (those go to NVMe from their shadow mappings); and, in the per-tensor
# pattern, with a read that fails (ELIXIR_NVME_FAULT=read:150:eio, while the plan is
# followed): the tier is degraded (one line), the failed read counted, and the job either ends
# with the digest of the job without the shim (the read was tried again) or stops with
# CUDA_ERROR_OUT_OF_MEMORY (a degraded tier takes no new data, and the job needs more than GPU
# and host hold): never another digest.  Last, a pooled job twice as wide, planned, whose moves
# must at times wait for a staging chunk.
set -u
. tests/lib/sim_env.sh
sim_setup
sim_tmpdir
JOB=(--layers 2 --width 256 --heads 4 --seq 16 --batch 2 --vocab 512 --steps 5)
mkdir -p "$tmp/nvme"

for mode in per-tensor pooled; do
    shim_train_reference "$mode" "${JOB[@]}" --alloc "$mode"
    quarter=$((peak * 1024 * 1024 / 4))
    ELIXIR_HOST_MEMORY=$quarter ELIXIR_NVME_PATH="$tmp/nvme" ELIXIR_NVME_MEMORY=$((peak * 2))M \
        ELIXIR_NVME_VERIFY=1 shim_train_budget 4 "${JOB[@]}" --alloc "$mode"
    nvme=$(shim_stat "$tmp/o.err" "chunks to NVMe")
    echo "$mode, GPU and host budgets 1/4 of $peak MiB each: digest ${got:-none}," \
         "migrations to host ${moved:-?}, chunks to NVMe ${nvme:-?}"
    [ "$got" = "$want" ] || fail_showing "$tmp/o.err" "expected digest $want"
    [ "${nvme:-0}" -gt 0 ] || fail_showing "$tmp/o.err" "nothing went to NVMe"
    ELIXIR_POLICY=plan ELIXIR_HOST_MEMORY=$quarter ELIXIR_NVME_PATH="$tmp/nvme" \
        ELIXIR_NVME_MEMORY=$((peak * 2))M ELIXIR_NVME_VERIFY=1 \
        shim_train_budget 4 "${JOB[@]}" --alloc "$mode"
    out=$(sed -n 's/.*NVMe plan: moves to NVMe \([0-9]*\) (completed \([0-9]*\),.*/\2/p' "$tmp/o.err")
    outs=$(sed -n 's/.*NVMe plan: moves to NVMe \([0-9]*\) (.*/\1/p' "$tmp/o.err")
    cancelled=$(sed -n 's/.*NVMe plan: moves to NVMe [0-9]* (completed [0-9]*, cancelled \([0-9]*\),.*/\1/p' \
                    "$tmp/o.err")
    ahead=$(sed -n 's/.*reads ahead [0-9]* (completed \([0-9]*\),.*/\1/p' "$tmp/o.err")
    dropped=$(sed -n 's/.*reads ahead .* dropped \([0-9]*\)).*/\1/p' "$tmp/o.err")
    hoisted=$(sed -n 's/.*issued ahead of their place \([0-9]*\)).*/\1/p' "$tmp/o.err")
    staged=$(sed -n 's/.*moves that waited for a staging chunk \([0-9]*\).*/\1/p' "$tmp/o.err")
    back=$(sed -n 's/.* \([0-9]*\) mapped back unforeseen).*/\1/p' "$tmp/o.err")
    nvme=$(shim_stat "$tmp/o.err" "chunks to NVMe")
    echo "$mode, planned: digest ${got:-none}, the plan's moves to NVMe ${outs:-0} (completed" \
         "${out:-0}, cancelled ${cancelled:-?})," \
         "issued ahead of their place ${hoisted:-0}, reads ahead completed ${ahead:-0}," \
         "dropped ${dropped:-0}; moves that waited for a staging chunk ${staged:-?}; chunks to" \
         "NVMe ${nvme:-0}, mapped back ${back:-?}"
    [ "$got" = "$want" ] || fail_showing "$tmp/o.err" "planned: expected digest $want"
    if [ "${out:-0}" -eq 0 ] || [ "${ahead:-0}" -eq 0 ]; then
        fail_showing "$tmp/o.err" "the plan moved nothing to or from NVMe"
    fi
    # (The plan's demotions host -> NVMe go ahead of their place where the chunk is in host
    # memory then: res_plan.c's hoist.)
    if [ "$mode" = per-tensor ] && [ "${hoisted:-0}" -eq 0 ]; then
        fail_showing "$tmp/o.err" "no move to NVMe was issued ahead of its place"
    fi
    # (A host chunk that the plan's eviction left unmapped goes to NVMe from its shadow
    # mapping, not mapped back at its address first: res_unmapped_addr.  Pooled, launches that
    # run in place map back what they reach.)
    [ "$mode" != per-tensor ] || { [ -n "$back" ] && [ -n "$nvme" ] &&
                                   [ $((back * 8)) -le "$nvme" ]; } ||
        fail_showing "$tmp/o.err" "planned: more than 1/8 as many chunks mapped back as went to" \
                     "NVMe (or the statistics do not say)"
    # (The reactive engine, needing GPU room, completes the plan's moves GPU -> NVMe in flight
    # rather than cancel them to evict their chunks to host memory: res_nvme_flight_room.)
    [ -n "$cancelled" ] && [ $((cancelled * 4)) -le "${outs:-0}" ] ||
        fail_showing "$tmp/o.err" "planned: more than 1/4 of the moves to NVMe cancelled (or" \
                     "the statistics do not say)"
    # (A read ahead is dropped when its chunk is freed or taken by a fence; one that an
    # operation needs before the plan's own step comes is used, not read again.)
    [ $((${dropped:-0} * 8)) -le "${ahead:-0}" ] ||
        fail_showing "$tmp/o.err" "planned: more than 1/8 of the reads ahead dropped"
    [ "$mode" = per-tensor ] || continue
    rm -rf "$tmp/nvme" && mkdir -p "$tmp/nvme"
    ELIXIR_POLICY=plan ELIXIR_HOST_MEMORY=$quarter ELIXIR_NVME_PATH="$tmp/nvme" \
        ELIXIR_NVME_MEMORY=$((peak * 2))M ELIXIR_NVME_VERIFY=1 ELIXIR_NVME_FAULT=read:150:eio \
        shim_train_budget 4 "${JOB[@]}" --alloc "$mode"
    failed=$(shim_stat "$tmp/o.err" "failed reads")
    degraded=$(grep -c "NVMe tier degraded" "$tmp/o.err")
    echo "$mode, planned, the 150th read failing: digest ${got:-none}, failed reads" \
         "${failed:-?}, lines saying the tier is degraded $degraded"
    if [ -n "$got" ]; then
        [ "$got" = "$want" ] || fail_showing "$tmp/o.err" "read fault: expected digest $want"
    else
        grep -q "CUDA_ERROR_OUT_OF_MEMORY" "$tmp/o.err" ||
            fail_showing "$tmp/o.err" "read fault: the job failed without CUDA_ERROR_OUT_OF_MEMORY"
    fi
    [ "${failed:-0}" -ge 1 ] || fail_showing "$tmp/o.err" "read fault: no failed read counted"
    [ "$degraded" -eq 1 ] || fail_showing "$tmp/o.err" "read fault: expected one degraded line"
done
# (Pooled at width 512 the plan's NVMe moves in flight outnumber the staging chunks: a move
# that finds none free waits for a move out in flight to complete, res_plan_nvme.c's
# stage_free, and the job's results stay those of the job without the shim.)
BIG=(--layers 2 --width 512 --heads 8 --seq 16 --batch 2 --vocab 1024 --steps 5)
shim_train_reference "pooled, width 512" "${BIG[@]}" --alloc pooled
quarter=$((peak * 1024 * 1024 / 4))
rm -rf "$tmp/nvme" && mkdir -p "$tmp/nvme"
ELIXIR_POLICY=plan ELIXIR_HOST_MEMORY=$quarter ELIXIR_NVME_PATH="$tmp/nvme" \
    ELIXIR_NVME_MEMORY=$((peak * 2))M ELIXIR_NVME_VERIFY=1 \
    shim_train_budget 4 "${BIG[@]}" --alloc pooled
staged=$(sed -n 's/.*moves that waited for a staging chunk \([0-9]*\).*/\1/p' "$tmp/o.err")
echo "pooled, width 512, planned: digest ${got:-none}, moves that waited for a staging chunk" \
     "${staged:-?}"
[ "$got" = "$want" ] || fail_showing "$tmp/o.err" "pooled, width 512: expected digest $want"
[ "${staged:-0}" -gt 0 ] ||
    fail_showing "$tmp/o.err" "pooled, width 512: no move waited for a staging chunk"
echo "same digest with GPU and host at 1/4 of the footprint each, the rest on NVMe"
