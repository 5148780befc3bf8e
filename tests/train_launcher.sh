#!/bin/bash
# SPDX-License-Identifier: MIT
# train_launcher.sh - build/bin/elixir-sim: --help, usage errors (exit 2), and the environment it
# gives the command (LD_LIBRARY_PATH, ELIXIR_SIM_KERNELS, ELIXIR_SIM_MEMORY/DEVICES/MACHINE).
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
expect_rc 2 --bogus -- true
expect_rc 127 -- /nonexistent/command
expect_rc 3 -- sh -c 'exit 3'

env=$(ELIXIR_SIM_KERNELS=/x.so LD_LIBRARY_PATH=/y \
      "$SIM_LAUNCHER" --memory 512M --devices 2 --machine h100 -- env)
for want in "ELIXIR_SIM_MEMORY=512M" "ELIXIR_SIM_DEVICES=2" "ELIXIR_SIM_MACHINE=h100"; do
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
exit $fail
