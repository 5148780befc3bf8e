#!/bin/sh
# SPDX-License-Identifier: MIT
# Install (as root) or name (otherwise) the Debian packages the build and tests need.
# The CUDA 13 headers are not a Debian package: they must be at $CUDA_HOME (/usr/local/cuda).
set -eu

CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
missing=""
need() { # need COMMAND | /FILE | dpkg:PACKAGE, and the package that provides it
    case "$1" in
    /*) [ -e "$1" ] || missing="$missing $2" ;;
    dpkg:*) dpkg -s "${1#dpkg:}" >/dev/null 2>&1 || missing="$missing $2" ;;
    *) command -v "$1" >/dev/null 2>&1 || missing="$missing $2" ;;
    esac
}
need cc gcc
need make make
need python3 python3
need awk mawk
need bash bash
need dpkg:liburing-dev liburing-dev
need fio fio                                        # bench/nvme_fio.sh (the tier alone without it)
need dpkg:libunwind-dev libunwind-dev
need clang clang                                    # the trace reader's fuzz target (libFuzzer)
need /usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a libclang-rt-14-dev

if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ]; then
        echo "installing:$missing"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q >/dev/null
        # shellcheck disable=SC2086
        apt-get install -y -q --no-install-recommends $missing >/dev/null
    else
        echo "missing packages; run:  sudo apt-get install -y$missing" >&2
        exit 1
    fi
fi

if [ ! -f "$CUDA_HOME/include/cuda.h" ] || [ ! -f "$CUDA_HOME/include/cudaTypedefs.h" ]; then
    echo "CUDA 13 headers not found at $CUDA_HOME/include (cuda.h, cudaTypedefs.h)." >&2
    echo "Install the CUDA Toolkit 13 (its headers suffice) and set CUDA_HOME." >&2
    exit 1
fi
version=$(sed -n 's/^#define CUDA_VERSION \([0-9]*\).*/\1/p' "$CUDA_HOME/include/cuda.h")
if [ "${version:-0}" -lt 13000 ]; then
    echo "CUDA headers at $CUDA_HOME are version $version; 13000 or newer is needed." >&2
    exit 1
fi
