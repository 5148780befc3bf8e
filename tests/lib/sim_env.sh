# SPDX-License-Identifier: MIT
# sim_env.sh - sourced by the script tests that run programs (python3 above all) on the simulator.
#
# Sourcing defines variables and functions and changes nothing else:
#   sim_setup        call first: checks the build, exports ELIXIR_SIM_RACECHECK=fail (a race
#                    makes the program exit 66), prepares sanitizer runtimes; skips (exit 77)
#                    under SANITIZE=thread, since python3 itself is not instrumented for it
#   sim_run ARGS...  runs ARGS through $BUILD/bin/elixir-sim
#   train ARGS...    runs examples/train.py ARGS on the simulator
# With SANITIZE containing "address" the simulator is ASan-instrumented but python3 is not, so
# the ASan runtime must be loaded first: LD_PRELOAD gets it and leak checking is off (python
# keeps its objects to the end).

BUILD=${BUILD:-build}
PYTHON=${PYTHON:-python3}
SIM_LAUNCHER=$BUILD/bin/elixir-sim

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

sim_run() {
    "$SIM_LAUNCHER" -- "$@"
}

train() {
    sim_run "$PYTHON" examples/train.py "$@"
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
