#!/bin/bash
# SPDX-License-Identifier: MIT
# shim_dlsym_nodriver.sh - dlsym in the global scope answers for a hooked name as it would
# without the shim: a python3 process with libelixir.so preloaded and no driver or NCCL loaded
# finds neither cuMemAlloc_v2 nor ncclAllReduce through ctypes.CDLL(None) (libelixir.so's own
# exports must not be taken for the driver's: a program probing for an entry point would call
# one that does not exist), nor cuInit; once the simulator's libcuda.so.1 and libnccl.so.2 are
# loaded with RTLD_GLOBAL it finds all three.
set -u
. tests/lib/sim_env.sh
sim_setup
probe='import ctypes, os, sys
if len(sys.argv) > 1:
    for name in ("libcuda.so.1", "libnccl.so.2"):
        ctypes.CDLL(name, mode=os.RTLD_NOW | ctypes.RTLD_GLOBAL)
lib = ctypes.CDLL(None)
print(" ".join(str(hasattr(lib, n)) for n in ("cuMemAlloc_v2", "ncclAllReduce", "cuInit")))'
none=$(env -u LD_LIBRARY_PATH LD_PRELOAD=${LD_PRELOAD:+$LD_PRELOAD:}$SHIM "$PYTHON" -c "$probe")
loaded=$(LD_LIBRARY_PATH=$BUILD/sim LD_PRELOAD=${LD_PRELOAD:+$LD_PRELOAD:}$SHIM \
         "$PYTHON" -c "$probe" loaded)
echo "no driver loaded: $none; the simulator's loaded: $loaded"
[ "$none" = "False False False" ] || { echo "FAIL: found without a driver: $none"; exit 1; }
[ "$loaded" = "True True True" ] || { echo "FAIL: not found with the driver: $loaded"; exit 1; }
