#!/bin/bash
# SPDX-License-Identifier: MIT
# train_launcher.sh - build/bin/elixir-sim: --help, --version, usage errors (exit 2), and the
# environment it gives the command (LD_LIBRARY_PATH, ELIXIR_SIM_KERNELS, ELIXIR_SIM_MEMORY/
# DEVICES/MACHINE).  What it passes on is checked before the command starts (exit 2): every
# ELIXIR_SIM_* value by the simulator's rules (each value tried here is refused by the
# launcher exactly when the simulator itself calls it not valid), an unknown ELIXIR_SIM_*
# name, an unknown machine (the known ones listed), and an LD_PRELOAD naming libelixir.so by
# a relative path or a missing file.
set -u
. tests/lib/sim_env.sh
sim_setup
fail=0

expect_rc() { # expect_rc WANT ARGS...: runs the launcher with ARGS and checks its exit status
    local want=$1 got
    shift
    "$SIM_LAUNCHER" "$@" >/dev/null 2>&1
    got=$?
    if [ $got -ne "$want" ]; then
        echo "FAIL: elixir-sim $*: expected exit $want, got $got"
        fail=1
    fi
}

expect_rc 0 --help
expect_rc 2
expect_rc 2 --memory 1G
expect_rc 2 --memory 12X -- true
expect_rc 2 --memory G -- true
expect_rc 2 --memory -- true
expect_rc 2 --devices 0 -- true
expect_rc 2 --devices two -- true
expect_rc 2 --devices 17 -- true
expect_rc 2 --memory 1M -- true
expect_rc 2 --machine h100 -- true
expect_rc 0 --machine h100-nvlink-4 --devices 16 --memory 3T -- true
expect_rc 2 --bogus -- true
expect_rc 127 -- /nonexistent/command
expect_rc 3 -- sh -c 'exit 3'

env=$(ELIXIR_SIM_KERNELS=/x.so LD_LIBRARY_PATH=/y \
      "$SIM_LAUNCHER" --memory 512M --devices 2 --machine h100-pcie -- env)
for want in "ELIXIR_SIM_MEMORY=512M" "ELIXIR_SIM_DEVICES=2" "ELIXIR_SIM_MACHINE=h100-pcie"; do
    if ! grep -qx "$want" <<<"$env"; then
        echo "FAIL: expected $want in the environment"
        fail=1
    fi
done
lib=$(sed -n 's/^LD_LIBRARY_PATH=//p' <<<"$env")
kern=$(sed -n 's/^ELIXIR_SIM_KERNELS=//p' <<<"$env")
case $lib in
*/bin/../sim:/y) ;;
*) echo "FAIL: expected LD_LIBRARY_PATH=<bin>/../sim:/y, got $lib"; fail=1 ;;
esac
case $kern in
/x.so:*/bin/../examples/kernels_sim.so) ;;
*) echo "FAIL: expected ELIXIR_SIM_KERNELS=/x.so:<bin>/../examples/kernels_sim.so, got $kern"
   fail=1 ;;
esac
if [ ! "${lib%%:*}/libcuda.so.1" -ef "$BUILD/sim/libcuda.so.1" ]; then
    echo "FAIL: ${lib%%:*} does not hold $BUILD/sim/libcuda.so.1"
    fail=1
fi

# expect_refusal TEXT CMD...: CMD (a launcher run) exits 2 and says TEXT on stderr.
expect_refusal() {
    local text=$1 err rc
    shift
    err=$("$@" 2>&1 >/dev/null)
    rc=$?
    if [ $rc -ne 2 ] || ! grep -qF -- "$text" <<<"$err"; then
        echo "FAIL: $*: expected exit 2 and \"$text\", got $rc: $err"
        fail=1
    fi
}

version=$(cat VERSION)
if [ "$("$SIM_LAUNCHER" --version)" != "elixir-sim $version" ]; then
    echo "FAIL: --version printed '$("$SIM_LAUNCHER" --version)', expected 'elixir-sim $version'"
    fail=1
fi
expect_refusal 'unknown machine model --machine "h100": the known models are default, h100-pcie, h100-nvlink-4' \
    "$SIM_LAUNCHER" --machine h100 -- true
expect_refusal 'unknown machine model ELIXIR_SIM_MACHINE="dgx": the known models are default' \
    env ELIXIR_SIM_MACHINE=dgx "$SIM_LAUNCHER" -- true
expect_refusal 'ELIXIR_SIM_MEMROY is not an option of the simulator; its options are ELIXIR_SIM_MACHINE,' \
    env ELIXIR_SIM_MEMROY=1G "$SIM_LAUNCHER" -- true
expect_refusal '--memory "1M" is not valid: expected a size of at least 2M' \
    "$SIM_LAUNCHER" --memory 1M -- true
expect_refusal 'ELIXIR_SIM_RACECHECK="maybe" is not valid: expected off report fail' \
    env ELIXIR_SIM_RACECHECK=maybe "$SIM_LAUNCHER" -- true

# LD_PRELOAD: libelixir.so by a relative path, or one that does not exist, is refused; by an
# absolute path that exists, the command runs.  (A sanitizer runtime already there stays first.)
pre=${LD_PRELOAD:+$LD_PRELOAD:}
expect_refusal 'LD_PRELOAD=no-such-dir/libelixir.so is a relative path: the dynamic loader looks for it' \
    env LD_PRELOAD="${pre}no-such-dir/libelixir.so" "$SIM_LAUNCHER" -- true
expect_refusal "use an absolute path, here LD_PRELOAD=$SHIM" \
    env LD_PRELOAD="${pre}$BUILD/libelixir.so" "$SIM_LAUNCHER" -- true
expect_refusal 'LD_PRELOAD=/no-such-dir/libelixir.so cannot be read (No such file or directory)' \
    env LD_PRELOAD="${pre}/no-such-dir/libelixir.so" "$SIM_LAUNCHER" -- true
if ! LD_PRELOAD="${pre}$SHIM" "$SIM_LAUNCHER" -- true; then
    echo "FAIL: LD_PRELOAD=$SHIM (absolute) was refused"
    fail=1
fi

# The launcher and the simulator judge each value alike: the launcher refuses (exit 2) exactly
# the values the simulator reports as not valid (it then stops the program, exit status 2,
# after judging every value).  The simulator
# judges one value of each variable per start (python3 calling cuInit), so the values go in
# rounds: round N sets the N-th value of every variable.
values=$(cat <<'EOF2'
MEMORY 1G ok
MEMORY 2M ok
MEMORY 1M bad
MEMORY 12X bad
MEMORY 3TiB ok
MEMORY "" bad
DEVICES 1 ok
DEVICES 16 ok
DEVICES 0 bad
DEVICES 17 bad
DEVICES two bad
DEVICES +2 bad
MACHINE h100-pcie ok
MACHINE h100 bad
MACHINE H100-PCIE ok
RACECHECK off ok
RACECHECK on ok
RACECHECK maybe bad
HOST_MEMORY unlimited ok
HOST_MEMORY 8G ok
HOST_MEMORY 0 bad
TFLOPS 1.5 ok
TFLOPS 0 bad
TFLOPS -1 bad
TFLOPS nan bad
TFLOPS inf bad
NVLINK_GBPS 0 ok
NVLINK_GBPS nan bad
EXEC lazy ok
EXEC eager bad
STATS 2 bad
EOF2
)
declare -A sim_out
for round in 1 2 3 4 5 6; do
    # the round's NAME=VALUE words: the round-th line of each variable
    assign=$(awk -v r="$round" '{ n[$1]++; v = $2 == "\"\"" ? "" : $2
                                  if (n[$1] == r) printf "ELIXIR_SIM_%s=%s\n", $1, v }' \
             <<<"$values")
    [ -n "$assign" ] || break
    mapfile -t words <<<"$assign"
    sim_out[$round]=$(env "${words[@]}" \
        LD_LIBRARY_PATH="$BUILD/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        "$PYTHON" -c 'import ctypes; ctypes.CDLL("libcuda.so.1").cuInit(0)' 2>&1)
done
declare -A seen
while read -r var value want; do
    [ "$value" = '""' ] && value=
    round=$(( ${seen[$var]:-0} + 1 ))
    seen[$var]=$round
    s=ok
    grep -qF "ELIXIR_SIM_$var=\"$value\" is not valid" <<<"${sim_out[$round]}" && s=bad
    env "ELIXIR_SIM_$var=$value" "$SIM_LAUNCHER" -- true >/dev/null 2>&1
    rc=$?
    case $rc in 0) l=ok ;; 2) l=bad ;; *) l="exit $rc" ;; esac
    if [ "$s" != "$want" ] || [ "$l" != "$want" ]; then
        echo "FAIL: ELIXIR_SIM_$var=\"$value\": simulator $s, launcher $l, expected $want"
        fail=1
    fi
done <<<"$values"
[ $fail -ne 0 ] ||
    echo "checked: the launcher and the simulator agree on $(grep -c "" <<<"$values") values"
exit $fail
