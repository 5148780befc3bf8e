#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# nvme_fio.sh - the NVMe tier's throughput beside fio's, side by side in one run.
#
# For sequential and random, write and read, of chunk-sized (2 MiB) blocks: fio (io_uring
# engine, O_DIRECT, registered file and buffers, the same block size and queue depth) and
# bench/nvme_tier (the tier: the same) move the same bytes of the same file on the same file
# system, REPS times each, taking turns at going first; the ratio tier/fio of the best and
# of the median runs is printed per case, with every run's figure.  The file is written
# once in full before any measurement (a first write into preallocated, unwritten extents
# costs the file system more than a rewrite, and would penalise whoever goes first).
# Without fio, the tier's figures alone are printed (no ratio), with a message saying so.
# Exits 1 when a run of either fails.
#
# Environment: NVME_BENCH_DIR (default /tmp: its file system is named in the output),
# NVME_BENCH_SIZE (bytes, default 1 GiB), NVME_BENCH_QD (default 16,
# the tier's default), NVME_BENCH_BS (default
# 2 MiB), NVME_BENCH_REPS (default 3), NVME_BENCH_ENGINE (uring or psync), BUILD (build).
# NVME_BENCH_SWEEP=1 also prints the tier alone over queue depths 1-32 and block sizes
# 512 KiB-2 MiB (how the defaults were chosen).
set -eu -o pipefail

BUILD=${BUILD:-build}
DIR=${NVME_BENCH_DIR:-/tmp}
SIZE=${NVME_BENCH_SIZE:-$((1 << 30))}
QD=${NVME_BENCH_QD:-16}
BS=${NVME_BENCH_BS:-$((2 << 20))}
REPS=${NVME_BENCH_REPS:-3}
ENGINE=${NVME_BENCH_ENGINE:-uring}
TIER=$BUILD/bench/nvme_tier

[ -x "$TIER" ] || { echo "nvme_fio: $TIER not built (make)" >&2; exit 1; }
have_fio=1
command -v fio >/dev/null 2>&1 || have_fio=0

FILE=$(mktemp "$DIR/elixir-nvme-bench.XXXXXX")
trap 'rm -f "$FILE"' EXIT
fallocate -l "$SIZE" "$FILE"
fstype=$(df -T "$DIR" | awk 'NR == 2 { print $2 " on " $1 }')

# fio's bandwidth in MiB/s for one case (rw: write, read, randwrite, randread).
fio_mibs() {
    fio --name=nvme --filename="$FILE" --size="$SIZE" --bs="$BS" --rw="$1" --direct=1 \
        --ioengine=io_uring --iodepth="$QD" --fixedbufs --registerfiles --norandommap=0 \
        --randrepeat=0 --invalidate=0 --output-format=json 2>/dev/null |
        python3 -c 'import json, sys
j = json.load(sys.stdin)["jobs"][0]
d = j["write"] if j["write"]["io_bytes"] else j["read"]
print("%.1f" % (d["bw_bytes"] / 1048576.0))'
}

# The tier's bandwidth in MiB/s for one case; fails, saying so, when the tier did.
tier_mibs() {
    local v
    v=$("$TIER" --file "$FILE" --size "$SIZE" --rw "$1" --qd "$2" --bs "$3" --engine "$ENGINE" |
        awk '{ print $2 }')
    case $v in
    '' | *[!0-9.]*) echo "nvme_fio: the tier's $1 run failed (output '$v')" >&2; return 1 ;;
    esac
    echo "$v"
}

best() { printf '%s\n' "$@" | sort -g | tail -1; }
median() {
    printf '%s\n' "$@" | sort -g |
        awk '{ v[NR] = $1 } END { print (v[int((NR + 1) / 2)] + v[int(NR / 2) + 1]) / 2 }'
}
ratio() { awk -v t="$1" -v f="$2" 'BEGIN { if (f > 0) printf "%.2fx", t / f; else print "-" }'; }

echo "nvme_fio: $((SIZE >> 20)) MiB file in $DIR ($fstype), block $((BS >> 10)) KiB," \
     "queue depth $QD, $REPS runs each, tier engine $ENGINE, fio engine io_uring"
if [ "$have_fio" = 0 ]; then
    echo "nvme_fio: fio is not installed (Debian package fio): the tier alone, no ratio"
    tier_mibs write "$QD" "$BS" >/dev/null     # the unmeasured first write
    printf '  %-10s %9s %9s\n' case "tier best" "tier med"
    for rw in write randwrite read randread; do
        t=()
        for i in $(seq "$REPS"); do t+=("$(tier_mibs "$rw" "$QD" "$BS")"); done
        printf '  %-10s %9s %9s   (tier %s)\n' "$rw" "$(best "${t[@]}")" "$(median "${t[@]}")" \
            "${t[*]}"
    done
    exit 0
fi
fio_mibs write >/dev/null     # the unmeasured first write
printf '  %-10s %9s %9s %6s %9s %9s %6s\n' case "fio best" "tier best" ratio "fio med" \
    "tier med" ratio
for rw in write randwrite read randread; do
    f=() t=()
    for i in $(seq "$REPS"); do
        # (One substitution a command: set -e sees each one's status.)
        if [ $((i % 2)) = 1 ]; then
            v=$(fio_mibs "$rw")
            f+=("$v")
            v=$(tier_mibs "$rw" "$QD" "$BS")
            t+=("$v")
        else
            v=$(tier_mibs "$rw" "$QD" "$BS")
            t+=("$v")
            v=$(fio_mibs "$rw")
            f+=("$v")
        fi
    done
    bf=$(best "${f[@]}") bt=$(best "${t[@]}") mf=$(median "${f[@]}") mt=$(median "${t[@]}")
    printf '  %-10s %9s %9s %6s %9s %9s %6s   (fio %s; tier %s)\n' "$rw" "$bf" "$bt" \
        "$(ratio "$bt" "$bf")" "$mf" "$mt" "$(ratio "$mt" "$mf")" "${f[*]}" "${t[*]}"
done

if [ "${NVME_BENCH_SWEEP:-0}" = 1 ]; then
    echo "nvme_fio: the tier alone, MiB/s (write / read), by queue depth and block size"
    for bs in $((512 << 10)) $((1 << 20)) $((2 << 20)); do
        for qd in 1 2 4 8 16 32; do
            w=$(tier_mibs write "$qd" "$bs")
            r=$(tier_mibs read "$qd" "$bs")
            printf '  bs %4d KiB qd %2d: %8s / %8s\n' $((bs >> 10)) "$qd" "$w" "$r"
        done
    done
fi
