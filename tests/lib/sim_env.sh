# SPDX-License-Identifier: MIT
# sim_env.sh - sourced by the script tests that run programs (python3 above all) on the simulator.
#
# Sourcing defines variables and functions and changes nothing else:
#   sim_setup        call first: checks the build, exports ELIXIR_SIM_RACECHECK=fail (a race
#                    makes the program exit 66), prepares sanitizer runtimes; skips (exit 77)
#                    under SANITIZE=thread, since python3 itself is not instrumented for it
#   sim_tmpdir       makes $tmp a fresh directory, removed when the script exits
#   sim_run ARGS...  runs ARGS through $BUILD/bin/elixir-sim
#   train ARGS...    runs examples/train.py ARGS on the simulator
#   shim_train ARGS...  the same under the shim ($SHIM) with ELIXIR_STATS=1
#   run_or_fail WHAT NAME CMD...  CMD into $tmp/NAME.out and .err, failing the script if it fails
#   fail_showing FILE MESSAGE  the end of FILE, then "FAIL: MESSAGE" and exit 1
#   shim_gpu_tool HOST_VMM NAME ARGS...  a program of `make gpu-check` under the shim
#   shim_stat FILE TEXT  a figure of the shim's statistics
#   shim_train_reference, shim_train_budget, shim_train_device  the job without the shim, under
#                 it, under a budget, on a smaller simulated GPU
#   train_allocs_agree PRESET STEPS  both allocation modes learn and print the same
# With SANITIZE containing "address" the simulator is ASan-instrumented but python3 is not, so
# the ASan runtime must be loaded first: LD_PRELOAD gets it and leak checking is off (python
# keeps its objects to the end).

BUILD=${BUILD:-build}
PYTHON=${PYTHON:-python3}
SIM_LAUNCHER=$BUILD/bin/elixir-sim
SHIM=$(realpath -m "$BUILD/libelixir.so")   # absolute: children may run elsewhere

sim_setup() {
    case ${SANITIZE:-} in
    *thread*)
        echo "skip: python3 cannot host a ThreadSanitizer runtime"
        exit 77 ;;
    esac
    local f
    for f in "$SIM_LAUNCHER" "$BUILD/sim/libcuda.so.1" "$BUILD/examples/kernels_sim.so"; do
        if [ ! -e "$f" ]; then
            echo "FAIL: $f is missing (run make first)"
            exit 1
        fi
    done
    export ELIXIR_SIM_RACECHECK=fail
    case ${SANITIZE:-} in
    *address*)
        local asan
        asan=$(${CC:-cc} -print-file-name=libasan.so)
        export LD_PRELOAD=$asan${LD_PRELOAD:+:$LD_PRELOAD}
        export ASAN_OPTIONS=detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS} ;;
    esac
}

sim_tmpdir() {
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
}

sim_run() {
    "$SIM_LAUNCHER" -- "$@"
}

train() {
    sim_run "$PYTHON" examples/train.py "$@"
}

# shim_train ARGS...: train under $SHIM (after any sanitizer runtime already in LD_PRELOAD);
# NAME=VALUE before the call adds to its environment.
shim_train() {
    LD_PRELOAD=${LD_PRELOAD:+$LD_PRELOAD:}$SHIM ELIXIR_STATS=1 train "$@"
}

# run_or_fail WHAT NAME CMD...: runs CMD with stdout to $tmp/NAME.out and stderr to
# $tmp/NAME.err; when it fails, shows that stderr and fails the script with "FAIL: WHAT".
run_or_fail() {
    local what=$1 name=$2
    shift 2
    "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" || {
        cat "$tmp/$name.err"; echo "FAIL: $what"; exit 1; }
}

# fail_showing FILE MESSAGE: shows the last 30 lines of FILE and fails the script.
fail_showing() {
    tail -n 30 "$1"
    echo "FAIL: $2"
    exit 1
}

# shim_gpu_tool HOST_VMM NAME ARGS...: $BUILD/gpu/NAME ARGS (a program of `make gpu-check`)
# under the shim, with the simulator's host mapping through VMM on (1) or off (0), its output
# in $tmp/o.out (printed) and $tmp/o.err; fails the script when it fails.  The caller's
# environment sets the budgets.
shim_gpu_tool() {
    local vmm=$1 name=$2
    shift 2
    LD_LIBRARY_PATH=$BUILD/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ELIXIR_SIM_HOST_VMM=$vmm \
        LD_PRELOAD=${LD_PRELOAD:+$LD_PRELOAD:}$SHIM "$BUILD/gpu/$name" "$@" \
        >"$tmp/o.out" 2>"$tmp/o.err" ||
        fail_showing "$tmp/o.err" "$name exited $? (host mapping $vmm)"
    cat "$tmp/o.out"
}

# ---- reading the shim's statistics (ELIXIR_STATS=1 on stderr): the first device's figures

# shim_stat FILE TEXT: the number that follows the first "TEXT " in FILE, or nothing.
shim_stat() {
    sed -n "s/.*$2 \([0-9]*\).*/\1/p" "$1" | head -n 1
}

# ---- a job under the shim with its GPU budget a fraction of its footprint

# shim_train_reference WHAT ARGS...: the job ARGS without the shim ($tmp/plain.*) and under it
# with no budget ($tmp/full.*); sets want (the digest without the shim) and peak (the GPU peak
# in MiB under the shim).  Fails the script, naming WHAT, when a run fails, and when the peak is
# missing or under 8 MiB.
shim_train_reference() {
    local what=$1
    shift
    run_or_fail "$what without the shim" plain train "$@"
    want=$(train_digest "$tmp/plain.out")
    [ -n "$want" ] || fail_showing "$tmp/plain.out" "no digest from the run without the shim"
    run_or_fail "$what under the shim, unlimited" full shim_train "$@"
    peak=$(shim_stat "$tmp/full.err" "GPU peak")
    if [ -z "$peak" ] || [ "$peak" -lt 8 ]; then
        fail_showing "$tmp/full.err" "footprint not reported or too small: '$peak' MiB"
    fi
}

# shim_train_budget FRAC ARGS...: shim_train ARGS with the GPU budget at 1/FRAC of $peak MiB
# (on the default, larger, simulated GPU), into $tmp/o.out and $tmp/o.err; sets got (its
# digest, empty when the run failed) and moved (its migrations to host, empty when not
# reported).
shim_train_budget() {
    local frac=$1
    shift
    ELIXIR_GPU_MEMORY=$((peak * 1024 * 1024 / frac)) shim_train "$@" >"$tmp/o.out" \
        2>"$tmp/o.err" && got=$(train_digest "$tmp/o.out") || got=""
    moved=$(shim_stat "$tmp/o.err" "migrations to host")
}

# shim_train_device FRAC ARGS...: shim_train ARGS on a simulated GPU of 1/FRAC of $peak MiB
# (all of it the shim's budget), into $tmp/o.out and $tmp/o.err; sets got, moved (as
# shim_train_budget) and used (its GPU peak in MiB, which must not exceed the device: the
# script fails otherwise).
shim_train_device() {
    local frac=$1 device
    shift
    device=$((peak * 1024 * 1024 / frac))
    ELIXIR_SIM_MEMORY=$device ELIXIR_GPU_MEMORY=100% shim_train "$@" >"$tmp/o.out" \
        2>"$tmp/o.err" && got=$(train_digest "$tmp/o.out") || got=""
    moved=$(shim_stat "$tmp/o.err" "migrations to host")
    used=$(shim_stat "$tmp/o.err" "GPU peak")
    if [ -n "$got" ] && [ $(( ${used:-0} * 1024 * 1024 )) -gt "$device" ]; then
        fail_showing "$tmp/o.err" "GPU peak ${used:-?} MiB on a device of $device bytes"
    fi
}

# ---- reading train.py's output: `step N loss X` lines, then `digest HEX` as the last line

# train_output_ok FILE STEPS: the format is exactly STEPS step lines (1..STEPS) and a digest.
train_output_ok() {
    awk -v steps="$2" '
        /^step [0-9]+ loss [0-9.]+$/ { if ($2 != ++n) bad = "step " $2 " out of order"; next }
        /^digest [0-9a-f]+$/ && length($2) == 64 { if (NR != steps + 1) bad = "digest not after the steps"; d++; next }
        { bad = "unexpected line: " $0 }
        END {
            if (!bad && n != steps) bad = n " step lines, expected " steps
            if (!bad && d != 1) bad = "no digest line"
            if (bad) { print "FAIL: " FILENAME ": " bad; exit 1 }
        }' "$1"
}

train_digest() {
    awk '/^digest / { print $2 }' "$1"
}

train_losses() {
    awk '/^step / { printf "%s ", $4 }' "$1"
}

# train_allocs_agree PRESET STEPS: train.py --preset PRESET --steps STEPS with --alloc per-tensor
# and --alloc pooled (into $tmp/MODE.out and .err; their stderr is shown): each must exit 0,
# print well-formed output and learn (train_loss_falls), and the two outputs must be the same to
# the byte, digest included.  Fails the script otherwise.
train_allocs_agree() {
    local mode rc
    for mode in per-tensor pooled; do
        train --preset "$1" --steps "$2" --alloc "$mode" >"$tmp/$mode.out" 2>"$tmp/$mode.err"
        rc=$?
        cat "$tmp/$mode.err"
        if [ $rc -ne 0 ]; then
            echo "FAIL: --alloc $mode: expected exit 0, got $rc"
            exit 1
        fi
        train_output_ok "$tmp/$mode.out" "$2" || exit 1
        train_loss_falls "$tmp/$mode.out" || exit 1
    done
    if ! cmp -s "$tmp/per-tensor.out" "$tmp/pooled.out"; then
        echo "FAIL: the allocators disagree"
        for mode in per-tensor pooled; do
            printf '  %-11s %sdigest %s\n' "$mode:" "$(train_losses "$tmp/$mode.out")" \
                "$(train_digest "$tmp/$mode.out")"
        done
        exit 1
    fi
    echo "per-tensor and pooled agree: digest $(train_digest "$tmp/pooled.out")"
}

# train_loss_falls FILE: the mean loss of the last 3 steps is below that of the first 3 by 0.1.
train_loss_falls() {
    awk '/^step / { l[n++] = $4 }
         END {
             if (n < 6) { print "FAIL: only " n " steps"; exit 1 }
             first = (l[0] + l[1] + l[2]) / 3; last = (l[n-3] + l[n-2] + l[n-1]) / 3
             if (!(last < first - 0.1)) {
                 printf "FAIL: loss does not fall: first 3 steps %.4f, last 3 %.4f\n", first, last
                 exit 1
             }
             printf "loss falls: first 3 steps %.4f, last 3 %.4f\n", first, last
         }' "$1"
}
