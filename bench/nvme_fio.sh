#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# nvme_fio.sh - the NVMe tier's throughput beside fio's, side by side in one run.
#
# For sequential and random, write and read, of chunk-sized (2 MiB) blocks: fio (io_uring
# engine, O_DIRECT, the same block size and queue depth) and bench/nvme_tier (the tier:
# io_uring, registered file and buffers) move the same bytes of the same preallocated file
# on the same file system, alternately, REPS times each; the best of each is kept and the
# ratio tier/fio printed per case.  Skips (exit 0, with a message) when fio is missing.
#
# Environment: NVME_BENCH_DIR (default /tmp: its file system is named in the output),
# NVME_BENCH_SIZE (bytes, default 1 GiB), NVME_BENCH_QD (default 8), NVME_BENCH_BS (default
# 2 MiB), NVME_BENCH_REPS (default 3), NVME_BENCH_ENGINE (uring or psync), BUILD (build).
# NVME_BENCH_SWEEP=1 also prints the tier alone over queue depths 1-32 and block sizes
# 512 KiB-2 MiB (how the defaults were chosen).
set -eu

BUILD=${BUILD:-build}
DIR=${NVME_BENCH_DIR:-/tmp}
SIZE=${NVME_BENCH_SIZE:-$((1 << 30))}
QD=${NVME_BENCH_QD:-8}
BS=${NVME_BENCH_BS:-$((2 << 20))}
REPS=${NVME_BENCH_REPS:-3}
ENGINE=${NVME_BENCH_ENGINE:-uring}
TIER=$BUILD/bench/nvme_tier

if ! command -v fio >/dev/null 2>&1; then
    echo "nvme_fio: skipped: fio is not installed (Debian package fio)"
    exit 0
fi
[ -x "$TIER" ] || { echo "nvme_fio: $TIER not built (make)" >&2; exit 1; }

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

tier_mibs() {
    "$TIER" --file "$FILE" --size "$SIZE" --rw "$1" --qd "$2" --bs "$3" --engine "$ENGINE" |
        awk '{ print $2 }'
}

best() { printf '%s\n' "$@" | sort -g | tail -1; }

echo "nvme_fio: $((SIZE >> 20)) MiB file in $DIR ($fstype), block $((BS >> 10)) KiB," \
     "queue depth $QD, best of $REPS, tier engine $ENGINE"
printf '  %-10s %10s %10s %7s\n' case "fio MiB/s" "tier MiB/s" ratio
for rw in write randwrite read randread; do
    f=() t=()
    for _ in $(seq "$REPS"); do
        f+=("$(fio_mibs "$rw")")
        t+=("$(tier_mibs "$rw" "$QD" "$BS")")
    done
    bf=$(best "${f[@]}") bt=$(best "${t[@]}")
    printf '  %-10s %10s %10s %6.2fx   (fio %s; tier %s)\n' "$rw" "$bf" "$bt" \
        "$(awk -v t="$bt" -v f="$bf" 'BEGIN { print t / f }')" "${f[*]}" "${t[*]}"
done

if [ "${NVME_BENCH_SWEEP:-0}" = 1 ]; then
    echo "nvme_fio: the tier alone, MiB/s (write / read), by queue depth and block size"
    for bs in $((512 << 10)) $((1 << 20)) $((2 << 20)); do
        for qd in 1 2 4 8 16 32; do
            printf '  bs %4d KiB qd %2d: %8s / %8s\n' $((bs >> 10)) "$qd" \
                "$(tier_mibs write "$qd" "$bs")" "$(tier_mibs read "$qd" "$bs")"
        done
    done
fi
