#!/bin/sh
# Builds the CUDA driver test double, with the nvJPEG double linked in, into $1 (a Maven target/ folder), against NVIDIA's cuda.h.
# Only a missing compiler (none on PATH, or one that cannot compile a file that includes libc's
# headers) or cuda.h is skipped: then it writes $1/UNAVAILABLE with the reason, and
# the tests that need the double skip with that reason (loudly). Where both are there, a compile
# error is a broken change: it is printed, naming the file, and the script exits 1, which fails
# the Maven build (and so ./stoke test and CI).
set -u
out="${1:?usage: build.sh OUTDIR}"
here="$(cd "$(dirname "$0")" && pwd)"
cuda_home="${CUDA_HOME:-/usr/local/cuda}"
cc="${CC:-gcc}"
cxx="${CXX:-g++}"
kernels="$here/../../../../../native/cuda" # the device kernels' source, which the double runs on the host
mkdir -p "$out"
rm -f "$out/UNAVAILABLE"
if ! command -v "$cc" >/dev/null 2>&1; then
    echo "no C compiler ($cc) on PATH: install gcc to build the CUDA test double" > "$out/UNAVAILABLE"
elif ! printf '#include <pthread.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\nint stoke_probe;\n' \
        | "$cc" -x c -c -o /dev/null - >/dev/null 2>&1; then
    echo "no working C compiler ($cc cannot compile a file of libc's headers alone): install gcc and libc6-dev to build the CUDA test double" > "$out/UNAVAILABLE"
elif ! printf '#include <cstddef>\nint stoke_probe;\n' | "$cxx" -x c++ -c -o /dev/null - >/dev/null 2>&1; then
    echo "no working C++ compiler ($cxx): install g++ to build the CUDA test double (it runs the device kernels' own CUDA source on the host)" > "$out/UNAVAILABLE"
elif [ ! -f "$cuda_home/include/cuda.h" ]; then
    echo "no $cuda_home/include/cuda.h: install the CUDA toolkit headers (or set CUDA_HOME) to build the CUDA test double" > "$out/UNAVAILABLE"
elif [ "$out/libcuda_double.so" -nt "$here/cuda_double.c" ] && [ "$out/libcuda_double.so" -nt "$here/nvjpeg_double.c" ] \
        && [ "$out/libcuda_double.so" -nt "$here/kernels_host.cpp" ] && [ "$out/libcuda_double.so" -nt "$kernels/normalize.cu" ] \
        && [ "$out/libcuda_double.so" -nt "$kernels/resize.cu" ] && [ "$out/libcuda_double.so" -nt "$kernels/ycc.cu" ] \
        && [ "$out/libcuda_double.so" -nt "$here/build.sh" ] 2>/dev/null; then
    exit 0
else
    # The nvJPEG double (nvjpeg_double.c) is linked in where libjpeg's headers are there to decode
    # with; without them the driver double is built alone and the nvJPEG tests skip, saying why.
    sources="$here/cuda_double.c"
    libs="-lpthread"
    rm -f "$out/NVJPEG_UNAVAILABLE"
    if printf '#include <stdio.h>\n#include <jpeglib.h>\nint stoke_probe;\n' | "$cc" -x c -c -o /dev/null - >/dev/null 2>&1; then
        sources="$sources $here/nvjpeg_double.c"
        libs="-ljpeg $libs"
    else
        echo "no jpeglib.h: install libjpeg62-turbo-dev to build the nvJPEG test double" > "$out/NVJPEG_UNAVAILABLE"
    fi
    # The kernels' CUDA source as C++ for the host; no contraction, so float math rounds per step as
    # the kernels' __fdiv_rn and __fsub_rn do.
    if ! "$cxx" -std=c++17 -O2 -Wall -Wextra -Werror -ffp-contract=off -fPIC -I"$kernels" \
            -c -o "$out/kernels_host.o" "$here/kernels_host.cpp"; then
        rm -f "$out/libcuda_double.so" "$out/kernels_host.o"
        echo "[stoke] ERROR: building the CUDA test double failed: $cxx could not compile $here/kernels_host.cpp with $kernels (above)" >&2
        exit 1
    fi
    # shellcheck disable=SC2086 # the source and library lists are split on purpose
    if ! "$cc" -std=c11 -O2 -Wall -Wextra -Werror -fPIC -shared -I"$cuda_home/include" \
            -o "$out/libcuda_double.so" $sources "$out/kernels_host.o" $libs -lstdc++; then
        # The compiler has printed why (file, line and message) above.
        rm -f "$out/libcuda_double.so"
        echo "[stoke] ERROR: building the CUDA test double failed: $cc could not compile $sources (above; a compile error with gcc and cuda.h present fails the build)" >&2
        exit 1
    fi
fi
if [ -f "$out/NVJPEG_UNAVAILABLE" ]; then
    echo "[stoke] WARNING: nvJPEG test double not built: $(head -n 1 "$out/NVJPEG_UNAVAILABLE"); its tests will be skipped" >&2
fi
if [ -f "$out/UNAVAILABLE" ]; then
    echo "[stoke] WARNING: CUDA test double not built: $(head -n 1 "$out/UNAVAILABLE"); its tests will be skipped" >&2
fi
exit 0
