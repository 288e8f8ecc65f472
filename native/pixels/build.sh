#!/bin/sh
# Builds libstoke_pixels.so into $1 (a folder on the module's classpath, so the jar carries it).
# Never fails the build: without gcc it writes $1/UNAVAILABLE with the reason, and Stoke says so
# once at run time and resizes in Java instead.
set -u
out="${1:?usage: build.sh OUTDIR}"
here="$(cd "$(dirname "$0")" && pwd)"
cc="${CC:-gcc}"
mkdir -p "$out"
rm -f "$out/UNAVAILABLE"
if ! command -v "$cc" >/dev/null 2>&1; then
    echo "no C compiler ($cc) on PATH: install gcc to build Stoke's native pixel library" > "$out/UNAVAILABLE"
elif [ "$out/libstoke_pixels.so" -nt "$here/stoke_pixels.c" ] && [ "$out/libstoke_pixels.so" -nt "$here/stoke_pixels.h" ] 2>/dev/null; then
    exit 0
else
    log="$(mktemp)"
    if ! "$cc" -std=c11 -O3 -Wall -Wextra -Werror -fPIC -shared -fno-strict-aliasing \
            -o "$out/libstoke_pixels.so" "$here/stoke_pixels.c" 2> "$log"; then
        { echo "building the native pixel library failed:"; cat "$log"; } > "$out/UNAVAILABLE"
    fi
    rm -f "$log"
fi
if [ -f "$out/UNAVAILABLE" ]; then
    rm -f "$out/libstoke_pixels.so"
    echo "[stoke] WARNING: native pixel library not built: $(head -n 1 "$out/UNAVAILABLE"); Stoke will resize in Java" >&2
fi
exit 0
