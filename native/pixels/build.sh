#!/bin/sh
# Builds libstoke_pixels.so (the resize) and libstoke_jpeg.so (the region decoder, over libjpeg)
# into $1, a folder on the module's classpath, so the jar carries them. Never fails the build:
# what cannot be built gets $1/UNAVAILABLE or $1/UNAVAILABLE_JPEG with the reason, and Stoke says
# so once at run time and resizes in Java, or decodes whole images, instead.
set -u
out="${1:?usage: build.sh OUTDIR}"
here="$(cd "$(dirname "$0")" && pwd)"
cc="${CC:-gcc}"
mkdir -p "$out"
rm -f "$out/UNAVAILABLE"
if ! command -v "$cc" >/dev/null 2>&1; then
    echo "no C compiler ($cc) on PATH: install gcc to build Stoke's native pixel library" > "$out/UNAVAILABLE"
elif [ "$out/libstoke_pixels.so" -nt "$here/stoke_pixels.c" ] && [ "$out/libstoke_pixels.so" -nt "$here/stoke_pixels.h" ] 2>/dev/null; then
    :
else
    log="$(mktemp)"
    if ! "$cc" -std=c11 -O3 -Wall -Wextra -Werror -fPIC -shared -fno-strict-aliasing \
            -o "$out/libstoke_pixels.so" "$here/stoke_pixels.c" 2> "$log"; then
        { echo "building the native pixel library failed:"; cat "$log"; } > "$out/UNAVAILABLE"
    fi
    rm -f "$log"
fi
# The region decoder links libjpeg (libjpeg-turbo's libjpeg API): a library of its own, so that
# without libjpeg's headers only region decoding is missing, not the resize.
rm -f "$out/UNAVAILABLE_JPEG"
if ! command -v "$cc" >/dev/null 2>&1; then
    echo "no C compiler ($cc) on PATH: install gcc to build Stoke's region decoder" > "$out/UNAVAILABLE_JPEG"
elif [ "$out/libstoke_jpeg.so" -nt "$here/stoke_jpeg.c" ] && [ "$out/libstoke_jpeg.so" -nt "$here/stoke_jpeg.h" ] 2>/dev/null; then
    :
else
    log="$(mktemp)"
    if ! "$cc" -std=c11 -O2 -Wall -Wextra -Werror -fPIC -shared \
            -o "$out/libstoke_jpeg.so" "$here/stoke_jpeg.c" -ljpeg 2> "$log"; then
        rm -f "$out/libstoke_jpeg.so"
        if grep -q "jpeglib.h" "$log"; then
            echo "libjpeg's headers are missing: install libjpeg62-turbo-dev to build Stoke's region decoder" > "$out/UNAVAILABLE_JPEG"
        else
            { echo "building the region decoder failed:"; cat "$log"; } > "$out/UNAVAILABLE_JPEG"
        fi
    fi
    rm -f "$log"
fi
if [ -f "$out/UNAVAILABLE_JPEG" ]; then
    echo "[stoke] WARNING: region decoder not built: $(head -n 1 "$out/UNAVAILABLE_JPEG"); Stoke will decode whole images" >&2
fi
if [ -f "$out/UNAVAILABLE" ]; then
    rm -f "$out/libstoke_pixels.so"
    echo "[stoke] WARNING: native pixel library not built: $(head -n 1 "$out/UNAVAILABLE"); Stoke will resize in Java" >&2
fi
exit 0
