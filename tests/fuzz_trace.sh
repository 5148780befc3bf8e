#!/bin/bash
# SPDX-License-Identifier: MIT
# fuzz_trace.sh - builds the trace reader's libFuzzer target (tests/fuzz/trace_reader.c, with
# clang -fsanitize=fuzzer,address,undefined) and runs it for a bounded time
# (ELIXIR_FUZZ_SECONDS, default 20) from a seed corpus that unit_trace_roundtrip writes.
# Skips (77) when clang or libFuzzer is missing: on Debian 12 they are the packages clang and
# libclang-rt-14-dev (or clang-NN with libclang-rt-NN-dev).  Crashes are kept in
# $BUILD/fuzz/artifacts.
set -u
build=${BUILD:-build}
secs=${ELIXIR_FUZZ_SECONDS:-20}
clang=${CLANG:-clang}
out=$build/fuzz
mkdir -p "$out/corpus" "$out/seeds" "$out/artifacts"

probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' >"$probe/p.c"
if ! command -v "$clang" >/dev/null 2>&1 ||
    ! "$clang" -fsanitize=fuzzer "$probe/p.c" -o "$probe/p" >/dev/null 2>&1; then
    echo "SKIP: no clang with libFuzzer (Debian: apt-get install clang libclang-rt-14-dev)"
    exit 77
fi

target=$out/trace_reader
echo "building $target"
if ! "$clang" -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=all -Wall -Wextra -Werror -Wno-unused-parameter \
    -o "$target" tests/fuzz/trace_reader.c tracer/reader.c tracer/encode.c; then
    echo "FAIL: the fuzz target does not build"
    exit 1
fi

# Seeds: the traces the round-trip test writes (when it is built), and a header alone.
rm -f "$out/seeds"/*
if [ -x "$build/tests/unit_trace_roundtrip" ]; then
    ELIXIR_TRACE_SEED_DIR=$out/seeds "$build/tests/unit_trace_roundtrip" >/dev/null ||
        echo "warning: unit_trace_roundtrip failed while writing seeds"
fi
printf 'ELXTRACE\001\000\000\000\040\000\000\000' >"$out/seeds/header-start"

echo "fuzzing for ${secs}s with seeds: $(ls "$out/seeds" | tr '\n' ' ')"
"$target" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$out/artifacts/" "$out/corpus" "$out/seeds" 2>&1 |
    tail -n 25
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ]; then
    echo "FAIL: the fuzzer found a problem (status $rc); inputs in $out/artifacts"
    exit 1
fi
echo "fuzz_trace: no crash in ${secs}s"
