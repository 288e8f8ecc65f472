#!/bin/sh
# Builds the CUDA driver test double into $1 (a Maven target/ folder), against NVIDIA's cuda.h.
# Never fails the build: when gcc or cuda.h is missing it writes $1/UNAVAILABLE with the reason,
# and the tests that need the double skip with that reason (loudly) instead of failing.
set -u
out="${1:?usage: build.sh OUTDIR}"
here="$(cd "$(dirname "$0")" && pwd)"
cuda_home="${CUDA_HOME:-/usr/local/cuda}"
cc="${CC:-gcc}"
mkdir -p "$out"
rm -f "$out/UNAVAILABLE"
if ! command -v "$cc" >/dev/null 2>&1; then
    echo "no C compiler ($cc) on PATH: install gcc to build the CUDA test double" > "$out/UNAVAILABLE"
elif [ ! -f "$cuda_home/include/cuda.h" ]; then
    echo "no $cuda_home/include/cuda.h: install the CUDA toolkit headers (or set CUDA_HOME) to build the CUDA test double" > "$out/UNAVAILABLE"
elif [ "$out/libcuda_double.so" -nt "$here/cuda_double.c" ] 2>/dev/null; then
    exit 0
elif ! "$cc" -std=c11 -O2 -Wall -Wextra -Werror -fPIC -shared -I"$cuda_home/include" \
        -o "$out/libcuda_double.so" "$here/cuda_double.c" -lpthread 2> "$out/build.log"; then
    { echo "building the CUDA test double failed:"; cat "$out/build.log"; } > "$out/UNAVAILABLE"
fi
if [ -f "$out/UNAVAILABLE" ]; then
    echo "[stoke] WARNING: CUDA test double not built: $(head -n 1 "$out/UNAVAILABLE"); its tests will be skipped" >&2
fi
exit 0
