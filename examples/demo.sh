#!/bin/bash
# SPDX-License-Identifier: MIT
# demo.sh - `make demo`: examples/train.py on a device too small for it, under libelixir.so,
# beside the same job on a device that holds it, and a one-screen verdict of what Elixir did.
#
# Without an NVIDIA driver (/proc/driver/nvidia/version absent; DEMO_GPU=0|1 overrides) it all
# runs on the simulator: the job under libelixir.so on the simulator's default device
# (DEMO_SIM_MEMORY picks another), and without the shim on a device of DEMO_UNLIMITED_MEMORY
# that holds it.  Step times are the simulator's virtual time, the same on any host whatever
# else it is doing, so the runs go side by side.  Each configuration runs for S2 steps
# (DEMO_STEPS="S1 S2"), timed by train.py --step-times (CUDA events on the job's stream, read
# on the simulator's clock): one step takes the mean of steps S1+1 .. S2, which leaves out
# start-up, the first steps' allocations and the final download, as in bench/train_oversub.sh.
# (Not the difference of an S1-step and an S2-step run's totals: the shim's planned moves
# complete as the host finds them done, which varies between runs by more than a step.)
#
# On a GPU the job runs without the shim, then under it with ELIXIR_GPU_MEMORY at
# 1/DEMO_BUDGET_FRACTION of the footprint the first run measured, one run after the other and
# for S2 steps only.  Step times are wall-clock times there: from the line of step S1 to the
# line of step S2 of each run (each line comes after the step's loss is read back), divided
# by S2 - S1.  The S2 run under the shim writes the trace, from which elixir-trace draws the
# plot and the report.
#
# Every figure of the verdict is read from what the programs print: the footprint from
# train.py's summary of the run without the shim, the device, budget, bytes moved and time
# hidden (the plan's moves', where a plan was followed) from `elixir-trace summary`, the times
# from train.py --step-times (or the clock), and the digests of the two S2 runs, which must
# agree.  Outputs go to DEMO_OUT (default
# $BUILD/demo): train.trace, train.svg, train.html, summary.txt, and the runs' logs.
# DEMO_JOB replaces the job's train.py options (a smaller job for the tests).
set -u
build=${BUILD:-build}
python=${PYTHON:-python3}
out=${DEMO_OUT:-$build/demo}
sim=$build/bin/elixir-sim
tool=$build/bin/elixir-trace
shim=$(realpath -m "$build/libelixir.so")       # absolute: a relative LD_PRELOAD may not load
gpu=${DEMO_GPU:-}       # 1: the GPU (the libcuda.so.1 the loader finds), 0: the simulator
if [ -z "$gpu" ]; then
    gpu=0
    [ -e /proc/driver/nvidia/version ] && gpu=1
fi
if [ "$gpu" = 1 ]; then
    job=${DEMO_JOB:---preset demo}
    steps=${DEMO_STEPS:-4 12}
else
    # 71 M parameters in 1.08 GiB against the 1 GiB default device, which the shim's reserve
    # leaves 920 MiB of: a job that does not fit, small enough to run in under a minute
    job="--layers 3 --width 1024 --heads 8 --seq 4 --batch 2 --vocab 16384 --alloc pooled"
    job=${DEMO_JOB:-$job}
    steps=${DEMO_STEPS:-5 8}
fi
read -r s1 s2 <<<"$steps"
unlimited_memory=${DEMO_UNLIMITED_MEMORY:-8G}
sim_memory=${DEMO_SIM_MEMORY:-}
fraction=${DEMO_BUDGET_FRACTION:-4}
start=$(date +%s.%N)

die() {
    echo "demo: $*" >&2
    exit 1
}

check_setup() {
    local f
    for f in "$shim" "$tool" examples/train.py; do
        [ -e "$f" ] || die "$f is missing (run make from the repository root)"
    done
    if [ "$gpu" = 0 ]; then
        for f in "$sim" "$build/examples/kernels_sim.so"; do
            [ -e "$f" ] || die "$f is missing (run make from the repository root)"
        done
    fi
    case $gpu in
    0|1) ;;
    *) die "DEMO_GPU=$gpu: expected 0 (the simulator) or 1 (the GPU)" ;;
    esac
    case "$s1 $s2" in
    *[!0-9\ ]*) die "DEMO_STEPS=\"$steps\": expected two step counts, e.g. \"2 4\"" ;;
    esac
    [ "${s2:-0}" -gt "${s1:-0}" ] && [ "$s1" -ge 1 ] ||
        die "DEMO_STEPS=\"$steps\": expected two step counts S1 < S2, e.g. \"2 4\""
    mkdir -p "$out" || die "cannot create $out"
    rm -f "$out"/train.trace "$out"/train.svg "$out"/train.html "$out"/summary.txt \
        "$out"/*.log "$out"/*.out "$out"/*.status "$out"/*.times
}

# run NAME STEPS [VAR=VALUE...]: train.py for STEPS steps, stdout into $out/NAME.out and
# stderr into $out/NAME.log, its exit status into $out/NAME.status.  On the simulator in the
# background; on a GPU in the foreground, each line of stdout stamped with the time it came
# (EPOCHREALTIME) into $out/NAME.times.
run() {
    local name=$1 n=$2 line
    shift 2
    if [ "$gpu" = 1 ]; then
        env "$@" "$python" examples/train.py $job --steps "$n" 2>"$out/$name.log" |
            while IFS= read -r line; do
                echo "$EPOCHREALTIME $line" >>"$out/$name.times"
                echo "$line"
            done >"$out/$name.out"
        echo "${PIPESTATUS[0]}" >"$out/$name.status"
    else
        ( env ELIXIR_SIM_STATS=1 "$@" "$sim" ${memory:+--memory "$memory"} -- "$python" \
              examples/train.py $job --steps "$n" --step-times >"$out/$name.out" \
              2>"$out/$name.log"
          echo "$?" >"$out/$name.status" ) &
    fi
}

# Wait for the runs; die, showing the end of its log, if one failed.
wait_runs() {
    wait
    local f rc
    for f in "$@"; do
        read -r rc <"$out/$f.status"
        if [ "$rc" != 0 ] || ! grep -q '^digest ' "$out/$f.out"; then
            tail -n 8 "$out/$f.log" >&2
            die "the run $f failed (exit $rc); its output is in $out/$f.log"
        fi
    done
}

# step_ms CONFIG: the time of one step of CONFIG (unlimited or elixir) in ms, as above.
step_ms() {
    if [ "$gpu" = 1 ]; then
        awk -v s1="$s1" -v s2="$s2" '$2 == "step" && $3 == s1 { a = $1 }
            $2 == "step" && $3 == s2 { b = $1 }
            END { if (a != "" && b != "") printf "%.3f", (b - a) * 1000 / (s2 - s1) }' \
            "$out/$1-$s2.times"
    else
        sed -n 's/^train\.py: step times (ms): //p' "$out/$1-$s2.log" |
            awk -v s1="$s1" -v s2="$s2" 'NF >= s2 { t = 0
                for (i = s1 + 1; i <= s2; i++) t += $i
                printf "%.3f", t / (s2 - s1) }'
    fi
}

# A size as printed by train.py or elixir-trace ("1.06 GiB", "920.00 MiB", "0 B") in bytes.
to_bytes() {
    awk -v s="$1" 'BEGIN {
        n = split(s, f, " "); m = 1
        if (f[2] == "KiB") m = 1024; else if (f[2] == "MiB") m = 1048576
        else if (f[2] == "GiB") m = 1073741824; else if (f[2] == "TiB") m = 1099511627776
        if (n != 2 || f[1] !~ /^[0-9.]+$/) exit 1
        printf "%.0f", f[1] * m
    }'
}

size() {
    awk -v b="$1" 'BEGIN {
        if (b >= 1073741824) printf "%.2f GiB", b / 1073741824
        else if (b >= 1048576) printf "%.1f MiB", b / 1048576
        else if (b >= 1024) printf "%.1f KiB", b / 1024
        else printf "%d B", b
    }'
}

# A figure from a file, by sed expression; dies naming WHAT when it is not there.
figure() {
    local what=$1 file=$2 expr=$3 v
    v=$(sed -n "$expr" "$file" | head -n 1)
    [ -n "$v" ] || die "could not read $what from $file"
    echo "$v"
}

# The job's footprint in bytes, as train.py measured it in the run without the shim.
read_footprint() {
    footprint=$(to_bytes "$(figure "the job's footprint" "$out/unlimited-$s2.log" \
        's/^train\.py: .* in use, \(.*\) allocated,.*/\1/p')") ||
        die "unreadable footprint in $out/unlimited-$s2.log"
}

# The two runs on the simulator, side by side: the one under the shim sets the time.
measure_sim() {
    local memory=$unlimited_memory preload=${LD_PRELOAD:+$LD_PRELOAD:}$shim
    echo "demo: examples/train.py $job for $s2 steps, without Elixir on a simulated" \
         "device of $unlimited_memory and under $shim on the simulator's" \
         "${sim_memory:-default} device"
    run "unlimited-$s2" "$s2"
    memory=$sim_memory
    # (every step profiled in detail, so that the plan's moves of every step can count as
    # hidden behind kernels: on the virtual clock that costs nothing)
    run "elixir-$s2" "$s2" LD_PRELOAD="$preload" ELIXIR_TRACE="$out/train.trace" \
        ELIXIR_PROFILE_ITERATIONS="${ELIXIR_PROFILE_ITERATIONS:-$s2}"
    wait_runs "unlimited-$s2" "elixir-$s2"
    read_footprint
}

# The two runs on the GPU, one after the other: the second's budget follows from the first.
measure_gpu() {
    local budget preload=${LD_PRELOAD:+$LD_PRELOAD:}$shim
    echo "demo: examples/train.py $job for $s2 steps without Elixir on the GPU"
    run "unlimited-$s2" "$s2"
    wait_runs "unlimited-$s2"
    read_footprint
    budget=ELIXIR_GPU_MEMORY=$((footprint / fraction >> 20))M
    echo "demo: the same job under $shim with $budget"
    run "elixir-$s2" "$s2" LD_PRELOAD="$preload" "$budget" ELIXIR_TRACE="$out/train.trace"
    wait_runs "elixir-$s2"
}

# The plot, the report and the summary of the trace.
export_trace() {
    echo "demo: elixir-trace summary, plot and report of $out/train.trace"
    [ -s "$out/train.trace" ] || die "the run under Elixir wrote no trace ($out/train.trace)"
    "$tool" summary "$out/train.trace" >"$out/summary.txt" ||
        die "elixir-trace summary failed on $out/train.trace"
    "$tool" plot "$out/train.trace" "$out/train.svg" --force >/dev/null ||
        die "elixir-trace plot failed on $out/train.trace"
    "$tool" report "$out/train.trace" "$out/train.html" --force >/dev/null ||
        die "elixir-trace report failed on $out/train.trace"
}

# The figures of the verdict, from the outputs of the runs and of elixir-trace, into globals.
read_figures() {
    local sum=$out/summary.txt
    dev_line=$(figure "the device" "$sum" '/^devices/{n;s/^ *[0-9]*  *//p;}')
    dev_mem=$(to_bytes "${dev_line##*, }") || die "unreadable device memory in $sum"
    budget=$(to_bytes "$(figure "the GPU budget" "$sum" 's/^  device 0: GPU \(.*\)$/\1/p')") ||
        die "unreadable GPU budget in $sum"
    to_host=$(sed -n 's/^  gpu  *-> host  *[0-9]*  *\(.*\)$/\1/p' "$sum")
    to_gpu=$(sed -n 's/^  host  *-> gpu  *[0-9]*  *\(.*\)$/\1/p' "$sum")
    busy=$(figure "the migration time" "$sum" 's/^  busy \(.*\), hidden behind kernels .*/\1/p')
    hidden=$(figure "the hidden time" "$sum" 's/^  busy .*, hidden behind kernels \(.*\)$/\1/p')
    moves="migrations"
    # The plan's moves alone, where a plan was followed (its section's "by the plan" block).
    local block='/^  by the plan  *[0-9]*$/,/^  [a-z]/' plan_busy
    plan_busy=$(sed -n "$block s/^    busy \(.*\), hidden.*/\1/p" "$sum")
    if [ -n "$plan_busy" ]; then
        busy=$plan_busy moves="the plan's moves"
        hidden=$(sed -n "$block s/^    busy .*, hidden behind kernels \(.*\)\$/\1/p" "$sum")
    fi
    step_unlimited=$(step_ms unlimited)
    step_elixir=$(step_ms elixir)
    [ -n "$step_unlimited" ] && [ -n "$step_elixir" ] ||
        die "a run's time is missing from its output in $out"
    d_unl=$(sed -n 's/^digest //p' "$out/unlimited-$s2.out")
    d_eli=$(sed -n 's/^digest //p' "$out/elixir-$s2.out")
    params=$(sed -n 's/^train\.py: [^,]*, [^,]*, \([^ ]*\) parameters.*/\1/p' \
        "$out/unlimited-$s2.log")
}

# The step times: per step under Elixir and without, their ratio, and how they were taken.
print_step_time() {
    local how="virtual time of %s, timed by events on the job's stream"
    [ "$gpu" = 0 ] || how="wall-clock time of %s, from the line of step $s1 to that of step $s2"
    awk -v e="$step_elixir" -v u="$step_unlimited" -v s1="$s1" -v s2="$s2" -v how="$how" 'BEGIN {
        printf "  %-10s %.2f ms under Elixir, %.2f ms on a device that holds the job: %.2fx\n",
               "step time", e, u, (u > 0 ? e / u : 0)
        which = (s2 - s1 > 1) ? sprintf("steps %d-%d", s1 + 1, s2) : sprintf("step %d", s2)
        printf "  %-10s (" how ")\n", "", which
    }'
}

# The verdict; returns 1 when the weights differ from those of the run without the shim.
print_verdict() {
    local same="the same weights, bit for bit, as on a device that holds the job"
    echo
    echo "== Elixir demo: examples/train.py $job ($params parameters)"
    printf '  %-10s needs %s of device memory (measured without Elixir)\n' job \
        "$(size "$footprint")"
    printf "  %-10s %s, %s; Elixir's budget on it %s: the job needs %sx that\n" device \
        "${dev_line%%,*}" "$(size "$dev_mem")" "$(size "$budget")" \
        "$(awk -v f="$footprint" -v b="$budget" 'BEGIN { printf "%.2f", f / b }')"
    [ "$d_unl" = "$d_eli" ] || same="DIFFERENT weights (digest $d_eli) from the run on a device
             that holds the job ($d_unl)"
    printf '  %-10s trained %d steps: %s\n' result "$s2" "$same"
    print_step_time
    printf '  %-10s %s to host, %s back to the GPU, in the %d-step run\n' moved \
        "${to_host:-0 B}" "${to_gpu:-0 B}" "$s2"
    printf '  %-10s %s of the %s that %s took ran behind compute %s\n' hidden \
        "${hidden% (*}" "$busy" "$moves" "${hidden##* }"
    printf '  %-10s %s   (elixir-trace summary|allocs|kernels ...)\n' trace "$out/train.trace"
    printf '  %-10s %s\n' plot "$out/train.svg" report "$out/train.html" summary "$out/summary.txt"
    printf "  %-10s %s s of wall-clock time; the runs' logs are in %s\n" took \
        "$(awk -v t0="$start" -v t1="$(date +%s.%N)" 'BEGIN { printf "%.0f", t1 - t0 }')" "$out"
    [ "$d_unl" = "$d_eli" ]
}

check_setup
if [ "$gpu" = 1 ]; then measure_gpu; else measure_sim; fi
export_trace
read_figures
print_verdict
