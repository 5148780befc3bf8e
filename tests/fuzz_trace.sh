#!/bin/bash
# SPDX-License-Identifier: MIT
# fuzz_trace.sh - builds the libFuzzer targets of the trace reader (tests/fuzz/trace_reader.c)
# and of elixir-trace's DWARF line-table reader (tests/fuzz/dwarf_line.c), with clang
# -fsanitize=fuzzer,address,undefined, and runs each for a bounded time (ELIXIR_FUZZ_SECONDS,
# default 20) from seed corpora that unit_trace_roundtrip, unit_trace_pyframes and
# unit_dwarf_line write.
# Skips (77) when clang or libFuzzer is missing: on Debian 12 they are the packages clang and
# libclang-rt-14-dev (or clang-NN with libclang-rt-NN-dev).  Crashes are kept in
# $BUILD/fuzz/artifacts.
set -u
build=${BUILD:-build}
secs=${ELIXIR_FUZZ_SECONDS:-20}
clang=${CLANG:-clang}
out=$build/fuzz
mkdir -p "$out/artifacts"

probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' >"$probe/p.c"
if ! command -v "$clang" >/dev/null 2>&1 ||
    ! "$clang" -fsanitize=fuzzer "$probe/p.c" -o "$probe/p" >/dev/null 2>&1; then
    echo "skip: no clang with libFuzzer (Debian: apt-get install clang libclang-rt-14-dev)"
    exit 77
fi

# build NAME SOURCES...: the target $out/NAME.
build() {
    local name=$1
    shift
    echo "building $out/$name"
    if ! "$clang" -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined \
        -fno-sanitize-recover=all -Wall -Wextra -Werror -Wno-unused-parameter \
        -o "$out/$name" "$@"; then
        echo "FAIL: the fuzz target $name does not build"
        exit 1
    fi
}

# fuzz NAME: runs $out/NAME for secs seconds on its corpus and seeds; exits 1 on a finding.
fuzz() {
    local name=$1
    mkdir -p "$out/corpus-$name"
    echo "fuzzing $name for ${secs}s with seeds: $(ls "$out/seeds-$name" | tr '\n' ' ')"
    "$out/$name" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 -artifact_prefix="$out/artifacts/$name-" "$out/corpus-$name" \
        "$out/seeds-$name" 2>&1 | tail -n 25
    local rc=${PIPESTATUS[0]}
    if [ "$rc" -ne 0 ]; then
        echo "FAIL: the fuzzer found a problem in $name (status $rc); inputs in $out/artifacts"
        exit 1
    fi
}

build trace_reader tests/fuzz/trace_reader.c tracer/reader.c tracer/encode.c
build dwarf_line tests/fuzz/dwarf_line.c tools/trace/dwarf_line.c

# Seeds: the traces the round-trip test writes (when it is built) and a header alone; the
# line programs unit_dwarf_line writes.
rm -rf "$out/seeds-trace_reader" "$out/seeds-dwarf_line"
mkdir -p "$out/seeds-trace_reader" "$out/seeds-dwarf_line"
if [ -x "$build/tests/unit_trace_roundtrip" ]; then
    ELIXIR_TRACE_SEED_DIR=$out/seeds-trace_reader "$build/tests/unit_trace_roundtrip" \
        >/dev/null || echo "warning: unit_trace_roundtrip failed while writing seeds"
fi
if [ -x "$build/tests/unit_trace_pyframes" ]; then
    ELIXIR_TRACE_SEED_DIR=$out/seeds-trace_reader "$build/tests/unit_trace_pyframes" \
        >/dev/null || echo "warning: unit_trace_pyframes failed while writing seeds"
fi
printf 'ELXTRACE\001\000\000\000\040\000\000\000' >"$out/seeds-trace_reader/header-start"
if [ -x "$build/tests/unit_dwarf_line" ]; then
    ELIXIR_DWARF_SEED_DIR=$out/seeds-dwarf_line "$build/tests/unit_dwarf_line" >/dev/null ||
        echo "warning: unit_dwarf_line failed while writing its seed"
fi
printf '\000' >"$out/seeds-dwarf_line/empty"

fuzz trace_reader
fuzz dwarf_line
echo "fuzz_trace: no crash in ${secs}s per target"
