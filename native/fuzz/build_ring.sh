#!/bin/sh
# Builds the ring header validator's libFuzzer target (fuzz_ring_validate) into $1 with clang,
# AddressSanitizer and UndefinedBehaviorSanitizer. Exits 3, saying why, when clang or its
# compiler-rt is missing. (build.sh builds the region decoder's target.)
set -u
out="${1:?usage: build_ring.sh OUTDIR}"
here="$(cd "$(dirname "$0")" && pwd)"
cc="${CLANG:-clang}"
command -v "$cc" >/dev/null 2>&1 || { echo "no clang on PATH (apt-get install clang)"; exit 3; }
mkdir -p "$out"
# clang without compiler-rt (Debian's libclang-rt-*-dev) cannot link libFuzzer or the sanitizers.
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' > "$out/probe-ring.c"
if ! "$cc" -fsanitize=fuzzer,address,undefined -o "$out/probe-ring" "$out/probe-ring.c" >/dev/null 2>&1; then
    rm -f "$out/probe-ring.c" "$out/probe-ring"
    echo "clang cannot link libFuzzer and the sanitizers: install compiler-rt (apt-get install libclang-rt-14-dev)"
    exit 3
fi
rm -f "$out/probe-ring.c" "$out/probe-ring"
exec "$cc" -g -O1 -Wall -Werror -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -o "$out/fuzz_ring_validate" "$here/fuzz_ring_validate.c"
