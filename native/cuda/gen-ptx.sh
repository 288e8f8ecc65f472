#!/bin/sh
# Regenerates Stoke's committed PTX from stoke_kernels.cu (normalize.cu, resize.cu and ycc.cu). compute_75
# (Turing) PTX is JIT-compiled by the driver for any newer GPU (Ampere, Hopper, Blackwell ...), so one virtual architecture covers
# them all; the driver caches the JIT result, so the cost is paid once per machine.
# Usage: gen-ptx.sh [OUT.ptx]   (default: the resource in loader)
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/../../gpu/src/main/resources/io/stoke/gpu/stoke_kernels.ptx}"
nvcc="${NVCC:-nvcc}"
command -v "$nvcc" >/dev/null 2>&1 || nvcc=/usr/local/cuda/bin/nvcc
mkdir -p "$(dirname "$out")"
"$nvcc" -ptx -arch=compute_75 -O3 -o "$out" "$here/stoke_kernels.cu"
