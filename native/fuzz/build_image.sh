#!/bin/sh
# Builds the PNG and WebP decoder's libFuzzer target (fuzz_decode_image) into $1 with clang,
# AddressSanitizer and UndefinedBehaviorSanitizer. Exits 3, saying why, when clang, its
# compiler-rt, or libspng's and libwebp's headers are missing. (build.sh builds the region decoder's.)
set -u
out="${1:?usage: build_image.sh OUTDIR}"
here="$(cd "$(dirname "$0")" && pwd)"
cc="${CLANG:-clang}"
command -v "$cc" >/dev/null 2>&1 || { echo "no clang on PATH (apt-get install clang)"; exit 3; }
[ -f /usr/include/spng.h ] && [ -f /usr/include/webp/decode.h ] \
    || { echo "no libspng or libwebp headers (apt-get install libspng-dev libwebp-dev)"; exit 3; }
mkdir -p "$out"
# clang without compiler-rt (Debian's libclang-rt-*-dev) cannot link libFuzzer or the sanitizers.
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' > "$out/probe-image.c"
if ! "$cc" -fsanitize=fuzzer,address,undefined -o "$out/probe-image" "$out/probe-image.c" >/dev/null 2>&1; then
    rm -f "$out/probe-image.c" "$out/probe-image"
    echo "clang cannot link libFuzzer and the sanitizers: install compiler-rt (apt-get install libclang-rt-14-dev)"
    exit 3
fi
rm -f "$out/probe-image.c" "$out/probe-image"
exec "$cc" -g -O1 -Wall -Werror -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$here/../pixels" -o "$out/fuzz_decode_image" "$here/fuzz_decode_image.c" "$here/../pixels/stoke_image.c" \
    -lspng -lwebp
