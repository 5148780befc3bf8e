#!/bin/bash
# SPDX-License-Identifier: MIT
# check.sh - the checks that need an NVIDIA GPU and its driver (`make gpu-check`).
#
# Usage: tools/gpu/check.sh [-k CHECKS] OUTDIR
#   BUILD (default build) holds a finished build; OUTDIR receives every run's output.
#   -k takes a comma-separated subset of: train, policy, trace, share, nccl, torch, bench,
#   nvme, sim.
#
# train  examples/train.py on the GPU (both allocation patterns, which must agree), then under
#        libelixir.so unlimited and with ELIXIR_GPU_MEMORY at 1/2, 1/4 and 1/8 of the footprint
#        the shim measured: every run must print the digest of the run without the shim, and
#        the budgeted ones must have paged memory out.  `--preset tiny --check` compares the
#        GPU's losses and gradients with the float64 reference, without and with the shim.
# policy the same job (per-tensor, --step-times) under the shim at 1/2 and 1/4 of the footprint
#        with ELIXIR_POLICY=reactive, =plan and =plan with ELIXIR_PLAN_UNMAP=1 (at 1/4 also
#        =plan with ELIXIR_HOST_VMM=0: evicted memory unmapped in pinned pieces), and unlimited:
#        the digest again, and each run's wall time and mean step (steps 6-8) side by side, with
#        the plan's predicted iteration, the guard's timing of the planned and the reactive
#        iterations (the plan kept whatever it measures: ELIXIR_PLAN_GUARD=0) and, at 1/4,
#        from a run of 5 steps subtracted, the host's time per step by what it went to
#        (ELIXIR_STATS; figures in policy.txt, not judged).
# trace  the same job at 1/4 recording a trace, timed by NVIDIA's CUPTI (found beside the CUDA
#        toolkit or in Python's nvidia packages) and by CUDA events (ELIXIR_CUPTI=off): the
#        digest again, `elixir-trace summary` and `kernels` must read each trace, and kernels
#        must have device times.
# share  tools/gpu/share under the shim with a 1 GiB budget: another process (the program run
#        again without the shim) takes all the GPU's free memory but 512 MiB while the job
#        pages 2 GiB through it, then exits: every buffer must keep its data, and the shim must
#        say once that its budget came down and once that it went back up to 1024 MiB.
# nccl   tools/gpu/nccl_paging under the shim with a 1 GiB budget: 4 GiB of send and receive
#        buffers through NCCL's all-reduce, broadcast, all-gather and reduce-scatter (one
#        rank), alone and in groups: every receive buffer must be right, with memory paged out
#        and back.  Skipped where ldconfig knows no libnccl.so.2.
# torch  tools/gpu/torch_mlp.py (when python3 imports torch): without the shim, under it
#        unlimited and with the budget at 1/2 and 1/4 of the caching allocator's peak: the same
#        digest.
# bench  bench/shim_launch, bench/shim_alloc, bench/vmm_handles and bench/vmm_inflight on the
#        real driver (figures only).
# nvme   bench/nvme_fio.sh on the machine's own disk (a 1 GiB file in NVME_DIR, default
#        OUTDIR's file system): the NVMe tier's sequential and random 2 MiB writes and reads
#        beside fio's, where fio is installed (else the tier's figures alone), with the block
#        device under the file (figures in nvme.out, not judged).
# sim    every C test program run directly against the real driver (no simulator): a table of
#        exit codes in OUTDIR/sim.txt, to compare the simulator's semantics with the driver's.
#        Tests whose kernels are host functions cannot pass here (their PTX bodies are empty);
#        the table is read, not judged.
#
# Prints PASS/FAIL/SKIP per check (NOTE for the sim table, which is not counted) and ends with
# "N passed, N failed, N skipped"; exits 1 when a check failed, 2 when nothing can be checked
# (no driver, no build, or libelixir.so does not load: a library it needs is missing).
# GPU_CHECK_DEADLINE (seconds, default 540) bounds the whole run: no run outlasts it, and a
# check that starts with under a minute left is skipped, saying so, so that the run ends, its
# figures printed, inside a 10-minute command.
set -u
BUILD=${BUILD:-build}
PYTHON=${PYTHON:-python3}
ALL_CHECKS=train,policy,trace,share,nccl,torch,bench,nvme,sim
CHECKS=$ALL_CHECKS
usage() {
    echo "usage: $0 [-k CHECKS] OUTDIR   (CHECKS: comma-separated, of $ALL_CHECKS)" >&2
    exit 2
}
if [ "${1:-}" = -k ]; then
    [ $# -ge 2 ] || usage
    CHECKS=$2
    shift 2
    for c in ${CHECKS//,/ }; do
        case ",$ALL_CHECKS," in
        *",$c,"*) ;;
        *) echo "$0: unknown check '$c' in -k $CHECKS (accepted: $ALL_CHECKS)" >&2; exit 2 ;;
        esac
    done
fi
[ $# -eq 1 ] || usage
out=$(realpath -m "$1")
mkdir -p "$out" || exit 2
DEADLINE=${GPU_CHECK_DEADLINE:-540}
case $DEADLINE in
'' | *[!0-9]*) echo "$0: GPU_CHECK_DEADLINE=$DEADLINE: expected seconds, a whole number" >&2
               exit 2 ;;
esac
SHIM=$(realpath -m "$BUILD/libelixir.so")
TRACE_TOOL=$BUILD/bin/elixir-trace
if [ ! -e /proc/driver/nvidia/version ]; then
    echo "no NVIDIA driver is loaded (/proc/driver/nvidia/version is missing): nothing to check"
    exit 2
fi
for f in "$SHIM" "$TRACE_TOOL"; do
    [ -e "$f" ] || { echo "$f is missing: run make (BUILD=$BUILD) first" >&2; exit 2; }
done

npass=0 nfail=0 nskip=0
pass() { echo "PASS $*"; npass=$((npass + 1)); }
fail() { echo "FAIL $*"; nfail=$((nfail + 1)); }
skip() { echo "SKIP $*"; nskip=$((nskip + 1)); }
digest_of() { awk '/^digest / { print $2 }' "$1"; }
# stat_of FILE TEXT: the number after the first "TEXT " in the shim's statistics.
stat_of() { sed -n "s/.*$2 \([0-9][0-9]*\).*/\1/p" "$1" | head -n 1; }
# Seconds left before GPU_CHECK_DEADLINE.
left() { echo $((DEADLINE - SECONDS)); }

# run NAME TIMEOUT CMD...: CMD's stdout and stderr into OUTDIR/NAME.out and .err; its status
# (124 where it ran out of time: TIMEOUT or the deadline, whichever comes first).
run() {
    local name=$1 limit=$2 rest
    shift 2
    rest=$(($(left) - 15))
    [ "$rest" -lt "$limit" ] && limit=$rest
    if [ "$limit" -lt 5 ]; then
        echo "not run: GPU_CHECK_DEADLINE=$DEADLINE reached" >"$out/$name.err"
        : >"$out/$name.out"
        return 124
    fi
    timeout -k 10 "$limit" "$@" >"$out/$name.out" 2>"$out/$name.err"
}

# libelixir.so must load (the loader only warns, and runs the program without it, where a
# library it needs is missing) and start.
if ! LD_PRELOAD="$SHIM" ELIXIR_VERBOSE=1 ELIXIR_LOG_FILE= timeout -k 5 60 "$PYTHON" -c 'import ctypes
l = ctypes.CDLL("libcuda.so.1")
d, c, p = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
r = [l.cuInit(0), l.cuDeviceGet(ctypes.byref(d), 0), l.cuDevicePrimaryCtxRetain(ctypes.byref(c), d),
     l.cuCtxSetCurrent(c), l.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(1 << 20)),
     l.cuMemFree_v2(p)]
print(r)
raise SystemExit(any(r))' >"$out/shim-loads.out" 2>"$out/shim-loads.err" ||
    ! grep -q "libelixir.so .*, process " "$out/shim-loads.err"; then
    echo "libelixir.so does not load or start here (see $out/shim-loads.err):" >&2
    ldd "$SHIM" 2>&1 | grep -i "not found" >&2
    head -n 5 "$out/shim-loads.err" >&2
    exit 2
fi

{
    cat /proc/driver/nvidia/version
    nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv 2>&1
    ldconfig -p | grep -E 'libcuda\.so\.1|libcupti|libnccl' || true
} >"$out/env.txt"
head -n 1 /proc/driver/nvidia/version
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null

# ---------------------------------------------------------------- train.py
TRAIN=(examples/train.py --preset demo)
train_peak=""
check_train() {
    local mode frac ref got moved peak
    for mode in per-tensor pooled; do
        run "train-$mode" 300 "$PYTHON" "${TRAIN[@]}" --alloc "$mode"
        [ $? -eq 0 ] || { fail "train.py --alloc $mode on the GPU (see train-$mode.err)"; return; }
    done
    if ! cmp -s "$out/train-per-tensor.out" "$out/train-pooled.out"; then
        fail "train.py: the two allocation patterns disagree on the GPU"
        return
    fi
    ref=$(digest_of "$out/train-per-tensor.out")
    pass "train.py on the GPU, both allocation patterns: digest $ref"
    for mode in per-tensor pooled; do
        run "shim-$mode" 300 env LD_PRELOAD="$SHIM" ELIXIR_STATS=1 "$PYTHON" "${TRAIN[@]}" \
            --alloc "$mode"
        got=$(digest_of "$out/shim-$mode.out")
        peak=$(stat_of "$out/shim-$mode.err" "GPU peak")
        if [ "$got" != "$ref" ] || [ -z "$peak" ]; then
            fail "train.py --alloc $mode under the shim, unlimited: digest '$got', peak '$peak'"
            continue
        fi
        pass "train.py --alloc $mode under the shim, unlimited: same digest, GPU peak $peak MiB"
        [ "$mode" = per-tensor ] && train_peak=$peak
        for frac in 2 4 8; do
            run "shim-$mode-$frac" 300 env LD_PRELOAD="$SHIM" ELIXIR_STATS=1 \
                ELIXIR_GPU_MEMORY=$((peak * 1048576 / frac)) "$PYTHON" "${TRAIN[@]}" --alloc "$mode"
            got=$(digest_of "$out/shim-$mode-$frac.out")
            moved=$(stat_of "$out/shim-$mode-$frac.err" "migrations to host")
            if [ "$got" = "$ref" ] && [ "${moved:-0}" -gt 0 ]; then
                pass "train.py --alloc $mode at 1/$frac ($((peak / frac)) MiB): same digest," \
                     "$moved migrations out"
            else
                fail "train.py --alloc $mode at 1/$frac: digest '$got', migrations '$moved'" \
                     "(see shim-$mode-$frac.err)"
            fi
        done
    done
    run train-check 300 "$PYTHON" examples/train.py --preset tiny --check
    [ $? -eq 0 ] && pass "train.py --preset tiny --check on the GPU" \
        || fail "train.py --preset tiny --check on the GPU (see train-check.out)"
    run shim-check 300 env LD_PRELOAD="$SHIM" "$PYTHON" examples/train.py --preset tiny --check
    [ $? -eq 0 ] && pass "train.py --preset tiny --check under the shim" \
        || fail "train.py --preset tiny --check under the shim (see shim-check.out)"
}

# ---------------------------------------------------------------- the computed policy
# timed NAME CMD...: run NAME (see run) and print its wall time in seconds, or nothing.
timed() {
    local name=$1 t0 t1
    shift
    t0=$(date +%s.%N)
    run "$name" 600 "$@" || return 1
    t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
}

# steps_of FILE: the mean of steps 6-8 of train.py --step-times in FILE (ms), or nothing.
steps_of() {
    sed -n 's/^train.py: step times (ms): //p' "$1" |
        awk 'NF >= 8 { printf "%.1f", ($6 + $7 + $8) / 3 }'
}

# host_per_step ERR5 ERR8: the host-time lines of ELIXIR_STATS in two runs of 5 and 8 steps,
# as ms per step of the last three (each "NAME N in X ms" part, summed over the processes
# that printed one: (X8 - X5) / 3; a kind missing from a run counts 0 there).
host_per_step() {
    awk 'FNR == 1 { f++ }
         /host time/ {
             sub(/.*host time[^:]*: /, "")
             n = split($0, parts, ", ")
             for (i = 1; i <= n; i++) {
                 if (!match(parts[i], / [0-9]+ in [0-9.]+ ms$/))
                     continue
                 k = substr(parts[i], 1, RSTART - 1)
                 split(substr(parts[i], RSTART + 1), v, " ")
                 if (!(k in seen)) { seen[k] = 1; order[++m] = k }
                 t[f, k] += v[3]
                 c[f, k] += v[1]
             }
         }
         END {
             printf "  host ms per step (steps 6-8):"
             for (i = 1; i <= m; i++) {
                 k = order[i]
                 printf "%s %s %.1f (%d calls)", (i > 1 ? "," : ""), k,
                        (t[2, k] - t[1, k]) / 3, (c[2, k] - c[1, k]) / 3
             }
             printf "\n"
         }' "$1" "$2"
}

check_policy() {
    local ref peak frac pol got secs base step base_step pred
    run policy-ref 300 "$PYTHON" "${TRAIN[@]}" --alloc per-tensor
    ref=$(digest_of "$out/policy-ref.out")
    base=$(timed policy-unlimited env LD_PRELOAD="$SHIM" ELIXIR_STATS=1 "$PYTHON" "${TRAIN[@]}" \
        --alloc per-tensor --step-times)
    peak=$(stat_of "$out/policy-unlimited.err" "GPU peak")
    base_step=$(steps_of "$out/policy-unlimited.err")
    if [ -z "$ref" ] || [ -z "$peak" ] || [ -z "$base" ]; then
        fail "policy: no reference digest, footprint or unlimited time (see policy-*.err)"
        return
    fi
    echo "unlimited ${base}s, ${base_step:-?} ms a step" >"$out/policy.txt"
    for frac in 2 4; do
        for pol in reactive plan plan-unmapped plan-nohostvmm; do
            # (at 1/4 only, as the per-step host time below: a GPU is lent for minutes)
            [ $pol = plan-nohostvmm ] && [ $frac != 4 ] && continue
            case $pol in
            reactive) how="ELIXIR_POLICY=reactive" ;;
            plan) how="ELIXIR_POLICY=plan ELIXIR_PLAN_UNMAP=0" ;;
            plan-unmapped) how="ELIXIR_POLICY=plan ELIXIR_PLAN_UNMAP=1" ;;
            plan-nohostvmm) how="ELIXIR_POLICY=plan ELIXIR_HOST_VMM=0" ;;
            esac
            # (the plan measured whatever it costs; the guard's figures are printed below)
            [ $pol = reactive ] || how="$how ELIXIR_PLAN_GUARD=0"
            # shellcheck disable=SC2086 # ($how: several words on purpose)
            secs=$(timed "policy-$pol-$frac" env LD_PRELOAD="$SHIM" ELIXIR_STATS=1 $how \
                ELIXIR_GPU_MEMORY=$((peak * 1048576 / frac)) \
                "$PYTHON" "${TRAIN[@]}" --alloc per-tensor --step-times)
            got=$(digest_of "$out/policy-$pol-$frac.out")
            if [ -z "$secs" ] || [ "$got" != "$ref" ]; then
                fail "policy $pol at 1/$frac: digest '$got' (see policy-$pol-$frac.err)"
                continue
            fi
            step=$(steps_of "$out/policy-$pol-$frac.err")
            pred=$(sed -n 's/.*predicted iteration \([0-9.]*\) ms.*/\1/p' \
                "$out/policy-$pol-$frac.err" | head -n 1)
            [ -n "$pred" ] && pred=", predicted $pred ms"
            guard=$(sed -n 's/.*; guard: [a-z ]* (\(planned iteration [0-9.]* ms against [0-9.]* ms reactive\)).*/\1/p' \
                "$out/policy-$pol-$frac.err" | head -n 1)
            [ -n "$guard" ] && pred="$pred; the guard's host-clock figures: $guard"
            echo "$pol 1/$frac ${secs}s, ${step:-?} ms a step (steps 6-8)$pred" >>"$out/policy.txt"
            # Where the host's time went in steps 6-8 at 1/4: the run again with 5 steps,
            # subtracted.
            if [ "$frac" = 4 ]; then
                # shellcheck disable=SC2086
                run "policy-$pol-$frac-5" 600 env LD_PRELOAD="$SHIM" ELIXIR_STATS=1 $how \
                    ELIXIR_GPU_MEMORY=$((peak * 1048576 / frac)) \
                    "$PYTHON" "${TRAIN[@]}" --alloc per-tensor --step-times --steps 5 &&
                    host_per_step "$out/policy-$pol-$frac-5.err" "$out/policy-$pol-$frac.err" \
                        >>"$out/policy.txt"
            fi
            pass "policy $pol at 1/$frac: same digest, ${secs}s, ${step:-?} ms a step" \
                 "(unlimited ${base}s, ${base_step:-?} ms)"
        done
    done
}

# ---------------------------------------------------------------- traces
# The first libcupti beside the CUDA toolkit or in Python's nvidia packages.
find_cupti() {
    local cuda=${CUDA_HOME:-/usr/local/cuda} d
    for d in "$cuda/extras/CUPTI/lib64" "$cuda/lib64" $("$PYTHON" -c '
import os, nvidia
for p in nvidia.__path__:
    print(os.path.join(p, "cu13", "lib"), os.path.join(p, "cuda_cupti", "lib"))' 2>/dev/null)
    do
        ls "$d"/libcupti.so* 2>/dev/null | head -n 1
    done | head -n 1
}

# first_kernel AWK FILE: AWK run on the first row of `elixir-trace kernels` (the line after
# its header; lines about dropped records may come first).
first_kernel() { awk "found { found = 0; $1 } /^ *total +launches/ { found = 1 }" "$2"; }

check_trace() {
    local ref peak cupti name how got
    if [ -z "$(digest_of "$out/train-per-tensor.out" 2>/dev/null)" ]; then
        run train-per-tensor 300 "$PYTHON" "${TRAIN[@]}" --alloc per-tensor
    fi
    if [ -z "$train_peak" ] && ! grep -qs "GPU peak [0-9]" "$out/shim-per-tensor.err"; then
        run shim-per-tensor 300 env LD_PRELOAD="$SHIM" ELIXIR_STATS=1 "$PYTHON" "${TRAIN[@]}"
    fi
    ref=$(digest_of "$out/train-per-tensor.out")
    peak=${train_peak:-$(stat_of "$out/shim-per-tensor.err" "GPU peak")}
    if [ -z "$ref" ] || [ -z "$peak" ]; then
        fail "traces: no digest or footprint from the job (see train-per-tensor.err," \
             "shim-per-tensor.err)"
        return
    fi
    cupti=$(find_cupti)
    for name in cupti events; do
        if [ $name = cupti ]; then
            [ -n "$cupti" ] || { skip "traces: no libcupti found (CUPTI timing)"; continue; }
            how=$cupti
        else
            how=off
        fi
        rm -f "$out/trace-$name.etr"
        run "trace-$name" 300 env LD_PRELOAD="$SHIM" ELIXIR_STATS=1 ELIXIR_LOG=info \
            ELIXIR_CUPTI="$how" ELIXIR_TRACE="$out/trace-$name.etr" \
            ELIXIR_GPU_MEMORY=$((peak * 1048576 / 4)) "$PYTHON" "${TRAIN[@]}"
        got=$(digest_of "$out/trace-$name.out")
        if grep -q "the program stops" "$out/trace-$name.err"; then
            fail "trace ($name timing): $(grep -m1 "the program stops" "$out/trace-$name.err")"
            continue
        fi
        if [ $name = cupti ] && grep -q "device times from CUDA events" "$out/trace-$name.err"
        then
            fail "trace with $cupti: CUPTI was not used: $(grep -m1 "device times" \
                "$out/trace-$name.err")"
            continue
        fi
        if [ "$got" != "$ref" ]; then
            fail "trace ($name timing) at 1/4: digest '$got' (see trace-$name.err)"
            continue
        fi
        if ! "$TRACE_TOOL" summary "$out/trace-$name.etr" >"$out/trace-$name.summary" 2>&1 ||
            ! "$TRACE_TOOL" kernels --top 10 "$out/trace-$name.etr" >"$out/trace-$name.kernels" 2>&1
        then
            fail "trace ($name timing): elixir-trace could not read it (see trace-$name.summary)"
        elif [ -z "$(first_kernel '{ print $1 }' "$out/trace-$name.kernels")" ]; then
            fail "trace ($name timing): no kernel in the table (see trace-$name.kernels)"
        elif [ "$(first_kernel '{ print $1 }' "$out/trace-$name.kernels")" = - ]; then
            fail "trace ($name timing): no kernel has a device time (see trace-$name.kernels)"
        else
            pass "trace ($name timing, ELIXIR_CUPTI=$how) at 1/4: same digest, kernels timed" \
                 "($(first_kernel '{ print $NF ": " $1 " " $2 " over " $4 " of " $3 " launches" }' \
                     "$out/trace-$name.kernels"))"
        fi
    done
}

# ---------------------------------------------------------------- another process
check_share() {
    local prog=$BUILD/gpu/share down
    [ -x "$prog" ] || { fail "share: $prog is missing (run make)"; return; }
    if ! run share 300 env LD_PRELOAD="$SHIM" ELIXIR_GPU_MEMORY=1024M ELIXIR_LOG=info \
        ELIXIR_STATS=1 "$prog" 1024; then
        fail "share: tools/gpu/share failed (see share.out, share.err)"
        return
    fi
    down='.*no GPU memory left within the 1024 MiB budget.*the budget is now \([0-9]*\) MiB.*'
    down=$(sed -n "s/$down/\1/p" "$out/share.err")
    if [ "$(echo "$down" | grep -c .)" -ne 1 ]; then
        fail "share: the budget's coming down was not reported once (see share.err)"
    elif [ "$(grep -c 'GPU memory is free again; the budget is back up to 1024 MiB' \
        "$out/share.err")" -ne 1 ]; then
        fail "share: the budget's going back up was not reported once (see share.err)"
    else
        pass "share: another process took the GPU's memory and gave it back: the budget came" \
             "down to $down MiB and back up to 1024 MiB, every buffer kept its data" \
             "($(stat_of "$out/share.err" "migrations to host") migrations out)"
    fi
}

# ---------------------------------------------------------------- NCCL
check_nccl() {
    local prog=$BUILD/gpu/nccl_paging moved back
    [ -x "$prog" ] || { fail "nccl: $prog is missing (run make)"; return; }
    if ! ldconfig -p | grep -q 'libnccl\.so\.2 '; then
        skip "nccl: ldconfig knows no libnccl.so.2"
        return
    fi
    if ! run nccl 300 env LD_PRELOAD="$SHIM" ELIXIR_GPU_MEMORY=1024M ELIXIR_STATS=1 "$prog" 1024
    then
        fail "nccl: tools/gpu/nccl_paging failed (see nccl.out, nccl.err)"
        return
    fi
    moved=$(stat_of "$out/nccl.err" "migrations to host")
    back=$(grep -m1 "migrations to host" "$out/nccl.err" | stat_of /dev/stdin "to GPU")
    if [ "${moved:-0}" -gt 0 ] && [ "${back:-0}" -gt 0 ]; then
        pass "nccl: every collective, alone and grouped, found its buffers (4 GiB through a" \
             "1 GiB budget: $moved migrations out, $back back)"
    else
        fail "nccl: nothing was paged out and back (see nccl.err)"
    fi
}

# ---------------------------------------------------------------- PyTorch
check_torch() {
    local ref peak frac got
    if ! "$PYTHON" -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
        skip "PyTorch: python3 cannot import torch or sees no GPU"
        return
    fi
    run torch 300 "$PYTHON" tools/gpu/torch_mlp.py ||
        { fail "PyTorch without the shim (see torch.err)"; return; }
    ref=$(digest_of "$out/torch.out")
    peak=$(awk '/^peak / { print int($2 / 1048576) }' "$out/torch.out")
    pass "PyTorch MLP without the shim: peak $peak MiB, digest $ref"
    run torch-shim 300 env LD_PRELOAD="$SHIM" ELIXIR_STATS=1 "$PYTHON" tools/gpu/torch_mlp.py
    got=$(digest_of "$out/torch-shim.out")
    [ "$got" = "$ref" ] && pass "PyTorch MLP under the shim, unlimited: same digest" \
        || fail "PyTorch MLP under the shim, unlimited: digest '$got' (see torch-shim.err)"
    for frac in 2 4; do
        run "torch-shim-$frac" 300 env LD_PRELOAD="$SHIM" ELIXIR_STATS=1 \
            ELIXIR_GPU_MEMORY=$((peak * 1048576 / frac)) "$PYTHON" tools/gpu/torch_mlp.py
        got=$(digest_of "$out/torch-shim-$frac.out")
        [ "$got" = "$ref" ] && pass "PyTorch MLP at 1/$frac ($((peak / frac)) MiB): same digest," \
            "$(stat_of "$out/torch-shim-$frac.err" "migrations to host") migrations out" \
            || fail "PyTorch MLP at 1/$frac: digest '$got' (see torch-shim-$frac.err)"
    done
}

# ---------------------------------------------------------------- benchmarks
check_bench() {
    local b
    for b in shim_launch shim_alloc vmm_handles vmm_inflight; do
        if run "bench-$b" 300 env BUILD="$BUILD" "$BUILD/bench/$b"; then
            pass "bench/$b on the GPU (figures in bench-$b.out)"
        else
            fail "bench/$b on the GPU (see bench-$b.err)"
        fi
    done
}

# ---------------------------------------------------------------- the NVMe tier's disk
check_nvme() {
    local dir=${NVME_DIR:-$out} src
    src=$(df --output=source "$dir" 2>/dev/null | tail -n 1)
    {
        echo "file system of $dir: $(df -T "$dir" | awk 'NR == 2 { print $2 " on " $1 }')"
        lsblk -s -o NAME,MODEL,SIZE,ROTA,TRAN "$src" 2>&1 || true  # (and the disk under it)
    } >"$out/nvme-disk.txt"
    if run nvme 600 env BUILD="$BUILD" NVME_BENCH_DIR="$dir" bash bench/nvme_fio.sh; then
        pass "bench/nvme_fio.sh on $src (figures in nvme.out, the disk in nvme-disk.txt)"
    else
        fail "bench/nvme_fio.sh on $src (see nvme.err)"
    fi
}

# ---------------------------------------------------------------- the simulator's tests
check_sim() {
    local t n=0 ok=0
    : >"$out/sim.txt"
    for t in "$BUILD"/tests/*; do
        case ${t##*/} in runner|*.d|*.sh|unit_*) continue ;; esac
        [ -x "$t" ] && [ -f "$t" ] || continue
        echo "$t"
    done | timeout -k 5 $(($(left) - 15)) xargs -P 4 -I{} sh -c 'n=$(basename "$1");
        timeout --foreground -k 5 30 "$1" >"$2/sim-$n.out" 2>"$2/sim-$n.err";
        echo "$? $n" >>"$2/sim.txt"' _ {} "$out"
    sort -k2 -o "$out/sim.txt" "$out/sim.txt"
    n=$(wc -l <"$out/sim.txt")
    ok=$(awk '$1 == 0' "$out/sim.txt" | wc -l)
    # A report, not a check: it passes or fails nothing.
    echo "NOTE simulator tests on the real driver: $ok of $n exit 0 (table in sim.txt; those" \
         "not listed were not run before GPU_CHECK_DEADLINE)"
}

for c in ${CHECKS//,/ }; do      # (in the order given: the first ones are surest to run)
    if [ "$(left)" -lt 60 ]; then
        skip "$c: not started, $(left) s left of GPU_CHECK_DEADLINE=$DEADLINE"
        continue
    fi
    "check_$c"
done
case ",$CHECKS," in            # (this run's: the folder may hold an earlier one's)
*,policy,*) [ -s "$out/policy.txt" ] && { echo "== policy.txt"; cat "$out/policy.txt"; } ;;
esac
echo "took $SECONDS s; outputs in $out"
echo "$npass passed, $nfail failed, $nskip skipped"
[ "$nfail" -eq 0 ]
