# SPDX-License-Identifier: MIT
# bench/lib/jobs.sh - what the benchmark scripts that run jobs on the simulator share.  Source it
# after setting `name` (the script's name, for messages), `s1` and `s2` (the two run lengths)
# and defining `job NAME WHAT LENGTH [VAR=VALUE...]`, which starts one run in the background
# with its stdout in $tmp/NAME.out and its stderr in $tmp/NAME.err.

# bench_setup FILE...: a scratch directory in $tmp (removed on exit); exit 1 naming the first
# FILE missing.
bench_setup() {
    local f
    for f in "$@"; do
        if [ ! -e "$f" ]; then
            echo "$name: $f is missing (run make from the repository root)" >&2
            exit 1
        fi
    done
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
}

# Wait for every background job; exit 1, showing its stderr, if any failed.
wait_all() {
    local failed=0 pid f
    for pid in $(jobs -p); do
        wait "$pid" || failed=1
    done
    if [ "$failed" = 1 ]; then
        for f in "$tmp"/*.err; do
            grep -q '^digest' "${f%.err}.out" || { echo "== $f" >&2; tail -5 "$f" >&2; }
        done
        echo "$name: a run failed" >&2
        exit 1
    fi
}

# pair NAME WHAT [VAR=VALUE...]: both run lengths of one configuration, side by side.
pair() {
    local run=$1 what=$2
    shift 2
    job "$run-$s1" "$what" "$s1" "$@"
    job "$run-$s2" "$what" "$s2" "$@"
    wait_all
}

# need_line PATTERN FILE...: exit 1 naming the first FILE with no line matching PATTERN (grep's
# basic syntax): a figure read from a line a run did not print would come out as 0.
need_line() {
    local pattern=$1 f
    shift
    for f in "$@"; do
        if ! grep -q -- "$pattern" "$f"; then
            echo "$name: $f has no line matching '$pattern': its figures would mean nothing" >&2
            exit 1
        fi
    done
}

vtime() { sed -n 's/.*virtual time \([0-9.]*\) ms.*/\1/p' "$tmp/$1.err"; }
# step NAME: ms per step in the steady state, the mean of steps S1+1 .. S2 of run NAME-S2 as
# train.py --step-times timed them with events (one run: two runs' totals differ by more than
# a step where the shim's planned moves complete by real time).
step() {
    sed -n 's/^train.py: step times (ms): //p' "$tmp/$1-$s2.err" |
        awk -v s1="$s1" -v s2="$s2" '{ t = 0; for (i = s1 + 1; i <= s2; i++) t += $i
                                       printf "%.3f", t / (s2 - s1) }'
}
gpu_peak() { sed -n 's/.*GPU peak \([0-9]*\) MiB of.*/\1/p' "$tmp/$1.err"; }
gpu_budget() { sed -n 's/.*GPU peak [0-9]* MiB of \([0-9]*\).*/\1/p' "$tmp/$1.err"; }
digest() { sed -n 's/^digest //p' "$tmp/$1.out"; }

# check_digests WHAT: every run of configuration WHAT-*-LENGTH gives the digest of the run
# without the shim (WHAT-plain-LENGTH), for both lengths; else exit 1: the figures mean nothing.
check_digests() {
    local what=$1 n f want
    for n in $s1 $s2; do
        want=$(digest "$what-plain-$n")
        for f in "$tmp/$what"-*-"$n".out; do
            if [ -z "$want" ] || [ "$(sed -n 's/^digest //p' "$f")" != "$want" ]; then
                echo "$name: $(basename "$f" .out) does not give the digest of the run" \
                     "without the shim; the figures mean nothing" >&2
                exit 1
            fi
        done
    done
}
