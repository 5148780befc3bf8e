#!/bin/bash
# SPDX-License-Identifier: MIT
# demo_verdict.sh - `make demo`'s script (examples/demo.sh) on a small job that does not fit a
# simulated device of 8 MiB (the shim's budget on it is 4 MiB): it succeeds, its verdict has
# every line, its figures are sane (the job is larger than the budget, bytes moved, times
# above zero, the same weights as without the shim) and are those the tools print (the
# footprint of train.py's summary, the migrations of `elixir-trace summary` of the trace it
# names), and the trace, plot, report and summary it names exist.  Then the same with the
# script's GPU path (DEMO_GPU=1, run here on the simulator through LD_LIBRARY_PATH), which
# gives the shim half the job's footprint as ELIXIR_GPU_MEMORY and times the runs by the clock.
# Bad DEMO_STEPS is refused.
set -u
. tests/lib/sim_env.sh
sim_setup
sim_tmpdir

# A figure of the verdict: what follows "  LABEL " on the line of LABEL, trimmed.
line() {
    sed -n "s/^  $1  *//p" "$tmp/verdict" | head -n 1
}

# A size ("6.0 MiB", "920.00 MiB") in bytes, or nothing.
bytes() {
    awk -v s="$1" 'BEGIN {
        m["B"] = 1; m["KiB"] = 1024; m["MiB"] = 1048576; m["GiB"] = 1073741824
        if (split(s, f, " ") == 2 && f[1] ~ /^[0-9.]+$/ && (f[2] in m))
            printf "%.0f", f[1] * m[f[2]]
    }'
}

expect() { # expect WHAT CONDITION...: fails showing the verdict unless CONDITION holds
    local what=$1
    shift
    "$@" || { cat "$tmp/verdict"; echo "FAIL: $what"; exit 1; }
}

# check_verdict OUT: the checks every verdict passes, on $tmp/verdict from a run into OUT.
check_verdict() {
    local out=$1 label need budget alloc t_eli t_unl trace moved to_host want plot report summary
    for label in job device result "step time" moved hidden trace plot report summary took; do
        expect "the verdict has no line '$label'" [ -n "$(line "$label")" ]
    done

    # The footprint is train.py's, and larger than the budget.
    need=$(line job | sed -n 's/^needs \(.*\) of device memory.*/\1/p')
    budget=$(line device | sed -n "s/.*Elixir's budget on it \([^:]*\):.*/\1/p")
    alloc=$(sed -n 's/^train\.py: .* in use, \(.*\) allocated,.*/\1/p' "$out/unlimited-2.log")
    expect "unreadable footprint '$need'" [ -n "$(bytes "$need")" ]
    expect "footprint '$need' is not train.py's '$alloc'" \
        [ "$(bytes "$need")" = "$(bytes "$alloc")" ]
    expect "footprint '$need' not above the budget '$budget'" \
        awk -v n="$(bytes "$need")" -v b="$(bytes "$budget")" 'BEGIN { exit !(b > 0 && n > b) }'
    expect "expected the same weights as without the shim" \
        grep -q "the same weights, bit for bit" "$tmp/verdict"

    # Step times above zero.
    read -r t_eli t_unl <<<"$(line "step time" |
        sed -n 's/^\([0-9.]*\) ms under Elixir, \([0-9.]*\) ms on a device.*/\1 \2/p')"
    expect "step times '$t_eli' and '$t_unl' ms, expected both above 0" \
        awk -v a="${t_eli:-0}" -v b="${t_unl:-0}" 'BEGIN { exit !(a > 0 && b > 0) }'

    # Bytes moved: above zero, and those of elixir-trace summary on the trace the verdict names.
    trace=$(line trace | sed 's/ .*//')
    expect "trace '$trace' missing or empty" [ -s "$trace" ]
    moved=$(line moved)
    to_host=$(sed -n 's/^\(.*\) to host, .*/\1/p' <<<"$moved")
    expect "bytes moved to host '$to_host', expected above 0" [ "$(bytes "$to_host")" -gt 0 ]
    "$BUILD/bin/elixir-trace" summary "$trace" >"$tmp/summary" || {
        echo "FAIL: elixir-trace summary $trace failed"; exit 1; }
    want=$(sed -n 's/^  gpu  *-> host  *[0-9]*  *\(.*\)$/\1/p' "$tmp/summary")
    expect "moved to host '$to_host', elixir-trace summary says '$want'" [ "$to_host" = "$want" ]
    expect "the hidden time is not the summary's" \
        grep -q "^ *busy $(line hidden |
            sed -n "s/.* of the \(.*\) that \(migrations\|the plan's moves\) took.*/\1/p")," \
        "$tmp/summary"

    # The files it names.
    plot=$(line plot); report=$(line report); summary=$(line summary)
    expect "plot '$plot' is not an SVG picture" grep -q '<svg' "$plot"
    expect "report '$report' is not an HTML page" grep -qi '<html' "$report"
    expect "summary '$summary' is not the trace's summary" cmp -s "$summary" "$tmp/summary"
}

# demo OUT ENV...: examples/demo.sh into OUT with ENV, its output in $tmp/verdict (shown); fails
# unless it exits 0.
demo() {
    local out=$1
    shift
    env "$@" DEMO_OUT="$out" bash examples/demo.sh >"$tmp/verdict" 2>"$tmp/err"
    local rc=$?
    cat "$tmp/verdict" "$tmp/err"
    [ $rc -eq 0 ] || { echo "FAIL: expected the demo to exit 0, got $rc"; exit 1; }
}

demo "$tmp/sim" DEMO_JOB="--preset small --alloc pooled" DEMO_SIM_MEMORY=8M DEMO_STEPS="1 2"
check_verdict "$tmp/sim"
budget=$(line device | sed -n "s/.*Elixir's budget on it \([^:]*\):.*/\1/p")
expect "the budget '$budget' is not the 4 MiB the shim gives an 8 MiB device" \
    [ "$(bytes "$budget")" = $((4 << 20)) ]
expect "the step times are not in virtual time" \
    grep -q '^  *(virtual time of step 2' "$tmp/verdict"

demo "$tmp/gpu" LD_LIBRARY_PATH="$BUILD/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    ELIXIR_SIM_KERNELS="$BUILD/examples/kernels_sim.so" DEMO_GPU=1 DEMO_BUDGET_FRACTION=2 \
    DEMO_JOB="--preset small --width 96 --alloc pooled" DEMO_STEPS="1 2"
check_verdict "$tmp/gpu"
expect "expected ELIXIR_GPU_MEMORY=5M, half the job's 10 MiB" \
    grep -q ' with ELIXIR_GPU_MEMORY=5M$' "$tmp/verdict"
expect "the step times are not wall-clock times" \
    grep -q '^  *(wall-clock time of step 2' "$tmp/verdict"

# Bad step counts are refused, naming the variable.
DEMO_STEPS="2 1" DEMO_OUT=$tmp/bad bash examples/demo.sh >"$tmp/bad.out" 2>&1
rc=$?
if [ $rc -ne 1 ] || ! grep -q 'DEMO_STEPS="2 1"' "$tmp/bad.out"; then
    cat "$tmp/bad.out"
    echo "FAIL: DEMO_STEPS=\"2 1\": expected exit 1 naming it, got exit $rc"
    exit 1
fi
echo "demo verdict: every line present and every figure the tools'"
