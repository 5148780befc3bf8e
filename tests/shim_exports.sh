#!/bin/bash
# SPDX-License-Identifier: MIT
# shim_exports.sh - libelixir.so exports exactly the names of shim/hooks.h and
# shim/hooks_nccl.h, plus dlsym and the test-only elixir_shim_calls; every hooked driver name
# is a name the driver exports (the simulator's list, generated from cuda.h) and every NCCL
# name is declared by CUDA's nccl.h; the library links against neither libcuda nor libnccl.
set -u
build=${BUILD:-build}
lib=$build/libelixir.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ ! -f "$lib" ]; then
    echo "FAIL: $lib is missing"
    exit 1
fi
printf '#include "hooks.h"\n#define X(sym, base, ver, pt) sym\nSHIM_HOOKS(X)\n' |
    ${CC:-cc} -E -P -x c -Ishim - | tr ' ' '\n' | grep . | sort >"$tmp/hooks"
printf '#include "hooks_nccl.h"\n#define X(sym) sym\nSHIM_NCCL_HOOKS(X)\n' |
    ${CC:-cc} -E -P -x c -Ishim - | tr ' ' '\n' | grep . | sort >"$tmp/nccl"
{ cat "$tmp/hooks" "$tmp/nccl"; echo dlsym; echo elixir_shim_calls; } | sort >"$tmp/want"
nm -D --defined-only "$lib" | awk '{ print $3 }' | sed 's/@.*//' | sort >"$tmp/got"
if ! cmp -s "$tmp/want" "$tmp/got"; then
    echo "FAIL: exported names differ from shim/hooks.h and hooks_nccl.h (< expected, > exported):"
    diff "$tmp/want" "$tmp/got"
    exit 1
fi
if [ -f "$build/gen/exports.txt" ]; then
    sort "$build/gen/exports.txt" >"$tmp/driver"
    missing=$(comm -23 "$tmp/hooks" "$tmp/driver")
    if [ -n "$missing" ]; then
        echo "FAIL: hooked names the driver does not export: $missing"
        exit 1
    fi
fi
nccl_h=${CUDA_HOME:-/usr/local/cuda}/include/nccl.h
if [ -f "$nccl_h" ]; then
    for name in $(cat "$tmp/nccl"); do
        if ! grep -q "^ncclResult_t  *$name(" "$nccl_h"; then
            echo "FAIL: $name is not declared by $nccl_h"
            exit 1
        fi
    done
fi
if readelf -d "$lib" | grep NEEDED | grep -E -q 'libcuda|libnccl'; then
    echo "FAIL: $lib is linked against libcuda or libnccl"
    exit 1
fi
echo "shim_exports: $(wc -l <"$tmp/hooks") driver and $(wc -l <"$tmp/nccl") NCCL names exported"
