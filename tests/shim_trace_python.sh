#!/bin/bash
# SPDX-License-Identifier: MIT
# shim_trace_python.sh - the call sites of a Python program carry its Python frames: a small
# python3 script, unchanged, calls the simulator's driver through ctypes under the shim with
# ELIXIR_TRACE set, allocating from three functions: through ctypes.CDLL (which releases the
# GIL: the shim takes it back to read the frames), through ctypes.PyDLL (which keeps it), and
# from a second Python thread.  `elixir-trace allocs` must show each allocation's Python call
# site as file:line function < caller, with the lines of the script, `allocs --by-site` and
# `summary` must group the three allocations of one site into one row, and `allocs --json`
# must list the Python frames with the script's full path.
set -u
. tests/lib/sim_env.sh
sim_setup
sim_tmpdir
TOOL=$BUILD/bin/elixir-trace

cat >"$tmp/app.py" <<'EOF'
import ctypes
import threading

cuda = ctypes.CDLL("libcuda.so.1")          # its calls release the GIL
held = ctypes.PyDLL("libcuda.so.1")         # its calls keep it


def check(r, what):
    if r != 0:
        raise SystemExit(f"{what} failed: {r}")


def weights(n):
    p = ctypes.c_uint64()
    check(cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(n)), "cuMemAlloc")  # @weights
    return p


def activations(n):
    p = ctypes.c_uint64()
    check(held.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(n)), "cuMemAlloc")  # @activations
    return p


def worker(ctx, out):
    check(cuda.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    out.append(weights(4 << 20))  # @worker


def main():
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    check(cuda.cuInit(0), "cuInit")
    check(cuda.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    check(cuda.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev), "cuCtxCreate")
    kept = [weights(1 << 20) for _ in range(3)]  # @main
    kept.append(activations(2 << 20))  # @main_act
    t = threading.Thread(target=worker, args=(ctx, kept))
    t.start()
    t.join()
    if len(kept) != 5:
        raise SystemExit("the thread's allocation failed")
    for p in kept:
        check(cuda.cuMemFree_v2(p), "cuMemFree")
    print("ok")


main()
EOF
at() { grep -n "# @$1\$" "$tmp/app.py" | cut -d: -f1; }

ELIXIR_TRACE=$tmp/py.trace LD_PRELOAD=${LD_PRELOAD:+$LD_PRELOAD:}$SHIM run_or_fail \
    "the script under the shim" run sim_run "$PYTHON" "$tmp/app.py"
grep -qx ok "$tmp/run.out" || fail_showing "$tmp/run.err" "the script did not finish"

"$TOOL" allocs --stack-depth 2 "$tmp/py.trace" >"$tmp/allocs" 2>&1 ||
    fail_showing "$tmp/allocs" "elixir-trace allocs cannot read the trace"
expect_site() {  # SIZE SITE: a row of that size with that call site
    if ! grep -Eq "  $1  .*  $2\$" "$tmp/allocs"; then
        cat "$tmp/allocs"
        echo "FAIL: expected an allocation of $1 with call site '$2'"
        exit 1
    fi
}
expect_site "1.00 MiB" "app.py:$(at weights) weights < app.py:$(at main) main.<locals>.<listcomp>"
expect_site "2.00 MiB" "app.py:$(at activations) activations < app.py:$(at main_act) main"
expect_site "4.00 MiB" "app.py:$(at weights) weights < app.py:$(at worker) worker"

"$TOOL" allocs --by-site --stack-depth 1 "$tmp/py.trace" >"$tmp/sites" 2>&1 ||
    fail_showing "$tmp/sites" "elixir-trace allocs --by-site failed"
if ! grep -Eq "^ +4 +7.00 MiB +0 B +app.py:$(at weights) weights$" "$tmp/sites"; then
    cat "$tmp/sites"
    echo "FAIL: expected the 4 allocations (7 MiB) of weights() in one row, at depth 1"
    exit 1
fi

"$TOOL" summary "$tmp/py.trace" >"$tmp/summary" 2>&1 ||
    fail_showing "$tmp/summary" "elixir-trace summary failed"
row="^ +3 +3.00 MiB +0 B +app.py:$(at weights) weights < app.py:$(at main) main.<locals>"
if ! sed -n '/^allocations by call site/,/^migrations/p' "$tmp/summary" | grep -Eq "$row"; then
    cat "$tmp/summary"
    echo "FAIL: expected summary's allocations by call site to group weights() from main: 3"
    exit 1
fi

"$TOOL" allocs --json "$tmp/py.trace" >"$tmp/json" 2>&1 ||
    fail_showing "$tmp/json" "elixir-trace allocs --json failed"
want="{\"file\": \"$tmp/app.py\", \"function\": \"worker\", \"line\": $(at worker),"
want="$want \"kind\": \"program\"}"
if ! grep -qF "$want" "$tmp/json"; then
    head -c 3000 "$tmp/json"
    echo
    echo "FAIL: expected the JSON to list the Python frame $want"
    exit 1
fi
echo "ok: the trace of a python3 script names its Python call sites, grouped by site"
