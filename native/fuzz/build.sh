#!/bin/sh
# Builds the region decoder's libFuzzer target into $1 with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer. Exits 3, saying why, when clang, its compiler-rt or libjpeg's
# headers are missing.
set -u
out="${1:?usage: build.sh OUTDIR}"
here="$(cd "$(dirname "$0")" && pwd)"
cc="${CLANG:-clang}"
command -v "$cc" >/dev/null 2>&1 || { echo "no clang on PATH (apt-get install clang)"; exit 3; }
[ -f /usr/include/jpeglib.h ] || { echo "no libjpeg headers (apt-get install libjpeg62-turbo-dev)"; exit 3; }
mkdir -p "$out"
# clang without compiler-rt (Debian's libclang-rt-*-dev) cannot link libFuzzer or the sanitizers.
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' > "$out/probe.c"
if ! "$cc" -fsanitize=fuzzer,address,undefined -o "$out/probe" "$out/probe.c" >/dev/null 2>&1; then
    rm -f "$out/probe.c" "$out/probe"
    echo "clang cannot link libFuzzer and the sanitizers: install compiler-rt (apt-get install libclang-rt-14-dev)"
    exit 3
fi
rm -f "$out/probe.c" "$out/probe"
exec "$cc" -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I"$here/../pixels" \
    -o "$out/fuzz_decode_region" "$here/fuzz_decode_region.c" "$here/../pixels/stoke_jpeg.c" -ljpeg
